"""Password hashing in a process of its own (`TESSERA_HASH_ISOLATION=process`, issue 37) through the running
stack: the directory starts `user-directory hash-worker` in a session of its own whose scheduling group runs at
`TESSERA_HASH_GROUP_NICE`; sign-ups and sign-ins hash there; a worker killed is replaced at a later sign-in;
and the worker never outlives the directory, even one killed with SIGKILL.

Disruptive (restarts and kills the directory): runs after every calm test (conftest)."""

from __future__ import annotations

import os
import signal
import time
import uuid
from pathlib import Path

import pytest

from conftest import Client, expect_ok, pid_alive, require_running_service, run_stack, scrape, value

pytestmark = pytest.mark.disruptive

PASSWORD = "worker-test-password"


def workers_of(directory_pid: int) -> list[int]:
    """The hash worker processes the directory started (its children running `hash-worker`)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        if parent == directory_pid and b"hash-worker" in command and pid_alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def wait_for(condition, seconds: float = 10.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        result = condition()
        if result:
            return result
        time.sleep(0.05)
    return condition()


def group_nice(pid: int) -> int | None:
    try:
        text = Path(f"/proc/{pid}/autogroup").read_text()
    except OSError:
        return None
    return int(text.split("nice")[1].split()[0])


def sign_in(client: Client, tenant_id: str, address: str):
    return client.post("/v1/accounts:signInWithPassword",
                       {"tenantId": tenant_id, "email": address, "password": PASSWORD, "returnSecureToken": True})


def test_hashing_runs_in_a_worker_of_its_own_that_never_outlives_the_directory(stack, make_tenant):
    run_stack(stack, "restart", "user-directory", "TESSERA_HASH_ISOLATION=process", "TESSERA_HASH_GROUP_NICE=15")
    try:
        directory = require_running_service(stack, "user-directory")
        # Started with the directory, not at the first hash.
        workers = wait_for(lambda: workers_of(directory))
        assert len(workers) == 1, f"expected one hash worker of pid {directory}: {workers}"
        worker = workers[0]
        assert os.getsid(worker) == worker != os.getsid(directory), "the worker leads a session of its own"
        if Path("/proc/sys/kernel/sched_autogroup_enabled").read_text().strip() == "1":
            assert group_nice(worker) == 15
            assert group_nice(directory) == 0
        # No descriptor of the directory's beyond its channels: no listening socket, no database connection.
        descriptors = sorted(int(fd) for fd in os.listdir(f"/proc/{worker}/fd"))
        assert descriptors[3:] == list(range(3, 3 + len(descriptors) - 3)), descriptors

        tenant_id = make_tenant(allowPasswordSignup=True)["tenantId"]
        client = Client(stack)
        address = f"worker-{uuid.uuid4().hex[:10]}@example.com"
        expect_ok(client.post("/v1/accounts:signUp", {"tenantId": tenant_id, "email": address, "password": PASSWORD}))
        before = cpu_seconds(worker)
        for _ in range(3):
            signed_in = expect_ok(sign_in(client, tenant_id, address))
            assert signed_in["idToken"] and signed_in["refreshToken"]
        wrong = client.post("/v1/accounts:signInWithPassword",
                            {"tenantId": tenant_id, "email": address, "password": "not-it", "returnSecureToken": True})
        assert wrong.status_code == 400 and wrong.json()["error"]["message"].startswith("INVALID_"), wrong.text
        assert cpu_seconds(worker) > before, "the sign-ins' hashes did not run in the worker"

        # A worker killed is replaced: the sign-in that finds it gone is refused with a retryable 503 at
        # worst, and a later one goes through on a new worker.
        os.kill(worker, signal.SIGKILL)
        time.sleep(1.2)  # the directory starts a worker at most once a second
        statuses = []
        for _ in range(3):
            response = sign_in(client, tenant_id, address)
            statuses.append(response.status_code)
            if response.status_code == 503:
                assert response.headers.get("Retry-After", "").isdigit(), response.text
                time.sleep(1.1)
            else:
                expect_ok(response)
                break
        assert statuses[-1] == 200, statuses
        replacement = wait_for(lambda: workers_of(directory))
        assert len(replacement) == 1 and replacement[0] != worker, replacement
        assert value(scrape(stack.env["TESSERA_DIRECTORY_URL"]), "tessera_password_hash_worker_starts_total") == 2

        # SIGKILL of the directory: the kernel closes its ends of the channels and the worker exits.
        os.kill(directory, signal.SIGKILL)
        assert wait_for(lambda: not pid_alive(replacement[0]), 5), "the worker outlived its directory"
    finally:
        run_stack(stack, "restart", "user-directory")
    assert workers_of(require_running_service(stack, "user-directory")) == [], "the stack's default is threads"


def cpu_seconds(pid: int) -> float:
    """Time on a CPU of all the process's threads, in nanoseconds' precision (/proc/PID/task/*/schedstat):
    the test stack's hashes (mem cost 10) take a few milliseconds, under a clock tick of /proc/PID/stat."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue
    return total / 1e9
