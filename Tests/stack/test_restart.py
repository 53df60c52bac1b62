"""Disruptive tests: restart and stop services of the running test stack. They run after
every other test (marker ``disruptive``; conftest moves them last) and leave the stack up."""

from __future__ import annotations

import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from conftest import (Client, describe, expect_ok, pid_alive, require_running_service, run_stack,
                      wait_until)

pytestmark = pytest.mark.disruptive(last=True)


def test_sessions_survive_restart_of_both_services(stack, client, admin, tenant_id, verifier):
    old_pids = {svc: require_running_service(stack, svc)
                for svc in ("user-directory", "token-service")}
    session = client.sign_up_anonymous(tenant_id)
    refreshed = client.refresh(session.refresh_token)
    latest_refresh, latest_id = refreshed["refresh_token"], refreshed["id_token"]

    run_stack(stack, "restart", "user-directory")
    run_stack(stack, "restart", "token-service")
    for svc, old_pid in old_pids.items():
        assert require_running_service(stack, svc) != old_pid, f"{svc} was not restarted"

    fresh = Client(stack)  # new connections, as a client after the restart would open
    # The user still exists, and both ID tokens issued before the restarts still verify.
    for id_token in (session.id_token, latest_id):
        data = expect_ok(fresh.lookup(id_token, tenant_id))
        assert data["users"][0]["localId"] == session.local_id
        assert verifier.verify(id_token)["sub"] == session.local_id
    assert [u["localId"] for u in admin.lookup_users(tenant_id, [session.local_id])] \
        == [session.local_id]
    # The latest refresh token still works (and rotates).
    data = fresh.refresh(latest_refresh)
    assert data["user_id"] == session.local_id
    assert data["refresh_token"] != latest_refresh
    assert verifier.verify(data["id_token"])["firebase"]["tenant"] == tenant_id
    # The connection kept by the old client works too (pooled connections recover).
    expect_ok(client.sign_up_raw(tenant_id))


def _directory_answers(stack) -> bool:
    if not stack.directory_url:
        return False
    try:
        requests.get(stack.directory_url + "/healthz", timeout=2)
        return True
    except requests.RequestException:
        return False


def test_directory_down_gives_retryable_503_then_recovers(stack, client, tenant_id):
    pid = require_running_service(stack, "user-directory")
    before = client.sign_up_anonymous(tenant_id)

    os.kill(pid, signal.SIGTERM)
    try:
        assert wait_until(lambda: not pid_alive(pid), timeout=20), \
            f"user-directory (pid {pid}) did not exit within 20 s of SIGTERM"
        assert wait_until(lambda: not _directory_answers(stack), timeout=10), \
            "the directory still answers after its process exited"

        calls = {
            "signUp": lambda c: c.sign_up_raw(tenant_id),
            "token": lambda c: c.refresh_raw(before.refresh_token),
            "lookup": lambda c: c.lookup(before.id_token, tenant_id),
        }

        def timed(name):
            started = time.monotonic()
            resp = calls[name](Client(stack))
            return name, resp, time.monotonic() - started

        # In parallel: each may take up to the connect timeout to give up.
        with ThreadPoolExecutor(max_workers=len(calls)) as pool:
            results = list(pool.map(timed, calls))
        for name, resp, elapsed in results:
            assert resp.status_code == 503, f"{name} with the directory down: {describe(resp)}"
            retry_after = resp.headers.get("Retry-After", "")
            assert retry_after.strip(), f"{name}: 503 without Retry-After: {describe(resp)}"
            assert retry_after.strip().isdigit(), f"{name}: Retry-After {retry_after!r}"
            data = resp.json()
            err = data.get("error", {})
            assert err.get("code") == 503, describe(resp)
            assert err.get("status") == "UNAVAILABLE", describe(resp)
            assert isinstance(err.get("message"), str) and err["message"], describe(resp)
            assert isinstance(err.get("errors"), list) and err["errors"], describe(resp)
            # The connect timeout (TESSERA_INTERNAL_CONNECT_TIMEOUT, 1 s) bounds it, not the
            # 5 s call timeout.
            assert elapsed < 3, f"{name} took {elapsed:.1f}s to fail (must fail fast)"
        # The token service itself stays up and keeps publishing keys.
        expect_ok(requests.get(stack.url + "/.well-known/jwks.json", timeout=10))
    finally:
        run_stack(stack, "restart", "user-directory")

    # Back to normal, and the refresh attempted during the outage did not consume the token.
    after = client.sign_up_anonymous(tenant_id)
    assert after.local_id != before.local_id
    data = client.refresh(before.refresh_token)
    assert data["user_id"] == before.local_id
    expect_ok(client.lookup(before.id_token, tenant_id))
