"""The Firebase Apple SDK (firebase-ios-sdk 12.19.0, emulator mode) against the stack, call for call.

Every test drives sdk_traffic.AppleSDK, which sends exactly what the SDK sends (legacy v3 relyingparty URLs,
v2 for reCAPTCHA config and token revocation, securetoken with a camelCase JSON body; the SDK's headers;
DEBUG-build pretty-printed JSON with escaped slashes) and checks each answer with the decoder of the SDK's
response class. Errors are checked for the envelope and for the AuthErrorCode the SDK makes of them
(Backend/AuthBackend.swift). Each test works in its own tenant (docs/protocol/README.md#the-surface, docs/protocol/accounts.md#accounts-and-providers, docs/protocol/sdks.md#what-the-sdks-depend-on)."""

from __future__ import annotations

import json
import time
import uuid

import pytest

pytest.register_assert_rewrite("sdk_traffic")

from conftest import describe, expect_ok, oob_link  # noqa: E402
from fake_idp import configure_provider  # noqa: E402
from sdk_traffic import (APPLE_VERSION, BUNDLE_ID, ActionCodeSettings, AppleSDK, SdkError,  # noqa: E402
                         ServiceAccount, apple_GetAccountInfoResponse, apple_error_for, check_error_envelope,
                         id_token_claims,
                         new_email, query_of, wait_for_next_second, wait_past_reauth_window)

PASSWORD = "sdk password 1"
CONTINUE_URL = "http://localhost:3000/finishSignIn"
# A continue URL with its own query (the Firebase docs' example has ?cartId=1234): it must survive inside the
# mailed link's query (ActionCode/ActionCodeURL.swift:57-61, 65-80).
CONTINUE_URL_WITH_QUERY = "http://localhost:3000/finishSignUp?cartId=1234&mode=cart&q=a%20b"


# --------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------

def last_mail_link(mail_sink, address: str, count: int = 1) -> tuple[str, dict]:
    """The action link of the ``count``-th mail to ``address`` (waits for it)."""
    mails = mail_sink.wait_for(address, count)
    return oob_link(mails[count - 1])


def sent_body(resp) -> dict:
    """The JSON body the SDK model sent (to check it is what the SDK sends)."""
    return json.loads(resp.request.body)


def password_entry(user) -> dict:
    entry = user.provider_data.get("password")
    assert entry is not None, f"no password provider: {user.provider_data}"
    return entry


def user_tenant(make_tenant, **switches) -> str:
    return make_tenant(allowPasswordSignup=True, **switches)["tenantId"]


# --------------------------------------------------------------------------------------
# Transport
# --------------------------------------------------------------------------------------

def test_requests_carry_the_sdk_headers_and_bodies(stack, make_tenant):
    """What the server receives from the Apple SDK: v3 URL with ?key=, Content-Type JSON, the SDK's
    X-Client-Version / bundle / GMPID headers, pretty-printed JSON with `\\/` escapes (all tolerated)."""
    tenant_id = user_tenant(make_tenant)
    apple = AppleSDK(stack, tenant_id, language_code="it", app_check_token="app-check-placeholder")
    apple.sign_in_anonymously()
    assert apple.calls == ["signupNewUser", "getAccountInfo"]
    signup, lookup = apple.log
    assert signup.request.url == (f"{stack.url}/www.googleapis.com/identitytoolkit/v3/relyingparty/signupNewUser"
                                  f"?key={stack.api_key}")
    headers = signup.request.headers
    assert headers["Content-Type"] == "application/json"
    assert headers["X-Client-Version"] == f"iOS/FirebaseSDK/{APPLE_VERSION}/FirebaseCore-iOS"
    assert headers["X-Ios-Bundle-Identifier"] == BUNDLE_ID and headers["X-Firebase-Locale"] == "it"
    assert sent_body(signup) == {"clientType": "CLIENT_TYPE_IOS", "returnSecureToken": True, "tenantId": tenant_id}
    assert b" : " in signup.request.body, "DEBUG builds pretty-print (Backend/AuthBackend.swift:180-184)"
    # getAccountInfo carries only the ID token (Backend/RPC/GetAccountInfoRequest.swift:41-43).
    assert list(sent_body(lookup)) == ["idToken"]

    # A photo URL goes out as "https:\/\/..." (JSONSerialization escapes slashes) and must come back intact.
    photo = "https://img.example/sdk/a.png"
    apple.commit_profile_changes(photo_url=photo)
    assert b"https:\\/\\/img.example\\/sdk\\/a.png" in apple.log[-1].request.body
    assert apple.reload().photo_url == photo

    # The bare v3 prefix serves the same rpc (contract §1).
    bare = apple.http.post(f"{stack.url}/identitytoolkit/v3/relyingparty/getAccountInfo?key={stack.api_key}",
                           data=apple.encode({"idToken": apple.user.id_token}), headers=apple.headers())
    assert bare.status_code == 200, describe(bare)
    assert apple_GetAccountInfoResponse(bare.json())["localId"] == apple.user.uid


# --------------------------------------------------------------------------------------
# Anonymous, upgrade, password sign-in, profile, token refresh
# --------------------------------------------------------------------------------------

def test_anonymous_sign_in_then_link_email_password_keeps_the_uid(stack, make_tenant):
    tenant_id = user_tenant(make_tenant)
    apple = AppleSDK(stack, tenant_id)
    result = apple.sign_in_anonymously()
    assert result.is_new_user is True and apple.user.is_anonymous
    uid = apple.user.uid
    assert apple.user.provider_data == {} and not apple.user.has_password
    claims = apple.get_id_token_result()
    assert claims["firebase"]["sign_in_provider"] == "anonymous" and claims["sub"] == uid
    assert claims["firebase"].get("tenant") == tenant_id

    # Already anonymous: the SDK makes no call at all (Auth/Auth.swift:700-760).
    apple.clear_log()
    assert apple.sign_in_anonymously().user.uid == uid and apple.calls == []

    email = new_email("apple-anon")
    apple.link_email_password(email, PASSWORD)
    # signupNewUser {email, password, idToken, clientType, returnSecureToken, tenantId}, then getAccountInfo;
    # no securetoken call in between: expiresIn was a string above 300 s (SecureTokenService.swift).
    assert apple.calls == ["signupNewUser", "getAccountInfo"]
    assert set(sent_body(apple.log[0])) == {"email", "password", "idToken", "clientType", "returnSecureToken",
                                            "tenantId"}
    user = apple.user
    assert user.uid == uid and not user.is_anonymous and user.has_password and user.email == email
    entry = password_entry(user)
    assert entry.get("federatedId") == email and entry.get("rawId") == email and entry.get("email") == email
    assert apple.get_id_token_result()["firebase"]["sign_in_provider"] == "password"
    assert apple.get_id_token_result()["email"] == email

    # Camel-case JSON refresh (Backend/RPC/SecureTokenRequest.swift:46-52) keeps the same user.
    apple.clear_log()
    old_refresh = user.refresh_token
    token = apple.get_id_token(forcing_refresh=True)
    assert apple.calls == ["token"]
    refresh = apple.log[0]
    assert refresh.request.url == f"{stack.url}/securetoken.googleapis.com/v1/token?key={stack.api_key}"
    assert refresh.request.headers["Content-Type"] == "application/json"
    assert sent_body(refresh) == {"grantType": "refresh_token", "refreshToken": old_refresh}
    assert id_token_claims(token, uid=uid)["firebase"]["sign_in_provider"] == "password"
    assert user.refresh_token != old_refresh, "refresh tokens rotate on every use (docs/protocol/tokens.md#token-rules)"
    assert apple.reload().uid == uid

    # A second device signs in with the password: the same user.
    other = AppleSDK(stack, tenant_id)
    other.sign_in(email, PASSWORD)
    assert other.calls == ["verifyPassword", "getAccountInfo"] and other.user.uid == uid


def test_password_sign_in_profile_password_and_email_changes(stack, make_tenant):
    tenant_id = user_tenant(make_tenant)
    apple = AppleSDK(stack, tenant_id)
    email = new_email("apple-profile")
    created = apple.create_user(email, PASSWORD)
    assert created.is_new_user and apple.calls == ["signupNewUser", "getAccountInfo"]
    assert apple.user.email == email and apple.user.email_verified is False and not apple.user.is_anonymous

    # commitChanges: getAccountInfo, then setAccountInfo {idToken, displayName, photoUrl, returnSecureToken}.
    apple.clear_log()
    data = apple.commit_profile_changes(display_name="Ada Lovelace", photo_url="https://img.example/ada.png")
    assert apple.calls == ["getAccountInfo", "setAccountInfo"]
    assert data.get("displayName") == "Ada Lovelace"
    assert apple.reload().display_name == "Ada Lovelace" and apple.user.photo_url == "https://img.example/ada.png"
    # Only the display name: the photo stays.
    apple.commit_profile_changes(display_name="Ada")
    assert sent_body(apple.log[-1]).keys() == {"idToken", "displayName", "returnSecureToken", "tenantId"}
    assert apple.reload().display_name == "Ada" and apple.user.photo_url == "https://img.example/ada.png"

    # updatePassword: new tokens in the answer (the old ones are revoked,
    # docs/protocol/accounts.md#accounts-and-providers).
    apple.clear_log()
    apple.update_password("sdk password 2")
    assert apple.calls == ["getAccountInfo", "setAccountInfo"]
    assert apple.reload().uid == created.user.uid, "the SDK continues with the tokens the answer carried"
    AppleSDK(stack, tenant_id).sign_in(email, "sdk password 2")

    # updateEmail (deprecated): setAccountInfo {email}; the user keeps its password.
    changed = new_email("apple-profile-new")
    apple.update_email(changed)
    user = apple.reload()
    assert user.email == changed and user.email_verified is False and user.has_password
    assert apple.get_id_token_result(forcing_refresh=True)["email"] == changed


# --------------------------------------------------------------------------------------
# Mailed codes
# --------------------------------------------------------------------------------------

def test_verification_mail_code_applied_with_set_account_info(stack, make_tenant, mail_sink):
    tenant_id = user_tenant(make_tenant)
    apple = AppleSDK(stack, tenant_id)
    email = new_email("apple-verify")
    apple.create_user(email, PASSWORD)

    apple.clear_log()
    answer = apple.send_email_verification()
    assert apple.calls == ["getOobConfirmationCode"]
    assert sent_body(apple.log[0]) == {"requestType": "VERIFY_EMAIL", "idToken": apple.user.id_token,
                                       "clientType": "CLIENT_TYPE_IOS", "tenantId": tenant_id}
    assert answer.get("email") == email
    link, params = last_mail_link(mail_sink, email)
    assert params["mode"] == "verifyEmail" and params["apiKey"] == stack.api_key
    assert params.get("tenantId") == tenant_id

    # checkActionCode on this code: the SDK stops with fatalError when `email` is missing (Auth/Auth.swift:
    # 1009-1011), whatever the code's type.
    assert AppleSDK(stack, tenant_id).check_action_code(params["oobCode"])["email"] == email

    # Auth.applyActionCode: setAccountInfo {oobCode, returnSecureToken, tenantId}, no ID token.
    applied = AppleSDK(stack, tenant_id).apply_action_code(params["oobCode"])
    assert applied.get("emailVerified") is True and applied.get("email") == email
    assert apple.reload().email_verified is True

    with pytest.raises(SdkError) as caught:
        AppleSDK(stack, tenant_id).apply_action_code(params["oobCode"])
    caught.value.expect("INVALID_OOB_CODE", sdk="invalidActionCode")


def test_password_reset_by_mail(stack, make_tenant, mail_sink):
    tenant_id = user_tenant(make_tenant)
    device = AppleSDK(stack, tenant_id)
    email = new_email("apple-reset")
    device.create_user(email, PASSWORD)
    signed_up_at = time.time()

    apple = AppleSDK(stack, tenant_id)
    apple.send_password_reset(email, ActionCodeSettings(url=CONTINUE_URL, handle_code_in_app=False))
    assert sent_body(apple.log[-1]) == {"requestType": "PASSWORD_RESET", "email": email,
                                        "continueUrl": CONTINUE_URL, "clientType": "CLIENT_TYPE_IOS",
                                        "tenantId": tenant_id}
    link, params = last_mail_link(mail_sink, email)
    assert params["mode"] == "resetPassword" and params["apiKey"] == stack.api_key
    code = params["oobCode"]

    # verifyPasswordResetCode / checkActionCode: resetPassword without newPassword, code not consumed.
    assert apple.verify_password_reset_code(code) == email
    info = apple.check_action_code(code)
    assert info["email"] == email and info.get("requestType") == "PASSWORD_RESET"
    assert list(sent_body(apple.log[-1])) == ["oobCode", "tenantId"]

    with pytest.raises(SdkError) as caught:
        apple.confirm_password_reset(code, "123")
    caught.value.expect("WEAK_PASSWORD", sdk="weakPassword")

    wait_for_next_second(signed_up_at)  # the device's tokens predate the reset (validSince, docs/protocol/tokens.md#checking-an-id-token)
    apple.confirm_password_reset(code, "sdk password reset")
    with pytest.raises(SdkError) as caught:
        apple.confirm_password_reset(code, "sdk password third")
    caught.value.expect("INVALID_OOB_CODE", sdk="invalidActionCode")

    with pytest.raises(SdkError) as caught:
        apple.sign_in(email, PASSWORD)
    caught.value.expect("INVALID_LOGIN_CREDENTIALS", "INVALID_PASSWORD", sdk=("invalidCredential", "wrongPassword"))
    apple.sign_in(email, "sdk password reset")
    assert apple.user.email_verified is True, "a reset through the mailbox proves the address (docs/protocol/accounts.md#emailverified)"

    # The device that was signed in before the reset: its refresh is refused and the SDK signs it out.
    with pytest.raises(SdkError) as caught:
        device.get_id_token(forcing_refresh=True)
    caught.value.expect("TOKEN_EXPIRED", sdk="userTokenExpired", signed_out=True)
    assert device.user is None


# --------------------------------------------------------------------------------------
# Federated, custom token, email link
# --------------------------------------------------------------------------------------

def test_federated_sign_in_link_and_unlink(stack, admin, make_tenant, fake_idp):
    tenant_id = user_tenant(make_tenant)
    configure_provider(admin, fake_idp, "google.com", tenant_id=tenant_id)
    sub = f"g-{uuid.uuid4().hex[:16]}"
    gmail = new_email("apple-fed", "gmail.com")

    apple = AppleSDK(stack, tenant_id)
    token = fake_idp.id_token("google.com", sub, email=gmail, name="Grace Hopper",
                              picture="https://img.example/grace.png")
    result = apple.sign_in_with_credential("google.com", id_token=token)
    assert apple.calls == ["verifyAssertion", "getAccountInfo"]
    body = sent_body(apple.log[0])
    # VerifyAssertionRequest.swift:156-240: postBody query, requestUri, returnSecureToken, returnIdpCredential,
    # autoCreate, tenantId.
    assert query_of("?" + body["postBody"]) == {"providerId": "google.com", "id_token": token}
    assert body["requestUri"] == "http://localhost" and body["autoCreate"] is True
    assert body["returnIdpCredential"] is True and body["tenantId"] == tenant_id
    assert result.provider_id == "google.com" and result.is_new_user is True
    user = apple.user
    assert user.email == gmail and user.email_verified is True and user.display_name == "Grace Hopper"
    assert user.provider_data["google.com"].get("rawId") == sub
    first_uid = user.uid

    again = AppleSDK(stack, tenant_id).sign_in_with_credential("google.com", id_token=fake_idp.id_token(
        "google.com", sub, email=gmail))
    assert again.is_new_user is False and again.user.uid == first_uid

    # A password user links another Google account, then unlinks it.
    owner = AppleSDK(stack, tenant_id)
    owner.create_user(new_email("apple-fed-owner"), PASSWORD)
    other_sub = f"g-{uuid.uuid4().hex[:16]}"
    owner.clear_log()
    linked = owner.link_credential("google.com", id_token=fake_idp.id_token(
        "google.com", other_sub, email=new_email("apple-fed-link", "gmail.com")))
    assert owner.calls == ["verifyAssertion", "getAccountInfo"]
    assert "idToken" in sent_body(owner.log[0])
    assert linked.provider_id == "google.com" and set(owner.user.provider_data) == {"password", "google.com"}
    assert owner.user.has_password, "linking keeps the password"

    owner.clear_log()
    owner.unlink("google.com")
    assert owner.calls == ["setAccountInfo"]
    assert sent_body(owner.log[0])["deleteProvider"] == ["google.com"]
    assert set(owner.reload().provider_data) == {"password"}

    # Google account of the first user linked to the owner: credentialAlreadyInUse (a 200 with errorMessage
    # or an error status; the SDK treats both as errors, Backend/AuthBackend.swift:259-272).
    with pytest.raises(SdkError) as caught:
        owner.link_credential("google.com", id_token=fake_idp.id_token("google.com", sub, email=gmail))
    caught.value.expect("FEDERATED_USER_ID_ALREADY_LINKED", sdk="credentialAlreadyInUse", signed_out=False)
    assert owner.user is not None

    with pytest.raises(SdkError) as caught:
        AppleSDK(stack, tenant_id).sign_in_with_credential("google.com", id_token="not.a.jwt")
    caught.value.expect("INVALID_IDP_RESPONSE", sdk="invalidCredential")

    # An unverified password account and Google vouching for an address outside gmail.com (untrusted,
    # docs/protocol/accounts.md#verified-email-and-automatic-linking): needConfirmation, which the SDK turns
    # into accountExistsWithDifferentCredential (Auth/Auth.swift:2101).
    taken = new_email("apple-fed-confirm")
    AppleSDK(stack, tenant_id).create_user(taken, PASSWORD)
    with pytest.raises(SdkError) as caught:
        AppleSDK(stack, tenant_id).sign_in_with_credential("google.com", id_token=fake_idp.id_token(
            "google.com", f"g-{uuid.uuid4().hex[:16]}", email=taken))
    caught.value.expect("NEED_CONFIRMATION", sdk="accountExistsWithDifferentCredential")
    assert caught.value.response.json().get("email") == taken


def test_custom_token_sign_in(stack, admin, make_tenant):
    tenant_id = user_tenant(make_tenant)
    account = ServiceAccount(admin, tenant_id)
    try:
        uid = f"apple-ct-{uuid.uuid4().hex[:12]}"
        apple = AppleSDK(stack, tenant_id)
        result = apple.sign_in_with_custom_token(account.mint(uid, {"plan": "pro"}))
        assert apple.calls == ["verifyCustomToken", "getAccountInfo"]
        assert set(sent_body(apple.log[0])) == {"token", "returnSecureToken", "tenantId"}
        assert result.is_new_user is True and apple.user.uid == uid
        claims = apple.get_id_token_result()
        assert claims["firebase"]["sign_in_provider"] == "custom" and claims["plan"] == "pro"
        assert AppleSDK(stack, tenant_id).sign_in_with_custom_token(account.mint(uid)).is_new_user is False

        with pytest.raises(SdkError) as caught:
            AppleSDK(stack, tenant_id).sign_in_with_custom_token("garbage")
        caught.value.expect("INVALID_CUSTOM_TOKEN", sdk="invalidCustomToken")
    finally:
        account.delete()


def test_email_link_sign_in(stack, make_tenant, mail_sink):
    tenant_id = make_tenant(enableEmailLinkSignin=True)["tenantId"]
    apple = AppleSDK(stack, tenant_id)
    email = new_email("apple-link")
    settings = ActionCodeSettings(url=CONTINUE_URL_WITH_QUERY, handle_code_in_app=True, ios_bundle_id=BUNDLE_ID)
    answer = apple.send_sign_in_link(email, settings)
    assert apple.calls == ["getOobConfirmationCode"]
    assert sent_body(apple.log[0]) == {"requestType": "EMAIL_SIGNIN", "email": email,
                                       "continueUrl": CONTINUE_URL_WITH_QUERY,
                                       "iOSBundleId": BUNDLE_ID, "canHandleCodeInApp": True,
                                       "clientType": "CLIENT_TYPE_IOS", "tenantId": tenant_id}
    assert answer.get("email") == email and answer.get("kind") == "identitytoolkit#GetOobConfirmationCodeResponse"

    link, params = last_mail_link(mail_sink, email)
    assert apple.is_sign_in_with_email_link(link), f"Auth.isSignIn(withEmailLink:) is false for {link}"
    assert params["apiKey"] == stack.api_key and params.get("tenantId") == tenant_id
    assert params.get("continueUrl") == CONTINUE_URL_WITH_QUERY and params["mode"] == "signIn", link
    # checkActionCode on a sign-in code: `email` is required (fatalError otherwise, Auth/Auth.swift:1009-1011).
    info = AppleSDK(stack, tenant_id).check_action_code(params["oobCode"])
    assert info["email"] == email and info.get("requestType") == "EMAIL_SIGNIN"

    apple.clear_log()
    result = apple.sign_in_with_email_link(email, link)
    assert apple.calls == ["emailLinkSignin", "getAccountInfo"]
    assert sent_body(apple.log[0]) == {"email": email, "oobCode": params["oobCode"], "tenantId": tenant_id}
    assert result.is_new_user is True
    user = apple.user
    assert user.email == email and user.email_verified is True and "password" in user.provider_data
    assert apple.get_id_token_result()["firebase"]["sign_in_provider"] == "password"

    with pytest.raises(SdkError) as caught:
        AppleSDK(stack, tenant_id).sign_in_with_email_link(email, link)
    caught.value.expect("INVALID_OOB_CODE", sdk="invalidActionCode")

    # A second link: the same user, not new. The wrong address for a link: invalidEmail.
    apple.send_sign_in_link(email, settings)
    second, _ = last_mail_link(mail_sink, email, 2)
    with pytest.raises(SdkError) as caught:
        AppleSDK(stack, tenant_id).sign_in_with_email_link(new_email("apple-other"), second)
    caught.value.expect("INVALID_EMAIL", sdk="invalidEmail")
    again = AppleSDK(stack, tenant_id).sign_in_with_email_link(email, second)
    assert again.is_new_user is False and again.user.uid == user.uid

    # fetchSignInMethods decodes (empty under email enumeration protection, the default).
    assert isinstance(AppleSDK(stack, tenant_id).fetch_sign_in_methods(email), list)


def test_email_link_credential_links_to_an_anonymous_user(stack, make_tenant, mail_sink):
    tenant_id = make_tenant(enableEmailLinkSignin=True)["tenantId"]
    apple = AppleSDK(stack, tenant_id)
    apple.sign_in_anonymously()
    uid = apple.user.uid
    email = new_email("apple-link-anon")
    apple.send_sign_in_link(email, ActionCodeSettings(url=CONTINUE_URL, handle_code_in_app=True))
    link, params = last_mail_link(mail_sink, email)

    anonymous_token = apple.user.id_token
    apple.clear_log()
    apple.link_email_link(email, link)
    assert apple.calls == ["emailLinkSignin", "getAccountInfo"]
    assert sent_body(apple.log[0]) == {"email": email, "oobCode": params["oobCode"], "idToken": anonymous_token,
                                       "tenantId": tenant_id}
    user = apple.user
    assert user.uid == uid and not user.is_anonymous and user.email == email and user.email_verified
    assert "password" in user.provider_data
    assert apple.get_id_token_result()["firebase"]["sign_in_provider"] == "password"


def test_fetch_sign_in_methods_without_enumeration_protection(stack, admin, make_tenant, mail_sink):
    """createAuthUri's signinMethods as Auth.fetchSignInMethods(forEmail:) returns them; the setting is
    project-wide, so this test puts it back."""
    tenant_id = make_tenant(allowPasswordSignup=True, enableEmailLinkSignin=True)["tenantId"]
    mask = "emailPrivacyConfig.enableImprovedEmailPrivacy"
    original = expect_ok(admin.get_config())
    expect_ok(admin.patch_config({"emailPrivacyConfig": {"enableImprovedEmailPrivacy": False}}, mask))
    try:
        with_password = new_email("apple-methods-pw")
        AppleSDK(stack, tenant_id).create_user(with_password, PASSWORD)
        assert AppleSDK(stack, tenant_id).fetch_sign_in_methods(with_password) == ["password"]

        by_link = new_email("apple-methods-link")
        apple = AppleSDK(stack, tenant_id)
        apple.send_sign_in_link(by_link, ActionCodeSettings(url=CONTINUE_URL, handle_code_in_app=True))
        link, _ = last_mail_link(mail_sink, by_link)
        apple.sign_in_with_email_link(by_link, link)
        assert "emailLink" in AppleSDK(stack, tenant_id).fetch_sign_in_methods(by_link)
        assert AppleSDK(stack, tenant_id).fetch_sign_in_methods(new_email("apple-none")) == []
    finally:
        expect_ok(admin.patch_config(original, mask))


# --------------------------------------------------------------------------------------
# Deletion
# --------------------------------------------------------------------------------------

def test_delete_account_with_id_token_and_local_id(stack, admin, make_tenant):
    tenant_id = user_tenant(make_tenant)
    apple = AppleSDK(stack, tenant_id)
    email = new_email("apple-delete")
    apple.create_user(email, PASSWORD)
    uid = apple.user.uid
    device = AppleSDK(stack, tenant_id)
    device.sign_in(email, PASSWORD)

    apple.clear_log()
    apple.delete()
    assert apple.calls == ["deleteAccount"] and apple.user is None
    assert sent_body(apple.log[0]).keys() == {"idToken", "localId"} and sent_body(apple.log[0])["localId"] == uid
    assert admin.lookup_users(tenant_id, [uid]) == []

    with pytest.raises(SdkError) as caught:
        device.reload()
    caught.value.expect("USER_NOT_FOUND", "TOKEN_EXPIRED", sdk=("userNotFound", "userTokenExpired"), signed_out=True)

    # The localId beside the idToken is not a privilege: another user's id deletes nobody else.
    victim = AppleSDK(stack, tenant_id)
    victim.create_user(new_email("apple-victim"), PASSWORD)
    attacker = AppleSDK(stack, tenant_id)
    attacker.create_user(new_email("apple-attacker"), PASSWORD)
    try:
        attacker.rpc("deleteAccount", {"idToken": attacker.user.id_token, "localId": victim.user.uid})
    except SdkError:
        pass
    assert len(admin.lookup_users(tenant_id, [victim.user.uid])) == 1, "deleteAccount deleted the localId's user"


# --------------------------------------------------------------------------------------
# Error strings the SDK maps
# --------------------------------------------------------------------------------------

def test_sign_up_and_sign_in_errors(stack, make_tenant):
    tenant_id = user_tenant(make_tenant)
    email = new_email("apple-errors")
    AppleSDK(stack, tenant_id).create_user(email, PASSWORD)

    with pytest.raises(SdkError) as caught:
        AppleSDK(stack, tenant_id).create_user(email, PASSWORD)
    caught.value.expect("EMAIL_EXISTS", sdk="emailAlreadyInUse")

    with pytest.raises(SdkError) as caught:
        AppleSDK(stack, tenant_id).sign_in(email, "not the password")
    caught.value.expect("INVALID_LOGIN_CREDENTIALS", "INVALID_PASSWORD", sdk=("invalidCredential", "wrongPassword"))

    with pytest.raises(SdkError) as caught:
        AppleSDK(stack, tenant_id).create_user(new_email("apple-weak"), "123")
    error = caught.value.expect("WEAK_PASSWORD", sdk="weakPassword")
    # weakPasswordError(serverResponseReason:) carries the detail (Backend/AuthBackend.swift:359-360).
    assert " : " in error.message and error.detail, f"WEAK_PASSWORD without ' : <reason>': {error}"

    with pytest.raises(SdkError) as caught:
        AppleSDK(stack, tenant_id).create_user("not-an-address", PASSWORD)
    caught.value.expect("INVALID_EMAIL", sdk="invalidEmail")

    # Linking a taken address to an anonymous user: emailAlreadyInUse, the user stays signed in and anonymous.
    anonymous = AppleSDK(stack, tenant_id)
    anonymous.sign_in_anonymously()
    with pytest.raises(SdkError) as caught:
        anonymous.link_email_password(email, PASSWORD)
    caught.value.expect("EMAIL_EXISTS", sdk="emailAlreadyInUse", signed_out=False)
    assert anonymous.user is not None and anonymous.reload().is_anonymous

    # Switches: password sign-up off, anonymous off, email link off.
    closed = make_tenant(allowPasswordSignup=False, enableAnonymousUser=False)["tenantId"]
    with pytest.raises(SdkError) as caught:
        AppleSDK(stack, closed).create_user(new_email("apple-closed"), PASSWORD)
    caught.value.expect("OPERATION_NOT_ALLOWED", sdk="operationNotAllowed")
    with pytest.raises(SdkError) as caught:
        AppleSDK(stack, closed).sign_in_anonymously()
    caught.value.expect("ADMIN_ONLY_OPERATION", "OPERATION_NOT_ALLOWED",
                        sdk=("adminRestrictedOperation", "operationNotAllowed"))
    with pytest.raises(SdkError) as caught:
        AppleSDK(stack, closed).send_sign_in_link(new_email("apple-closed"), ActionCodeSettings(
            url=CONTINUE_URL, handle_code_in_app=True))
    caught.value.expect("OPERATION_NOT_ALLOWED", sdk="operationNotAllowed")

    with pytest.raises(SdkError) as caught:
        AppleSDK(stack, tenant_id).apply_action_code("garbage")
    caught.value.expect("INVALID_OOB_CODE", sdk="invalidActionCode")


def test_disabled_user_is_refused_and_signed_out(stack, admin, make_tenant):
    tenant_id = user_tenant(make_tenant)
    email = new_email("apple-disabled")
    device = AppleSDK(stack, tenant_id)
    device.create_user(email, PASSWORD)
    resp = admin.request("POST", admin.accounts_path(tenant_id, "update"),
                         json={"localId": device.user.uid, "disableUser": True})
    expect_ok(resp)

    with pytest.raises(SdkError) as caught:
        AppleSDK(stack, tenant_id).sign_in(email, PASSWORD)
    caught.value.expect("USER_DISABLED", sdk="userDisabled")
    with pytest.raises(SdkError) as caught:
        device.get_id_token(forcing_refresh=True)
    caught.value.expect("USER_DISABLED", sdk="userDisabled", signed_out=True)
    assert device.user is None


def test_recent_login_required_and_revoked_tokens(stack, make_tenant):
    """CREDENTIAL_TOO_OLD_LOGIN_AGAIN after the re-auth window (3 s in the test stack), then TOKEN_EXPIRED for a
    device whose tokens a password change on another device revoked."""
    tenant_id = user_tenant(make_tenant)
    email = new_email("apple-recent")
    old = AppleSDK(stack, tenant_id)
    old.create_user(email, PASSWORD)
    wait_past_reauth_window(stack, old.user.id_token)

    with pytest.raises(SdkError) as caught:
        old.update_password("sdk password 2")
    caught.value.expect("CREDENTIAL_TOO_OLD_LOGIN_AGAIN", sdk="requiresRecentLogin", signed_out=False)
    with pytest.raises(SdkError) as caught:
        old.delete()
    caught.value.expect("CREDENTIAL_TOO_OLD_LOGIN_AGAIN", sdk="requiresRecentLogin", signed_out=False)
    assert old.user is not None, "requiresRecentLogin keeps the user signed in"
    # A profile change is not sensitive.
    old.commit_profile_changes(display_name="Still here")

    fresh = AppleSDK(stack, tenant_id)
    fresh.sign_in(email, PASSWORD)
    fresh.update_password("sdk password 2")
    assert fresh.reload().uid == old.user.uid

    with pytest.raises(SdkError) as caught:
        old.reload()
    caught.value.expect("TOKEN_EXPIRED", sdk="userTokenExpired", signed_out=True)
    assert old.user is None


# --------------------------------------------------------------------------------------
# v2, project config, out of scope
# --------------------------------------------------------------------------------------

def test_recaptcha_config_and_revoke_token(stack, make_tenant):
    tenant_id = user_tenant(make_tenant)
    apple = AppleSDK(stack, tenant_id)
    config = apple.initialize_recaptcha_config()
    url = apple.log[-1].request.url
    assert url == (f"{stack.url}/identitytoolkit.googleapis.com/v2/recaptchaConfig?key={stack.api_key}"
                   f"&clientType=CLIENT_TYPE_IOS&version=RECAPTCHA_ENTERPRISE&tenantId={tenant_id}")
    assert apple.log[-1].request.method == "GET"
    states = {s["provider"]: s["enforcementState"] for s in config["recaptchaEnforcementState"]}
    assert set(states.values()) <= {"OFF"}, f"a project without reCAPTCHA: every provider OFF: {config}"
    # Default scope too.
    AppleSDK(stack).initialize_recaptcha_config()

    # With every provider OFF the SDK sends password calls without reCAPTCHA fields, and they succeed.
    email = new_email("apple-recaptcha")
    apple.create_user(email, PASSWORD)
    assert "captchaResponse" not in sent_body(apple.log[-2])

    # Auth.revokeToken(withAuthorizationCode:): v2 accounts:revokeToken, tokenType "3", no tenantId.
    apple.clear_log()
    assert apple.revoke_token("c0de.from.apple") == {}
    assert apple.log[0].request.url == (f"{stack.url}/identitytoolkit.googleapis.com/v2/accounts:revokeToken"
                                        f"?key={stack.api_key}")
    assert sent_body(apple.log[0]) == {"providerId": "apple.com", "tokenType": "3", "token": "c0de.from.apple",
                                       "idToken": apple.user.id_token}
    apple.user.id_token = "not-a-token"
    with pytest.raises(SdkError) as caught:
        apple.revoke_token("c0de.from.apple")
    caught.value.expect("INVALID_ID_TOKEN", sdk="invalidUserToken")


def test_get_project_config(stack):
    apple = AppleSDK(stack)
    config = apple.get_project_config()
    assert apple.log[-1].request.method == "GET" and apple.log[-1].request.body is None
    # The SDK never reads projectId; production and the emulator answer the project number, the contract
    # says the project id: either is a string.
    assert config["projectId"] == stack.project_id or config["projectId"].isdigit(), config
    assert "localhost" in config["authorizedDomains"], config
    # Also as a POST (contract §1) and as GET /v1/projects.
    posted = apple.rpc("getProjectConfig", {})
    assert posted == config
    resp = apple.http.get(f"{stack.url}/identitytoolkit.googleapis.com/v1/projects?key={stack.api_key}",
                          headers=apple.headers())
    assert resp.status_code == 200 and resp.json() == config, describe(resp)


@pytest.mark.parametrize("rpc", ["signOutUser", "sendVerificationCode", "verifyPhoneNumber", "verifyClient",
                                 "signInWithGameCenter", "getRecaptchaParam"])
def test_out_of_scope_rpcs_answer_501(stack, rpc):
    apple = AppleSDK(stack)
    resp = apple.http.post(apple.v3_url(rpc), data=apple.encode({"clientType": "CLIENT_TYPE_IOS"}),
                           headers=apple.headers())
    assert resp.status_code == 501, describe(resp)
    message, error = check_error_envelope(resp)
    assert message == f"NOT_IMPLEMENTED : {rpc} is not implemented in Tessera.", describe(resp)
    assert error.get("status") == "NOT_IMPLEMENTED", describe(resp)
    # Unknown to the SDK's table: internalError carrying the message (Backend/AuthBackend.swift:299-306).
    assert apple_error_for(message, error) == "internalError"


def test_unknown_v3_rpc_is_not_found(stack):
    apple = AppleSDK(stack)
    resp = apple.http.post(apple.v3_url("noSuchRpc"), data=apple.encode({}), headers=apple.headers())
    assert resp.status_code == 404, describe(resp)
    # Google's own 404 body ("Not Found", status NOT_FOUND), as the emulator answers
    # (docs/protocol/README.md#errors): JSON, so the SDK reports an error rather than failing to decode.
    error = resp.json()["error"]
    assert error["code"] == 404 and error.get("status") == "NOT_FOUND", describe(resp)
