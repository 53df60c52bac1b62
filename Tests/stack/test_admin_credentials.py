"""Scoped admin credentials and the audit log (issue #4; API.md A.10)."""

from __future__ import annotations

import uuid

import requests

from conftest import describe, expect_error, expect_ok


def as_credential(stack, secret):
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {secret}"
    return lambda method, path, **kw: session.request(method, stack.admin_url + path, timeout=15, **kw)


def test_tenant_scoped_credential_manages_its_tenant_and_nothing_else(stack, admin, make_tenant):
    p = stack.project_id
    own, other = make_tenant()["tenantId"], make_tenant()["tenantId"]
    created = expect_ok(admin.request("POST", f"/v2/projects/{p}/tenants/{own}/adminCredentials",
                                      json={"displayName": "ci"}))
    secret, credential_id = created["secret"], created["credentialId"]
    assert created["tenantId"] == own and created["name"].endswith(f"/adminCredentials/{credential_id}")
    listed = expect_ok(admin.request("GET", f"/v2/projects/{p}/tenants/{own}/adminCredentials"))["adminCredentials"]
    assert [c["credentialId"] for c in listed] == [credential_id] and "secret" not in listed[0]

    call = as_credential(stack, secret)
    email = f"scoped-{uuid.uuid4().hex[:8]}@example.com"
    user = expect_ok(call("POST", f"/v1/projects/{p}/tenants/{own}/accounts", json={"email": email}))
    found = expect_ok(call("POST", f"/v1/projects/{p}/tenants/{own}/accounts:lookup", json={"email": [email]}))
    assert found["users"][0]["localId"] == user["localId"]
    patched = expect_ok(call("PATCH", f"/v2/projects/{p}/tenants/{own}?updateMask=enableAnonymousUser",
                             json={"enableAnonymousUser": False}))
    assert patched["enableAnonymousUser"] is False
    expect_ok(call("GET", f"/v2/projects/{p}/tenants/{own}"))

    forbidden = [
        ("POST", f"/v1/projects/{p}/tenants/{other}/accounts:lookup", {"localId": ["x"]}),
        ("POST", f"/v1/projects/{p}/accounts:lookup", {"localId": ["x"]}),
        ("GET", f"/v2/projects/{p}/config", None),
        ("PATCH", f"/v2/projects/{p}/config?updateMask=enableAnonymousUser", {"enableAnonymousUser": True}),
        ("GET", f"/v2/projects/{p}/tenants", None),
        ("POST", f"/v2/projects/{p}/tenants", {"displayName": "Nope"}),
        ("DELETE", f"/v2/projects/{p}/tenants/{own}", None),
        ("GET", f"/v2/projects/{p}/tenants/{own}/adminCredentials", None),
        ("POST", f"/v2/projects/{p}/tenants/{own}/adminCredentials", {"displayName": "more"}),
        ("GET", f"/v2/projects/{p}/tenants/{other}/auditLog", None),
    ]
    for method, path, body in forbidden:
        resp = call(method, path, json=body)
        assert resp.status_code == 403, f"{method} {path}: {describe(resp)}"
        assert resp.json()["error"]["message"] == "INSUFFICIENT_PERMISSION", describe(resp)
    expect_ok(admin.get_tenant(own))  # still there

    # Revocation takes effect at once.
    expect_ok(admin.request("DELETE", f"/v2/projects/{p}/tenants/{own}/adminCredentials/{credential_id}"))
    resp = call("GET", f"/v2/projects/{p}/tenants/{own}")
    assert resp.status_code == 401, describe(resp)
    expect_error(admin.request("DELETE", f"/v2/projects/{p}/tenants/{own}/adminCredentials/{credential_id}"),
                 "CREDENTIAL_NOT_FOUND")


def test_project_credential_and_wrong_secrets(stack, admin, make_tenant):
    p = stack.project_id
    created = expect_ok(admin.request("POST", f"/v2/projects/{p}/adminCredentials", json={"displayName": "backend"}))
    assert "tenantId" not in created
    call = as_credential(stack, created["secret"])
    tenant_id = make_tenant()["tenantId"]
    expect_ok(call("GET", f"/v2/projects/{p}/config"))
    expect_ok(call("POST", f"/v1/projects/{p}/tenants/{tenant_id}/accounts:lookup", json={"localId": ["x"]}))
    assert as_credential(stack, created["secret"] + "x")("GET", f"/v2/projects/{p}/config").status_code == 401
    expect_ok(admin.request("DELETE", f"/v2/projects/{p}/adminCredentials/{created['credentialId']}"))


def test_every_admin_write_is_in_the_audit_log(stack, admin, make_tenant):
    p = stack.project_id
    tenant_id = make_tenant()["tenantId"]
    created = expect_ok(admin.request("POST", f"/v2/projects/{p}/tenants/{tenant_id}/adminCredentials", json={}))
    call = as_credential(stack, created["secret"])
    resp = call("POST", f"/v1/projects/{p}/tenants/{tenant_id}/accounts", json={"displayName": "Audited"},
                headers={"X-Request-ID": "audit-check-1"})
    local_id = expect_ok(resp)["localId"]
    expect_ok(call("POST", f"/v1/projects/{p}/tenants/{tenant_id}/accounts:update",
                   json={"localId": local_id, "disableUser": True}))
    expect_ok(call("POST", f"/v1/projects/{p}/tenants/{tenant_id}/accounts:delete", json={"localId": local_id}))
    # A refused call changes nothing and is not a write.
    call("POST", f"/v1/projects/{p}/tenants/{tenant_id}/accounts:delete", json={"localId": local_id})

    page = expect_ok(call("GET", f"/v2/projects/{p}/tenants/{tenant_id}/auditLog?pageSize=2"))
    entries = page["entries"]
    assert len(entries) == 2 and page["nextPageToken"]
    rest = expect_ok(call("GET", f"/v2/projects/{p}/tenants/{tenant_id}/auditLog?pageToken={page['nextPageToken']}"))
    entries += rest["entries"]
    mine = [e for e in entries if e["actor"] == created["credentialId"]]
    assert [e["action"] for e in mine] == [
        "POST /v1/projects/{project}/tenants/{tenant}/accounts:delete",
        "POST /v1/projects/{project}/tenants/{tenant}/accounts:update",
        "POST /v1/projects/{project}/tenants/{tenant}/accounts",
    ], mine
    assert all(e["target"] == f"user:{local_id}" or e["action"].endswith("/accounts") for e in mine)
    assert mine[-1]["requestId"] == "audit-check-1" and mine[-1]["tenantId"] == tenant_id
    assert all(created["secret"] not in str(e) for e in entries), "the secret is never logged"
    # The bootstrap admin's own writes carry its id, never the secret.
    assert any(e["actor"] == "bootstrap" for e in entries)


def test_a_tenant_deletion_is_in_the_project_audit_log_and_its_own_log_goes_with_it(stack, admin, make_tenant):
    """The tenant's own entries (and its rate counters) are deleted with it, so a later tenant given the
    same id could never read them; the deletion itself is the project's entry."""
    p = stack.project_id
    tenant_id = make_tenant()["tenantId"]
    expect_ok(admin.request("POST", f"/v1/projects/{p}/tenants/{tenant_id}/accounts", json={"displayName": "x"}))
    assert expect_ok(admin.request("GET", f"/v2/projects/{p}/tenants/{tenant_id}/auditLog"))["entries"]
    expect_ok(admin.request("DELETE", f"/v2/projects/{p}/tenants/{tenant_id}",
                            headers={"X-Request-ID": "audit-tenant-deletion"}))

    entries = expect_ok(admin.request("GET", f"/v2/projects/{p}/auditLog?pageSize=20"))["entries"]
    deletion = [e for e in entries if e["requestId"] == "audit-tenant-deletion"]
    assert len(deletion) == 1, entries
    assert deletion[0]["action"] == "DELETE /v2/projects/{project}/tenants/{tenant}", deletion
    assert deletion[0]["target"] == f"/v2/projects/{p}/tenants/{tenant_id}", deletion
    assert deletion[0]["actor"] == "bootstrap" and deletion[0].get("tenantId") is None, deletion
    expect_error(admin.request("GET", f"/v2/projects/{p}/tenants/{tenant_id}/auditLog"), "TENANT_NOT_FOUND")


def test_credential_and_service_account_lists_are_paged(stack, admin, make_tenant):
    """A.10: pageSize/pageToken, as the v2 admin lists; every entry once, the last page without a token."""
    p = stack.project_id
    tenant_id = make_tenant()["tenantId"]
    for collection, field, id_field in (("adminCredentials", "adminCredentials", "credentialId"),
                                        ("serviceAccounts", "serviceAccounts", "accountId")):
        path = f"/v2/projects/{p}/tenants/{tenant_id}/{collection}"
        made = {expect_ok(admin.request("POST", path, json={"displayName": f"page-{n}"}))[id_field]
                for n in range(3)}
        first = expect_ok(admin.request("GET", path, params={"pageSize": 2}))
        assert len(first[field]) == 2 and first.get("nextPageToken"), first
        second = expect_ok(admin.request("GET", path, params={"pageSize": 2, "pageToken": first["nextPageToken"]}))
        assert len(second[field]) == 1 and "nextPageToken" not in second, second
        assert {e[id_field] for e in first[field] + second[field]} == made
        assert len(expect_ok(admin.request("GET", path))[field]) == 3, "the default page holds them all"


def test_tenant_isolation_matrix(stack, admin, client, make_tenant):
    """A tenant credential cannot read, write, list or delete anything of another tenant, on any
    tenant-scoped endpoint, and nothing of the other tenant changes."""
    p = stack.project_id
    own, other = make_tenant(allowPasswordSignup=True)["tenantId"], make_tenant(allowPasswordSignup=True)["tenantId"]
    victim = expect_ok(admin.request("POST", f"/v1/projects/{p}/tenants/{other}/accounts",
                                     json={"email": f"victim-{uuid.uuid4().hex[:6]}@example.com", "password": "secret12"}))
    secret = expect_ok(admin.request("POST", f"/v2/projects/{p}/tenants/{own}/adminCredentials", json={}))["secret"]
    call = as_credential(stack, secret)
    v1 = f"/v1/projects/{p}/tenants/{other}"
    v2 = f"/v2/projects/{p}/tenants/{other}"
    uid = victim["localId"]
    matrix = [
        ("read", "POST", f"{v1}/accounts:lookup", {"localId": [uid]}),
        ("read", "GET", v2, None),
        ("read", "GET", f"{v2}/mailTemplates", None),
        ("read", "GET", f"{v2}/auditLog", None),
        ("list", "GET", f"{v1}/accounts:batchGet", None),
        ("list", "POST", f"{v1}/accounts:query", {}),
        ("write", "POST", f"{v1}/accounts", {"email": "intruder@example.com"}),
        ("write", "POST", f"{v1}/accounts:update", {"localId": uid, "password": "hijacked1"}),
        ("write", "POST", f"{v1}/accounts:batchCreate", {"users": [{"localId": "intruder"}]}),
        ("write", "POST", f"{v1}/accounts:sendOobCode",
         {"requestType": "PASSWORD_RESET", "email": victim["email"], "returnOobLink": True}),
        ("write", "PATCH", f"{v2}?updateMask=disableAuth", {"disableAuth": True}),
        ("write", "PATCH", f"{v2}/mailTemplates/PASSWORD_RESET", {"body": "%LINK%"}),
        ("write", "POST", f"/v1/projects/{p}/tenants/{other}:createSessionCookie", {"idToken": "x"}),
        ("delete", "POST", f"{v1}/accounts:delete", {"localId": uid}),
        ("delete", "POST", f"{v1}/accounts:batchDelete", {"localIds": [uid], "force": True}),
        ("delete", "DELETE", v2, None),
    ]
    for kind, method, path, body in matrix:
        resp = call(method, path, json=body)
        assert resp.status_code == 403, f"{kind} {method} {path}: {describe(resp)}"
    # Nothing changed in the other tenant.
    [user] = admin.lookup_users(other, [uid])
    assert user["email"] == victim["email"] and not user.get("disabled")
    assert not expect_ok(admin.get_tenant(other)).get("disableAuth")
    assert expect_ok(client.post("/v1/accounts:signInWithPassword",
                                 {"tenantId": other, "email": victim["email"], "password": "secret12"}))
    # A tenant admin sees its tenant's own hash key (issue #23), never the project's.
    own_config = expect_ok(call("GET", f"/v2/projects/{p}/tenants/{own}"))["hashConfig"]
    assert own_config == expect_ok(admin.get_tenant(own))["hashConfig"]
    assert own_config["algorithm"] == "SCRYPT"
    assert own_config["signerKey"] != expect_ok(admin.get_config())["signIn"]["hashConfig"]["signerKey"]
