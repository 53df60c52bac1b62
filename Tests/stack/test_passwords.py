"""Email enumeration protection through the stack (docs/protocol/accounts.md#email-enumeration-protection), and the password helpers other stack
tests share. Sign-up, sign-in, updates, re-authentication and revocation are in the in-process Swift
tests (Tests/TesseraTests/InProcess/InProcessPasswordTests.swift, InProcessAccountUpdateTests.swift)."""

from __future__ import annotations

import statistics
import time
import uuid

import pytest

from conftest import describe, expect_error, expect_ok

PASSWORD = "correct horse 1"


def email() -> str:
    return f"user-{uuid.uuid4().hex[:12]}@example.com"


@pytest.fixture
def password_tenant(make_tenant) -> str:
    return make_tenant(allowPasswordSignup=True)["tenantId"]


def sign_up(client, tenant_id, address, password=PASSWORD, **extra):
    return client.post("/v1/accounts:signUp", {"tenantId": tenant_id, "email": address, "password": password,
                                              "returnSecureToken": True, **extra})


def sign_in(client, tenant_id, address, password=PASSWORD):
    return client.post("/v1/accounts:signInWithPassword",
                       {"tenantId": tenant_id, "email": address, "password": password, "returnSecureToken": True})


def test_email_enumeration_protection_is_on_by_default(client, admin, password_tenant):
    address = email()
    expect_ok(sign_up(client, password_tenant, address))
    expect_error(sign_in(client, password_tenant, address, "wrong password"), "INVALID_LOGIN_CREDENTIALS")
    expect_error(sign_in(client, password_tenant, email()), "INVALID_LOGIN_CREDENTIALS")
    resp = client.post("/v1/accounts:createAuthUri",
                       {"tenantId": password_tenant, "identifier": address, "continueUri": "https://app.example/"})
    data = expect_ok(resp)
    assert set(data) == {"kind", "sessionId"}, describe(resp)

    # Unknown and known accounts take comparable time: both cost one hash.
    def timed(address_, password_):
        started = time.monotonic()
        sign_in(client, password_tenant, address_, password_)
        return time.monotonic() - started

    known = statistics.median(timed(address, "wrong password") for _ in range(7))
    unknown = statistics.median(timed(email(), "wrong password") for _ in range(7))
    assert unknown > 0.5 * known and known > 0.5 * unknown, f"known {known:.4f}s vs unknown {unknown:.4f}s"
