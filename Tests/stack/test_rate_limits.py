"""Abuse protection (issue #7): per-scope limits counted in PostgreSQL (shared by every replica),
answered with TOO_MANY_ATTEMPTS_TRY_LATER and Retry-After; the client address comes from the
ingress, so a client cannot reset its counter with its own X-Forwarded-For."""

from __future__ import annotations

import uuid

from conftest import expect_error, expect_ok


def limited(resp) -> int:
    expect_error(resp, "TOO_MANY_ATTEMPTS_TRY_LATER")
    retry = int(resp.headers["Retry-After"])
    assert 1 <= retry <= 3600, resp.headers
    return retry


def address() -> str:
    return f"rl-{uuid.uuid4().hex[:12]}@example.com"


def test_sign_ups_per_address_are_limited_and_spoofed_forwarding_does_not_help(admin, client, make_tenant):
    tenant_id = make_tenant(rateLimits={"signUpsPerIpPerHour": 3})["tenantId"]
    other = make_tenant()["tenantId"]
    for n in range(3):
        client.sign_up_anonymous(tenant_id, headers={"X-Forwarded-For": f"203.0.113.{n}"})
    limited(client.sign_up_raw(tenant_id))
    limited(client.sign_up_raw(tenant_id, headers={"X-Forwarded-For": "198.51.100.7"}))
    # Limits are per scope, and admin calls are not limited.
    client.sign_up_anonymous(other)
    resp = admin.request("POST", f"/v1/projects/{admin.stack.project_id}/tenants/{tenant_id}/accounts", json={})
    expect_ok(resp)


def test_password_attempts_per_account_are_limited_before_any_hashing(client, make_tenant):
    tenant_id = make_tenant(allowPasswordSignup=True, rateLimits={"passwordSignInsPerAccountPerHour": 3})["tenantId"]
    victim, bystander = address(), address()
    for email in (victim, bystander):
        expect_ok(client.post("/v1/accounts:signUp", {"email": email, "password": "correct horse",
                                                      "tenantId": tenant_id}))

    def sign_in(email: str, password: str):
        return client.post("/v1/accounts:signInWithPassword", {"email": email, "password": password,
                                                               "tenantId": tenant_id})
    for _ in range(3):
        expect_error(sign_in(victim, "guess"), "INVALID_PASSWORD", "INVALID_LOGIN_CREDENTIALS")
    limited(sign_in(victim, "correct horse"))  # even the right password waits
    expect_ok(sign_in(bystander, "correct horse"))


def test_mails_per_account_are_limited_for_end_users_only(admin, client, make_tenant):
    tenant_id = make_tenant(allowPasswordSignup=True, rateLimits={"oobEmailsPerAccountPerHour": 2})["tenantId"]
    email = address()
    expect_ok(client.post("/v1/accounts:signUp", {"email": email, "password": "correct horse", "tenantId": tenant_id}))
    reset = {"requestType": "PASSWORD_RESET", "email": email, "tenantId": tenant_id}
    for _ in range(2):
        expect_ok(client.post("/v1/accounts:sendOobCode", reset))
    limited(client.post("/v1/accounts:sendOobCode", reset))
    # Under email enumeration protection an address without an account is counted the same way, so
    # the limit does not tell the two apart.
    unknown = {**reset, "email": address()}
    for _ in range(2):
        expect_ok(client.post("/v1/accounts:sendOobCode", unknown))
    limited(client.post("/v1/accounts:sendOobCode", unknown))
    link = admin.request("POST", f"/v1/projects/{admin.stack.project_id}/tenants/{tenant_id}/accounts:sendOobCode",
                         json={**reset, "returnOobLink": True})
    assert "oobLink" in expect_ok(link)


def test_limits_are_tenant_settings_with_defaults(admin, make_tenant):
    tenant = make_tenant()
    assert tenant["rateLimits"] == {"signUpsPerIpPerHour": 100, "passwordSignInsPerAccountPerHour": 30,
                                    "passwordSignInsPerIpPerHour": 300, "oobEmailsPerAccountPerHour": 10,
                                    "idpSignInsPerIpPerHour": 300, "smsPerNumberPerHour": 5, "smsPerIpPerHour": 20,
                                    "smsPerRegionPerHour": 500, "smsPerScopePerDay": 1000}, tenant
    resp = admin.patch_tenant(tenant["tenantId"], {"rateLimits": {"signUpsPerIpPerHour": 0}},
                              update_mask="rateLimits.signUpsPerIpPerHour")
    changed = expect_ok(resp)["rateLimits"]
    assert changed["signUpsPerIpPerHour"] == 0 and changed["oobEmailsPerAccountPerHour"] == 10, changed
    config = expect_ok(admin.get_config())
    assert config["rateLimits"]["signUpsPerIpPerHour"] >= 0, config
