"""Signing-key rotation through the running stack (docs/protocol/tokens.md#token-rules): a new key is published before it
signs; once it signs, tokens of the retired key keep working while its key stays published. The
test stack re-reads its key directory every second (TESSERA_KEY_RELOAD_INTERVAL=1s)."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import jwt
import pytest
import requests

from conftest import expect_ok

pytestmark = pytest.mark.disruptive  # changes the stack's signing key; runs last


def published(stack) -> set[str]:
    """The kids both key documents publish. They are two requests, so a key reload (every second
    here) can fall between them: a pair that disagrees is read again, and must agree within a few."""
    for _ in range(5):
        jwks = requests.get(stack.url + "/.well-known/jwks.json", timeout=10).json()
        x509 = requests.get(stack.url + "/robot/v1/metadata/x509/securetoken@system.gserviceaccount.com",
                            timeout=10).json()
        kids = {k["kid"] for k in jwks["keys"]}
        if kids == set(x509):
            return kids
        time.sleep(0.3)
    assert kids == set(x509), "the JWKS and the X.509 map publish the same keys"
    return kids


def wait_for(condition, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return False


def signing_kid(client, tenant_id) -> tuple[str, str]:
    session = client.sign_up_anonymous(tenant_id)
    return jwt.get_unverified_header(session.id_token)["kid"], session.id_token


def test_new_key_is_published_before_it_signs_and_old_tokens_survive(stack, client, tenant_id, verifier):
    keys_dir = Path(stack.env["TESSERA_SIGNING_KEYS_DIR"])
    binary = Path(stack.env["TESSERA_BIN_DIR"]) / "token-service"
    before = published(stack)
    old_kid, old_token = signing_kid(client, tenant_id)
    assert old_kid in before
    generated = []
    try:
        # Published now, signing in an hour: clients can fetch it before it is used.
        later = subprocess.run([str(binary), "keys", "generate", "--dir", str(keys_dir), "--lead", "1h"],
                               capture_output=True, text=True, check=True).stdout.strip()
        generated.append(later)
        assert wait_for(lambda: later in published(stack)), "the new key was not published"
        assert signing_kid(client, tenant_id)[0] == old_kid, "a key must not sign before its time"

        # A key due in two seconds takes over signing; the retired key stays published.
        soon = subprocess.run([str(binary), "keys", "generate", "--dir", str(keys_dir), "--lead", "2s"],
                              capture_output=True, text=True, check=True).stdout.strip()
        generated.append(soon)
        assert wait_for(lambda: signing_kid(client, tenant_id)[0] == soon, timeout=15), "the due key does not sign"
        assert old_kid in published(stack)
        assert verifier.verify(old_token)["sub"]  # from the JWKS URL alone
        expect_ok(client.lookup(old_token, tenant_id))
        new_kid, new_token = signing_kid(client, tenant_id)
        expect_ok(client.lookup(new_token, tenant_id))
    finally:
        for kid in generated:
            (keys_dir / f"{kid}.pem").unlink(missing_ok=True)
        assert wait_for(lambda: published(stack) == before), "the stack did not return to its original keys"
        assert wait_for(lambda: signing_kid(client, tenant_id)[0] == old_kid)
