"""Secure Token API through the ingress: concurrent refreshes of one token agree on one successor.
The rest of /v1/token (rotation, the grace window, reuse detection, request errors) is in the
in-process Swift tests (Tests/TesseraTests/InProcess/InProcessRefreshTests.swift)."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import requests

from conftest import Client, describe, expect_ok


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
