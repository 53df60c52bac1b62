"""Shared fixtures and helpers for Tessera's whole-stack tests.

The tests talk to a running stack over real HTTP through the ingress. The stack describes
itself in an env file (``export NAME=value`` lines) whose path is ``$TESSERA_ENV_FILE``,
default ``.stack-test/env`` relative to the repository root. Without that file every test
fails: a whole-stack run that silently skips would hide a broken stack.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shlex
import subprocess
import time
import uuid
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable
from urllib.parse import urlparse

import jwt
import pytest
import requests

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_ENV_FILE = ".stack-test/env"
HTTP_TIMEOUT = 15  # seconds, per request

# The test stack runs with TESSERA_REFRESH_GRACE=2s and TESSERA_REAUTH_WINDOW=3s; when the env
# file states the grace window, that value wins (see Stack.refresh_grace).
REFRESH_GRACE_SECONDS = 2.0
TEST_STACK_SETTINGS = {"TESSERA_REFRESH_GRACE": "2s", "TESSERA_REAUTH_WINDOW": "3s"}

IT_PREFIX = "/identitytoolkit.googleapis.com"
ST_PREFIX = "/securetoken.googleapis.com"

ANON_SIGNUP_KIND = "identitytoolkit#SignupNewUserResponse"
LOOKUP_KIND = "identitytoolkit#GetAccountInfoResponse"
DELETE_KIND = "identitytoolkit#DeleteAccountResponse"

RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")


# --------------------------------------------------------------------------------------
# pytest hooks
# --------------------------------------------------------------------------------------

def run_group(item) -> int:
    """Where a test runs in the whole run, by its markers (pytest.ini), not by its file's name: 0 calm,
    1 ``late`` (after every calm test), 2 ``disruptive`` (stops or restarts services), 3
    ``disruptive(last=True)`` (at the very end)."""
    disruptive = item.get_closest_marker("disruptive")
    if disruptive is not None:
        return 3 if disruptive.kwargs.get("last") else 2
    return 1 if item.get_closest_marker("late") is not None else 0


def pytest_collection_modifyitems(config, items):
    """Runs the groups in order (``run_group``); within a group, in the order pytest collected them."""
    items.sort(key=run_group)


# --------------------------------------------------------------------------------------
# The stack description (env file)
# --------------------------------------------------------------------------------------

def env_file_path() -> Path:
    raw = os.environ.get("TESSERA_ENV_FILE") or DEFAULT_ENV_FILE
    path = Path(raw)
    return path if path.is_absolute() else REPO_ROOT / path


def parse_env_file(text: str) -> dict[str, str]:
    """Parses ``export NAME=value`` / ``NAME=value`` lines; values may be shell-quoted."""
    values: dict[str, str] = {}
    for raw_line in text.splitlines():
        line = raw_line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[len("export "):].strip()
        name, sep, value = line.partition("=")
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            continue
        try:
            parts = shlex.split(value, comments=False, posix=True)
        except ValueError:
            parts = [value]
        values[name] = "".join(parts) if parts else ""
    return values


@dataclass
class Stack:
    env_file: Path
    env: dict[str, str]
    url: str
    # The admin plane (docs/protocol/admin.md#the-admin-plane): the admin API is served there and nowhere else.
    admin_url: str
    project_id: str
    api_key: str
    admin_token: str
    internal_secret: str | None
    token_service_url: str | None
    directory_url: str | None
    stack_dir: Path | None
    database_url: str | None

    @property
    def issuer(self) -> str:
        return f"https://securetoken.google.com/{self.project_id}"

    @property
    def refresh_grace(self) -> float:
        """The refresh-token grace window of the running stack, in seconds."""
        raw = self.env.get("TESSERA_REFRESH_GRACE")
        return parse_duration(raw) if raw else REFRESH_GRACE_SECONDS

    @property
    def port(self) -> int:
        parsed = urlparse(self.url)
        return parsed.port or (443 if parsed.scheme == "https" else 80)


def parse_duration(text: str) -> float:
    """``<number><unit>`` with unit ms, s, m, h or d (docs/configuration.md), in seconds."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*", text)
    if not match:
        raise ValueError(f"not a duration: {text!r}")
    factor = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}[match.group(2)]
    return float(match.group(1)) * factor


REQUIRED_VARS = ("TESSERA_URL", "TESSERA_ADMIN_URL", "TESSERA_PROJECT_ID", "TESSERA_API_KEY", "TESSERA_ADMIN_TOKEN")


def load_stack() -> Stack:
    path = env_file_path()
    if not path.is_file():
        pytest.fail(
            f"stack env file {path} not found: start the test stack first "
            f"(it writes the file), or point TESSERA_ENV_FILE at it",
            pytrace=False,
        )
    env = parse_env_file(path.read_text())
    missing = [name for name in REQUIRED_VARS if not env.get(name)]
    if missing:
        pytest.fail(f"stack env file {path} lacks {', '.join(missing)}", pytrace=False)
    return stack_from_env(path, env)


def stack_from_env(path: Path, env: dict[str, str]) -> Stack:
    """The Stack an env file describes (its parsed ``env``): the test stack's, or a second one's
    (fresh_stack.py)."""
    stack_dir = env.get("TESSERA_STACK_DIR")
    stack_dir_path = None
    if stack_dir:
        stack_dir_path = Path(stack_dir)
        if not stack_dir_path.is_absolute():
            stack_dir_path = REPO_ROOT / stack_dir_path
    return Stack(
        env_file=path,
        env=env,
        url=env["TESSERA_URL"].rstrip("/"),
        admin_url=env["TESSERA_ADMIN_URL"].rstrip("/"),
        project_id=env["TESSERA_PROJECT_ID"],
        api_key=env["TESSERA_API_KEY"],
        admin_token=env["TESSERA_ADMIN_TOKEN"],
        internal_secret=env.get("TESSERA_INTERNAL_SECRET"),
        token_service_url=(env.get("TESSERA_TOKEN_SERVICE_URL") or "").rstrip("/") or None,
        directory_url=(env.get("TESSERA_DIRECTORY_URL") or "").rstrip("/") or None,
        stack_dir=stack_dir_path,
        database_url=env.get("DATABASE_URL"),
    )


@pytest.fixture(scope="session", autouse=True)
def stack() -> Stack:
    """The running stack. Autouse: with no env file, every test fails (never skips)."""
    loaded = load_stack()
    try:
        requests.get(loaded.url + "/.well-known/jwks.json", timeout=HTTP_TIMEOUT)
    except requests.RequestException as exc:
        pytest.fail(f"stack at {loaded.url} (from {loaded.env_file}) is not reachable: {exc}",
                    pytrace=False)
    return loaded


# --------------------------------------------------------------------------------------
# Response helpers
# --------------------------------------------------------------------------------------

def describe(resp: requests.Response) -> str:
    """One line for assertion messages: request and answer."""
    req = resp.request
    body = req.body
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    body_text = "" if body is None else f" body={str(body)[:300]}"
    return (f"{req.method} {req.url}{body_text} -> HTTP {resp.status_code} "
            f"{resp.text[:600]}")


def body_json(resp: requests.Response) -> Any:
    try:
        return resp.json()
    except ValueError:
        raise AssertionError(f"response is not JSON: {describe(resp)}") from None


def error_message(resp: requests.Response) -> str | None:
    """The Firebase error message (``CODE`` or ``CODE : detail``), or None."""
    try:
        data = resp.json()
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("error"), dict):
        return None
    message = data["error"].get("message")
    return message if isinstance(message, str) else None


def error_code(resp: requests.Response) -> str | None:
    """The ``CODE`` part of a Firebase error message (before ``" : "``), or None."""
    message = error_message(resp)
    if message is None:
        return None
    return message.split(" : ", 1)[0].strip()


def expect_ok(resp: requests.Response) -> dict:
    assert resp.status_code == 200, describe(resp)
    data = body_json(resp)
    assert isinstance(data, dict), describe(resp)
    assert "error" not in data, describe(resp)
    return data


def assert_error_shape(resp: requests.Response, http_status: int) -> dict:
    """Checks the Google error envelope (docs/protocol/README.md#errors) and returns the ``error`` object."""
    assert resp.status_code == http_status, f"expected HTTP {http_status}: {describe(resp)}"
    data = body_json(resp)
    assert isinstance(data, dict) and isinstance(data.get("error"), dict), describe(resp)
    err = data["error"]
    assert err.get("code") == http_status, describe(resp)
    assert isinstance(err.get("message"), str) and err["message"], describe(resp)
    errors = err.get("errors")
    assert isinstance(errors, list) and errors, describe(resp)
    assert errors[0].get("message") == err["message"], describe(resp)
    assert isinstance(errors[0].get("reason"), str) and errors[0]["reason"], describe(resp)
    assert isinstance(errors[0].get("domain"), str) and errors[0]["domain"], describe(resp)
    return err


def expect_error(resp: requests.Response, *codes: str, http_status: int = 400) -> str:
    """Asserts a business error (HTTP 400, no ``status``) whose code is one of ``codes``.

    Returns the code received.
    """
    err = assert_error_shape(resp, http_status)
    code = err["message"].split(" : ", 1)[0].strip()
    assert code in codes, f"expected {' or '.join(codes)}: {describe(resp)}"
    if http_status == 400:
        assert "status" not in err, f"business errors carry no status: {describe(resp)}"
        assert err["errors"][0].get("reason") == "invalid", describe(resp)
        assert err["errors"][0].get("domain") == "global", describe(resp)
    return code


def expect_status_error(resp: requests.Response, http_status: int, status: str) -> dict:
    """Asserts a non-business error (with gRPC-style ``status``)."""
    err = assert_error_shape(resp, http_status)
    assert err.get("status") == status, f"expected status {status}: {describe(resp)}"
    return err


# --------------------------------------------------------------------------------------
# JWT helpers
# --------------------------------------------------------------------------------------

def b64url_decode(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def b64url_encode(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def jwt_parts(token: str) -> tuple[dict, dict, str]:
    """(header, payload, signature part) without any verification."""
    header_b64, payload_b64, signature = token.split(".")
    return (json.loads(b64url_decode(header_b64)), json.loads(b64url_decode(payload_b64)),
            signature)


def unverified_claims(token: str) -> dict:
    return jwt.decode(token, options={"verify_signature": False})


class TokenVerifier:
    """Verifies ID tokens the way a relying party would: only the JWKS URL is known."""

    def __init__(self, stack: Stack, jwks_url: str | None = None):
        self.stack = stack
        self.jwks_url = jwks_url or stack.url + "/.well-known/jwks.json"
        self.client = jwt.PyJWKClient(self.jwks_url, cache_keys=False, cache_jwk_set=False)

    def verify(self, token: str) -> dict:
        signing_key = self.client.get_signing_key_from_jwt(token)
        return jwt.decode(
            token,
            signing_key.key,
            algorithms=["RS256"],
            audience=self.stack.project_id,
            issuer=self.stack.issuer,
            leeway=5,
            options={"require": ["exp", "iat", "iss", "aud", "sub"]},
        )


@pytest.fixture(scope="session")
def verifier(stack: Stack) -> TokenVerifier:
    return TokenVerifier(stack)


# --------------------------------------------------------------------------------------
# HTTP clients
# --------------------------------------------------------------------------------------

_DEFAULT = object()


@dataclass
class Session:
    """Result of a sign-up or refresh: the pair a client would keep."""
    local_id: str
    id_token: str
    refresh_token: str
    tenant_id: str | None = None
    raw: dict = field(default_factory=dict)


class Client:
    """End-user client: every call carries the project's API key."""

    def __init__(self, stack: Stack, session: requests.Session | None = None):
        self.stack = stack
        self.http = session or requests.Session()

    # -- raw ---------------------------------------------------------------------------

    def url(self, path: str, prefix: str = "") -> str:
        return self.stack.url + prefix + path

    def request(self, method: str, path: str, *, prefix: str = "", key: Any = _DEFAULT,
                key_in_header: bool = False, headers: dict | None = None,
                **kwargs) -> requests.Response:
        """``key``: _DEFAULT = the stack's key, None = no key, a string = that key."""
        headers = dict(headers or {})
        params = dict(kwargs.pop("params", None) or {})
        key_value = self.stack.api_key if key is _DEFAULT else key
        if key_value is not None:
            if key_in_header:
                headers["x-goog-api-key"] = key_value
            else:
                params["key"] = key_value
        kwargs.setdefault("timeout", HTTP_TIMEOUT)
        return self.http.request(method, self.url(path, prefix), params=params,
                                 headers=headers, **kwargs)

    def post(self, path: str, json_body: Any = None, **kwargs) -> requests.Response:
        if json_body is not None:
            kwargs["json"] = json_body
        return self.request("POST", path, **kwargs)

    # -- accounts ------------------------------------------------------------------------

    def sign_up_raw(self, tenant_id: str | None = None, *, prefixed: bool = False,
                    **kwargs) -> requests.Response:
        body: dict[str, Any] = {"returnSecureToken": True}
        if tenant_id is not None:
            body["tenantId"] = tenant_id
        return self.post("/v1/accounts:signUp", body, prefix=IT_PREFIX if prefixed else "",
                         **kwargs)

    def sign_up_anonymous(self, tenant_id: str | None = None, **kwargs) -> Session:
        resp = self.sign_up_raw(tenant_id, **kwargs)
        data = expect_ok(resp)
        for name in ("localId", "idToken", "refreshToken"):
            assert isinstance(data.get(name), str) and data[name], describe(resp)
        return Session(data["localId"], data["idToken"], data["refreshToken"], tenant_id, data)

    def _with_id_token(self, verb: str, id_token: str | None, tenant_id: str | None,
                       prefixed: bool, **kwargs) -> requests.Response:
        body: dict[str, Any] = {}
        if id_token is not None:
            body["idToken"] = id_token
        if tenant_id is not None:
            body["tenantId"] = tenant_id
        return self.post(f"/v1/accounts:{verb}", body, prefix=IT_PREFIX if prefixed else "",
                         **kwargs)

    def lookup(self, id_token: str | None, tenant_id: str | None = None, *,
               prefixed: bool = False, **kwargs) -> requests.Response:
        return self._with_id_token("lookup", id_token, tenant_id, prefixed, **kwargs)

    def delete(self, id_token: str | None, tenant_id: str | None = None, *,
               prefixed: bool = False, **kwargs) -> requests.Response:
        return self._with_id_token("delete", id_token, tenant_id, prefixed, **kwargs)

    # -- secure token ----------------------------------------------------------------------

    def refresh_raw(self, refresh_token: str | None, *, style: str = "form",
                    prefixed: bool = False, grant_type: str | None = "refresh_token",
                    **kwargs) -> requests.Response:
        """``style``: ``form`` (x-www-form-urlencoded), ``json`` (snake_case) or ``camel``."""
        prefix = ST_PREFIX if prefixed else ""
        if style == "form":
            fields = {}
            if grant_type is not None:
                fields["grant_type"] = grant_type
            if refresh_token is not None:
                fields["refresh_token"] = refresh_token
            return self.request("POST", "/v1/token", prefix=prefix, data=fields, **kwargs)
        grant_name, token_name = (("grant_type", "refresh_token") if style == "json"
                                  else ("grantType", "refreshToken"))
        body = {}
        if grant_type is not None:
            body[grant_name] = grant_type
        if refresh_token is not None:
            body[token_name] = refresh_token
        return self.request("POST", "/v1/token", prefix=prefix, json=body, **kwargs)

    def refresh(self, refresh_token: str, **kwargs) -> dict:
        resp = self.refresh_raw(refresh_token, **kwargs)
        data = expect_ok(resp)
        for name in ("id_token", "refresh_token", "user_id"):
            assert isinstance(data.get(name), str) and data[name], describe(resp)
        return data


class Admin:
    """Admin API client: ``Authorization: Bearer <TESSERA_ADMIN_TOKEN>``."""

    def __init__(self, stack: Stack, token: Any = _DEFAULT):
        self.stack = stack
        self.http = requests.Session()
        token_value = stack.admin_token if token is _DEFAULT else token
        if token_value is not None:
            self.http.headers["Authorization"] = f"Bearer {token_value}"

    @property
    def project_path(self) -> str:
        return f"/projects/{self.stack.project_id}"

    def request(self, method: str, path: str, *, prefix: str = "",
                **kwargs) -> requests.Response:
        kwargs.setdefault("timeout", HTTP_TIMEOUT)
        return self.http.request(method, self.stack.admin_url + prefix + path, **kwargs)

    # -- tenants -----------------------------------------------------------------------

    def tenants_path(self, project_id: str | None = None) -> str:
        return f"/v2/projects/{project_id or self.stack.project_id}/tenants"

    def create_tenant_raw(self, body: dict, **kwargs) -> requests.Response:
        return self.request("POST", self.tenants_path(), json=body, **kwargs)

    def create_tenant(self, body: dict) -> dict:
        resp = self.create_tenant_raw(body)
        data = expect_ok(resp)
        assert isinstance(data.get("tenantId"), str) and data["tenantId"], describe(resp)
        return data

    def get_tenant(self, tenant_id: str, **kwargs) -> requests.Response:
        return self.request("GET", f"{self.tenants_path()}/{tenant_id}", **kwargs)

    def list_tenants(self, page_size: int | None = None,
                     page_token: str | None = None) -> requests.Response:
        params = {}
        if page_size is not None:
            params["pageSize"] = str(page_size)
        if page_token is not None:
            params["pageToken"] = page_token
        return self.request("GET", self.tenants_path(), params=params)

    def patch_tenant(self, tenant_id: str, body: dict,
                     update_mask: str | None = None) -> requests.Response:
        params = {"updateMask": update_mask} if update_mask is not None else None
        return self.request("PATCH", f"{self.tenants_path()}/{tenant_id}", json=body,
                            params=params)

    def delete_tenant(self, tenant_id: str) -> requests.Response:
        return self.request("DELETE", f"{self.tenants_path()}/{tenant_id}")

    # -- project config ----------------------------------------------------------------

    def config_path(self, project_id: str | None = None) -> str:
        return f"/v2/projects/{project_id or self.stack.project_id}/config"

    def get_config(self) -> requests.Response:
        return self.request("GET", self.config_path())

    def patch_config(self, body: dict, update_mask: str | None = None) -> requests.Response:
        params = {"updateMask": update_mask} if update_mask is not None else None
        return self.request("PATCH", self.config_path(), json=body, params=params)

    # -- accounts ----------------------------------------------------------------------

    def accounts_path(self, tenant_id: str | None, action: str) -> str:
        scope = f"/v1/projects/{self.stack.project_id}"
        if tenant_id is not None:
            scope += f"/tenants/{tenant_id}"
        return f"{scope}/accounts:{action}"

    def lookup_raw(self, tenant_id: str | None, local_ids: list[str]) -> requests.Response:
        return self.request("POST", self.accounts_path(tenant_id, "lookup"),
                            json={"localId": local_ids})

    def lookup_users(self, tenant_id: str | None, local_ids: list[str]) -> list[dict]:
        """The users found (an absent ``users`` means none)."""
        resp = self.lookup_raw(tenant_id, local_ids)
        data = expect_ok(resp)
        assert data.get("kind") == LOOKUP_KIND, describe(resp)
        users = data.get("users", [])
        assert isinstance(users, list), describe(resp)
        return users

    def delete_user_raw(self, tenant_id: str | None, local_id: str) -> requests.Response:
        return self.request("POST", self.accounts_path(tenant_id, "delete"),
                            json={"localId": local_id})


@pytest.fixture
def client(stack: Stack) -> Client:
    return Client(stack)


@pytest.fixture(scope="session")
def admin(stack: Stack) -> Admin:
    return Admin(stack)


# --------------------------------------------------------------------------------------
# Tenants
# --------------------------------------------------------------------------------------

def unique_name(prefix: str = "st") -> str:
    """A tenant display name: 4–20 characters, letter first, letters and digits."""
    assert prefix[:1].isalpha() and len(prefix) <= 8
    return f"{prefix}{uuid.uuid4().hex[:10]}"


def tenant_body(**overrides: Any) -> dict:
    """A create-tenant body: anonymous sign-up on, everything else off, unless overridden."""
    permissions = {
        "disabledUserSignup": overrides.pop("disabledUserSignup", False),
        "disabledUserDeletion": overrides.pop("disabledUserDeletion", False),
    }
    body = {
        "displayName": overrides.pop("displayName", None) or unique_name(),
        "allowPasswordSignup": False,
        "enableAnonymousUser": True,
        "disableAuth": False,
        "autodeleteAnonymousUsers": False,
        "client": {"permissions": permissions},
    }
    body.update(overrides)
    return body


class TenantFactory:
    """Creates tenants for one test and deletes them afterwards."""

    def __init__(self, admin: Admin):
        self.admin = admin
        self.created: list[str] = []

    def __call__(self, **overrides: Any) -> dict:
        tenant = self.admin.create_tenant(tenant_body(**overrides))
        self.created.append(tenant["tenantId"])
        return tenant

    def cleanup(self) -> None:
        for tenant_id in reversed(self.created):
            try:
                self.admin.delete_tenant(tenant_id)
            except requests.RequestException:
                pass


@pytest.fixture
def make_tenant(admin: Admin):
    factory = TenantFactory(admin)
    yield factory
    factory.cleanup()


@pytest.fixture
def tenant(make_tenant) -> dict:
    """A fresh tenant with anonymous sign-up enabled."""
    return make_tenant()


@pytest.fixture
def tenant_id(tenant: dict) -> str:
    return tenant["tenantId"]


# --------------------------------------------------------------------------------------
# Prometheus metrics (each service's own /metrics, not through the ingress)
# --------------------------------------------------------------------------------------

PROMETHEUS_SAMPLE = re.compile(r'^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>.*)\})? (?P<value>\S+)$')


def scrape(url: str) -> list[tuple[str, dict[str, str], float]]:
    resp = requests.get(url + "/metrics", timeout=HTTP_TIMEOUT)
    assert resp.status_code == 200, resp.text
    assert resp.headers["Content-Type"].startswith("text/plain"), resp.headers
    samples = []
    for line in resp.text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = PROMETHEUS_SAMPLE.match(line)
        assert match, f"not Prometheus text: {line!r}"
        labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', match.group("labels") or ""))
        samples.append((match.group("name"), labels, float(match.group("value"))))
    return samples


def value(samples, name: str, **labels: str) -> float:
    """The sum of the samples of `name` whose labels include `labels` (0 when none)."""
    return sum(v for n, l, v in samples if n == name and all(l.get(k) == x for k, x in labels.items()))


# --------------------------------------------------------------------------------------
# Stack control (restart / stop services)
# --------------------------------------------------------------------------------------

def stack_script() -> Path:
    return REPO_ROOT / "scripts" / "stack"


def stack_command_env(stack: Stack) -> dict[str, str]:
    env = dict(os.environ)
    env.update(stack.env)
    if stack.stack_dir is not None:
        env["TESSERA_STACK_DIR"] = str(stack.stack_dir)
    env["TESSERA_PORT"] = str(stack.port)
    for name, value in TEST_STACK_SETTINGS.items():
        env.setdefault(name, value)
    return env


def service_pid_file(stack: Stack, service: str) -> Path:
    assert stack.stack_dir is not None, f"TESSERA_STACK_DIR missing from {stack.env_file}"
    return stack.stack_dir / "run" / f"{service}.pid"


def require_running_service(stack: Stack, service: str) -> int:
    """The pid of a service of this stack; fails unless its pid file names a live process."""
    pid_file = service_pid_file(stack, service)
    assert pid_file.is_file(), f"{pid_file} not found: is the stack in {stack.stack_dir} running?"
    text = pid_file.read_text().strip()
    assert text.isdigit(), f"{pid_file} holds {text!r}"
    pid = int(text)
    assert pid_alive(pid), f"{service} pid {pid} from {pid_file} is not running"
    return pid


def pid_alive(pid: int) -> bool:
    """True when the process exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        return state not in ("Z", "X")
    except (OSError, IndexError):
        return False


def run_stack(stack: Stack, *args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    """Runs ``scripts/stack ARGS`` for the test stack and asserts success."""
    script = stack_script()
    assert script.is_file(), f"{script} not found"
    assert stack.stack_dir is not None, f"TESSERA_STACK_DIR missing from {stack.env_file}"
    command = [str(script), *args] if os.access(script, os.X_OK) else ["bash", str(script), *args]
    started = time.monotonic()
    proc = subprocess.run(command, cwd=REPO_ROOT, env=stack_command_env(stack),
                          capture_output=True, text=True, timeout=timeout)
    elapsed = time.monotonic() - started
    assert proc.returncode == 0, (
        f"scripts/stack {' '.join(args)} exited {proc.returncode} after {elapsed:.1f}s\n"
        f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}")
    return proc


def psql(stack: Stack, sql: str) -> str:
    """Runs one statement on the stack's database (its DATABASE_URL) with psql; returns its rows."""
    assert stack.database_url, f"DATABASE_URL missing from {stack.env_file}"
    binary = next((p for p in ("/usr/lib/postgresql/15/bin/psql", "/usr/bin/psql") if os.path.exists(p)), "psql")
    done = subprocess.run([binary, "-X", "-At", "-v", "ON_ERROR_STOP=1", "-c", sql, stack.database_url],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def wait_until(predicate: Callable[[], bool], timeout: float, interval: float = 0.2) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)


def soft_warn(message: str) -> None:
    warnings.warn(message, stacklevel=2)


# --------------------------------------------------------------------------------------
# SMTP sink (aiosmtpd): the stack's SMTP_URL points here. It requires STARTTLS (with the
# certificate scripts/test made; the directory trusts it via SMTP_CA_FILE) and AUTH, so the
# stack's SMTP client is exercised for real.
# --------------------------------------------------------------------------------------

import email as _email
import email.policy as _email_policy
import ssl as _ssl
import threading as _threading
from urllib.parse import parse_qs as _parse_qs


class MailSink:
    """Without ``cert``/``key``: a relay that offers no STARTTLS and would take AUTH in clear (what a
    client must never send credentials to); ``sessions`` and ``auth_attempts`` count what it saw."""
    USER, PASSWORD = b"tessera", b"sink-password"

    def __init__(self, port: int, cert: Path | None = None, key: Path | None = None):
        self.port = port
        self.cert, self.key = cert, key
        self.messages: list[dict] = []
        self.sessions = 0
        self.auth_attempts = 0
        self.condition = _threading.Condition()
        self.controller = None

    async def handle_EHLO(self, server, session, envelope, hostname, responses):
        with self.condition:
            self.sessions += 1
        session.host_name = hostname
        return responses

    async def handle_DATA(self, server, session, envelope):
        message = _email.message_from_bytes(envelope.content, policy=_email_policy.default)
        record = {
            "to": list(envelope.rcpt_tos), "from": envelope.mail_from, "subject": str(message["subject"]),
            "body": message.get_content(), "tls": session.ssl is not None, "authenticated": session.authenticated,
        }
        with self.condition:
            self.messages.append(record)
            self.condition.notify_all()
        return "250 OK"

    def authenticate(self, server, session, envelope, mechanism, auth_data):
        from aiosmtpd.smtp import AuthResult, LoginPassword
        with self.condition:
            self.auth_attempts += 1
        ok = isinstance(auth_data, LoginPassword) and auth_data.login == MailSink.USER \
            and auth_data.password == MailSink.PASSWORD
        return AuthResult(success=ok, handled=False)

    def start(self) -> None:
        from aiosmtpd.controller import Controller
        if self.cert is None:
            self.controller = Controller(self, hostname="127.0.0.1", port=self.port,
                                         authenticator=self.authenticate, auth_required=False,
                                         auth_require_tls=False)
        else:
            context = _ssl.create_default_context(_ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(str(self.cert), str(self.key))
            self.controller = Controller(
                self, hostname="127.0.0.1", port=self.port, tls_context=context, require_starttls=True,
                authenticator=self.authenticate, auth_required=True, auth_require_tls=True)
        self.controller.start()

    def stop(self) -> None:
        if self.controller is not None:
            self.controller.stop()
            self.controller = None

    def to(self, address: str) -> list[dict]:
        with self.condition:
            return [m for m in self.messages if address in m["to"]]

    def wait_for(self, address: str, count: int = 1, timeout: float = 20) -> list[dict]:
        """The first ``count`` messages to ``address``; fails after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        with self.condition:
            while True:
                found = [m for m in self.messages if address in m["to"]]
                if len(found) >= count:
                    return found
                remaining = deadline - time.monotonic()
                assert remaining > 0, f"no mail to {address} within {timeout}s (got {len(found)})"
                self.condition.wait(remaining)


def oob_link(message: dict) -> tuple[str, dict[str, str]]:
    """The action link in a mail and its query parameters."""
    match = re.search(r"https?://\S+oobCode=[A-Za-z0-9_-]+\S*", message["body"])
    assert match, f"no action link in: {message['body']!r}"
    link = match.group(0)
    params = {k: v[0] for k, v in _parse_qs(urlparse(link).query).items()}
    return link, params


@pytest.fixture(scope="session")
def mail_sink(stack: Stack):
    url = stack.env.get("SMTP_URL")
    assert url, f"SMTP_URL missing from {stack.env_file}: the test stack must send mail to the sink"
    port = urlparse(url).port
    assert stack.stack_dir is not None
    tls = stack.stack_dir / "smtp-tls"
    sink = MailSink(port, tls / "cert.pem", tls / "key.pem")
    sink.start()
    yield sink
    sink.stop()


# --------------------------------------------------------------------------------------
# SMS sink (sms_sink.py): the stack's TESSERA_SMS_WEBHOOK_URL points here; it checks each request's
# signature with TESSERA_SMS_WEBHOOK_SECRET as a real receiver must.
# --------------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def sms_sink(stack: Stack):
    from sms_sink import SmsSink
    url, secret = stack.env.get("TESSERA_SMS_WEBHOOK_URL"), stack.env.get("TESSERA_SMS_WEBHOOK_SECRET")
    assert stack.env.get("TESSERA_SMS_SENDER") == "webhook" and url and secret, (
        f"TESSERA_SMS_SENDER=webhook, TESSERA_SMS_WEBHOOK_URL and _SECRET missing from {stack.env_file}: "
        f"the test stack must send text messages to the sink")
    parsed = urlparse(url)
    sink = SmsSink(parsed.port, secret, host=parsed.hostname, path=parsed.path or "/")
    sink.start()
    yield sink
    sink.stop()


# --------------------------------------------------------------------------------------
# Fake identity provider (federated sign-in tests; owned by test_federated.py's author).
# The stack's IDP_* variables point at IDP_FAKE_URL; see fake_idp.py for what it serves.
# --------------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def fake_idp(stack: Stack):
    """The fake IdP (fake_idp.FakeIdp) listening on IDP_FAKE_URL for the whole session."""
    from fake_idp import OIDC_BUILT_INS, FakeIdp
    base = stack.env.get("IDP_FAKE_URL")
    assert base, (f"IDP_FAKE_URL missing from {stack.env_file}: the test stack must point its IDP_* "
                  f"variables at the fake identity provider")
    idp = FakeIdp(base)
    expected = {f"IDP_{short.upper()}_{suffix}": url for short in OIDC_BUILT_INS
                for suffix, url in (("ISSUER", idp.issuer(short)), ("JWKS_URL", idp.jwks_url(short)))}
    expected.update({"IDP_FACEBOOK_USERINFO_URL": idp.base_url + "/facebook/me",
                     "IDP_GITHUB_USERINFO_URL": idp.base_url + "/github/user",
                     "IDP_TWITTER_USERINFO_URL": idp.base_url + "/twitter/verify_credentials.json"})
    for name, url in expected.items():
        value = stack.env.get(name)
        assert value is None or value.rstrip("/") == url, \
            f"{name}={value} in {stack.env_file}, but the fake serves {url}"
    idp.start()
    yield idp
    idp.stop()


# --------------------------------------------------------------------------------------
# The browser of the browser tests (test_action_page.py, test_console.py)
# --------------------------------------------------------------------------------------

CHROMIUM = "/usr/bin/chromium"


# One Chromium per test file that asks for it, a fresh context (cookie jar) per visitor. Module scope,
# not session: while Playwright's sync API is started, the main thread has a running asyncio loop
# (asyncio.run() would fail in any later test), so it stops when that file's tests are done.
@pytest.fixture(scope="module")
def browser():
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} not found: run scripts/browser-deps (Debian's chromium package)", pytrace=False)
    from playwright.sync_api import sync_playwright
    playwright = sync_playwright().start()
    # Root (the CI container) cannot use Chromium's sandbox.
    args = ["--no-sandbox"] if os.geteuid() == 0 else []
    chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=args)
    yield chromium
    chromium.close()
    playwright.stop()
