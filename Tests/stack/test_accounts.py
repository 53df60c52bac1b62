"""accounts:lookup and accounts:delete, by ID token and through the admin API, and
tenant isolation of users and tokens."""

from __future__ import annotations

import time
from datetime import datetime

from conftest import (DELETE_KIND, LOOKUP_KIND, RFC3339, describe, expect_error, expect_ok,
                      soft_warn, unverified_claims)


def parse_rfc3339(value: str) -> float:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def check_anonymous_user_record(user: dict, local_id: str, tenant_id: str | None) -> None:
    now = time.time()
    assert user["localId"] == local_id, user
    assert user.get("tenantId") == tenant_id, user
    for name in ("createdAt", "lastLoginAt"):
        value = user.get(name)
        assert isinstance(value, str) and value.isdigit(), f"{name} must be a ms string: {user}"
        assert abs(int(value) / 1000 - now) < 300, f"{name} not recent: {user}"
    assert isinstance(user.get("lastRefreshAt"), str), user
    assert RFC3339.match(user["lastRefreshAt"]), f"lastRefreshAt not RFC 3339: {user}"
    if "validSince" in user:
        assert isinstance(user["validSince"], str) and user["validSince"].isdigit(), user
    assert not user.get("providerUserInfo"), f"anonymous user has providers: {user}"
    assert "email" not in user, user
    assert "passwordHash" not in user, user
    assert user.get("disabled", False) is False, user


def test_lookup_by_id_token_returns_the_anonymous_user(stack, client, admin, tenant_id):
    session = client.sign_up_anonymous(tenant_id)
    resp = client.lookup(session.id_token, tenant_id)
    data = expect_ok(resp)
    assert data.get("kind") == LOOKUP_KIND, describe(resp)
    assert isinstance(data.get("users"), list) and len(data["users"]) == 1, describe(resp)
    user = data["users"][0]
    check_anonymous_user_record(user, session.local_id, tenant_id)

    # Without tenantId the token's own tenant is used; the prefixed path works too.
    data = expect_ok(client.lookup(session.id_token, prefixed=True, key_in_header=True))
    assert [u["localId"] for u in data["users"]] == [session.local_id]

    # A refresh moves lastRefreshAt forward.
    before = parse_rfc3339(user["lastRefreshAt"])
    refreshed = client.refresh(session.refresh_token)
    user2 = expect_ok(client.lookup(refreshed["id_token"], tenant_id))["users"][0]
    assert parse_rfc3339(user2["lastRefreshAt"]) >= before, (user, user2)
    assert user2["createdAt"] == user["createdAt"]

    # The admin API sees the same record.
    users = admin.lookup_users(tenant_id, [session.local_id])
    assert len(users) == 1
    check_anonymous_user_record(users[0], session.local_id, tenant_id)


def test_lookup_and_delete_require_an_id_token(stack, client, tenant_id):
    expect_error(client.lookup(None, tenant_id), "MISSING_ID_TOKEN")
    expect_error(client.delete(None, tenant_id), "MISSING_ID_TOKEN")
    # A client cannot delete by localId alone.
    session = client.sign_up_anonymous(tenant_id)
    resp = client.post("/v1/accounts:delete", {"localId": session.local_id, "tenantId": tenant_id})
    expect_error(resp, "MISSING_ID_TOKEN")
    expect_ok(client.lookup(session.id_token, tenant_id))


def test_delete_by_id_token_removes_the_user_and_its_sessions(stack, client, admin, tenant_id):
    session = client.sign_up_anonymous(tenant_id)
    other = client.sign_up_anonymous(tenant_id)
    resp = client.delete(session.id_token, tenant_id)
    data = expect_ok(resp)
    assert data.get("kind") == DELETE_KIND, describe(resp)

    expect_error(client.lookup(session.id_token, tenant_id), "USER_NOT_FOUND")
    assert admin.lookup_users(tenant_id, [session.local_id]) == []
    code = expect_error(client.refresh_raw(session.refresh_token),
                        "USER_NOT_FOUND", "INVALID_REFRESH_TOKEN")
    if code != "USER_NOT_FOUND":
        soft_warn(f"refresh after delete answered {code}; USER_NOT_FOUND is preferred")
    expect_error(client.delete(session.id_token, tenant_id), "USER_NOT_FOUND")

    # Only that user went away.
    assert [u["localId"] for u in admin.lookup_users(tenant_id, [other.local_id])] == [other.local_id]
    expect_ok(client.lookup(other.id_token, tenant_id))


def test_delete_works_with_prefixed_path(stack, client, admin, tenant_id):
    session = client.sign_up_anonymous(tenant_id)
    data = expect_ok(client.delete(session.id_token, prefixed=True))
    assert data.get("kind") == DELETE_KIND
    assert admin.lookup_users(tenant_id, [session.local_id]) == []


def test_admin_lookup_and_delete_by_local_id(stack, client, admin, tenant_id):
    s1 = client.sign_up_anonymous(tenant_id)
    s2 = client.sign_up_anonymous(tenant_id)
    users = admin.lookup_users(tenant_id, [s1.local_id, s2.local_id, "no-such-user-0000"])
    assert sorted(u["localId"] for u in users) == sorted([s1.local_id, s2.local_id])

    # No match at all: 200 with the users field omitted (never USER_NOT_FOUND).
    resp = admin.lookup_raw(tenant_id, ["no-such-user-0000"])
    data = expect_ok(resp)
    assert data.get("kind") == LOOKUP_KIND, describe(resp)
    assert not data.get("users"), describe(resp)

    resp = admin.delete_user_raw(tenant_id, s1.local_id)
    assert expect_ok(resp).get("kind") == DELETE_KIND, describe(resp)
    assert [u["localId"] for u in admin.lookup_users(tenant_id, [s1.local_id, s2.local_id])] \
        == [s2.local_id]
    expect_error(admin.delete_user_raw(tenant_id, s1.local_id), "USER_NOT_FOUND")
    expect_error(client.lookup(s1.id_token, tenant_id), "USER_NOT_FOUND")

    # The admin paths also answer under the Google host prefix.
    resp = admin.request("POST", admin.accounts_path(tenant_id, "lookup"),
                         prefix="/identitytoolkit.googleapis.com",
                         json={"localId": [s2.local_id]})
    assert [u["localId"] for u in expect_ok(resp).get("users", [])] == [s2.local_id]


def test_tokens_and_users_do_not_cross_tenants(stack, client, admin, make_tenant, verifier):
    tenant_a = make_tenant()["tenantId"]
    tenant_b = make_tenant()["tenantId"]
    a = client.sign_up_anonymous(tenant_a)
    b = client.sign_up_anonymous(tenant_b)

    # A's token used against tenant B.
    expect_error(client.lookup(a.id_token, tenant_b), "TENANT_ID_MISMATCH")
    expect_error(client.delete(a.id_token, tenant_b), "TENANT_ID_MISMATCH")
    # Neither call touched A's user.
    assert [u["localId"] for u in admin.lookup_users(tenant_a, [a.local_id])] == [a.local_id]

    # Admin API of tenant B does not see or delete A's user; nor does the project level.
    assert admin.lookup_users(tenant_b, [a.local_id]) == []
    assert admin.lookup_users(None, [a.local_id, b.local_id]) == []
    expect_error(admin.delete_user_raw(tenant_b, a.local_id), "USER_NOT_FOUND")
    expect_error(admin.delete_user_raw(None, a.local_id), "USER_NOT_FOUND")
    assert [u["localId"] for u in admin.lookup_users(tenant_a, [a.local_id])] == [a.local_id]
    assert [u["localId"] for u in admin.lookup_users(tenant_b, [a.local_id, b.local_id])] \
        == [b.local_id]

    # Refresh tokens are tenant-bound: a refresh of A's token yields an A token.
    data = client.refresh(a.refresh_token)
    claims = verifier.verify(data["id_token"])
    assert claims["firebase"]["tenant"] == tenant_a
    assert claims["sub"] == a.local_id
    expect_error(client.lookup(data["id_token"], tenant_b), "TENANT_ID_MISMATCH")
    user = expect_ok(client.lookup(data["id_token"]))["users"][0]
    assert user["tenantId"] == tenant_a

    # Each token's tenant claim is its own.
    assert unverified_claims(b.id_token)["firebase"]["tenant"] == tenant_b
    expect_ok(client.lookup(b.id_token, tenant_b))


def test_privileged_calls_on_client_paths_act_as_admin(stack, client, admin, tenant_id):
    """`Authorization: Bearer <admin secret>` on the bare client paths (no API key) is an admin
    call: lookup by localId and delete by localId in the body's tenant (B.0, B.2.1). It is served on
    the admin plane (A.12); on the public plane the bearer is dropped (test_planes.py)."""
    import requests

    s1 = client.sign_up_anonymous(tenant_id)
    bearer = {"Authorization": f"Bearer {stack.admin_token}"}
    for prefix in ("", "/identitytoolkit.googleapis.com"):
        resp = requests.post(stack.admin_url + prefix + "/v1/accounts:lookup", headers=bearer,
                             json={"tenantId": tenant_id, "localId": [s1.local_id]}, timeout=15)
        assert [u["localId"] for u in expect_ok(resp).get("users", [])] == [s1.local_id], describe(resp)

    # Another tenant's scope does not see the user.
    resp = requests.post(stack.admin_url + "/v1/accounts:lookup", headers=bearer,
                         json={"localId": [s1.local_id]}, timeout=15)
    assert not expect_ok(resp).get("users"), describe(resp)

    # A wrong bearer is refused, not downgraded to a client call.
    resp = requests.post(stack.admin_url + "/v1/accounts:lookup", headers={"Authorization": "Bearer nope"},
                         json={"tenantId": tenant_id, "localId": [s1.local_id]}, timeout=15)
    assert resp.status_code == 401, describe(resp)

    resp = requests.post(stack.admin_url + "/v1/accounts:delete", headers=bearer,
                         json={"tenantId": tenant_id, "localId": s1.local_id}, timeout=15)
    assert expect_ok(resp).get("kind") == DELETE_KIND, describe(resp)
    assert admin.lookup_users(tenant_id, [s1.local_id]) == []


def test_privileged_send_oob_code_on_the_client_path_returns_the_link(stack, client, make_tenant):
    import requests
    tenant_id = make_tenant(allowPasswordSignup=True)["tenantId"]
    email = f"priv-{time.time_ns()}@example.com"
    expect_ok(client.post("/v1/accounts:signUp", {"tenantId": tenant_id, "email": email, "password": "secret12"}))
    resp = requests.post(stack.admin_url + "/v1/accounts:sendOobCode",
                         headers={"Authorization": f"Bearer {stack.admin_token}"},
                         json={"tenantId": tenant_id, "requestType": 1, "email": email, "returnOobLink": True},
                         timeout=15)
    data = expect_ok(resp)
    assert data["email"] == email and data["oobCode"] and data["oobCode"] in data["oobLink"], describe(resp)
    resp = requests.post(stack.admin_url + "/v1/accounts:sendOobCode",
                         headers={"Authorization": f"Bearer {stack.admin_token}"},
                         json={"tenantId": tenant_id, "email": email}, timeout=15)
    expect_error(resp, "MISSING_REQ_TYPE")
