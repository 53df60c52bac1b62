"""An SMS sink for whole-stack tests: the webhook the test stack's directory sends text messages to.

scripts/test starts the stack with ``TESSERA_SMS_SENDER=webhook``, ``TESSERA_SMS_WEBHOOK_URL`` at
127.0.0.1:TEST_PORT+34 and a fresh ``TESSERA_SMS_WEBHOOK_SECRET`` (all three written to <stack>/env);
the ``sms_sink`` fixture (conftest.py) listens there. Each POST is checked the way a real receiver must
check it (docs/design-notes.md, "SMS delivery"): the ``X-Tessera-Signature`` header
``t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">`` under the secret, with ``t`` within a
tolerance of the receiver's clock. A valid message is recorded and answered 200; a bad signature 401 and
counted in ``rejected``. A test can make the sink fail the next requests (``fail_next``) to exercise the
directory's retries; a repeat of a message ``id`` already recorded is answered 200 and counted in
``repeats``, not recorded twice (the webhook is at-least-once).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SIGNATURE_HEADER = "X-Tessera-Signature"
TOLERANCE_SECONDS = 300


def verify_signature(secret: str, header: str | None, body: bytes, now: float | None = None,
                     tolerance: float = TOLERANCE_SECONDS) -> bool:
    """Whether ``header`` signs ``body`` (the raw bytes, before any JSON parsing) under ``secret``, at a
    time within ``tolerance`` seconds of ``now``. Compared in constant time."""
    if not header:
        return False
    parts = dict(part.split("=", 1) for part in header.split(",") if "=" in part)
    timestamp, signature = parts.get("t", ""), parts.get("v1", "")
    if not timestamp.isdigit() or not signature:
        return False
    if abs((time.time() if now is None else now) - int(timestamp)) > tolerance:
        return False
    expected = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, signature)


def sign(secret: str, body: bytes, timestamp: int | None = None) -> str:
    """The header value the directory would send for ``body`` (for tests of the sink itself)."""
    t = int(time.time()) if timestamp is None else timestamp
    mac = hmac.new(secret.encode(), str(t).encode() + b"." + body, hashlib.sha256).hexdigest()
    return f"t={t},v1={mac}"


class SmsSink:
    """Records the messages the directory sends: dicts with ``to``, ``body``, ``scope``, ``id`` and
    ``at`` (the sink's receive time)."""

    def __init__(self, port: int, secret: str, host: str = "127.0.0.1", path: str = "/sms"):
        self.host, self.port, self.secret, self.path = host, port, secret, path
        self.messages: list[dict] = []
        self.rejected = 0
        self.repeats = 0
        self.failures: list[int] = []
        self.condition = threading.Condition()
        self.server: ThreadingHTTPServer | None = None
        self.thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}{self.path}"

    def start(self) -> None:
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet: the bodies carry codes
                pass

            def answer(self, status: int) -> None:
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path.split("?")[0] != sink.path:
                    return self.answer(404)
                if not verify_signature(sink.secret, self.headers.get(SIGNATURE_HEADER), body):
                    with sink.condition:
                        sink.rejected += 1
                    return self.answer(401)
                with sink.condition:
                    if sink.failures:
                        return self.answer(sink.failures.pop(0))
                    message = json.loads(body)
                    if any(m["id"] == message["id"] for m in sink.messages):
                        sink.repeats += 1
                    else:
                        sink.messages.append({**message, "at": time.time()})
                        sink.condition.notify_all()
                self.answer(200)

        self.server = ThreadingHTTPServer((self.host, self.port), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, name="sms-sink", daemon=True)
        self.thread.start()

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def fail_next(self, *statuses: int) -> None:
        """Answer the next signed requests with these statuses (e.g. 503, 503), then accept again."""
        with self.condition:
            self.failures.extend(statuses)

    def to(self, number: str) -> list[dict]:
        with self.condition:
            return [m for m in self.messages if m["to"] == number]

    def wait_for(self, number: str, count: int = 1, timeout: float = 20) -> list[dict]:
        """The first ``count`` messages to ``number``; fails after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        with self.condition:
            while True:
                found = [m for m in self.messages if m["to"] == number]
                if len(found) >= count:
                    return found
                remaining = deadline - time.monotonic()
                assert remaining > 0, f"no SMS to {number} within {timeout}s (got {len(found)})"
                self.condition.wait(remaining)


def sms_code(message: dict, digits: int = 6) -> str:
    """The one-time code in a message's body (the first run of ``digits`` digits)."""
    match = re.search(rf"(?<!\d)\d{{{digits}}}(?!\d)", message["body"])
    assert match, f"no {digits}-digit code in: {message['body']!r}"
    return match.group(0)
