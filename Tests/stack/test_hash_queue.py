"""docs/protocol/accounts.md#passwords through the running stack: password hashing has bounded concurrency, and when its queue is full
the client gets `503 UNAVAILABLE` with `Retry-After` at once, not a pile-up and never a 500.

The directory is restarted with one hashing thread, a queue of one and Firebase-scrypt's production
memory cost (so that each hash takes long enough to overlap), through `scripts/stack restart SERVICE
NAME=VALUE`, which changes those settings for that one start; a plain restart afterwards gives it the
test stack's own settings back. Disruptive: runs after every calm test (conftest)."""

from __future__ import annotations

import subprocess
import threading
import time
import uuid

import pytest

from conftest import (REPO_ROOT, Client, describe, expect_ok, require_running_service, run_stack, scrape,
                      stack_command_env, stack_script, value)

pytestmark = pytest.mark.disruptive

PASSWORD = "queue-test-password"
# One thread, a queue of one, and the memory cost setting dropped (`NAME=`), so the directory hashes at
# its production default (14, 16 MiB) instead of the test stack's 10.
SMALL_POOL = ("TESSERA_HASH_THREADS=1", "TESSERA_HASH_QUEUE=1", "TESSERA_PASSWORD_HASH_MEM_COST=")
ACCOUNTS = 4
PER_ACCOUNT = 5  # 20 sign-ins at once, well under the per-account (30) and per-IP (300) hourly limits


def sign_in(client: Client, tenant_id: str, address: str):
    return client.post("/v1/accounts:signInWithPassword",
                       {"tenantId": tenant_id, "email": address, "password": PASSWORD, "returnSecureToken": True})


def test_restart_refuses_settings_that_are_not_pass_through(stack):
    pid = require_running_service(stack, "user-directory")
    for bad in ("DATABASE_URL=postgres://elsewhere/db", "TESSERA_HASH_THREADS", "NOT_A_SETTING=1"):
        proc = subprocess.run([str(stack_script()), "restart", "user-directory", bad], cwd=REPO_ROOT,
                              env=stack_command_env(stack), capture_output=True, text=True, timeout=60)
        assert proc.returncode != 0, f"restart accepted {bad!r}:\n{proc.stdout}\n{proc.stderr}"
        assert "pass-through" in proc.stderr, proc.stderr
    # Refused before anything was stopped.
    assert require_running_service(stack, "user-directory") == pid


def directory_environment(stack) -> dict[str, str]:
    pid = require_running_service(stack, "user-directory")
    with open(f"/proc/{pid}/environ", "rb") as handle:
        items = handle.read().decode().split("\0")
    return dict(item.split("=", 1) for item in items if "=" in item)


def test_full_hash_queue_answers_503_with_retry_after_at_once(stack, make_tenant):
    saved = directory_environment(stack)
    run_stack(stack, "restart", "user-directory", *SMALL_POOL)
    try:
        changed = directory_environment(stack)
        assert changed.get("TESSERA_HASH_THREADS") == "1" and changed.get("TESSERA_HASH_QUEUE") == "1", changed
        assert "TESSERA_PASSWORD_HASH_MEM_COST" not in changed, "NAME= must drop the setting"
        assert {k: v for k, v in changed.items() if not k.startswith(("TESSERA_HASH_", "TESSERA_PASSWORD_HASH_"))} \
            == {k: v for k, v in saved.items() if not k.startswith(("TESSERA_HASH_", "TESSERA_PASSWORD_HASH_"))}
        tenant_id = make_tenant(allowPasswordSignup=True)["tenantId"]
        client = Client(stack)
        addresses = [f"queue-{uuid.uuid4().hex[:10]}@example.com" for _ in range(ACCOUNTS)]
        for address in addresses:
            expect_ok(client.post("/v1/accounts:signUp", {"tenantId": tenant_id, "email": address,
                                                          "password": PASSWORD}))
        started = time.monotonic()
        expect_ok(sign_in(client, tenant_id, addresses[0]))
        one_sign_in = time.monotonic() - started

        results: list[tuple[int, float, object]] = []
        lock = threading.Lock()
        gate = threading.Barrier(ACCOUNTS * PER_ACCOUNT)

        def attempt(address: str) -> None:
            own = Client(stack)  # a connection of its own, as separate clients would have
            gate.wait(timeout=30)
            begun = time.monotonic()
            resp = sign_in(own, tenant_id, address)
            with lock:
                results.append((resp.status_code, time.monotonic() - begun, resp))

        threads = [threading.Thread(target=attempt, args=(address,))
                   for address in addresses for _ in range(PER_ACCOUNT)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert len(results) == len(threads), "some sign-ins never answered"

        statuses = sorted(code for code, _, _ in results)
        assert set(statuses) <= {200, 503}, f"only successes and 503s allowed: {statuses}\n" + "\n".join(
            describe(resp) for code, _, resp in results if code not in (200, 503))
        refused = [(elapsed, resp) for code, elapsed, resp in results if code == 503]
        assert refused, f"one thread and a queue of one took {len(results)} simultaneous sign-ins: {statuses}"
        assert len(refused) < len(results), f"nothing was admitted: {statuses}"
        for elapsed, resp in refused:
            assert resp.headers.get("Retry-After", "").strip().isdigit(), describe(resp)
            err = resp.json().get("error", {})
            assert err.get("code") == 503 and err.get("status") == "UNAVAILABLE", describe(resp)
            assert isinstance(err.get("message"), str) and err["message"], describe(resp)
        # Refused at once: no refused caller waited for the hashes ahead of it. Twenty sign-ins through
        # one thread would take twenty times `one_sign_in` for the last of them.
        slowest = max(elapsed for elapsed, _ in refused)
        assert slowest < max(1.0, 3 * one_sign_in), (
            f"a refused sign-in took {slowest:.2f}s (one sign-in alone: {one_sign_in:.2f}s)")

        # The refusals were the hashing queue's (not, say, the database's), or the token service's own
        # right after one of them for the same address (PasswordGate), and nothing is left in the queue.
        samples = scrape(stack.env["TESSERA_DIRECTORY_URL"])
        gated = value(scrape(stack.env["TESSERA_TOKEN_SERVICE_URL"]), "tessera_password_gate_refused_total")
        assert value(samples, "tessera_password_hash_refused_total") + gated == len(refused)
        assert value(samples, "tessera_password_hash_queue_depth_operations") == 0
        # The next sign-in goes through.
        expect_ok(sign_in(client, tenant_id, addresses[1]))
    finally:
        run_stack(stack, "restart", "user-directory")
    # Back on the stack's own settings: the one-off changes never reached the saved configuration.
    assert directory_environment(stack) == saved
    # The refused count starts again from zero with the new process.
    assert value(scrape(stack.env["TESSERA_DIRECTORY_URL"]), "tessera_password_hash_refused_total") == 0


def test_an_address_the_directory_refused_is_refused_by_the_token_service_for_the_window(stack, make_tenant):
    """The token service's PasswordGate (issue 37): once the directory refused an address's sign-in, that
    address's next ones within TESSERA_PASSWORD_REFUSAL_WINDOW get the same 503 and Retry-After without
    an internal call (the directory's refusal count does not move); after the window they reach it again."""
    tenant_id = make_tenant(allowPasswordSignup=True)["tenantId"]
    client = Client(stack)
    address = f"gate-{uuid.uuid4().hex[:10]}@example.com"
    expect_ok(client.post("/v1/accounts:signUp", {"tenantId": tenant_id, "email": address, "password": PASSWORD}))
    # One hashing thread, no queue, production hash cost: sign-ins at once overlap and are refused.
    run_stack(stack, "restart", "user-directory", "TESSERA_HASH_THREADS=1", "TESSERA_HASH_QUEUE=0",
              "TESSERA_PASSWORD_HASH_MEM_COST=")
    run_stack(stack, "restart", "token-service", "TESSERA_PASSWORD_REFUSAL_WINDOW=3s")
    try:
        directory, token = stack.env["TESSERA_DIRECTORY_URL"], stack.env["TESSERA_TOKEN_SERVICE_URL"]
        # Eight sign-ins at once through one thread and no queue: the directory refuses some.
        gate = threading.Barrier(8)
        answers: list[int] = []

        def attempt() -> None:
            own = Client(stack)
            gate.wait(timeout=30)
            answers.append(sign_in(own, tenant_id, address).status_code)

        threads = [threading.Thread(target=attempt) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        refused_by_directory = value(scrape(directory), "tessera_password_hash_refused_total")
        gated = value(scrape(token), "tessera_password_gate_refused_total")
        assert refused_by_directory >= 1 and sorted(set(answers)) == [200, 503], answers
        assert answers.count(503) == refused_by_directory + gated, (answers, refused_by_directory, gated)
        # Within the window (the burst took well under 3 s): refused by the token service itself, with
        # Retry-After, and the directory is not asked.
        again = sign_in(client, tenant_id, address)
        assert again.status_code == 503 and again.json()["error"]["status"] == "UNAVAILABLE", describe(again)
        assert again.headers.get("Retry-After", "").isdigit(), describe(again)
        assert value(scrape(token), "tessera_password_gate_refused_total") == gated + 1
        assert value(scrape(directory), "tessera_password_hash_refused_total") == refused_by_directory
        # After it, the sign-in reaches the directory again, whose thread is free.
        time.sleep(3.2)
        expect_ok(sign_in(client, tenant_id, address))
        assert value(scrape(token), "tessera_password_gate_refused_total") == gated + 1
    finally:
        run_stack(stack, "restart", "token-service")
        run_stack(stack, "restart", "user-directory")
