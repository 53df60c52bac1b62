"""SMTP credentials never cross the network in clear: with a user and password in SMTP_URL, a relay
that offers no STARTTLS (or a man in the middle who strips it) gets no AUTH, and the mail stays queued
for a later attempt. The directory is restarted with SMTP_URL pointing at such a relay (a one-off
`scripts/stack restart … SMTP_URL=…`), then restarted with the stack's own settings. Disruptive: runs
after every calm test (conftest)."""

from __future__ import annotations

import socket
import time
import uuid

import pytest

from conftest import MailSink, expect_ok, run_stack

pytestmark = pytest.mark.disruptive


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_no_credentials_go_to_a_relay_without_starttls(stack, client, make_tenant):
    relay = MailSink(free_port())  # no certificate: no STARTTLS, AUTH in clear accepted
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
            assert relay.messages == [], "mail went out through a relay the credentials were kept from"
        finally:
            run_stack(stack, "restart", "user-directory")
    finally:
        relay.stop()
