"""Caller identification (API key, admin bearer) and the Google error envelope (B.0, B.1)."""

from __future__ import annotations

import requests

from conftest import (HTTP_TIMEOUT, Admin, assert_error_shape, body_json, describe, expect_error, expect_ok,
                      expect_status_error)

BAD_KEY_MESSAGE = "API key not valid. Please pass a valid API key."


def test_client_call_without_api_key_is_permission_denied(stack, client, tenant_id):
    for resp in (client.sign_up_raw(tenant_id, key=None),
                 client.sign_up_raw(tenant_id, key=None, prefixed=True),
                 client.lookup("whatever", tenant_id, key=None),
                 client.refresh_raw("whatever", key=None, prefixed=True)):
        err = expect_status_error(resp, 403, "PERMISSION_DENIED")
        assert err["errors"][0].get("reason") == "forbidden", describe(resp)


def test_client_call_with_wrong_api_key_is_invalid_argument(stack, client, tenant_id):
    for resp in (client.sign_up_raw(tenant_id, key="AIzaWrongKey0000000000"),
                 client.sign_up_raw(tenant_id, key="AIzaWrongKey0000000000",
                                    key_in_header=True),
                 client.lookup("whatever", tenant_id, key=stack.api_key + "x"),
                 client.refresh_raw("whatever", key="nope")):
        err = expect_status_error(resp, 400, "INVALID_ARGUMENT")
        assert err["message"] == BAD_KEY_MESSAGE, describe(resp)


def test_admin_api_requires_the_bearer_secret(stack, tenant_id):
    wrong = Admin(stack, token="not-the-admin-token")
    missing = Admin(stack, token=None)
    basic = Admin(stack, token=None)
    basic.http.headers["Authorization"] = "Basic " + stack.admin_token
    for who in (wrong, missing, basic):
        for resp in (who.list_tenants(),
                     who.get_tenant(tenant_id),
                     who.create_tenant_raw({"displayName": "nobody1"}),
                     who.get_config(),
                     who.lookup_raw(tenant_id, ["x"]),
                     who.delete_user_raw(tenant_id, "x"),
                     who.request("GET", who.tenants_path(), prefix="/identitytoolkit.googleapis.com")):
            expect_status_error(resp, 401, "UNAUTHENTICATED")
    # The tenant still exists and is unchanged; nothing was created.
    admin = Admin(stack)
    assert expect_ok(admin.get_tenant(tenant_id))["tenantId"] == tenant_id


def test_unknown_routes_answer_404_in_google_shape(stack, client):
    for resp in (
        client.post("/v1/accounts:frobnicate", {}),
        client.request("GET", "/v1/no/such/thing"),
        client.request("GET", "/definitely/not/a/route", key=None),
        requests.post(stack.url + "/v2/projects/" + stack.project_id + "/nothingHere",
                      headers={"Authorization": f"Bearer {stack.admin_token}"}, json={},
                      timeout=HTTP_TIMEOUT),
    ):
        err = expect_status_error(resp, 404, "NOT_FOUND")
        assert err["message"] == "Not Found", describe(resp)


def test_malformed_json_is_invalid_argument(stack, client, admin):
    headers = {"Content-Type": "application/json"}
    for resp in (
        client.request("POST", "/v1/accounts:signUp", data="{not json", headers=headers),
        client.request("POST", "/v1/accounts:lookup", data='{"idToken": ', headers=headers),
        client.request("POST", "/v1/token", data="{oops", headers=headers),
        admin.request("POST", admin.tenants_path(), data="{]", headers=headers),
    ):
        err = expect_status_error(resp, 400, "INVALID_ARGUMENT")
        assert err["message"].startswith("Invalid JSON payload received"), describe(resp)


def test_business_errors_have_no_status(stack, client, admin):
    resp = client.sign_up_raw("no-such-tenant-0123456789")
    code = expect_error(resp, "TENANT_NOT_FOUND")
    err = resp.json()["error"]
    assert err == {
        "code": 400,
        "message": err["message"],
        "errors": [{"message": err["message"], "reason": "invalid", "domain": "global"}],
    }, describe(resp)
    assert err["message"] == code or err["message"].startswith(code + " : "), describe(resp)
    # The same envelope from the admin side.
    resp = admin.get_tenant("no-such-tenant-0123456789")
    expect_error(resp, "TENANT_NOT_FOUND")
    assert_error_shape(resp, 400)


def test_out_of_scope_features_answer_501_not_implemented(stack, client, admin):
    """A.1: phone auth, MFA, passkeys, reCAPTCHA, SAML, Game Center and the v3 rpcs of those and of
    signOutUser answer 501 NOT_IMPLEMENTED with a clear message, never a 404 that looks like a typo."""
    calls = [
        client.post("/v1/accounts:sendVerificationCode", {"phoneNumber": "+15555550100"}),
        client.post("/v1/accounts:signInWithPhoneNumber", {}),
        client.post("/v2/accounts/mfaSignIn:start", {}),
        client.post("/v2/accounts/passkeySignIn:start", {}),
        client.request("GET", "/v1/recaptchaParams"),
        client.post("/identitytoolkit.googleapis.com/v1/accounts:sendVerificationCode", {}),
        requests.post(stack.url + "/www.googleapis.com/identitytoolkit/v3/relyingparty/signOutUser",
                      params={"key": stack.api_key}, json={}, timeout=HTTP_TIMEOUT),
        requests.get(stack.url + "/www.googleapis.com/identitytoolkit/v3/relyingparty/getRecaptchaParam",
                     params={"key": stack.api_key}, timeout=HTTP_TIMEOUT),
        requests.post(stack.url + "/identitytoolkit/v3/relyingparty/sendVerificationCode",
                      params={"key": stack.api_key}, json={}, timeout=HTTP_TIMEOUT),
        requests.post(stack.url + "/www.googleapis.com/identitytoolkit/v3/relyingparty/signInWithGameCenter",
                      params={"key": stack.api_key}, json={}, timeout=HTTP_TIMEOUT),
        admin.request("POST", f"/v2/projects/{stack.project_id}/inboundSamlConfigs",
                      params={"inboundSamlConfigId": "saml.x"}, json={}),
        admin.request("GET", f"/v2/projects/{stack.project_id}/inboundSamlConfigs"),
        admin.request("DELETE", f"/v2/projects/{stack.project_id}/inboundSamlConfigs/saml.x"),
    ]
    for resp in calls:
        err = expect_status_error(resp, 501, "NOT_IMPLEMENTED")
        assert "is not implemented in Tessera" in err["message"], describe(resp)
    # The rpc is named, so an app developer sees which call is missing.
    assert "signOutUser" in body_json(calls[6])["error"]["message"]
    # A v3 rpc that does not exist at all is a 404, not a 501.
    resp = requests.post(stack.url + "/www.googleapis.com/identitytoolkit/v3/relyingparty/noSuchRpc",
                         params={"key": stack.api_key}, json={}, timeout=HTTP_TIMEOUT)
    expect_status_error(resp, 404, "NOT_FOUND")
