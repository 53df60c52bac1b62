"""A second, empty local stack next to the test stack, for tests that need a deployment of their own
(a restore target, an import target): the same binaries and the same service settings as the test
stack, on ports of its own, in a temporary stack directory, always stopped (and removed) at the end.

    from fresh_stack import FreshStack

    with FreshStack(stack, port=stack.port + 200, name="restore") as fresh:
        Client(fresh.stack).sign_up_anonymous()      # conftest's clients take fresh.stack
        fresh.psql("SELECT max(version) FROM schema_migrations")
        fresh.run_stack("restart", "token-service")

``port`` is the fresh stack's TESSERA_PORT; it uses port-1 (admin plane) to port+4 (PostgreSQL), all
on 127.0.0.1. Keep it clear of the test stack's own range and of the tools around it: the test stack
(scripts/test) uses TESSERA_PORT-1..+6 and the suite's tools +25..+33, so offsets of +100 and more are
free; +200 is this suite's restore target, +300 the CLI import target.

Settings. The fresh stack gets what the test stack was started with (scripts/test's `scripts/stack up`
call): every pass-through setting frozen in the test stack's <stack>/run/config (IDP_* pointing at the
test stack's fake identity provider, SMTP_* pointing at its mail sink, TESSERA_OWNER_TOKEN_SCOPE, the
short refresh-grace and re-auth windows, TESSERA_PASSWORD_HASH_MEM_COST, ...), or, when that file
cannot be read, the ones the env file states plus scripts/test's others. Not inherited: the stack's own
URL (TESSERA_PUBLIC_URL), ports, secrets and database. The project id is the test stack's (ID tokens
name it in `aud` and `iss`); the API key, admin token, internal secret and database password are the
fresh stack's own (scripts/stack generates them). ``settings={"NAME": "value", "OTHER": None}`` adds,
changes or drops (None) settings. Nothing of the caller's environment reaches the stack but PATH,
HOME, locale and the like. TESSERA_SKIP_BUILD=1; the binaries are the test stack's (TESSERA_BIN_DIR
of its env file; <repo>/.build/debug when that is empty). Always the single PostgreSQL (not the HA
profile).

The temporary directory is removed after `scripts/stack down`, unless ``keep=True`` or
TESSERA_KEEP_FRESH_STACKS=1 (then its path is printed). A failed start raises AssertionError with
the tail of the stack's logs, after stopping whatever had started.
"""

from __future__ import annotations

import atexit
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Mapping
from urllib.parse import urlparse

from conftest import REPO_ROOT, Stack, parse_env_file, psql as _psql, stack_from_env

STACK_SCRIPT = REPO_ROOT / "scripts" / "stack"
SERVICES = ("user-directory", "token-service", "cleanup-worker")

# Settings scripts/test passes that `scripts/stack up` does not write to the env file (used only when
# the test stack's run/config cannot be read).
SCRIPTS_TEST_EXTRA = {
    "TESSERA_IDP_JWKS_REFETCH_INTERVAL": "0s",
    "TESSERA_PASSWORD_HASH_MEM_COST": "10",
    "TESSERA_ADMIN_AUTH_FAILURES_PER_HOUR": "0",
    "SMTP_RETRY_BASE": "1s",
    "SMTP_POLL_INTERVAL": "200ms",
}
# scripts/stacklib/config.py's ENV_FILE_SETTINGS: the pass-through settings it writes to <stack>/env.
ENV_FILE_SETTINGS = (
    "TESSERA_REFRESH_GRACE", "TESSERA_REFRESH_IDLE_TTL", "TESSERA_REFRESH_ABSOLUTE_TTL", "TESSERA_REAUTH_WINDOW",
    "TESSERA_KEY_RELOAD_INTERVAL", "CLEANUP_ANONYMOUS_RETENTION", "CLEANUP_INTERVAL", "TESSERA_OOB_CODE_TTL",
    "SMTP_URL", "SMTP_CA_FILE", "TESSERA_OWNER_TOKEN_SCOPE",
)
# Stack-specific pass-through settings that must not be copied to another stack.
NOT_INHERITED = ("TESSERA_PUBLIC_URL",)
# Names of the caller's environment that never reach scripts/stack (it reads pass-through settings,
# secrets and ports from its environment).
LEAKY_PREFIXES = ("TESSERA_", "SMTP_", "IDP_", "OTEL_", "CLEANUP_", "DATABASE_", "PG")
LEAKY_NAMES = ("TEST_DATABASE_URL", "LOG_LEVEL", "LOG_FORMAT", "SWIFT_BACKTRACE")
KEPT_NAMES = ("TESSERA_READY_TIMEOUT",)

_RUNNING: set["FreshStack"] = set()


def _stop_leftovers() -> None:
    for fresh in list(_RUNNING):
        fresh.stop()


atexit.register(_stop_leftovers)


def stack_from_env_file(path: Path) -> Stack:
    """conftest's Stack for the stack that wrote the env file ``path``."""
    return stack_from_env(path, parse_env_file(path.read_text()))


def _frozen_passthrough(stack_dir: Path | None) -> dict[str, str] | None:
    """The pass-through settings of a running stack (its run/config), or None when unreadable."""
    if stack_dir is None:
        return None
    config = stack_dir / "run" / "config"
    if not os.access(config, os.R_OK):
        return None
    # run/config is bash (printf %q); let bash read it back.
    done = subprocess.run(
        ["bash", "-c", 'source "$1" && printf "%s\\0" "${PASSTHROUGH[@]}"', "bash", str(config)],
        capture_output=True, timeout=30, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
    if done.returncode != 0:
        return None
    settings: dict[str, str] = {}
    for item in done.stdout.decode().split("\0"):
        name, sep, value = item.partition("=")
        if sep and name:
            settings[name] = value
    return settings


def main_stack_settings(main: Stack) -> dict[str, str]:
    """The pass-through settings the test stack ``main`` runs with (see the module's docstring)."""
    settings = _frozen_passthrough(main.stack_dir)
    if settings is None:
        settings = {name: value for name, value in main.env.items()
                    if name.startswith("IDP_") or name in ENV_FILE_SETTINGS}
        settings.update(SCRIPTS_TEST_EXTRA)
        fake = main.env.get("IDP_FAKE_URL")
        if fake:
            parsed = urlparse(fake)
            settings["TESSERA_IDP_ALLOWED_PRIVATE_ADDRESSES"] = f"{parsed.hostname}:{parsed.port}"
    for name in NOT_INHERITED:
        settings.pop(name, None)
    return settings


def main_bin_dir(main: Stack) -> Path:
    raw = main.env.get("TESSERA_BIN_DIR") or ""
    return Path(raw) if raw else REPO_ROOT / ".build" / "debug"


def _port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _tail(path: Path, lines: int = 30) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return f"({path} missing)"
    return f"--- {path.name} ---\n" + "\n".join(text[-lines:])


class FreshStack:
    """A second, empty local stack (see the module's docstring). Use it as a context manager, or call
    start() and stop() (stop() is safe to call twice, and runs at interpreter exit as a last resort)."""

    def __init__(self, main: Stack | str | Path, port: int | None = None, *, offset: int = 200,
                 name: str = "fresh", settings: Mapping[str, str | None] | None = None,
                 keep: bool | None = None, timeout: float = 300):
        self.main = main if isinstance(main, Stack) else stack_from_env_file(Path(main))
        self.port = port if port is not None else self.main.port + offset
        if not 1025 <= self.port <= 65531:
            raise ValueError(f"port {self.port} is not usable as TESSERA_PORT (1025..65531)")
        if not name.replace("-", "").isalnum():
            raise ValueError(f"name {name!r}: letters, digits and '-' only")
        self.name = name
        self.timeout = timeout
        self.keep = keep if keep is not None else os.environ.get("TESSERA_KEEP_FRESH_STACKS") == "1"
        self.bin_dir = main_bin_dir(self.main)
        self.settings = main_stack_settings(self.main)
        for key, value in (settings or {}).items():
            if value is None:
                self.settings.pop(key, None)
            else:
                self.settings[key] = value
        self.stack_dir: Path | None = None
        self.env_file: Path | None = None
        self.env: dict[str, str] = {}
        self.stack: Stack | None = None
        self.up_seconds: float | None = None
        self.down_seconds: float | None = None

    # -- what the tests use -------------------------------------------------------------------

    @property
    def url(self) -> str:
        return self._require().url

    @property
    def admin_url(self) -> str:
        return self._require().admin_url

    @property
    def api_key(self) -> str:
        return self._require().api_key

    @property
    def admin_token(self) -> str:
        return self._require().admin_token

    @property
    def project_id(self) -> str:
        return self._require().project_id

    @property
    def database_url(self) -> str | None:
        return self._require().database_url

    def psql(self, sql: str) -> str:
        """One statement on the fresh stack's database (conftest's psql); its rows."""
        return _psql(self._require(), sql)

    def command_env(self) -> dict[str, str]:
        """The environment scripts/stack runs with for this stack."""
        assert self.stack_dir is not None, "the fresh stack has not been started"
        env = {name: value for name, value in os.environ.items()
               if name in KEPT_NAMES or not (name.startswith(LEAKY_PREFIXES) or name in LEAKY_NAMES)}
        env.update(self.settings)
        env.update({
            "TESSERA_STACK_DIR": str(self.stack_dir),
            "TESSERA_PORT": str(self.port),
            "TESSERA_ADMIN_PORT": str(self.port - 1),
            "TESSERA_PROJECT_ID": self.main.project_id,
            "TESSERA_BUILD": "debug",
            "TESSERA_BIN_DIR": str(self.bin_dir),
            "TESSERA_SKIP_BUILD": "1",
            "TESSERA_PG_HA": "0",
        })
        return env

    def run_stack(self, *args: str, check: bool = True, timeout: float = 240,
                  env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess:
        """``scripts/stack ARGS`` for the fresh stack (e.g. "stop", "token-service"); with ``check``,
        asserts exit 0."""
        command_env = self.command_env()
        command_env.update(env or {})
        started = time.monotonic()
        proc = subprocess.run(["bash", str(STACK_SCRIPT), *args], cwd=REPO_ROOT, env=command_env,
                              capture_output=True, text=True, timeout=timeout)
        if check:
            assert proc.returncode == 0, (
                f"scripts/stack {' '.join(args)} ({self.stack_dir}) exited {proc.returncode} after "
                f"{time.monotonic() - started:.1f}s\nstdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}")
        return proc

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> "FreshStack":
        assert self.stack_dir is None, "this FreshStack was started already"
        for binary in SERVICES:
            assert os.access(self.bin_dir / binary, os.X_OK), (
                f"missing binary {self.bin_dir / binary} (the test stack's TESSERA_BIN_DIR)")
        busy = [p for p in range(self.port - 1, self.port + 5) if _port_open(p)]
        assert not busy, (f"fresh stack {self.name!r}: port(s) {busy} on 127.0.0.1 are in use (a fresh stack "
                          f"uses TESSERA_PORT-1..+4 = {self.port - 1}..{self.port + 4}); a leftover stack?")
        base = os.environ.get("TESSERA_FRESH_STACK_TMP") or tempfile.gettempdir()
        self.stack_dir = Path(tempfile.mkdtemp(prefix=f"tessera-{self.name}-", dir=base)).resolve()
        _RUNNING.add(self)
        started = time.monotonic()
        try:
            proc = self.run_stack("up", check=False, timeout=self.timeout)
            if proc.returncode != 0:
                logs = "\n".join(_tail(p) for p in sorted((self.stack_dir / "logs").glob("*.log")))
                raise AssertionError(
                    f"fresh stack {self.name!r} ({self.stack_dir}, port {self.port}) did not start: "
                    f"scripts/stack up exited {proc.returncode}\nstderr:\n{proc.stderr[-3000:]}\n{logs}")
            self.env_file = self.stack_dir / "env"
            self.stack = stack_from_env_file(self.env_file)
            self.env = self.stack.env
        except BaseException:
            self.stop()
            raise
        self.up_seconds = time.monotonic() - started
        return self

    def stop(self) -> None:
        """`scripts/stack down`, then the directory is removed (unless kept). Never raises."""
        if self not in _RUNNING or self.stack_dir is None:
            return
        _RUNNING.discard(self)
        started = time.monotonic()
        try:
            proc = self.run_stack("down", check=False, timeout=180)
            if proc.returncode != 0:
                print(f"fresh stack {self.name!r}: scripts/stack down exited {proc.returncode}: "
                      f"{proc.stderr[-2000:]}", file=sys.stderr)
        except Exception as exc:  # noqa: BLE001 - stopping must not hide the test's own failure
            print(f"fresh stack {self.name!r}: scripts/stack down failed: {exc}", file=sys.stderr)
        self.down_seconds = time.monotonic() - started
        if self.keep:
            print(f"fresh stack {self.name!r} kept in {self.stack_dir}", file=sys.stderr)
        else:
            shutil.rmtree(self.stack_dir, ignore_errors=True)

    def __enter__(self) -> "FreshStack":
        return self.start()

    def __exit__(self, *exc_info) -> bool:
        self.stop()
        return False

    def _require(self) -> Stack:
        assert self.stack is not None, f"fresh stack {self.name!r} is not running"
        return self.stack

    def __repr__(self) -> str:
        return f"FreshStack(name={self.name!r}, port={self.port}, stack_dir={self.stack_dir})"
