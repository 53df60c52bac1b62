"""The legacy Gitkit v3 API (docs/protocol/README.md#the-surface, docs/protocol/accounts.md#legacy-v3-paths): every rpc of the table is served by its v1 operation with and
without the Google host prefix; the admin export and import with `targetProjectId`; the project config
and the session-cookie keys; what the v2 reCAPTCHA, password-policy and token-revocation calls answer;
re-authentication (`autoCreate: false`) never creating a user. The SDKs' call sequences over these
paths are in test_sdk_conformance.py."""

from __future__ import annotations

import uuid

import pytest
import requests

from conftest import HTTP_TIMEOUT, describe, expect_error, expect_ok, expect_status_error
from fake_idp import configure_provider, sign_in_with_idp

V3 = ["/www.googleapis.com/identitytoolkit/v3/relyingparty", "/identitytoolkit/v3/relyingparty"]

# rpc -> an error its v1 operation answers an empty request with (so the call reached that handler).
RPC_EMPTY_REQUEST_ERRORS = {
    "signupNewUser": "ADMIN_ONLY_OPERATION",  # anonymous sign-up, off in the test tenant
    "verifyPassword": "MISSING_EMAIL",
    "getAccountInfo": "MISSING_ID_TOKEN",
    "setAccountInfo": "MISSING_ID_TOKEN",
    "deleteAccount": "MISSING_ID_TOKEN",
    "verifyAssertion": "MISSING_REQUEST_URI",
    "verifyCustomToken": "MISSING_CUSTOM_TOKEN",
    "getOobConfirmationCode": "MISSING_REQ_TYPE",
    "resetPassword": "MISSING_OOB_CODE",
    "createAuthUri": "MISSING_IDENTIFIER",
    "emailLinkSignin": "MISSING_EMAIL",
}


def v3(stack, rpc: str, body: dict | None = None, *, prefix: str = V3[0], method: str = "POST",
       headers: dict | None = None, key: bool = True, plane: str = "public") -> requests.Response:
    params = {"key": stack.api_key} if key else {}
    base = stack.admin_url if plane == "admin" else stack.url
    return requests.request(method, f"{base}{prefix}/{rpc}", params=params, json=body,
                            headers={"Content-Type": "application/json", **(headers or {})}, timeout=HTTP_TIMEOUT)


@pytest.mark.parametrize("prefix", V3)
@pytest.mark.parametrize("rpc", sorted(RPC_EMPTY_REQUEST_ERRORS))
def test_every_rpc_reaches_its_operation(stack, make_tenant, rpc, prefix):
    # Password and email-link sign-in on: a method switched off is answered before the missing fields
    # (issue 36), which would hide them.
    tenant = make_tenant(enableAnonymousUser=False, allowPasswordSignup=True, enableEmailLinkSignin=True)["tenantId"]
    expect_error(v3(stack, rpc, {"tenantId": tenant}, prefix=prefix), RPC_EMPTY_REQUEST_ERRORS[rpc])
    # The API key is checked as on v1.
    expect_status_error(v3(stack, rpc, {"tenantId": tenant}, prefix=prefix, key=False), 403, "PERMISSION_DENIED")


def test_v3_and_v1_share_rate_limits_and_behaviour(stack, client, make_tenant):
    """One operation behind both paths: a user made over v3 signs in over v1 and the other way round."""
    tenant = make_tenant(allowPasswordSignup=True)["tenantId"]
    email = f"v3-{uuid.uuid4().hex[:12]}@example.com"
    created = expect_ok(v3(stack, "signupNewUser", {"email": email, "password": "secret pass", "tenantId": tenant,
                                                    "returnSecureToken": True, "clientType": "CLIENT_TYPE_IOS"}))
    assert created["kind"] == "identitytoolkit#SignupNewUserResponse" and created["expiresIn"] == "3600"
    signed_in = expect_ok(client.post("/v1/accounts:signInWithPassword",
                                      {"tenantId": tenant, "email": email, "password": "secret pass"}))
    assert signed_in["localId"] == created["localId"]
    expect_error(v3(stack, "signupNewUser", {"email": email, "password": "secret pass", "tenantId": tenant}),
                 "EMAIL_EXISTS")


def test_out_of_scope_and_unknown_rpcs(stack):
    for rpc in ["signOutUser", "verifyPhoneNumber", "verifyClient", "signInWithGameCenter", "setProjectConfig"]:
        for method in ["POST", "GET"]:
            err = expect_status_error(v3(stack, rpc, {} if method == "POST" else None, method=method),
                                      501, "NOT_IMPLEMENTED")
            assert err["message"] == f"NOT_IMPLEMENTED : {rpc} is not implemented in Tessera.", err
    expect_status_error(v3(stack, "noSuchRpc", {}), 404, "NOT_FOUND")
    # An rpc served by POST is not served by GET.
    resp = v3(stack, "signupNewUser", method="GET")
    assert resp.status_code in (404, 405), describe(resp)


def test_get_project_config(stack):
    for prefix in V3:
        data = expect_ok(v3(stack, "getProjectConfig", method="GET", prefix=prefix))
        assert isinstance(data["projectId"], str) and data["projectId"]
        assert "localhost" in data["authorizedDomains"]
    data = expect_ok(requests.get(f"{stack.url}/identitytoolkit.googleapis.com/v1/projects",
                                  params={"key": stack.api_key}, timeout=HTTP_TIMEOUT))
    assert "localhost" in data["authorizedDomains"]


def test_public_keys_are_the_session_cookie_certificates(stack):
    for prefix in V3:
        data = expect_ok(v3(stack, "publicKeys", method="GET", prefix=prefix, key=False))
        assert data and all(pem.startswith("-----BEGIN CERTIFICATE-----") for pem in data.values())
    jwks = expect_ok(requests.get(f"{stack.url}/v1/sessionCookiePublicKeys", timeout=HTTP_TIMEOUT))
    assert {k["kid"] for k in jwks["keys"]} == set(data)


def test_download_and_upload_account_need_an_admin_and_name_the_project(stack, admin, make_tenant):
    tenant = make_tenant()["tenantId"]
    owner = {"Authorization": f"Bearer {stack.admin_token}"}
    uploaded = expect_ok(v3(stack, "uploadAccount", {
        "targetProjectId": stack.project_id, "tenantId": tenant,
        "users": [{"localId": "v3-user-1", "email": "v3-one@example.com"},
                  {"localId": "v3-user-2", "email": "v3-two@example.com"}]}, headers=owner, key=False, plane="admin"))
    assert uploaded["kind"] == "identitytoolkit#UploadAccountResponse" and "error" not in uploaded, uploaded
    page = expect_ok(v3(stack, "downloadAccount", {"targetProjectId": stack.project_id, "tenantId": tenant,
                                                   "maxResults": 1}, headers=owner, key=False, plane="admin"))
    assert [u["localId"] for u in page["users"]] == ["v3-user-1"] and page["nextPageToken"]
    rest = expect_ok(v3(stack, "downloadAccount", {"targetProjectId": stack.project_id, "tenantId": tenant,
                                                   "maxResults": 10, "nextPageToken": page["nextPageToken"]},
                        headers=owner, key=False, plane="admin"))
    assert [u["localId"] for u in rest["users"]] == ["v3-user-2"]
    # On the public plane the admin rpcs do not exist (docs/protocol/admin.md#the-admin-plane).
    resp = v3(stack, "downloadAccount", {"targetProjectId": stack.project_id}, headers=owner)
    assert resp.status_code == 404 and resp.headers.get("X-Tessera-Plane") == "public", describe(resp)
    # Without an admin credential, or without a project, it is refused
    # (docs/protocol/README.md#transport-conventions, docs/protocol/accounts.md#legacy-v3-paths).
    for body in [{"targetProjectId": stack.project_id, "tenantId": tenant}, {"tenantId": tenant}]:
        expect_error(v3(stack, "downloadAccount", body, plane="admin"), "INSUFFICIENT_PERMISSION")
    expect_error(v3(stack, "uploadAccount", {"tenantId": tenant}, headers=owner, key=False, plane="admin"),
                 "INSUFFICIENT_PERMISSION")
    # A wrong admin credential is the directory's 401, as on the v1 admin paths.
    resp = v3(stack, "downloadAccount", {"targetProjectId": stack.project_id},
              headers={"Authorization": "Bearer not-a-credential"}, key=False, plane="admin")
    expect_status_error(resp, 401, "UNAUTHENTICATED")


def test_v2_calls_answer_a_project_without_recaptcha_or_password_policy(stack):
    base = f"{stack.url}/identitytoolkit.googleapis.com/v2"
    config = expect_ok(requests.get(f"{base}/recaptchaConfig", params={
        "key": stack.api_key, "clientType": "CLIENT_TYPE_WEB", "version": "RECAPTCHA_ENTERPRISE"},
        headers={"Content-Type": "application/json"}, timeout=HTTP_TIMEOUT))
    assert {s["provider"]: s["enforcementState"] for s in config["recaptchaEnforcementState"]} == {
        "EMAIL_PASSWORD_PROVIDER": "OFF", "PHONE_PROVIDER": "OFF"}
    # The JS SDK refuses a config without a key of four path segments (its site key is the fourth).
    assert len(config["recaptchaKey"].split("/")) == 4
    policy = expect_ok(requests.get(f"{base}/passwordPolicy", params={"key": stack.api_key}, timeout=HTTP_TIMEOUT))
    assert policy["schemaVersion"] == 1 and policy["enforcementState"] == "OFF"
    assert policy["customStrengthOptions"] == {"minPasswordLength": 6, "maxPasswordLength": 4096}
    expect_status_error(requests.get(f"{base}/passwordPolicy", timeout=HTTP_TIMEOUT), 403, "PERMISSION_DENIED")

    resp = requests.post(f"{base}/accounts:revokeToken", params={"key": stack.api_key}, timeout=HTTP_TIMEOUT,
                         json={"providerId": "apple.com", "tokenType": "3", "token": "auth-code",
                               "idToken": "not-a-token"})
    expect_error(resp, "INVALID_ID_TOKEN")


def test_revoke_token_checks_the_id_token_and_succeeds(stack, client, make_tenant):
    tenant = make_tenant()["tenantId"]
    session = client.sign_up_anonymous(tenant)
    base = f"{stack.url}/identitytoolkit.googleapis.com/v2"
    body = {"providerId": "apple.com", "tokenType": "3", "token": "auth-code", "idToken": session.id_token,
            "tenantId": tenant}
    assert expect_ok(requests.post(f"{base}/accounts:revokeToken", params={"key": stack.api_key}, json=body,
                                   timeout=HTTP_TIMEOUT)) == {}
    expect_error(requests.post(f"{base}/accounts:revokeToken", params={"key": stack.api_key},
                               json={**body, "token": ""}, timeout=HTTP_TIMEOUT), "MISSING_TOKEN")


def test_reauthentication_never_creates_a_user(stack, client, admin, make_tenant, fake_idp):
    """Apple and JS send `autoCreate: false` to re-authenticate; an identity nobody has is refused and no
    user is made; a known identity signs in."""
    tenant = make_tenant()["tenantId"]
    configure_provider(admin, fake_idp, "google.com", tenant_id=tenant)
    sub = f"reauth-{uuid.uuid4().hex[:12]}"
    token = fake_idp.id_token("google", sub, email=f"{sub}@gmail.com")
    body = {"requestUri": "http://localhost", "postBody": f"id_token={token}&providerId=google.com",
            "returnSecureToken": True, "returnIdpCredential": True, "autoCreate": False, "tenantId": tenant}
    expect_error(v3(stack, "verifyAssertion", body), "USER_NOT_FOUND")
    users = expect_ok(admin.request("GET", f"/v1/projects/{stack.project_id}/tenants/{tenant}/accounts:batchGet"))
    assert not users.get("users"), users
    expect_ok(sign_in_with_idp(client, "google.com", id_token=token, tenant_id=tenant))
    again = expect_ok(v3(stack, "verifyAssertion", body))
    assert again["providerId"] == "google.com" and again["idToken"] and "isNewUser" in again


def test_every_provider_entry_has_a_federated_id(stack, admin, make_tenant):
    """docs/protocol/sdks.md#what-the-sdks-depend-on: the Apple SDK reads `federatedId` as a provider entry's uid; an imported link that came
    without one answers its raw id there."""
    tenant = make_tenant()["tenantId"]
    expect_ok(admin.request("POST", f"/v1/projects/{stack.project_id}/tenants/{tenant}/accounts:batchCreate",
                            json={"users": [{"localId": "imported-fed", "email": "imported-fed@example.com",
                                             "providerUserInfo": [{"providerId": "github.com",
                                                                   "rawId": "gh-1234"}]}]}))
    [user] = admin.lookup_users(tenant, ["imported-fed"])
    assert user["providerUserInfo"] == [{"providerId": "github.com", "rawId": "gh-1234", "federatedId": "gh-1234"}]
