"""Email/password accounts through the stack: sign-up, sign-in, createAuthUri, email enumeration
protection, anonymous upgrade, accounts:update, re-authentication and revocation (API.md A.3, A.9,
B.2.1, B.5.2, B.5.9, B.5.11, B.5.12)."""

from __future__ import annotations

import statistics
import time
import uuid

import pytest

from conftest import describe, expect_error, expect_ok, unverified_claims

PASSWORD = "correct horse 1"


def email() -> str:
    return f"user-{uuid.uuid4().hex[:12]}@example.com"


@pytest.fixture
def password_tenant(make_tenant) -> str:
    return make_tenant(allowPasswordSignup=True)["tenantId"]


def sign_up(client, tenant_id, address, password=PASSWORD, **extra):
    return client.post("/v1/accounts:signUp", {"tenantId": tenant_id, "email": address, "password": password,
                                              "returnSecureToken": True, **extra})


def sign_in(client, tenant_id, address, password=PASSWORD):
    return client.post("/v1/accounts:signInWithPassword",
                       {"tenantId": tenant_id, "email": address, "password": password, "returnSecureToken": True})


def update(client, tenant_id, id_token, **fields):
    return client.post("/v1/accounts:update", {"tenantId": tenant_id, "idToken": id_token, **fields})


def test_sign_up_and_sign_in_issue_password_tokens(client, verifier, password_tenant):
    address = email()
    data = expect_ok(sign_up(client, password_tenant, address, displayName="Ada"))
    assert data["kind"] == "identitytoolkit#SignupNewUserResponse"
    assert data["email"] == address and data["expiresIn"] == "3600"
    claims = verifier.verify(data["idToken"])
    assert claims["email"] == address and claims["email_verified"] is False
    assert claims["firebase"]["sign_in_provider"] == "password"
    assert claims["firebase"]["identities"] == {"email": [address]}
    assert claims["firebase"]["tenant"] == password_tenant
    assert "provider_id" not in claims
    assert claims.get("name") == "Ada"  # sign-up fills the profile from what it was given

    signed_in = expect_ok(sign_in(client, password_tenant, address))
    assert signed_in["kind"] == "identitytoolkit#VerifyPasswordResponse"
    assert signed_in["registered"] is True and signed_in["localId"] == data["localId"]
    assert signed_in["email"] == address and signed_in["displayName"] == "Ada"
    assert verifier.verify(signed_in["idToken"])["sub"] == data["localId"]
    assert signed_in["refreshToken"] != data["refreshToken"]

    user = expect_ok(client.lookup(signed_in["idToken"], password_tenant))["users"][0]
    assert user["email"] == address and user["emailVerified"] is False
    assert user["passwordHash"] == "UkVEQUNURUQ=", "clients never see a real hash"
    assert isinstance(user["passwordUpdatedAt"], int)
    assert [p["providerId"] for p in user["providerUserInfo"]] == ["password"]
    assert user["providerUserInfo"][0]["rawId"] == address


def test_emails_are_case_insensitive(client, password_tenant):
    local = f"Mixed-{uuid.uuid4().hex[:8]}"
    data = expect_ok(sign_up(client, password_tenant, f"{local}@Example.COM"))
    assert data["email"] == f"{local.lower()}@example.com"
    expect_ok(sign_in(client, password_tenant, f"{local.upper()}@EXAMPLE.com"))
    expect_error(sign_up(client, password_tenant, f"{local.lower()}@example.com"), "EMAIL_EXISTS")


def test_sign_up_request_errors(client, make_tenant, password_tenant):
    cases = [
        ({"password": PASSWORD}, "MISSING_EMAIL"),
        ({"email": email()}, "MISSING_PASSWORD"),
        ({"email": "", "password": ""}, "INVALID_EMAIL"),
        ({"email": "not-an-email", "password": PASSWORD}, "INVALID_EMAIL"),
        ({"email": email(), "password": "12345"}, "WEAK_PASSWORD"),
        ({"email": email(), "password": "x" * 4097}, "WEAK_PASSWORD"),
        ({"email": email(), "password": PASSWORD, "localId": "chosen"}, "UNEXPECTED_PARAMETER"),
    ]
    for body, code in cases:
        resp = client.post("/v1/accounts:signUp", {"tenantId": password_tenant, **body})
        expect_error(resp, code)
    assert "at least 6 characters" in client.post(
        "/v1/accounts:signUp", {"tenantId": password_tenant, "email": email(), "password": "123"}
    ).json()["error"]["message"]

    closed = make_tenant(allowPasswordSignup=False)["tenantId"]
    expect_error(sign_up(client, closed, email()), "OPERATION_NOT_ALLOWED")
    expect_error(sign_in(client, closed, email()), "PASSWORD_LOGIN_DISABLED")
    admin_only = make_tenant(allowPasswordSignup=True, disabledUserSignup=True)["tenantId"]
    expect_error(sign_up(client, admin_only, email()), "ADMIN_ONLY_OPERATION")


def test_email_enumeration_protection_is_on_by_default(client, admin, password_tenant):
    address = email()
    expect_ok(sign_up(client, password_tenant, address))
    expect_error(sign_in(client, password_tenant, address, "wrong password"), "INVALID_LOGIN_CREDENTIALS")
    expect_error(sign_in(client, password_tenant, email()), "INVALID_LOGIN_CREDENTIALS")
    resp = client.post("/v1/accounts:createAuthUri",
                       {"tenantId": password_tenant, "identifier": address, "continueUri": "https://app.example/"})
    data = expect_ok(resp)
    assert set(data) == {"kind", "sessionId"}, describe(resp)

    # Unknown and known accounts take comparable time: both cost one hash.
    def timed(address_, password_):
        started = time.monotonic()
        sign_in(client, password_tenant, address_, password_)
        return time.monotonic() - started

    known = statistics.median(timed(address, "wrong password") for _ in range(7))
    unknown = statistics.median(timed(email(), "wrong password") for _ in range(7))
    assert unknown > 0.5 * known and known > 0.5 * unknown, f"known {known:.4f}s vs unknown {unknown:.4f}s"


def test_without_protection_errors_and_create_auth_uri_say_more(client, admin, password_tenant):
    original = expect_ok(admin.get_config())
    mask = "emailPrivacyConfig.enableImprovedEmailPrivacy"
    expect_ok(admin.patch_config({"emailPrivacyConfig": {"enableImprovedEmailPrivacy": False}}, mask))
    try:
        address = email()
        expect_ok(sign_up(client, password_tenant, address))
        expect_error(sign_in(client, password_tenant, address, "wrong password"), "INVALID_PASSWORD")
        expect_error(sign_in(client, password_tenant, email()), "EMAIL_NOT_FOUND")
        data = expect_ok(client.post("/v1/accounts:createAuthUri", {
            "tenantId": password_tenant, "identifier": address.upper(), "continueUri": "https://app.example/"}))
        assert data["registered"] is True and data["signinMethods"] == ["password"]
        assert data["allProviders"] == ["password"] and data["sessionId"]
        data = expect_ok(client.post("/v1/accounts:createAuthUri", {
            "tenantId": password_tenant, "identifier": email(), "continueUri": "https://app.example/"}))
        assert data["registered"] is False
    finally:
        expect_ok(admin.patch_config(original, mask))


def test_create_auth_uri_request_errors(client, password_tenant):
    expect_error(client.post("/v1/accounts:createAuthUri", {"continueUri": "https://a.example/"}), "MISSING_IDENTIFIER")
    expect_error(client.post("/v1/accounts:createAuthUri", {"identifier": email()}), "MISSING_CONTINUE_URI")
    expect_error(client.post("/v1/accounts:createAuthUri",
                             {"identifier": "nope", "continueUri": "https://a.example/"}), "INVALID_IDENTIFIER")


@pytest.mark.parametrize("via", ["signUp", "update"])
def test_anonymous_user_upgraded_to_password_keeps_its_id(client, verifier, password_tenant, via):
    anonymous = client.sign_up_anonymous(password_tenant)
    address = email()
    if via == "signUp":
        resp = sign_up(client, password_tenant, address, idToken=anonymous.id_token)
    else:
        resp = update(client, password_tenant, anonymous.id_token, email=address, password=PASSWORD,
                      returnSecureToken=True)
    data = expect_ok(resp)
    assert data["localId"] == anonymous.local_id, describe(resp)
    claims = verifier.verify(data["idToken"])
    assert claims["sub"] == anonymous.local_id and claims["firebase"]["sign_in_provider"] == "password"
    assert claims["email"] == address
    # The anonymous session is over; the new one works; the password signs in as the same user.
    expect_error(client.refresh_raw(anonymous.refresh_token), "TOKEN_EXPIRED")
    assert client.refresh(data["refreshToken"])["user_id"] == anonymous.local_id
    assert expect_ok(sign_in(client, password_tenant, address))["localId"] == anonymous.local_id


def test_password_change_revokes_older_tokens_and_returns_fresh_ones(client, verifier, password_tenant):
    address = email()
    first = expect_ok(sign_up(client, password_tenant, address))
    time.sleep(1.1)  # validSince has one-second resolution: tokens of the same second stay valid (B.3.2)
    resp = update(client, password_tenant, first["idToken"], password="new password 2", returnSecureToken=True)
    changed = expect_ok(resp)
    assert changed["kind"] == "identitytoolkit#SetAccountInfoResponse"
    assert changed["localId"] == first["localId"] and changed["idToken"] and changed["refreshToken"], describe(resp)
    assert verifier.verify(changed["idToken"])["sub"] == first["localId"]

    expect_error(client.refresh_raw(first["refreshToken"]), "TOKEN_EXPIRED")
    expect_error(client.lookup(first["idToken"], password_tenant), "TOKEN_EXPIRED")
    expect_ok(client.lookup(changed["idToken"], password_tenant))
    client.refresh(changed["refreshToken"])
    expect_error(sign_in(client, password_tenant, address), "INVALID_LOGIN_CREDENTIALS")
    expect_ok(sign_in(client, password_tenant, address, "new password 2"))


def test_sensitive_changes_need_a_recent_sign_in(client, password_tenant):
    address = email()
    session = expect_ok(sign_up(client, password_tenant, address))
    time.sleep(4.5)  # beyond the test stack's TESSERA_REAUTH_WINDOW (3s) even in whole seconds
    for fields in ({"password": "another one"}, {"email": email()}, {"deleteProvider": ["password"]}):
        expect_error(update(client, password_tenant, session["idToken"], **fields), "CREDENTIAL_TOO_OLD_LOGIN_AGAIN")
    expect_error(client.delete(session["idToken"], password_tenant), "CREDENTIAL_TOO_OLD_LOGIN_AGAIN")
    # An email change by mailed code is sensitive too (A.3).
    expect_error(client.post("/v1/accounts:sendOobCode", {
        "tenantId": password_tenant, "requestType": "VERIFY_AND_CHANGE_EMAIL", "idToken": session["idToken"],
        "newEmail": email()}), "CREDENTIAL_TOO_OLD_LOGIN_AGAIN")
    # Profile edits are not sensitive, and a fresh sign-in opens the window again.
    assert expect_ok(update(client, password_tenant, session["idToken"], displayName="Late"))["displayName"] == "Late"
    fresh = expect_ok(sign_in(client, password_tenant, address))
    changed = expect_ok(update(client, password_tenant, fresh["idToken"], password="another one"))
    # The change revoked the token it was made with, even within the same second (B.5.11).
    expect_error(client.lookup(fresh["idToken"], password_tenant), "TOKEN_EXPIRED")
    # A 4096-character password is still a password (A.9's upper bound is inclusive).
    expect_ok(update(client, password_tenant, changed["idToken"], password="p" * 4096))


def test_anonymous_users_need_no_recent_sign_in_to_upgrade(client, make_tenant):
    """An anonymous user has no credential to prove again: upgrading with an email and password after
    the re-authentication window still works (A.3)."""
    tenant_id = make_tenant(allowPasswordSignup=True)["tenantId"]
    session = client.sign_up_anonymous(tenant_id)
    time.sleep(4.5)  # beyond the test stack's TESSERA_REAUTH_WINDOW (3s)
    upgraded = expect_ok(update(client, tenant_id, session.id_token, email=email(), password=PASSWORD))
    assert upgraded["localId"] == session.local_id


def test_profile_updates_and_deletions(client, verifier, password_tenant):
    session = expect_ok(sign_up(client, password_tenant, email()))
    data = expect_ok(update(client, password_tenant, session["idToken"], displayName="Grace",
                            photoUrl="https://img.example/g.png"))
    assert data["displayName"] == "Grace" and data["photoUrl"] == "https://img.example/g.png"
    assert "idToken" not in data, "a profile edit issues no new tokens"
    refreshed = client.refresh(session["refreshToken"])
    claims = verifier.verify(refreshed["id_token"])
    assert claims["name"] == "Grace" and claims["picture"] == "https://img.example/g.png"
    data = expect_ok(update(client, password_tenant, refreshed["id_token"], deleteAttribute=["DISPLAY_NAME"]))
    assert "displayName" not in data and data["photoUrl"]
    resp = update(client, password_tenant, refreshed["id_token"], deleteAttribute=["NICKNAME"])
    assert resp.status_code == 400 and resp.json()["error"]["status"] == "INVALID_ARGUMENT", describe(resp)


def test_email_change_unverifies_and_refuses_taken_addresses(client, verifier, password_tenant):
    taken = email()
    expect_ok(sign_up(client, password_tenant, taken))
    session = expect_ok(sign_up(client, password_tenant, email()))
    expect_error(update(client, password_tenant, session["idToken"], email=taken.upper()), "EMAIL_EXISTS")
    expect_error(update(client, password_tenant, session["idToken"], email="bad"), "INVALID_EMAIL")
    new_address = email()
    data = expect_ok(update(client, password_tenant, session["idToken"], email=new_address))
    assert data["email"] == new_address and data["emailVerified"] is False and data["idToken"]
    assert verifier.verify(data["idToken"])["email"] == new_address
    expect_ok(sign_in(client, password_tenant, new_address))


def test_clients_cannot_use_privileged_update_fields(client, password_tenant):
    session = expect_ok(sign_up(client, password_tenant, email()))
    expect_error(update(client, password_tenant, session["idToken"], customAttributes='{"admin":true}'),
                 "INSUFFICIENT_PERMISSION")
    expect_error(update(client, password_tenant, session["idToken"], disableUser=True), "OPERATION_NOT_ALLOWED")
    expect_error(update(client, password_tenant, session["idToken"], emailVerified=True), "OPERATION_NOT_ALLOWED")
    expect_error(client.post("/v1/accounts:update", {"displayName": "x"}), "MISSING_ID_TOKEN")


def test_the_last_sign_in_method_cannot_be_removed(client, password_tenant):
    """Issue #5: a user never unlinks its last way to sign in (deleting the account is the way out);
    removing the password or the email it depends on is refused and changes nothing."""
    address = email()
    session = expect_ok(sign_up(client, password_tenant, address))
    for change in ({"deleteProvider": ["password"]}, {"deleteAttribute": ["PASSWORD"]},
                   {"deleteAttribute": ["EMAIL"]}):
        expect_error(update(client, password_tenant, session["idToken"], **change), "OPERATION_NOT_ALLOWED")
    expect_ok(sign_in(client, password_tenant, address))


def admin_update(admin, tenant_id, **body):
    return admin.request("POST", admin.accounts_path(tenant_id, "update"), json=body)


def test_disabled_users_are_refused_everywhere_but_by_admins(client, admin, password_tenant):
    """B.5.13: every sign-in and every ID-token call answers USER_DISABLED, the password is not even
    checked, refresh fails; admin lookups and updates still work."""
    address = email()
    session = expect_ok(sign_up(client, password_tenant, address))
    # validSince has whole seconds: the session must be from an earlier second than the disable.
    issued_at = unverified_claims(session["idToken"])["iat"]
    while time.time() < issued_at + 1.05:
        time.sleep(0.05)
    data = expect_ok(admin_update(admin, password_tenant, localId=session["localId"], disableUser=True))
    assert data["localId"] == session["localId"]

    expect_error(sign_in(client, password_tenant, address), "USER_DISABLED")
    expect_error(sign_in(client, password_tenant, address, "wrong password"), "USER_DISABLED")
    expect_error(client.refresh_raw(session["refreshToken"]), "USER_DISABLED")
    expect_error(client.lookup(session["idToken"], password_tenant), "USER_DISABLED")
    expect_error(update(client, password_tenant, session["idToken"], displayName="x"), "USER_DISABLED")
    [user] = admin.lookup_users(password_tenant, [session["localId"]])
    assert user["disabled"] is True

    # Enabled again: a new sign-in works, but what was issued before the disable stays revoked (A.2),
    # as the outside review found it did not.
    expect_ok(admin_update(admin, password_tenant, localId=session["localId"], disableUser=False))
    fresh = expect_ok(sign_in(client, password_tenant, address))
    client.refresh(fresh["refreshToken"])
    expect_error(client.refresh_raw(session["refreshToken"]), "TOKEN_EXPIRED")
    expect_error(client.lookup(session["idToken"], password_tenant), "TOKEN_EXPIRED")


def test_admin_valid_since_revokes_earlier_sessions(client, admin, password_tenant):
    """What `revoke_refresh_tokens` sends: validSince as a JSON number of seconds (B.5.11)."""
    session = expect_ok(sign_up(client, password_tenant, email()))
    time.sleep(1.1)
    expect_ok(admin_update(admin, password_tenant, localId=session["localId"], validSince=int(time.time())))
    expect_error(client.refresh_raw(session["refreshToken"]), "TOKEN_EXPIRED")
    expect_error(client.lookup(session["idToken"], password_tenant), "TOKEN_EXPIRED")
    expect_error(admin_update(admin, password_tenant, localId="no-such-user"), "USER_NOT_FOUND")
    expect_error(admin_update(admin, password_tenant), "MISSING_LOCAL_ID")
