"""The SDK conformance suite: the Firebase Apple SDK (firebase-ios-sdk 12.19.0, emulator mode) and JS SDK
(@firebase/auth 1.13.5 / firebase 12.18.0 in a browser, connectAuthEmulator) against the stack, call for call.

Every test drives sdk_traffic.AppleSDK or sdk_traffic.JsSDK, which send exactly what the SDK sends and check
each answer with the decoder of the SDK's response class:

- Apple: legacy v3 relyingparty URLs, v2 for reCAPTCHA config and token revocation, securetoken with a
  camelCase JSON body; the SDK's headers; DEBUG-build pretty-printed JSON with escaped slashes. Errors are
  checked for the envelope and for the AuthErrorCode the SDK makes of them (Backend/AuthBackend.swift).
- JS: v1 `identitytoolkit.googleapis.com` paths, v2 for reCAPTCHA config / password policy / token
  revocation, a form-encoded securetoken refresh; JSON bodies that keep nulls; the SDK's headers plus the
  browser's Origin; CORS included: a browser hands an answer (error or not) to the SDK only with an
  Access-Control-Allow-Origin for the page. Errors are checked for the envelope and for the auth/... code the
  SDK makes of them (api/index.ts).

Each scenario both SDKs have is one test parametrized over them (the ``sdk`` fixture, ids ``apple`` and
``js``), written against the calls both models share. Where the SDKs differ, the difference is data: the
endpoints each public call makes (``Sdk.calls``), the request bodies and settings (``sdk.pick(apple=...,
js=...)``) and the SDK error each server code becomes (``SDK_ERRORS``). What only one SDK does is in the
"Apple only" and "JS only" sections at the end, its tests named ``test_apple_*`` / ``test_js_*``. Each test
works in its own tenant (docs/protocol/README.md#the-surface, docs/protocol/accounts.md#accounts-and-providers,
docs/protocol/sdks.md#what-the-sdks-depend-on)."""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

import pytest

pytest.register_assert_rewrite("sdk_traffic")

from conftest import describe, expect_ok, oob_link  # noqa: E402
from sms_sink import sms_code  # noqa: E402
from fake_idp import configure_provider  # noqa: E402
from sdk_traffic import (APPLE_VERSION, BUNDLE_ID, JS_ORIGIN, JS_REQUEST_HEADERS, JS_VERSION,  # noqa: E402
                         ActionCodeSettings, AppleSDK, JsSDK, SdkError, ServiceAccount,
                         apple_GetAccountInfoResponse, apple_error_for, check_error_envelope, id_token_claims,
                         js_UpdateProfileResponse, new_email, totp_code, wait_for_next_second,
                         wait_past_reauth_window)

PASSWORD = "sdk password 1"
CONTINUE_URL = "http://localhost:3000/finishSignIn"
# A continue URL with its own query (the Firebase docs' example has ?cartId=1234): it must survive inside the
# mailed link's query (ActionCode/ActionCodeURL.swift:57-61, 65-80).
CONTINUE_URL_WITH_QUERY = "http://localhost:3000/finishSignUp?cartId=1234&mode=cart&q=a%20b"

# The sign-in link settings of each SDK's email-link test. Apple: the continue URL with a query and the bundle.
APPLE_LINK_SETTINGS = ActionCodeSettings(url=CONTINUE_URL_WITH_QUERY, handle_code_in_app=True,
                                         ios_bundle_id=BUNDLE_ID)
# JS with the mobile settings sends androidMinimumVersionCode, a field the v1 schema does not name
# (core/strategies/action_code_settings.ts:62-69): tolerated (docs/protocol/sdks.md#what-the-sdks-depend-on).
JS_LINK_SETTINGS = ActionCodeSettings(url=CONTINUE_URL, handle_code_in_app=True, ios_bundle_id="dev.tessera.ios",
                                      android_package_name="dev.tessera.android", android_install_app=True,
                                      android_minimum_version="12")


# --------------------------------------------------------------------------------------
# The two SDKs, and where they differ
# --------------------------------------------------------------------------------------

@dataclass
class Sdk:
    """One SDK as the shared scenarios see it: its model in sdk_traffic, and what differs from the other SDK."""
    id: str
    model: type[AppleSDK] | type[JsSDK]
    lookup: str  # the endpoint that reads the signed-in user
    calls: dict[str, list[str]]  # a public call -> the endpoints it calls, in order

    def __call__(self, stack, tenant_id: str | None = None, **options: Any) -> AppleSDK | JsSDK:
        """A new instance of the SDK (a device, a browser tab) in ``tenant_id``."""
        return self.model(stack, tenant_id, **options)

    def pick(self, *, apple: Any, js: Any) -> Any:
        """This SDK's side of a per-SDK expectation."""
        return apple if self.id == "apple" else js


APPLE = Sdk("apple", AppleSDK, "getAccountInfo", {
    # Auth.completeSignIn: the rpc, then getAccountInfo (User/User.swift:1088-1115).
    "sign_in_anonymously": ["signupNewUser", "getAccountInfo"],
    "create_user": ["signupNewUser", "getAccountInfo"],
    "sign_in": ["verifyPassword", "getAccountInfo"],
    "sign_in_with_credential": ["verifyAssertion", "getAccountInfo"],
    "sign_in_with_custom_token": ["verifyCustomToken", "getAccountInfo"],
    "sign_in_with_email_link": ["emailLinkSignin", "getAccountInfo"],
    # Links: the rpc with the idToken, then getAccountInfo; no securetoken call in between: expiresIn was a string
    # above 300 s (SecureTokenService.swift).
    "link_email_password": ["signupNewUser", "getAccountInfo"],
    "link_credential": ["verifyAssertion", "getAccountInfo"],
    "link_email_link": ["emailLinkSignin", "getAccountInfo"],
    # UserProfileUpdate.unlink: setAccountInfo alone (User/UserProfileUpdate.swift:49-83).
    "unlink": ["setAccountInfo"],
    # commitChanges / updatePassword: getAccountInfo, then setAccountInfo (User/UserProfileUpdate.swift:89-117).
    "update_profile": ["getAccountInfo", "setAccountInfo"],
    "update_password": ["getAccountInfo", "setAccountInfo"],
    "send_email_verification": ["getOobConfirmationCode"],
    "send_sign_in_link": ["getOobConfirmationCode"],
    "delete": ["deleteAccount"],
})
JS = Sdk("js", JsSDK, "lookup", {
    # UserImpl._fromIdTokenResponse: the call, then lookup (core/user/user_impl.ts:325-344).
    "sign_in_anonymously": ["signUp", "lookup"],
    "create_user": ["signUp", "lookup"],
    "sign_in": ["signInWithPassword", "lookup"],
    "sign_in_with_credential": ["signInWithIdp", "lookup"],
    "sign_in_with_custom_token": ["signInWithCustomToken", "lookup"],
    "sign_in_with_email_link": ["signInWithEmailLink", "lookup"],
    # linkWithCredential: lookup (not linked yet, core/user/link_unlink.ts:68-82), the call, lookup.
    "link_email_password": ["lookup", "signUp", "lookup"],
    "link_credential": ["lookup", "signInWithIdp", "lookup"],
    "link_email_link": ["lookup", "signInWithEmailLink", "lookup"],
    # unlink: lookup (linked?), then update (core/user/link_unlink.ts:33-55).
    "unlink": ["lookup", "update"],
    # updateProfile makes one call (core/user/account_info.ts:33-76); updatePassword updates, then looks up.
    "update_profile": ["update"],
    "update_password": ["update", "lookup"],
    # sendEmailVerification: sendOobCode only when the answer's email matches (no reload).
    "send_email_verification": ["sendOobCode"],
    "send_sign_in_link": ["sendOobCode"],
    "delete": ["delete"],
})

# Server code -> the error each SDK's source makes of it (SdkError.sdk -> code -> SDK error): Apple's
# AuthErrorCode (Backend/AuthBackend.swift:320-457), JS's auth/... code (api/index.ts:224-239, api/errors.ts).
SDK_ERRORS: dict[str, dict[str, str]] = {
    "Apple": {
        "EMAIL_EXISTS": "emailAlreadyInUse", "INVALID_LOGIN_CREDENTIALS": "invalidCredential",
        "INVALID_PASSWORD": "wrongPassword", "WEAK_PASSWORD": "weakPassword", "INVALID_EMAIL": "invalidEmail",
        "OPERATION_NOT_ALLOWED": "operationNotAllowed", "PASSWORD_LOGIN_DISABLED": "operationNotAllowed",
        "ADMIN_ONLY_OPERATION": "adminRestrictedOperation", "INVALID_OOB_CODE": "invalidActionCode",
        "USER_DISABLED": "userDisabled", "CREDENTIAL_TOO_OLD_LOGIN_AGAIN": "requiresRecentLogin",
        "TOKEN_EXPIRED": "userTokenExpired", "USER_NOT_FOUND": "userNotFound",
        "INVALID_ID_TOKEN": "invalidUserToken", "INVALID_CUSTOM_TOKEN": "invalidCustomToken",
        "INVALID_IDP_RESPONSE": "invalidCredential", "FEDERATED_USER_ID_ALREADY_LINKED": "credentialAlreadyInUse",
        # needConfirmation in a verifyAssertion answer (Auth/Auth.swift:2101).
        "NEED_CONFIRMATION": "accountExistsWithDifferentCredential",
        "INVALID_CODE": "invalidVerificationCode", "MFA_ENROLLMENT_NOT_FOUND": "multiFactorInfoNotFound",
        "INVALID_MFA_PENDING_CREDENTIAL": "invalidMultiFactorSession", "UNVERIFIED_EMAIL": "unverifiedEmail",
    },
    "JS": {
        "EMAIL_EXISTS": "auth/email-already-in-use", "INVALID_LOGIN_CREDENTIALS": "auth/invalid-credential",
        "INVALID_PASSWORD": "auth/wrong-password", "WEAK_PASSWORD": "auth/weak-password",
        "INVALID_EMAIL": "auth/invalid-email", "OPERATION_NOT_ALLOWED": "auth/operation-not-allowed",
        "PASSWORD_LOGIN_DISABLED": "auth/operation-not-allowed",
        "ADMIN_ONLY_OPERATION": "auth/admin-restricted-operation", "INVALID_OOB_CODE": "auth/invalid-action-code",
        "USER_DISABLED": "auth/user-disabled", "CREDENTIAL_TOO_OLD_LOGIN_AGAIN": "auth/requires-recent-login",
        "TOKEN_EXPIRED": "auth/user-token-expired", "USER_NOT_FOUND": "auth/user-token-expired",
        "INVALID_ID_TOKEN": "auth/invalid-user-token", "INVALID_CUSTOM_TOKEN": "auth/invalid-custom-token",
        "INVALID_IDP_RESPONSE": "auth/invalid-credential",
        "FEDERATED_USER_ID_ALREADY_LINKED": "auth/credential-already-in-use",
        # needConfirmation, read by the key's mere presence (api/index.ts:215-217).
        "NEED_CONFIRMATION": "auth/account-exists-with-different-credential",
        "INVALID_CODE": "auth/invalid-verification-code", "MFA_ENROLLMENT_NOT_FOUND": "auth/multi-factor-info-not-found",
        "INVALID_MFA_PENDING_CREDENTIAL": "auth/invalid-multi-factor-session", "UNVERIFIED_EMAIL": "auth/unverified-email",
    },
}


@pytest.fixture(params=[APPLE, JS], ids=lambda sdk: sdk.id)
def sdk(request) -> Sdk:
    """The SDK a shared scenario runs on."""
    return request.param


# --------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------

def last_mail_link(mail_sink, address: str, count: int = 1) -> tuple[str, dict]:
    """The action link of the ``count``-th mail to ``address`` (waits for it)."""
    mails = mail_sink.wait_for(address, count)
    return oob_link(mails[count - 1])


def sent_body(resp) -> dict:
    """The body the SDK model sent (to check it is what the SDK sends): JSON, or a form as parse_qs reads it."""
    if resp.request.headers.get("Content-Type") == "application/x-www-form-urlencoded":
        return parse_qs(resp.request.body)
    return json.loads(resp.request.body)


def main_body(sdk: Sdk, client: AppleSDK | JsSDK) -> dict:
    """The body of the one request in ``client.log`` that is not a user lookup: the request of the public call
    the log holds (the lookups before or after it are the SDK's own)."""
    sent = [resp for resp, call in zip(client.log, client.calls) if call != sdk.lookup]
    assert len(sent) == 1, f"expected one call besides {sdk.lookup}: {client.calls}"
    return sent_body(sent[0])


def user_tenant(make_tenant, **switches) -> str:
    return make_tenant(allowPasswordSignup=True, **switches)["tenantId"]


def expect(caught: pytest.ExceptionInfo, *server_codes: str, signed_out: bool | None = None) -> SdkError:
    """``SdkError.expect`` of the caught error with the SDK errors its SDK maps ``server_codes`` to."""
    error = caught.value
    names = tuple(dict.fromkeys(SDK_ERRORS[error.sdk][code] for code in server_codes))
    return error.expect(*server_codes, sdk=names, signed_out=signed_out)


# --------------------------------------------------------------------------------------
# Transport
# --------------------------------------------------------------------------------------

def test_requests_carry_the_sdk_headers_and_bodies(stack, make_tenant, sdk):
    """What the server receives: the SDK's URL with ?key=, a JSON Content-Type, the SDK's X-Client-Version,
    locale and identification headers (Apple's bundle, the page's Origin), the sign-up body."""
    tenant_id = user_tenant(make_tenant)
    locale = sdk.pick(apple="it", js="fr")
    client = sdk(stack, tenant_id, language_code=locale, app_check_token="app-check-placeholder")
    client.sign_in_anonymously()
    assert client.calls == sdk.calls["sign_in_anonymously"]
    signup, lookup = client.log
    assert signup.request.url == stack.url + sdk.pick(
        apple=f"/www.googleapis.com/identitytoolkit/v3/relyingparty/signupNewUser?key={stack.api_key}",
        js=f"/identitytoolkit.googleapis.com/v1/accounts:signUp?key={stack.api_key}")
    expected = sdk.pick(
        apple={"Content-Type": "application/json", "X-Ios-Bundle-Identifier": BUNDLE_ID,
               "X-Client-Version": f"iOS/FirebaseSDK/{APPLE_VERSION}/FirebaseCore-iOS"},
        js={"Content-Type": "application/json", "Origin": JS_ORIGIN,
            "X-Client-Version": f"Chrome/JsCore/{JS_VERSION}/FirebaseCore-web"})
    expected["X-Firebase-Locale"] = locale
    assert {name: signup.request.headers.get(name) for name in expected} == expected
    assert sent_body(signup) == sdk.pick(
        apple={"clientType": "CLIENT_TYPE_IOS", "returnSecureToken": True, "tenantId": tenant_id},
        js={"returnSecureToken": True, "tenantId": tenant_id})
    # The lookup carries only the ID token (Backend/RPC/GetAccountInfoRequest.swift:41-43), no tenantId
    # (account.ts:89-101).
    assert sent_body(lookup) == {"idToken": client.user.id_token}


# --------------------------------------------------------------------------------------
# Anonymous, upgrade, password sign-in, profile, token refresh
# --------------------------------------------------------------------------------------

def test_anonymous_sign_in_then_link_email_password_keeps_the_uid(stack, make_tenant, sdk):
    tenant_id = user_tenant(make_tenant)
    client = sdk(stack, tenant_id)
    result = client.sign_in_anonymously()
    assert result.is_new_user is True and client.user.is_anonymous
    uid = client.user.uid
    assert client.user.provider_data == {} and not client.user.has_password
    claims = client.get_id_token_result()
    assert claims["firebase"]["sign_in_provider"] == "anonymous" and claims["sub"] == uid
    assert claims["firebase"].get("tenant") == tenant_id

    # Already anonymous: the SDK makes no call at all (Auth/Auth.swift:700-760; core/strategies/anonymous.ts).
    client.clear_log()
    assert client.sign_in_anonymously().user.uid == uid and client.calls == []

    email = new_email(f"{sdk.id}-anon")
    anonymous_token = client.user.id_token
    client.link_email_password(email, PASSWORD)
    assert client.calls == sdk.calls["link_email_password"]
    # The sign-up with the idToken: Apple adds the tenantId, JS does not
    # (api/account_management/email_and_password.ts:75-85).
    assert main_body(sdk, client) == sdk.pick(
        apple={"email": email, "password": PASSWORD, "idToken": anonymous_token, "clientType": "CLIENT_TYPE_IOS",
               "returnSecureToken": True, "tenantId": tenant_id},
        js={"idToken": anonymous_token, "returnSecureToken": True, "email": email, "password": PASSWORD,
            "clientType": "CLIENT_TYPE_WEB"})
    user = client.user
    assert user.uid == uid and not user.is_anonymous and user.has_password and user.email == email, \
        "JS keeps isAnonymous unless lookup lists a provider (core/user/reload.ts:51-59)"
    entry = user.provider_data.get("password")
    assert entry is not None, f"no password provider: {user.provider_data}"
    assert entry.get("federatedId") == email and entry.get("rawId") == email and entry.get("email") == email
    assert client.get_id_token_result()["firebase"]["sign_in_provider"] == "password"
    assert client.get_id_token_result()["email"] == email

    # A forced refresh keeps the same user: Apple's camel-case JSON (Backend/RPC/SecureTokenRequest.swift:46-52),
    # JS's form (core/user/token_manager.ts; api/authentication/token.ts), and nothing else.
    client.clear_log()
    old_refresh = user.refresh_token
    token = client.get_id_token(True)
    assert client.calls == ["token"]
    refresh = client.log[0]
    assert refresh.request.url == f"{stack.url}/securetoken.googleapis.com/v1/token?key={stack.api_key}"
    assert refresh.request.headers["Content-Type"] == sdk.pick(apple="application/json",
                                                               js="application/x-www-form-urlencoded")
    assert sent_body(refresh) == sdk.pick(apple={"grantType": "refresh_token", "refreshToken": old_refresh},
                                          js={"grant_type": ["refresh_token"], "refresh_token": [old_refresh]})
    assert id_token_claims(token, uid=uid)["firebase"]["sign_in_provider"] == "password"
    assert user.refresh_token != old_refresh, "refresh tokens rotate on every use (docs/protocol/tokens.md#token-rules)"
    assert client.reload().uid == uid

    # A second device signs in with the password: the same user.
    other = sdk(stack, tenant_id)
    other.sign_in(email, PASSWORD)
    assert other.calls == sdk.calls["sign_in"] and other.user.uid == uid


def test_password_sign_in_profile_password_and_email_changes(stack, make_tenant, sdk):
    tenant_id = user_tenant(make_tenant)
    client = sdk(stack, tenant_id)
    email = new_email(f"{sdk.id}-profile")
    created = client.create_user(email, PASSWORD)
    assert created.is_new_user and client.calls == sdk.calls["create_user"]
    assert client.user.email == email and client.user.email_verified is False and not client.user.is_anonymous
    uid = client.user.uid

    # Apple commitChanges: setAccountInfo {idToken, displayName, photoUrl, returnSecureToken}; JS updateProfile.
    client.clear_log()
    data = client.update_profile(display_name="Ada Lovelace", photo_url="https://img.example/ada.png")
    assert client.calls == sdk.calls["update_profile"]
    assert data.get("displayName") == "Ada Lovelace"
    assert client.reload().display_name == "Ada Lovelace" and client.user.photo_url == "https://img.example/ada.png"
    # Only the display name: the photo stays.
    client.clear_log()
    client.update_profile(display_name="Ada")
    assert main_body(sdk, client).keys() == sdk.pick(apple={"idToken", "displayName", "returnSecureToken", "tenantId"},
                                                     js={"idToken", "displayName", "returnSecureToken"})
    assert client.reload().display_name == "Ada" and client.user.photo_url == "https://img.example/ada.png"

    # updatePassword: new tokens in the answer (the old ones are revoked,
    # docs/protocol/accounts.md#accounts-and-providers).
    client.clear_log()
    before = client.user.id_token
    client.update_password("sdk password 2")
    assert client.calls == sdk.calls["update_password"]
    assert main_body(sdk, client) == sdk.pick(
        apple={"idToken": before, "password": "sdk password 2", "returnSecureToken": True, "tenantId": tenant_id},
        js={"idToken": before, "returnSecureToken": True, "password": "sdk password 2"})
    assert client.user.uid == uid
    assert client.reload().uid == created.user.uid, "the SDK continues with the tokens the answer carried"
    sdk(stack, tenant_id).sign_in(email, "sdk password 2")

    # updateEmail (deprecated on Apple): update {email}; the user keeps its password.
    changed = new_email(f"{sdk.id}-profile-new")
    client.update_email(changed)
    assert client.user.email == changed and client.user.email_verified is False
    user = client.reload()
    assert user.email == changed and user.email_verified is False and user.has_password
    assert client.get_id_token_result(True)["email"] == changed


# --------------------------------------------------------------------------------------
# Mailed codes
# --------------------------------------------------------------------------------------

def test_verification_mail_and_apply_action_code(stack, make_tenant, mail_sink, sdk):
    tenant_id = user_tenant(make_tenant)
    client = sdk(stack, tenant_id)
    email = new_email(f"{sdk.id}-verify")
    client.create_user(email, PASSWORD)

    settings = sdk.pick(apple=None, js=ActionCodeSettings(url=CONTINUE_URL))
    client.clear_log()
    answer = client.send_email_verification(settings)
    assert client.calls == sdk.calls["send_email_verification"]
    assert sent_body(client.log[0]) == sdk.pick(
        apple={"requestType": "VERIFY_EMAIL", "idToken": client.user.id_token, "clientType": "CLIENT_TYPE_IOS",
               "tenantId": tenant_id},
        js={"requestType": "VERIFY_EMAIL", "idToken": client.user.id_token, "continueUrl": CONTINUE_URL,
            "canHandleCodeInApp": False, "tenantId": tenant_id})
    assert answer.get("email") == email
    _, params = last_mail_link(mail_sink, email)
    assert params["mode"] == "verifyEmail" and params["apiKey"] == stack.api_key
    assert params.get("tenantId") == tenant_id
    if settings is not None:
        assert params.get("continueUrl") == settings.url

    # checkActionCode on this code: the Apple SDK stops with fatalError when `email` is missing (Auth/Auth.swift:
    # 1009-1011), whatever the code's type.
    assert sdk(stack, tenant_id).check_action_code(params["oobCode"])["email"] == email

    # applyActionCode: Apple setAccountInfo {oobCode, returnSecureToken, tenantId}, JS update {oobCode, tenantId};
    # no ID token.
    applied = sdk(stack, tenant_id).apply_action_code(params["oobCode"])
    assert applied.get("emailVerified") is True and applied.get("email") == email
    assert client.reload().email_verified is True

    with pytest.raises(SdkError) as caught:
        sdk(stack, tenant_id).apply_action_code(params["oobCode"])
    expect(caught, "INVALID_OOB_CODE")


def test_password_reset_by_mail(stack, make_tenant, mail_sink, sdk):
    tenant_id = user_tenant(make_tenant)
    device = sdk(stack, tenant_id)
    email = new_email(f"{sdk.id}-reset")
    device.create_user(email, PASSWORD)
    signed_up_at = time.time()

    client = sdk(stack, tenant_id)
    settings = sdk.pick(apple=ActionCodeSettings(url=CONTINUE_URL, handle_code_in_app=False), js=None)
    client.send_password_reset(email, settings)
    assert sent_body(client.log[-1]) == sdk.pick(
        apple={"requestType": "PASSWORD_RESET", "email": email, "continueUrl": CONTINUE_URL,
               "clientType": "CLIENT_TYPE_IOS", "tenantId": tenant_id},
        js={"requestType": "PASSWORD_RESET", "email": email, "clientType": "CLIENT_TYPE_WEB", "tenantId": tenant_id})
    _, params = last_mail_link(mail_sink, email)
    assert params["mode"] == "resetPassword" and params["apiKey"] == stack.api_key
    code = params["oobCode"]

    # verifyPasswordResetCode / checkActionCode: resetPassword without newPassword, code not consumed.
    assert client.verify_password_reset_code(code) == email
    info = client.check_action_code(code)
    assert info["email"] == email and info.get("requestType") == "PASSWORD_RESET"
    assert list(sent_body(client.log[-1])) == ["oobCode", "tenantId"]

    with pytest.raises(SdkError) as caught:
        client.confirm_password_reset(code, "123")
    expect(caught, "WEAK_PASSWORD")

    wait_for_next_second(signed_up_at)  # the device's tokens predate the reset (validSince, docs/protocol/tokens.md#checking-an-id-token)
    client.confirm_password_reset(code, "sdk password reset")
    with pytest.raises(SdkError) as caught:
        client.confirm_password_reset(code, "sdk password third")
    expect(caught, "INVALID_OOB_CODE")

    with pytest.raises(SdkError) as caught:
        client.sign_in(email, PASSWORD)
    expect(caught, "INVALID_LOGIN_CREDENTIALS", "INVALID_PASSWORD")
    client.sign_in(email, "sdk password reset")
    assert client.user.email_verified is True, "a reset through the mailbox proves the address (docs/protocol/accounts.md#emailverified)"

    # The device that was signed in before the reset: its refresh is refused and the SDK signs it out
    # (User/User.swift:1664-1674; core/user/invalidation.ts:44-49).
    with pytest.raises(SdkError) as caught:
        device.get_id_token(True)
    expect(caught, "TOKEN_EXPIRED", signed_out=True)
    assert device.user is None


# --------------------------------------------------------------------------------------
# Federated, custom token, email link
# --------------------------------------------------------------------------------------

def test_federated_sign_in_link_and_unlink(stack, admin, make_tenant, fake_idp, sdk):
    tenant_id = user_tenant(make_tenant)
    configure_provider(admin, fake_idp, "google.com", tenant_id=tenant_id)
    sub = f"g-{uuid.uuid4().hex[:16]}"
    gmail = new_email(f"{sdk.id}-fed", "gmail.com")

    client = sdk(stack, tenant_id)
    token = fake_idp.id_token("google.com", sub, email=gmail, name="Grace Hopper",
                              picture="https://img.example/grace.png")
    result = client.sign_in_with_credential("google.com", id_token=token)
    assert client.calls == sdk.calls["sign_in_with_credential"]
    # Apple VerifyAssertionRequest.swift:156-240: postBody query, requestUri, returnSecureToken,
    # returnIdpCredential, tenantId, autoCreate. JS OAuthCredential.buildRequest (core/credentials/oauth.ts:176-205).
    assert sent_body(client.log[0]) == sdk.pick(
        apple={"requestUri": "http://localhost", "postBody": f"providerId=google.com&id_token={token}",
               "returnSecureToken": True, "returnIdpCredential": True, "tenantId": tenant_id, "autoCreate": True},
        js={"requestUri": "http://localhost", "returnSecureToken": True,
            "postBody": f"id_token={token}&providerId=google.com", "tenantId": tenant_id})
    assert result.provider_id == "google.com" and result.is_new_user is True
    user = client.user
    assert user.email == gmail and user.email_verified is True and user.display_name == "Grace Hopper"
    assert user.provider_data["google.com"].get("rawId") == sub
    first_uid = user.uid

    again = sdk(stack, tenant_id).sign_in_with_credential("google.com", id_token=fake_idp.id_token(
        "google.com", sub, email=gmail))
    assert again.is_new_user is False and again.user.uid == first_uid

    # A password user links another Google account, then unlinks it.
    owner = sdk(stack, tenant_id)
    owner.create_user(new_email(f"{sdk.id}-fed-owner"), PASSWORD)
    other_sub = f"g-{uuid.uuid4().hex[:16]}"
    owner.clear_log()
    linked = owner.link_credential("google.com", id_token=fake_idp.id_token(
        "google.com", other_sub, email=new_email(f"{sdk.id}-fed-link", "gmail.com")))
    assert owner.calls == sdk.calls["link_credential"]
    assert "idToken" in main_body(sdk, owner)
    assert linked.provider_id == "google.com" and set(owner.user.provider_data) == {"password", "google.com"}
    assert owner.user.has_password, "linking keeps the password"

    owner.clear_log()
    before = owner.user.id_token
    owner.unlink("google.com")
    assert owner.calls == sdk.calls["unlink"]
    assert main_body(sdk, owner) == sdk.pick(
        apple={"idToken": before, "deleteProvider": ["google.com"], "returnSecureToken": True, "tenantId": tenant_id},
        js={"idToken": before, "deleteProvider": ["google.com"]})
    assert set(owner.user.provider_data) == {"password"}
    assert set(owner.reload().provider_data) == {"password"}

    # The first user's Google account linked to the owner: credential already in use (on Apple a 200 with
    # errorMessage or an error status; the SDK treats both as errors, Backend/AuthBackend.swift:259-272).
    with pytest.raises(SdkError) as caught:
        owner.link_credential("google.com", id_token=fake_idp.id_token("google.com", sub, email=gmail))
    expect(caught, "FEDERATED_USER_ID_ALREADY_LINKED", signed_out=False)
    assert owner.user is not None

    with pytest.raises(SdkError) as caught:
        sdk(stack, tenant_id).sign_in_with_credential("google.com", id_token="not.a.jwt")
    expect(caught, "INVALID_IDP_RESPONSE")

    # An unverified password account and Google vouching for an address outside gmail.com (untrusted,
    # docs/protocol/accounts.md#verified-email-and-automatic-linking): needConfirmation, which Apple turns into
    # accountExistsWithDifferentCredential (Auth/Auth.swift:2101) and JS reads by the key's mere presence
    # (api/index.ts:215-217).
    taken = new_email(f"{sdk.id}-fed-confirm")
    sdk(stack, tenant_id).create_user(taken, PASSWORD)
    with pytest.raises(SdkError) as caught:
        sdk(stack, tenant_id).sign_in_with_credential("google.com", id_token=fake_idp.id_token(
            "google.com", f"g-{uuid.uuid4().hex[:16]}", email=taken))
    expect(caught, "NEED_CONFIRMATION")
    assert caught.value.response.json().get("email") == taken
    assert sdk(stack, tenant_id).sign_in_with_credential("google.com", id_token=fake_idp.id_token(
        "google.com", sub, email=gmail)).user.uid == first_uid


def test_custom_token_sign_in(stack, admin, make_tenant, sdk):
    tenant_id = user_tenant(make_tenant)
    account = ServiceAccount(admin, tenant_id)
    try:
        uid = f"{sdk.id}-ct-{uuid.uuid4().hex[:12]}"
        client = sdk(stack, tenant_id)
        result = client.sign_in_with_custom_token(account.mint(uid, {"plan": "pro", "role": "editor"}))
        assert client.calls == sdk.calls["sign_in_with_custom_token"]
        assert sent_body(client.log[0]).keys() == {"token", "returnSecureToken", "tenantId"}
        assert result.is_new_user is True and client.user.uid == uid
        claims = client.get_id_token_result()
        assert claims["firebase"]["sign_in_provider"] == "custom" and claims["plan"] == "pro"
        assert claims["role"] == "editor"
        assert sdk(stack, tenant_id).sign_in_with_custom_token(account.mint(uid)).is_new_user is False

        with pytest.raises(SdkError) as caught:
            sdk(stack, tenant_id).sign_in_with_custom_token("garbage")
        expect(caught, "INVALID_CUSTOM_TOKEN")
    finally:
        account.delete()


def test_email_link_sign_in(stack, make_tenant, mail_sink, sdk):
    tenant_id = make_tenant(enableEmailLinkSignin=True)["tenantId"]
    client = sdk(stack, tenant_id)
    email = new_email(f"{sdk.id}-link")
    settings = sdk.pick(apple=APPLE_LINK_SETTINGS, js=JS_LINK_SETTINGS)
    answer = client.send_sign_in_link(email, settings)
    assert client.calls == sdk.calls["send_sign_in_link"]
    assert sent_body(client.log[0]) == sdk.pick(
        apple={"requestType": "EMAIL_SIGNIN", "email": email, "continueUrl": CONTINUE_URL_WITH_QUERY,
               "iOSBundleId": BUNDLE_ID, "canHandleCodeInApp": True, "clientType": "CLIENT_TYPE_IOS",
               "tenantId": tenant_id},
        js={"requestType": "EMAIL_SIGNIN", "email": email, "clientType": "CLIENT_TYPE_WEB",
            "continueUrl": CONTINUE_URL, "canHandleCodeInApp": True, "iOSBundleId": "dev.tessera.ios",
            "androidInstallApp": True, "androidMinimumVersionCode": "12", "androidPackageName": "dev.tessera.android",
            "tenantId": tenant_id})
    assert answer.get("email") == email and answer.get("kind") == "identitytoolkit#GetOobConfirmationCodeResponse"

    link, params = last_mail_link(mail_sink, email)
    assert client.is_sign_in_with_email_link(link), \
        f"Auth.isSignIn(withEmailLink:) / isSignInWithEmailLink is false for {link}"
    assert params["apiKey"] == stack.api_key and params.get("tenantId") == tenant_id
    assert params.get("continueUrl") == settings.url and params["mode"] == "signIn", link
    # checkActionCode on a sign-in code: `email` is required (Apple: fatalError otherwise, Auth/Auth.swift:1009-1011).
    info = sdk(stack, tenant_id).check_action_code(params["oobCode"])
    assert info["email"] == email and info.get("requestType") == "EMAIL_SIGNIN"

    client.clear_log()
    result = client.sign_in_with_email_link(email, link)
    assert client.calls == sdk.calls["sign_in_with_email_link"]
    assert sent_body(client.log[0]) == {"email": email, "oobCode": params["oobCode"], "tenantId": tenant_id}
    assert result.is_new_user is True
    user = client.user
    assert user.email == email and user.email_verified is True and "password" in user.provider_data
    assert client.get_id_token_result()["firebase"]["sign_in_provider"] == "password"

    with pytest.raises(SdkError) as caught:
        sdk(stack, tenant_id).sign_in_with_email_link(email, link)
    expect(caught, "INVALID_OOB_CODE")

    # A second link: the same user, not new. The wrong address for a link: an invalid email.
    client.send_sign_in_link(email, settings)
    second, _ = last_mail_link(mail_sink, email, 2)
    with pytest.raises(SdkError) as caught:
        sdk(stack, tenant_id).sign_in_with_email_link(new_email(f"{sdk.id}-other"), second)
    expect(caught, "INVALID_EMAIL")
    again = sdk(stack, tenant_id).sign_in_with_email_link(email, second)
    assert again.is_new_user is False and again.user.uid == user.uid

    # fetchSignInMethods decodes (empty under email enumeration protection, the default).
    assert isinstance(sdk(stack, tenant_id).fetch_sign_in_methods(email), list)


def test_email_link_credential_links_to_an_anonymous_user(stack, make_tenant, mail_sink, sdk):
    tenant_id = make_tenant(enableEmailLinkSignin=True)["tenantId"]
    client = sdk(stack, tenant_id)
    client.sign_in_anonymously()
    uid = client.user.uid
    email = new_email(f"{sdk.id}-link-anon")
    client.send_sign_in_link(email, sdk.pick(apple=ActionCodeSettings(url=CONTINUE_URL, handle_code_in_app=True),
                                             js=JS_LINK_SETTINGS))
    link, params = last_mail_link(mail_sink, email)

    anonymous_token = client.user.id_token
    client.clear_log()
    client.link_email_link(email, link)
    assert client.calls == sdk.calls["link_email_link"]
    assert main_body(sdk, client) == {"email": email, "oobCode": params["oobCode"], "idToken": anonymous_token,
                                      "tenantId": tenant_id}
    user = client.user
    assert user.uid == uid and not user.is_anonymous and user.email == email and user.email_verified
    assert "password" in user.provider_data
    assert client.get_id_token_result()["firebase"]["sign_in_provider"] == "password"

    with pytest.raises(SdkError) as caught:
        sdk(stack, tenant_id).sign_in_with_email_link(email, link)
    expect(caught, "INVALID_OOB_CODE")


# --------------------------------------------------------------------------------------
# Phone sign-in
# --------------------------------------------------------------------------------------

def test_phone_sign_in_up_then_in_and_unlink(stack, make_tenant, sms_sink, sdk):
    """Each SDK's phone calls (docs/protocol/phone.md): the code asked for as the SDK asks in the emulator setup
    (JS: the reCAPTCHA v2 path, every provider OFF; Apple: app verification disabled for testing), texted through
    the SMS sink, then the credential signs the number up, then in on another device, and `unlink("phone")`."""
    import random

    tenant_id = make_tenant(enablePhoneSignIn=True)["tenantId"]
    number = f"+1650555{random.randrange(10_000):04d}"
    first = sdk(stack, tenant_id)
    verification_id = getattr(first, sdk.pick(apple="verify_phone_number", js="sign_in_with_phone_number"))(number)
    assert first.calls == sdk.pick(apple=["sendVerificationCode"],
                                   js=["recaptchaConfig", "recaptchaParams", "sendVerificationCode"])
    sent = sent_body(first.log[-1])
    assert sent == sdk.pick(
        apple={"phoneNumber": number, "tenantId": tenant_id, "clientType": "CLIENT_TYPE_IOS"},
        js={"phoneNumber": number, "clientType": "CLIENT_TYPE_WEB", "captchaResponse": "NO_RECAPTCHA",
            "recaptchaVersion": "RECAPTCHA_ENTERPRISE", "recaptchaToken": "fake-recaptcha-v2", "tenantId": tenant_id})
    [message] = sms_sink.wait_for(number)
    first.clear_log()
    result = getattr(first, sdk.pick(apple="sign_in_with_phone", js="confirm"))(verification_id, sms_code(message))
    assert first.calls == sdk.pick(apple=["verifyPhoneNumber", "getAccountInfo"],
                                   js=["signInWithPhoneNumber", "lookup"])
    assert result.is_new_user is True and first.user.uid
    assert first.user.provider_data["phone"]["phoneNumber"] == number
    claims = first.get_id_token_result()
    assert claims["phone_number"] == number and claims["firebase"]["sign_in_provider"] == "phone"

    second = sdk(stack, tenant_id)
    verification_id = getattr(second, sdk.pick(apple="verify_phone_number", js="sign_in_with_phone_number"))(number)
    [_, message] = sms_sink.wait_for(number, 2)
    again = getattr(second, sdk.pick(apple="sign_in_with_phone", js="confirm"))(verification_id, sms_code(message))
    assert again.is_new_user is False and second.user.uid == first.user.uid
    # A wrong code.
    verification_id = getattr(second, sdk.pick(apple="verify_phone_number", js="sign_in_with_phone_number"))(number)
    [*_, message] = sms_sink.wait_for(number, 3)
    wrong = f"{(int(sms_code(message)) + 1) % 1_000_000:06d}"
    with pytest.raises(SdkError) as caught:
        getattr(second, sdk.pick(apple="sign_in_with_phone", js="confirm"))(verification_id, wrong)
    expect(caught, "INVALID_CODE")

    second.unlink("phone")
    assert "phone" not in second.user.provider_data


# --------------------------------------------------------------------------------------
# Second factors (TOTP)
# --------------------------------------------------------------------------------------

TOTP_ON = {"providerConfigs": [{"state": "ENABLED", "totpProviderConfig": {"adjacentIntervals": 5}}]}


def test_totp_second_factor_enrol_sign_in_and_unenrol(stack, admin, make_tenant, sdk):
    """Each SDK's TOTP calls (docs/protocol/mfa.md): generateSecret and enroll for a signed-in user, the
    second-factor error of a password sign-in and its resolver, resolveSignIn with the factor, unenroll, and what
    withdrawing does to the other sessions signed in with the factor."""
    tenant_id = make_tenant(allowPasswordSignup=True, mfaConfig=TOTP_ON)["tenantId"]
    email = new_email(f"{sdk.id}-mfa")
    first = sdk(stack, tenant_id)
    first.create_user(email, PASSWORD)
    # Enrolling needs a verified email (UNVERIFIED_EMAIL, as Firebase).
    with pytest.raises(SdkError) as caught:
        first.totp_generate_secret()
    expect(caught, "UNVERIFIED_EMAIL")
    expect_ok(admin.request("POST", admin.accounts_path(tenant_id, "update"),
                            json={"localId": first.user.uid, "emailVerified": True}))

    first.clear_log()
    secret = first.totp_generate_secret()
    user = first.enroll_totp(secret, totp_code(secret["sharedSecretKey"]), "phone app")
    assert first.calls == sdk.pick(
        apple=["mfaEnrollment:start", "mfaEnrollment:finalize", "token", "getAccountInfo"],
        js=["mfaEnrollment:start", "mfaEnrollment:finalize", "lookup"])
    start, finalize = sent_body(first.log[0]), sent_body(first.log[1])
    assert start == {"idToken": start["idToken"], "totpEnrollmentInfo": {}, "tenantId": tenant_id}
    assert finalize["totpVerificationInfo"]["sessionInfo"] == secret["sessionInfo"]
    assert finalize["displayName"] == "phone app" and finalize["tenantId"] == tenant_id
    [(kind, enrollment, name)] = user.enrolled_factors
    assert (kind, name) == ("totp", "phone app")
    claims = first.get_id_token_result()
    assert claims["firebase"]["sign_in_second_factor"] == "totp"
    assert claims["firebase"]["second_factor_identifier"] == enrollment

    # Another device: the password alone raises the second-factor error, whose resolver lists the factor.
    second = sdk(stack, tenant_id)
    with pytest.raises(SdkError) as caught:
        second.sign_in(email, PASSWORD)
    assert caught.value.sdk_code == sdk.pick(apple="secondFactorRequired", js="auth/multi-factor-auth-required")
    assert second.user is None
    resolver = second.resolver(caught.value)
    assert resolver["hints"] == [("totp", enrollment, "phone app")]
    # The enrolment's code is spent; an unknown factor is not found; the next code signs in.
    with pytest.raises(SdkError) as caught:
        second.resolve_sign_in_totp(resolver, enrollment, totp_code(secret["sharedSecretKey"]))
    expect(caught, "INVALID_CODE")
    with pytest.raises(SdkError) as caught:
        second.resolve_sign_in_totp(resolver, "x" * 28, totp_code(secret["sharedSecretKey"], 1))
    expect(caught, "MFA_ENROLLMENT_NOT_FOUND")
    second.clear_log()
    signed_in = second.resolve_sign_in_totp(resolver, enrollment, totp_code(secret["sharedSecretKey"], 1))
    assert second.calls == sdk.pick(apple=["mfaSignIn:finalize", "token", "getAccountInfo"],
                                    js=["mfaSignIn:finalize", "lookup"])
    assert sent_body(second.log[0]) == {
        "mfaPendingCredential": resolver["pending"], "mfaEnrollmentId": enrollment,
        "totpVerificationInfo": {"verificationCode": totp_code(secret["sharedSecretKey"], 1)}, "tenantId": tenant_id}
    assert signed_in.uid == first.user.uid and signed_in.enrolled_factors == [("totp", enrollment, "phone app")]
    assert second.get_id_token_result()["firebase"]["second_factor_identifier"] == enrollment
    # The pending credential is spent.
    with pytest.raises(SdkError) as caught:
        sdk(stack, tenant_id).resolve_sign_in_totp(resolver, enrollment, totp_code(secret["sharedSecretKey"], 2))
    expect(caught, "INVALID_MFA_PENDING_CREDENTIAL")

    # Unenrolling: new tokens without the factor, the list emptied; the first device's session was signed in
    # with the factor, so its next refresh fails and the SDK signs it out.
    second.clear_log()
    second.unenroll(enrollment)
    assert second.calls[0] == "mfaEnrollment:withdraw"
    assert sent_body(second.log[0]) == {"idToken": sent_body(second.log[0])["idToken"], "mfaEnrollmentId": enrollment,
                                        "tenantId": tenant_id}
    assert second.user is not None and second.user.enrolled_factors == []
    assert "sign_in_second_factor" not in second.get_id_token_result(True)["firebase"]
    with pytest.raises(SdkError) as caught:
        first.get_id_token(True)
    expect(caught, "TOKEN_EXPIRED", signed_out=True)
    # A password alone signs in again.
    assert sdk(stack, tenant_id).sign_in(email, PASSWORD).user.uid == signed_in.uid


def test_phone_second_factor_enrol_sign_in_and_unenrol(stack, admin, make_tenant, sms_sink, sdk):
    """Each SDK's phone-factor calls (docs/protocol/mfa.md#phone-factors): verifyPhoneNumber with the user's
    multi-factor session texts a code (through the SMS sink) and enroll finishes it; a password sign-in raises the
    second-factor error with the number masked, verifyPhoneNumber with the hint and the resolver's session texts the
    sign-in's code, and resolveSignIn with it signs in; then unenroll."""
    tenant_id = make_tenant(allowPasswordSignup=True,
                            mfaConfig={"state": "ENABLED", "enabledProviders": ["PHONE_SMS"]})["tenantId"]
    email = new_email(f"{sdk.id}-sms-mfa")
    number = f"+1650555{uuid.uuid4().int % 10_000:04d}"
    first = sdk(stack, tenant_id)
    first.create_user(email, PASSWORD)
    expect_ok(admin.request("POST", admin.accounts_path(tenant_id, "update"),
                            json={"localId": first.user.uid, "emailVerified": True}))
    first.reload()

    first.clear_log()
    verification_id = first.verify_phone_number_for_enrollment(number)
    [message] = sms_sink.wait_for(number)
    user = first.enroll_phone(verification_id, sms_code(message), "work phone")
    # The JS SDK reads the reCAPTCHA config and its verifier the site key first (_verifyPhoneNumber,
    # RecaptchaVerifier.render); the Apple SDK's test mode does neither.
    assert first.calls == sdk.pick(
        apple=["mfaEnrollment:start", "mfaEnrollment:finalize", "token", "getAccountInfo"],
        js=["recaptchaConfig", "recaptchaParams", "mfaEnrollment:start", "mfaEnrollment:finalize", "lookup"])
    skip = sdk.pick(apple=0, js=2)
    start, finalize = sent_body(first.log[skip]), sent_body(first.log[skip + 1])
    assert start["phoneEnrollmentInfo"]["phoneNumber"] == number and start["tenantId"] == tenant_id
    assert finalize["phoneVerificationInfo"] == {"sessionInfo": verification_id, "code": sms_code(message)}
    [(kind, enrollment, name)] = user.enrolled_factors
    assert (kind, name) == ("phone", "work phone")
    claims = first.get_id_token_result()
    assert claims["firebase"]["sign_in_second_factor"] == "phone"
    assert claims["firebase"]["second_factor_identifier"] == enrollment

    second = sdk(stack, tenant_id)
    with pytest.raises(SdkError) as caught:
        second.sign_in(email, PASSWORD)
    assert caught.value.sdk_code == sdk.pick(apple="secondFactorRequired", js="auth/multi-factor-auth-required")
    resolver = second.resolver(caught.value)
    assert resolver["hints"] == [("phone", enrollment, "work phone")]
    [hint] = resolver["response"]["mfaInfo"]
    assert hint["phoneInfo"] == "+*******" + number[-4:]
    second.clear_log()
    verification_id = second.verify_phone_number_for_sign_in(resolver, hint)
    [_, message] = sms_sink.wait_for(number, 2)
    # A wrong code is refused and the right one still signs in.
    wrong = f"{(int(sms_code(message)) + 1) % 1_000_000:06d}"
    with pytest.raises(SdkError) as caught:
        second.resolve_sign_in_phone(resolver, verification_id, wrong)
    expect(caught, "INVALID_CODE")
    signed_in = second.resolve_sign_in_phone(resolver, verification_id, sms_code(message))
    assert second.calls == sdk.pick(
        apple=["mfaSignIn:start", "mfaSignIn:finalize", "mfaSignIn:finalize", "token", "getAccountInfo"],
        js=["recaptchaConfig", "recaptchaParams", "mfaSignIn:start", "mfaSignIn:finalize", "mfaSignIn:finalize",
            "lookup"])
    assert sent_body(second.log[skip]) == sdk.pick(
        apple={"mfaPendingCredential": resolver["pending"], "mfaEnrollmentId": enrollment,
               "phoneSignInInfo": {"phoneNumber": hint["phoneInfo"]}, "tenantId": tenant_id},
        js={"mfaPendingCredential": resolver["pending"], "mfaEnrollmentId": enrollment,
            "phoneSignInInfo": {"recaptchaToken": "fake-recaptcha-v2", "captchaResponse": "NO_RECAPTCHA",
                                "clientType": "CLIENT_TYPE_WEB", "recaptchaVersion": "RECAPTCHA_ENTERPRISE"},
            "tenantId": tenant_id})
    assert sent_body(second.log[skip + 2]) == {
        "mfaPendingCredential": resolver["pending"],
        "phoneVerificationInfo": {"sessionInfo": verification_id, "code": sms_code(message)}, "tenantId": tenant_id}
    assert signed_in.uid == first.user.uid
    assert second.get_id_token_result()["firebase"]["sign_in_second_factor"] == "phone"

    second.unenroll(enrollment)
    assert second.user.enrolled_factors == []
    assert sdk(stack, tenant_id).sign_in(email, PASSWORD).user.uid == signed_in.uid


# --------------------------------------------------------------------------------------
# Deletion
# --------------------------------------------------------------------------------------

def test_delete(stack, admin, make_tenant, sdk):
    tenant_id = user_tenant(make_tenant)
    client = sdk(stack, tenant_id)
    email = new_email(f"{sdk.id}-delete")
    client.create_user(email, PASSWORD)
    uid = client.user.uid
    device = sdk(stack, tenant_id)
    device.sign_in(email, PASSWORD)

    client.clear_log()
    token = client.user.id_token
    client.delete()
    assert client.calls == sdk.calls["delete"] and client.user is None
    # Apple deleteAccount {idToken, localId} (User/User.swift:948-1005); JS delete {idToken}
    # (core/user/user_impl.ts:206-220).
    assert sent_body(client.log[0]) == sdk.pick(apple={"idToken": token, "localId": uid}, js={"idToken": token})
    assert admin.lookup_users(tenant_id, [uid]) == []

    # Another device's session ends with the account, and the SDK signs it out.
    with pytest.raises(SdkError) as caught:
        device.reload()
    expect(caught, "USER_NOT_FOUND", "TOKEN_EXPIRED", signed_out=True)


# --------------------------------------------------------------------------------------
# Error strings the SDKs map
# --------------------------------------------------------------------------------------

def test_sign_up_and_sign_in_errors(stack, make_tenant, sdk):
    tenant_id = user_tenant(make_tenant)
    email = new_email(f"{sdk.id}-errors")
    sdk(stack, tenant_id).create_user(email, PASSWORD)

    with pytest.raises(SdkError) as caught:
        sdk(stack, tenant_id).create_user(email, PASSWORD)
    expect(caught, "EMAIL_EXISTS")

    with pytest.raises(SdkError) as caught:
        sdk(stack, tenant_id).sign_in(email, "not the password")
    expect(caught, "INVALID_LOGIN_CREDENTIALS", "INVALID_PASSWORD")

    with pytest.raises(SdkError) as caught:
        sdk(stack, tenant_id).create_user(new_email(f"{sdk.id}-weak"), "123")
    error = expect(caught, "WEAK_PASSWORD")
    # Apple's weakPasswordError(serverResponseReason:) carries the detail (Backend/AuthBackend.swift:359-360);
    # JS shows the detail after ' : ' as the message (api/index.ts:240-241).
    assert " : " in error.message and error.detail, f"WEAK_PASSWORD without ' : <reason>': {error}"

    with pytest.raises(SdkError) as caught:
        sdk(stack, tenant_id).create_user("not-an-address", PASSWORD)
    expect(caught, "INVALID_EMAIL")

    # Linking a taken address to an anonymous user: email already in use, the user stays signed in and anonymous.
    anonymous = sdk(stack, tenant_id)
    anonymous.sign_in_anonymously()
    with pytest.raises(SdkError) as caught:
        anonymous.link_email_password(email, PASSWORD)
    expect(caught, "EMAIL_EXISTS", signed_out=False)
    assert anonymous.user is not None and anonymous.reload().is_anonymous

    # Switches: password sign-up off, anonymous off, email link off.
    closed = make_tenant(allowPasswordSignup=False, enableAnonymousUser=False)["tenantId"]
    with pytest.raises(SdkError) as caught:
        sdk(stack, closed).create_user(new_email(f"{sdk.id}-closed"), PASSWORD)
    expect(caught, "OPERATION_NOT_ALLOWED")
    with pytest.raises(SdkError) as caught:
        sdk(stack, closed).sign_in(new_email(f"{sdk.id}-closed"), PASSWORD)
    expect(caught, "PASSWORD_LOGIN_DISABLED", "OPERATION_NOT_ALLOWED")
    with pytest.raises(SdkError) as caught:
        sdk(stack, closed).sign_in_anonymously()
    expect(caught, "ADMIN_ONLY_OPERATION", "OPERATION_NOT_ALLOWED")
    with pytest.raises(SdkError) as caught:
        sdk(stack, closed).send_sign_in_link(new_email(f"{sdk.id}-closed"), ActionCodeSettings(
            url=CONTINUE_URL, handle_code_in_app=True))
    expect(caught, "OPERATION_NOT_ALLOWED")

    with pytest.raises(SdkError) as caught:
        sdk(stack, tenant_id).apply_action_code("garbage")
    expect(caught, "INVALID_OOB_CODE")


def test_disabled_user_is_refused_and_signed_out(stack, admin, make_tenant, sdk):
    """A disabled user: sign-in refused; the refresh of a session, the one that signed up as the one that signed
    in, refused, and the SDK signs it out (User/User.swift:1664-1674; core/user/invalidation.ts:44-49)."""
    tenant_id = user_tenant(make_tenant)
    email = new_email(f"{sdk.id}-disabled")
    device = sdk(stack, tenant_id)
    device.create_user(email, PASSWORD)
    signed_in = sdk(stack, tenant_id)
    signed_in.sign_in(email, PASSWORD)
    resp = admin.request("POST", admin.accounts_path(tenant_id, "update"),
                         json={"localId": device.user.uid, "disableUser": True})
    expect_ok(resp)

    with pytest.raises(SdkError) as caught:
        sdk(stack, tenant_id).sign_in(email, PASSWORD)
    expect(caught, "USER_DISABLED")
    for session in (device, signed_in):
        with pytest.raises(SdkError) as caught:
            session.get_id_token(True)
        expect(caught, "USER_DISABLED", signed_out=True)
        assert session.user is None


def test_recent_login_required_and_revoked_tokens(stack, make_tenant, sdk):
    """CREDENTIAL_TOO_OLD_LOGIN_AGAIN after the re-auth window (3 s in the test stack), then TOKEN_EXPIRED for a
    device whose tokens a password change on another device revoked."""
    tenant_id = user_tenant(make_tenant)
    email = new_email(f"{sdk.id}-recent")
    old = sdk(stack, tenant_id)
    old.create_user(email, PASSWORD)
    wait_past_reauth_window(stack, old.user.id_token)

    with pytest.raises(SdkError) as caught:
        old.update_password("sdk password 2")
    expect(caught, "CREDENTIAL_TOO_OLD_LOGIN_AGAIN", signed_out=False)
    with pytest.raises(SdkError) as caught:
        old.delete()
    expect(caught, "CREDENTIAL_TOO_OLD_LOGIN_AGAIN", signed_out=False)
    assert old.user is not None, "requiresRecentLogin keeps the user signed in"
    # A profile change is not sensitive.
    old.update_profile(display_name="Still here")

    fresh = sdk(stack, tenant_id)
    fresh.sign_in(email, PASSWORD)
    fresh.update_password("sdk password 2")
    assert fresh.reload().uid == old.user.uid

    with pytest.raises(SdkError) as caught:
        old.reload()
    expect(caught, "TOKEN_EXPIRED", signed_out=True)
    assert old.user is None


# --------------------------------------------------------------------------------------
# v2, project config
# --------------------------------------------------------------------------------------

def test_recaptcha_config_and_revoke_token(stack, make_tenant, sdk):
    tenant_id = user_tenant(make_tenant)
    client = sdk(stack, tenant_id)
    config = client.initialize_recaptcha_config()
    request = client.log[-1].request
    assert request.method == "GET" and request.headers["Content-Type"] == "application/json"
    assert request.url == f"{stack.url}/identitytoolkit.googleapis.com/v2/recaptchaConfig?" + sdk.pick(
        apple=f"key={stack.api_key}&clientType=CLIENT_TYPE_IOS&version=RECAPTCHA_ENTERPRISE&tenantId={tenant_id}",
        js=f"clientType=CLIENT_TYPE_WEB&version=RECAPTCHA_ENTERPRISE&tenantId={tenant_id}&key={stack.api_key}")
    states = {s["provider"]: s["enforcementState"] for s in config["recaptchaEnforcementState"]}
    assert set(states.values()) <= {"OFF"}, f"a project without reCAPTCHA: every provider OFF: {config}"
    # Default scope too.
    sdk(stack).initialize_recaptcha_config()

    # With every provider OFF the SDK sends password calls without reCAPTCHA fields, and they succeed.
    client.create_user(new_email(f"{sdk.id}-recaptcha"), PASSWORD)
    assert "captchaResponse" not in sent_body(client.log[-2])

    # Apple Auth.revokeToken(withAuthorizationCode:): tokenType "3", no tenantId; JS Auth.revokeAccessToken:
    # tokenType ACCESS_TOKEN and the tenantId; both v2 accounts:revokeToken.
    token = sdk.pick(apple="c0de.from.apple", js="apple-access-token")
    client.clear_log()
    assert client.revoke_token(token) == {}
    assert client.log[0].request.url == (f"{stack.url}/identitytoolkit.googleapis.com/v2/accounts:revokeToken"
                                         f"?key={stack.api_key}")
    assert sent_body(client.log[0]) == sdk.pick(
        apple={"providerId": "apple.com", "tokenType": "3", "token": token, "idToken": client.user.id_token},
        js={"providerId": "apple.com", "tokenType": "ACCESS_TOKEN", "token": token, "idToken": client.user.id_token,
            "tenantId": tenant_id})
    client.user.id_token = "not-a-token"
    with pytest.raises(SdkError) as caught:
        client.revoke_token(token)
    expect(caught, "INVALID_ID_TOKEN")


def test_project_config(stack, sdk):
    """Apple GetProjectConfigRequest (GET getProjectConfig), JS GET /v1/projects
    (api/project_config/get_project_config.ts); both only outside emulator mode (AuthWebUtils; origin
    validation)."""
    client = sdk(stack)
    config = client.get_project_config()
    assert client.log[-1].request.method == "GET" and client.log[-1].request.body is None
    # The SDKs never read projectId; production and the emulator answer the project number, the contract says
    # the project id: either is a string.
    assert config["projectId"] == stack.project_id or config["projectId"].isdigit(), config
    assert "localhost" in config["authorizedDomains"], config


# --------------------------------------------------------------------------------------
# Apple only
# --------------------------------------------------------------------------------------

def test_apple_debug_json_escapes_slashes_and_the_bare_v3_prefix(stack, make_tenant):
    """Apple only: DEBUG builds pretty-print the JSON with `\\/` escapes (tolerated), and the v3 rpcs are served
    without the Google host prefix too."""
    tenant_id = user_tenant(make_tenant)
    apple = AppleSDK(stack, tenant_id, language_code="it", app_check_token="app-check-placeholder")
    apple.sign_in_anonymously()
    assert b" : " in apple.log[0].request.body, "DEBUG builds pretty-print (Backend/AuthBackend.swift:180-184)"

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


def test_apple_fetch_sign_in_methods_without_enumeration_protection(stack, admin, make_tenant, mail_sink):
    """Apple only: createAuthUri's signinMethods as Auth.fetchSignInMethods(forEmail:) returns them; the setting
    is project-wide, so this test puts it back."""
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


def test_apple_delete_account_local_id_is_not_a_privilege(stack, admin, make_tenant):
    """Apple only: deleteAccount sends a localId beside the idToken (User/User.swift:948-1005); another user's
    id deletes nobody else."""
    tenant_id = user_tenant(make_tenant)
    victim = AppleSDK(stack, tenant_id)
    victim.create_user(new_email("apple-victim"), PASSWORD)
    attacker = AppleSDK(stack, tenant_id)
    attacker.create_user(new_email("apple-attacker"), PASSWORD)
    try:
        attacker.rpc("deleteAccount", {"idToken": attacker.user.id_token, "localId": victim.user.uid})
    except SdkError:
        pass
    assert len(admin.lookup_users(tenant_id, [victim.user.uid])) == 1, "deleteAccount deleted the localId's user"


def test_apple_project_config_also_as_a_post_and_on_v1(stack):
    """Apple only: getProjectConfig also as a POST (contract §1), and the same answer as GET /v1/projects."""
    apple = AppleSDK(stack)
    config = apple.get_project_config()
    posted = apple.rpc("getProjectConfig", {})
    assert posted == config
    resp = apple.http.get(f"{stack.url}/identitytoolkit.googleapis.com/v1/projects?key={stack.api_key}",
                          headers=apple.headers())
    assert resp.status_code == 200 and resp.json() == config, describe(resp)


@pytest.mark.parametrize("rpc", ["signOutUser", "verifyClient", "signInWithGameCenter"])
def test_apple_out_of_scope_rpcs_answer_501(stack, rpc):
    """Apple only: the v3 rpcs Tessera leaves out."""
    apple = AppleSDK(stack)
    resp = apple.http.post(apple.v3_url(rpc), data=apple.encode({"clientType": "CLIENT_TYPE_IOS"}),
                           headers=apple.headers())
    assert resp.status_code == 501, describe(resp)
    message, error = check_error_envelope(resp)
    assert message == f"NOT_IMPLEMENTED : {rpc} is not implemented in Tessera.", describe(resp)
    assert error.get("status") == "NOT_IMPLEMENTED", describe(resp)
    # Unknown to the SDK's table: internalError carrying the message (Backend/AuthBackend.swift:299-306).
    assert apple_error_for(message, error) == "internalError"


def test_apple_unknown_v3_rpc_is_not_found(stack):
    """Apple only."""
    apple = AppleSDK(stack)
    resp = apple.http.post(apple.v3_url("noSuchRpc"), data=apple.encode({}), headers=apple.headers())
    assert resp.status_code == 404, describe(resp)
    # Google's own 404 body ("Not Found", status NOT_FOUND), as the emulator answers
    # (docs/protocol/README.md#errors): JSON, so the SDK reports an error rather than failing to decode.
    error = resp.json()["error"]
    assert error["code"] == 404 and error.get("status") == "NOT_FOUND", describe(resp)


# --------------------------------------------------------------------------------------
# JS only
# --------------------------------------------------------------------------------------

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


@pytest.mark.parametrize("method,host,endpoint", JS_ENDPOINTS, ids=[e[2] for e in JS_ENDPOINTS])
def test_js_cors_preflight_allows_every_header_the_sdk_sends(stack, method, host, endpoint):
    """JS only: the browser's preflight before each of the SDK's requests."""
    js = JsSDK(stack)
    resp = js.preflight(endpoint, method, JS_REQUEST_HEADERS, host=host)
    # Another page origin is reflected as well (or allowed by *).
    other = JsSDK(stack, origin="https://app.example.org").preflight(endpoint, method, JS_REQUEST_HEADERS, host=host)
    assert other.headers.get("Access-Control-Allow-Origin") in ("https://app.example.org", "*")
    if resp.headers.get("Access-Control-Allow-Origin") not in (None, "*"):
        assert "origin" in resp.headers.get("Vary", "").lower(), \
            f"a reflected Access-Control-Allow-Origin needs Vary: Origin for caches: {dict(resp.headers)}"


def test_js_cors_preflight_allows_authorization_and_api_key_headers(stack):
    """JS only. Contract §3: Authorization and X-Goog-Api-Key are allowed too (case-insensitive)."""
    js = JsSDK(stack)
    js.preflight("/v1/accounts:lookup", "POST", ("Authorization", "X-Goog-Api-Key", "Content-Type"))
    js.preflight("/v2/passwordPolicy", "GET", ("x-goog-api-key", "x-client-version"))


def test_js_errors_are_readable_cross_origin(stack, make_tenant):
    """JS only: an error answer reaches the page too (JsSDK checks Access-Control-Allow-Origin on every
    answer)."""
    tenant_id = user_tenant(make_tenant)
    js = JsSDK(stack, tenant_id, language_code="fr", app_check_token="app-check-placeholder")
    with pytest.raises(SdkError) as caught:
        js.api("POST", "/v1/accounts:lookup", {"idToken": "garbage"})
    caught.value.expect("INVALID_ID_TOKEN", sdk="auth/invalid-user-token")
    # So is a 404.
    resp = js.http.post(js.url("/v1/accounts:noSuchThing"), headers=js.headers(), data=b"{}")
    assert resp.headers.get("Access-Control-Allow-Origin") in (JS_ORIGIN, "*"), dict(resp.headers)


def test_js_update_profile_keeps_what_null_leaves_alone(stack, make_tenant):
    """JS only: updateProfile sends JSON nulls (core/user/account_info.ts:33-57): null means no change
    (docs/protocol/sdks.md#what-the-sdks-depend-on), and the answer echoes the stored values, which JS copies to
    the user (account_info.ts:64-65)."""
    tenant_id = user_tenant(make_tenant)
    js = JsSDK(stack, tenant_id)
    js.create_user(new_email("js-profile"), PASSWORD)
    assert js.calls == ["signUp", "lookup"]

    js.clear_log()
    data = js.update_profile(display_name="Grace", photo_url="https://img.example/grace.png")
    assert js.calls == ["update"], "updateProfile makes one call"
    assert sent_body(js.log[0]) == {"idToken": js.user.id_token, "displayName": "Grace",
                                    "photoUrl": "https://img.example/grace.png", "returnSecureToken": True}
    js_UpdateProfileResponse(data, display_name="Grace", photo_url="https://img.example/grace.png")

    data = js.update_profile(display_name=None, photo_url="https://img.example/grace-2.png")
    assert sent_body(js.log[-1])["displayName"] is None, "the null goes out as JSON null"
    js_UpdateProfileResponse(data, display_name="Grace", photo_url="https://img.example/grace-2.png")
    assert js.user.display_name == "Grace"
    data = js.update_profile(display_name="Grace H", photo_url=None)
    js_UpdateProfileResponse(data, display_name="Grace H", photo_url="https://img.example/grace-2.png")
    user = js.reload()
    assert user.display_name == "Grace H" and user.photo_url == "https://img.example/grace-2.png"


def test_js_email_change_is_announced_and_recoverable(stack, make_tenant, mail_sink):
    """JS only: updateEmail mails the old address a RECOVER_EMAIL link (issue 36, the emulator's
    setAccountInfo:155/253); checkActionCode names the address to restore (`email`, JS's `data.email`) and the
    one it replaces (`newEmail`, JS's `data.previousEmail`); applyActionCode restores it and signs every session
    out."""
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


def test_js_password_change_right_after_sign_in_keeps_the_session(stack, make_tenant):
    """JS only: updatePassword stores the answer's tokens only when its ID token differs from the current one
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


def test_js_validate_password_fetches_the_policy_once(stack, make_tenant):
    """JS only: validatePassword: GET /v2/passwordPolicy once, schema version 1, validated locally."""
    tenant_id = user_tenant(make_tenant)
    js = JsSDK(stack, tenant_id)
    assert js.validate_password("12345")["isValid"] is False
    assert js.validate_password("123456")["isValid"] is True
    assert js.calls.count("passwordPolicy") == 1
    JsSDK(stack).validate_password("a password")
