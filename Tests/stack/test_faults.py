"""Fault tests (issue #7), disruptive, run last: under a steady load of sign-ups, refreshes, password
changes and deletions, kill -9 the directory, the token service and PostgreSQL in turn. Clients must
only ever see successes or clean retryable errors (503 with Retry-After, never a 500), everything
must work again within seconds of the killed part being back (the others recover by themselves),
and nothing that was acknowledged may be lost or half-applied."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
import uuid

import pytest
import requests

from conftest import (Client, Stack, describe, expect_ok, pid_alive, require_running_service, run_stack,
                      stack_command_env, stack_script, unverified_claims, wait_until)

pytestmark = pytest.mark.disruptive


class Load:
    """One client thread doing a mix of writes; remembers what the service acknowledged."""

    def __init__(self, stack: Stack, tenant_id: str):
        self.client = Client(stack)
        self.tenant_id = tenant_id
        self.signed_up: list[str] = []
        self.deleted: list[str] = []
        # A write whose answer was lost (the token service killed mid-request) may or may not have
        # committed: those ids and passwords are accepted either way, nothing else is.
        self.maybe_deleted: list[str] = []
        self.maybe_passwords: list[str] = []
        self.bad: list[str] = []
        self.outcomes: dict[int, int] = {}
        self.email = f"fault-{uuid.uuid4().hex[:10]}@example.com"
        self.password = "password-0"
        self.stop = threading.Event()
        created = expect_ok(self.client.post("/v1/accounts:signUp", {
            "email": self.email, "password": self.password, "tenantId": tenant_id, "returnSecureToken": True}))
        self.local_id = created["localId"]
        self.id_token = created["idToken"]
        self.thread = threading.Thread(target=self.run, daemon=True)

    def record(self, resp) -> bool:
        self.outcomes[resp.status_code] = self.outcomes.get(resp.status_code, 0) + 1
        if resp.status_code == 200:
            return True
        if resp.status_code == 503:
            if not resp.headers.get("Retry-After", "").strip().isdigit():
                self.bad.append("503 without Retry-After: " + describe(resp))
            if resp.json().get("error", {}).get("status") != "UNAVAILABLE":
                self.bad.append("503 not UNAVAILABLE: " + describe(resp))
            return False
        if resp.status_code == 400 and ("CREDENTIAL_TOO_OLD" in resp.text or "TOKEN_EXPIRED" in resp.text):
            return False  # the password user must sign in again; handled by the caller
        self.bad.append(describe(resp))
        return False

    def call(self, fn):
        try:
            return fn()
        except requests.RequestException as error:  # the ingress itself is never killed
            self.bad.append(f"transport error: {error!r}")
            return None

    def step(self, n: int) -> None:
        resp = self.call(lambda: self.client.sign_up_raw(self.tenant_id))
        if resp is not None and self.record(resp):
            data = resp.json()
            self.signed_up.append(data["localId"])
            if n % 3 == 0:  # delete every third one again, with its own ID token
                gone = self.call(lambda: self.client.delete(data["idToken"], self.tenant_id))
                if gone is not None and self.record(gone):
                    self.deleted.append(data["localId"])
                else:
                    self.maybe_deleted.append(data["localId"])
        # A credential change made with a token of the current second waits for the next one (so that
        # it can revoke that token): change the password only with an older token, and keep signing up.
        if unverified_claims(self.id_token)["iat"] >= int(time.time()):
            return
        new_password = f"password-{n}"
        resp = self.call(lambda: self.client.post("/v1/accounts:update", {
            "idToken": self.id_token, "password": new_password, "tenantId": self.tenant_id,
            "returnSecureToken": True}))
        if resp is not None and self.record(resp):
            self.password, self.id_token = new_password, resp.json()["idToken"]
            self.maybe_passwords = []
        elif resp is not None and resp.status_code == 400:
            self.sign_in_again()
        else:
            self.maybe_passwords.append(new_password)

    def sign_in_again(self) -> None:
        for password in [self.password, *self.maybe_passwords]:
            resp = self.call(lambda: self.client.post("/v1/accounts:signInWithPassword", {
                "email": self.email, "password": password, "tenantId": self.tenant_id,
                "returnSecureToken": True}))
            if resp is None:
                return
            if resp.status_code == 200:
                self.record(resp)
                self.password, self.id_token, self.maybe_passwords = password, resp.json()["idToken"], []
                return
            if resp.status_code != 400:
                self.record(resp)
                return

    def run(self) -> None:
        n = 1
        while not self.stop.is_set():
            self.step(n)
            n += 1
            time.sleep(0.02)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(timeout=60)


def kill(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)
    assert wait_until(lambda: not pid_alive(pid), timeout=10), f"pid {pid} survived SIGKILL"


def stack_up(stack: Stack) -> None:
    """Starts whatever part is not running (as a supervisor would), with the existing binaries."""
    env = stack_command_env(stack)
    env["TESSERA_SKIP_BUILD"] = "1"
    done = subprocess.run([str(stack_script()), "up"], env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]


def restore_after_directory_stop(stack: Stack) -> None:
    """The whole stack again after the directory was stopped on purpose, without waiting out the token
    service's reconnection backoff: every call that reached it while the directory was gone failed to
    connect, and its HTTP client's backoff grows with each failure (after this test's three dozen, /readyz
    stayed 503 for 10-25 s after the directory was back). How the token service recovers by itself is
    test_kill_9_under_load_loses_nothing_and_recovers[user-directory]'s subject; here it is restarted."""
    run_stack(stack, "start", "user-directory")
    run_stack(stack, "restart", "token-service")
    stack_up(stack)


def postgres_pid(stack: Stack) -> int:
    return int((stack.stack_dir / "pg" / "postmaster.pid").read_text().split()[0])


def works(stack: Stack, tenant_id: str) -> bool:
    try:
        return Client(stack).sign_up_raw(tenant_id).status_code == 200
    except requests.RequestException:
        return False


@pytest.mark.parametrize("part", ["user-directory", "token-service", "postgres"])
def test_kill_9_under_load_loses_nothing_and_recovers(stack, admin, make_tenant, part):
    tenant_id = make_tenant(allowPasswordSignup=True, rateLimits={"signUpsPerIpPerHour": 0})["tenantId"]
    jwks_url = stack.url + "/.well-known/jwks.json"
    keys = expect_ok(requests.get(jwks_url, timeout=10))
    with Load(stack, tenant_id) as load:
        # The load is in full swing once each kind of write it makes has been acknowledged.
        assert wait_until(lambda: load.deleted and load.password != "password-0" and len(load.signed_up) >= 5,
                          timeout=15, interval=0.05), f"the load did not get going: {load.outcomes} {load.bad[:3]}"
        pid = postgres_pid(stack) if part == "postgres" else require_running_service(stack, part)
        kill(pid)
        time.sleep(2.0)  # the outage, under load
        outage = dict(load.outcomes)
        if part != "token-service":
            # The public keys are served from the token service's memory (issue #8): neither the
            # directory nor PostgreSQL is needed to verify tokens.
            assert expect_ok(requests.get(jwks_url, timeout=10)) == keys, f"JWKS changed without {part}"
        stack_up(stack)
        started = time.monotonic()
        assert wait_until(lambda: works(stack, tenant_id), timeout=20), f"no recovery after {part} came back"
        recovery = time.monotonic() - started
        # And keep going for a while: more acknowledged sign-ups after the recovery.
        recovered_at = len(load.signed_up)
        assert wait_until(lambda: len(load.signed_up) >= recovered_at + 5, timeout=15, interval=0.05), \
            f"the load did not go on after the recovery: {load.outcomes}"
    assert not load.bad, load.bad[:5]
    assert load.outcomes.get(503, 0) > 0 or part == "postgres", f"no outage seen: {outage}"
    assert recovery < 15, f"recovery took {recovery:.1f}s"

    # Every acknowledged sign-up exists unless its deletion was acknowledged; those are gone.
    assert len(load.signed_up) > 10, load.outcomes
    unsure = set(load.maybe_deleted)
    alive = set(load.signed_up) - set(load.deleted) - unsure
    found = set()
    ids = load.signed_up
    for start in range(0, len(ids), 100):
        found |= {u["localId"] for u in admin.lookup_users(tenant_id, ids[start:start + 100])}
    assert found - unsure == alive, f"lost {alive - found}, resurrected {found & set(load.deleted)}"
    # The password is the last acknowledged one (or one whose answer was lost), never a mix.
    working = []
    for password in [load.password, *load.maybe_passwords]:
        resp = Client(stack).post("/v1/accounts:signInWithPassword", {
            "email": load.email, "password": password, "tenantId": tenant_id, "returnSecureToken": True})
        if resp.status_code == 200:
            working.append(password)
    assert len(working) == 1, (load.password, load.maybe_passwords, working)


def test_sigterm_drains_in_flight_requests(stack, admin, make_tenant):
    """Graceful shutdown: a directory told to stop (SIGTERM) finishes what it has accepted; calls
    that arrive after it stopped listening get a clean 503; nothing acknowledged is lost. The
    process exits within TESSERA_SHUTDOWN_TIMEOUT (25 s) plus the 2 s cancellation allowance even
    if some background work does not stop by itself."""
    from concurrent.futures import ThreadPoolExecutor

    tenant_id = make_tenant(allowPasswordSignup=True, rateLimits={"signUpsPerIpPerHour": 0})["tenantId"]
    pid = require_running_service(stack, "user-directory")

    def sign_up(n: int):
        try:
            return Client(stack).post("/v1/accounts:signUp", {
                "email": f"drain-{n}-{uuid.uuid4().hex[:8]}@example.com", "password": "correct horse",
                "tenantId": tenant_id, "returnSecureToken": True})
        except requests.RequestException as error:
            return error

    with ThreadPoolExecutor(max_workers=12) as pool:
        futures = [pool.submit(sign_up, n) for n in range(48)]
        time.sleep(0.15)
        os.kill(pid, signal.SIGTERM)
        results = [f.result() for f in futures]
    try:
        started = time.monotonic()
        assert wait_until(lambda: not pid_alive(pid), timeout=30), "the directory did not stop after SIGTERM"
        print(f"directory exited {time.monotonic() - started:.2f} s after SIGTERM")
        errors = [r for r in results if isinstance(r, Exception)]
        assert not errors, errors[:3]
        statuses = [r.status_code for r in results]
        assert set(statuses) <= {200, 503}, [describe(r) for r in results if r.status_code not in (200, 503)][:3]
        assert statuses.count(200) > 0, "nothing in flight was finished"
    finally:
        restore_after_directory_stop(stack)
    created = [r.json()["localId"] for r in results if r.status_code == 200]
    found = {u["localId"] for u in admin.lookup_users(tenant_id, created)}
    assert found == set(created)
