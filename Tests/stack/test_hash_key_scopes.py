"""Issue 35 item 2: users moved from the default scope into a tenant with the project's hash parameters
must not hand the project's Firebase-scrypt signer key to the tenant's admins (docs/architecture.md,
"Hash keys across scopes").

The attack as the finding ran it: the project admin exports the default scope with `tessera export`
(its `hashConfig` is the project's) and imports the users into a tenant with `tessera import --tenant`,
and imports one more with v1 `accounts:batchCreate` and the project's hashConfig. A credential scoped
to that tenant then reads `accounts:batchGet?tesseraForeignHashes=true` and runs `tessera export
--tenant`: before the fix both carried the project's signer key in each moved user's
`tesseraPasswordHash`. Now the hashes are stored marked `projectKey` (no key in password_params), the
tenant's admins see them withheld (`tesseraPasswordHashWithheld`), each moved user still signs in with
the password, and that sign-in re-makes the hash with the tenant's key, which the tenant's export then
carries under the tenant's own hashConfig. An import with a key of the importer's own (not Tessera's)
is exported back with that key.

Needs the CLI (`<repo>/.build/debug/tessera`, or TESSERA_CLI). A few seconds.
"""

from __future__ import annotations

import base64
import json
import os
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import describe, expect_ok, psql
from test_cli_transfer import CLI, run_cli
from test_passwords import sign_in
from test_review_accounts import (batch_get, firebase_scrypt, project_hash_config, signer_key_behind,
                                  tenant_credential)

PASSWORD = "moved password 1"
EXIT_OK = 0


@dataclass
class Target:
    """What `run_cli` needs of the admin plane it drives: URL, credential, project."""
    admin_url: str
    admin_token: str
    project_id: str


@pytest.fixture(scope="module")
def cli() -> Path:
    if not os.access(CLI, os.X_OK):
        pytest.fail(f"the tessera CLI {CLI} is missing (build it, or set TESSERA_CLI)", pytrace=False)
    return CLI


def address(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}@example.com"


def spellings(key_b64: str) -> list[str]:
    """The key as standard and as URL-safe base64, padded and not: no way of writing it may show."""
    raw = base64.b64decode(key_b64)
    std, url = base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()
    return sorted({std, std.rstrip("="), url, url.rstrip("=")})


def assert_no_project_key(text: str, project_key: str, where: str) -> None:
    for spelling in spellings(project_key):
        assert spelling not in text, f"the project's signer key is in {where}"


def stored_params(stack, tenant_id: str, local_id: str) -> str:
    return psql(stack, f"SELECT password_params FROM users WHERE tenant_id = '{tenant_id}' "
                       f"AND local_id = '{local_id}'")


def test_users_moved_into_a_tenant_with_the_project_key_never_show_it_to_the_tenant_admins(
        stack, admin, client, make_tenant, cli, tmp_path):
    project = project_hash_config(admin)
    project_key = project["signerKey"]
    p = stack.project_id

    # The project admin's users in the default scope, and its export of them.
    moved: dict[str, str] = {}  # localId -> email
    for _ in range(3):
        email = address("moved")
        created = expect_ok(admin.request("POST", f"/v1/projects/{p}/accounts",
                                          json={"email": email, "password": PASSWORD}))
        moved[created["localId"]] = email
    full = tmp_path / "project.json"
    run = run_cli(stack, "export", "--output", str(full))
    assert run.returncode == EXIT_OK, str(run)
    exported = json.loads(full.read_text())
    assert exported["hashConfig"]["signerKey"] == project_key, "the default scope's export has the project's key"
    by_id = {u["localId"]: u for u in exported["users"]}
    assert all(by_id[i].get("passwordHash") for i in moved), "the project admin exports the hashes"
    # Two of the users go by the CLI (only them: the default scope is shared with other tests), the
    # third by v1 batchCreate with the project's hashConfig.
    cli_ids, api_id = list(moved)[:2], list(moved)[2]
    subset = dict(exported, users=[by_id[i] for i in cli_ids])
    subset["tessera"] = dict(exported["tessera"],
                             users=[u for u in exported["tessera"].get("users", []) if u["localId"] in cli_ids])
    moving = tmp_path / "moving.json"
    moving.write_text(json.dumps(subset))
    moving.chmod(0o600)

    tenant_id = make_tenant(allowPasswordSignup=True)["tenantId"]
    run = run_cli(stack, "import", str(moving), "--tenant", tenant_id, "--users-only", "--json")
    assert run.returncode == EXIT_OK, str(run)
    settings = {k: v for k, v in project.items() if k != "algorithm"}
    user = by_id[api_id]
    answer = expect_ok(admin.request("POST", f"/v1/projects/{p}/tenants/{tenant_id}/accounts:batchCreate", json={
        "hashAlgorithm": "SCRYPT", **settings,
        "users": [{"localId": api_id, "email": moved[api_id], "passwordHash": user["passwordHash"],
                   "salt": user["salt"]}]}))
    assert "error" not in answer, answer
    # And a user whose hash was made with a key of the importer's own: that key is no secret of Tessera's.
    own_key, salt = os.urandom(32), os.urandom(12)
    foreign_email = address("foreign")
    expect_ok(admin.request("POST", f"/v1/projects/{p}/tenants/{tenant_id}/accounts:batchCreate", json={
        "hashAlgorithm": "SCRYPT", "signerKey": base64.b64encode(own_key).decode(), "saltSeparator": "",
        "rounds": 8, "memoryCost": 14,
        "users": [{"localId": "foreign-1", "email": foreign_email, "salt": base64.b64encode(salt).decode(),
                   "passwordHash": base64.b64encode(firebase_scrypt(PASSWORD, salt, own_key, b"", 8, 14)).decode()}]}))

    # Stored as migration 14 marks such hashes: projectKey, no key in the row.
    for local_id in moved:
        params = json.loads(stored_params(stack, tenant_id, local_id))
        assert params.get("projectKey") is True and "signerKey" not in params, params

    # The tenant's admin: batchGet (plain and with foreign hashes) and `tessera export --tenant`.
    call = tenant_credential(stack, admin, tenant_id)
    for foreign in (False, True):
        query = "?tesseraForeignHashes=true" if foreign else ""
        resp = call("GET", f"/v1/projects/{p}/tenants/{tenant_id}/accounts:batchGet{query}")
        users = {u["localId"]: u for u in expect_ok(resp)["users"]}
        assert_no_project_key(resp.text, project_key, f"batchGet{query}")
        for local_id in moved:
            seen = users[local_id]
            assert "passwordHash" not in seen and "tesseraPasswordHash" not in seen, seen
            assert by_id[local_id]["passwordHash"] not in resp.text, "the project-key hash itself is withheld"
            assert seen.get("tesseraPasswordHashWithheld") is (True if foreign else None), seen
        if foreign:
            kept = users["foreign-1"]["tesseraPasswordHash"]
            assert base64.b64decode(kept["signerKey"]) == own_key, "an importer's own key goes back to them"

    scoped = Target(stack.admin_url, tenant_secret(stack, admin, tenant_id), p)
    tenant_file = tmp_path / "tenant.json"
    run = run_cli(scoped, "export", "--tenant", tenant_id, "--output", str(tenant_file))
    assert run.returncode == EXIT_OK, str(run)
    assert "without their password hash" in run.stderr, str(run)
    text = tenant_file.read_text()
    assert_no_project_key(text, project_key, "the tenant's export")
    tenant_export = json.loads(text)
    tenant_config = expect_ok(admin.get_tenant(tenant_id))["hashConfig"]
    assert tenant_export["hashConfig"]["signerKey"] == tenant_config["signerKey"]
    extras = {u["localId"]: u for u in tenant_export["tessera"]["users"]}
    for local_id in moved:
        assert extras[local_id].get("tesseraPasswordHashWithheld") is True, extras.get(local_id)
        assert "passwordHash" not in next(u for u in tenant_export["users"] if u["localId"] == local_id)

    # The moved users sign in with their passwords; the sign-in re-makes each hash with the tenant's key.
    for email in list(moved.values()) + [foreign_email]:
        resp = sign_in(client, tenant_id, email, PASSWORD)
        assert resp.status_code == 200, describe(resp)
    for local_id in moved:
        params = json.loads(stored_params(stack, tenant_id, local_id))
        assert "projectKey" not in params and "signerKey" not in params, params
    after = batch_get(call, stack, tenant_id)
    for local_id in list(moved) + ["foreign-1"]:
        recovered = signer_key_behind(PASSWORD, after[local_id], tenant_config)
        assert recovered == base64.b64decode(tenant_config["signerKey"]), "re-made with the tenant's key"
    run = run_cli(scoped, "export", "--tenant", tenant_id, "--output", str(tenant_file))
    assert run.returncode == EXIT_OK and "without their password hash" not in run.stderr, str(run)
    text = tenant_file.read_text()
    assert_no_project_key(text, project_key, "the tenant's export after the sign-ins")
    users = {u["localId"]: u for u in json.loads(text)["users"]}
    for local_id in moved:
        assert signer_key_behind(PASSWORD, users[local_id], tenant_config) == \
            base64.b64decode(tenant_config["signerKey"]), "exportable under the tenant's own hashConfig"


def tenant_secret(stack, admin, tenant_id: str) -> str:
    """A new admin credential scoped to the tenant (its secret, for the CLI)."""
    created = expect_ok(admin.request("POST", f"/v2/projects/{stack.project_id}/tenants/{tenant_id}/adminCredentials",
                                      json={"displayName": "hash key scopes"}))
    return created["secret"]
