"""Secret settings and the version (docs/protocol/admin.md#the-admin-plane, issue 22), with the stack's own binaries started beside
the stack on ports of their own: a placeholder, short or doubly given secret stops a service at start
with a message that names the setting (never the value); a secret from `<NAME>_FILE` works; without
TESSERA_OWNER_TOKEN_SCOPE the Admin SDKs' `Bearer owner` is refused like any unknown credential; every
binary and /healthz answer CHANGELOG.md's version."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
import subprocess
import time
import types
from pathlib import Path

import pytest
import requests

from conftest import HTTP_TIMEOUT, describe, expect_ok


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def binary(stack, name: str) -> Path:
    path = Path(stack.env.get("TESSERA_BIN_DIR", "")) / name
    assert path.is_file(), f"{path} missing (TESSERA_BIN_DIR in {stack.env_file})"
    return path


def service_env(stack, port: int, **settings: str) -> dict[str, str]:
    env = {"PATH": os.environ.get("PATH", ""), "TESSERA_HTTP_HOST": "127.0.0.1", "TESSERA_HTTP_PORT": str(port),
           "TESSERA_PROJECT_ID": stack.project_id, "DATABASE_URL": stack.database_url or "",
           "TESSERA_INTERNAL_SECRET": stack.internal_secret or "", "LOG_LEVEL": "warning",
           "TESSERA_SIGNING_KEYS_DIR": stack.env.get("TESSERA_SIGNING_KEYS_DIR", ""),
           "TESSERA_DIRECTORY_URL": stack.directory_url or "", "TESSERA_API_KEY": stack.api_key}
    env.update(settings)
    return {k: v for k, v in env.items() if v is not None}


def refused(stack, name: str, **settings: str) -> str:
    """Starts `name serve`; it must exit non-zero; returns what it printed."""
    done = subprocess.run([str(binary(stack, name)), "serve"], env=service_env(stack, free_port(), **settings),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0, f"{name} started with {settings}"
    return done.stdout + done.stderr


STRONG = secrets.token_hex(32)


@contextlib.contextmanager
def running(stack, name: str, probe: str = "/healthz", **settings: str):
    """`name serve` on a port of its own until it answers `probe`; yields a namespace with its `base` URL,
    and after it is stopped, its `output`."""
    port = free_port()
    process = subprocess.Popen([str(binary(stack, name)), "serve"], env=service_env(stack, port, **settings),
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    service = types.SimpleNamespace(base=f"http://127.0.0.1:{port}", output="")
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, process.stdout.read() if process.stdout else "exited"
            try:
                if requests.get(service.base + probe, timeout=1).status_code == 200:
                    break
            except requests.RequestException:
                pass
            assert time.monotonic() < deadline, f"{name} did not start with {sorted(settings)}"
            time.sleep(0.2)
        yield service
    finally:
        process.terminate()
        try:
            service.output, _ = process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            service.output, _ = process.communicate()


@pytest.mark.parametrize("value", ["owner", "change-me", "secret", secrets.token_hex(16)])
def test_a_placeholder_or_short_admin_token_stops_the_directory(stack, value):
    output = refused(stack, "user-directory", TESSERA_ADMIN_TOKEN=value)
    assert "TESSERA_ADMIN_TOKEN" in output, output
    if len(value) > 6:
        assert value not in output, "the value of a secret is never printed"


def test_a_weak_internal_secret_stops_every_service(stack):
    for name in ("user-directory", "token-service", "cleanup-worker"):
        output = refused(stack, name, TESSERA_ADMIN_TOKEN=STRONG, TESSERA_INTERNAL_SECRET="change-me")
        assert "TESSERA_INTERNAL_SECRET" in output, (name, output)


def test_a_secret_given_twice_is_refused(stack, tmp_path):
    file = tmp_path / "admin-token"
    file.write_text(STRONG + "\n")
    output = refused(stack, "user-directory", TESSERA_ADMIN_TOKEN=STRONG, TESSERA_ADMIN_TOKEN_FILE=str(file))
    assert "TESSERA_ADMIN_TOKEN" in output and "not both" in output, output


def test_a_secret_from_a_file_and_owner_refused_by_default(stack, tmp_path):
    file = tmp_path / "admin-token"
    file.write_text(STRONG + "\n")
    os.chmod(file, 0o600)
    with running(stack, "user-directory", TESSERA_ADMIN_TOKEN_FILE=str(file)) as service:
        base = service.base
        config = f"/v2/projects/{stack.project_id}/config"
        expect_ok(requests.get(base + config, headers={"Authorization": f"Bearer {STRONG}"}, timeout=HTTP_TIMEOUT))
        resp = requests.get(base + config, headers={"Authorization": "Bearer owner"}, timeout=HTTP_TIMEOUT)
        assert resp.status_code == 401 and resp.json()["error"]["status"] == "UNAUTHENTICATED", describe(resp)


def test_an_owner_scope_that_is_not_one_is_refused(stack):
    output = refused(stack, "user-directory", TESSERA_ADMIN_TOKEN=STRONG, TESSERA_OWNER_TOKEN_SCOPE="everything")
    assert "TESSERA_OWNER_TOKEN_SCOPE" in output, output


def test_every_binary_and_healthz_answer_the_changelogs_version(stack):
    """A license, a version and a changelog (issue 22): the version is CHANGELOG.md's newest entry."""
    from conftest import REPO_ROOT
    changelog = (REPO_ROOT / "CHANGELOG.md").read_text()
    newest = next(line for line in changelog.splitlines() if line.startswith("## ")).split()[1]
    for name in ("token-service", "user-directory", "cleanup-worker"):
        done = subprocess.run([str(binary(stack, name)), "--version"], capture_output=True, text=True, timeout=30)
        assert done.returncode == 0 and done.stdout.strip() == newest, (name, done.stdout, done.stderr)
    assert expect_ok(requests.get(stack.url + "/healthz", timeout=HTTP_TIMEOUT))["version"] == newest
    assert (REPO_ROOT / "LICENSE").read_text().lstrip().startswith("Apache License")
    assert "Version 2.0" in (REPO_ROOT / "LICENSE").read_text()[:200]
    notice = (REPO_ROOT / "NOTICE").read_text()
    assert "hummingbird-project/hummingbird" in notice and "vapor/postgres-nio" in notice


# -------------------------------------------------------------------------------------- PostgreSQL over TLS
# (docs/protocol/admin.md#the-admin-plane): the stack's PostgreSQL offers TLS with a certificate from a CA of
# the stack's own (TESSERA_PG_CA_FILE); the directory's DATABASE_URL chooses with sslmode.
# --------------------------------------------------------------------------------------

def with_query(url: str, **params: str) -> str:
    from urllib.parse import urlencode
    return url + ("&" if "?" in url else "?") + urlencode(params)


def ssl_connections(stack) -> int:
    """The `tessera` role's connections that use TLS now (asked over a connection without TLS)."""
    psql = next((p for p in ("/usr/lib/postgresql/15/bin/psql", "/usr/bin/psql") if os.path.exists(p)), "psql")
    done = subprocess.run([psql, "-X", "-At", "-c",
                           "SELECT count(*) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) "
                           "WHERE s.ssl AND a.usename = 'tessera'", with_query(stack.database_url, sslmode="disable")],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return int(done.stdout.strip())


def other_ca(folder: Path) -> Path:
    import datetime
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Not the stack's CA")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    path = folder / "other-ca.crt"
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return path


def test_the_directory_talks_tls_to_postgresql_with_verify_full(stack):
    ca = stack.env.get("TESSERA_PG_CA_FILE")
    assert ca and os.path.exists(ca), "the stack's env file names its PostgreSQL CA (TESSERA_PG_CA_FILE)"
    before = ssl_connections(stack)
    url = with_query(stack.database_url, sslmode="verify-full", sslrootcert=ca)
    with running(stack, "user-directory", "/readyz", TESSERA_ADMIN_TOKEN=STRONG, DATABASE_URL=url):
        assert ssl_connections(stack) > before, "the directory's connections do not use TLS"


def test_a_server_certificate_that_does_not_verify_stops_the_directory(stack, tmp_path):
    url = with_query(stack.database_url, sslmode="verify-full", sslrootcert=str(other_ca(tmp_path)))
    output = refused(stack, "user-directory", TESSERA_ADMIN_TOKEN=STRONG, DATABASE_URL=url,
                     TESSERA_DATABASE_START_TIMEOUT="3s", LOG_LEVEL="info")
    assert "CERTIFICATE_VERIFY_FAILED" in output, "the log says why"
    assert "DATABASE_URL" in output, output
    password = stack.database_url.split(":")[2].split("@")[0]
    assert password not in output, "the database password is never printed"
    for bad in (with_query(stack.database_url, sslmode="sometimes"),
                with_query(stack.database_url, sslmode="verify-full", sslrootcert=str(tmp_path / "missing.crt"))):
        output = refused(stack, "user-directory", TESSERA_ADMIN_TOKEN=STRONG, DATABASE_URL=bad)
        assert "DATABASE_URL" in output and ("sslmode" in output or "sslrootcert" in output), output


def test_the_directory_warns_at_start_when_owner_is_switched_on(stack):
    """docs/protocol/admin.md#the-admin-plane: the service says so in its log at start."""
    with running(stack, "user-directory", TESSERA_ADMIN_TOKEN=STRONG, LOG_LEVEL="info",
                 TESSERA_OWNER_TOKEN_SCOPE="tenants/some-tenant") as service:
        pass
    warnings = [json.loads(line) for line in service.output.splitlines()
                if line.startswith("{") and "TESSERA_OWNER_TOKEN_SCOPE" in line]
    assert warnings and warnings[0]["level"] == "warning", service.output[-2000:]
    assert warnings[0].get("owner.scope") == "tenants/some-tenant", warnings[0]
