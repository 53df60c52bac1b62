"""Email-link (passwordless) sign-in through the stack (docs/protocol/accounts.md#accounts-and-providers, #verified-email-and-automatic-linking, #end-user-endpoints, #email-link-sign-in): the EMAIL_SIGNIN code
mailed over SMTP, `accounts:signInWithEmailLink` creating or signing in a user with a verified email,
linking the address to a signed-in user, single use, the scope's switch, sign-up restrictions, the
takeover of an account whose email nobody proved, tenant isolation and the mailed link's language."""

from __future__ import annotations

import time
import uuid

import pytest

from conftest import describe, expect_error, expect_ok, oob_link, unverified_claims

PASSWORD = "correct horse 1"
CONTINUE = "http://localhost:3000/finish"


def address() -> str:
    return f"link-{uuid.uuid4().hex[:12]}@example.com"


@pytest.fixture
def tenant(make_tenant) -> str:
    return make_tenant(allowPasswordSignup=True, enableEmailLinkSignin=True, enableAnonymousUser=True)["tenantId"]


def send_link(client, tenant, email, headers=None):
    return client.post("/v1/accounts:sendOobCode", {
        "tenantId": tenant, "requestType": "EMAIL_SIGNIN", "email": email, "continueUrl": CONTINUE,
        "canHandleCodeInApp": True}, headers=headers)


def mailed_code(mail_sink, email, count=1) -> dict[str, str]:
    mails = mail_sink.wait_for(email, count)
    _, params = oob_link(mails[count - 1])
    return params


def sign_in(client, tenant, email, code, **extra):
    return client.post("/v1/accounts:signInWithEmailLink",
                       {"tenantId": tenant, "email": email, "oobCode": code, **extra})


def test_a_mailed_link_signs_up_a_new_address_verified(client, mail_sink, tenant, stack):
    email = address()
    resp = send_link(client, tenant, email.upper())
    assert expect_ok(resp) == {"kind": "identitytoolkit#GetOobConfirmationCodeResponse", "email": email}, \
        describe(resp)
    [mail] = mail_sink.wait_for(email)
    assert "Sign in to" in mail["subject"]
    link, params = oob_link(mail)
    assert "/__/auth/action?" in link
    assert params["mode"] == "signIn" and params["apiKey"] == stack.api_key and params["tenantId"] == tenant
    assert params["continueUrl"] == CONTINUE and params["lang"] == "en"

    resp = sign_in(client, tenant, email, params["oobCode"])
    data = expect_ok(resp)
    assert data["kind"] == "identitytoolkit#EmailLinkSigninResponse", describe(resp)
    assert data["isNewUser"] is True and data["email"] == email and data["expiresIn"] == "3600"
    assert data["refreshToken"] and data["localId"]
    claims = unverified_claims(data["idToken"])
    assert claims["firebase"]["sign_in_provider"] == "password" and claims["email_verified"] is True
    assert claims["firebase"]["tenant"] == tenant and claims["sub"] == data["localId"]

    [user] = expect_ok(client.lookup(data["idToken"], tenant))["users"]
    assert user["email"] == email and user["emailVerified"] is True and user["emailLinkSignin"] is True
    # The `password` provider entry stands for the email link (docs/protocol/accounts.md#the-user-record);
    # there is no password hash.
    assert user["providerUserInfo"] == [{"providerId": "password", "rawId": email, "federatedId": email,
                                         "email": email}]
    assert "passwordHash" not in user
    # One use only.
    expect_error(sign_in(client, tenant, email, params["oobCode"]), "INVALID_OOB_CODE")


def test_an_existing_user_signs_in_and_keeps_its_id(client, mail_sink, tenant):
    email = address()
    first = expect_ok(client.post("/v1/accounts:signUp", {"tenantId": tenant, "email": email, "password": PASSWORD}))
    expect_ok(send_link(client, tenant, email))
    data = expect_ok(sign_in(client, tenant, email, mailed_code(mail_sink, email)["oobCode"]))
    assert data["localId"] == first["localId"] and data["isNewUser"] is False
    [user] = expect_ok(client.lookup(data["idToken"], tenant))["users"]
    assert user["emailVerified"] is True


def test_the_link_proves_the_address_so_an_unverified_password_set_by_someone_else_goes(
        client, mail_sink, tenant):
    """The takeover row for a trusted method (docs/protocol/accounts.md#verified-email-and-automatic-linking): whoever signed up with the victim's address keeps no
    way in once its owner signs in with a link."""
    email = address()
    squatter = expect_ok(client.post("/v1/accounts:signUp",
                                     {"tenantId": tenant, "email": email, "password": PASSWORD}))
    expect_ok(send_link(client, tenant, email))
    code = mailed_code(mail_sink, email)["oobCode"]
    # validSince has whole seconds: the squatter's ID token must be from an earlier second to be told
    # apart from ones issued at the takeover.
    issued_at = unverified_claims(squatter["idToken"])["iat"]
    while time.time() < issued_at + 1.05:
        time.sleep(0.05)
    owner = expect_ok(sign_in(client, tenant, email, code))
    assert owner["localId"] == squatter["localId"]
    expect_error(client.post("/v1/accounts:signInWithPassword",
                             {"tenantId": tenant, "email": email, "password": PASSWORD}),
                 "INVALID_LOGIN_CREDENTIALS", "INVALID_PASSWORD")
    expect_error(client.refresh_raw(squatter["refreshToken"]), "TOKEN_EXPIRED")
    expect_error(client.lookup(squatter["idToken"], tenant), "TOKEN_EXPIRED")
    [user] = expect_ok(client.lookup(owner["idToken"], tenant))["users"]
    assert "passwordHash" not in user and user["emailVerified"] is True


def test_an_anonymous_user_links_the_address_and_becomes_permanent(client, mail_sink, tenant):
    anonymous = client.sign_up_anonymous(tenant)
    email = address()
    expect_ok(send_link(client, tenant, email))
    code = mailed_code(mail_sink, email)["oobCode"]
    data = expect_ok(sign_in(client, tenant, email, code, idToken=anonymous.id_token))
    assert data["localId"] == anonymous.local_id and data["isNewUser"] is False
    [user] = expect_ok(client.lookup(data["idToken"], tenant))["users"]
    assert user["email"] == email and user["emailVerified"] is True
    assert [p["providerId"] for p in user["providerUserInfo"]] == ["password"]


def test_linking_an_address_another_account_has_is_refused(client, mail_sink, tenant):
    email = address()
    expect_ok(client.post("/v1/accounts:signUp", {"tenantId": tenant, "email": email, "password": PASSWORD}))
    other = client.sign_up_anonymous(tenant)
    expect_ok(send_link(client, tenant, email))
    code = mailed_code(mail_sink, email)["oobCode"]
    expect_error(sign_in(client, tenant, email, code, idToken=other.id_token), "EMAIL_EXISTS")
    [user] = expect_ok(client.lookup(other.id_token, tenant))["users"]
    assert "email" not in user


def test_request_errors(client, mail_sink, tenant):
    email = address()
    expect_error(send_link(client, tenant, ""), "MISSING_EMAIL")
    expect_error(send_link(client, tenant, "not-an-address"), "INVALID_EMAIL")
    expect_ok(send_link(client, tenant, email))
    code = mailed_code(mail_sink, email)["oobCode"]
    resp = sign_in(client, tenant, address(), code)
    expect_error(resp, "INVALID_EMAIL")
    assert resp.json()["error"]["message"] == \
        "INVALID_EMAIL : The email provided does not match the sign-in email address.", describe(resp)
    expect_error(sign_in(client, tenant, "", code), "MISSING_EMAIL")
    expect_error(sign_in(client, tenant, email, ""), "MISSING_OOB_CODE")
    expect_error(sign_in(client, tenant, email, "no-such-code"), "INVALID_OOB_CODE")
    # The failed attempts did not use the code up.
    expect_ok(sign_in(client, tenant, email, code))


def test_a_code_of_another_kind_or_tenant_does_not_sign_in(client, mail_sink, tenant, make_tenant):
    email = address()
    expect_ok(client.post("/v1/accounts:signUp", {"tenantId": tenant, "email": email, "password": PASSWORD}))
    expect_ok(client.post("/v1/accounts:sendOobCode",
                          {"tenantId": tenant, "requestType": "PASSWORD_RESET", "email": email}))
    reset_code = mailed_code(mail_sink, email)["oobCode"]
    expect_error(sign_in(client, tenant, email, reset_code), "INVALID_OOB_CODE")
    other = make_tenant(enableEmailLinkSignin=True)["tenantId"]
    expect_ok(send_link(client, tenant, email))
    code = mailed_code(mail_sink, email, 2)["oobCode"]
    expect_error(sign_in(client, other, email, code), "INVALID_OOB_CODE")
    # An email-link code cannot reset a password either.
    expect_error(client.post("/v1/accounts:resetPassword",
                             {"tenantId": tenant, "oobCode": code, "newPassword": "another pass"}),
                 "INVALID_OOB_CODE")


def test_the_scope_must_enable_email_links(client, make_tenant, admin, mail_sink):
    tenant = make_tenant(allowPasswordSignup=True)["tenantId"]
    email = address()
    expect_error(send_link(client, tenant, email), "OPERATION_NOT_ALLOWED")
    expect_ok(admin.patch_tenant(tenant, {"enableEmailLinkSignin": True}, "enableEmailLinkSignin"))
    expect_ok(send_link(client, tenant, email))
    code = mailed_code(mail_sink, email)["oobCode"]
    # Turned off between the mail and the click: the link no longer signs in.
    expect_ok(admin.patch_tenant(tenant, {"enableEmailLinkSignin": False}, "enableEmailLinkSignin"))
    expect_error(sign_in(client, tenant, email, code), "OPERATION_NOT_ALLOWED")


def test_disabled_sign_up_and_disabled_users(client, admin, mail_sink, make_tenant):
    tenant = make_tenant(allowPasswordSignup=True, enableEmailLinkSignin=True,
                         disabledUserSignup=True)["tenantId"]
    email = address()
    expect_ok(send_link(client, tenant, email))
    expect_error(sign_in(client, tenant, email, mailed_code(mail_sink, email)["oobCode"]), "ADMIN_ONLY_OPERATION")

    known = address()
    created = expect_ok(admin.request("POST", f"/v1/projects/{admin.stack.project_id}/tenants/{tenant}/accounts",
                                      json={"email": known, "emailVerified": True}))
    expect_ok(send_link(client, tenant, known))
    # An existing account may still sign in when sign-up is closed.
    code = mailed_code(mail_sink, known)["oobCode"]
    data = expect_ok(sign_in(client, tenant, known, code))
    assert data["localId"] == created["localId"] and data["isNewUser"] is False

    expect_ok(admin.request("POST", f"/v1/projects/{admin.stack.project_id}/tenants/{tenant}/accounts:update",
                            json={"localId": created["localId"], "disableUser": True}))
    expect_ok(send_link(client, tenant, known))
    expect_error(sign_in(client, tenant, known, mailed_code(mail_sink, known, 2)["oobCode"]), "USER_DISABLED")


def test_create_auth_uri_lists_the_email_link_method(client, admin, mail_sink, tenant):
    email = address()
    expect_ok(send_link(client, tenant, email))
    expect_ok(sign_in(client, tenant, email, mailed_code(mail_sink, email)["oobCode"]))
    original = expect_ok(admin.get_config())
    mask = "emailPrivacyConfig.enableImprovedEmailPrivacy"
    expect_ok(admin.patch_config({"emailPrivacyConfig": {"enableImprovedEmailPrivacy": False}}, mask))
    try:
        data = expect_ok(client.post("/v1/accounts:createAuthUri", {
            "tenantId": tenant, "identifier": email, "continueUri": "http://localhost/"}))
        assert data["registered"] is True and data["signinMethods"] == ["emailLink"]
        assert data["allProviders"] == ["password"]
    finally:
        expect_ok(admin.patch_config(original, mask))


def test_the_mailed_link_speaks_the_apps_language(client, mail_sink, tenant):
    email = address()
    expect_ok(send_link(client, tenant, email, headers={"X-Firebase-Locale": "it-IT"}))
    assert mailed_code(mail_sink, email)["lang"] == "it"
    other = address()
    expect_ok(send_link(client, tenant, other, headers={"X-Firebase-Locale": "xx"}))
    assert mailed_code(mail_sink, other)["lang"] == "en"


def test_the_default_scope_switch_is_googles_password_required(admin):
    """The project config names the switch as Google does (`signIn.email.passwordRequired: false`)
    and as tenants do (`enableEmailLinkSignin`)."""
    original = expect_ok(admin.get_config())
    mask = "enableEmailLinkSignin"
    try:
        data = expect_ok(admin.patch_config({"enableEmailLinkSignin": True}, mask))
        assert data["enableEmailLinkSignin"] is True and data["signIn"]["email"]["passwordRequired"] is False
        data = expect_ok(admin.patch_config({"signIn": {"email": {"passwordRequired": True}}},
                                            "signIn.email.passwordRequired"))
        assert data["enableEmailLinkSignin"] is False and data["signIn"]["email"]["passwordRequired"] is True
    finally:
        expect_ok(admin.patch_config({"enableEmailLinkSignin": original.get("enableEmailLinkSignin", False)},
                                     mask))
