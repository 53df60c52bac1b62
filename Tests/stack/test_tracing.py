"""OpenTelemetry tracing (issue #7, observability): off by default; when an operator turns it on with
OTEL_TRACES_EXPORTER=otlp, one end-user call is one trace across the token service and the
user-directory, continued from the caller's W3C traceparent.

The shared test stack runs with tracing off (the default). This test starts a second token service
and user-directory from the same binaries, on the same database, with the standard OTEL_* keys
pointing at a small OTLP/HTTP+JSON collector it runs itself, and stops them afterwards."""

from __future__ import annotations

import base64
import json
import os
import secrets
import signal
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import requests

from conftest import Stack, require_running_service, wait_until


class Collector:
    """An OTLP/HTTP collector that accepts JSON-encoded span batches on /v1/traces."""

    def __init__(self, port: int):
        self.spans: list[dict] = []
        self.lock = threading.Lock()
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's naming)
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if self.path == "/v1/traces":
                    payload = json.loads(body)
                    with collector.lock:
                        for resource in payload.get("resourceSpans", []):
                            attrs = {a["key"]: a["value"].get("stringValue")
                                     for a in resource.get("resource", {}).get("attributes", [])}
                            for scope in resource.get("scopeSpans", []):
                                for span in scope.get("spans", []):
                                    span["service"] = attrs.get("service.name")
                                    for key in ("traceId", "spanId", "parentSpanId"):
                                        span[key] = hex_id(span.get(key, ""))
                                    collector.spans.append(span)
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def trace(self, trace_id: str) -> list[dict]:
        with self.lock:
            return [s for s in self.spans if s.get("traceId") == trace_id]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def hex_id(value: str) -> str:
    """A trace or span id as lower-case hex. OTLP/JSON writes ids as hex; protobuf's generic JSON
    mapping (which some exporters use) as base64: accept both."""
    if not value:
        return ""
    if all(c in "0123456789abcdefABCDEF" for c in value) and len(value) in (16, 32):
        return value.lower()
    return base64.b64decode(value).hex()


def attribute(span: dict, key: str):
    for item in span.get("attributes", []):
        if item["key"] == key:
            value = item["value"]
            return value.get("stringValue", value.get("intValue"))
    return None


@pytest.fixture
def traced_services(stack: Stack):
    """A token service and a user-directory with tracing on, and the collector they export to."""
    bin_dir = stack.env.get("TESSERA_BIN_DIR")
    keys_dir = stack.env.get("TESSERA_SIGNING_KEYS_DIR")
    if not (bin_dir and keys_dir and stack.database_url and stack.internal_secret and stack.stack_dir):
        pytest.skip("needs the env file of a stack started by scripts/stack")
    base = stack.port + 27
    collector_port, directory_port, token_port = base, base + 1, base + 2
    collector = Collector(collector_port)
    common = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "TESSERA_PROJECT_ID": stack.project_id,
        "TESSERA_INTERNAL_SECRET": stack.internal_secret,
        "TESSERA_API_KEY": stack.api_key,
        "TESSERA_HTTP_HOST": "127.0.0.1",
        "LOG_FORMAT": "json",
        "OTEL_TRACES_EXPORTER": "otlp",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json",
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{collector_port}",
        "OTEL_BSP_SCHEDULE_DELAY": "100",
    }
    directory_env = common | {
        "TESSERA_HTTP_PORT": str(directory_port),
        "DATABASE_URL": stack.database_url,
        "TESSERA_ADMIN_TOKEN": stack.admin_token,
        "TESSERA_PASSWORD_HASH_ROUNDS": "1",
        "TESSERA_PASSWORD_HASH_MEM_COST": "4",
    }
    token_env = common | {
        "TESSERA_HTTP_PORT": str(token_port),
        "TESSERA_DIRECTORY_URL": f"http://127.0.0.1:{directory_port}",
        "TESSERA_SIGNING_KEYS_DIR": keys_dir,
    }
    logs = stack.stack_dir / "logs"
    processes: list[subprocess.Popen] = []
    try:
        for name, env, port in (("user-directory", directory_env, directory_port),
                                ("token-service", token_env, token_port)):
            log = open(logs / f"traced-{name}.log", "wb")
            processes.append(subprocess.Popen([str(Path(bin_dir) / name)], env=env, stdout=log,
                                              stderr=subprocess.STDOUT))
            log.close()

            def healthy(port=port) -> bool:
                try:
                    return requests.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200
                except requests.RequestException:
                    return False
            assert wait_until(healthy, timeout=30), f"traced {name} did not become ready (see {logs})"
        yield f"http://127.0.0.1:{token_port}", collector
    finally:
        for process in reversed(processes):
            process.send_signal(signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        collector.close()


def test_one_sign_up_is_one_trace_across_the_token_service_and_the_directory(traced_services, stack,
                                                                              tenant_id):
    token_url, collector = traced_services
    trace_id = secrets.token_hex(16)
    caller_span = secrets.token_hex(8)
    resp = requests.post(
        f"{token_url}/v1/accounts:signUp", params={"key": stack.api_key},
        json={"tenantId": tenant_id, "returnSecureToken": True},
        headers={"traceparent": f"00-{trace_id}-{caller_span}-01"}, timeout=15)
    assert resp.status_code == 200, resp.text

    def complete() -> bool:
        services = {s["service"] for s in collector.trace(trace_id) if s.get("kind") in (2, "SPAN_KIND_SERVER")}
        return {"token-service", "user-directory"} <= services
    assert wait_until(complete, timeout=15), (collector.trace(trace_id), len(collector.spans))

    spans = collector.trace(trace_id)
    by_id = {s["spanId"]: s for s in spans}
    token_server = next(s for s in spans if s["service"] == "token-service" and s["name"].endswith("signUp"))
    # The token service continues the caller's trace.
    assert token_server["parentSpanId"] == caller_span
    assert attribute(token_server, "http.route") == token_server["name"]
    assert attribute(token_server, "http.response.status_code") in (200, "200")
    # The API key is not recorded.
    assert stack.api_key not in json.dumps(spans)

    directory_server = next(s for s in spans if s["service"] == "user-directory")
    client_span = by_id[directory_server["parentSpanId"]]
    assert client_span["service"] == "token-service"
    assert client_span["name"].startswith("directory /internal/")
    # The internal call is a child of the token service's request span.
    assert client_span["parentSpanId"] == token_server["spanId"]


def test_tracing_is_off_by_default(stack):
    """The shared stack runs with the defaults: no OTEL_* key reaches its services, so none of them
    bootstraps a tracer (the unit tests check that no key means no tracer)."""
    assert not any(key.startswith("OTEL_") for key in stack.env), "the test stack should run with defaults"
    for service in ("token-service", "user-directory", "cleanup-worker"):
        pid = require_running_service(stack, service)
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        assert not [item for item in environ if item.startswith(b"OTEL_")], service
