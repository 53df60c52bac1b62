"""Self-service switches (docs/protocol/admin.md#self-service-settings, docs/protocol/accounts.md#user-actions, #project-and-tenant-switches) per tenant and for the default scope; changes
made over the admin API take effect on the very next client call."""

from __future__ import annotations

from conftest import (ANON_SIGNUP_KIND, DELETE_KIND, Client, describe, expect_error, expect_ok,
                      unverified_claims)


def permissions(obj: dict) -> dict:
    return (obj.get("client") or {}).get("permissions") or {}


def test_anonymous_sign_up_refused_when_tenant_disables_it(stack, client, make_tenant):
    off = make_tenant(enableAnonymousUser=False)
    assert off.get("enableAnonymousUser", False) is False
    expect_error(client.sign_up_raw(off["tenantId"]), "ADMIN_ONLY_OPERATION")


def test_anonymous_sign_up_refused_when_user_signup_disabled(stack, client, make_tenant):
    closed = make_tenant(disabledUserSignup=True)
    assert permissions(closed).get("disabledUserSignup") is True
    expect_error(client.sign_up_raw(closed["tenantId"]), "ADMIN_ONLY_OPERATION")


def test_sign_up_refused_in_disabled_tenant(stack, client, make_tenant):
    disabled = make_tenant(disableAuth=True)
    expect_error(client.sign_up_raw(disabled["tenantId"]), "PROJECT_DISABLED")


def test_patching_switches_takes_effect_immediately(stack, client, admin, tenant_id):
    expect_ok(client.sign_up_raw(tenant_id))

    # disabledUserSignup on: the very next sign-up is refused.
    resp = admin.patch_tenant(tenant_id, {"client": {"permissions": {"disabledUserSignup": True}}},
                              "client.permissions.disabledUserSignup")
    patched = expect_ok(resp)
    assert permissions(patched).get("disabledUserSignup") is True, describe(resp)
    assert patched.get("enableAnonymousUser") is True, f"mask not respected: {describe(resp)}"
    expect_error(client.sign_up_raw(tenant_id), "ADMIN_ONLY_OPERATION")

    # ... and off again.
    expect_ok(admin.patch_tenant(tenant_id,
                                 {"client": {"permissions": {"disabledUserSignup": False}}},
                                 "client.permissions.disabledUserSignup"))
    expect_ok(client.sign_up_raw(tenant_id))

    # enableAnonymousUser off / on.
    resp = admin.patch_tenant(tenant_id, {"enableAnonymousUser": False}, "enableAnonymousUser")
    assert expect_ok(resp).get("enableAnonymousUser", False) is False, describe(resp)
    expect_error(client.sign_up_raw(tenant_id), "ADMIN_ONLY_OPERATION")
    expect_ok(admin.patch_tenant(tenant_id, {"enableAnonymousUser": True}, "enableAnonymousUser"))
    expect_ok(client.sign_up_raw(tenant_id))

    # Both in one mask.
    resp = admin.patch_tenant(
        tenant_id,
        {"enableAnonymousUser": False, "client": {"permissions": {"disabledUserSignup": True}}},
        "enableAnonymousUser,client.permissions.disabledUserSignup")
    both = expect_ok(resp)
    assert both.get("enableAnonymousUser", False) is False and \
        permissions(both).get("disabledUserSignup") is True, describe(resp)
    expect_error(client.sign_up_raw(tenant_id), "ADMIN_ONLY_OPERATION")
    expect_ok(admin.patch_tenant(
        tenant_id,
        {"enableAnonymousUser": True, "client": {"permissions": {"disabledUserSignup": False}}},
        "enableAnonymousUser,client.permissions.disabledUserSignup"))
    expect_ok(client.sign_up_raw(tenant_id))

    # disableAuth on: sign-up answers PROJECT_DISABLED; off again restores it.
    expect_ok(admin.patch_tenant(tenant_id, {"disableAuth": True}, "disableAuth"))
    expect_error(client.sign_up_raw(tenant_id), "PROJECT_DISABLED")
    expect_ok(admin.patch_tenant(tenant_id, {"disableAuth": False}, "disableAuth"))
    expect_ok(client.sign_up_raw(tenant_id))


def test_disabled_user_deletion_blocks_client_delete_but_not_admin(stack, client, admin,
                                                                   tenant_id):
    session = client.sign_up_anonymous(tenant_id)
    resp = admin.patch_tenant(tenant_id,
                              {"client": {"permissions": {"disabledUserDeletion": True}}},
                              "client.permissions.disabledUserDeletion")
    assert permissions(expect_ok(resp)).get("disabledUserDeletion") is True, describe(resp)

    expect_error(client.delete(session.id_token, tenant_id), "ADMIN_ONLY_OPERATION")
    assert [u["localId"] for u in admin.lookup_users(tenant_id, [session.local_id])] \
        == [session.local_id]
    # Sign-up is unaffected by the deletion switch.
    other = client.sign_up_anonymous(tenant_id)

    # Admin delete still works.
    resp = admin.delete_user_raw(tenant_id, session.local_id)
    assert expect_ok(resp).get("kind") == DELETE_KIND, describe(resp)
    assert admin.lookup_users(tenant_id, [session.local_id]) == []

    # Switch off: the client may delete itself again, at once.
    expect_ok(admin.patch_tenant(tenant_id,
                                 {"client": {"permissions": {"disabledUserDeletion": False}}},
                                 "client.permissions.disabledUserDeletion"))
    assert expect_ok(client.delete(other.id_token, tenant_id)).get("kind") == DELETE_KIND


def _flag(config: dict, dotted: str) -> bool:
    value: object = config
    for part in dotted.split("."):
        if not isinstance(value, dict):
            return False
        value = value.get(part)
    return bool(value)


def test_project_config_switches_for_default_scope(stack, admin):
    """All default-scope changes live in this one test, which restores the original config."""
    client = Client(stack)
    resp = admin.get_config()
    original = expect_ok(resp)
    assert original.get("name") == f"projects/{stack.project_id}/config", describe(resp)
    assert isinstance(original.get("signIn"), dict), describe(resp)
    # The top-level mirrors agree with signIn.*.
    assert _flag(original, "enableAnonymousUser") == _flag(original, "signIn.anonymous.enabled")
    assert _flag(original, "allowPasswordSignup") == _flag(original, "signIn.email.enabled")

    touched = ["signIn.anonymous.enabled", "client.permissions.disabledUserSignup",
               "client.permissions.disabledUserDeletion", "disableAuth"]
    restore_body = {
        "disableAuth": _flag(original, "disableAuth"),
        "signIn": {"anonymous": {"enabled": _flag(original, "signIn.anonymous.enabled")}},
        "client": {"permissions": {
            "disabledUserSignup": _flag(original, "client.permissions.disabledUserSignup"),
            "disabledUserDeletion": _flag(original, "client.permissions.disabledUserDeletion"),
        }},
    }
    try:
        # Anonymous sign-in on, no user actions blocked.
        resp = admin.patch_config(
            {"signIn": {"anonymous": {"enabled": True}},
             "client": {"permissions": {"disabledUserSignup": False,
                                        "disabledUserDeletion": False}}},
            ",".join(touched))
        config = expect_ok(resp)
        assert _flag(config, "signIn.anonymous.enabled") is True, describe(resp)
        assert _flag(config, "enableAnonymousUser") is True, describe(resp)
        # Fields outside the mask kept their values.
        assert _flag(config, "signIn.email.enabled") == _flag(original, "signIn.email.enabled")
        assert _flag(config, "signIn.allowDuplicateEmails") == \
            _flag(original, "signIn.allowDuplicateEmails")

        # Anonymous sign-up in the default scope: no tenant anywhere.
        resp = client.sign_up_raw(None)
        data = expect_ok(resp)
        assert data.get("kind") == ANON_SIGNUP_KIND, describe(resp)
        claims = unverified_claims(data["idToken"])
        assert "tenant" not in claims["firebase"], claims
        assert claims["firebase"]["sign_in_provider"] == "anonymous"
        user = expect_ok(client.lookup(data["idToken"]))["users"][0]
        assert user["localId"] == data["localId"] and "tenantId" not in user, user
        assert [u["localId"] for u in admin.lookup_users(None, [data["localId"]])] \
            == [data["localId"]]
        refreshed = client.refresh(data["refreshToken"])
        assert "tenant" not in unverified_claims(refreshed["id_token"])["firebase"]

        # disableAuth, as for tenants (docs/protocol/admin.md#self-service-settings): PROJECT_DISABLED at
        # once; and back.
        assert _flag(config, "disableAuth") is False, describe(resp)
        expect_ok(admin.patch_config({"disableAuth": True}, "disableAuth"))
        expect_error(client.sign_up_raw(None), "PROJECT_DISABLED")
        expect_error(client.lookup(data["idToken"]), "PROJECT_DISABLED")
        expect_ok(admin.patch_config({"disableAuth": False}, "disableAuth"))
        expect_ok(client.lookup(data["idToken"]))

        # disabledUserSignup → ADMIN_ONLY_OPERATION, immediately; and back.
        expect_ok(admin.patch_config({"client": {"permissions": {"disabledUserSignup": True}}},
                                     "client.permissions.disabledUserSignup"))
        expect_error(client.sign_up_raw(None), "ADMIN_ONLY_OPERATION")
        expect_ok(admin.patch_config({"client": {"permissions": {"disabledUserSignup": False}}},
                                     "client.permissions.disabledUserSignup"))
        expect_ok(client.sign_up_raw(None))

        # The top-level alias in the mask: enableAnonymousUser off.
        resp = admin.patch_config({"enableAnonymousUser": False}, "enableAnonymousUser")
        config = expect_ok(resp)
        assert _flag(config, "signIn.anonymous.enabled") is False, describe(resp)
        assert _flag(expect_ok(admin.get_config()), "enableAnonymousUser") is False
        expect_error(client.sign_up_raw(None), "ADMIN_ONLY_OPERATION")
        expect_ok(admin.patch_config({"signIn": {"anonymous": {"enabled": True}}},
                                     "signIn.anonymous.enabled"))
        second = client.sign_up_anonymous(None)

        # disabledUserDeletion: the client cannot delete itself; the project-level admin can.
        expect_ok(admin.patch_config({"client": {"permissions": {"disabledUserDeletion": True}}},
                                     "client.permissions.disabledUserDeletion"))
        expect_error(client.delete(second.id_token), "ADMIN_ONLY_OPERATION")
        resp = admin.delete_user_raw(None, second.local_id)
        assert expect_ok(resp).get("kind") == DELETE_KIND, describe(resp)
        assert admin.lookup_users(None, [second.local_id]) == []
        expect_ok(admin.patch_config({"client": {"permissions": {"disabledUserDeletion": False}}},
                                     "client.permissions.disabledUserDeletion"))
        assert expect_ok(client.delete(data["idToken"])).get("kind") == DELETE_KIND
    finally:
        resp = admin.patch_config(restore_body, ",".join(touched))
        assert resp.status_code == 200, f"could not restore the project config: {describe(resp)}"
    restored = expect_ok(admin.get_config())
    for path in touched:
        assert _flag(restored, path) == _flag(original, path), (path, original, restored)


def test_wrong_project_id_is_refused(stack, admin):
    for resp in (admin.request("GET", admin.config_path("no-such-project")),
                 admin.request("PATCH", admin.config_path("no-such-project"),
                               json={"signIn": {"anonymous": {"enabled": True}}},
                               params={"updateMask": "signIn.anonymous.enabled"}),
                 admin.request("GET", admin.tenants_path("no-such-project")),
                 admin.request("POST", admin.tenants_path("no-such-project"),
                               json={"displayName": "wrongproj"})):
        expect_error(resp, "PROJECT_NOT_FOUND")
