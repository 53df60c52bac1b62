"""The API description and a property-based fuzz run (issue #7): the OpenAPI 3.1 document the token
service serves is the checked-in one, and schemathesis, driven by it, finds no server error, no
undocumented status and no answer that breaks the documented schemas — for the end-user API (with
the API key) and the admin API (with the admin token). Bounded: a few dozen examples per operation.
Runs after the other calm tests (its random sign-ups count against the default scope's limits)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from conftest import HTTP_TIMEOUT, REPO_ROOT

DOCUMENT = REPO_ROOT / "Services" / "TokenService" / "Sources" / "Resources" / "openapi.yaml"
CHECKS = "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance"


def test_the_served_description_is_the_checked_in_one(stack):
    resp = requests.get(stack.url + "/openapi.yaml", timeout=HTTP_TIMEOUT)
    assert resp.status_code == 200 and resp.headers["Content-Type"].startswith("application/yaml")
    assert resp.content == DOCUMENT.read_bytes()
    assert resp.text.startswith("openapi: 3.1.")


@pytest.mark.parametrize("tag", ["client", "admin", "admin-write"])
def test_fuzz_finds_no_server_error_or_schema_violation(stack, tmp_path: Path, tag: str):
    schemathesis = Path(sys.executable).parent / "schemathesis"
    assert schemathesis.is_file(), f"{schemathesis} missing: scripts/test-venv installs it"
    config = tmp_path / "schemathesis.toml"
    config.write_text(f'[parameters]\n"path.project" = "{stack.project_id}"\n')
    header = f"x-goog-api-key: {stack.api_key}" if tag == "client" else f"Authorization: Bearer {stack.admin_token}"
    command = [str(schemathesis), "--config-file", str(config), "run", str(DOCUMENT), "--url", stack.url,
               "--include-tag", tag, "--header", header, "--max-examples", "25",
               "--generation-with-security-parameters", "false", "--generation-deterministic",
               "--checks", CHECKS, "--no-color"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=tmp_path,
                          env={**os.environ, "SCHEMATHESIS_HOOKS": ""})
    summary = done.stdout[-6000:]
    assert done.returncode == 0, f"schemathesis found problems:\n{summary}\n{done.stderr[-2000:]}"
    assert " passed" in summary and "generated" in summary, summary


def test_nul_characters_are_refused_cleanly(stack, admin, client, tenant_id):
    """Found by the fuzz run: PostgreSQL cannot store NUL; such input is a 400, never a 500."""
    resp = admin.request("POST", f"/v1/projects/{stack.project_id}/accounts:lookup",
                         json={"phoneNumber": ["+1555\u00000100"], "email": ["a\u0000@example.com"]})
    assert resp.status_code == 400 and resp.json()["error"]["status"] == "INVALID_ARGUMENT", resp.text
    resp = admin.request("POST", f"/v1/projects/{stack.project_id}/tenants/{tenant_id}/accounts",
                         json={"displayName": "nul\u0000name"})
    assert resp.status_code == 400, resp.text
    # An import reads its batch through jsonb (\u0000 is refused there too); the batch changes nothing.
    path = f"/v1/projects/{stack.project_id}/tenants/{tenant_id}/accounts:batchCreate"
    for user in ({"localId": "imp-nul-name", "displayName": "nul\u0000name"},
                 {"localId": "imp-nul-link", "providerUserInfo": [{"providerId": "google.com", "rawId": "g\u0000"}]}):
        resp = admin.request("POST", path, json={"users": [user]})
        assert resp.status_code == 400 and resp.json()["error"]["status"] == "INVALID_ARGUMENT", resp.text
        assert admin.lookup_users(tenant_id, [user["localId"]]) == []


def test_an_unknown_hash_algorithm_is_bad_input_not_a_missing_feature(stack, admin, tenant_id):
    """Found by the fuzz run: an import naming no algorithm Firebase knows answered 501; it is a 400
    INVALID_HASH_ALGORITHM. A Firebase algorithm Tessera cannot verify yet stays 501 (API.md A.1)."""
    path = f"/v1/projects/{stack.project_id}/tenants/{tenant_id}/accounts:batchCreate"
    user = {"localId": "imp-unknown-algo", "email": "imp-unknown-algo@example.com", "passwordHash": "aGFzaA"}
    resp = admin.request("POST", path, json={"users": [user], "hashAlgorithm": ""})
    assert resp.status_code == 400 and resp.json()["error"]["message"] == "INVALID_HASH_ALGORITHM", resp.text
    resp = admin.request("POST", path, json={"users": [user], "hashAlgorithm": "NOT-AN-ALGORITHM"})
    assert resp.status_code == 400 and resp.json()["error"]["message"] == "INVALID_HASH_ALGORITHM", resp.text
    resp = admin.request("POST", path, json={"users": [user], "hashAlgorithm": "MD5", "rounds": 1})
    assert resp.status_code == 501, resp.text
    assert admin.lookup_users(tenant_id, ["imp-unknown-algo"]) == []
