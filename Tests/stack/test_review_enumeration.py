"""Enumeration leftovers of the second outside review (issue 35, docs/design-notes.md "Passwords"):

- Under email enumeration protection a wrong password for a disabled account answers
  INVALID_LOGIN_CREDENTIALS after the same hashing as any other wrong password (it answered USER_DISABLED
  at once, in about 9 ms against about 205 ms); only the right password learns USER_DISABLED. Without
  protection a disabled account still answers USER_DISABLED first, as Firebase does.
- Under protection, an end user's EMAIL_SIGNIN `sendOobCode` answers before its per-account work (the
  lookup, the row lock, the code, the mail), as PASSWORD_RESET does: shown deterministically by holding
  the account's row lock in another transaction, which the answer must not wait for."""

from __future__ import annotations

import os
import subprocess
import time
import uuid

import requests

from conftest import HTTP_TIMEOUT, expect_error, expect_ok

PASSWORD = "correct horse 1"


def protected_tenant(make_tenant) -> str:
    """A tenant under the project's enumeration protection (on by default; the test stack keeps it on)."""
    return make_tenant(allowPasswordSignup=True, enableEmailLinkSignin=True)["tenantId"]


def sign_up(client, tenant: str) -> tuple[str, str]:
    email = f"enum-{uuid.uuid4().hex[:10]}@example.com"
    answer = expect_ok(client.post("/v1/accounts:signUp", {"tenantId": tenant, "email": email, "password": PASSWORD,
                                                          "returnSecureToken": True}))
    return email, answer["localId"]


def disable(admin, tenant: str, local_id: str) -> None:
    expect_ok(admin.request("POST", f"/v1/projects/{admin.stack.project_id}/tenants/{tenant}/accounts:update",
                            json={"localId": local_id, "disableUser": True}))


def sign_in(client, tenant: str, email: str, password: str) -> tuple[requests.Response, float]:
    started = time.monotonic()
    answer = client.post("/v1/accounts:signInWithPassword", {"tenantId": tenant, "email": email,
                                                             "password": password, "returnSecureToken": True})
    return answer, time.monotonic() - started


def test_a_disabled_account_answers_like_any_other_to_a_wrong_password_under_protection(client, admin, make_tenant):
    tenant = protected_tenant(make_tenant)
    email, local_id = sign_up(client, tenant)
    other, _ = sign_up(client, tenant)
    disable(admin, tenant, local_id)
    wrong, wrong_took = sign_in(client, tenant, email, "wrong horse 9")
    expect_error(wrong, "INVALID_LOGIN_CREDENTIALS")
    enabled, enabled_took = sign_in(client, tenant, other, "wrong horse 9")
    expect_error(enabled, "INVALID_LOGIN_CREDENTIALS")
    # The same hashing: the disabled account's refusal is no longer an order of magnitude faster.
    assert wrong_took > enabled_took / 3, (wrong_took, enabled_took)
    right, _ = sign_in(client, tenant, email, PASSWORD)
    expect_error(right, "USER_DISABLED")


def test_without_protection_a_disabled_account_says_so_at_once(client, admin, make_tenant):
    tenant = protected_tenant(make_tenant)
    email, local_id = sign_up(client, tenant)
    disable(admin, tenant, local_id)
    original = expect_ok(admin.get_config())
    mask = "emailPrivacyConfig.enableImprovedEmailPrivacy"
    expect_ok(admin.patch_config({"emailPrivacyConfig": {"enableImprovedEmailPrivacy": False}}, mask))
    try:
        expect_error(sign_in(client, tenant, email, "wrong horse 9")[0], "USER_DISABLED")
    finally:
        expect_ok(admin.patch_config(original, mask))


class RowLock:
    """Holds `SELECT … FOR UPDATE` on one user row in a psql session of its own until closed."""

    def __init__(self, stack, tenant: str, local_id: str):
        psql = next((p for p in ("/usr/lib/postgresql/15/bin/psql", "/usr/bin/psql") if os.path.exists(p)), "psql")
        self.process = subprocess.Popen([psql, "-X", "-At", "-v", "ON_ERROR_STOP=1", stack.database_url],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True)
        assert self.process.stdin and self.process.stdout
        self.process.stdin.write("BEGIN;\n")
        self.process.stdin.write(f"SELECT 'locked' FROM users WHERE tenant_id = '{tenant}' "
                                 f"AND local_id = '{local_id}' FOR UPDATE;\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline().strip()
        assert line == "BEGIN", line
        line = self.process.stdout.readline().strip()
        assert line == "locked", line

    def close(self) -> None:
        assert self.process.stdin
        self.process.stdin.write("ROLLBACK;\n\\q\n")
        self.process.stdin.flush()
        self.process.wait(timeout=30)


def test_an_email_sign_in_link_answers_before_its_per_account_work_under_protection(
        client, make_tenant, stack, mail_sink):
    tenant = protected_tenant(make_tenant)
    email, local_id = sign_up(client, tenant)
    lock = RowLock(stack, tenant, local_id)
    try:
        started = time.monotonic()
        answer = requests.post(f"{stack.url}/v1/accounts:sendOobCode?key={stack.api_key}",
                               json={"tenantId": tenant, "requestType": "EMAIL_SIGNIN", "email": email,
                                     "continueUrl": "http://localhost/done"}, timeout=HTTP_TIMEOUT)
        took = time.monotonic() - started
        assert expect_ok(answer)["email"] == email
        assert took < 2, f"the answer waited {took:.1f}s for the account's row lock: the work is on its path"
    finally:
        lock.close()
    # The work follows the answer: the mail comes once the lock is gone.
    [mail] = mail_sink.wait_for(email)
    assert "oobCode=" in mail["body"]
