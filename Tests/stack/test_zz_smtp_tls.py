"""SMTP credentials never cross the network in clear: with a user and password in SMTP_URL, a relay
that offers no STARTTLS (or a man in the middle who strips it) gets no AUTH, and the mail stays queued
for a later attempt. The directory is restarted with SMTP_URL pointing at such a relay (a one-off
`scripts/stack restart … SMTP_URL=…`), then restarted with the stack's own settings. Disruptive: runs
after every calm test (conftest)."""

from __future__ import annotations

import socket
import threading
import time
import uuid

import pytest

from conftest import expect_ok, run_stack

pytestmark = pytest.mark.disruptive


class PlainRelay:
    """An SMTP server without TLS that would accept AUTH in clear; it counts sessions and AUTH tries."""

    def __init__(self):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.sessions = 0
        self.auth_attempts = 0
        self.messages = 0
        self.lock = threading.Lock()
        self.controller = None

    async def handle_EHLO(self, server, session, envelope, hostname, responses):
        with self.lock:
            self.sessions += 1
        session.host_name = hostname
        return responses

    async def handle_DATA(self, server, session, envelope):
        with self.lock:
            self.messages += 1
        return "250 OK"

    def authenticate(self, server, session, envelope, mechanism, auth_data):
        from aiosmtpd.smtp import AuthResult
        with self.lock:
            self.auth_attempts += 1
        return AuthResult(success=True, handled=False)

    def start(self) -> None:
        from aiosmtpd.controller import Controller
        self.controller = Controller(self, hostname="127.0.0.1", port=self.port, authenticator=self.authenticate,
                                     auth_required=False, auth_require_tls=False)
        self.controller.start()

    def stop(self) -> None:
        if self.controller is not None:
            self.controller.stop()


def test_no_credentials_go_to_a_relay_without_starttls(stack, client, make_tenant):
    relay = PlainRelay()
    relay.start()
    try:
        run_stack(stack, "restart", "user-directory",
                  f"SMTP_URL=smtp://tessera:sink-password@127.0.0.1:{relay.port}")
        try:
            tenant_id = make_tenant(allowPasswordSignup=True)["tenantId"]
            email = f"plain-{uuid.uuid4().hex[:10]}@example.com"
            expect_ok(client.post("/v1/accounts:signUp", {"tenantId": tenant_id, "email": email,
                                                          "password": "correct horse"}))
            expect_ok(client.post("/v1/accounts:sendOobCode", {"tenantId": tenant_id, "email": email,
                                                               "requestType": "PASSWORD_RESET"}))
            deadline = time.monotonic() + 20
            while relay.sessions == 0 and time.monotonic() < deadline:
                time.sleep(0.2)
            time.sleep(1)  # let that session finish (or send AUTH, if it were going to)
            assert relay.sessions >= 1, "the directory never tried the relay"
            assert relay.auth_attempts == 0, "credentials were offered without TLS"
            assert relay.messages == 0, "mail went out through a relay the credentials were kept from"
        finally:
            run_stack(stack, "restart", "user-directory")
    finally:
        relay.stop()
