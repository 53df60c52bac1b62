"""Backup and restore (issue 27): scripts/backup of the test stack, scripts/restore into a second, empty
stack (fresh_stack.FreshStack, on the test stack's port + 200), and what must hold on that stack
afterwards: the sessions of the backup go on (their refresh tokens refresh), their ID tokens are
accepted and verify against the restored stack's published keys (the same kid), passwords work, the
schema version is the backup's. A damaged backup and a restore over a database that holds users are
refused and change nothing.

One fresh stack serves the whole module. On an idle machine (debug build) the module takes about 8 s:
the backup 0.3 s, the fresh stack's start 2-3 s, a restore (services stopped and started) 1.5-2 s."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import time
import uuid
from pathlib import Path

import pytest
import requests

from conftest import (HTTP_TIMEOUT, REPO_ROOT, Admin, Client, TokenVerifier, describe, expect_error, expect_ok,
                      jwt_parts, psql, tenant_body)
from fresh_stack import FreshStack

BACKUP = REPO_ROOT / "scripts" / "backup"
RESTORE = REPO_ROOT / "scripts" / "restore"
PASSWORD = "correct horse 27"
FRESH_PORT_OFFSET = 200


def run(script: Path, *args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    # A clean environment: what the scripts need comes from their arguments (an env file).
    env = {name: value for name, value in os.environ.items()
           if not name.startswith(("TESSERA_", "DATABASE_", "PG"))}
    return subprocess.run(["bash", str(script), *args], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)


def output(proc: subprocess.CompletedProcess) -> str:
    return f"exit {proc.returncode}\nstdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-4000:]}"


def db_password(database_url: str) -> str:
    match = re.match(r"^postgres(?:ql)?://[^:/@]+:([^@/]+)@", database_url)
    assert match, "DATABASE_URL has no password"
    return match.group(1)


def schema_version(target) -> int:
    return int(psql(target, "SELECT max(version) FROM schema_migrations"))


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def key_files(keys_dir: Path) -> dict[str, str]:
    """kid file (relative) -> SHA-256, for the signing keys and the session-cookie keys."""
    found = {}
    for pattern in ("*.pem", "session-cookies/*.pem"):
        for path in keys_dir.glob(pattern):
            found[str(path.relative_to(keys_dir))] = sha256(path)
    return found


def service_pids(stack_dir: Path) -> dict[str, str]:
    return {svc: (stack_dir / "run" / f"{svc}.pid").read_text().strip()
            for svc in ("user-directory", "token-service", "cleanup-worker")}


def jwks_kids(url: str) -> set[str]:
    resp = requests.get(url + "/.well-known/jwks.json", timeout=HTTP_TIMEOUT)
    return {key["kid"] for key in expect_ok(resp)["keys"]}


def sign_up_with_password(client: Client, tenant_id: str | None, email: str) -> dict:
    body = {"email": email, "password": PASSWORD, "returnSecureToken": True}
    if tenant_id is not None:
        body["tenantId"] = tenant_id
    return expect_ok(client.post("/v1/accounts:signUp", body))


def sign_in_with_password(client: Client, tenant_id: str | None, email: str, password: str = PASSWORD):
    body = {"email": email, "password": password, "returnSecureToken": True}
    if tenant_id is not None:
        body["tenantId"] = tenant_id
    return client.post("/v1/accounts:signInWithPassword", body)


# --------------------------------------------------------------------------------------
# Module fixtures: the users on the test stack, the backup, the fresh stack, the restore
# --------------------------------------------------------------------------------------

TIMINGS: dict[str, float] = {}


@pytest.fixture(scope="module")
def sessions(stack):
    """On the test stack: a password user (default scope), an anonymous user and a password user in a
    tenant, each signed in: {name: {local_id, tenant_id, email, id_token, refresh_token}}."""
    admin, client = Admin(stack), Client(stack)
    tenant_id = admin.create_tenant(tenant_body(allowPasswordSignup=True, enableAnonymousUser=True))["tenantId"]
    made: dict[str, dict] = {}
    try:
        for name, tenant in (("password", None), ("tenant-password", tenant_id)):
            email = f"backup-{uuid.uuid4().hex[:12]}@example.com"
            local_id = sign_up_with_password(client, tenant, email)["localId"]
            signed_in = expect_ok(sign_in_with_password(client, tenant, email))
            made[name] = {"local_id": local_id, "tenant_id": tenant, "email": email,
                          "id_token": signed_in["idToken"], "refresh_token": signed_in["refreshToken"]}
        anonymous = client.sign_up_anonymous(tenant_id)
        made["anonymous"] = {"local_id": anonymous.local_id, "tenant_id": tenant_id, "email": None,
                             "id_token": anonymous.id_token, "refresh_token": anonymous.refresh_token}
        yield made
    finally:
        if "password" in made:
            admin.delete_user_raw(None, made["password"]["local_id"])
        admin.delete_tenant(tenant_id)


@pytest.fixture(scope="module")
def backup(stack, sessions, tmp_path_factory) -> dict:
    """scripts/backup of the test stack (its env file): {path, manifest, proc}."""
    target = tmp_path_factory.mktemp("backup") / "b1"
    started = time.monotonic()
    proc = run(BACKUP, "--env", str(stack.env_file), "--output", str(target))
    TIMINGS["backup"] = time.monotonic() - started
    assert proc.returncode == 0, output(proc)
    assert proc.stdout.strip() == str(target), output(proc)
    return {"path": target, "manifest": json.loads((target / "manifest.json").read_text()), "proc": proc}


@pytest.fixture(scope="module")
def fresh(stack):
    with FreshStack(stack, port=stack.port + FRESH_PORT_OFFSET, name="restore") as started:
        TIMINGS["fresh stack up"] = started.up_seconds or 0.0
        assert psql(started.stack, "SELECT count(*) FROM users") == "0"
        yield started
    TIMINGS["fresh stack down"] = started.down_seconds or 0.0
    print("\nbackup/restore timings: " + ", ".join(f"{k} {v:.1f}s" for k, v in TIMINGS.items()))


@pytest.fixture(scope="module")
def restored(backup, fresh) -> subprocess.CompletedProcess:
    """scripts/restore of the backup into the fresh stack (--stack: stops and starts its services)."""
    started = time.monotonic()
    proc = run(RESTORE, str(backup["path"]), "--stack", str(fresh.stack_dir))
    TIMINGS["restore"] = time.monotonic() - started
    assert proc.returncode == 0, output(proc)
    return proc


# --------------------------------------------------------------------------------------
# The backup
# --------------------------------------------------------------------------------------

def test_the_backup_holds_the_dump_the_keys_and_a_manifest(stack, backup):
    path, manifest = backup["path"], backup["manifest"]
    keys_dir = Path(stack.env["TESSERA_SIGNING_KEYS_DIR"])

    # Secrets: the directory 0700, every file 0600.
    for item in [path, *path.rglob("*")]:
        mode = stat.S_IMODE(item.stat().st_mode)
        assert mode == (0o700 if item.is_dir() else 0o600), f"{item}: {oct(mode)}"

    assert manifest["format"] == "tessera-backup" and manifest["format_version"] == 1
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z", manifest["created_at"]), manifest
    assert manifest["schema_version"] == schema_version(stack)
    healthz = expect_ok(requests.get(stack.url + "/healthz", timeout=HTTP_TIMEOUT))
    assert manifest["tessera_version"] == healthz["version"]
    assert manifest["database"]["name"] == "tessera"
    assert manifest["pg_dump_version"].startswith("pg_dump (PostgreSQL) 15"), manifest
    assert manifest["database"]["dump_format"] == "custom"

    # The key ids are the test stack's, and the copies are identical.
    signing = sorted(p.stem for p in keys_dir.glob("*.pem"))
    cookies = sorted(p.stem for p in (keys_dir / "session-cookies").glob("*.pem"))
    assert sorted(manifest["keys"]["signing"]) == signing and signing
    assert sorted(manifest["keys"]["session_cookies"]) == cookies and cookies
    assert key_files(path / "keys") == key_files(keys_dir)

    # Every file is listed with its SHA-256 and size, and nothing else is there.
    files = {str(p.relative_to(path)) for p in path.rglob("*") if p.is_file()} - {"manifest.json"}
    assert set(manifest["files"]) == files
    for name, entry in manifest["files"].items():
        assert entry["sha256"] == sha256(path / name), name
        assert entry["bytes"] == (path / name).stat().st_size, name
    assert (path / "database.dump").read_bytes()[:5] == b"PGDMP"

    # No secret in what the script printed (the password is masked in the manifest's URL too).
    proc = backup["proc"]
    password = db_password(stack.database_url)
    for text in (proc.stdout, proc.stderr, (path / "manifest.json").read_text()):
        assert password not in text and stack.admin_token not in text
    assert ":***@" in manifest["database"]["url"]


def test_a_tar_backup_verifies(stack, sessions, tmp_path):
    proc = run(BACKUP, "--env", str(stack.env_file), "--output", str(tmp_path / "t1"), "--tar", "--quiet")
    assert proc.returncode == 0, output(proc)
    tar = tmp_path / "t1.tar"
    assert proc.stdout.strip() == str(tar) and tar.is_file() and not (tmp_path / "t1").exists()
    assert stat.S_IMODE(tar.stat().st_mode) == 0o600
    proc = run(RESTORE, str(tar), "--verify-only")
    assert proc.returncode == 0, output(proc)


def test_usage_errors(stack, tmp_path):
    for script in (BACKUP, RESTORE):
        proc = run(script, "--help")
        assert proc.returncode == 0 and "Exit status" in proc.stdout, output(proc)
        assert run(script, "--no-such-option").returncode == 2
    assert run(RESTORE).returncode == 2  # which backup?
    assert run(RESTORE, str(tmp_path / "missing"), "--verify-only").returncode == 3
    (tmp_path / "exists").mkdir()
    proc = run(BACKUP, "--env", str(stack.env_file), "--output", str(tmp_path / "exists"))
    assert proc.returncode == 1 and "exists" in proc.stderr, output(proc)


# --------------------------------------------------------------------------------------
# The restore, checked on the fresh stack
# --------------------------------------------------------------------------------------

def test_the_restore_says_what_it_did_and_prints_no_secret(stack, backup, fresh, restored):
    assert "restored: schema version" in restored.stderr, output(restored)
    assert "Next:" in restored.stderr
    for secret in (db_password(stack.database_url), db_password(fresh.database_url), fresh.admin_token):
        assert secret not in restored.stdout + restored.stderr
    # The fresh stack's services were restarted and answer.
    assert requests.get(fresh.url + "/readyz", timeout=HTTP_TIMEOUT).status_code == 200
    # The fresh stack's own keys were moved aside, not deleted; the backup's are in place.
    keys_dir = Path(fresh.env["TESSERA_SIGNING_KEYS_DIR"])
    assert key_files(keys_dir) == key_files(backup["path"] / "keys")
    assert list(keys_dir.parent.glob(keys_dir.name + ".replaced-*/*.pem"))


def test_the_schema_version_is_the_backups(stack, backup, fresh, restored):
    assert schema_version(fresh.stack) == schema_version(stack) == backup["manifest"]["schema_version"]


def test_old_id_tokens_are_accepted_and_verify_against_the_restored_keys(stack, sessions, backup, fresh, restored):
    client = Client(fresh.stack)
    verifier = TokenVerifier(fresh.stack)
    published = jwks_kids(fresh.url)
    for name, session in sessions.items():
        kid = jwt_parts(session["id_token"])[0]["kid"]
        assert kid in backup["manifest"]["keys"]["signing"] and kid in published, (name, kid, published)
        claims = verifier.verify(session["id_token"])
        assert claims["sub"] == session["local_id"], name
        resp = client.lookup(session["id_token"], session["tenant_id"])
        users = expect_ok(resp).get("users") or []
        assert [u["localId"] for u in users] == [session["local_id"]], describe(resp)


def test_old_refresh_tokens_refresh(sessions, backup, fresh, restored):
    client = Client(fresh.stack)
    verifier = TokenVerifier(fresh.stack)
    for name, session in sessions.items():
        data = client.refresh(session["refresh_token"])
        assert data["user_id"] == session["local_id"], name
        assert data["refresh_token"] != session["refresh_token"], name
        # The restored newest key signs again.
        assert jwt_parts(data["id_token"])[0]["kid"] in backup["manifest"]["keys"]["signing"], name
        claims = verifier.verify(data["id_token"])
        assert claims["sub"] == session["local_id"]
        assert claims.get("firebase", {}).get("tenant") == session["tenant_id"], claims


def test_old_passwords_sign_in(sessions, fresh, restored):
    client = Client(fresh.stack)
    for name in ("password", "tenant-password"):
        session = sessions[name]
        data = expect_ok(sign_in_with_password(client, session["tenant_id"], session["email"]))
        assert data["localId"] == session["local_id"], name
        expect_error(sign_in_with_password(client, session["tenant_id"], session["email"], "wrong password"),
                     "INVALID_LOGIN_CREDENTIALS")


# --------------------------------------------------------------------------------------
# Refusals: nothing changes
# --------------------------------------------------------------------------------------

def fresh_state(fresh) -> dict:
    return {
        "pids": service_pids(fresh.stack_dir),
        "users": fresh.psql("SELECT string_agg(tenant_id || '/' || local_id, ',' ORDER BY tenant_id, local_id) FROM users"),
        "sessions": fresh.psql("SELECT count(*) FROM refresh_tokens"),
        "keys": key_files(Path(fresh.env["TESSERA_SIGNING_KEYS_DIR"])),
    }


def tamper_dump(path: Path) -> None:
    data = bytearray((path / "database.dump").read_bytes())
    data[len(data) // 2] ^= 0x01
    (path / "database.dump").write_bytes(bytes(data))


def tamper_key(path: Path) -> None:
    key = next((path / "keys").glob("*.pem"))
    key.write_text(key.read_text().replace("PRIVATE KEY-----\n", "PRIVATE KEY-----\n\n", 1))


def add_key(path: Path) -> None:
    (path / "keys" / "kforeign.pem").write_text((next((path / "keys").glob("*.pem"))).read_text())


@pytest.mark.parametrize("tamper", [tamper_dump, tamper_key, add_key], ids=["dump", "key", "extra-key"])
def test_a_damaged_backup_is_refused_and_nothing_changes(backup, fresh, restored, tmp_path, tamper):
    copy = tmp_path / "damaged"
    shutil.copytree(backup["path"], copy)
    tamper(copy)
    before = fresh_state(fresh)
    # --force: the damage is the only reason to refuse.
    proc = run(RESTORE, str(copy), "--stack", str(fresh.stack_dir), "--force")
    assert proc.returncode == 3, output(proc)
    assert "damaged" in proc.stderr, output(proc)
    assert fresh_state(fresh) == before


def test_a_restore_over_users_needs_force(backup, fresh, restored):
    before = fresh_state(fresh)
    assert before["users"]
    proc = run(RESTORE, str(backup["path"]), "--stack", str(fresh.stack_dir))
    assert proc.returncode == 4, output(proc)
    assert "--force" in proc.stderr and "holds" in proc.stderr, output(proc)
    assert fresh_state(fresh) == before


def test_a_forced_restore_through_the_env_file_goes_back_to_the_backup(sessions, backup, fresh, restored):
    """--env <stack>/env names the stack: its services are stopped and started again. With --force the
    database is the backup's again: a session begun on the fresh stack since is unknown, and a refresh
    token of the backup that was already used there is the current one once more."""
    client = Client(fresh.stack)
    session = sessions["tenant-password"]
    newer = expect_ok(sign_in_with_password(client, session["tenant_id"], session["email"]))["refreshToken"]
    before = fresh_state(fresh)
    proc = run(RESTORE, str(backup["path"]), "--env", str(fresh.env_file), "--force")
    assert proc.returncode == 0, output(proc)
    after = fresh_state(fresh)
    assert after["users"] == before["users"] and after["keys"] == before["keys"]
    assert all(after["pids"][svc] != before["pids"][svc] for svc in after["pids"]), (before, after)
    expect_error(client.refresh_raw(newer), "INVALID_REFRESH_TOKEN")
    assert client.refresh(session["refresh_token"])["user_id"] == session["local_id"]


# --------------------------------------------------------------------------------------
# The database password never reaches a command line (issue 35)
# --------------------------------------------------------------------------------------

def recording_pg_bin(directory: Path, fail_restore: bool = False) -> Path:
    """A --pg-bin of wrappers around the real PostgreSQL 15 clients: each call appends its argv
    (NUL-separated) to argv.log and its environment to env.log, then runs the real program. With
    fail_restore, the restore itself (pg_restore --single-transaction) fails after being recorded,
    so that nothing changes."""
    real = Path("/usr/lib/postgresql/15/bin")
    if not (real / "pg_dump").is_file():
        real = Path(shutil.which("pg_dump") or "/nonexistent").parent
    assert (real / "pg_dump").is_file() and (real / "psql").is_file(), "no PostgreSQL client found"
    bin_dir = directory / "pg-bin"
    bin_dir.mkdir()
    for tool in ("pg_dump", "pg_restore", "psql"):
        fail = ('case " $* " in *" --single-transaction "*) exit 1 ;; esac\n'
                if fail_restore and tool == "pg_restore" else "")
        wrapper = bin_dir / tool
        wrapper.write_text(
            "#!/bin/bash\n"
            f"printf '%s\\0' {tool} \"$@\" >>'{directory}/argv.log'; printf '\\n' >>'{directory}/argv.log'\n"
            f"env >>'{directory}/env.log'\n"
            f"{fail}exec '{real / tool}' \"$@\"\n")
        wrapper.chmod(0o700)
    return bin_dir


def with_password_in_the_query(database_url: str) -> tuple[str, str]:
    """postgres://user:PW@host/db -> (postgres://user@host/db?sslmode=disable&password=PW, PW): libpq's
    other place for a password, which the scripts must not pass on either."""
    match = re.match(r"^(postgres(?:ql)?://[^:/@]+):([^@/]+)@([^?]*)(\?.*)?$", database_url)
    assert match, "DATABASE_URL has no password"
    query = (match.group(4) or "?sslmode=disable") + "&password=" + match.group(2)
    return f"{match.group(1)}@{match.group(3)}{query}", match.group(2)


def check_no_password_on_a_command_line(directory: Path, password: str, tools: set[str]) -> None:
    calls = [line.split("\0") for line in (directory / "argv.log").read_text().split("\0\n") if line]
    assert {argv[0] for argv in calls} >= tools, calls
    for argv in calls:
        assert not any(password in arg for arg in argv), f"the password is on {argv[0]}'s command line"
    # The tools got it another way (PGPASSWORD), so they could connect at all.
    assert f"PGPASSWORD={password}\n" in (directory / "env.log").read_text()


def test_a_password_in_the_urls_query_is_not_put_on_pg_dumps_command_line(stack, sessions, tmp_path):
    """`?password=` is libpq's second place for a password. scripts/backup hands the tools a URL on
    their command line (visible to every user of the machine in `ps`): the password, wherever the URL
    carries it, goes to them through PGPASSWORD instead."""
    url, password = with_password_in_the_query(stack.database_url)
    env_file = tmp_path / "env"
    env_file.write_text(f"export DATABASE_URL='{url}'\nexport TESSERA_SIGNING_KEYS_DIR='"
                        f"{stack.env['TESSERA_SIGNING_KEYS_DIR']}'\n")
    bin_dir = recording_pg_bin(tmp_path)
    proc = run(BACKUP, "--env", str(env_file), "--output", str(tmp_path / "b"), "--no-keys",
               "--pg-bin", str(bin_dir))
    assert proc.returncode == 0, output(proc)
    check_no_password_on_a_command_line(tmp_path, password, {"pg_dump", "psql"})
    manifest = (tmp_path / "b" / "manifest.json").read_text()
    for text in (proc.stdout, proc.stderr, manifest):
        assert password not in text
    assert "password=***" in json.loads(manifest)["database"]["url"]


def test_a_password_in_the_urls_query_is_not_put_on_pg_restores_command_line(backup, fresh, restored, tmp_path):
    """The same for scripts/restore, whose psql and pg_restore get the target's URL. The restore itself
    is made to fail (the recording pg_restore refuses it), so the fresh stack is left as it was."""
    url, password = with_password_in_the_query(fresh.database_url)
    bin_dir = recording_pg_bin(tmp_path, fail_restore=True)
    before = fresh_state(fresh)
    proc = run(RESTORE, str(backup["path"]), "--database-url", url, "--no-keys", "--force", "--pg-bin", str(bin_dir))
    assert proc.returncode == 1 and "pg_restore failed" in proc.stderr, output(proc)
    check_no_password_on_a_command_line(tmp_path, password, {"pg_restore", "psql"})
    assert password not in proc.stdout + proc.stderr
    assert fresh_state(fresh) == before
