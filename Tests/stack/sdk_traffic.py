"""The Firebase client SDKs' HTTP traffic, reproduced, and their response decoders, checked.

``AppleSDK`` (firebase-ios-sdk 12.19.0, ``Auth.auth().useEmulator``) and ``JsSDK`` (@firebase/auth 1.13.5 /
firebase 12.18.0, ``connectAuthEmulator``) expose the SDKs' public calls (``sign_in_anonymously``,
``link_email_password``, ``commit_profile_changes`` / ``update_profile``, ...), and the same call under one
name where the SDKs name it differently (``update_profile``, ``send_password_reset``, ``send_sign_in_link``,
``fetch_sign_in_methods``, ``revoke_token``, ``get_project_config``) for the conformance suite that runs the
same scenarios on both (test_sdk_conformance.py). Each issues the request
sequence the SDK issues — same URLs, methods, headers and bodies (docs/protocol/sdks.md#the-apple-sdk, #the-js-sdk) — keeps the signed-in
user the way the SDK does, and runs every answer through a check of what the SDK's decoder reads: one function
per response type, named after the SDK's class (``apple_GetAccountInfoResponse``, ``js_IdTokenResponse``, ...),
so a broken field fails one clear assertion that names the SDK source it breaks.

Errors the server answers are checked for the envelope both SDKs parse and raised as :class:`SdkError`, which
carries the server's code and the SDK error the source maps it to (``emailAlreadyInUse``,
``auth/email-already-in-use``), and whether the SDK signed its user out.

Sources (paraphrased, never copied; paths are relative to the repositories):
  Apple  firebase/firebase-ios-sdk @ eed63a35  FirebaseAuth/Sources/Swift/...
  JS     firebase/firebase-js-sdk  @ 6f865964  packages/auth/src/...
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import struct
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable
from urllib.parse import parse_qsl, quote, urlencode, urlparse

import jwt
import requests

from conftest import HTTP_TIMEOUT, describe

UNSET: Any = object()  # "argument not given" where None means JSON null / nil

APPLE_VERSION = "12.19.0"
JS_VERSION = "12.18.0"
BUNDLE_ID = "dev.tessera.sdk-conformance"
APPLE_GMPID = "1:123456789012:ios:0a1b2c3d4e5f60718293a4"
JS_GMPID = "1:123456789012:web:0a1b2c3d4e5f60718293a4"
# An opaque heartbeat payload (FirebaseCore's X-Firebase-Client); servers must ignore it.
HEARTBEAT = "H4sIAAAAAAAAAKtWykhNLCpJSk0sKVayUoouVsrMS8tXqgUAX9lUqBwAAAA"
JS_ORIGIN = "http://localhost:5173"
CHROME_UA = ("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
             "Chrome/131.0.0.0 Safari/537.36")
# Every header the JS SDK may put on a request (api/index.ts:47-54 HttpHeader; core/auth/auth_impl.ts:831-858),
# as a browser lists them in Access-Control-Request-Headers: lower case, sorted.
JS_REQUEST_HEADERS = ("content-type", "x-client-version", "x-firebase-appcheck", "x-firebase-client",
                      "x-firebase-gmpid", "x-firebase-locale")
CUSTOM_TOKEN_AUDIENCE = ("https://identitytoolkit.googleapis.com/google.identity.identitytoolkit.v1."
                         "IdentityToolkit")

SIGNUP_KIND = "identitytoolkit#SignupNewUserResponse"


# ======================================================================================
# Errors
# ======================================================================================

# Server code -> Apple AuthErrorCode case (Backend/AuthBackend.swift:320-457, clientError(withServerErrorMessage:)).
# Codes not listed become internalError (AuthBackend.swift:299-306), except errors[].reason keyInvalid* /
# ipRefererBlocked (AuthBackend.swift:458-470).
APPLE_ERRORS = {
    "USER_NOT_FOUND": "userNotFound", "MISSING_CONTINUE_URI": "missingContinueURI",
    "INVALID_IDENTIFIER": "invalidEmail", "INVALID_ID_TOKEN": "invalidUserToken",
    "CREDENTIAL_TOO_OLD_LOGIN_AGAIN": "requiresRecentLogin", "EMAIL_EXISTS": "emailAlreadyInUse",
    "OPERATION_NOT_ALLOWED": "operationNotAllowed", "PASSWORD_LOGIN_DISABLED": "operationNotAllowed",
    "USER_DISABLED": "userDisabled", "INVALID_EMAIL": "invalidEmail", "EXPIRED_OOB_CODE": "expiredActionCode",
    "INVALID_OOB_CODE": "invalidActionCode", "INVALID_MESSAGE_PAYLOAD": "invalidMessagePayload",
    "INVALID_SENDER": "invalidSender", "INVALID_RECIPIENT_EMAIL": "invalidRecipientEmail",
    "WEAK_PASSWORD": "weakPassword", "TOO_MANY_ATTEMPTS_TRY_LATER": "tooManyRequests",
    "EMAIL_NOT_FOUND": "userNotFound", "MISSING_EMAIL": "missingEmail", "MISSING_IOS_BUNDLE_ID": "missingIosBundleID",
    "MISSING_ANDROID_PACKAGE_NAME": "missingAndroidPackageName", "UNAUTHORIZED_DOMAIN": "unauthorizedDomain",
    "INVALID_CONTINUE_URI": "invalidContinueURI", "INVALID_PASSWORD": "wrongPassword",
    "INVALID_IDP_RESPONSE": "invalidCredential", "INVALID_PENDING_TOKEN": "invalidCredential",
    "INVALID_LOGIN_CREDENTIALS": "invalidCredential", "INVALID_CUSTOM_TOKEN": "invalidCustomToken",
    "CREDENTIAL_MISMATCH": "customTokenMismatch", "INVALID_PHONE_NUMBER": "invalidPhoneNumber",
    "QUOTA_EXCEEDED": "quotaExceeded", "APP_NOT_VERIFIED": "appNotVerified",
    "CAPTCHA_CHECK_FAILED": "captchaCheckFailed", "INVALID_APP_CREDENTIAL": "invalidAppCredential",
    "MISSING_APP_CREDENTIAL": "missingAppCredential", "INVALID_CODE": "invalidVerificationCode",
    "INVALID_HOSTING_LINK_DOMAIN": "invalidHostingLinkDomain", "INVALID_SESSION_INFO": "invalidVerificationID",
    "SESSION_EXPIRED": "sessionExpired", "ADMIN_ONLY_OPERATION": "adminRestrictedOperation",
    "BLOCKING_FUNCTION_ERROR_RESPONSE": "blockingCloudFunctionError",
    "EMAIL_CHANGE_NEEDS_VERIFICATION": "emailChangeNeedsVerification",
    "INVALID_MFA_PENDING_CREDENTIAL": "invalidMultiFactorSession", "INVALID_PROVIDER_ID": "invalidProviderID",
    "MFA_ENROLLMENT_NOT_FOUND": "multiFactorInfoNotFound", "MISSING_CLIENT_IDENTIFIER": "missingClientIdentifier",
    "MISSING_IOS_APP_TOKEN": "missingAppToken", "MISSING_MFA_ENROLLMENT_ID": "missingMultiFactorInfo",
    "MISSING_MFA_PENDING_CREDENTIAL": "missingMultiFactorSession",
    "MISSING_OR_INVALID_NONCE": "missingOrInvalidNonce",
    "PASSWORD_DOES_NOT_MEET_REQUIREMENTS": "passwordDoesNotMeetRequirements",
    "SECOND_FACTOR_EXISTS": "secondFactorAlreadyEnrolled",
    "SECOND_FACTOR_LIMIT_EXCEEDED": "maximumSecondFactorCountExceeded", "TENANT_ID_MISMATCH": "tenantIDMismatch",
    "TOKEN_EXPIRED": "userTokenExpired", "UNSUPPORTED_FIRST_FACTOR": "unsupportedFirstFactor",
    "UNSUPPORTED_TENANT_OPERATION": "unsupportedTenantOperation", "UNVERIFIED_EMAIL": "unverifiedEmail",
    "FEDERATED_USER_ID_ALREADY_LINKED": "credentialAlreadyInUse",
}
# Errors after which the Apple SDK signs its user out (User/User.swift:1664-1674 signOutIfTokenIsInvalid).
APPLE_SIGN_OUT = {"userNotFound", "userDisabled", "invalidUserToken", "userTokenExpired"}

# Server code -> JS error (api/errors.ts:134-236 SERVER_ERROR_MAP, values from core/errors.ts). Three codes are
# special-cased before the map (api/index.ts:224-234); anything else becomes auth/<code lower-cased, _ -> ->
# (api/index.ts:235-239).
JS_ERRORS = {
    "CREDENTIAL_MISMATCH": "custom-token-mismatch", "MISSING_CUSTOM_TOKEN": "internal-error",
    "INVALID_IDENTIFIER": "invalid-email", "MISSING_CONTINUE_URI": "internal-error",
    "INVALID_PASSWORD": "wrong-password", "MISSING_PASSWORD": "missing-password",
    "INVALID_LOGIN_CREDENTIALS": "invalid-credential", "EMAIL_EXISTS": "email-already-in-use",
    "PASSWORD_LOGIN_DISABLED": "operation-not-allowed", "INVALID_IDP_RESPONSE": "invalid-credential",
    "INVALID_PENDING_TOKEN": "invalid-credential", "FEDERATED_USER_ID_ALREADY_LINKED": "credential-already-in-use",
    "MISSING_REQ_TYPE": "internal-error", "EMAIL_NOT_FOUND": "user-not-found",
    "RESET_PASSWORD_EXCEED_LIMIT": "too-many-requests", "EXPIRED_OOB_CODE": "expired-action-code",
    "INVALID_OOB_CODE": "invalid-action-code", "MISSING_OOB_CODE": "internal-error",
    "CREDENTIAL_TOO_OLD_LOGIN_AGAIN": "requires-recent-login", "INVALID_ID_TOKEN": "invalid-user-token",
    "TOKEN_EXPIRED": "user-token-expired", "USER_NOT_FOUND": "user-token-expired",
    "TOO_MANY_ATTEMPTS_TRY_LATER": "too-many-requests",
    "PASSWORD_DOES_NOT_MEET_REQUIREMENTS": "password-does-not-meet-requirements",
    "INVALID_CODE": "invalid-verification-code", "INVALID_SESSION_INFO": "invalid-verification-id",
    "INVALID_TEMPORARY_PROOF": "invalid-credential", "MISSING_SESSION_INFO": "missing-verification-id",
    "SESSION_EXPIRED": "code-expired", "MISSING_ANDROID_PACKAGE_NAME": "missing-android-pkg-name",
    "UNAUTHORIZED_DOMAIN": "unauthorized-continue-uri", "INVALID_OAUTH_CLIENT_ID": "invalid-oauth-client-id",
    "ADMIN_ONLY_OPERATION": "admin-restricted-operation",
    "INVALID_MFA_PENDING_CREDENTIAL": "invalid-multi-factor-session",
    "MFA_ENROLLMENT_NOT_FOUND": "multi-factor-info-not-found", "MISSING_MFA_ENROLLMENT_ID": "missing-multi-factor-info",
    "MISSING_MFA_PENDING_CREDENTIAL": "missing-multi-factor-session",
    "SECOND_FACTOR_EXISTS": "second-factor-already-in-use",
    "SECOND_FACTOR_LIMIT_EXCEEDED": "maximum-second-factor-count-exceeded",
    "BLOCKING_FUNCTION_ERROR_RESPONSE": "internal-error", "RECAPTCHA_NOT_ENABLED": "recaptcha-not-enabled",
    "MISSING_RECAPTCHA_TOKEN": "missing-recaptcha-token", "INVALID_RECAPTCHA_TOKEN": "invalid-recaptcha-token",
    "INVALID_RECAPTCHA_ACTION": "invalid-recaptcha-action", "MISSING_CLIENT_TYPE": "missing-client-type",
    "MISSING_RECAPTCHA_VERSION": "missing-recaptcha-version", "INVALID_RECAPTCHA_VERSION": "invalid-recaptcha-version",
    "INVALID_REQ_TYPE": "invalid-req-type",
}
JS_SPECIAL = {"FEDERATED_USER_ID_ALREADY_LINKED": "credential-already-in-use",
              "EMAIL_EXISTS": "email-already-in-use", "USER_DISABLED": "user-disabled"}
# Errors after which the JS SDK signs its user out (core/user/invalidation.ts:44-49).
JS_SIGN_OUT = {"auth/user-disabled", "auth/user-token-expired"}

ERROR_MESSAGE = re.compile(r"^(?P<code>[A-Z][A-Z0-9_]*)(?: : (?P<detail>\S.*))?$", re.S)


def apple_error_for(message: str, error: dict) -> str:
    """The AuthErrorCode name the Apple SDK makes of ``error.message``: split at the first colon, both halves
    trimmed (AuthBackend.swift:309-318), the left one looked up (AuthBackend.swift:325-457)."""
    code = message.split(":", 1)[0].strip()
    if code in APPLE_ERRORS:
        return APPLE_ERRORS[code]
    for entry in error.get("errors") or []:
        reason = entry.get("reason", "") if isinstance(entry, dict) else ""
        if reason.startswith("keyInvalid"):
            return "invalidAPIKey"
        if reason == "ipRefererBlocked":
            return "appNotAuthorized"
    return "internalError"


def js_error_for(message: str) -> str:
    """The auth/... code the JS SDK makes of a message: split on ' : ' (api/index.ts:223), special codes first
    (api/index.ts:224-234), then SERVER_ERROR_MAP, else the code in kebab case (api/index.ts:235-239)."""
    code = message.split(" : ")[0]
    if code in JS_SPECIAL:
        return "auth/" + JS_SPECIAL[code]
    if code in JS_ERRORS:
        return "auth/" + JS_ERRORS[code]
    return "auth/" + re.sub(r"[_\s]+", "-", code.lower())


class SdkError(Exception):
    """A server error as an SDK surfaces it (the envelope has been checked already)."""

    def __init__(self, sdk: str, call: str, response: requests.Response, message: str, sdk_code: str):
        self.sdk, self.call, self.response, self.message = sdk, call, response, message
        match = ERROR_MESSAGE.match(message)
        self.server_code = match.group("code") if match else message
        self.detail = (match.group("detail") if match else None) or ""
        self.sdk_code = sdk_code
        self.signed_out = False
        super().__init__(f"{sdk} {call}: {message!r} -> {sdk_code}; {describe(response)}")

    def expect(self, *server_codes: str, sdk: str | tuple[str, ...], signed_out: bool | None = None) -> "SdkError":
        """Asserts the server code is one of ``server_codes`` and the SDK error is ``sdk`` (or one of them)."""
        assert self.server_code in server_codes, f"expected {' or '.join(server_codes)}: {self}"
        wanted = (sdk,) if isinstance(sdk, str) else sdk
        assert self.sdk_code in wanted, f"the SDK maps {self.server_code} to {self.sdk_code}, not {wanted}: {self}"
        if signed_out is not None:
            assert self.signed_out is signed_out, f"signed_out is {self.signed_out}, expected {signed_out}: {self}"
        return self


def check_error_envelope(resp: requests.Response) -> tuple[str, dict]:
    """The error body both SDKs parse: ``{"error":{"code":<HTTP status>,"message":"CODE" or "CODE : detail",
    "errors":[{...strings...}]}}``. Returns (message, error)."""
    ctx = describe(resp)
    assert resp.status_code >= 400, f"not an error status: {ctx}"
    # Every answer, errors included, is JSON: JS calls response.json() unconditionally (api/index.ts:214) and
    # Apple turns an undecodable body into internalError (Backend/AuthBackend.swift:215-233).
    try:
        data = resp.json()
    except ValueError:
        raise AssertionError(f"error body is not JSON: {ctx}") from None
    assert isinstance(data, dict) and isinstance(data.get("error"), dict), f"no error object: {ctx}"
    error = data["error"]
    assert error.get("code") == resp.status_code and type(error.get("code")) is int, \
        f"error.code must be the HTTP status as a number: {ctx}"
    message = error.get("message")
    # JS reads json.error.message and splits it (api/index.ts:222-223); Apple reads errorDictionary["message"]
    # as? String (Backend/AuthBackend.swift:287-288).
    assert isinstance(message, str) and message, f"error.message must be a non-empty string: {ctx}"
    assert ERROR_MESSAGE.match(message), \
        f"error.message must be CODE or 'CODE : detail' (JS splits on ' : ', Apple at the first colon): {ctx}"
    errors = error.get("errors")
    if errors is not None:
        # Apple casts errors to [[String: String]] (Backend/AuthBackend.swift:459).
        assert isinstance(errors, list) and all(
            isinstance(e, dict) and all(isinstance(v, str) for v in e.values()) for e in errors), \
            f"error.errors must be a list of objects of strings: {ctx}"
    apple_code = message.split(":", 1)[0].strip()
    js_code = message.split(" : ")[0]
    assert apple_code == js_code, f"Apple reads code {apple_code!r}, JS reads {js_code!r}: {ctx}"
    return message, error


# ======================================================================================
# Field checks shared by the decoders
# ======================================================================================

def _ctx(kind: str, data: Any) -> str:
    text = json.dumps(data)[:700] if not isinstance(data, str) else data[:700]
    return f"{kind} {text}"


def _str(data: dict, key: str, kind: str, source: str, *, required: bool = True, nonempty: bool = True) -> Any:
    value = data.get(key)
    if value is None and not required:
        assert key not in data, \
            f"{kind}: {key} is JSON null; the SDK reads it `as? String` ({source}): {_ctx(kind, data)}"
        return None
    assert isinstance(value, str), f"{kind}: {key} must be a string ({source}): {_ctx(kind, data)}"
    if nonempty:
        assert value, f"{kind}: {key} must not be empty ({source}): {_ctx(kind, data)}"
    return value


def _bool(data: dict, key: str, kind: str, source: str, *, required: bool = False) -> Any:
    if key not in data and not required:
        return None
    value = data.get(key)
    assert isinstance(value, bool), f"{kind}: {key} must be a JSON boolean ({source}): {_ctx(kind, data)}"
    return value


def _seconds(data: dict, key: str, kind: str, source: str) -> int:
    """``expiresIn`` / ``expires_in``: a string of seconds above 300 (Apple reads `as? String` and refreshes
    before every call when the lifetime is 5 minutes or less, SystemService/SecureTokenService.swift:18, 116; JS
    uses Number(), core/user/token_manager.ts:65-68)."""
    value = data.get(key)
    assert isinstance(value, str) and value.isdigit(), \
        f"{kind}: {key} must be a string of seconds ({source}): {_ctx(kind, data)}"
    assert int(value) > 300, f"{kind}: {key}={value} is 5 minutes or less: the Apple SDK would refresh before " \
                             f"every call ({source}): {_ctx(kind, data)}"
    return int(value)


def _millis(data: dict, key: str, kind: str, source: str) -> int:
    value = data.get(key)
    assert isinstance(value, str) and value.isdigit(), \
        f"{kind}: {key} must be a string of epoch milliseconds ({source}): {_ctx(kind, data)}"
    assert int(value) > 10 ** 12, f"{kind}: {key}={value} is not in milliseconds: {_ctx(kind, data)}"
    return int(value)


def _absent(data: dict, kind: str, *keys: str) -> None:
    """Keys whose mere presence is an outcome: JS `'needConfirmation' in json` (api/index.ts:215),
    `'errorMessage' in json` (api/index.ts:219), `'mfaPendingCredential' in serverResponse` (api/index.ts:271);
    Apple: needConfirmation (Auth/Auth.swift:2101), errorMessage (Backend/AuthBackend.swift:259-272), mfaInfo
    without idToken (Backend/AuthBackend.swift:114-141)."""
    for key in keys:
        assert key not in data, f"{kind}: key {key!r} present (an SDK reads its presence as an outcome): " \
                                f"{_ctx(kind, data)}"


OUTCOME_KEYS = ("needConfirmation", "mfaPendingCredential", "mfaInfo", "errorMessage")


def id_token_claims(token: str, *, provider: str | None = None, uid: str | None = None) -> dict:
    """The ID token as both SDKs decode it, unverified: three dot-separated parts, a base64url JSON payload
    with numeric exp/iat/auth_time (Apple JSONDecoder secondsSince1970 into Date, Auth/AuthTokenResult.swift:
    94-104, 151-162; JS `claims.exp && claims.auth_time && claims.iat`, core/user/id_token_result.ts:63-67) and a
    `firebase` object whose `sign_in_provider` is a string (Apple: non-optional, AuthTokenResult.swift:154)."""
    assert isinstance(token, str), f"ID token is not a string: {token!r}"
    parts = token.split(".")
    assert len(parts) == 3 and all(parts), f"ID token is not a 3-part JWT: {token[:80]}"
    try:
        payload = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except ValueError:
        raise AssertionError(f"ID token payload is not base64url JSON: {token[:80]}") from None
    assert isinstance(payload, dict), payload
    for claim in ("exp", "iat", "auth_time"):
        value = payload.get(claim)
        assert isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0, \
            f"JWT claim {claim} must be a positive number: {payload}"
    firebase = payload.get("firebase")
    assert isinstance(firebase, dict), f"JWT claim firebase must be an object: {payload}"
    assert isinstance(firebase.get("sign_in_provider"), str) and firebase["sign_in_provider"], \
        f"JWT firebase.sign_in_provider must be a string: {payload}"
    if "sign_in_second_factor" in firebase:
        assert isinstance(firebase["sign_in_second_factor"], str), payload
    assert payload.get("sub") and payload.get("sub") == payload.get("user_id"), f"sub must equal user_id: {payload}"
    if provider is not None:
        assert firebase["sign_in_provider"] == provider, \
            f"sign_in_provider is {firebase['sign_in_provider']!r}, expected {provider!r}: {payload}"
    if uid is not None:
        assert payload["sub"] == uid, f"token for {payload['sub']}, expected {uid}: {payload}"
    return payload


def _provider_user_info(entries: Any, kind: str, source: str) -> list[dict]:
    assert isinstance(entries, list), f"{kind}: providerUserInfo must be an array ({source}): {entries!r}"
    for entry in entries:
        assert isinstance(entry, dict), f"{kind}: providerUserInfo entry is not an object: {entries!r}"
        # Apple: fatalError on a missing providerId (User/UserInfoImpl.swift:28-31); uid = federatedId
        # (UserInfoImpl.swift:33). JS: uid = rawId (core/user/reload.ts:105-115).
        _str(entry, "providerId", kind + " providerUserInfo[]",
             "User/UserInfoImpl.swift:28-31; core/user/reload.ts:106")
        _str(entry, "federatedId", kind + " providerUserInfo[]", "User/UserInfoImpl.swift:33")
        _str(entry, "rawId", kind + " providerUserInfo[]", "core/user/reload.ts:109")
        for key in ("displayName", "photoUrl", "email", "phoneNumber"):
            _str(entry, key, kind + " providerUserInfo[]", "Backend/RPC/GetAccountInfoResponse.swift:43-55",
                 required=False, nonempty=False)
    return entries


def _user_record(user: Any, kind: str, *, password: bool | None = None) -> dict:
    """One `users[]` element as Apple (GetAccountInfoResponse.User, Backend/RPC/GetAccountInfoResponse.swift:
    96-135) and JS (core/user/reload.ts:41-72) read it."""
    assert isinstance(user, dict), f"{kind}: users[0] is not an object: {user!r}"
    _str(user, "localId", kind, "GetAccountInfoResponse.swift:103; reload.ts:62")
    for key in ("email", "displayName", "photoUrl", "phoneNumber", "tenantId"):
        _str(user, key, kind, "GetAccountInfoResponse.swift:104-110,128", required=False, nonempty=False)
    _bool(user, "emailVerified", kind, "GetAccountInfoResponse.swift:126 (`as? Bool`)")
    # createdAt / lastLoginAt `as? String` then Double(...) (GetAccountInfoResponse.swift:111-124).
    _millis(user, "createdAt", kind, "GetAccountInfoResponse.swift:111")
    _millis(user, "lastLoginAt", kind, "GetAccountInfoResponse.swift:118")
    if "passwordHash" in user:
        # A non-empty passwordHash is "has a password credential" (User/User.swift:1371).
        _str(user, "passwordHash", kind, "User/User.swift:1371")
    if "providerUserInfo" in user:
        _provider_user_info(user["providerUserInfo"], kind, "GetAccountInfoResponse.swift:97-102")
    providers = [p["providerId"] for p in user.get("providerUserInfo", [])]
    if user.get("passwordHash"):
        # docs/protocol/sdks.md#what-the-sdks-depend-on: a password user also lists a `password` provider
        # (Apple rebuilds providerData from the list, User/User.swift:1374-1385; JS keeps a linked anonymous
        # user anonymous without one, reload.ts:57-59).
        assert "password" in providers, f"{kind}: passwordHash without a `password` providerUserInfo entry " \
                                        f"(User.swift:1374-1385; core/user/reload.ts:57-59): {_ctx(kind, user)}"
    if password is True:
        # A password user: a non-empty passwordHash placeholder, else the Apple SDK thinks it has no password
        # credential (User/User.swift:1371) and offers to link one again.
        assert isinstance(user.get("passwordHash"), str) and user["passwordHash"], \
            f"{kind}: a password user needs a non-empty passwordHash (User/User.swift:1371): {_ctx(kind, user)}"
        assert "password" in providers, f"{kind}: a password user needs a `password` providerUserInfo entry " \
                                        f"(core/user/reload.ts:57-59): {_ctx(kind, user)}"
    elif password is False:
        assert not user.get("passwordHash"), f"{kind}: passwordHash for a user without a password " \
                                             f"(User/User.swift:1371): {_ctx(kind, user)}"
    if "mfaInfo" in user:
        assert isinstance(user["mfaInfo"], list), f"{kind}: mfaInfo must be an array: {_ctx(kind, user)}"
    return user


# ======================================================================================
# Apple decoders (Backend/RPC/*Response.swift, and what the call sites then require)
# ======================================================================================

def apple_SignUpNewUserResponse(data: dict, *, link: bool = False) -> dict:
    """Backend/RPC/SignUpNewUserResponse.swift:29-37. Sign-in: tokens missing -> invalidUserToken
    (User/User.swift:1093-1097); link: fatalError (User/User.swift:1492-1495)."""
    kind = "SignUpNewUserResponse"
    _str(data, "idToken", kind, "SignUpNewUserResponse.swift:30; User.swift:1492-1495 (link: crash)")
    _str(data, "refreshToken", kind, "SignUpNewUserResponse.swift:36; User.swift:1492-1495 (link: crash)")
    _seconds(data, "expiresIn", kind, "SignUpNewUserResponse.swift:31")
    _absent(data, kind, *OUTCOME_KEYS)
    id_token_claims(data["idToken"])
    return data


def apple_VerifyPasswordResponse(data: dict) -> dict:
    """Backend/RPC/VerifyPasswordResponse.swift:54-70; mfaInfo without idToken is a second-factor error
    (Backend/AuthBackend.swift:114-141)."""
    kind = "VerifyPasswordResponse"
    _str(data, "idToken", kind, "VerifyPasswordResponse.swift:58")
    _str(data, "refreshToken", kind, "VerifyPasswordResponse.swift:63")
    _seconds(data, "expiresIn", kind, "VerifyPasswordResponse.swift:59")
    for key in ("localId", "email", "displayName", "photoUrl"):
        _str(data, key, kind, "VerifyPasswordResponse.swift:55-64", required=False, nonempty=False)
    _absent(data, kind, *OUTCOME_KEYS)
    id_token_claims(data["idToken"], provider="password")
    return data


def apple_GetAccountInfoResponse(data: dict, *, password: bool | None = None) -> dict:
    """`users` must be an array of exactly one (Backend/RPC/GetAccountInfoResponse.swift:141-149, else
    unexpectedResponse -> internalError). ``password`` True/False: the user has / has no password. Returns
    that user."""
    kind = "GetAccountInfoResponse"
    users = data.get("users")
    assert isinstance(users, list), f"{kind}: users must be an array (GetAccountInfoResponse.swift:142): {data}"
    assert len(users) == 1, f"{kind}: users must have exactly one element (GetAccountInfoResponse.swift:145): {data}"
    return _user_record(users[0], kind, password=password)


def apple_SetAccountInfoResponse(data: dict, *, tokens: bool | None = None) -> dict:
    """Backend/RPC/SetAccountInfoResponse.swift:63-76: idToken+refreshToken replace the tokens
    (User/UserProfileUpdate.swift:103-112); ``tokens`` True/False requires/forbids them."""
    kind = "SetAccountInfoResponse"
    if tokens is True or "idToken" in data:
        _str(data, "idToken", kind, "SetAccountInfoResponse.swift:66")
        _str(data, "refreshToken", kind, "SetAccountInfoResponse.swift:71; UserProfileUpdate.swift:103-104")
        _seconds(data, "expiresIn", kind, "SetAccountInfoResponse.swift:67")
        id_token_claims(data["idToken"])
    if tokens is False:
        assert "idToken" not in data, f"{kind}: unexpected new tokens: {data}"
    for key in ("email", "displayName"):
        _str(data, key, kind, "SetAccountInfoResponse.swift:64-65", required=False, nonempty=False)
    if "providerUserInfo" in data:
        assert isinstance(data["providerUserInfo"], list), data
        for entry in data["providerUserInfo"]:
            _str(entry, "providerId", kind + " providerUserInfo[]", "SetAccountInfoResponse.swift:35")
    _absent(data, kind, *OUTCOME_KEYS)
    return data


def apple_VerifyAssertionResponse(data: dict, *, link: bool = False) -> dict:
    """Backend/RPC/VerifyAssertionResponse.swift:135-202. Sign-in needs a non-empty providerId
    (Auth/Auth.swift:2109-2111); link needs idToken, refreshToken and providerId (fatalError,
    User/UserProfileUpdate.swift:26-31)."""
    kind = "VerifyAssertionResponse"
    _absent(data, kind, *OUTCOME_KEYS)
    _str(data, "providerId", kind, "Auth.swift:2109; UserProfileUpdate.swift:29")
    _str(data, "idToken", kind, "VerifyAssertionResponse.swift:151; UserProfileUpdate.swift:27")
    _str(data, "refreshToken", kind, "VerifyAssertionResponse.swift:156; UserProfileUpdate.swift:28")
    _seconds(data, "expiresIn", kind, "VerifyAssertionResponse.swift:152")
    for key in ("federatedId", "localId", "email", "displayName", "photoUrl", "oauthIdToken", "oauthAccessToken",
                "oauthTokenSecret", "pendingToken", "username", "firstName", "lastName", "fullName"):
        _str(data, key, kind, "VerifyAssertionResponse.swift:136-194 (`as? String`)", required=False,
             nonempty=False)
    for key in ("isNewUser", "emailVerified", "emailRecycled"):
        _bool(data, key, kind, "VerifyAssertionResponse.swift:139-157 (`as? Bool`)")
    if "oauthExpireIn" in data:
        assert isinstance(data["oauthExpireIn"], str) and data["oauthExpireIn"].isdigit(), \
            f"{kind}: oauthExpireIn must be a string of seconds (VerifyAssertionResponse.swift:187): {data}"
    if "rawUserInfo" in data:
        raw = data["rawUserInfo"]
        assert isinstance(raw, (str, dict)), f"{kind}: rawUserInfo must be a JSON string or object " \
                                             f"(VerifyAssertionResponse.swift:158-166): {data}"
        if isinstance(raw, str):
            assert isinstance(json.loads(raw), dict), f"{kind}: rawUserInfo is not a JSON object: {data}"
    id_token_claims(data["idToken"], provider=data["providerId"])
    return data


def apple_VerifyCustomTokenResponse(data: dict) -> dict:
    """Backend/RPC/VerifyCustomTokenResponse.swift:33-40."""
    kind = "VerifyCustomTokenResponse"
    _str(data, "idToken", kind, "VerifyCustomTokenResponse.swift:34")
    _str(data, "refreshToken", kind, "VerifyCustomTokenResponse.swift:38")
    _seconds(data, "expiresIn", kind, "VerifyCustomTokenResponse.swift:35")
    _bool(data, "isNewUser", kind, "VerifyCustomTokenResponse.swift:39")
    _absent(data, kind, *OUTCOME_KEYS)
    id_token_claims(data["idToken"], provider="custom")
    return data


def apple_VerifyPhoneNumberResponse(data: dict) -> dict:
    """Backend/RPC/VerifyPhoneNumberResponse.swift: idToken, refreshToken, expiresIn, localId, isNewUser,
    phoneNumber; a temporaryProof with a phoneNumber is credentialAlreadyInUse (AuthBackend.swift:
    phoneCredentialInUse)."""
    kind = "VerifyPhoneNumberResponse"
    _str(data, "idToken", kind, "VerifyPhoneNumberResponse.swift")
    _str(data, "refreshToken", kind, "VerifyPhoneNumberResponse.swift")
    _seconds(data, "expiresIn", kind, "VerifyPhoneNumberResponse.swift")
    _bool(data, "isNewUser", kind, "VerifyPhoneNumberResponse.swift")
    _str(data, "phoneNumber", kind, "VerifyPhoneNumberResponse.swift", required=False)
    assert "temporaryProof" not in data, f"{kind}: a temporaryProof is credentialAlreadyInUse: {data}"
    _absent(data, kind, *OUTCOME_KEYS)
    id_token_claims(data["idToken"], provider="phone")
    return data


def apple_EmailLinkSignInResponse(data: dict) -> dict:
    """Backend/RPC/EmailLinkSignInResponse.swift:43-62; a link without tokens is a fatalError
    (User/User.swift:1552-1555)."""
    kind = "EmailLinkSignInResponse"
    _str(data, "idToken", kind, "EmailLinkSignInResponse.swift:45; User.swift:1552-1555")
    _str(data, "refreshToken", kind, "EmailLinkSignInResponse.swift:47; User.swift:1552-1555")
    _seconds(data, "expiresIn", kind, "EmailLinkSignInResponse.swift:49")
    _str(data, "email", kind, "EmailLinkSignInResponse.swift:44", required=False)
    _bool(data, "isNewUser", kind, "EmailLinkSignInResponse.swift:46")
    _absent(data, kind, *OUTCOME_KEYS)
    id_token_claims(data["idToken"], provider="password")
    return data


def apple_GetOOBConfirmationCodeResponse(data: dict) -> dict:
    """Backend/RPC/GetOOBConfirmationCodeResponse.swift: any object; `oobCode` optional string."""
    kind = "GetOOBConfirmationCodeResponse"
    _str(data, "oobCode", kind, "GetOOBConfirmationCodeResponse.swift", required=False)
    return data


def apple_ResetPasswordResponse(data: dict, *, check: bool) -> dict:
    """Backend/RPC/ResetPasswordResponse.swift:37-41; checkActionCode / verifyPasswordResetCode crash without
    `email` (Auth/Auth.swift:1009-1011)."""
    kind = "ResetPasswordResponse"
    _str(data, "email", kind, "ResetPasswordResponse.swift:38; Auth.swift:1009-1011 (crash)", required=check)
    _str(data, "requestType", kind, "ResetPasswordResponse.swift:39", required=False)
    _str(data, "newEmail", kind, "ResetPasswordResponse.swift:40", required=False)
    return data


def apple_CreateAuthURIResponse(data: dict) -> dict:
    """Backend/RPC/CreateAuthURIResponse.swift:38-45: every field optional, typed."""
    kind = "CreateAuthURIResponse"
    for key in ("signinMethods", "allProviders"):
        if key in data:
            assert isinstance(data[key], list) and all(isinstance(m, str) for m in data[key]), \
                f"{kind}: {key} must be an array of strings (CreateAuthURIResponse.swift:43-44): {data}"
    for key in ("registered", "forExistingProvider"):
        _bool(data, key, kind, "CreateAuthURIResponse.swift:41-42")
    return data


def apple_DeleteAccountResponse(data: dict) -> dict:
    """Backend/RPC/DeleteAccountResponse.swift: any JSON object."""
    assert isinstance(data, dict), data
    return data


def apple_GetProjectConfigResponse(data: dict) -> dict:
    """Backend/RPC/GetProjectConfigResponse.swift:22-35: projectId string; authorizedDomains an array of
    strings or a JSON-encoded one."""
    kind = "GetProjectConfigResponse"
    _str(data, "projectId", kind, "GetProjectConfigResponse.swift:23")
    domains = data.get("authorizedDomains")
    if isinstance(domains, str):
        domains = json.loads(domains)
    assert isinstance(domains, list) and all(isinstance(d, str) for d in domains), \
        f"{kind}: authorizedDomains must be an array of strings (GetProjectConfigResponse.swift:24-34): {data}"
    return data


RECAPTCHA_PROVIDERS = ("EMAIL_PASSWORD_PROVIDER", "PHONE_PROVIDER")
RECAPTCHA_STATES = ("ENFORCE", "AUDIT", "OFF")


def apple_GetRecaptchaConfigResponse(data: dict) -> dict:
    """Backend/RPC/GetRecaptchaConfigResponse.swift:21-24 casts recaptchaEnforcementState to [[String: String]]
    (one non-string value anywhere drops the whole array); Utilities/AuthRecaptchaVerifier.swift:237-265
    needs `projects/<p>/keys/<site>` only when a provider is not OFF. The SDK proceeds without reCAPTCHA when
    every provider is OFF (AuthRecaptchaVerifier.swift:91-103, Auth/Auth.swift:2295-2296)."""
    kind = "GetRecaptchaConfigResponse"
    states = data.get("recaptchaEnforcementState")
    assert isinstance(states, list) and all(
        isinstance(s, dict) and all(isinstance(v, str) for v in s.values()) for s in states), \
        f"{kind}: recaptchaEnforcementState must be an array of objects of strings " \
        f"(GetRecaptchaConfigResponse.swift:23): {data}"
    enabled = False
    for state in states:
        assert state.get("provider") in RECAPTCHA_PROVIDERS, f"{kind}: unknown provider in {state}"
        assert state.get("enforcementState") in RECAPTCHA_STATES, f"{kind}: unknown enforcementState in {state}"
        enabled |= state["enforcementState"] != "OFF"
    if enabled or "recaptchaKey" in data:
        key = _str(data, "recaptchaKey", kind, "AuthRecaptchaVerifier.swift:257-263")
        assert len(key.split("/")) == 4, f"{kind}: recaptchaKey must be projects/<p>/keys/<site> " \
                                         f"(AuthRecaptchaVerifier.swift:258-261): {data}"
    return data


def apple_RevokeTokenResponse(data: dict) -> dict:
    """Backend/RPC/RevokeTokenResponse.swift: any JSON object."""
    assert isinstance(data, dict), data
    return data


def apple_SecureTokenResponse(data: dict) -> dict:
    """Backend/RPC/SecureTokenResponse.swift:39-54: access_token (the new ID token) non-empty, else
    unexpectedResponse; expires_in `as? String`; refresh_token replaces the stored one."""
    kind = "SecureTokenResponse"
    _str(data, "access_token", kind, "SecureTokenResponse.swift:41-49")
    _seconds(data, "expires_in", kind, "SecureTokenResponse.swift:50")
    _str(data, "refresh_token", kind, "SecureTokenResponse.swift:40")
    _str(data, "id_token", kind, "SecureTokenResponse.swift:42", required=False)
    id_token_claims(data["access_token"])
    return data


# ======================================================================================
# JS decoders (api/**/*.ts response interfaces, and what core/** then requires)
# ======================================================================================

def js_IdTokenResponse(data: dict, kind: str = "IdTokenResponse") -> dict:
    """model/id_token.ts IdTokenResponse as core/user/token_manager.ts:53-74 and user_impl.ts:325-344 use it:
    idToken asserted, refreshToken defined, expiresIn through Number(); localId, when present, is the first uid
    (the lookup that follows sets it anyway, core/user/reload.ts:62; signInWithCustomToken answers none, as in
    production); no outcome keys (api/index.ts:215-219, 271)."""
    _absent(data, kind, *OUTCOME_KEYS)
    _str(data, "idToken", kind, "core/user/token_manager.ts:56")
    _str(data, "refreshToken", kind, "core/user/token_manager.ts:61-64")
    _seconds(data, "expiresIn", kind, "core/user/token_manager.ts:65-68")
    claims = id_token_claims(data["idToken"])
    if _str(data, "localId", kind, "core/user/user_impl.ts:335", required=False) is not None:
        assert claims["sub"] == data["localId"], f"{kind}: localId {data['localId']} but token for {claims['sub']}"
    return data


def js_SignUpResponse(data: dict) -> dict:
    """api/authentication/sign_up.ts SignUpResponse; isNewUser comes from `kind` ==
    identitytoolkit#SignupNewUserResponse when isNewUser is absent (core/user/additional_user_info.ts:38-40)."""
    js_IdTokenResponse(data, "SignUpResponse")
    assert data.get("isNewUser") is True or data.get("kind") == SIGNUP_KIND, \
        f"SignUpResponse: neither isNewUser nor kind {SIGNUP_KIND} (additional_user_info.ts:38-40): {data}"
    return data


def js_SignInWithPasswordResponse(data: dict) -> dict:
    """api/authentication/email_and_password.ts SignInWithPasswordResponse."""
    js_IdTokenResponse(data, "SignInWithPasswordResponse")
    id_token_claims(data["idToken"], provider="password")
    return data


def js_FinalizeMfaResponse(data: dict) -> dict:
    """FinalizeMfaResponse (api/authentication/mfa.ts): StsTokenManager.updateFromServerResponse asserts idToken
    and refreshToken (core/user/token_manager.ts:53-65)."""
    kind = "FinalizeMfaResponse"
    _str(data, "idToken", kind, "token_manager.ts:56")
    _str(data, "refreshToken", kind, "token_manager.ts:61")
    id_token_claims(data["idToken"])
    return data


def js_GetAccountInfoResponse(data: dict, *, password: bool | None = None) -> dict:
    """api/account_management/account.ts GetAccountInfoResponse; `users.length` asserted
    (core/user/reload.ts:39); Tessera answers exactly one (docs/protocol/sdks.md#what-the-sdks-depend-on). Returns that user."""
    kind = "GetAccountInfoResponse(js)"
    users = data.get("users")
    assert isinstance(users, list) and len(users) == 1, \
        f"{kind}: users must have exactly one element (core/user/reload.ts:39): {data}"
    return _user_record(users[0], kind, password=password)


def js_UpdateProfileResponse(data: dict, *, display_name: Any, photo_url: Any) -> dict:
    """api/account_management/profile.ts UpdateProfileResponse: the local user takes displayName / photoUrl
    from the answer (core/user/account_info.ts:64-65), so the answer echoes the stored values."""
    kind = "UpdateProfileResponse"
    _absent(data, kind, *OUTCOME_KEYS)
    for key, expected in (("displayName", display_name), ("photoUrl", photo_url)):
        if expected is None:
            assert key not in data, f"{kind}: {key} should be absent (none stored): {data}"
        else:
            assert data.get(key) == expected, \
                f"{kind}: {key} is {data.get(key)!r}, the stored value is {expected!r}; JS copies it to the " \
                f"user (core/user/account_info.ts:64-65): {data}"
    if "idToken" in data:
        js_IdTokenResponse(data, kind)
    return data


def js_UpdateEmailPasswordResponse(data: dict) -> dict:
    """api/account_management/email_and_password.ts UpdateEmailPasswordResponse (an IdTokenResponse):
    new tokens go through updateFromServerResponse (core/user/user_impl.ts:183-194)."""
    kind = "UpdateEmailPasswordResponse"
    _absent(data, kind, *OUTCOME_KEYS)
    _str(data, "idToken", kind, "core/user/user_impl.ts:189")
    _str(data, "refreshToken", kind, "core/user/token_manager.ts:61-64")
    _seconds(data, "expiresIn", kind, "core/user/token_manager.ts:65-68")
    id_token_claims(data["idToken"])
    return data


def js_DeleteLinkedAccountsResponse(data: dict, *, remaining: set[str]) -> dict:
    """api/account_management/account.ts DeleteLinkedAccountsResponse: the providers the user keeps are the
    ones listed in providerUserInfo (core/user/link_unlink.ts:48-52)."""
    kind = "DeleteLinkedAccountsResponse"
    listed = {p["providerId"] for p in _provider_user_info(data.get("providerUserInfo", []), kind,
                                                           "core/user/link_unlink.ts:48")}
    assert listed == remaining, f"{kind}: providerUserInfo lists {sorted(listed)}, the user keeps " \
                                f"{sorted(remaining)}; JS drops every provider not listed " \
                                f"(core/user/link_unlink.ts:48-52): {data}"
    return data


def js_SignInWithIdpResponse(data: dict) -> dict:
    """api/authentication/idp.ts SignInWithIdpResponse: an IdTokenResponse plus providerId; rawUserInfo goes
    through JSON.parse (core/user/additional_user_info.ts:35-37)."""
    kind = "SignInWithIdpResponse"
    js_IdTokenResponse(data, kind)
    _str(data, "providerId", kind, "core/user/user_credential_impl.ts:84-89")
    if "rawUserInfo" in data:
        raw = data["rawUserInfo"]
        assert isinstance(raw, str), f"{kind}: rawUserInfo must be a JSON string (JSON.parse, " \
                                     f"core/user/additional_user_info.ts:36): {data}"
        assert isinstance(json.loads(raw), dict), f"{kind}: rawUserInfo must encode an object: {data}"
    _bool(data, "isNewUser", kind, "core/user/additional_user_info.ts:38")
    id_token_claims(data["idToken"], provider=data["providerId"])
    return data


def js_SignInWithCustomTokenResponse(data: dict) -> dict:
    """api/authentication/custom_token.ts SignInWithCustomTokenResponse."""
    js_IdTokenResponse(data, "SignInWithCustomTokenResponse")
    id_token_claims(data["idToken"], provider="custom")
    return data


def js_SignInWithEmailLinkResponse(data: dict) -> dict:
    """api/authentication/email_link.ts SignInWithEmailLinkResponse."""
    js_IdTokenResponse(data, "SignInWithEmailLinkResponse")
    _bool(data, "isNewUser", "SignInWithEmailLinkResponse", "core/user/additional_user_info.ts:38")
    id_token_claims(data["idToken"], provider="password")
    return data


def js_GetOobCodeResponse(data: dict, *, email: str | None = None) -> dict:
    """api/authentication/email_and_password.ts GetOobCodeResponse {email}; sendEmailVerification reloads the
    user when it differs from the local email (core/strategies/email.ts:126-128)."""
    kind = "GetOobCodeResponse"
    if email is not None:
        assert data.get("email") == email, f"{kind}: email is {data.get('email')!r}, expected {email!r} " \
                                           f"(core/strategies/email.ts:126): {data}"
    return data


def js_ResetPasswordResponse(data: dict, *, check: bool) -> dict:
    """api/account_management/email_and_password.ts ResetPasswordResponse; checkActionCode asserts requestType
    and, except for EMAIL_SIGNIN / VERIFY_AND_CHANGE_EMAIL, email (core/strategies/email_and_password.ts:199-212)."""
    kind = "ResetPasswordResponse(js)"
    if check:
        operation = _str(data, "requestType", kind, "core/strategies/email_and_password.ts:200")
        if operation == "VERIFY_AND_CHANGE_EMAIL":
            _str(data, "newEmail", kind, "core/strategies/email_and_password.ts:205")
        elif operation != "EMAIL_SIGNIN":
            _str(data, "email", kind, "core/strategies/email_and_password.ts:211")
    return data


def js_CreateAuthUriResponse(data: dict) -> dict:
    """api/authentication/create_auth_uri.ts CreateAuthUriResponse: `signinMethods || []`
    (core/strategies/email.ts:57-59)."""
    if "signinMethods" in data:
        assert isinstance(data["signinMethods"], list), data
    return data


def js_RequestStsTokenServerResponse(data: dict) -> dict:
    """api/authentication/token.ts:46-50, 102-106: access_token, expires_in (Number()), refresh_token (a
    missing one is stored as null and the next refresh fails, core/user/token_manager.ts:90)."""
    kind = "RequestStsTokenServerResponse"
    _str(data, "access_token", kind, "api/authentication/token.ts:104")
    _seconds(data, "expires_in", kind, "api/authentication/token.ts:105")
    _str(data, "refresh_token", kind, "api/authentication/token.ts:106")
    id_token_claims(data["access_token"])
    return data


def js_GetRecaptchaConfigResponse(data: dict) -> dict:
    """api/authentication/recaptcha.ts GetRecaptchaConfigResponse through `new RecaptchaConfig(response)`
    (platform_browser/recaptcha/recaptcha.ts:93-100): it throws when recaptchaKey is undefined, takes the site
    key as split('/')[3]; initializeRecaptchaConfig starts a verification only when a provider is ENFORCE or
    AUDIT (platform_browser/recaptcha/recaptcha_enterprise_verifier.ts:395-414)."""
    kind = "GetRecaptchaConfigResponse(js)"
    _str(data, "recaptchaKey", kind, "platform_browser/recaptcha/recaptcha.ts:94-98 (throws when undefined)")
    states = data.get("recaptchaEnforcementState", [])
    assert isinstance(states, list), f"{kind}: recaptchaEnforcementState must be an array: {data}"
    for state in states:
        assert isinstance(state, dict) and state.get("provider") in RECAPTCHA_PROVIDERS, f"{kind}: {state}"
        assert state.get("enforcementState") in RECAPTCHA_STATES + ("ENFORCEMENT_STATE_UNSPECIFIED",), \
            f"{kind}: {state} (api/index.ts:310-323)"
    return data


def js_GetPasswordPolicyResponse(data: dict) -> dict:
    """api/password_policy/get_password_policy.ts GetPasswordPolicyResponse through PasswordPolicyImpl
    (core/auth/password_policy_impl.ts:41-80: customStrengthOptions must be an object, allowedNon-
    AlphanumericCharacters an array it joins) and validatePassword's schema check (core/auth/auth_impl.ts:108,
    499-509: schemaVersion must be 1)."""
    kind = "GetPasswordPolicyResponse"
    options = data.get("customStrengthOptions")
    assert isinstance(options, dict), f"{kind}: customStrengthOptions must be an object " \
                                      f"(password_policy_impl.ts:43-47 reads its fields): {data}"
    for key in ("minPasswordLength", "maxPasswordLength"):
        if key in options:
            assert type(options[key]) is int and options[key] > 0, f"{kind}: {key} must be a number: {data}"
    for key in ("containsLowercaseCharacter", "containsUppercaseCharacter", "containsNumericCharacter",
                "containsNonAlphanumericCharacter"):
        _bool(options, key, kind, "password_policy_impl.ts:54-70")
    if "allowedNonAlphanumericCharacters" in data:
        chars = data["allowedNonAlphanumericCharacters"]
        assert isinstance(chars, list) and all(isinstance(c, str) and len(c) == 1 for c in chars), \
            f"{kind}: allowedNonAlphanumericCharacters must be an array of characters " \
            f"(password_policy_impl.ts:77): {data}"
    _str(data, "enforcementState", kind, "password_policy_impl.ts:72-75")
    assert data["enforcementState"] in ("OFF", "ENFORCE", "ENFORCEMENT_STATE_UNSPECIFIED"), data
    _bool(data, "forceUpgradeOnSignin", kind, "password_policy_impl.ts:78")
    assert data.get("schemaVersion") == 1 and type(data.get("schemaVersion")) is int, \
        f"{kind}: schemaVersion must be the number 1 (core/auth/auth_impl.ts:108, 499-509): {data}"
    return data


def js_RevokeTokenResponse(data: dict) -> dict:
    """api/authentication/token.ts RevokeTokenResponse: {}."""
    assert isinstance(data, dict), data
    _absent(data, "RevokeTokenResponse", "errorMessage", "needConfirmation")
    return data


def js_GetProjectConfigResponse(data: dict) -> dict:
    """api/project_config/get_project_config.ts GetProjectConfigResponse {authorizedDomains: string[]}."""
    domains = data.get("authorizedDomains")
    assert isinstance(domains, list) and all(isinstance(d, str) for d in domains), data
    return data


# ======================================================================================
# Shared SDK plumbing
# ======================================================================================

@dataclass
class ActionCodeSettings:
    """Apple ActionCodeSettings / JS ActionCodeSettings."""
    url: str
    handle_code_in_app: bool = False
    ios_bundle_id: str | None = None
    android_package_name: str | None = None
    android_install_app: bool = False
    android_minimum_version: str | None = None


def mfa_factor(sdk: str, entry: dict) -> tuple[str, str, str | None]:
    """One `mfaInfo` entry as the SDK reads it: JS MultiFactorInfoImpl._fromServerResponse (mfa/mfa_info.ts:
    46-60: phoneInfo or totpInfo, else internal-error; enrolledAt through new Date()); Apple
    AuthProtoMFAEnrollment (Backend/RPC/Proto/AuthProtoMFAEnrollment.swift: totpInfo must be an object; enrolledAt
    parsed as yyyy-MM-dd'T'HH:mm:ss.SSSZ, no date without the milliseconds)."""
    assert isinstance(entry.get("mfaEnrollmentId"), str) and entry["mfaEnrollmentId"], f"{sdk}: no id: {entry}"
    enrolled_at = entry.get("enrolledAt")
    assert isinstance(enrolled_at, str) and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", enrolled_at), \
        f"{sdk}: enrolledAt must be RFC 3339 with milliseconds (Apple's date format): {entry}"
    if "phoneInfo" in entry:
        return ("phone", entry["mfaEnrollmentId"], entry.get("displayName"))
    assert isinstance(entry.get("totpInfo"), dict), \
        f"{sdk}: neither phoneInfo nor a totpInfo object (JS: auth/internal-error; Apple drops it): {entry}"
    return ("totp", entry["mfaEnrollmentId"], entry.get("displayName"))


def totp_code(secret: str, offset: int = 0) -> str:
    """What an authenticator app shows for a shared secret (RFC 6238: HMAC-SHA-1, 6 digits, 30 s), ``offset``
    steps from now."""
    key = base64.b32decode(secret + "=" * (-len(secret) % 8))
    mac = hmac.new(key, struct.pack(">Q", int(time.time()) // 30 + offset), hashlib.sha1).digest()
    value = struct.unpack(">I", mac[(mac[-1] & 0x0F):(mac[-1] & 0x0F) + 4])[0] & 0x7FFFFFFF
    return f"{value % 1_000_000:06d}"


def totp_session_info(data: dict, sdk: str) -> dict:
    """startMfaEnrollment's answer as TotpSecret._fromStartTotpMfaEnrollmentResponse (JS mfa/assertions/totp.ts:
    227-240) and Apple AuthProtoStartMFATOTPEnrollmentResponseInfo (sharedSecretKey required: fatalError without;
    finalizeEnrollmentTime parsed as yyyy-MM-dd'T'HH:mm:ss.SSSZ) read it."""
    info = data.get("totpSessionInfo")
    assert isinstance(info, dict), f"{sdk}: no totpSessionInfo: {data}"
    assert isinstance(info.get("sharedSecretKey"), str) and info["sharedSecretKey"], f"{sdk}: {info}"
    assert info.get("verificationCodeLength") == 6 and info.get("periodSec") == 30, f"{sdk}: {info}"
    assert info.get("hashingAlgorithm") == "SHA1" and isinstance(info.get("sessionInfo"), str), f"{sdk}: {info}"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", info.get("finalizeEnrollmentTime", "")), \
        f"{sdk}: finalizeEnrollmentTime must be RFC 3339 with milliseconds: {info}"
    return info


@dataclass
class SdkUser:
    """The signed-in user as the SDK keeps it (Apple User, JS UserImpl)."""
    uid: str
    id_token: str
    refresh_token: str
    expires_at: float
    is_anonymous: bool = False
    email: str | None = None
    email_verified: bool = False
    display_name: str | None = None
    photo_url: str | None = None
    has_password: bool = False
    provider_data: dict[str, dict] = field(default_factory=dict)  # providerId -> {uid, email, ...}
    created_at: int | None = None
    last_login_at: int | None = None
    tenant_id: str | None = None
    # multiFactor(user).enrolledFactors / User.multiFactor.enrolledFactors: (kind, mfaEnrollmentId, displayName).
    enrolled_factors: list[tuple[str, str, str | None]] = field(default_factory=list)
    # What the test knows: True = the user has a password, False = it has none, None = not checked.
    password_expected: bool | None = None

    @property
    def claims(self) -> dict:
        return id_token_claims(self.id_token)


@dataclass
class AuthDataResult:
    user: SdkUser
    provider_id: str | None
    is_new_user: bool | None
    response: dict


def query_of(link: str) -> dict[str, str]:
    return dict(parse_qsl(urlparse(link).query))


class _SdkBase:
    name = "sdk"

    def __init__(self, stack, tenant_id: str | None = None):
        self.stack = stack
        self.tenant_id = tenant_id
        self.http = requests.Session()
        self.user: SdkUser | None = None
        self.log: list[requests.Response] = []

    @property
    def calls(self) -> list[str]:
        """The endpoints called so far, e.g. ['signupNewUser', 'getAccountInfo']."""
        out = []
        for resp in self.log:
            path = urlparse(resp.request.url).path
            out.append(path.rsplit("/", 1)[-1].replace("accounts:", "") if "/v1/accounts:" in path
                       or "/relyingparty/" in path else path.rsplit("/", 1)[-1])
        return out

    def clear_log(self) -> None:
        self.log.clear()

    def _require_user(self) -> SdkUser:
        assert self.user is not None, f"{self.name}: no signed-in user"
        return self.user

    def _send(self, method: str, url: str, *, headers: dict, data: bytes | str | None = None) -> requests.Response:
        resp = self.http.request(method, url, headers=headers, data=data, timeout=HTTP_TIMEOUT,
                                 allow_redirects=False)
        self.log.append(resp)
        return resp

    @staticmethod
    def _json(resp: requests.Response) -> dict:
        try:
            data = resp.json()
        except ValueError:
            raise AssertionError(f"answer is not JSON: {describe(resp)}") from None
        assert isinstance(data, dict), f"answer is not a JSON object: {describe(resp)}"
        return data

    def _user_from_record(self, record: dict, user: SdkUser) -> SdkUser:
        """What both SDKs copy from a lookup user (Apple User.swift:1358-1386, JS reload.ts:61-74)."""
        user.uid = record["localId"]
        user.email = record.get("email")
        user.email_verified = record.get("emailVerified", False)
        user.display_name = record.get("displayName")
        user.photo_url = record.get("photoUrl")
        user.has_password = bool(record.get("passwordHash"))
        user.created_at = int(record["createdAt"])
        user.last_login_at = int(record["lastLoginAt"])
        user.provider_data = {p["providerId"]: dict(p) for p in record.get("providerUserInfo", [])}
        # JS keeps its list when a lookup has no mfaInfo (mfa/mfa_user.ts:37-44); Apple builds it anew
        # (User/User.swift, MultiFactor(withMFAEnrollments:)).
        if record.get("mfaInfo") is not None or self.name == "Apple":
            user.enrolled_factors = [mfa_factor(self.name, entry) for entry in record.get("mfaInfo") or []]
        return user

    # -- multi-factor, shared by both models ---------------------------------------------------------------

    @staticmethod
    def resolver(error: SdkError) -> dict:
        """What a resolver holds (JS MultiFactorResolverImpl._fromError, mfa/mfa_resolver.ts:48-64; Apple
        AuthErrorUtils.secondFactorRequiredError, Backend/AuthBackend.swift:114-141): the hints and the pending
        credential of the first factor's answer."""
        assert error.server_code == "MFA_REQUIRED", f"not a second-factor challenge: {error}"
        data = error.response.json()
        assert isinstance(data.get("mfaPendingCredential"), str) and data["mfaPendingCredential"], \
            f"no mfaPendingCredential (JS: internal-error, mfa_resolver.ts:58-62): {data}"
        return {"hints": [mfa_factor(error.sdk, entry) for entry in data.get("mfaInfo") or []],
                "pending": data["mfaPendingCredential"], "response": data}


# ======================================================================================
# Apple
# ======================================================================================

# The answers that are AuthMFAResponse (Backend/RPC/AuthMFAResponse.swift conformers).
APPLE_MFA_RESPONSES = {"verifyPassword", "verifyAssertion", "emailLinkSignin"}


class AppleSDK(_SdkBase):
    """FirebaseAuth for iOS 12.19.0 in emulator mode (`useEmulator(withHost:port:)`)."""

    name = "Apple"

    def __init__(self, stack, tenant_id: str | None = None, *, language_code: str | None = None,
                 app_check_token: str | None = None):
        super().__init__(stack, tenant_id)
        self.language_code = language_code
        self.app_check_token = app_check_token

    # -- transport (Backend/AuthBackend.swift, Backend/IdentityToolkitRequest.swift) --------------------

    def headers(self) -> dict[str, str]:
        """Backend/AuthBackend.swift:61-112 (request(for:httpMethod:contentType:requestConfiguration:))."""
        headers = {
            "Content-Type": "application/json",  # on GETs too (AuthBackend.swift:82, 201-202)
            "X-Client-Version": f"iOS/FirebaseSDK/{APPLE_VERSION}/FirebaseCore-iOS",
            "X-Ios-Bundle-Identifier": BUNDLE_ID,
            "X-Firebase-GMPID": APPLE_GMPID,
            "Accept-Language": "en",
            "X-Firebase-Client": HEARTBEAT,
            # AuthBackend.swift:29-31 authUserAgent + GTMSessionFetcher's standard user agent.
            "User-Agent": f"FirebaseAuth.iOS/{APPLE_VERSION} {BUNDLE_ID}/1.0 iPhone/18.2 hw/iPhone16_2",
            "Accept": "*/*",
        }
        if self.language_code:
            headers["X-Firebase-Locale"] = self.language_code
        if self.app_check_token:
            headers["X-Firebase-AppCheck"] = self.app_check_token
        return headers

    @staticmethod
    def encode(body: dict) -> bytes:
        """JSONSerialization.data(withJSONObject:options: .prettyPrinted) of a DEBUG build
        (AuthBackend.swift:179-192): two-space indent, ' : ' separators, and '/' escaped as '\\/'."""
        text = json.dumps(body, indent=2, separators=(",", " : "), ensure_ascii=False)
        return text.replace("/", "\\/").encode("utf-8")

    def v3_url(self, rpc: str) -> str:
        # Backend/IdentityToolkitRequest.swift:89-101: http://H:P/www.googleapis.com/identitytoolkit/v3/
        # relyingparty/<endpoint>?key=<APIKey>, the key appended as is.
        return f"{self.stack.url}/www.googleapis.com/identitytoolkit/v3/relyingparty/{rpc}?key={self.stack.api_key}"

    def v2_url(self, endpoint: str, query: str = "") -> str:
        # IdentityToolkitRequest.swift:76-87 (useIdentityPlatform) + queryParams().
        return f"{self.stack.url}/identitytoolkit.googleapis.com/v2/{endpoint}?key={self.stack.api_key}{query}"

    def token_url(self) -> str:
        # Backend/RPC/SecureTokenRequest.swift:37: http://H:P/securetoken.googleapis.com/v1/token?key=K.
        return f"{self.stack.url}/securetoken.googleapis.com/v1/token?key={self.stack.api_key}"

    def call(self, url: str, body: dict | None, *, call: str, verify_assertion: bool = False) -> dict:
        """One RPC (AuthBackend.swift:177-279): POST with a JSON body, GET without one; a non-2xx answer is
        parsed for error.message and mapped; for verifyAssertion a 200 with errorMessage is an error too."""
        method = "GET" if body is None else "POST"
        resp = self._send(method, url, headers=self.headers(), data=None if body is None else self.encode(body))
        if resp.status_code >= 300:
            message, error = check_error_envelope(resp)
            raise SdkError("Apple", call, resp, message, apple_error_for(message, error))
        data = self._json(resp)
        if call in APPLE_MFA_RESPONSES and data.get("idToken") is None and isinstance(data.get("mfaInfo"), list):
            # AuthBackend.generateMFAError (Backend/AuthBackend.swift:114-141): an AuthMFAResponse without an
            # idToken and with mfaInfo is secondFactorRequired.
            raise SdkError("Apple", call, resp, "MFA_REQUIRED", "secondFactorRequired")
        if verify_assertion and isinstance(data.get("errorMessage"), str):
            # AuthBackend.swift:259-272 (returnIDPCredential is always true, VerifyAssertionRequest.swift:115).
            message = data["errorMessage"]
            assert ERROR_MESSAGE.match(message), f"errorMessage must be CODE or 'CODE : detail': {describe(resp)}"
            raise SdkError("Apple", call, resp, message, apple_error_for(message, {}))
        return data

    def rpc(self, name: str, body: dict | None) -> dict:
        return self.call(self.v3_url(name), body, call=name, verify_assertion=name == "verifyAssertion")

    def _tenant(self, body: dict) -> dict:
        if self.tenant_id is not None:
            body["tenantId"] = self.tenant_id
        return body

    def _signing_out(self, fn: Callable[[], Any]) -> Any:
        """User.signOutIfTokenIsInvalid (User/User.swift:1664-1674) around a call made for the user."""
        try:
            return fn()
        except SdkError as error:
            if error.sdk_code in APPLE_SIGN_OUT and self.user is not None:
                self.user = None
                error.signed_out = True
            raise

    # -- tokens (SystemService/SecureTokenService.swift) ---------------------------------------------

    def _access_token(self, force: bool = False) -> str:
        """The cached ID token while it is more than 5 minutes from expiry (SystemService/SecureTokenService.swift:
        18, 116), else a securetoken refresh with a camelCase JSON body (Backend/RPC/SecureTokenRequest.swift:
        46-52, body at 116-130)."""
        user = self._require_user()
        if not force and user.expires_at - time.time() > 300:
            return user.id_token
        data = self._signing_out(lambda: self.call(
            self.token_url(), {"grantType": "refresh_token", "refreshToken": user.refresh_token},
            call="securetoken"))
        apple_SecureTokenResponse(data)
        user.id_token = data["access_token"]
        user.expires_at = time.time() + int(data["expires_in"])
        if data.get("refresh_token"):
            user.refresh_token = data["refresh_token"]
        return user.id_token

    def get_id_token(self, forcing_refresh: bool = False) -> str:
        """User.getIDToken(forcingRefresh:) (User/User.swift:559)."""
        return self._access_token(force=forcing_refresh)

    def get_id_token_result(self, forcing_refresh: bool = False) -> dict:
        """User.getIDTokenResult (User/User.swift:643; Auth/AuthTokenResult.swift:109-114)."""
        return id_token_claims(self.get_id_token(forcing_refresh))

    def _get_account_info(self, user: SdkUser) -> dict:
        token = self._access_token()
        data = self._signing_out(lambda: self.rpc("getAccountInfo", {"idToken": token}))
        record = apple_GetAccountInfoResponse(data, password=user.password_expected)
        self._user_from_record(record, user)
        return record

    def _complete_sign_in(self, data: dict, *, anonymous: bool = False, password: bool | None = None) -> SdkUser:
        """Auth.completeSignIn -> User.retrieveUser (User/User.swift:1088-1115): tokens, then getAccountInfo."""
        user = SdkUser(uid=data.get("localId", ""), id_token=data["idToken"], refresh_token=data["refreshToken"],
                       expires_at=time.time() + int(data.get("expiresIn", "0") or 0), tenant_id=self.tenant_id,
                       password_expected=password)
        self.user = user
        self._get_account_info(user)
        user.is_anonymous = anonymous
        return user

    def _update_tokens_and_refresh(self, data: dict, *, password: bool | None = None) -> SdkUser:
        """UserProfileUpdate.updateTokenAndRefreshUser (User/UserProfileUpdate.swift:122-152)."""
        user = self._require_user()
        if password is not None:
            user.password_expected = password
        user.id_token, user.refresh_token = data["idToken"], data["refreshToken"]
        user.expires_at = time.time() + int(data.get("expiresIn", "0") or 0)
        self._get_account_info(user)
        user.is_anonymous = False
        return user

    # -- Auth ----------------------------------------------------------------------------------------

    def sign_in_anonymously(self) -> AuthDataResult:
        """Auth.signInAnonymously (Auth/Auth.swift:700-760): no call when the user already is anonymous."""
        if self.user is not None and self.user.is_anonymous:
            return AuthDataResult(self.user, "", False, {})
        data = self.rpc("signupNewUser", self._tenant({"clientType": "CLIENT_TYPE_IOS", "returnSecureToken": True}))
        apple_SignUpNewUserResponse(data)
        id_token_claims(data["idToken"], provider="anonymous")
        user = self._complete_sign_in(data, anonymous=True, password=False)
        return AuthDataResult(user, "", True, data)

    def create_user(self, email: str, password: str) -> AuthDataResult:
        """Auth.createUser(withEmail:password:) (Auth/Auth.swift:833-957)."""
        data = self.rpc("signupNewUser", self._tenant({"email": email, "password": password,
                                                       "clientType": "CLIENT_TYPE_IOS", "returnSecureToken": True}))
        apple_SignUpNewUserResponse(data)
        id_token_claims(data["idToken"], provider="password")
        return AuthDataResult(self._complete_sign_in(data, password=True), "password", True, data)

    def sign_in(self, email: str, password: str) -> AuthDataResult:
        """Auth.signIn(withEmail:password:) -> verifyPassword (Backend/RPC/VerifyPasswordRequest.swift:81-106)."""
        data = self.rpc("verifyPassword", self._tenant({"email": email, "password": password,
                                                        "returnSecureToken": True, "clientType": "CLIENT_TYPE_IOS"}))
        apple_VerifyPasswordResponse(data)
        return AuthDataResult(self._complete_sign_in(data, password=True), "password", False, data)

    def sign_in_with_custom_token(self, token: str) -> AuthDataResult:
        """Auth.signIn(withCustomToken:) (Backend/RPC/VerifyCustomTokenRequest.swift:42-53)."""
        data = self.rpc("verifyCustomToken", self._tenant({"token": token, "returnSecureToken": True}))
        apple_VerifyCustomTokenResponse(data)
        return AuthDataResult(self._complete_sign_in(data), None, data.get("isNewUser", False), data)

    def _assertion_body(self, provider_id: str, *, id_token: str | None, access_token: str | None,
                        secret: str | None, nonce: str | None, link_token: str | None = None,
                        auto_create: bool = True) -> dict:
        """VerifyAssertionRequest.unencodedHTTPRequestBody (Backend/RPC/VerifyAssertionRequest.swift:156-240):
        postBody is the URL query of providerId, id_token, nonce, access_token, oauth_token_secret."""
        items = [("providerId", provider_id)]
        if id_token is not None:
            items.append(("id_token", id_token))
        if nonce is not None:
            items.append(("nonce", nonce))
        if access_token is not None:
            items.append(("access_token", access_token))
        if secret is not None:
            items.append(("oauth_token_secret", secret))
        body: dict[str, Any] = {"requestUri": "http://localhost", "postBody": urlencode(items, quote_via=quote)}
        if link_token is not None:
            body["idToken"] = link_token
        body["returnSecureToken"] = True
        body["returnIdpCredential"] = True
        self._tenant(body)
        body["autoCreate"] = auto_create
        return body

    def sign_in_with_credential(self, provider_id: str, *, id_token: str | None = None,
                                access_token: str | None = None, secret: str | None = None,
                                nonce: str | None = None) -> AuthDataResult:
        """Auth.signIn(with: OAuthCredential) (Auth/Auth.swift:2048-2126)."""
        data = self.rpc("verifyAssertion", self._assertion_body(provider_id, id_token=id_token,
                                                                access_token=access_token, secret=secret,
                                                                nonce=nonce))
        if data.get("needConfirmation") is True:
            # Auth/Auth.swift:2101-2108: accountExistsWithDifferentCredential with the answer's email and an
            # updated credential built from it.
            _str(data, "email", "VerifyAssertionResponse(needConfirmation)", "Auth.swift:2102", required=False)
            raise SdkError("Apple", "verifyAssertion", self.log[-1], "NEED_CONFIRMATION",
                           "accountExistsWithDifferentCredential")
        apple_VerifyAssertionResponse(data)
        user = self._complete_sign_in(data)
        return AuthDataResult(user, data["providerId"], data.get("isNewUser", False), data)

    def sign_in_with_email_link(self, email: str, link: str) -> AuthDataResult:
        """Auth.signIn(withEmail:link:) (Auth/Auth.swift:2195-2221)."""
        assert self.is_sign_in_with_email_link(link), f"not an email sign-in link for the Apple SDK: {link}"
        data = self.rpc("emailLinkSignin", self._tenant({"email": email, "oobCode": query_of(link)["oobCode"]}))
        apple_EmailLinkSignInResponse(data)
        return AuthDataResult(self._complete_sign_in(data), "password", data.get("isNewUser", False), data)

    # -- phone (AuthProvider/PhoneAuthProvider.swift) ------------------------------------------------

    def verify_phone_number(self, phone_number: str) -> str:
        """PhoneAuthProvider.verifyPhoneNumber with `settings.isAppVerificationDisabledForTesting` (the emulator
        setup, PhoneAuthProvider.swift: verifyInTestMode): sendVerificationCode {phoneNumber, tenantId,
        clientType} and no app credential (Backend/RPC/SendVerificationTokenRequest.swift); the verification id
        is the answer's sessionInfo."""
        data = self.rpc("sendVerificationCode", self._tenant(
            {"phoneNumber": phone_number, "clientType": "CLIENT_TYPE_IOS"}))
        return _str(data, "sessionInfo", "SendVerificationCodeResponse", "SendVerificationCodeResponse.swift")

    def sign_in_with_phone(self, verification_id: str, code: str) -> AuthDataResult:
        """Auth.signIn(with: PhoneAuthProvider.credential(withVerificationID:verificationCode:)): verifyPhoneNumber
        {sessionInfo, code, tenantId, operation: SIGN_UP_OR_IN} (Backend/RPC/VerifyPhoneNumberRequest.swift),
        then completeSignIn."""
        data = self.rpc("verifyPhoneNumber", self._tenant({"sessionInfo": verification_id, "code": code}) |
                        {"operation": "SIGN_UP_OR_IN"})
        apple_VerifyPhoneNumberResponse(data)
        return AuthDataResult(self._complete_sign_in(data), "phone", data.get("isNewUser", False), data)

    # -- multi-factor (MultiFactor/) -----------------------------------------------------------------

    def _v2(self, endpoint: str, body: dict) -> dict:
        return self.call(self.v2_url(endpoint), self._tenant(body), call=endpoint.rsplit("/", 1)[-1])

    def totp_generate_secret(self) -> dict:
        """TOTPMultiFactorGenerator.generateSecret(with: user.multiFactor.session()) (MultiFactor/TOTP/
        TOTPMultiFactorGenerator.swift:41): StartMFAEnrollmentRequest with the session's ID token and an empty
        totpEnrollmentInfo (Backend/RPC/MultiFactor/Enroll/StartMFAEnrollmentRequest.swift)."""
        token = self._require_user().id_token  # MultiFactorSession.session(for:): rawAccessToken
        return totp_session_info(self._v2("accounts/mfaEnrollment:start",
                                          {"idToken": token, "totpEnrollmentInfo": {}}), "Apple")

    def enroll_totp(self, secret: dict, otp: str, display_name: str | None) -> SdkUser:
        """MultiFactor.enroll(with: TOTPMultiFactorGenerator.assertionForEnrollment(with:oneTimePassword:),
        displayName:) (MultiFactor/MultiFactor.swift:63-107, 109-160): finalize, then completeSignIn."""
        body = {"idToken": self._require_user().id_token}
        if display_name is not None:
            body["displayName"] = display_name
        body["totpVerificationInfo"] = {"sessionInfo": secret["sessionInfo"], "verificationCode": otp}
        data = self._signing_out(lambda: self._v2("accounts/mfaEnrollment:finalize", body))
        return self._complete_mfa(data)

    def unenroll(self, enrollment_id: str) -> SdkUser:
        """MultiFactor.unenroll(withFactorUID:) (MultiFactor/MultiFactor.swift:199-236): withdraw, then
        completeSignIn with the answer's tokens; a failure there signs the user out."""
        data = self._signing_out(lambda: self._v2(
            "accounts/mfaEnrollment:withdraw",
            {"idToken": self._require_user().id_token, "mfaEnrollmentId": enrollment_id}))
        try:
            return self._complete_mfa(data)
        except (AssertionError, SdkError):
            self.user = None
            raise

    def resolve_sign_in_totp(self, resolver: dict, enrollment_id: str, otp: str) -> SdkUser:
        """MultiFactorResolver.resolveSignIn(with: TOTPMultiFactorGenerator.assertionForSignIn(withEnrollmentID:
        oneTimePassword:)) (MultiFactor/MultiFactorResolver.swift:40-90; FinalizeMFASignInRequest.swift)."""
        data = self._v2("accounts/mfaSignIn:finalize", {
            "mfaPendingCredential": resolver["pending"],
            "totpVerificationInfo": {"verificationCode": otp}, "mfaEnrollmentId": enrollment_id})
        return self._complete_mfa(data)

    def verify_phone_number_for_enrollment(self, phone_number: str) -> str:
        """PhoneAuthProvider.verifyPhoneNumber(_:uiDelegate:multiFactorSession: user.multiFactor.session()) with
        `isAppVerificationDisabledForTesting` (AuthProvider/PhoneAuthProvider.swift: verifyInTestMode,
        executeMFARequest): StartMFAEnrollmentRequest {idToken, phoneEnrollmentInfo: {phoneNumber}} (no app
        credential, AuthProtoStartMFAPhoneRequestInfo.swift); the verification id is phoneSessionInfo.sessionInfo
        (StartMFAEnrollmentResponse.swift)."""
        token = self._require_user().id_token
        data = self._v2("accounts/mfaEnrollment:start",
                        {"idToken": token, "phoneEnrollmentInfo": {"phoneNumber": phone_number}})
        info = data.get("phoneSessionInfo")
        assert isinstance(info, dict), f"StartMFAEnrollmentResponse: no phoneSessionInfo: {data}"
        return _str(info, "sessionInfo", "StartMFAEnrollmentResponse", "AuthProtoStartMFAPhoneResponseInfo.swift")

    def verify_phone_number_for_sign_in(self, resolver: dict, hint: dict) -> str:
        """PhoneAuthProvider.verifyPhoneNumber(with: hint as PhoneMultiFactorInfo, multiFactorSession:
        resolver.session) in test mode: the hint's (masked) number and StartMFASignInRequest
        {mfaPendingCredential, mfaEnrollmentId, phoneSignInInfo: {phoneNumber}} (StartMFASignInRequest.swift);
        the verification id is phoneResponseInfo.sessionInfo, which StartMFASignInResponse requires."""
        data = self._v2("accounts/mfaSignIn:start", {
            "mfaPendingCredential": resolver["pending"], "mfaEnrollmentId": hint["mfaEnrollmentId"],
            "phoneSignInInfo": {"phoneNumber": hint["phoneInfo"]}})
        info = data.get("phoneResponseInfo")
        assert isinstance(info, dict), f"StartMFASignInResponse: no phoneResponseInfo: {data}"
        return _str(info, "sessionInfo", "StartMFASignInResponse", "AuthProtoStartMFAPhoneResponseInfo.swift")

    def enroll_phone(self, verification_id: str, code: str, display_name: str | None) -> SdkUser:
        """MultiFactor.enroll(with: PhoneMultiFactorGenerator.assertion(with: credential), displayName:)
        (MultiFactor/MultiFactor.swift): FinalizeMFAEnrollmentRequest {idToken, displayName, phoneVerificationInfo:
        {sessionInfo, code}} (AuthProtoFinalizeMFAPhoneRequestInfo.swift), then completeSignIn."""
        body = {"idToken": self._require_user().id_token}
        if display_name is not None:
            body["displayName"] = display_name
        body["phoneVerificationInfo"] = {"sessionInfo": verification_id, "code": code}
        data = self._signing_out(lambda: self._v2("accounts/mfaEnrollment:finalize", body))
        return self._complete_mfa(data)

    def resolve_sign_in_phone(self, resolver: dict, verification_id: str, code: str) -> SdkUser:
        """MultiFactorResolver.resolveSignIn(with: PhoneMultiFactorGenerator.assertion(with: credential))
        (MultiFactor/MultiFactorResolver.swift: AuthProtoFinalizeMFAPhoneRequestInfo): FinalizeMFASignInRequest
        {mfaPendingCredential, phoneVerificationInfo: {sessionInfo, code}}, no mfaEnrollmentId."""
        data = self._v2("accounts/mfaSignIn:finalize", {
            "mfaPendingCredential": resolver["pending"],
            "phoneVerificationInfo": {"sessionInfo": verification_id, "code": code}})
        return self._complete_mfa(data)

    def _complete_mfa(self, data: dict) -> SdkUser:
        """Auth.completeSignIn(withAccessToken: response.idToken, accessTokenExpirationDate: nil, refreshToken:)
        after an MFA rpc (FinalizeMFAEnrollmentResponse.swift: idToken, refreshToken)."""
        _str(data, "idToken", "FinalizeMFAResponse", "FinalizeMFAEnrollmentResponse.swift:26")
        _str(data, "refreshToken", "FinalizeMFAResponse", "FinalizeMFAEnrollmentResponse.swift:27")
        id_token_claims(data["idToken"])
        return self._complete_sign_in(data)

    @staticmethod
    def is_sign_in_with_email_link(link: str) -> bool:
        """Auth.isSignIn(withEmailLink:) (Auth/Auth.swift:1287-1297): oobCode and mode=signIn in the query
        (ActionCode/ActionCodeURL.swift:65-80)."""
        query = query_of(link)
        return bool(query.get("oobCode")) and query.get("mode") == "signIn"

    def _oob(self, request_type: str, *, email: str | None = None, id_token: str | None = None,
             new_email: str | None = None, settings: ActionCodeSettings | None = None) -> dict:
        """GetOOBConfirmationCodeRequest (Backend/RPC/GetOOBConfirmationCodeRequest.swift:157-179, 228-290)."""
        body: dict[str, Any] = {"requestType": request_type}
        if email is not None:
            body["email"] = email
        if new_email is not None:
            body["newEmail"] = new_email
        if id_token is not None:
            body["idToken"] = id_token
        if settings is not None:
            body["continueUrl"] = settings.url
            if settings.ios_bundle_id:
                body["iOSBundleId"] = settings.ios_bundle_id
            if settings.android_package_name:
                body["androidPackageName"] = settings.android_package_name
            if settings.android_minimum_version:
                body["androidMinimumVersion"] = settings.android_minimum_version
            if settings.android_install_app:
                body["androidInstallApp"] = True
            if settings.handle_code_in_app:
                body["canHandleCodeInApp"] = True
        body["clientType"] = "CLIENT_TYPE_IOS"
        self._tenant(body)
        data = self.rpc("getOobConfirmationCode", body)
        return apple_GetOOBConfirmationCodeResponse(data)

    def send_password_reset(self, email: str, settings: ActionCodeSettings | None = None) -> dict:
        """Auth.sendPasswordReset(withEmail:) (Auth/Auth.swift:1118-1220)."""
        return self._oob("PASSWORD_RESET", email=email, settings=settings)

    def send_sign_in_link(self, email: str, settings: ActionCodeSettings) -> dict:
        """Auth.sendSignInLink(toEmail:actionCodeSettings:) (Auth/Auth.swift:1221-1250): handleCodeInApp
        must be true."""
        assert settings.handle_code_in_app, "the Apple SDK stops with fatalError (Auth.swift:1224-1227)"
        return self._oob("EMAIL_SIGNIN", email=email, settings=settings)

    def check_action_code(self, code: str) -> dict:
        """Auth.checkActionCode (Auth/Auth.swift:998-1024): resetPassword {oobCode}."""
        data = self.rpc("resetPassword", self._tenant({"oobCode": code}))
        return apple_ResetPasswordResponse(data, check=True)

    def verify_password_reset_code(self, code: str) -> str:
        """Auth.verifyPasswordResetCode (Auth/Auth.swift:1042-1054): the email of checkActionCode."""
        return self.check_action_code(code)["email"]

    def confirm_password_reset(self, code: str, new_password: str) -> dict:
        """Auth.confirmPasswordReset (Auth/Auth.swift:959-980)."""
        data = self.rpc("resetPassword", self._tenant({"oobCode": code, "newPassword": new_password}))
        return apple_ResetPasswordResponse(data, check=False)

    def apply_action_code(self, code: str) -> dict:
        """Auth.applyActionCode (Auth/Auth.swift:1075-1083): setAccountInfo {oobCode} with returnSecureToken."""
        data = self.rpc("setAccountInfo", self._tenant({"oobCode": code, "returnSecureToken": True}))
        return apple_SetAccountInfoResponse(data)

    def fetch_sign_in_methods(self, email: str) -> list[str]:
        """Auth.fetchSignInMethods(forEmail:) (Auth/Auth.swift:290-305)."""
        data = self.rpc("createAuthUri", self._tenant({"identifier": email, "continueUri": "http://www.google.com/"}))
        apple_CreateAuthURIResponse(data)
        return data.get("signinMethods", [])

    def revoke_token(self, authorization_code: str) -> dict:
        """Auth.revokeToken(withAuthorizationCode:) (Auth/Auth.swift:1445-1462; Backend/RPC/RevokeTokenRequest.swift:
        57-81): tokenType is the enum's raw value as a string, no tenantId."""
        token = self._access_token()
        data = self.call(self.v2_url("accounts:revokeToken"),
                         {"providerId": "apple.com", "tokenType": "3", "token": authorization_code, "idToken": token},
                         call="revokeToken")
        return apple_RevokeTokenResponse(data)

    def initialize_recaptcha_config(self) -> dict:
        """Auth.initializeRecaptchaConfig -> AuthRecaptchaVerifier.retrieveRecaptchaConfig (Utilities/
        AuthRecaptchaVerifier.swift:144-162; Backend/RPC/GetRecaptchaConfigRequest.swift queryParams)."""
        query = "&clientType=CLIENT_TYPE_IOS&version=RECAPTCHA_ENTERPRISE"
        if self.tenant_id is not None:
            query += f"&tenantId={self.tenant_id}"
        data = self.call(self.v2_url("recaptchaConfig", query), None, call="recaptchaConfig")
        return apple_GetRecaptchaConfigResponse(data)

    def get_project_config(self) -> dict:
        """GetProjectConfigRequest: GET getProjectConfig (only outside emulator mode, AuthWebUtils)."""
        return apple_GetProjectConfigResponse(self.rpc("getProjectConfig", None))

    # -- User --------------------------------------------------------------------------------------------

    def reload(self) -> SdkUser:
        """User.reload (User/User.swift:325-345) -> getAccountInfo."""
        user = self._require_user()
        self._get_account_info(user)
        return user

    def link_email_password(self, email: str, password: str) -> AuthDataResult:
        """User.link(with: EmailAuthProvider.credential(withEmail:password:)) (User/User.swift:676-705,
        1467-1515): signupNewUser {email, password, idToken} then getAccountInfo."""
        user = self._require_user()
        if "password" in user.provider_data or user.has_password:
            raise AssertionError("providerAlreadyLinked (local check, User.swift:679-690, 1519-1527)")
        token = self._access_token()
        data = self._signing_out(lambda: self.rpc("signupNewUser", self._tenant({
            "email": email, "password": password, "idToken": token, "clientType": "CLIENT_TYPE_IOS",
            "returnSecureToken": True})))
        apple_SignUpNewUserResponse(data, link=True)
        id_token_claims(data["idToken"], provider="password", uid=user.uid)
        self._signing_out(lambda: self._update_tokens_and_refresh(data, password=True))
        return AuthDataResult(user, None, None, data)

    def link_email_link(self, email: str, link: str) -> AuthDataResult:
        """User.link(with: EmailAuthProvider.credential(withEmail:link:)) (User/User.swift:1517-1573):
        emailLinkSignin {email, oobCode, idToken} then getAccountInfo."""
        user = self._require_user()
        if "password" in user.provider_data or user.has_password:
            raise AssertionError("providerAlreadyLinked (local check, User.swift:1519-1527)")
        token = self._access_token()
        body = {"email": email, "oobCode": query_of(link)["oobCode"], "idToken": token}
        data = self.rpc("emailLinkSignin", self._tenant(body))
        apple_EmailLinkSignInResponse(data)
        id_token_claims(data["idToken"], uid=user.uid)
        self._update_tokens_and_refresh(data)
        return AuthDataResult(user, None, None, data)

    def link_credential(self, provider_id: str, *, id_token: str | None = None, access_token: str | None = None,
                        secret: str | None = None, nonce: str | None = None) -> AuthDataResult:
        """User.link(with: OAuthCredential) -> UserProfileUpdate.link (User/UserProfileUpdate.swift:19-46):
        verifyAssertion with idToken, then getAccountInfo."""
        user = self._require_user()
        if provider_id in user.provider_data:
            raise AssertionError("providerAlreadyLinked (local check, User.swift:679-690)")
        token = self._access_token()
        body = self._assertion_body(provider_id, id_token=id_token, access_token=access_token, secret=secret,
                                    nonce=nonce, link_token=token)
        data = self._signing_out(lambda: self.rpc("verifyAssertion", body))
        apple_VerifyAssertionResponse(data, link=True)
        id_token_claims(data["idToken"], uid=user.uid)
        self._signing_out(lambda: self._update_tokens_and_refresh(data))
        return AuthDataResult(user, data["providerId"], data.get("isNewUser", False), data)

    def unlink(self, provider_id: str) -> SdkUser:
        """UserProfileUpdate.unlink (User/UserProfileUpdate.swift:49-83): setAccountInfo {deleteProvider},
        tokens replaced when the answer has them; no getAccountInfo."""
        user = self._require_user()
        token = self._access_token()
        if provider_id not in user.provider_data:
            raise AssertionError("noSuchProvider (local check, UserProfileUpdate.swift:55-59)")
        data = self._signing_out(lambda: self.rpc("setAccountInfo", self._tenant({
            "idToken": token, "deleteProvider": [provider_id], "returnSecureToken": True})))
        apple_SetAccountInfoResponse(data)
        user.provider_data.pop(provider_id, None)
        if provider_id == "password":
            user.password_expected = False
        if data.get("idToken") and data.get("refreshToken"):
            user.id_token, user.refresh_token = data["idToken"], data["refreshToken"]
            user.expires_at = time.time() + int(data["expiresIn"])
        return user

    def _user_update(self, changes: dict) -> dict:
        """UserProfileUpdate.executeUserUpdateWithChanges (User/UserProfileUpdate.swift:89-117): getAccountInfo,
        then setAccountInfo {idToken, <changes>, returnSecureToken}; new tokens replace the old ones."""
        user = self._require_user()
        self._get_account_info(user)
        token = self._access_token()
        body = {"idToken": token, **changes, "returnSecureToken": True}
        data = self._signing_out(lambda: self.rpc("setAccountInfo", self._tenant(body)))
        apple_SetAccountInfoResponse(data)
        if data.get("idToken") and data.get("refreshToken"):
            user.id_token, user.refresh_token = data["idToken"], data["refreshToken"]
            user.expires_at = time.time() + int(data["expiresIn"])
        return data

    def commit_profile_changes(self, *, display_name: Any = UNSET, photo_url: Any = UNSET) -> dict:
        """UserProfileChangeRequest.commitChanges (User/UserProfileChangeRequest.swift:61-104): nothing sent
        when nothing was set; `nil` omits the key (SetAccountInfoRequest.swift unencodedHTTPRequestBody)."""
        user = self._require_user()
        if display_name is UNSET and photo_url is UNSET:
            return {}
        changes = {}
        if display_name is not UNSET and display_name is not None:
            changes["displayName"] = display_name
        if photo_url is not UNSET and photo_url is not None:
            changes["photoUrl"] = photo_url
        data = self._user_update(changes)
        if display_name is not UNSET:
            user.display_name = display_name
        if photo_url is not UNSET:
            user.photo_url = photo_url
        return data

    def update_password(self, password: str) -> dict:
        """User.updatePassword(to:) (User/User.swift:197-245, 1230-1315): the password change answers new
        tokens; a user without a password credential before is reloaded."""
        user = self._require_user()
        had_password = user.has_password
        data = self._user_update({"password": password})
        user.password_expected = True
        apple_SetAccountInfoResponse(data, tokens=True)
        if user.email and not had_password:
            self._get_account_info(user)
            if user.provider_data:
                user.is_anonymous = False
        return data

    def update_email(self, email: str) -> dict:
        """User.updateEmail(to:) (deprecated; User/User.swift:126-190, 1230-1315)."""
        user = self._require_user()
        had_password = user.has_password
        data = self._user_update({"email": email})
        user.email = email
        if not had_password:
            self._get_account_info(user)
            if user.provider_data:
                user.is_anonymous = False
        return data

    def send_email_verification(self, settings: ActionCodeSettings | None = None) -> dict:
        """User.sendEmailVerification (User/User.swift:883-945)."""
        token = self._access_token()
        return self._signing_out(lambda: self._oob("VERIFY_EMAIL", id_token=token, settings=settings))

    def delete(self) -> dict:
        """User.delete (User/User.swift:948-1005): deleteAccount {idToken, localId}, then local sign-out."""
        user = self._require_user()
        token = self._access_token()
        data = self._signing_out(lambda: self.rpc("deleteAccount", {"idToken": token, "localId": user.uid}))
        apple_DeleteAccountResponse(data)
        self.user = None
        return data

    # -- the conformance suite's common names (test_sdk_conformance.py) --------------------------------

    # JS's updateProfile; a None here omits the key (UserProfileChangeRequest) where JS sends a JSON null.
    update_profile = commit_profile_changes


# ======================================================================================
# JS
# ======================================================================================

class JsSDK(_SdkBase):
    """@firebase/auth 1.13.5 (firebase 12.18.0) in a browser, `connectAuthEmulator(auth, "http://H:P")`."""

    name = "JS"

    def __init__(self, stack, tenant_id: str | None = None, *, origin: str = JS_ORIGIN,
                 language_code: str | None = None, app_check_token: str | None = None):
        super().__init__(stack, tenant_id)
        self.origin = origin
        self.language_code = language_code
        self.app_check_token = app_check_token
        self.password_policy: dict | None = None
        # auth._getRecaptchaConfig(): fetched once, before the first phone verification.
        self.recaptcha_config: dict | None = None
        # The RecaptchaVerifier's site key, read once when it first renders.
        self.recaptcha_site_key: str | None = None

    # -- transport (api/index.ts) ------------------------------------------------------------------------

    def headers(self, content_type: str = "application/json") -> dict[str, str]:
        """core/auth/auth_impl.ts:831-858 (_getAdditionalHeaders), api/index.ts:164-169, plus what a browser
        adds to a cross-origin fetch (Origin; Referer under strict-origin-when-cross-origin)."""
        headers = {
            "X-Client-Version": f"Chrome/JsCore/{JS_VERSION}/FirebaseCore-web",
            "X-Firebase-gmpid": JS_GMPID,
            "X-Firebase-Client": HEARTBEAT,
            "Content-Type": content_type,
            "Origin": self.origin,
            "Referer": self.origin + "/",
            "User-Agent": CHROME_UA,
            "Accept": "*/*",
            "Sec-Fetch-Mode": "cors",
        }
        if self.app_check_token:
            headers["X-Firebase-AppCheck"] = self.app_check_token
        if self.language_code:
            headers["X-Firebase-Locale"] = self.language_code
        return headers

    def url(self, endpoint: str, query: dict | None = None, host: str = "identitytoolkit.googleapis.com") -> str:
        # api/index.ts:159-162, 280-291: <base><apiHost><endpoint>?<request fields for GET>&key=K.
        params = dict(query or {})
        params["key"] = self.stack.api_key
        return f"{self.stack.url}/{host}{endpoint}?{urlencode(params)}"

    def _check_cors(self, resp: requests.Response) -> None:
        """A browser hands the answer to the SDK only when Access-Control-Allow-Origin allows the page's origin;
        otherwise fetch rejects and the SDK reports auth/network-request-failed (api/index.ts:246-253)."""
        allowed = resp.headers.get("Access-Control-Allow-Origin")
        assert allowed in (self.origin, "*"), \
            f"no Access-Control-Allow-Origin for {self.origin} (got {allowed!r}): the browser blocks the answer " \
            f"and the SDK reports auth/network-request-failed: {describe(resp)}"

    def _handle(self, resp: requests.Response, call: str, *, sign_in: bool = False) -> dict:
        """_performFetchWithErrorHandling (api/index.ts:196-255) and _performSignInRequest (257-278)."""
        self._check_cors(resp)
        data = self._json(resp)
        if "needConfirmation" in data:
            raise SdkError("JS", call, resp, "NEED_CONFIRMATION", "auth/account-exists-with-different-credential")
        if resp.ok and "errorMessage" not in data:
            if sign_in and "mfaPendingCredential" in data:
                raise SdkError("JS", call, resp, "MFA_REQUIRED", "auth/multi-factor-auth-required")
            return data
        if resp.ok:
            message = data["errorMessage"]
            assert isinstance(message, str) and ERROR_MESSAGE.match(message), \
                f"errorMessage must be CODE or 'CODE : detail': {describe(resp)}"
        else:
            message, _ = check_error_envelope(resp)
        raise SdkError("JS", call, resp, message, js_error_for(message))

    def api(self, method: str, endpoint: str, request: dict | None = None, *, sign_in: bool = False,
            tenant: bool = False) -> dict:
        """_performApiRequest: POST bodies are JSON.stringify(request) (null kept), GET requests go to the
        query; `tenant` = _addTidIfNecessary (api/index.ts:126-137)."""
        request = dict(request or {})
        if tenant and self.tenant_id is not None and not request.get("tenantId"):
            request["tenantId"] = self.tenant_id
        call = endpoint.rsplit("/", 1)[-1]
        if method == "GET":
            resp = self._send("GET", self.url(endpoint, request), headers=self.headers())
        else:
            resp = self._send("POST", self.url(endpoint), headers=self.headers(),
                              data=json.dumps(request, separators=(",", ":")).encode())
        return self._handle(resp, call, sign_in=sign_in)

    def _signing_out(self, fn: Callable[[], Any]) -> Any:
        """_logoutIfInvalidated (core/user/invalidation.ts:23-49)."""
        try:
            return fn()
        except SdkError as error:
            if error.sdk_code in JS_SIGN_OUT and self.user is not None:
                self.user = None
                error.signed_out = True
            raise

    def preflight(self, endpoint: str, method: str = "POST", request_headers: tuple[str, ...] = JS_REQUEST_HEADERS,
                  host: str = "identitytoolkit.googleapis.com") -> requests.Response:
        """The CORS preflight a browser sends before the SDK's request (custom headers and a JSON content type
        are not CORS-safelisted), and the browser's verdict on the answer (Fetch standard, CORS check)."""
        headers = {"Origin": self.origin, "Access-Control-Request-Method": method,
                   "Access-Control-Request-Headers": ",".join(request_headers), "User-Agent": CHROME_UA,
                   "Accept": "*/*", "Sec-Fetch-Mode": "cors", "Referer": self.origin + "/"}
        resp = self.http.request("OPTIONS", self.url(endpoint, host=host), headers=headers, timeout=HTTP_TIMEOUT,
                                 allow_redirects=False)
        ctx = f"preflight {method} {endpoint}: HTTP {resp.status_code} {dict(resp.headers)}"
        assert 200 <= resp.status_code < 300, f"a preflight must answer 2xx: {ctx}"
        allowed_origin = resp.headers.get("Access-Control-Allow-Origin")
        assert allowed_origin in (self.origin, "*"), f"Access-Control-Allow-Origin must allow {self.origin}: {ctx}"
        methods = {m.strip().upper() for m in resp.headers.get("Access-Control-Allow-Methods", "").split(",")}
        assert method in methods or "*" in methods, f"Access-Control-Allow-Methods must allow {method}: {ctx}"
        allowed = {h.strip().lower() for h in resp.headers.get("Access-Control-Allow-Headers", "").split(",")}
        missing = [h for h in request_headers if h.lower() not in allowed and
                   not ("*" in allowed and h.lower() != "authorization")]
        assert not missing, f"Access-Control-Allow-Headers does not allow {missing}: {ctx}"
        return resp

    # -- tokens (core/user/token_manager.ts, api/authentication/token.ts) ----------------------------------

    def get_id_token(self, force_refresh: bool = False) -> str:
        """StsTokenManager.getToken: the cached token unless forced or within 30 s of expiry
        (core/user/token_manager.ts:32, 46, 86), else a form-encoded refresh (api/authentication/token.ts:64-107)."""
        user = self._require_user()
        if not force_refresh and user.expires_at - time.time() > 30:
            return user.id_token
        body = urlencode({"grant_type": "refresh_token", "refresh_token": user.refresh_token})

        def refresh():
            resp = self._send("POST", self.url("/v1/token", host="securetoken.googleapis.com"),
                              headers=self.headers("application/x-www-form-urlencoded"), data=body)
            return self._handle(resp, "token")

        data = self._signing_out(refresh)
        js_RequestStsTokenServerResponse(data)
        user.id_token, user.refresh_token = data["access_token"], data["refresh_token"]
        user.expires_at = time.time() + int(data["expires_in"])
        return user.id_token

    def get_id_token_result(self, force_refresh: bool = False) -> dict:
        """getIdTokenResult (core/user/id_token_result.ts:55-88)."""
        return id_token_claims(self.get_id_token(force_refresh))

    def _reload(self, user: SdkUser) -> dict:
        """_reloadWithoutSaving (core/user/reload.ts:31-75): lookup {idToken}; isAnonymous turns false once a
        password with an email or any provider is listed."""
        token = self.get_id_token()
        data = self._signing_out(lambda: self.api("POST", "/v1/accounts:lookup", {"idToken": token}))
        record = js_GetAccountInfoResponse(data, password=user.password_expected)
        had_email = user.email
        self._user_from_record(record, user)
        new_anonymous = not (had_email and record.get("passwordHash")) and not user.provider_data
        user.is_anonymous = user.is_anonymous and new_anonymous
        return record

    def _from_id_token_response(self, data: dict, *, anonymous: bool = False,
                                password: bool | None = None) -> SdkUser:
        """UserImpl._fromIdTokenResponse (core/user/user_impl.ts:325-344)."""
        user = SdkUser(uid=data.get("localId", ""), id_token=data["idToken"], refresh_token=data["refreshToken"],
                       expires_at=time.time() + int(data["expiresIn"]), is_anonymous=anonymous,
                       tenant_id=self.tenant_id, password_expected=password)
        self.user = user
        self._reload(user)
        return user

    def _update_tokens(self, data: dict, *, reload: bool) -> SdkUser:
        """UserImpl._updateTokensIfNecessary (core/user/user_impl.ts:183-204)."""
        user = self._require_user()
        if data.get("idToken") and data["idToken"] != user.id_token:
            user.id_token, user.refresh_token = data["idToken"], data["refreshToken"]
            user.expires_at = time.time() + int(data.get("expiresIn", "3600"))
        if reload:
            self._reload(user)
        return user

    def _assert_linked_status(self, expected: bool, provider_id: str) -> None:
        """_assertLinkedStatus (core/user/link_unlink.ts:68-82): a reload first."""
        user = self._require_user()
        self._reload(user)
        assert (provider_id in user.provider_data) is expected, \
            ("auth/no-such-provider" if expected else "auth/provider-already-linked")

    # -- Auth ---------------------------------------------------------------------------------------------

    def sign_in_anonymously(self) -> AuthDataResult:
        """signInAnonymously (core/strategies/anonymous.ts:41-68)."""
        if self.user is not None and self.user.is_anonymous:
            return AuthDataResult(self.user, None, False, {})
        data = self.api("POST", "/v1/accounts:signUp", {"returnSecureToken": True}, sign_in=True, tenant=True)
        js_SignUpResponse(data)
        id_token_claims(data["idToken"], provider="anonymous")
        return AuthDataResult(self._from_id_token_response(data, anonymous=True, password=False), None, True, data)

    def create_user(self, email: str, password: str) -> AuthDataResult:
        """createUserWithEmailAndPassword (core/strategies/email_and_password.ts:270-310)."""
        data = self.api("POST", "/v1/accounts:signUp", {"returnSecureToken": True, "email": email,
                                                        "password": password, "clientType": "CLIENT_TYPE_WEB"},
                        sign_in=True, tenant=True)
        js_SignUpResponse(data)
        id_token_claims(data["idToken"], provider="password")
        return AuthDataResult(self._from_id_token_response(data, password=True), "password", True, data)

    def sign_in(self, email: str, password: str) -> AuthDataResult:
        """signInWithEmailAndPassword -> EmailAuthCredential._getIdTokenResponse (core/credentials/email.ts:
        113-129)."""
        data = self.api("POST", "/v1/accounts:signInWithPassword", {
            "returnSecureToken": True, "email": email, "password": password, "clientType": "CLIENT_TYPE_WEB"},
            sign_in=True, tenant=True)
        js_SignInWithPasswordResponse(data)
        return AuthDataResult(self._from_id_token_response(data, password=True), "password", False, data)

    def sign_in_with_custom_token(self, token: str) -> AuthDataResult:
        """signInWithCustomToken (api/authentication/custom_token.ts:35-48)."""
        data = self.api("POST", "/v1/accounts:signInWithCustomToken", {"token": token, "returnSecureToken": True},
                        sign_in=True, tenant=True)
        js_SignInWithCustomTokenResponse(data)
        return AuthDataResult(self._from_id_token_response(data), None, data.get("isNewUser"), data)

    @staticmethod
    def _idp_request(provider_id: str, *, id_token: str | None, access_token: str | None, secret: str | None,
                     nonce: str | None) -> dict:
        """OAuthCredential.buildRequest (core/credentials/oauth.ts:176-205)."""
        post_body: dict[str, str] = {}
        if id_token:
            post_body["id_token"] = id_token
        if access_token:
            post_body["access_token"] = access_token
        if secret:
            post_body["oauth_token_secret"] = secret
        post_body["providerId"] = provider_id
        if nonce:
            post_body["nonce"] = nonce
        return {"requestUri": "http://localhost", "returnSecureToken": True, "postBody": urlencode(post_body)}

    def sign_in_with_credential(self, provider_id: str, *, id_token: str | None = None,
                                access_token: str | None = None, secret: str | None = None,
                                nonce: str | None = None) -> AuthDataResult:
        """signInWithCredential(OAuthCredential) (core/strategies/credential.ts; oauth.ts:154-157)."""
        request = self._idp_request(provider_id, id_token=id_token, access_token=access_token, secret=secret,
                                    nonce=nonce)
        data = self.api("POST", "/v1/accounts:signInWithIdp", request, sign_in=True, tenant=True)
        js_SignInWithIdpResponse(data)
        return AuthDataResult(self._from_id_token_response(data), data["providerId"], data.get("isNewUser"), data)

    def is_sign_in_with_email_link(self, link: str) -> bool:
        """isSignInWithEmailLink (core/strategies/email_link.ts:128-131; core/action_code_url.ts:118-149):
        apiKey, oobCode and mode=signIn."""
        query = query_of(link)
        return bool(query.get("apiKey") and query.get("oobCode")) and query.get("mode") == "signIn"

    def sign_in_with_email_link(self, email: str, link: str) -> AuthDataResult:
        """signInWithEmailLink (core/strategies/email_link.ts:174-197): the link's tenantId must equal the
        Auth's (email_link.ts:191-195), then signInWithEmailLink {email, oobCode} (t)."""
        assert self.is_sign_in_with_email_link(link), f"not a sign-in link for JS: {link}"
        query = query_of(link)
        assert query.get("tenantId") == self.tenant_id, \
            f"the link's tenantId {query.get('tenantId')!r} is not the Auth's {self.tenant_id!r}: JS fails with " \
            f"auth/tenant-id-mismatch (core/strategies/email_link.ts:191-195): {link}"
        data = self.api("POST", "/v1/accounts:signInWithEmailLink", {"email": email, "oobCode": query["oobCode"]},
                        sign_in=True, tenant=True)
        js_SignInWithEmailLinkResponse(data)
        return AuthDataResult(self._from_id_token_response(data), "password", data.get("isNewUser"), data)

    # -- phone (platform_browser/strategies/phone.ts, api/authentication/sms.ts) ----------------------

    def _recaptcha_v2_token(self, token: str) -> str:
        """RecaptchaVerifier.verify() (platform_browser/recaptcha/recaptcha_verifier.ts): its first render runs
        init(), which asks getRecaptchaParams (GET /v1/recaptchaParams, api/authentication/recaptcha.ts) for the
        site key and asserts one (auth/internal-error otherwise), even with appVerificationDisabledForTesting's
        mock widget; then the widget's token."""
        if self.recaptcha_site_key is None:
            data = self.api("GET", "/v1/recaptchaParams")
            assert data.get("kind") == "identitytoolkit#GetRecaptchaParamResponse", data
            self.recaptcha_site_key = _str(data, "recaptchaSiteKey", "GetRecaptchaParamResponse",
                                           "recaptcha_verifier.ts: init")
        return token

    def sign_in_with_phone_number(self, phone_number: str, recaptcha_token: str = "fake-recaptcha-v2") -> str:
        """signInWithPhoneNumber(auth, number, recaptchaVerifier) -> _verifyPhoneNumber (strategies/phone.ts):
        the reCAPTCHA config (every provider OFF), so handleRecaptchaFlow's v2 path: captchaResponse NO_RECAPTCHA,
        clientType and recaptchaVersion (recaptcha_enterprise_verifier.ts: injectRecaptchaFields), then the
        RecaptchaVerifier's token (injectRecaptchaV2Token); sendVerificationCode (t). Returns the
        ConfirmationResult's verificationId."""
        if self.recaptcha_config is None:
            self.initialize_recaptcha_config()
        data = self.api("POST", "/v1/accounts:sendVerificationCode", {
            "phoneNumber": phone_number, "clientType": "CLIENT_TYPE_WEB", "captchaResponse": "NO_RECAPTCHA",
            "recaptchaVersion": "RECAPTCHA_ENTERPRISE", "recaptchaToken": self._recaptcha_v2_token(recaptcha_token)},
            tenant=True)
        return _str(data, "sessionInfo", "SendPhoneVerificationCodeResponse", "api/authentication/sms.ts")

    def confirm(self, verification_id: str, code: str) -> AuthDataResult:
        """ConfirmationResult.confirm(code) -> signInWithCredential(PhoneAuthCredential) -> signInWithPhoneNumber
        {sessionInfo, code} (t) (core/credentials/phone.ts, api/authentication/sms.ts), then the user (lookup)."""
        data = self.api("POST", "/v1/accounts:signInWithPhoneNumber", {
            "sessionInfo": verification_id, "code": code}, sign_in=True, tenant=True)
        js_IdTokenResponse(data, "SignInWithPhoneNumberResponse")
        assert "temporaryProof" not in data, f"a temporaryProof is auth/credential-already-in-use: {data}"
        return AuthDataResult(self._from_id_token_response(data), "phone", data.get("isNewUser"), data)

    # -- multi-factor (mfa/, api/account_management/mfa.ts, api/authentication/mfa.ts) ----------------

    def totp_generate_secret(self) -> dict:
        """TotpMultiFactorGenerator.generateSecret(await multiFactor(user).getSession()) (mfa/assertions/totp.ts:
        89-105; mfa_user.ts:47-52: the session is the user's ID token): startEnrollTotpMfa {idToken,
        totpEnrollmentInfo: {}} (t)."""
        token = self.get_id_token()
        return totp_session_info(self.api("POST", "/v2/accounts/mfaEnrollment:start",
                                          {"idToken": token, "totpEnrollmentInfo": {}}, tenant=True), "JS")

    def enroll_totp(self, secret: dict, otp: str, display_name: str | None) -> SdkUser:
        """multiFactor(user).enroll(TotpMultiFactorGenerator.assertionForEnrollment(secret, otp), displayName)
        (mfa/mfa_user.ts:54-74; assertions/totp.ts:142-157): getSession, finalizeEnrollTotpMfa {idToken,
        displayName, totpVerificationInfo {sessionInfo, verificationCode}} (t), new tokens, reload."""
        token = self.get_id_token()
        data = self._signing_out(lambda: self.api("POST", "/v2/accounts/mfaEnrollment:finalize", {
            "idToken": token, "displayName": display_name,
            "totpVerificationInfo": {"sessionInfo": secret["sessionInfo"], "verificationCode": otp}}, tenant=True))
        js_FinalizeMfaResponse(data)
        return self._update_tokens(data, reload=True)

    def unenroll(self, enrollment_id: str) -> SdkUser:
        """multiFactor(user).unenroll(uid) (mfa/mfa_user.ts:76-99): withdrawMfa {idToken, mfaEnrollmentId} (t), the
        factor dropped from the list, new tokens if any, reload."""
        token = self.get_id_token()
        data = self._signing_out(lambda: self.api(
            "POST", "/v2/accounts/mfaEnrollment:withdraw", {"idToken": token, "mfaEnrollmentId": enrollment_id},
            tenant=True))
        user = self._require_user()
        user.enrolled_factors = [f for f in user.enrolled_factors if f[1] != enrollment_id]
        return self._update_tokens(data, reload=True)

    def resolve_sign_in_totp(self, resolver: dict, enrollment_id: str, otp: str) -> SdkUser:
        """resolver.resolveSignIn(TotpMultiFactorGenerator.assertionForSignIn(uid, otp)) (mfa/mfa_resolver.ts:
        66-96; assertions/totp.ts:160-176): finalizeSignInTotpMfa {mfaPendingCredential, mfaEnrollmentId,
        totpVerificationInfo {verificationCode}} (t), then the user (_signed_in_after_mfa)."""
        data = self.api("POST", "/v2/accounts/mfaSignIn:finalize", {
            "mfaPendingCredential": resolver["pending"], "mfaEnrollmentId": enrollment_id,
            "totpVerificationInfo": {"verificationCode": otp}}, tenant=True)
        return self._signed_in_after_mfa(resolver, data)

    def _signed_in_after_mfa(self, resolver: dict, data: dict) -> SdkUser:
        """MultiFactorResolverImpl.resolveSignIn's end (mfa/mfa_resolver.ts:66-96): the first answer without its
        mfa fields, with the new tokens, becomes the user (UserCredentialImpl._fromIdTokenResponse: reload)."""
        js_FinalizeMfaResponse(data)
        response = {k: v for k, v in resolver["response"].items() if k not in ("mfaInfo", "mfaPendingCredential")}
        response.update(idToken=data["idToken"], refreshToken=data["refreshToken"])
        # No expiresIn in the first answer: StsTokenManager reads the ID token's exp (core/user/token_manager.ts:
        # 62-65).
        response.setdefault("expiresIn", str(id_token_claims(data["idToken"])["exp"] - int(time.time())))
        return self._from_id_token_response(response)

    # The reCAPTCHA v2 fields of a phone factor's start call (every provider OFF in the reCAPTCHA config, so
    # handleRecaptchaFlow's v2 path: injectRecaptchaFields puts them inside the info object for the MFA_SMS_*
    # actions, injectRecaptchaV2Token adds the verifier's token there; recaptcha_enterprise_verifier.ts,
    # strategies/phone.ts).
    def _phone_mfa_recaptcha(self, recaptcha_token: str) -> dict:
        return {"recaptchaToken": self._recaptcha_v2_token(recaptcha_token), "captchaResponse": "NO_RECAPTCHA",
                "clientType": "CLIENT_TYPE_WEB", "recaptchaVersion": "RECAPTCHA_ENTERPRISE"}

    def verify_phone_number_for_enrollment(self, phone_number: str, recaptcha_token: str = "fake-recaptcha-v2") -> str:
        """new PhoneAuthProvider(auth).verifyPhoneNumber({phoneNumber, session: await multiFactor(user).getSession()},
        verifier) -> _verifyPhoneNumber (strategies/phone.ts): startEnrollPhoneMfa {idToken, phoneEnrollmentInfo}
        (t) (api/account_management/mfa.ts); the verification id is phoneSessionInfo.sessionInfo."""
        if self.recaptcha_config is None:
            self.initialize_recaptcha_config()
        token = self.get_id_token()
        data = self.api("POST", "/v2/accounts/mfaEnrollment:start", {
            "idToken": token,
            "phoneEnrollmentInfo": {"phoneNumber": phone_number} | self._phone_mfa_recaptcha(recaptcha_token)},
            tenant=True)
        info = data.get("phoneSessionInfo")
        assert isinstance(info, dict), f"StartPhoneMfaEnrollmentResponse: no phoneSessionInfo: {data}"
        return _str(info, "sessionInfo", "StartPhoneMfaEnrollmentResponse", "api/account_management/mfa.ts")

    def verify_phone_number_for_sign_in(self, resolver: dict, hint: dict,
                                        recaptcha_token: str = "fake-recaptcha-v2") -> str:
        """new PhoneAuthProvider(auth).verifyPhoneNumber({multiFactorHint: hint, session: resolver.session}, verifier)
        -> _verifyPhoneNumber: startSignInPhoneMfa {mfaPendingCredential, mfaEnrollmentId, phoneSignInInfo} (t)
        (api/authentication/mfa.ts); the verification id is phoneResponseInfo.sessionInfo."""
        if self.recaptcha_config is None:
            self.initialize_recaptcha_config()
        data = self.api("POST", "/v2/accounts/mfaSignIn:start", {
            "mfaPendingCredential": resolver["pending"], "mfaEnrollmentId": hint["mfaEnrollmentId"],
            "phoneSignInInfo": self._phone_mfa_recaptcha(recaptcha_token)}, tenant=True)
        info = data.get("phoneResponseInfo")
        assert isinstance(info, dict), f"StartPhoneMfaSignInResponse: no phoneResponseInfo: {data}"
        return _str(info, "sessionInfo", "StartPhoneMfaSignInResponse", "api/authentication/mfa.ts")

    def enroll_phone(self, verification_id: str, code: str, display_name: str | None) -> SdkUser:
        """multiFactor(user).enroll(PhoneMultiFactorGenerator.assertion(PhoneAuthProvider.credential(id, code)),
        displayName) (mfa/mfa_user.ts; platform_browser/mfa/assertions/phone.ts: _finalizeEnroll):
        finalizeEnrollPhoneMfa {idToken, displayName, phoneVerificationInfo {sessionInfo, code}} (t), new tokens,
        reload."""
        token = self.get_id_token()
        data = self._signing_out(lambda: self.api("POST", "/v2/accounts/mfaEnrollment:finalize", {
            "idToken": token, "displayName": display_name,
            "phoneVerificationInfo": {"sessionInfo": verification_id, "code": code}}, tenant=True))
        js_FinalizeMfaResponse(data)
        return self._update_tokens(data, reload=True)

    def resolve_sign_in_phone(self, resolver: dict, verification_id: str, code: str) -> SdkUser:
        """resolver.resolveSignIn(PhoneMultiFactorGenerator.assertion(credential)) (assertions/phone.ts:
        _finalizeSignIn): finalizeSignInPhoneMfa {mfaPendingCredential, phoneVerificationInfo {sessionInfo, code}}
        (t), then the user as after a TOTP factor."""
        data = self.api("POST", "/v2/accounts/mfaSignIn:finalize", {
            "mfaPendingCredential": resolver["pending"],
            "phoneVerificationInfo": {"sessionInfo": verification_id, "code": code}}, tenant=True)
        return self._signed_in_after_mfa(resolver, data)

    def _oob(self, request: dict, settings: ActionCodeSettings | None) -> dict:
        if settings is not None:
            # _setActionCodeSettingsOnRequest (core/strategies/action_code_settings.ts:24-70): undefined
            # fields are dropped by JSON.stringify.
            request["continueUrl"] = settings.url
            request["canHandleCodeInApp"] = settings.handle_code_in_app
            if settings.ios_bundle_id:
                request["iOSBundleId"] = settings.ios_bundle_id
            if settings.android_package_name:
                request["androidInstallApp"] = settings.android_install_app
                if settings.android_minimum_version:
                    request["androidMinimumVersionCode"] = settings.android_minimum_version
                request["androidPackageName"] = settings.android_package_name
        return self.api("POST", "/v1/accounts:sendOobCode", request, tenant=True)

    def send_password_reset_email(self, email: str, settings: ActionCodeSettings | None = None) -> dict:
        """sendPasswordResetEmail (core/strategies/email_and_password.ts:80-130)."""
        data = self._oob({"requestType": "PASSWORD_RESET", "email": email, "clientType": "CLIENT_TYPE_WEB"}, settings)
        return js_GetOobCodeResponse(data)

    def send_sign_in_link_to_email(self, email: str, settings: ActionCodeSettings) -> dict:
        """sendSignInLinkToEmail (core/strategies/email_link.ts:82-118): handleCodeInApp asserted."""
        assert settings.handle_code_in_app, "auth/argument-error (email_link.ts:97-101)"
        data = self._oob({"requestType": "EMAIL_SIGNIN", "email": email, "clientType": "CLIENT_TYPE_WEB"}, settings)
        return js_GetOobCodeResponse(data)

    def check_action_code(self, code: str) -> dict:
        """checkActionCode (core/strategies/email_and_password.ts:186-247)."""
        data = self.api("POST", "/v1/accounts:resetPassword", {"oobCode": code}, tenant=True)
        return js_ResetPasswordResponse(data, check=True)

    def verify_password_reset_code(self, code: str) -> str:
        """verifyPasswordResetCode (core/strategies/email_and_password.ts:249-256)."""
        return self.check_action_code(code)["email"]

    def confirm_password_reset(self, code: str, new_password: str) -> dict:
        """confirmPasswordReset (core/strategies/email_and_password.ts:138-159)."""
        data = self.api("POST", "/v1/accounts:resetPassword", {"oobCode": code, "newPassword": new_password},
                        tenant=True)
        return js_ResetPasswordResponse(data, check=False)

    def apply_action_code(self, code: str) -> dict:
        """applyActionCode (api/account_management/email_and_password.ts:94-104): update {oobCode} (t)."""
        return self.api("POST", "/v1/accounts:update", {"oobCode": code}, tenant=True)

    def fetch_sign_in_methods_for_email(self, email: str) -> list[str]:
        """fetchSignInMethodsForEmail (core/strategies/email.ts:40-60): continueUri is the page's URL."""
        data = self.api("POST", "/v1/accounts:createAuthUri", {"identifier": email, "continueUri": self.origin + "/"},
                        tenant=True)
        js_CreateAuthUriResponse(data)
        return data.get("signinMethods") or []

    def initialize_recaptcha_config(self) -> dict:
        """initializeRecaptchaConfig (platform_browser/recaptcha/recaptcha_enterprise_verifier.ts:395-414):
        GET /v2/recaptchaConfig?clientType=CLIENT_TYPE_WEB&version=RECAPTCHA_ENTERPRISE[&tenantId]&key=K."""
        data = self.api("GET", "/v2/recaptchaConfig", {"clientType": "CLIENT_TYPE_WEB",
                                                       "version": "RECAPTCHA_ENTERPRISE"}, tenant=True)
        self.recaptcha_config = js_GetRecaptchaConfigResponse(data)
        return self.recaptcha_config

    def validate_password(self, password: str) -> dict:
        """validatePassword (core/auth/auth_impl.ts:488-511 + password_policy_impl.ts): fetches the policy
        once (GET /v2/passwordPolicy, (t)), checks its schema version, validates locally."""
        if self.password_policy is None:
            data = self.api("GET", "/v2/passwordPolicy", {}, tenant=True)
            self.password_policy = js_GetPasswordPolicyResponse(data)
        options = self.password_policy["customStrengthOptions"]
        minimum = options.get("minPasswordLength", 6)
        maximum = options.get("maxPasswordLength")
        status = {"meetsMinPasswordLength": len(password) >= minimum}
        if maximum:
            status["meetsMaxPasswordLength"] = len(password) <= maximum
        status["isValid"] = all(status.values())
        return status

    def revoke_access_token(self, token: str) -> dict:
        """Auth.revokeAccessToken (core/auth/auth_impl.ts:601-616)."""
        request = {"providerId": "apple.com", "tokenType": "ACCESS_TOKEN", "token": token,
                   "idToken": self.get_id_token()}
        if self.tenant_id is not None:
            request["tenantId"] = self.tenant_id
        return js_RevokeTokenResponse(self.api("POST", "/v2/accounts:revokeToken", request))

    # -- User -------------------------------------------------------------------------------------------------

    def reload(self) -> SdkUser:
        """reload (core/user/reload.ts:84-94)."""
        user = self._require_user()
        self._reload(user)
        return user

    def link_email_password(self, email: str, password: str) -> AuthDataResult:
        """linkWithCredential(EmailAuthProvider.credential) (core/strategies/credential.ts:93-102): lookup,
        then signUp {idToken, returnSecureToken, email, password, clientType} (no tenantId,
        api/account_management/email_and_password.ts:75-85), then lookup."""
        self._assert_linked_status(False, "password")
        token = self.get_id_token()
        data = self._signing_out(lambda: self.api("POST", "/v1/accounts:signUp", {
            "idToken": token, "returnSecureToken": True, "email": email, "password": password,
            "clientType": "CLIENT_TYPE_WEB"}, sign_in=True))
        js_SignUpResponse(data)
        self._require_user().password_expected = True
        self._update_tokens(data, reload=True)
        return AuthDataResult(self._require_user(), None, None, data)

    def link_email_link(self, email: str, link: str) -> AuthDataResult:
        """linkWithCredential(EmailAuthProvider.credentialWithLink) -> signInWithEmailLinkForLinking
        (core/credentials/email.ts:138-165; api/authentication/email_link.ts:57-69)."""
        self._assert_linked_status(False, "password")
        token = self.get_id_token()
        data = self._signing_out(lambda: self.api("POST", "/v1/accounts:signInWithEmailLink", {
            "idToken": token, "email": email, "oobCode": query_of(link)["oobCode"]}, sign_in=True, tenant=True))
        js_SignInWithEmailLinkResponse(data)
        self._update_tokens(data, reload=True)
        return AuthDataResult(self._require_user(), None, None, data)

    def link_credential(self, provider_id: str, *, id_token: str | None = None, access_token: str | None = None,
                        secret: str | None = None, nonce: str | None = None) -> AuthDataResult:
        """linkWithCredential(OAuthCredential) (core/strategies/credential.ts:93-102; oauth.ts:160-167)."""
        self._assert_linked_status(False, provider_id)
        request = self._idp_request(provider_id, id_token=id_token, access_token=access_token, secret=secret,
                                    nonce=nonce)
        request["idToken"] = self.get_id_token()
        data = self._signing_out(lambda: self.api("POST", "/v1/accounts:signInWithIdp", request, sign_in=True,
                                                  tenant=True))
        js_SignInWithIdpResponse(data)
        self._update_tokens(data, reload=True)
        return AuthDataResult(self._require_user(), data["providerId"], data.get("isNewUser"), data)

    def unlink(self, provider_id: str) -> SdkUser:
        """unlink (core/user/link_unlink.ts:33-55): lookup, update {idToken, deleteProvider} (no tenantId); the
        providers kept are the answer's providerUserInfo."""
        self._assert_linked_status(True, provider_id)
        user = self._require_user()
        token = self.get_id_token()
        data = self.api("POST", "/v1/accounts:update", {"idToken": token, "deleteProvider": [provider_id]})
        remaining = set(user.provider_data) - {provider_id}
        js_DeleteLinkedAccountsResponse(data, remaining=remaining)
        user.provider_data = {k: v for k, v in user.provider_data.items() if k in remaining}
        if provider_id == "password":
            user.password_expected = False
        return user

    def update_profile(self, *, display_name: Any = UNSET, photo_url: Any = UNSET) -> dict:
        """updateProfile (core/user/account_info.ts:33-76): update {idToken, displayName, photoUrl,
        returnSecureToken} where undefined fields are dropped and null ones kept; no lookup; the local user
        takes displayName / photoUrl from the answer."""
        if display_name is UNSET and photo_url is UNSET:
            return {}
        user = self._require_user()
        request: dict[str, Any] = {"idToken": self.get_id_token()}
        if display_name is not UNSET:
            request["displayName"] = display_name
        if photo_url is not UNSET:
            request["photoUrl"] = photo_url
        request["returnSecureToken"] = True
        data = self._signing_out(lambda: self.api("POST", "/v1/accounts:update", request))
        user.display_name = data.get("displayName") or None
        user.photo_url = data.get("photoUrl") or None
        self._update_tokens(data, reload=False)
        return data

    def update_password(self, password: str) -> dict:
        """updatePassword (core/user/account_info.ts:95-126): update then lookup."""
        data = self._signing_out(lambda: self.api("POST", "/v1/accounts:update", {
            "idToken": self.get_id_token(), "returnSecureToken": True, "password": password}))
        js_UpdateEmailPasswordResponse(data)
        self._require_user().password_expected = True
        self._update_tokens(data, reload=True)
        return data

    def update_email(self, email: str) -> dict:
        """updateEmail (core/user/account_info.ts:75-126): update then lookup."""
        data = self._signing_out(lambda: self.api("POST", "/v1/accounts:update", {
            "idToken": self.get_id_token(), "returnSecureToken": True, "email": email}))
        js_UpdateEmailPasswordResponse(data)
        self._update_tokens(data, reload=True)
        return data

    def send_email_verification(self, settings: ActionCodeSettings | None = None) -> dict:
        """sendEmailVerification (core/strategies/email.ts:103-129): a reload when the answer's email differs."""
        user = self._require_user()
        data = self._oob({"requestType": "VERIFY_EMAIL", "idToken": self.get_id_token()}, settings)
        js_GetOobCodeResponse(data, email=user.email)
        if data.get("email") != user.email:
            self._reload(user)
        return data

    def delete(self) -> dict:
        """UserImpl.delete (core/user/user_impl.ts:206-220): delete {idToken}, then sign-out."""
        token = self.get_id_token()
        data = self._signing_out(lambda: self.api("POST", "/v1/accounts:delete", {"idToken": token}))
        self.user = None
        return data

    # -- the conformance suite's common names (test_sdk_conformance.py) --------------------------------

    send_password_reset = send_password_reset_email
    send_sign_in_link = send_sign_in_link_to_email
    fetch_sign_in_methods = fetch_sign_in_methods_for_email
    # Auth.revokeAccessToken; Apple's revokeToken(withAuthorizationCode:) sends tokenType "3" and no tenantId.
    revoke_token = revoke_access_token

    def get_project_config(self) -> dict:
        """_getProjectConfig (api/project_config/get_project_config.ts): GET /v1/projects, no tenantId (origin
        validation outside emulator mode)."""
        return js_GetProjectConfigResponse(self.api("GET", "/v1/projects", {}))


# ======================================================================================
# Helpers for the tests
# ======================================================================================

def new_email(prefix: str = "sdk", domain: str = "example.com") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}@{domain}"


def reauth_window(stack) -> float:
    """The stack's re-authentication window in seconds (TESSERA_REAUTH_WINDOW, 3 s in the test stack)."""
    from conftest import parse_duration
    raw = stack.env.get("TESSERA_REAUTH_WINDOW")
    return parse_duration(raw) if raw else 3.0


def wait_past_reauth_window(stack, id_token: str) -> None:
    """Sleeps until the token's auth_time is older than the re-authentication window (whole seconds)."""
    auth_time = id_token_claims(id_token)["auth_time"]
    remaining = auth_time + reauth_window(stack) + 1.05 - time.time()
    if remaining > 0:
        time.sleep(remaining)


def wait_for_next_second(since: float) -> None:
    """validSince has one-second resolution (docs/protocol/tokens.md#checking-an-id-token): sleep into the second after ``since``."""
    remaining = int(since) + 1.02 - time.time()
    if remaining > 0:
        time.sleep(remaining)


class ServiceAccount:
    """A tenant's service account generated by Tessera (docs/protocol/admin.md#tesseras-own-admin-resources), for minting custom tokens."""

    def __init__(self, admin, tenant_id: str | None):
        self.admin, self.tenant_id = admin, tenant_id
        scope = f"/v2/projects/{admin.stack.project_id}"
        if tenant_id is not None:
            scope += f"/tenants/{tenant_id}"
        self.path = f"{scope}/serviceAccounts"
        resp = admin.request("POST", self.path, json={"displayName": f"sdk {uuid.uuid4().hex[:6]}"})
        assert resp.status_code == 200, describe(resp)
        self.account = resp.json()
        from cryptography.hazmat.primitives import serialization
        self.key = serialization.load_pem_private_key(self.account["private_key"].encode(), password=None)

    def mint(self, uid: str, claims: dict | None = None) -> str:
        """A custom token as the Admin SDK signs it (docs/protocol/tokens.md#custom-tokens)."""
        now = int(time.time())
        payload: dict[str, Any] = {"iss": self.account["client_email"], "sub": self.account["client_email"],
                                   "aud": CUSTOM_TOKEN_AUDIENCE, "iat": now, "exp": now + 3600, "uid": uid}
        if claims:
            payload["claims"] = claims
        if self.tenant_id is not None:
            payload["tenant_id"] = self.tenant_id
        return jwt.encode(payload, self.key, algorithm="RS256", headers={"kid": self.account["private_key_id"]})

    def delete(self) -> None:
        try:
            self.admin.request("DELETE", f"{self.path}/{self.account['accountId']}")
        except requests.RequestException:
            pass
