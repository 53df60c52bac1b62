"""The API description and a property-based fuzz run (issue #7): the OpenAPI 3.1 document the token
service serves is the checked-in one, and schemathesis, driven by it, finds no server error, no
undocumented status and no answer that breaks the documented schemas — for the end-user API (with
the API key) and the admin API (with the admin token). Bounded: a few dozen examples per operation.
Marked ``late``: runs after the other calm tests (its random sign-ups count against the default scope's
limits)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from conftest import HTTP_TIMEOUT, REPO_ROOT

DOCUMENT = REPO_ROOT / "Services" / "TokenService" / "Sources" / "Resources" / "openapi.yaml"
pytestmark = pytest.mark.late
CHECKS = "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance"


def test_the_served_description_is_the_checked_in_one(stack):
    resp = requests.get(stack.url + "/openapi.yaml", timeout=HTTP_TIMEOUT)
    assert resp.status_code == 200 and resp.headers["Content-Type"].startswith("application/yaml")
    assert resp.content == DOCUMENT.read_bytes()
    assert resp.text.startswith("openapi: 3.1.")


FUZZ_TAGS = ["client", "admin", "admin-write"]
FUZZ_TIMEOUT = 600  # seconds, per run


def fuzz_command(stack, schemathesis: Path, config: Path, tag: str) -> list[str]:
    header = f"x-goog-api-key: {stack.api_key}" if tag == "client" else f"Authorization: Bearer {stack.admin_token}"
    # The admin API is on the admin plane (docs/protocol/admin.md#the-admin-plane): on the public one every
    # admin call is a 404.
    url = stack.url if tag == "client" else stack.admin_url
    return [str(schemathesis), "--config-file", str(config), "run", str(DOCUMENT), "--url", url,
            "--include-tag", tag, "--header", header, "--max-examples", "25",
            "--generation-with-security-parameters", "false", "--generation-deterministic",
            "--checks", CHECKS, "--no-color"]


@pytest.fixture(scope="module")
def fuzz_runs(request, stack, tmp_path_factory):
    """The schemathesis runs of every selected tag, started together: each run is bound by its own
    (single-threaded) case generation, not by the stack, so they overlap on the machine's cores instead of
    taking turns. Each run is the same deterministic command as on its own, in a directory of its own;
    each tag's test waits for its run and judges it."""
    schemathesis = Path(sys.executable).parent / "schemathesis"
    assert schemathesis.is_file(), f"{schemathesis} missing: scripts/test-venv installs it"
    selected = {item.callspec.params["tag"] for item in request.session.items
                if item.module is request.module
                and item.originalname == test_fuzz_finds_no_server_error_or_schema_violation.__name__}
    runs = {}
    for tag in FUZZ_TAGS:
        if tag not in selected:
            continue
        workdir = tmp_path_factory.mktemp(f"fuzz-{tag}")
        config = workdir / "schemathesis.toml"
        config.write_text(f'[parameters]\n"path.project" = "{stack.project_id}"\n')
        stdout, stderr = workdir / "stdout.txt", workdir / "stderr.txt"
        with open(stdout, "w") as out, open(stderr, "w") as err:
            process = subprocess.Popen(fuzz_command(stack, schemathesis, config, tag), stdout=out, stderr=err,
                                       text=True, cwd=workdir, env={**os.environ, "SCHEMATHESIS_HOOKS": ""})
        runs[tag] = (process, stdout, stderr, time.monotonic())
    yield runs
    for process, *_ in runs.values():
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.mark.parametrize("tag", FUZZ_TAGS)
def test_fuzz_finds_no_server_error_or_schema_violation(fuzz_runs, tag: str):
    process, stdout, stderr, started = fuzz_runs[tag]
    try:
        process.wait(timeout=max(1.0, started + FUZZ_TIMEOUT - time.monotonic()))
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        pytest.fail(f"schemathesis ({tag}) ran longer than {FUZZ_TIMEOUT}s:\n{stdout.read_text()[-6000:]}")
    summary = stdout.read_text()[-6000:]
    assert process.returncode == 0, f"schemathesis found problems:\n{summary}\n{stderr.read_text()[-2000:]}"
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
    INVALID_HASH_ALGORITHM. A Firebase algorithm Tessera cannot verify yet stays 501 (docs/protocol/README.md#the-surface)."""
    path = f"/v1/projects/{stack.project_id}/tenants/{tenant_id}/accounts:batchCreate"
    user = {"localId": "imp-unknown-algo", "email": "imp-unknown-algo@example.com", "passwordHash": "aGFzaA"}
    resp = admin.request("POST", path, json={"users": [user], "hashAlgorithm": ""})
    assert resp.status_code == 400 and resp.json()["error"]["message"] == "INVALID_HASH_ALGORITHM", resp.text
    resp = admin.request("POST", path, json={"users": [user], "hashAlgorithm": "NOT-AN-ALGORITHM"})
    assert resp.status_code == 400 and resp.json()["error"]["message"] == "INVALID_HASH_ALGORITHM", resp.text
    resp = admin.request("POST", path, json={"users": [user], "hashAlgorithm": "MD5", "rounds": 1})
    assert resp.status_code == 501, resp.text
    assert admin.lookup_users(tenant_id, ["imp-unknown-algo"]) == []
