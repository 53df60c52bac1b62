"""Tenant administration (v2 admin API): create, get, list with paging, PATCH with and
without updateMask, delete."""

from __future__ import annotations

import uuid

from conftest import describe, expect_error, expect_ok, unique_name

TENANT_FIELDS = ("name", "tenantId", "displayName", "allowPasswordSignup",
                 "enableEmailLinkSignin", "enableAnonymousUser", "disableAuth",
                 "autodeleteAnonymousUsers", "client", "mfaConfig")


def check_tenant_shape(tenant: dict, project_id: str) -> None:
    for name in TENANT_FIELDS:
        assert name in tenant, f"tenant lacks {name}: {tenant}"
    assert tenant["name"] == f"projects/{project_id}/tenants/{tenant['tenantId']}", tenant
    perms = tenant["client"].get("permissions")
    assert isinstance(perms, dict), tenant
    assert set(perms) >= {"disabledUserSignup", "disabledUserDeletion"}, tenant
    assert tenant["mfaConfig"].get("state") == "DISABLED", tenant
    assert tenant["mfaConfig"].get("enabledProviders", []) == [], tenant


def settings(tenant: dict) -> dict:
    perms = tenant.get("client", {}).get("permissions", {})
    return {
        "displayName": tenant.get("displayName"),
        "allowPasswordSignup": tenant.get("allowPasswordSignup", False),
        "enableAnonymousUser": tenant.get("enableAnonymousUser", False),
        "disableAuth": tenant.get("disableAuth", False),
        "autodeleteAnonymousUsers": tenant.get("autodeleteAnonymousUsers", False),
        "disabledUserSignup": perms.get("disabledUserSignup", False),
        "disabledUserDeletion": perms.get("disabledUserDeletion", False),
    }


def test_create_and_get_tenant(stack, admin, make_tenant):
    name = unique_name("crud")
    created = make_tenant(displayName=name, allowPasswordSignup=True)
    check_tenant_shape(created, stack.project_id)
    assert settings(created) == {
        "displayName": name, "allowPasswordSignup": True, "enableAnonymousUser": True,
        "disableAuth": False, "autodeleteAnonymousUsers": False,
        "disabledUserSignup": False, "disabledUserDeletion": False,
    }
    assert created["enableEmailLinkSignin"] is False

    resp = admin.get_tenant(created["tenantId"])
    fetched = expect_ok(resp)
    check_tenant_shape(fetched, stack.project_id)
    # GET adds the read-only hash config for project admins (B.7.1); everything else is as created.
    assert fetched.pop("hashConfig")["algorithm"] == "SCRYPT"
    assert fetched == created, (created, fetched)

    # Google host prefix form of the admin path.
    resp = admin.get_tenant(created["tenantId"], prefix="/identitytoolkit.googleapis.com")
    assert expect_ok(resp)["tenantId"] == created["tenantId"], describe(resp)


def test_create_tenant_defaults_are_off(stack, admin, make_tenant):
    resp = admin.create_tenant_raw({"displayName": unique_name("dflt")})
    tenant = expect_ok(resp)
    make_tenant.created.append(tenant["tenantId"])
    check_tenant_shape(tenant, stack.project_id)
    values = settings(tenant)
    values.pop("displayName")
    assert not any(values.values()), f"defaults must be false: {tenant}"


def test_list_tenants_pages_in_tenant_id_order(stack, admin, make_tenant):
    ours = {make_tenant(displayName=unique_name("list"))["tenantId"] for _ in range(3)}
    seen: list[str] = []

    # The first pages one by one, then the rest in bigger pages.
    token = None
    for _ in range(4):
        resp = admin.list_tenants(page_size=1, page_token=token)
        page = expect_ok(resp)
        tenants = page.get("tenants", [])
        assert len(tenants) <= 1, describe(resp)
        for t in tenants:
            check_tenant_shape(t, stack.project_id)
        seen += [t["tenantId"] for t in tenants]
        token = page.get("nextPageToken")
        if not token:
            break
    pages = 0
    while token:
        pages += 1
        assert pages < 200, "paging does not terminate"
        resp = admin.list_tenants(page_size=100, page_token=token)
        page = expect_ok(resp)
        assert len(page.get("tenants", [])) <= 100, describe(resp)
        seen += [t["tenantId"] for t in page.get("tenants", [])]
        token = page.get("nextPageToken")

    assert len(seen) == len(set(seen)), f"a tenant was listed twice: {seen}"
    assert seen == sorted(seen), "tenants are not sorted by tenantId"
    assert ours <= set(seen), f"created tenants missing from the list: {ours - set(seen)}"

    # One big page gives the same set.
    full = expect_ok(admin.list_tenants(page_size=1000))
    assert ours <= {t["tenantId"] for t in full.get("tenants", [])}


def test_patch_with_update_mask_changes_only_listed_fields(stack, admin, tenant):
    tid = tenant["tenantId"]
    new_name = unique_name("renamed")
    body = {
        "displayName": new_name,
        "allowPasswordSignup": True,          # not in the mask
        "enableAnonymousUser": False,         # not in the mask
        "disableAuth": True,                  # not in the mask
        "client": {"permissions": {"disabledUserDeletion": True,
                                   "disabledUserSignup": True}},  # only Deletion in the mask
    }
    resp = admin.patch_tenant(tid, body, "displayName,client.permissions.disabledUserDeletion")
    patched = expect_ok(resp)
    expected = settings(tenant)
    expected.update(displayName=new_name, disabledUserDeletion=True)
    assert settings(patched) == expected, describe(resp)
    assert patched["tenantId"] == tid and patched["name"] == tenant["name"]
    assert settings(expect_ok(admin.get_tenant(tid))) == expected


def test_patch_without_mask_replaces_the_tenant(stack, admin, tenant):
    tid = tenant["tenantId"]
    new_name = unique_name("full")
    resp = admin.patch_tenant(tid, {"displayName": new_name, "allowPasswordSignup": True})
    patched = expect_ok(resp)
    assert settings(patched) == {
        "displayName": new_name, "allowPasswordSignup": True, "enableAnonymousUser": False,
        "disableAuth": False, "autodeleteAnonymousUsers": False,
        "disabledUserSignup": False, "disabledUserDeletion": False,
    }, describe(resp)
    assert patched["tenantId"] == tid and patched["name"] == tenant["name"]
    assert settings(expect_ok(admin.get_tenant(tid))) == settings(patched)


def test_deleted_tenant_is_gone(stack, admin, client, make_tenant):
    tenant = make_tenant()
    tid = tenant["tenantId"]
    session = client.sign_up_anonymous(tid)
    resp = admin.delete_tenant(tid)
    assert resp.status_code == 200, describe(resp)
    assert resp.json() == {}, describe(resp)

    expect_error(admin.get_tenant(tid), "TENANT_NOT_FOUND")
    expect_error(admin.delete_tenant(tid), "TENANT_NOT_FOUND")
    expect_error(admin.patch_tenant(tid, {"enableAnonymousUser": True}, "enableAnonymousUser"),
                 "TENANT_NOT_FOUND")
    expect_error(client.sign_up_raw(tid), "TENANT_NOT_FOUND")
    listed = expect_ok(admin.list_tenants(page_size=1000)).get("tenants", [])
    assert tid not in {t["tenantId"] for t in listed}
    # The deleted tenant's users cannot use their tokens any more.
    resp = client.refresh_raw(session.refresh_token)
    assert resp.status_code == 400, describe(resp)
    resp = client.lookup(session.id_token, tid)
    assert resp.status_code == 400, describe(resp)


def test_unknown_tenant_is_never_created_implicitly(stack, admin, client):
    ghost = "ghost-" + uuid.uuid4().hex[:12]
    expect_error(client.sign_up_raw(ghost), "TENANT_NOT_FOUND")
    expect_error(admin.get_tenant(ghost), "TENANT_NOT_FOUND")
    expect_error(admin.lookup_raw(ghost, ["someone"]), "TENANT_NOT_FOUND")

