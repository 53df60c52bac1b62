"""Structured logs (issue #7, observability): every service writes one JSON object per line, and a
request's id travels with it from the ingress through the token service to the directory."""

from __future__ import annotations

import json
import uuid

from conftest import Stack, wait_until
from test_secrets import STRONG, running


def log_lines(stack: Stack, service: str) -> list[dict]:
    """The JSON lines of a service's log (lines scripts/stack writes itself start with '---')."""
    assert stack.stack_dir is not None
    path = stack.stack_dir / "logs" / f"{service}.log"
    entries = []
    for line in path.read_text(errors="replace").splitlines():
        if not line.strip() or line.startswith("--- "):
            continue
        entry = json.loads(line)  # a line that is not JSON fails the test
        entries.append(entry)
    return entries


def test_every_service_logs_json_lines_with_the_standard_fields(stack):
    for service in ("token-service", "user-directory", "cleanup-worker"):
        entries = log_lines(stack, service)
        assert entries, f"{service} logged nothing"
        for entry in entries:
            assert {"time", "level", "service", "message"} <= entry.keys(), entry
            assert entry["service"] == service, entry


def test_every_service_runs_its_tasks_on_the_event_loops(stack):
    """TESSERA_TASKS_ON_EVENT_LOOPS defaults to true, and each service says at startup that NIO's
    hook is installed (a fallback to Swift's pool is logged as a warning with another value)."""
    for service in ("token-service", "user-directory", "cleanup-worker"):
        executors = [e["tasks.executor"] for e in log_lines(stack, service) if "tasks.executor" in e]
        assert executors, f"{service} did not log where its tasks run"
        assert executors[-1] == "event-loops", f"{service}: {executors}"


NO_PUBLIC_URL = "TESSERA_PUBLIC_URL is not set"


def since_last_start(stack: Stack, service: str) -> list[dict]:
    """The JSON lines a stack service wrote since scripts/stack last started it (its '--- ... starting'
    line)."""
    assert stack.stack_dir is not None
    path = stack.stack_dir / "logs" / f"{service}.log"
    lines = path.read_text(errors="replace").splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("--- ") and " starting " in line]
    assert starts, f"no start of {service} in {path}"
    return [json.loads(line) for line in lines[starts[-1] + 1:] if line.strip() and not line.startswith("--- ")]


def test_services_without_a_public_url_say_where_links_will_point(stack):
    """A service that builds links and has no TESSERA_PUBLIC_URL says so at start, with the authorized
    domains a request's host must be exactly one of (issue 23). The test stack sets TESSERA_PUBLIC_URL to
    its own URL, so its services stay silent; each is started once more beside the stack, without one."""
    for service in ("token-service", "user-directory"):
        notices = [e for e in since_last_start(stack, service) if e.get("message", "").startswith(NO_PUBLIC_URL)]
        assert not notices, f"{service} of the stack runs without a public URL: {notices}"
        with running(stack, service, "/readyz", LOG_LEVEL="info", TESSERA_ADMIN_TOKEN=STRONG) as started:
            pass
        entries = [json.loads(line) for line in started.output.splitlines() if line.startswith("{")]
        notices = [e for e in entries if e.get("message", "").startswith(NO_PUBLIC_URL)]
        assert notices, f"{service} did not say that links follow authorized request hosts only:\n" \
                        f"{started.output[-2000:]}"
        assert notices[-1]["level"] == "notice" and notices[-1]["links.authorized_domains"] == "localhost,127.0.0.1"


def test_a_request_id_is_carried_across_services(stack, client, tenant_id):
    request_id = "trace-" + uuid.uuid4().hex
    resp = client.sign_up_raw(tenant_id, headers={"X-Request-ID": request_id})
    assert resp.status_code == 200, resp.text
    assert resp.headers.get("X-Request-ID") == request_id

    def logged() -> bool:
        return any(e.get("request.id") == request_id and e["message"] == "anonymous user created"
                   for e in log_lines(stack, "user-directory"))
    assert wait_until(logged, timeout=5), "the directory's log line does not carry the caller's request id"
