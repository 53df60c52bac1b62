"""Secure Token API: refresh-token exchange, rotation, the grace window, reuse detection."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from conftest import (Client, describe, expect_error, expect_ok, expect_status_error,
                      unverified_claims)


def past_grace(stack) -> float:
    """A wait comfortably past the stack's refresh grace window (2 s in the test stack)."""
    grace = stack.refresh_grace
    assert grace <= 10, f"TESSERA_REFRESH_GRACE={grace}s is too long for the stack tests"
    return grace + 0.6


def check_token_response(data: dict, stack, verifier, local_id: str, tenant_id: str | None,
                         previous_refresh_token: str) -> dict:
    assert data["access_token"] == data["id_token"], data
    assert data["expires_in"] == "3600", data
    assert data["token_type"] == "Bearer", data
    assert data["user_id"] == local_id, data
    assert isinstance(data.get("project_id"), str) and data["project_id"], data
    assert data["refresh_token"] != previous_refresh_token, "refresh token was not rotated"
    claims = verifier.verify(data["id_token"])
    assert claims["sub"] == local_id and claims["user_id"] == local_id, claims
    assert claims["exp"] == claims["iat"] + 3600, claims
    assert claims["firebase"]["sign_in_provider"] == "anonymous", claims
    assert claims["firebase"].get("tenant") == tenant_id, claims
    return claims


@pytest.mark.parametrize("style,prefixed", [("form", False), ("form", True),
                                            ("json", False), ("json", True),
                                            ("camel", False)])
def test_refresh_returns_a_new_verifiable_pair(stack, client, tenant_id, verifier, style, prefixed):
    session = client.sign_up_anonymous(tenant_id)
    first_claims = unverified_claims(session.id_token)
    data = client.refresh(session.refresh_token, style=style, prefixed=prefixed)
    claims = check_token_response(data, stack, verifier, session.local_id, tenant_id,
                                  session.refresh_token)
    # auth_time stays at the sign-in, not the refresh.
    assert claims["auth_time"] == first_claims["auth_time"], (claims, first_claims)
    # The new refresh token is usable in turn.
    again = client.refresh(data["refresh_token"], style=style, prefixed=prefixed)
    check_token_response(again, stack, verifier, session.local_id, tenant_id,
                         data["refresh_token"])


def test_refresh_with_api_key_header(stack, client, tenant_id, verifier):
    session = client.sign_up_anonymous(tenant_id)
    data = client.refresh(session.refresh_token, key_in_header=True)
    check_token_response(data, stack, verifier, session.local_id, tenant_id,
                         session.refresh_token)


def test_retry_of_just_rotated_token_within_grace_returns_same_new_token(stack, client, tenant_id,
                                                                        verifier):
    session = client.sign_up_anonymous(tenant_id)
    first = client.refresh(session.refresh_token)
    retry = client.refresh(session.refresh_token, style="json", prefixed=True)
    assert retry["refresh_token"] == first["refresh_token"], (
        "a retry inside the grace window must return the same new refresh token")
    assert retry["user_id"] == session.local_id
    claims = verifier.verify(retry["id_token"])
    assert claims["sub"] == session.local_id
    assert claims["firebase"]["tenant"] == tenant_id
    # The family is intact: the newest token rotates normally.
    nxt = client.refresh(first["refresh_token"])
    assert nxt["refresh_token"] not in (first["refresh_token"], session.refresh_token)
    assert nxt["user_id"] == session.local_id


def test_reuse_after_grace_revokes_the_whole_family(stack, client, admin, tenant_id):
    # Family A: a0 -> a1; then a0 is reused after the grace window.
    a = client.sign_up_anonymous(tenant_id)
    a1 = client.refresh(a.refresh_token)["refresh_token"]
    # Family B: b0 -> b1 -> b2; then b1 (the just-rotated one) is reused after the window.
    b = client.sign_up_anonymous(tenant_id)
    b1 = client.refresh(b.refresh_token)["refresh_token"]
    b2 = client.refresh(b1)["refresh_token"]
    # A bystander family in the same tenant must not be affected.
    c = client.sign_up_anonymous(tenant_id)

    time.sleep(past_grace(stack))

    expect_error(client.refresh_raw(a.refresh_token), "TOKEN_EXPIRED")
    expect_error(client.refresh_raw(a1), "TOKEN_EXPIRED")       # newest of family A
    expect_error(client.refresh_raw(a.refresh_token), "TOKEN_EXPIRED")

    expect_error(client.refresh_raw(b1, style="json"), "TOKEN_EXPIRED")
    expect_error(client.refresh_raw(b2, style="json"), "TOKEN_EXPIRED")  # newest of family B
    expect_error(client.refresh_raw(b.refresh_token), "TOKEN_EXPIRED")

    c_data = client.refresh(c.refresh_token)
    assert c_data["user_id"] == c.local_id
    # Reuse detection ends the family, not the user.
    users = admin.lookup_users(tenant_id, [a.local_id])
    assert [u["localId"] for u in users] == [a.local_id]


def test_token_endpoint_request_errors(stack, client, tenant_id):
    session = client.sign_up_anonymous(tenant_id)
    expect_error(client.refresh_raw(session.refresh_token, grant_type=None), "MISSING_GRANT_TYPE")
    expect_error(client.refresh_raw(session.refresh_token, grant_type="authorization_code"),
                 "INVALID_GRANT_TYPE")
    expect_error(client.refresh_raw(None), "MISSING_REFRESH_TOKEN")
    expect_error(client.refresh_raw(None, style="json"), "MISSING_REFRESH_TOKEN")
    expect_error(client.refresh_raw("AMf-" + "x" * 60), "INVALID_REFRESH_TOKEN")
    expect_error(client.refresh_raw("not a token at all", style="json"), "INVALID_REFRESH_TOKEN")
    # API key rules apply to the token endpoint too.
    expect_status_error(client.refresh_raw(session.refresh_token, key=None), 403,
                        "PERMISSION_DENIED")
    resp = client.refresh_raw(session.refresh_token, key="wrong-" + stack.api_key)
    err = expect_status_error(resp, 400, "INVALID_ARGUMENT")
    assert err["message"] == "API key not valid. Please pass a valid API key.", describe(resp)
    # None of the failed calls consumed the token.
    data = client.refresh(session.refresh_token)
    assert data["user_id"] == session.local_id


def test_malformed_form_bodies_are_a_400_and_the_service_stays_up(stack, client, tenant_id):
    """Stray `%`, characters outside a query, invalid UTF-8: each a 400 INVALID_ARGUMENT. (Foundation's
    URLComponents stopped the token service on the first of these.)"""
    session = client.sign_up_anonymous(tenant_id)
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    for body in (b"grant_type=refresh_token&refresh_token=%", b"grant_type=refresh_token&refresh_token=%zz",
                 b"grant_type=refresh_token&refresh_token=%C3%28", b"%=1"):
        resp = client.request("POST", "/v1/token", data=body, headers=form)
        expect_status_error(resp, 400, "INVALID_ARGUMENT")
    # Characters a URL query may not hold, and bytes that are not UTF-8, are read as they are: the
    # token is then simply not one.
    for body in ("grant_type=refresh_token&refresh_token=\u00e9 \"<#".encode(),
                 b"grant_type=refresh_token&refresh_token=\xff\xfe"):
        expect_error(client.request("POST", "/v1/token", data=body, headers=form), "INVALID_REFRESH_TOKEN")
    # Still up, and `+`, escapes and a repeated name (the first wins) read as before.
    body = f"grant_type=refresh%5Ftoken&refresh_token={session.refresh_token}&refresh_token=other&x=a+b"
    data = expect_ok(client.request("POST", "/v1/token", data=body, headers=form))
    assert data["user_id"] == session.local_id


def test_concurrent_refreshes_of_one_token_agree_on_one_successor(stack, tenant_id):
    workers = 20
    setup = Client(stack)
    session = setup.sign_up_anonymous(tenant_id)
    # One connection per worker, opened before the race so the requests really overlap.
    clients = [Client(stack, requests.Session()) for _ in range(workers)]
    for c in clients:
        expect_ok(c.request("GET", "/.well-known/jwks.json", key=None))
    barrier = threading.Barrier(workers)

    def one(c: Client):
        barrier.wait(timeout=30)
        started = time.monotonic()
        resp = c.refresh_raw(session.refresh_token)
        return resp, time.monotonic() - started

    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        results = list(pool.map(one, clients))
    wall = time.monotonic() - t0

    summary = "; ".join(f"{r.status_code} in {d:.2f}s" for r, d in results)
    server_errors = [describe(r) for r, _ in results if r.status_code >= 500]
    assert not server_errors, f"5xx under concurrent refresh: {server_errors}"
    failures = [describe(r) for r, _ in results if r.status_code != 200]
    assert not failures, (f"every concurrent refresh must succeed (wall {wall:.2f}s, "
                          f"grace {stack.refresh_grace}s): {failures[:3]} | {summary}")
    new_tokens = {r.json()["refresh_token"] for r, _ in results}
    assert len(new_tokens) == 1, f"{len(new_tokens)} different successors: family forked"
    user_ids = {r.json()["user_id"] for r, _ in results}
    assert user_ids == {session.local_id}
    successor = new_tokens.pop()
    assert successor != session.refresh_token
    # The one successor works once more, and rotates.
    data = setup.refresh(successor)
    assert data["user_id"] == session.local_id
    assert data["refresh_token"] != successor
