"""Revocation is exact (issue 35; docs/design-notes.md, "Revocation is exact"). `validSince` has whole
seconds, and the check `iat < validSince` let a token minted in the very second of a revocation live on:
the second outside review kept 9 working ID tokens of a session it refreshed in a loop while an admin
revoked it, and a sign-up disabled within its first second got its session back at re-enable.

Now a revocation (the Admin SDKs' revokeRefreshTokens, the console's "revoke sessions", `tessera users
revoke`: all an admin `accounts:update` with `validSince`), a disable, and a credential change end the
user's refresh sessions server-side, and an ID token of the revocation's own second is told by the
session it names (`firebase.tessera_session`), which the revocation ended. A session started after the
revocation, in the same second, keeps working."""

from __future__ import annotations

import threading
import time
import uuid

from conftest import expect_error, expect_ok, unverified_claims

PASSWORD = "correct horse 1"


def password_tenant(make_tenant) -> str:
    return make_tenant(allowPasswordSignup=True)["tenantId"]


def sign_up(client, tenant: str) -> tuple[str, dict]:
    email = f"revoke-{uuid.uuid4().hex[:10]}@example.com"
    return email, expect_ok(client.post("/v1/accounts:signUp", {"tenantId": tenant, "email": email,
                                                                 "password": PASSWORD, "returnSecureToken": True}))


def sign_in(client, tenant: str, email: str) -> dict:
    return expect_ok(client.post("/v1/accounts:signInWithPassword", {
        "tenantId": tenant, "email": email, "password": PASSWORD, "returnSecureToken": True}))


def admin_update(admin, tenant: str, body: dict) -> dict:
    return expect_ok(admin.request("POST", f"/v1/projects/{admin.stack.project_id}/tenants/{tenant}/accounts:update",
                                   json=body))


def revoke(admin, tenant: str, local_id: str) -> int:
    """What the Admin SDKs' revokeRefreshTokens sends: validSince = now, in seconds."""
    now = int(time.time())
    admin_update(admin, tenant, {"localId": local_id, "validSince": str(now)})
    return now


def at_start_of_a_second() -> None:
    """Waits for a fresh second with most of it left, so a test's steps share one second."""
    time.sleep(1 - (time.time() % 1) + 0.01)


def test_a_token_of_the_revocations_own_second_is_revoked(client, admin, make_tenant):
    tenant = password_tenant(make_tenant)
    email, _ = sign_up(client, tenant)
    for _ in range(5):
        at_start_of_a_second()
        session = sign_in(client, tenant, email)
        revoked_at = revoke(admin, tenant, session["localId"])
        if int(unverified_claims(session["idToken"])["iat"]) == revoked_at:
            break
    else:
        raise AssertionError("could not sign in and revoke within one second")
    assert "tessera_session" in unverified_claims(session["idToken"])["firebase"]
    expect_error(client.lookup(session["idToken"], tenant), "TOKEN_EXPIRED")
    expect_error(client.refresh_raw(session["refreshToken"]), "TOKEN_EXPIRED")
    # A session started after the revocation, in the same second, is not touched by it.
    fresh = sign_in(client, tenant, email)
    assert int(unverified_claims(fresh["idToken"])["iat"]) <= revoked_at + 1
    expect_ok(client.lookup(fresh["idToken"], tenant))
    client.refresh(fresh["refreshToken"])


def test_no_token_refreshed_before_the_revocation_survives_it(client, admin, make_tenant):
    """The review's attack: refresh in a loop while an admin revokes; keep every ID token minted."""
    tenant = password_tenant(make_tenant)
    email, _ = sign_up(client, tenant)
    at_start_of_a_second()
    session = sign_in(client, tenant, email)
    minted: list[str] = [session["idToken"]]
    stop = threading.Event()

    def refresh_loop() -> None:
        token = session["refreshToken"]
        while not stop.is_set():
            answer = client.refresh_raw(token)
            if answer.status_code != 200:
                return
            data = answer.json()
            minted.append(data["id_token"])
            token = data["refresh_token"]

    refresher = threading.Thread(target=refresh_loop)
    refresher.start()
    time.sleep(0.2)
    revoke(admin, tenant, session["localId"])
    stop.set()
    refresher.join(timeout=30)
    assert len(minted) > 3, "the loop refreshed"
    alive = [token for token in minted if client.lookup(token, tenant).status_code == 200]
    assert not alive, f"{len(alive)} of {len(minted)} ID tokens minted before the revocation still work"


def test_a_sign_up_disabled_in_its_first_second_does_not_get_its_session_back(client, admin, make_tenant):
    tenant = password_tenant(make_tenant)
    for _ in range(5):
        at_start_of_a_second()
        email, session = sign_up(client, tenant)
        admin_update(admin, tenant, {"localId": session["localId"], "disableUser": True})
        if time.time() % 1 < 0.9 and int(time.time()) == int(unverified_claims(session["idToken"])["iat"]):
            break
    else:
        raise AssertionError("could not sign up and disable within one second")
    # While disabled: USER_DISABLED, as Firebase answers.
    expect_error(client.refresh_raw(session["refreshToken"]), "USER_DISABLED")
    expect_error(client.lookup(session["idToken"], tenant), "USER_DISABLED")
    admin_update(admin, tenant, {"localId": session["localId"], "disableUser": False})
    # Enabled again: the sessions from before the disable are over, in the same second too.
    expect_error(client.refresh_raw(session["refreshToken"]), "TOKEN_EXPIRED")
    expect_error(client.lookup(session["idToken"], tenant), "TOKEN_EXPIRED")
    fresh = sign_in(client, tenant, email)
    expect_ok(client.lookup(fresh["idToken"], tenant))


def test_an_id_token_names_its_session_and_a_refresh_keeps_it(client, make_tenant):
    """Every ID token names its session (session cookies carry none; tokens without the claim, from an
    earlier release, follow whole seconds only)."""
    tenant = password_tenant(make_tenant)
    _, session = sign_up(client, tenant)
    claims = unverified_claims(session["idToken"])
    assert isinstance(claims["firebase"]["tessera_session"], str) and len(claims["firebase"]["tessera_session"]) == 36
    refreshed = client.refresh(session["refreshToken"])
    assert unverified_claims(refreshed["id_token"])["firebase"]["tessera_session"] == \
        claims["firebase"]["tessera_session"], "a refresh keeps the session"
