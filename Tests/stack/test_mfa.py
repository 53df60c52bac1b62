"""TOTP second factors through the stack (docs/protocol/mfa.md): enrolling with
`mfaEnrollment:start`/`finalize`, the challenge a first-factor sign-in of an enrolled user gets
instead of tokens (password and email link), `mfaSignIn:finalize`, the second factor in ID tokens
and across refreshes, `mfaInfo` on the user record, withdrawing (which ends the sessions signed in
with the factor), and every refusal: wrong, reused and foreign codes, an unknown enrolment, a
foreign or exhausted pending credential, an unverified email, a first factor that cannot take a
second, TOTP switched off, the per-user limit on wrong codes; and the seed sealed at rest.

Codes are computed here, from the shared secret the enrolment answers (RFC 6238: HMAC-SHA-1, 6 digits,
30 s), as an authenticator app would."""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import struct
import time
import uuid

import pytest

from conftest import describe, expect_error, expect_ok, oob_link, psql, unverified_claims

PASSWORD = "correct horse 1"
V2 = "/v2/accounts"
TOTP_ON = {"providerConfigs": [{"state": "ENABLED", "totpProviderConfig": {"adjacentIntervals": 5}}]}


def totp(secret: str, step: int) -> str:
    key = base64.b32decode(secret + "=" * (-len(secret) % 8))
    mac = hmac.new(key, struct.pack(">Q", step), hashlib.sha1).digest()
    offset = mac[-1] & 0x0F
    value = struct.unpack(">I", mac[offset:offset + 4])[0] & 0x7FFFFFFF
    return f"{value % 1_000_000:06d}"


def now_step() -> int:
    return int(time.time()) // 30


@pytest.fixture
def tenant(make_tenant) -> str:
    return make_tenant(allowPasswordSignup=True, enableEmailLinkSignin=True, mfaConfig=TOTP_ON)["tenantId"]


def address() -> str:
    return f"mfa-{uuid.uuid4().hex[:12]}@example.com"


def verified_user(client, admin, tenant: str, email: str | None = None) -> dict:
    """A password user whose email an admin marked verified, signed in again."""
    email = email or address()
    signed_up = expect_ok(client.post("/v1/accounts:signUp", {"tenantId": tenant, "email": email,
                                                               "password": PASSWORD}))
    expect_ok(admin.request("POST", admin.accounts_path(tenant, "update"),
                            json={"localId": signed_up["localId"], "emailVerified": True}))
    return password_sign_in(client, tenant, email)


def password_sign_in(client, tenant: str, email: str) -> dict:
    return expect_ok(client.post("/v1/accounts:signInWithPassword",
                                 {"tenantId": tenant, "email": email, "password": PASSWORD, "returnSecureToken": True}))


def start(client, tenant: str, id_token: str):
    return client.post(f"{V2}/mfaEnrollment:start", {"idToken": id_token, "tenantId": tenant, "totpEnrollmentInfo": {}})


def finalize(client, tenant: str, id_token: str, session_info: str, code: str, name: str | None = "phone app"):
    body = {"idToken": id_token, "tenantId": tenant,
            "totpVerificationInfo": {"sessionInfo": session_info, "verificationCode": code}}
    if name is not None:
        body["displayName"] = name
    return client.post(f"{V2}/mfaEnrollment:finalize", body)


def enrol(client, tenant: str, id_token: str) -> tuple[str, dict]:
    """Enrols a TOTP factor; returns its shared secret and the finalize answer."""
    info = expect_ok(start(client, tenant, id_token))["totpSessionInfo"]
    answer = expect_ok(finalize(client, tenant, id_token, info["sessionInfo"], totp(info["sharedSecretKey"],
                                                                                     now_step())))
    return info["sharedSecretKey"], answer


def finalize_sign_in(client, tenant: str, pending: str, enrollment: str, code: str):
    return client.post(f"{V2}/mfaSignIn:finalize", {
        "tenantId": tenant, "mfaPendingCredential": pending, "mfaEnrollmentId": enrollment,
        "totpVerificationInfo": {"verificationCode": code}})


def test_enrol_sign_in_with_the_factor_and_withdraw_it(client, admin, tenant, stack):
    email = address()
    first = verified_user(client, admin, tenant, email)

    resp = start(client, tenant, first["idToken"])
    info = expect_ok(resp)["totpSessionInfo"]
    assert info["verificationCodeLength"] == 6 and info["hashingAlgorithm"] == "SHA1" and info["periodSec"] == 30
    assert len(base64.b32decode(info["sharedSecretKey"] + "=" * (-len(info["sharedSecretKey"]) % 8))) == 20
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", info["finalizeEnrollmentTime"]), info
    deadline = time.mktime(time.strptime(info["finalizeEnrollmentTime"][:19], "%Y-%m-%dT%H:%M:%S")) - time.timezone
    assert 300 < deadline - time.time() <= 600, describe(resp)
    secret = info["sharedSecretKey"]
    step = now_step()

    enrolled = expect_ok(finalize(client, tenant, first["idToken"], info["sessionInfo"], totp(secret, step)))
    assert set(enrolled) == {"idToken", "refreshToken"}, enrolled
    claims = unverified_claims(enrolled["idToken"])
    assert claims["firebase"]["sign_in_second_factor"] == "totp"
    enrollment = claims["firebase"]["second_factor_identifier"]
    assert claims["firebase"]["sign_in_provider"] == "password" and claims["firebase"]["tenant"] == tenant

    # The factor is on the user record, for the user and for admins.
    [user] = expect_ok(client.lookup(enrolled["idToken"], tenant))["users"]
    [factor] = user["mfaInfo"]
    assert factor["mfaEnrollmentId"] == enrollment and factor["displayName"] == "phone app"
    assert factor["totpInfo"] == {} and "phoneInfo" not in factor
    # RFC 3339 with milliseconds (the Apple SDK's date format needs them).
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", factor["enrolledAt"]), factor
    enrolled_at = time.mktime(time.strptime(factor["enrolledAt"][:19], "%Y-%m-%dT%H:%M:%S")) - time.timezone
    assert time.time() - 120 < enrolled_at <= time.time() + 1

    # The same enrolment session does not enrol twice.
    expect_error(finalize(client, tenant, enrolled["idToken"], info["sessionInfo"], totp(secret, step + 1)),
                 "INVALID_SESSION_INFO")

    # A refresh keeps the second factor in the ID token.
    refreshed = client.refresh(enrolled["refreshToken"])
    assert unverified_claims(refreshed["id_token"])["firebase"]["second_factor_identifier"] == enrollment

    # A password sign-in now answers the challenge, not tokens; the sign-in is not recorded yet.
    def last_login() -> int:
        [record] = admin.lookup_users(tenant, [first["localId"]])
        return int(record["lastLoginAt"])

    before = last_login()
    time.sleep(0.01)
    resp = client.post("/v1/accounts:signInWithPassword",
                       {"tenantId": tenant, "email": email, "password": PASSWORD, "returnSecureToken": True})
    pending = expect_ok(resp)
    assert "idToken" not in pending and "refreshToken" not in pending, describe(resp)
    assert pending["localId"] == first["localId"] and pending["email"] == email
    assert pending["mfaInfo"] == [factor]
    credential = pending["mfaPendingCredential"]
    assert last_login() == before

    # The code of the step the enrolment used is spent; the next one is accepted, once.
    expect_error(finalize_sign_in(client, tenant, credential, enrollment, totp(secret, step)), "INVALID_CODE")
    signed_in = expect_ok(finalize_sign_in(client, tenant, credential, enrollment, totp(secret, step + 1)))
    assert set(signed_in) == {"idToken", "refreshToken"}
    # The second factor records the sign-in.
    assert last_login() > before
    claims = unverified_claims(signed_in["idToken"])
    assert claims["firebase"]["sign_in_second_factor"] == "totp"
    assert claims["firebase"]["second_factor_identifier"] == enrollment
    assert claims["firebase"]["sign_in_provider"] == "password" and claims["sub"] == first["localId"]
    # The pending credential is spent with it.
    expect_error(finalize_sign_in(client, tenant, credential, enrollment, totp(secret, step + 2)),
                 "INVALID_MFA_PENDING_CREDENTIAL")
    # A code accepted once is not accepted again, even for another sign-in.
    again = expect_ok(client.post("/v1/accounts:signInWithPassword",
                                  {"tenantId": tenant, "email": email, "password": PASSWORD}))
    expect_error(finalize_sign_in(client, tenant, again["mfaPendingCredential"], enrollment, totp(secret, step + 1)),
                 "INVALID_CODE")

    # Withdrawing ends the sessions signed in with the factor and answers a new session without it.
    resp = client.post(f"{V2}/mfaEnrollment:withdraw",
                       {"idToken": signed_in["idToken"], "tenantId": tenant, "mfaEnrollmentId": enrollment})
    withdrawn = expect_ok(resp)
    assert "sign_in_second_factor" not in unverified_claims(withdrawn["idToken"])["firebase"], describe(resp)
    expect_error(client.refresh_raw(signed_in["refreshToken"]), "TOKEN_EXPIRED")
    expect_error(client.refresh_raw(enrolled["refreshToken"]), "TOKEN_EXPIRED")
    client.refresh(withdrawn["refreshToken"])
    # …and the pending sign-ins of the user.
    expect_error(finalize_sign_in(client, tenant, again["mfaPendingCredential"], enrollment, totp(secret, step + 2)),
                 "INVALID_MFA_PENDING_CREDENTIAL")
    [user] = expect_ok(client.lookup(withdrawn["idToken"], tenant))["users"]
    assert "mfaInfo" not in user
    assert "idToken" in password_sign_in(client, tenant, email)
    expect_error(client.post(f"{V2}/mfaEnrollment:withdraw", {"idToken": withdrawn["idToken"], "tenantId": tenant,
                                                               "mfaEnrollmentId": enrollment}),
                 "MFA_ENROLLMENT_NOT_FOUND")


def test_an_email_link_sign_in_is_challenged_too(client, admin, tenant, mail_sink):
    email = address()
    user = verified_user(client, admin, tenant, email)
    secret, enrolled = enrol(client, tenant, user["idToken"])
    enrollment = unverified_claims(enrolled["idToken"])["firebase"]["second_factor_identifier"]
    expect_ok(client.post("/v1/accounts:sendOobCode", {"tenantId": tenant, "requestType": "EMAIL_SIGNIN",
                                                       "email": email, "continueUrl": "http://localhost/x",
                                                       "canHandleCodeInApp": True}))
    [mail] = mail_sink.wait_for(email)
    _, params = oob_link(mail)
    resp = client.post("/v1/accounts:signInWithEmailLink",
                       {"tenantId": tenant, "email": email, "oobCode": params["oobCode"]})
    pending = expect_ok(resp)
    assert "idToken" not in pending and pending["mfaInfo"][0]["mfaEnrollmentId"] == enrollment, describe(resp)
    assert pending["kind"] == "identitytoolkit#EmailLinkSigninResponse"
    signed_in = expect_ok(finalize_sign_in(client, tenant, pending["mfaPendingCredential"], enrollment,
                                           totp(secret, now_step() + 1)))
    assert unverified_claims(signed_in["idToken"])["firebase"]["sign_in_provider"] == "password"


def test_wrong_codes_are_limited_per_pending_sign_in_and_per_user(client, admin, tenant):
    email = address()
    user = verified_user(client, admin, tenant, email)
    secret, enrolled = enrol(client, tenant, user["idToken"])
    enrollment = unverified_claims(enrolled["idToken"])["firebase"]["second_factor_identifier"]
    right = totp(secret, now_step() + 1)
    wrong = f"{(int(right) + 1) % 1_000_000:06d}"

    first = password_sign_in(client, tenant, email)["mfaPendingCredential"]
    for _ in range(5):
        expect_error(finalize_sign_in(client, tenant, first, enrollment, wrong), "INVALID_CODE")
    # The fifth wrong code ended that sign-in, right code or not.
    expect_error(finalize_sign_in(client, tenant, first, enrollment, right), "INVALID_MFA_PENDING_CREDENTIAL")

    second = password_sign_in(client, tenant, email)["mfaPendingCredential"]
    for _ in range(5):
        expect_error(finalize_sign_in(client, tenant, second, enrollment, wrong), "INVALID_CODE")
    third = password_sign_in(client, tenant, email)["mfaPendingCredential"]
    # Ten wrong codes in the hour: the user's second factor is refused for the rest of it.
    resp = finalize_sign_in(client, tenant, third, enrollment, right)
    expect_error(resp, "TOO_MANY_ATTEMPTS_TRY_LATER")
    assert int(resp.headers.get("Retry-After", "0")) > 0, describe(resp)


def test_refusals(client, admin, tenant, make_tenant):
    # An unverified email cannot enrol.
    unverified = expect_ok(client.post("/v1/accounts:signUp", {"tenantId": tenant, "email": address(),
                                                                "password": PASSWORD}))
    expect_error(start(client, tenant, unverified["idToken"]), "UNVERIFIED_EMAIL")
    # Nor can an anonymous user (its first factor cannot take a second).
    other = make_tenant(enableAnonymousUser=True, mfaConfig=TOTP_ON)["tenantId"]
    anonymous = client.sign_up_anonymous(other)
    expect_error(start(client, other, anonymous.id_token), "UNSUPPORTED_FIRST_FACTOR")
    # A scope without TOTP refuses it.
    plain = make_tenant(allowPasswordSignup=True)["tenantId"]
    user = verified_user(client, admin, plain)
    expect_error(start(client, plain, user["idToken"]), "OPERATION_NOT_ALLOWED")
    # Missing parts.
    user = verified_user(client, admin, tenant)
    expect_error(client.post(f"{V2}/mfaEnrollment:start", {"idToken": user["idToken"], "tenantId": tenant}),
                 "INVALID_ARGUMENT")
    expect_error(client.post(f"{V2}/mfaEnrollment:start", {"tenantId": tenant, "totpEnrollmentInfo": {}}),
                 "MISSING_ID_TOKEN")
    info = expect_ok(start(client, tenant, user["idToken"]))["totpSessionInfo"]
    expect_error(finalize(client, tenant, user["idToken"], "", "123456"), "MISSING_SESSION_INFO")
    expect_error(finalize(client, tenant, user["idToken"], info["sessionInfo"], ""), "MISSING_CODE")
    # A wrong first code, a changed session and another user's session do not enrol.
    code = totp(info["sharedSecretKey"], now_step())
    expect_error(finalize(client, tenant, user["idToken"], info["sessionInfo"], f"{(int(code) + 1) % 10**6:06d}"),
                 "INVALID_CODE")
    tampered = info["sessionInfo"][:-2] + ("AA" if info["sessionInfo"][-2:] != "AA" else "BB")
    expect_error(finalize(client, tenant, user["idToken"], tampered, code), "INVALID_SESSION_INFO")
    someone = verified_user(client, admin, tenant)
    expect_error(finalize(client, tenant, someone["idToken"], info["sessionInfo"], code), "INVALID_SESSION_INFO")
    secret, enrolled = enrol(client, tenant, user["idToken"])
    enrollment = unverified_claims(enrolled["idToken"])["firebase"]["second_factor_identifier"]

    email = unverified_claims(user["idToken"])["email"]
    pending = password_sign_in(client, tenant, email)["mfaPendingCredential"]
    code = totp(secret, now_step() + 1)
    # An unknown enrolment, or another user's.
    expect_error(finalize_sign_in(client, tenant, pending, "x" * 28, code), "MFA_ENROLLMENT_NOT_FOUND")
    _, theirs = enrol(client, tenant, someone["idToken"])
    their_enrollment = unverified_claims(theirs["idToken"])["firebase"]["second_factor_identifier"]
    expect_error(finalize_sign_in(client, tenant, pending, their_enrollment, code), "MFA_ENROLLMENT_NOT_FOUND")
    # A pending credential is good only in its own tenant, and only as issued.
    expect_error(finalize_sign_in(client, other, pending, enrollment, code), "INVALID_MFA_PENDING_CREDENTIAL")
    expect_error(finalize_sign_in(client, tenant, pending[:-1] + ("A" if pending[-1] != "A" else "B"), enrollment,
                                  code), "INVALID_MFA_PENDING_CREDENTIAL")
    expect_error(finalize_sign_in(client, tenant, "", enrollment, code), "MISSING_CREDENTIAL")
    expect_error(finalize_sign_in(client, tenant, pending, "", code), "MISSING_MFA_ENROLLMENT_ID")
    expect_error(finalize_sign_in(client, tenant, pending, enrollment, ""), "MISSING_CODE")
    # A pending credential is not a refresh token.
    expect_error(client.refresh_raw(pending), "INVALID_REFRESH_TOKEN")
    # After all that, the right code still signs in.
    expect_ok(finalize_sign_in(client, tenant, pending, enrollment, code))
    # Phone factors are off in this scope (TOTP only).
    expect_error(client.post(f"{V2}/mfaSignIn:start", {"tenantId": tenant, "mfaPendingCredential": pending,
                                                       "mfaEnrollmentId": enrollment, "phoneSignInInfo": {}}),
                 "OPERATION_NOT_ALLOWED")


def test_switching_totp_off_stops_asking_for_it(client, admin, tenant):
    email = address()
    user = verified_user(client, admin, tenant, email)
    enrol(client, tenant, user["idToken"])
    assert "mfaPendingCredential" in password_sign_in(client, tenant, email)
    expect_ok(admin.patch_tenant(tenant, {"mfaConfig": {"providerConfigs": []}}, "mfaConfig.providerConfigs"))
    assert "idToken" in password_sign_in(client, tenant, email)


def test_the_seed_is_sealed_at_rest(client, admin, tenant, stack):
    user = verified_user(client, admin, tenant)
    secret, _ = enrol(client, tenant, user["idToken"])
    raw = base64.b32decode(secret + "=" * (-len(secret) % 8))
    stored = psql(stack, f"SELECT totp_secret FROM mfa_enrollments WHERE local_id = '{user['localId']}'").strip()
    assert stored.startswith("v1.") and len(stored.split(".")) == 3
    for form in (secret, raw.hex(), base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode().rstrip("=")):
        assert form not in stored


def test_admins_read_factors_and_remove_them(client, admin, tenant):
    """The admin API (docs/protocol/mfa.md#admins): `mfaInfo` in lookups and the export, `mfa: {}` removing every
    factor and `mfa.enrollments` keeping those it names, as the Node Admin SDK sends them (`updateUser` with
    `multiFactor.enrolledFactors`); what cannot be added."""
    email = address()
    user = verified_user(client, admin, tenant, email)
    secret, enrolled = enrol(client, tenant, user["idToken"])
    first = unverified_claims(enrolled["idToken"])["firebase"]["second_factor_identifier"]
    fresh = password_sign_in(client, tenant, email)
    second_signed = expect_ok(finalize_sign_in(client, tenant, fresh["mfaPendingCredential"], first,
                                               totp(secret, now_step() + 1)))
    info = expect_ok(start(client, tenant, second_signed["idToken"]))["totpSessionInfo"]
    second_enrolled = expect_ok(finalize(client, tenant, second_signed["idToken"], info["sessionInfo"],
                                         totp(info["sharedSecretKey"], now_step()), name=None))
    second = unverified_claims(second_enrolled["idToken"])["firebase"]["second_factor_identifier"]

    [record] = admin.lookup_users(tenant, [user["localId"]])
    assert [f["mfaEnrollmentId"] for f in record["mfaInfo"]] == [first, second]
    assert record["mfaInfo"][0]["totpInfo"] == {} and "displayName" not in record["mfaInfo"][1]
    page = expect_ok(admin.request("GET", admin.accounts_path(tenant, "batchGet"), params={"maxResults": 100}))
    [exported] = [u for u in page["users"] if u["localId"] == user["localId"]]
    assert [f["mfaEnrollmentId"] for f in exported["mfaInfo"]] == [first, second]

    update = admin.accounts_path(tenant, "update")
    # Keeping the second factor (the Admin SDK's enrolledFactors list) removes the first, and ends the sessions
    # signed in with it; the one signed in with the second goes on.
    resp = admin.request("POST", update, json={"localId": user["localId"], "mfa": {"enrollments": [
        {"mfaEnrollmentId": second, "enrolledAt": record["mfaInfo"][1]["enrolledAt"]}]}})
    assert [f["mfaEnrollmentId"] for f in admin.lookup_users(tenant, [user["localId"]])[0]["mfaInfo"]] == [second], \
        describe(resp)
    expect_error(client.refresh_raw(enrolled["refreshToken"]), "TOKEN_EXPIRED")
    expect_error(client.refresh_raw(second_signed["refreshToken"]), "TOKEN_EXPIRED")
    client.refresh(second_enrolled["refreshToken"])
    # An entry that would add a factor needs a number (a TOTP factor cannot be added by an admin); a TOTP
    # factor takes no number. Nothing changes.
    for entry, code in (({"mfaEnrollmentId": "x" * 28}, "INVALID_MFA_PHONE_NUMBER"),
                        ({"phoneInfo": "+1 555 555 0100"}, "INVALID_MFA_PHONE_NUMBER"),
                        ({"mfaEnrollmentId": second, "phoneInfo": "+16505550123"}, "INVALID_ARGUMENT")):
        expect_error(admin.request("POST", update, json={"localId": user["localId"], "mfa": {"enrollments": [entry]}}),
                     code)
    assert [f["mfaEnrollmentId"] for f in admin.lookup_users(tenant, [user["localId"]])[0]["mfaInfo"]] == [second]
    # `mfa: {}` (the Admin SDK's enrolledFactors: null) removes them all: the user signs in with the password.
    expect_ok(admin.request("POST", update, json={"localId": user["localId"], "mfa": {}}))
    assert "mfaInfo" not in admin.lookup_users(tenant, [user["localId"]])[0]
    expect_error(client.refresh_raw(second_enrolled["refreshToken"]), "TOKEN_EXPIRED")
    assert "idToken" in password_sign_in(client, tenant, email)


def test_an_identity_provider_sign_in_is_challenged_and_links_first(client, admin, make_tenant, fake_idp):
    """signInWithIdp of a user with a factor: the provider's side of the answer, `mfaPendingCredential` and
    `mfaInfo`, no tokens; a provider met for the first time is linked all the same (docs/protocol/mfa.md#signing-in);
    the second step's tokens name the provider as the first factor."""
    from fake_idp import configure_provider, sign_in_with_idp

    tenant = make_tenant(allowPasswordSignup=True, mfaConfig=TOTP_ON)["tenantId"]
    for provider in ("apple.com", "google.com"):
        configure_provider(admin, fake_idp, provider, tenant_id=tenant)
    email = f"mfa-{uuid.uuid4().hex[:10]}@gmail.com"
    apple_sub, google_sub = f"apple-{uuid.uuid4().hex[:12]}", f"google-{uuid.uuid4().hex[:12]}"

    def idp(provider: str, sub: str):
        return sign_in_with_idp(client, provider, tenant_id=tenant, id_token=fake_idp.id_token(provider, sub, email=email))

    first = expect_ok(idp("apple.com", apple_sub))
    assert first["emailVerified"] is True, first
    secret, enrolled = enrol(client, tenant, first["idToken"])
    enrollment = unverified_claims(enrolled["idToken"])["firebase"]["second_factor_identifier"]
    assert unverified_claims(enrolled["idToken"])["firebase"]["sign_in_provider"] == "apple.com"

    resp = idp("google.com", google_sub)
    pending = expect_ok(resp)
    assert "idToken" not in pending and "refreshToken" not in pending, describe(resp)
    assert pending["providerId"] == "google.com" and pending["localId"] == first["localId"]
    assert [f["mfaEnrollmentId"] for f in pending["mfaInfo"]] == [enrollment]
    [record] = admin.lookup_users(tenant, [first["localId"]])
    assert sorted(p["providerId"] for p in record["providerUserInfo"]) == ["apple.com", "google.com"]
    signed_in = expect_ok(finalize_sign_in(client, tenant, pending["mfaPendingCredential"], enrollment,
                                           totp(secret, now_step() + 1)))
    claims = unverified_claims(signed_in["idToken"])
    assert claims["firebase"]["sign_in_provider"] == "google.com"
    assert claims["firebase"]["sign_in_second_factor"] == "totp"


def test_a_phone_factor_is_enrolled_and_signs_in_by_sms(client, admin, make_tenant, sms_sink):
    """docs/protocol/mfa.md#phone-factors: `phoneEnrollmentInfo` texts a code and `phoneVerificationInfo` enrols the
    number; a sign-in then answers the factor masked, `mfaSignIn:start` texts a code for it, and the code finishes
    the sign-in. The codes are phone sign-in's (single use, counted, through the SMS sink)."""
    from sms_sink import sms_code

    tenant = make_tenant(allowPasswordSignup=True,
                         mfaConfig={"state": "ENABLED", "enabledProviders": ["PHONE_SMS"]})["tenantId"]
    number = f"+1650555{uuid.uuid4().int % 10_000:04d}"
    # An unverified email enrols nothing, as for TOTP; a region the scope does not text gets no code.
    unverified = expect_ok(client.post("/v1/accounts:signUp", {"tenantId": tenant, "email": address(),
                                                               "password": PASSWORD, "returnSecureToken": True}))
    expect_error(client.post(f"{V2}/mfaEnrollment:start", {"idToken": unverified["idToken"], "tenantId": tenant,
                                                           "phoneEnrollmentInfo": {"phoneNumber": number}}),
                 "UNVERIFIED_EMAIL")
    expect_ok(admin.patch_tenant(tenant, {"smsRegionConfig": {"allowlistOnly": {"allowedRegions": ["GB"]}}},
                                 "smsRegionConfig"))
    email = address()
    user = verified_user(client, admin, tenant, email)
    expect_error(client.post(f"{V2}/mfaEnrollment:start", {"idToken": user["idToken"], "tenantId": tenant,
                                                           "phoneEnrollmentInfo": {"phoneNumber": number}}),
                 "OPERATION_NOT_ALLOWED")
    expect_ok(admin.patch_tenant(tenant, {}, "smsRegionConfig"))
    resp = client.post(f"{V2}/mfaEnrollment:start", {"idToken": user["idToken"], "tenantId": tenant,
                                                     "phoneEnrollmentInfo": {"phoneNumber": number}})
    session_info = expect_ok(resp)["phoneSessionInfo"]["sessionInfo"]
    [message] = sms_sink.wait_for(number)
    resp = client.post(f"{V2}/mfaEnrollment:finalize", {
        "idToken": user["idToken"], "tenantId": tenant, "displayName": "work phone",
        "phoneVerificationInfo": {"sessionInfo": session_info, "code": sms_code(message)}})
    enrolled = expect_ok(resp)
    claims = unverified_claims(enrolled["idToken"])
    assert claims["firebase"]["sign_in_second_factor"] == "phone"
    enrollment = claims["firebase"]["second_factor_identifier"]
    [record] = expect_ok(client.lookup(enrolled["idToken"], tenant))["users"]
    assert record["mfaInfo"][0]["phoneInfo"] == number and "totpInfo" not in record["mfaInfo"][0]
    # The same number twice is refused.
    expect_error(client.post(f"{V2}/mfaEnrollment:start", {"idToken": enrolled["idToken"], "tenantId": tenant,
                                                           "phoneEnrollmentInfo": {"phoneNumber": number}}),
                 "SECOND_FACTOR_EXISTS")

    pending = password_sign_in(client, tenant, email)
    [hint] = pending["mfaInfo"]
    assert hint["mfaEnrollmentId"] == enrollment and hint["phoneInfo"] == "+*******" + number[-4:], hint
    credential = pending["mfaPendingCredential"]
    # A factor the user does not have.
    expect_error(client.post(f"{V2}/mfaSignIn:start", {"tenantId": tenant, "mfaPendingCredential": credential,
                                                       "mfaEnrollmentId": "no-such-factor", "phoneSignInInfo": {}}),
                 "MFA_ENROLLMENT_NOT_FOUND")
    # An enrolment's session is not a sign-in's.
    expect_error(client.post(f"{V2}/mfaSignIn:finalize", {
        "tenantId": tenant, "mfaPendingCredential": credential,
        "phoneVerificationInfo": {"sessionInfo": session_info, "code": sms_code(message)}}), "INVALID_SESSION_INFO")
    resp = client.post(f"{V2}/mfaSignIn:start", {"tenantId": tenant, "mfaPendingCredential": credential,
                                                 "mfaEnrollmentId": enrollment, "phoneSignInInfo": {}})
    sign_in_session = expect_ok(resp)["phoneResponseInfo"]["sessionInfo"]
    [_, message] = sms_sink.wait_for(number, 2)
    code = sms_code(message)
    wrong = f"{(int(code) + 1) % 1_000_000:06d}"
    expect_error(client.post(f"{V2}/mfaSignIn:finalize", {
        "tenantId": tenant, "mfaPendingCredential": credential,
        "phoneVerificationInfo": {"sessionInfo": sign_in_session, "code": wrong}}), "INVALID_CODE")
    signed_in = expect_ok(client.post(f"{V2}/mfaSignIn:finalize", {
        "tenantId": tenant, "mfaPendingCredential": credential,
        "phoneVerificationInfo": {"sessionInfo": sign_in_session, "code": code}}))
    claims = unverified_claims(signed_in["idToken"])
    assert claims["firebase"]["sign_in_second_factor"] == "phone"
    assert claims["firebase"]["second_factor_identifier"] == enrollment and claims["sub"] == user["localId"]
    # The pending credential and the code are spent.
    expect_error(client.post(f"{V2}/mfaSignIn:finalize", {
        "tenantId": tenant, "mfaPendingCredential": credential,
        "phoneVerificationInfo": {"sessionInfo": sign_in_session, "code": code}}), "INVALID_MFA_PENDING_CREDENTIAL")
    expect_error(client.post(f"{V2}/mfaSignIn:start", {"tenantId": tenant, "mfaPendingCredential": credential,
                                                       "mfaEnrollmentId": enrollment, "phoneSignInInfo": {}}),
                 "INVALID_MFA_PENDING_CREDENTIAL")

    # Another tenant does not know this sign-in; withdrawing the factor after its code was sent ends the
    # user's pending sign-ins, so the code finishes nothing.
    credential = password_sign_in(client, tenant, email)["mfaPendingCredential"]
    other = make_tenant(allowPasswordSignup=True,
                        mfaConfig={"state": "ENABLED", "enabledProviders": ["PHONE_SMS"]})["tenantId"]
    expect_error(client.post(f"{V2}/mfaSignIn:start", {"tenantId": other, "mfaPendingCredential": credential,
                                                       "mfaEnrollmentId": enrollment, "phoneSignInInfo": {}}),
                 "INVALID_MFA_PENDING_CREDENTIAL")
    resp = client.post(f"{V2}/mfaSignIn:start", {"tenantId": tenant, "mfaPendingCredential": credential,
                                                 "mfaEnrollmentId": enrollment, "phoneSignInInfo": {}})
    sign_in_session = expect_ok(resp)["phoneResponseInfo"]["sessionInfo"]
    [*_, message] = sms_sink.wait_for(number, 3)
    expect_ok(client.post(f"{V2}/mfaEnrollment:withdraw", {"idToken": signed_in["idToken"], "tenantId": tenant,
                                                           "mfaEnrollmentId": enrollment}))
    expect_error(client.post(f"{V2}/mfaSignIn:finalize", {
        "tenantId": tenant, "mfaPendingCredential": credential,
        "phoneVerificationInfo": {"sessionInfo": sign_in_session, "code": sms_code(message)}}),
        "INVALID_MFA_PENDING_CREDENTIAL")


PHONE_AND_TOTP = {"state": "ENABLED", "enabledProviders": ["PHONE_SMS"], **TOTP_ON}


def phone_number() -> str:
    return f"+1650555{uuid.uuid4().int % 10_000:04d}"


def accounts(admin, tenant: str) -> str:
    """`POST …/accounts`, the Admin SDKs' createUser."""
    return admin.accounts_path(tenant, "lookup").removesuffix(":lookup")


def sign_in_by_sms(client, tenant: str, email: str, enrollment: str, number: str, sms_sink) -> dict:
    """A password sign-in finished with the phone factor `enrollment`, its code read from the SMS sink."""
    from sms_sink import sms_code

    pending = password_sign_in(client, tenant, email)
    assert enrollment in [f["mfaEnrollmentId"] for f in pending["mfaInfo"]], pending
    before = len(sms_sink.to(number))
    session = expect_ok(client.post(f"{V2}/mfaSignIn:start", {
        "tenantId": tenant, "mfaPendingCredential": pending["mfaPendingCredential"], "mfaEnrollmentId": enrollment,
        "phoneSignInInfo": {}}))["phoneResponseInfo"]["sessionInfo"]
    message = sms_sink.wait_for(number, before + 1)[-1]
    signed_in = expect_ok(client.post(f"{V2}/mfaSignIn:finalize", {
        "tenantId": tenant, "mfaPendingCredential": pending["mfaPendingCredential"],
        "phoneVerificationInfo": {"sessionInfo": session, "code": sms_code(message)}}))
    claims = unverified_claims(signed_in["idToken"])["firebase"]
    assert claims["sign_in_second_factor"] == "phone" and claims["second_factor_identifier"] == enrollment
    return signed_in


def test_admins_add_phone_factors(client, admin, make_tenant, sms_sink):
    """docs/protocol/mfa.md#admins: phone factors an admin writes, as the Node Admin SDK sends them: `mfaInfo` on
    createUser (`POST …/accounts`), `mfa.enrollments` on updateUser (kept by id, renamed, renumbered, added without
    an id), and the refusals; a factor so added signs in by SMS like an enrolled one."""
    tenant = make_tenant(allowPasswordSignup=True, mfaConfig=PHONE_AND_TOTP)["tenantId"]
    email, first_number, second_number = address(), phone_number(), phone_number()
    # createUser({email, emailVerified, password, multiFactor: {enrolledFactors: [{phoneNumber, displayName,
    # factorId: 'phone'}]}}) -> signUp with mfaInfo [{displayName, phoneInfo}].
    created = expect_ok(admin.request("POST", accounts(admin, tenant), json={
        "email": email, "emailVerified": True, "password": PASSWORD,
        "mfaInfo": [{"displayName": "desk", "phoneInfo": first_number[:2] + " " + first_number[2:5] + "-"
                     + first_number[5:]}]}))
    [record] = admin.lookup_users(tenant, [created["localId"]])
    [factor] = record["mfaInfo"]
    assert factor["phoneInfo"] == first_number and factor["displayName"] == "desk", factor
    sign_in_by_sms(client, tenant, email, factor["mfaEnrollmentId"], first_number, sms_sink)

    update = admin.accounts_path(tenant, "update")
    local_id = created["localId"]
    # updateUser(uid, {multiFactor: {enrolledFactors: [existing renamed, a new one]}}): the existing factor as
    # {mfaEnrollmentId, displayName, phoneInfo, enrolledAt}, the new one without an id; the new number twice
    # counts once.
    expect_ok(admin.request("POST", update, json={"localId": local_id, "mfa": {"enrollments": [
        {"mfaEnrollmentId": factor["mfaEnrollmentId"], "displayName": "old desk", "phoneInfo": first_number,
         "enrolledAt": factor["enrolledAt"]},
        {"displayName": "mobile", "phoneInfo": second_number, "enrolledAt": "2024-05-01T10:00:00.000Z"},
        {"displayName": "mobile again", "phoneInfo": second_number}]}}))
    # Factors are listed oldest first: the new one says it was enrolled in 2024.
    [added, kept] = admin.lookup_users(tenant, [local_id])[0]["mfaInfo"]
    assert kept["mfaEnrollmentId"] == factor["mfaEnrollmentId"] and kept["displayName"] == "old desk"
    assert kept["enrolledAt"] == factor["enrolledAt"]
    assert added["phoneInfo"] == second_number and added["displayName"] == "mobile"
    assert added["enrolledAt"].startswith("2024-05-01T10:00:00")
    sign_in_by_sms(client, tenant, email, added["mfaEnrollmentId"], second_number, sms_sink)

    # Refusals, each changing nothing: an id twice, six factors, another user's factor's id, a malformed entry.
    other = expect_ok(admin.request("POST", accounts(admin, tenant), json={
        "email": address(), "emailVerified": True, "mfaInfo": [{"phoneInfo": phone_number()}]}))
    [foreign] = admin.lookup_users(tenant, [other["localId"]])[0]["mfaInfo"]
    for enrollments, code in (
            ([{"mfaEnrollmentId": kept["mfaEnrollmentId"]}, {"mfaEnrollmentId": kept["mfaEnrollmentId"]}],
             "DUPLICATE_MFA_ENROLLMENT_ID"),
            ([{"phoneInfo": phone_number()} for _ in range(6)], "SECOND_FACTOR_LIMIT_EXCEEDED"),
            ([{"mfaEnrollmentId": foreign["mfaEnrollmentId"], "phoneInfo": phone_number()}],
             "DUPLICATE_MFA_ENROLLMENT_ID")):
        expect_error(admin.request("POST", update, json={"localId": local_id, "mfa": {"enrollments": enrollments}}),
                     code)
    resp = admin.request("POST", update, json={"localId": local_id, "mfa": {"enrollments": [{"phoneInfo": 5}]}})
    assert resp.status_code == 400 and "mfa.enrollments" in resp.text, describe(resp)
    expect_error(admin.request("POST", accounts(admin, tenant), json={
        "email": address(), "mfaInfo": [{"phoneInfo": "12345"}]}), "INVALID_MFA_PHONE_NUMBER")
    assert [f["mfaEnrollmentId"] for f in admin.lookup_users(tenant, [local_id])[0]["mfaInfo"]] == \
        [added["mfaEnrollmentId"], kept["mfaEnrollmentId"]]
    # Renumbering a factor keeps its id.
    third_number = phone_number()
    expect_ok(admin.request("POST", update, json={"localId": local_id, "mfa": {"enrollments": [
        {"mfaEnrollmentId": added["mfaEnrollmentId"], "phoneInfo": third_number}]}}))
    [renumbered] = admin.lookup_users(tenant, [local_id])[0]["mfaInfo"]
    assert renumbered["mfaEnrollmentId"] == added["mfaEnrollmentId"] and renumbered["phoneInfo"] == third_number
    assert renumbered["displayName"] == "mobile"


def test_export_and_import_round_trip_phone_factors(client, admin, make_tenant, sms_sink):
    """docs/protocol/mfa.md#admins: a user's phone factors exported (`batchGet`) and imported elsewhere
    (`batchCreate`) keep their ids, numbers, names and times, and sign in by SMS there; what an import refuses, user
    by user, as production's import does: an unverified or missing email, a TOTP factor, a malformed number, an id
    taken."""
    source = make_tenant(allowPasswordSignup=True, mfaConfig=PHONE_AND_TOTP)["tenantId"]
    target = make_tenant(allowPasswordSignup=True, mfaConfig=PHONE_AND_TOTP)["tenantId"]
    email, numbers = address(), [phone_number(), phone_number()]
    created = expect_ok(admin.request("POST", accounts(admin, source), json={
        "email": email, "emailVerified": True, "password": PASSWORD,
        "mfaInfo": [{"displayName": "desk", "phoneInfo": numbers[0]}, {"phoneInfo": numbers[1]}]}))
    page = expect_ok(admin.request("GET", admin.accounts_path(source, "batchGet"), params={"maxResults": 100}))
    [exported] = [u for u in page["users"] if u["localId"] == created["localId"]]
    assert [f["phoneInfo"] for f in exported["mfaInfo"]] == numbers

    totp_user = verified_user(client, admin, source)
    secret, _ = enrol(client, source, totp_user["idToken"])
    [totp_record] = admin.lookup_users(source, [totp_user["localId"]])
    bad = lambda n: {"localId": f"bad-{n}-{uuid.uuid4().hex[:8]}", "email": address(), "emailVerified": True}  # noqa
    users = [
        {"localId": exported["localId"], "email": email, "emailVerified": True, "rawPassword": PASSWORD,
         "mfaInfo": exported["mfaInfo"]},
        {**bad(1), "emailVerified": False, "mfaInfo": [{"phoneInfo": phone_number()}]},
        {**bad(2), "mfaInfo": totp_record["mfaInfo"]},
        {**bad(3), "mfaInfo": [{"phoneInfo": "+1 555 555 0100"}]},
        # The first user of the batch took this id.
        {**bad(4), "mfaInfo": [{"mfaEnrollmentId": exported["mfaInfo"][0]["mfaEnrollmentId"],
                                "phoneInfo": phone_number()}]},
        {"localId": f"bad-5-{uuid.uuid4().hex[:8]}", "mfaInfo": [{"phoneInfo": phone_number()}]},
    ]
    resp = admin.request("POST", admin.accounts_path(target, "batchCreate"), json={"users": users})
    assert resp.status_code == 200, describe(resp)
    result = resp.json()
    assert {e["index"]: e["message"] for e in result.get("error", [])} == {
        1: "Second factor account requires email to be verified.", 2: "Second factor not supported.",
        3: "Phone number format is invalid", 4: "Enrollment id already exists.",
        5: "Second factor account requires email to be presented."}, result
    [imported] = admin.lookup_users(target, [exported["localId"]])
    assert [{k: f[k] for k in ("mfaEnrollmentId", "phoneInfo", "enrolledAt") if k in f} for f in imported["mfaInfo"]] \
        == [{k: f[k] for k in ("mfaEnrollmentId", "phoneInfo", "enrolledAt") if k in f} for f in exported["mfaInfo"]]
    assert imported["mfaInfo"][0]["displayName"] == "desk" and "displayName" not in imported["mfaInfo"][1]
    assert admin.lookup_users(target, [u["localId"] for u in users[1:]]) == []
    sign_in_by_sms(client, target, email, exported["mfaInfo"][1]["mfaEnrollmentId"], numbers[1], sms_sink)


def test_mandatory_scopes_refuse_sign_ins_without_a_factor(client, admin, make_tenant, mail_sink, sms_sink, stack):
    """docs/protocol/mfa.md#mandatory: in a `MANDATORY` scope a user without a factor is refused after its first
    factor (password, email link, phone) and nothing is written; end users cannot create accounts; a custom token
    still signs in; a user an admin gave a phone factor is challenged for it and may then enrol TOTP; back to
    `ENABLED`, a user without a factor signs in again."""
    from test_custom_tokens import ServiceAccounts, mint, sdk_app

    test_number, other_test_number = phone_number(), phone_number()
    mandatory = {**PHONE_AND_TOTP, "state": "MANDATORY"}
    tenant = make_tenant(allowPasswordSignup=True, enableAnonymousUser=True, enableEmailLinkSignin=True,
                         enablePhoneSignIn=True, testPhoneNumbers={test_number: "123456",
                                                                   other_test_number: "654321"},
                         mfaConfig=mandatory)["tenantId"]
    assert expect_ok(admin.get_tenant(tenant))["mfaConfig"]["state"] == "MANDATORY"

    def users() -> int:
        return int(psql(stack, f"SELECT count(*) FROM users WHERE tenant_id = '{tenant}'"))

    # End users cannot create accounts: sign-up with a password, anonymously, by phone.
    expect_error(client.post("/v1/accounts:signUp", {"tenantId": tenant, "email": address(), "password": PASSWORD}),
                 "ADMIN_ONLY_OPERATION")
    expect_error(client.post("/v1/accounts:signUp", {"tenantId": tenant}), "ADMIN_ONLY_OPERATION")
    session = expect_ok(client.post("/v1/accounts:sendVerificationCode",
                                    {"tenantId": tenant, "phoneNumber": other_test_number}))["sessionInfo"]
    expect_error(client.post("/v1/accounts:signInWithPhoneNumber",
                             {"tenantId": tenant, "sessionInfo": session, "code": "654321"}), "ADMIN_ONLY_OPERATION")
    assert users() == 0

    # A user an admin made without a factor: the right password is refused, and the sign-in leaves no trace.
    email = address()
    created = expect_ok(admin.request("POST", accounts(admin, tenant), json={
        "email": email, "emailVerified": True, "password": PASSWORD, "phoneNumber": test_number}))
    resp = client.post("/v1/accounts:signInWithPassword",
                       {"tenantId": tenant, "email": email, "password": PASSWORD, "returnSecureToken": True})
    expect_error(resp, "MFA_ENROLLMENT_NOT_FOUND")
    assert "mandatory" in resp.json()["error"]["message"], describe(resp)
    # A wrong password is still wrong first.
    expect_error(client.post("/v1/accounts:signInWithPassword",
                             {"tenantId": tenant, "email": email, "password": "wrong one 1"}),
                 "INVALID_LOGIN_CREDENTIALS", "INVALID_PASSWORD")
    # Nor does an email link or the user's number sign it in.
    expect_ok(client.post("/v1/accounts:sendOobCode", {"tenantId": tenant, "requestType": "EMAIL_SIGNIN",
                                                       "email": email, "continueUrl": "http://localhost/x",
                                                       "canHandleCodeInApp": True}))
    [mail] = mail_sink.wait_for(email)
    _, params = oob_link(mail)
    expect_error(client.post("/v1/accounts:signInWithEmailLink",
                             {"tenantId": tenant, "email": email, "oobCode": params["oobCode"]}),
                 "MFA_ENROLLMENT_NOT_FOUND")
    session = expect_ok(client.post("/v1/accounts:sendVerificationCode",
                                    {"tenantId": tenant, "phoneNumber": test_number}))["sessionInfo"]
    expect_error(client.post("/v1/accounts:signInWithPhoneNumber",
                             {"tenantId": tenant, "sessionInfo": session, "code": "123456"}),
                 "MFA_ENROLLMENT_NOT_FOUND")
    [record] = admin.lookup_users(tenant, [created["localId"]])
    assert "lastLoginAt" not in record and int(psql(stack, f"""SELECT count(*) FROM refresh_families
        WHERE tenant_id = '{tenant}' AND local_id = '{created["localId"]}'""")) == 0, record

    # The operator's backend may still sign the user in with a custom token, and create users with one.
    factory = ServiceAccounts(stack, admin)
    try:
        with sdk_app(factory.create(tenant)) as app:
            expect_ok(client.post("/v1/accounts:signInWithCustomToken", {
                "tenantId": tenant, "token": mint(app, created["localId"], tenant_id=tenant),
                "returnSecureToken": True}))
            expect_ok(client.post("/v1/accounts:signInWithCustomToken", {
                "tenantId": tenant, "token": mint(app, f"backend-{uuid.uuid4().hex[:8]}", tenant_id=tenant),
                "returnSecureToken": True}))
    finally:
        factory.cleanup()

    # An admin gives the user a phone factor: the password now asks for it, and a session signed in with it
    # enrols a TOTP factor, asked for next to it.
    number = phone_number()
    expect_ok(admin.request("POST", admin.accounts_path(tenant, "update"), json={
        "localId": created["localId"], "mfa": {"enrollments": [{"phoneInfo": number, "displayName": "desk"}]}}))
    [record] = admin.lookup_users(tenant, [created["localId"]])
    signed_in = sign_in_by_sms(client, tenant, email, record["mfaInfo"][0]["mfaEnrollmentId"], number, sms_sink)
    enrol(client, tenant, signed_in["idToken"])
    pending = password_sign_in(client, tenant, email)
    assert [sorted(f) for f in pending["mfaInfo"]][1] == ["displayName", "enrolledAt", "mfaEnrollmentId",
                                                           "totpInfo"], pending

    # A user an admin gave a phone factor is challenged for it.
    factored = address()
    expect_ok(admin.request("POST", accounts(admin, tenant), json={
        "email": factored, "emailVerified": True, "password": PASSWORD, "mfaInfo": [{"phoneInfo": phone_number()}]}))
    assert "mfaPendingCredential" in password_sign_in(client, tenant, factored)

    # Back to ENABLED: a user without a factor signs in with its password again.
    plain = address()
    expect_ok(admin.request("POST", accounts(admin, tenant), json={
        "email": plain, "emailVerified": True, "password": PASSWORD}))
    expect_error(client.post("/v1/accounts:signInWithPassword",
                             {"tenantId": tenant, "email": plain, "password": PASSWORD}), "MFA_ENROLLMENT_NOT_FOUND")
    expect_ok(admin.patch_tenant(tenant, {"mfaConfig": {"state": "ENABLED"}}, "mfaConfig.state"))
    assert "idToken" in password_sign_in(client, tenant, plain)
