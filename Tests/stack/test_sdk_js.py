"""The Firebase JS SDK (@firebase/auth 1.13.5 / firebase 12.18.0 in a browser, connectAuthEmulator) against
the stack, call for call.

Every test drives sdk_traffic.JsSDK, which sends what the SDK sends (v1 `identitytoolkit.googleapis.com`
paths, v2 for reCAPTCHA config / password policy / token revocation, a form-encoded securetoken refresh; JSON
bodies that keep nulls; the SDK's headers plus the browser's Origin) and checks each answer with the decoder of
the SDK's response type, CORS included: a browser hands an answer (error or not) to the SDK only with an
Access-Control-Allow-Origin for the page. Errors are checked for the envelope and for the auth/... code the
SDK makes of them (api/index.ts). Each test works in its own tenant (docs/protocol/README.md#the-surface, docs/protocol/accounts.md#accounts-and-providers, docs/protocol/sdks.md#what-the-sdks-depend-on)."""

from __future__ import annotations

import json
import time
import uuid
from urllib.parse import parse_qs

import pytest

pytest.register_assert_rewrite("sdk_traffic")

from conftest import expect_ok, oob_link  # noqa: E402
from fake_idp import configure_provider  # noqa: E402
from sdk_traffic import (JS_ORIGIN, JS_REQUEST_HEADERS, JS_VERSION, ActionCodeSettings, JsSDK,  # noqa: E402
                         SdkError, ServiceAccount, id_token_claims, new_email, wait_for_next_second,
                         wait_past_reauth_window)

PASSWORD = "sdk password 1"
CONTINUE_URL = "http://localhost:3000/finishSignIn"

# Every endpoint the JS SDK calls, with its method (api/index.ts:56-81 Endpoint; token.ts).
JS_ENDPOINTS = [
    ("POST", "identitytoolkit.googleapis.com", "/v1/accounts:signUp"),
    ("POST", "identitytoolkit.googleapis.com", "/v1/accounts:signInWithPassword"),
    ("POST", "identitytoolkit.googleapis.com", "/v1/accounts:signInWithIdp"),
    ("POST", "identitytoolkit.googleapis.com", "/v1/accounts:signInWithCustomToken"),
    ("POST", "identitytoolkit.googleapis.com", "/v1/accounts:signInWithEmailLink"),
    ("POST", "identitytoolkit.googleapis.com", "/v1/accounts:lookup"),
    ("POST", "identitytoolkit.googleapis.com", "/v1/accounts:update"),
    ("POST", "identitytoolkit.googleapis.com", "/v1/accounts:delete"),
    ("POST", "identitytoolkit.googleapis.com", "/v1/accounts:sendOobCode"),
    ("POST", "identitytoolkit.googleapis.com", "/v1/accounts:resetPassword"),
    ("POST", "identitytoolkit.googleapis.com", "/v1/accounts:createAuthUri"),
    ("GET", "identitytoolkit.googleapis.com", "/v1/projects"),
    ("GET", "identitytoolkit.googleapis.com", "/v2/recaptchaConfig"),
    ("GET", "identitytoolkit.googleapis.com", "/v2/passwordPolicy"),
    ("POST", "identitytoolkit.googleapis.com", "/v2/accounts:revokeToken"),
    ("POST", "securetoken.googleapis.com", "/v1/token"),
]


# --------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------

def last_mail_link(mail_sink, address: str, count: int = 1) -> tuple[str, dict]:
    mails = mail_sink.wait_for(address, count)
    return oob_link(mails[count - 1])


def sent_body(resp) -> dict:
    return json.loads(resp.request.body)


def user_tenant(make_tenant, **switches) -> str:
    return make_tenant(allowPasswordSignup=True, **switches)["tenantId"]


# --------------------------------------------------------------------------------------
# Transport and CORS
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("method,host,endpoint", JS_ENDPOINTS, ids=[e[2] for e in JS_ENDPOINTS])
def test_cors_preflight_allows_every_header_the_sdk_sends(stack, method, host, endpoint):
    js = JsSDK(stack)
    resp = js.preflight(endpoint, method, JS_REQUEST_HEADERS, host=host)
    # Another page origin is reflected as well (or allowed by *).
    other = JsSDK(stack, origin="https://app.example.org").preflight(endpoint, method, JS_REQUEST_HEADERS, host=host)
    assert other.headers.get("Access-Control-Allow-Origin") in ("https://app.example.org", "*")
    if resp.headers.get("Access-Control-Allow-Origin") not in (None, "*"):
        assert "origin" in resp.headers.get("Vary", "").lower(), \
            f"a reflected Access-Control-Allow-Origin needs Vary: Origin for caches: {dict(resp.headers)}"


def test_cors_preflight_allows_authorization_and_api_key_headers(stack):
    """Contract §3: Authorization and X-Goog-Api-Key are allowed too (case-insensitive)."""
    js = JsSDK(stack)
    js.preflight("/v1/accounts:lookup", "POST", ("Authorization", "X-Goog-Api-Key", "Content-Type"))
    js.preflight("/v2/passwordPolicy", "GET", ("x-goog-api-key", "x-client-version"))


def test_requests_carry_the_sdk_headers_and_errors_are_readable_cross_origin(stack, make_tenant):
    tenant_id = user_tenant(make_tenant)
    js = JsSDK(stack, tenant_id, language_code="fr", app_check_token="app-check-placeholder")
    js.sign_in_anonymously()
    assert js.calls == ["signUp", "lookup"]
    signup, lookup = js.log
    assert signup.request.url == f"{stack.url}/identitytoolkit.googleapis.com/v1/accounts:signUp?key={stack.api_key}"
    headers = signup.request.headers
    assert headers["X-Client-Version"] == f"Chrome/JsCore/{JS_VERSION}/FirebaseCore-web"
    assert headers["Origin"] == JS_ORIGIN and headers["X-Firebase-Locale"] == "fr"
    assert sent_body(signup) == {"returnSecureToken": True, "tenantId": tenant_id}
    assert sent_body(lookup) == {"idToken": js.user.id_token}, "lookup carries no tenantId (account.ts:89-101)"

    # An error answer is readable by the page too (checked inside JsSDK for every answer).
    with pytest.raises(SdkError) as caught:
        js.api("POST", "/v1/accounts:lookup", {"idToken": "garbage"})
    caught.value.expect("INVALID_ID_TOKEN", sdk="auth/invalid-user-token")
    # So is a 404.
    resp = js.http.post(js.url("/v1/accounts:noSuchThing"), headers=js.headers(), data=b"{}")
    assert resp.headers.get("Access-Control-Allow-Origin") in (JS_ORIGIN, "*"), dict(resp.headers)


# --------------------------------------------------------------------------------------
# Anonymous, upgrade, password, profile, tokens
# --------------------------------------------------------------------------------------

def test_anonymous_sign_in_then_link_email_password_keeps_the_uid(stack, make_tenant):
    tenant_id = user_tenant(make_tenant)
    js = JsSDK(stack, tenant_id)
    result = js.sign_in_anonymously()
    assert result.is_new_user and js.user.is_anonymous
    uid = js.user.uid
    assert js.get_id_token_result()["firebase"]["sign_in_provider"] == "anonymous"
    js.clear_log()
    assert js.sign_in_anonymously().user.uid == uid and js.calls == [], "no call when already anonymous"

    email = new_email("js-anon")
    anonymous_token = js.user.id_token
    js.link_email_password(email, PASSWORD)
    # linkWithCredential: lookup (not linked yet), signUp {idToken, ...} without tenantId, lookup.
    assert js.calls == ["lookup", "signUp", "lookup"]
    assert sent_body(js.log[1]) == {"idToken": anonymous_token,
                                    "returnSecureToken": True, "email": email, "password": PASSWORD,
                                    "clientType": "CLIENT_TYPE_WEB"}
    user = js.user
    assert user.uid == uid and user.email == email and not user.is_anonymous, \
        "JS keeps isAnonymous unless lookup lists a provider (core/user/reload.ts:51-59)"
    assert user.provider_data["password"].get("rawId") == email
    assert js.get_id_token_result()["firebase"]["sign_in_provider"] == "password"

    # getIdToken(true): a form-encoded refresh only (core/user/token_manager.ts; api/authentication/token.ts).
    js.clear_log()
    old_refresh = user.refresh_token
    token = js.get_id_token(force_refresh=True)
    assert js.calls == ["token"]
    refresh = js.log[0]
    assert refresh.request.url == f"{stack.url}/securetoken.googleapis.com/v1/token?key={stack.api_key}"
    assert refresh.request.headers["Content-Type"] == "application/x-www-form-urlencoded"
    assert parse_qs(refresh.request.body) == {"grant_type": ["refresh_token"], "refresh_token": [old_refresh]}
    assert id_token_claims(token, uid=uid)["firebase"]["sign_in_provider"] == "password"
    assert js.reload().uid == uid

    other = JsSDK(stack, tenant_id)
    other.sign_in(email, PASSWORD)
    assert other.calls == ["signInWithPassword", "lookup"] and other.user.uid == uid


def test_update_profile_keeps_what_null_leaves_alone(stack, make_tenant):
    """updateProfile sends JSON nulls (core/user/account_info.ts:33-57): null means no change (docs/protocol/sdks.md#what-the-sdks-depend-on), and
    the answer echoes the stored values, which JS copies to the user (account_info.ts:64-65)."""
    tenant_id = user_tenant(make_tenant)
    js = JsSDK(stack, tenant_id)
    js.create_user(new_email("js-profile"), PASSWORD)
    assert js.calls == ["signUp", "lookup"]

    js.clear_log()
    data = js.update_profile(display_name="Grace", photo_url="https://img.example/grace.png")
    assert js.calls == ["update"], "updateProfile makes one call"
    assert sent_body(js.log[0]) == {"idToken": js.user.id_token, "displayName": "Grace",
                                    "photoUrl": "https://img.example/grace.png", "returnSecureToken": True}
    from sdk_traffic import js_UpdateProfileResponse
    js_UpdateProfileResponse(data, display_name="Grace", photo_url="https://img.example/grace.png")

    data = js.update_profile(display_name=None, photo_url="https://img.example/grace-2.png")
    assert sent_body(js.log[-1])["displayName"] is None, "the null goes out as JSON null"
    js_UpdateProfileResponse(data, display_name="Grace", photo_url="https://img.example/grace-2.png")
    assert js.user.display_name == "Grace"
    data = js.update_profile(display_name="Grace H", photo_url=None)
    js_UpdateProfileResponse(data, display_name="Grace H", photo_url="https://img.example/grace-2.png")
    user = js.reload()
    assert user.display_name == "Grace H" and user.photo_url == "https://img.example/grace-2.png"


def test_password_and_email_changes(stack, make_tenant):
    tenant_id = user_tenant(make_tenant)
    js = JsSDK(stack, tenant_id)
    email = new_email("js-change")
    js.create_user(email, PASSWORD)
    uid = js.user.uid

    js.clear_log()
    before = js.user.id_token
    js.update_password("sdk password 2")
    assert js.calls == ["update", "lookup"]
    assert sent_body(js.log[0]) == {"idToken": before, "returnSecureToken": True, "password": "sdk password 2"}
    assert js.user.uid == uid
    JsSDK(stack, tenant_id).sign_in(email, "sdk password 2")

    changed = new_email("js-change-new")
    js.update_email(changed)
    assert js.user.email == changed and js.user.email_verified is False
    assert js.get_id_token_result(force_refresh=True)["email"] == changed


def test_email_change_is_announced_and_recoverable(stack, make_tenant, mail_sink):
    """updateEmail mails the old address a RECOVER_EMAIL link (issue 36, the emulator's setAccountInfo:155/253);
    checkActionCode names the address to restore (`email`, JS's `data.email`) and the one it replaces
    (`newEmail`, JS's `data.previousEmail`); applyActionCode restores it and signs every session out."""
    tenant_id = user_tenant(make_tenant)
    js = JsSDK(stack, tenant_id)
    old = new_email("js-recover")
    js.create_user(old, PASSWORD)
    changed = new_email("js-recover-new")
    answer = js.update_email(changed)
    assert answer.get("newEmail") == changed and js.user.email == changed

    _, params = last_mail_link(mail_sink, old)
    assert params["mode"] == "recoverEmail" and params["apiKey"] == stack.api_key
    assert params.get("tenantId") == tenant_id
    info = JsSDK(stack, tenant_id).check_action_code(params["oobCode"])
    assert info["requestType"] == "RECOVER_EMAIL" and info["email"] == old and info["newEmail"] == changed, info

    restored = JsSDK(stack, tenant_id).apply_action_code(params["oobCode"])
    assert restored["email"] == old and restored.get("emailVerified") is True, restored
    # The device that made the change is signed out (restoring is the owner's defence).
    with pytest.raises(SdkError) as caught:
        js.get_id_token(force_refresh=True)
    caught.value.expect("TOKEN_EXPIRED", sdk="auth/user-token-expired")
    assert JsSDK(stack, tenant_id).sign_in(old, PASSWORD).user.email == old
    # The code is used up.
    with pytest.raises(SdkError) as again:
        JsSDK(stack, tenant_id).apply_action_code(params["oobCode"])
    again.value.expect("INVALID_OOB_CODE", sdk="auth/invalid-action-code")


def test_password_change_right_after_sign_in_keeps_the_session(stack, make_tenant):
    """updatePassword stores the answer's tokens only when its ID token differs from the current one
    (core/user/user_impl.ts:188-194). A password change in the second of the sign-in gets a byte-identical ID
    token (same claims, same iat, deterministic RS256), so JS keeps its old refresh token: that one must still
    refresh, or the user is signed out with auth/user-token-expired on the next refresh."""
    tenant_id = user_tenant(make_tenant)
    js = JsSDK(stack, tenant_id)
    time.sleep(1.01 - (time.time() % 1))  # start of a second: sign-up and change share it
    js.create_user(new_email("js-quick"), PASSWORD)
    js.update_password("sdk password 2")
    js.get_id_token(force_refresh=True)
    assert js.reload().uid


# --------------------------------------------------------------------------------------
# Mailed codes
# --------------------------------------------------------------------------------------

def test_verification_mail_and_apply_action_code(stack, make_tenant, mail_sink):
    tenant_id = user_tenant(make_tenant)
    js = JsSDK(stack, tenant_id)
    email = new_email("js-verify")
    js.create_user(email, PASSWORD)
    js.clear_log()
    js.send_email_verification(ActionCodeSettings(url=CONTINUE_URL))
    # sendEmailVerification: sendOobCode only (the answer's email matches, no reload).
    assert js.calls == ["sendOobCode"]
    assert sent_body(js.log[0]) == {"requestType": "VERIFY_EMAIL", "idToken": js.user.id_token,
                                    "continueUrl": CONTINUE_URL, "canHandleCodeInApp": False,
                                    "tenantId": tenant_id}
    _, params = last_mail_link(mail_sink, email)
    assert params["mode"] == "verifyEmail" and params["apiKey"] == stack.api_key
    assert params.get("tenantId") == tenant_id and params.get("continueUrl") == CONTINUE_URL

    JsSDK(stack, tenant_id).apply_action_code(params["oobCode"])
    assert js.reload().email_verified is True
    with pytest.raises(SdkError) as caught:
        JsSDK(stack, tenant_id).apply_action_code(params["oobCode"])
    caught.value.expect("INVALID_OOB_CODE", sdk="auth/invalid-action-code")


def test_password_reset_by_mail(stack, make_tenant, mail_sink):
    tenant_id = user_tenant(make_tenant)
    device = JsSDK(stack, tenant_id)
    email = new_email("js-reset")
    device.create_user(email, PASSWORD)
    signed_up_at = time.time()

    js = JsSDK(stack, tenant_id)
    js.send_password_reset_email(email)
    assert sent_body(js.log[-1]) == {"requestType": "PASSWORD_RESET", "email": email,
                                     "clientType": "CLIENT_TYPE_WEB", "tenantId": tenant_id}
    _, params = last_mail_link(mail_sink, email)
    assert params["mode"] == "resetPassword"
    code = params["oobCode"]

    info = js.check_action_code(code)
    assert info["requestType"] == "PASSWORD_RESET" and info["email"] == email
    assert js.verify_password_reset_code(code) == email

    wait_for_next_second(signed_up_at)
    js.confirm_password_reset(code, "sdk password reset")
    with pytest.raises(SdkError) as caught:
        js.confirm_password_reset(code, "sdk password again")
    caught.value.expect("INVALID_OOB_CODE", sdk="auth/invalid-action-code")
    js.sign_in(email, "sdk password reset")

    # The device signed in before the reset: user-token-expired, and the SDK signs it out
    # (core/user/invalidation.ts:44-49).
    with pytest.raises(SdkError) as caught:
        device.get_id_token(force_refresh=True)
    caught.value.expect("TOKEN_EXPIRED", sdk="auth/user-token-expired", signed_out=True)


# --------------------------------------------------------------------------------------
# Federated, custom token, email link
# --------------------------------------------------------------------------------------

def test_federated_sign_in_link_and_unlink(stack, admin, make_tenant, fake_idp):
    tenant_id = user_tenant(make_tenant)
    configure_provider(admin, fake_idp, "google.com", tenant_id=tenant_id)
    sub = f"g-{uuid.uuid4().hex[:16]}"
    gmail = new_email("js-fed", "gmail.com")

    js = JsSDK(stack, tenant_id)
    token = fake_idp.id_token("google.com", sub, email=gmail, name="Grace Hopper")
    result = js.sign_in_with_credential("google.com", id_token=token)
    assert js.calls == ["signInWithIdp", "lookup"]
    body = sent_body(js.log[0])
    assert body == {"requestUri": "http://localhost", "returnSecureToken": True,
                    "postBody": f"id_token={token}&providerId=google.com", "tenantId": tenant_id}
    assert result.provider_id == "google.com" and result.is_new_user is True
    assert js.user.provider_data["google.com"]["rawId"] == sub and js.user.email_verified is True
    first_uid = js.user.uid

    owner = JsSDK(stack, tenant_id)
    owner.create_user(new_email("js-fed-owner"), PASSWORD)
    other_sub = f"g-{uuid.uuid4().hex[:16]}"
    owner.clear_log()
    owner.link_credential("google.com", id_token=fake_idp.id_token(
        "google.com", other_sub, email=new_email("js-fed-link", "gmail.com")))
    assert owner.calls == ["lookup", "signInWithIdp", "lookup"]
    assert set(owner.user.provider_data) == {"password", "google.com"}

    owner.clear_log()
    owner.unlink("google.com")
    assert owner.calls == ["lookup", "update"]
    assert sent_body(owner.log[1]) == {"idToken": owner.user.id_token, "deleteProvider": ["google.com"]}
    assert set(owner.user.provider_data) == {"password"}

    with pytest.raises(SdkError) as caught:
        owner.link_credential("google.com", id_token=fake_idp.id_token("google.com", sub, email=gmail))
    caught.value.expect("FEDERATED_USER_ID_ALREADY_LINKED", sdk="auth/credential-already-in-use")

    # Google for an address outside gmail.com is untrusted
    # (docs/protocol/accounts.md#verified-email-and-automatic-linking): needConfirmation, which JS reads by
    # the key's mere presence (api/index.ts:215-217).
    taken = new_email("js-fed-confirm")
    JsSDK(stack, tenant_id).create_user(taken, PASSWORD)
    with pytest.raises(SdkError) as caught:
        JsSDK(stack, tenant_id).sign_in_with_credential("google.com", id_token=fake_idp.id_token(
            "google.com", f"g-{uuid.uuid4().hex[:16]}", email=taken))
    caught.value.expect("NEED_CONFIRMATION", sdk="auth/account-exists-with-different-credential")
    assert JsSDK(stack, tenant_id).sign_in_with_credential("google.com", id_token=fake_idp.id_token(
        "google.com", sub, email=gmail)).user.uid == first_uid


def test_custom_token_sign_in(stack, admin, make_tenant):
    tenant_id = user_tenant(make_tenant)
    account = ServiceAccount(admin, tenant_id)
    try:
        uid = f"js-ct-{uuid.uuid4().hex[:12]}"
        js = JsSDK(stack, tenant_id)
        result = js.sign_in_with_custom_token(account.mint(uid, {"role": "editor"}))
        assert js.calls == ["signInWithCustomToken", "lookup"]
        assert sent_body(js.log[0]).keys() == {"token", "returnSecureToken", "tenantId"}
        assert result.is_new_user is True and js.user.uid == uid
        assert js.get_id_token_result()["role"] == "editor"
        with pytest.raises(SdkError) as caught:
            JsSDK(stack, tenant_id).sign_in_with_custom_token("garbage")
        caught.value.expect("INVALID_CUSTOM_TOKEN", sdk="auth/invalid-custom-token")
    finally:
        account.delete()


def test_email_link_sign_in_and_linking(stack, make_tenant, mail_sink):
    tenant_id = make_tenant(enableEmailLinkSignin=True)["tenantId"]
    js = JsSDK(stack, tenant_id)
    email = new_email("js-link")
    # With the mobile settings JS sends androidMinimumVersionCode, a field the v1 schema does not name
    # (core/strategies/action_code_settings.ts:62-69): tolerated (docs/protocol/sdks.md#what-the-sdks-depend-on).
    settings = ActionCodeSettings(url=CONTINUE_URL, handle_code_in_app=True, ios_bundle_id="dev.tessera.ios",
                                  android_package_name="dev.tessera.android", android_install_app=True,
                                  android_minimum_version="12")
    js.send_sign_in_link_to_email(email, settings)
    assert sent_body(js.log[-1]) == {"requestType": "EMAIL_SIGNIN", "email": email, "clientType": "CLIENT_TYPE_WEB",
                                     "continueUrl": CONTINUE_URL, "canHandleCodeInApp": True,
                                     "iOSBundleId": "dev.tessera.ios", "androidInstallApp": True,
                                     "androidMinimumVersionCode": "12", "androidPackageName": "dev.tessera.android",
                                     "tenantId": tenant_id}
    link, params = last_mail_link(mail_sink, email)
    assert js.is_sign_in_with_email_link(link), f"isSignInWithEmailLink is false for {link}"
    assert params["apiKey"] == stack.api_key

    js.clear_log()
    result = js.sign_in_with_email_link(email, link)
    assert js.calls == ["signInWithEmailLink", "lookup"]
    assert sent_body(js.log[0]) == {"email": email, "oobCode": params["oobCode"], "tenantId": tenant_id}
    assert result.is_new_user is True and js.user.email_verified is True
    assert "password" in js.user.provider_data
    assert js.fetch_sign_in_methods_for_email(email) is not None

    # Linking an email-link credential to an anonymous user.
    anon = JsSDK(stack, tenant_id)
    anon.sign_in_anonymously()
    uid = anon.user.uid
    linked_email = new_email("js-link-anon")
    anon.send_sign_in_link_to_email(linked_email, settings)
    link, params = last_mail_link(mail_sink, linked_email)
    anon.clear_log()
    anon.link_email_link(linked_email, link)
    assert anon.calls == ["lookup", "signInWithEmailLink", "lookup"]
    assert sent_body(anon.log[1]).keys() == {"idToken", "email", "oobCode", "tenantId"}
    user = anon.user
    assert user.uid == uid and not user.is_anonymous and user.email == linked_email and user.email_verified

    with pytest.raises(SdkError) as caught:
        JsSDK(stack, tenant_id).sign_in_with_email_link(linked_email, link)
    caught.value.expect("INVALID_OOB_CODE", sdk="auth/invalid-action-code")


# --------------------------------------------------------------------------------------
# Deletion and errors
# --------------------------------------------------------------------------------------

def test_delete(stack, admin, make_tenant):
    tenant_id = user_tenant(make_tenant)
    js = JsSDK(stack, tenant_id)
    js.create_user(new_email("js-delete"), PASSWORD)
    uid = js.user.uid
    js.clear_log()
    js.delete()
    assert js.calls == ["delete"] and js.user is None
    assert sent_body(js.log[0]).keys() == {"idToken"}
    assert admin.lookup_users(tenant_id, [uid]) == []


def test_sign_up_and_sign_in_errors(stack, make_tenant):
    tenant_id = user_tenant(make_tenant)
    email = new_email("js-errors")
    JsSDK(stack, tenant_id).create_user(email, PASSWORD)

    with pytest.raises(SdkError) as caught:
        JsSDK(stack, tenant_id).create_user(email, PASSWORD)
    caught.value.expect("EMAIL_EXISTS", sdk="auth/email-already-in-use")
    with pytest.raises(SdkError) as caught:
        JsSDK(stack, tenant_id).sign_in(email, "not the password")
    caught.value.expect("INVALID_LOGIN_CREDENTIALS", "INVALID_PASSWORD",
                        sdk=("auth/invalid-credential", "auth/wrong-password"))
    with pytest.raises(SdkError) as caught:
        JsSDK(stack, tenant_id).create_user(new_email("js-weak"), "123")
    error = caught.value.expect("WEAK_PASSWORD", sdk="auth/weak-password")
    assert error.detail, f"JS shows the detail after ' : ' as the message (api/index.ts:240-241): {error}"
    with pytest.raises(SdkError) as caught:
        JsSDK(stack, tenant_id).create_user("not-an-address", PASSWORD)
    caught.value.expect("INVALID_EMAIL", sdk="auth/invalid-email")

    closed = make_tenant(allowPasswordSignup=False, enableAnonymousUser=False)["tenantId"]
    with pytest.raises(SdkError) as caught:
        JsSDK(stack, closed).create_user(new_email("js-closed"), PASSWORD)
    caught.value.expect("OPERATION_NOT_ALLOWED", sdk="auth/operation-not-allowed")
    with pytest.raises(SdkError) as caught:
        JsSDK(stack, closed).sign_in(new_email("js-closed"), PASSWORD)
    caught.value.expect("PASSWORD_LOGIN_DISABLED", "OPERATION_NOT_ALLOWED", sdk="auth/operation-not-allowed")
    with pytest.raises(SdkError) as caught:
        JsSDK(stack, closed).sign_in_anonymously()
    caught.value.expect("ADMIN_ONLY_OPERATION", "OPERATION_NOT_ALLOWED",
                        sdk=("auth/admin-restricted-operation", "auth/operation-not-allowed"))
    with pytest.raises(SdkError) as caught:
        JsSDK(stack, closed).send_sign_in_link_to_email(new_email("js-closed"), ActionCodeSettings(
            url=CONTINUE_URL, handle_code_in_app=True))
    caught.value.expect("OPERATION_NOT_ALLOWED", sdk="auth/operation-not-allowed")


def test_disabled_recent_login_and_revoked_tokens(stack, admin, make_tenant):
    tenant_id = user_tenant(make_tenant)
    email = new_email("js-recent")
    old = JsSDK(stack, tenant_id)
    old.create_user(email, PASSWORD)
    wait_past_reauth_window(stack, old.user.id_token)

    with pytest.raises(SdkError) as caught:
        old.update_password("sdk password 2")
    caught.value.expect("CREDENTIAL_TOO_OLD_LOGIN_AGAIN", sdk="auth/requires-recent-login", signed_out=False)
    with pytest.raises(SdkError) as caught:
        old.delete()
    caught.value.expect("CREDENTIAL_TOO_OLD_LOGIN_AGAIN", sdk="auth/requires-recent-login", signed_out=False)
    old.update_profile(display_name="Still here")

    fresh = JsSDK(stack, tenant_id)
    fresh.sign_in(email, PASSWORD)
    fresh.update_password("sdk password 2")
    with pytest.raises(SdkError) as caught:
        old.reload()
    caught.value.expect("TOKEN_EXPIRED", sdk="auth/user-token-expired", signed_out=True)

    # A disabled user: sign-in refused, a signed-in session's refresh refused and signed out.
    device = JsSDK(stack, tenant_id)
    device.sign_in(email, "sdk password 2")
    expect_ok(admin.request("POST", admin.accounts_path(tenant_id, "update"),
                            json={"localId": device.user.uid, "disableUser": True}))
    with pytest.raises(SdkError) as caught:
        JsSDK(stack, tenant_id).sign_in(email, "sdk password 2")
    caught.value.expect("USER_DISABLED", sdk="auth/user-disabled")
    with pytest.raises(SdkError) as caught:
        device.get_id_token(force_refresh=True)
    caught.value.expect("USER_DISABLED", sdk="auth/user-disabled", signed_out=True)


# --------------------------------------------------------------------------------------
# v2
# --------------------------------------------------------------------------------------

def test_recaptcha_config_password_policy_and_revoke_token(stack, make_tenant):
    tenant_id = user_tenant(make_tenant)
    js = JsSDK(stack, tenant_id)
    config = js.initialize_recaptcha_config()
    request = js.log[-1].request
    assert request.method == "GET" and request.headers["Content-Type"] == "application/json"
    assert request.url == (f"{stack.url}/identitytoolkit.googleapis.com/v2/recaptchaConfig?clientType=CLIENT_TYPE_WEB"
                           f"&version=RECAPTCHA_ENTERPRISE&tenantId={tenant_id}&key={stack.api_key}")
    assert all(s["enforcementState"] == "OFF" for s in config.get("recaptchaEnforcementState", []))
    JsSDK(stack).initialize_recaptcha_config()

    # validatePassword: GET /v2/passwordPolicy once, schema version 1, validated locally.
    assert js.validate_password("12345")["isValid"] is False
    assert js.validate_password("123456")["isValid"] is True
    assert js.calls.count("passwordPolicy") == 1
    JsSDK(stack).validate_password("a password")

    js.create_user(new_email("js-revoke"), PASSWORD)
    js.clear_log()
    assert js.revoke_access_token("apple-access-token") == {}
    assert sent_body(js.log[0]) == {"providerId": "apple.com", "tokenType": "ACCESS_TOKEN",
                                    "token": "apple-access-token", "idToken": js.user.id_token,
                                    "tenantId": tenant_id}
    js.user.id_token = "garbage"
    with pytest.raises(SdkError) as caught:
        js.revoke_access_token("apple-access-token")
    caught.value.expect("INVALID_ID_TOKEN", sdk="auth/invalid-user-token")


def test_project_config(stack):
    """GET /v1/projects (api/project_config/get_project_config.ts; origin validation outside emulator mode)."""
    js = JsSDK(stack)
    from sdk_traffic import js_GetProjectConfigResponse
    config = js_GetProjectConfigResponse(js.api("GET", "/v1/projects", {}))
    assert "localhost" in config["authorizedDomains"], config
