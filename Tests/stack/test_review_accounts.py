"""Issue 23, the account findings of the outside review that need more than the API: a tenant hash made
with the project's key before tenants had keys of their own (1, set up with psql), imported custom-token
and email-link users not made anonymous (read with psql), and the sign-in password bounded before hashing
(11b, counted on the directory's /metrics). Each test reproduces the attack as the review ran it and
asserts that it fails. The findings the API alone shows (the tenant's own hash key and hashConfig,
imported hashes exported with their settings, mail codes ended by sequence, NFC/NFD addresses,
mixed-script domains, bounded profile fields) are tested in process:
Tests/TesseraTests/InProcess/InProcessReviewAccountsTests.swift. The helpers here are shared with
test_hash_key_scopes.py."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import time
import uuid

import requests
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from conftest import describe, expect_error, expect_ok, psql, scrape, value
from test_passwords import sign_in, sign_up


def address(prefix: str = "rev") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}@example.com"


def as_credential(stack, secret):
    """Admin-plane calls with a scoped admin credential (as test_admin_credentials.py does)."""
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {secret}"
    return lambda method, path, **kw: session.request(method, stack.admin_url + path, timeout=15, **kw)


def tenant_credential(stack, admin, tenant_id):
    created = expect_ok(admin.request("POST", f"/v2/projects/{stack.project_id}/tenants/{tenant_id}/adminCredentials",
                                      json={"displayName": "review"}))
    return as_credential(stack, created["secret"])


def firebase_scrypt(password: str, salt: bytes, key: bytes, separator: bytes, rounds: int, mem_cost: int) -> bytes:
    """Firebase scrypt: AES-256-CTR (zero nonce) of the signer key under scrypt(password, salt+separator).
    CTR is its own inverse: applied to a stored hash it gives back the signer key it was made with."""
    derived = hashlib.scrypt(password.encode(), salt=salt + separator, n=2 ** mem_cost, r=rounds, p=1, dklen=32)
    encryptor = Cipher(algorithms.AES(derived), modes.CTR(b"\0" * 16)).encryptor()
    return encryptor.update(key) + encryptor.finalize()


def signer_key_behind(password: str, user: dict, config: dict) -> bytes:
    """What the review did: decrypt an exported hash with scrypt over the known password."""
    return firebase_scrypt(password, base64.b64decode(user["salt"]), base64.b64decode(user["passwordHash"]),
                           base64.b64decode(config["saltSeparator"]), config["rounds"], config["memoryCost"])


def batch_get(call, stack, tenant_id, foreign: bool = False) -> dict[str, dict]:
    query = "?tesseraForeignHashes=true" if foreign else ""
    resp = call("GET", f"/v1/projects/{stack.project_id}/tenants/{tenant_id}/accounts:batchGet{query}")
    return {u["localId"]: u for u in expect_ok(resp).get("users", [])}


def project_hash_config(admin) -> dict:
    return expect_ok(admin.get_config())["signIn"]["hashConfig"]


def admin_create(admin, tenant_id, **fields):
    """Admin `accounts` (create a user) in a tenant."""
    return admin.request("POST", f"/v1/projects/{admin.stack.project_id}/tenants/{tenant_id}/accounts", json=fields)


# --------------------------------------------------------------------------------------
# 1. Per-tenant hash keys
# --------------------------------------------------------------------------------------

def test_a_tenant_hash_made_with_the_project_key_is_not_exported_and_is_rehashed_at_sign_in(
        stack, admin, client, make_tenant):
    """A tenant user whose hash dates from before tenants had keys of their own (params carry
    "projectKey": true) still signs in, but batchGet does not export that hash (the tenant's hashConfig
    does not describe it); the successful sign-in re-makes it with the tenant's key, which is then
    exported and decrypts to the tenant's signer key."""
    tenant_id = make_tenant(allowPasswordSignup=True)["tenantId"]
    email, password = address("legacy"), "legacy password 1"
    local_id = expect_ok(admin_create(admin, tenant_id, email=email, password="replaced later"))["localId"]
    assert re.fullmatch(r"[A-Za-z0-9_-]+", tenant_id) and re.fullmatch(r"[A-Za-z0-9_-]+", local_id)

    project = project_hash_config(admin)
    rounds, mem_cost = project["rounds"], project["memoryCost"]
    salt = os.urandom(12)
    digest = firebase_scrypt(password, salt, base64.b64decode(project["signerKey"]),
                             base64.b64decode(project["saltSeparator"]), rounds, mem_cost)
    params = f'{{"memCost":{mem_cost},"projectKey":true,"rounds":{rounds}}}'
    updated = psql(stack, f"UPDATE users SET password_algorithm = 'SCRYPT', password_params = '{params}', "
                          f"password_salt = '{base64.b64encode(salt).decode()}', "
                          f"password_hash = '{base64.b64encode(digest).decode()}' "
                          f"WHERE tenant_id = '{tenant_id}' AND local_id = '{local_id}'")
    assert updated.endswith("UPDATE 1"), updated

    before = batch_get(admin.request, stack, tenant_id)[local_id]
    assert "passwordHash" not in before and "salt" not in before, \
        f"a hash made with the project's key is not exported as the tenant's: {before}"
    # Nor with its settings (`tessera export`): they would hand the project's signer key to a tenant admin.
    call = tenant_credential(stack, admin, tenant_id)
    for caller in (admin.request, call):
        foreign = batch_get(caller, stack, tenant_id, foreign=True)[local_id]
        assert "tesseraPasswordHash" not in foreign and project["signerKey"] not in json.dumps(foreign), foreign

    assert sign_in(client, tenant_id, email, "not the password").status_code == 400
    expect_ok(sign_in(client, tenant_id, email, password))
    after = batch_get(admin.request, stack, tenant_id)[local_id]
    assert after.get("passwordHash") and after.get("salt"), f"re-hashed at the sign-in: {after}"
    tenant_config = expect_ok(admin.get_tenant(tenant_id))["hashConfig"]
    recovered = signer_key_behind(password, after, tenant_config)
    assert recovered == base64.b64decode(tenant_config["signerKey"]), "re-made with the tenant's key"
    assert recovered != base64.b64decode(project["signerKey"])
    expect_ok(sign_in(client, tenant_id, email, password))


def test_imported_custom_token_and_email_link_users_keep_what_they_are(stack, admin, make_tenant):
    """UserInfo's `customAuth` and `emailLinkSignin` survive accounts:batchCreate (what an export of
    such users carries): a custom-token user with no email, phone, password or provider is not made an
    anonymous account (auto-cleanup would delete it), and an email-link user keeps its sign-in method
    and its `password` provider entry."""
    p, tenant_id = stack.project_id, make_tenant(allowPasswordSignup=True, enableEmailLinkSignin=True,
                                                 enableAnonymousUser=True)["tenantId"]
    link_id, custom_id, bare_id = (f"{k}-{uuid.uuid4().hex[:8]}" for k in ("link", "custom", "bare"))
    email = address("link")
    resp = admin.request("POST", f"/v1/projects/{p}/tenants/{tenant_id}/accounts:batchCreate", json={"users": [
        {"localId": link_id, "email": email, "emailVerified": True, "emailLinkSignin": True},
        {"localId": custom_id, "customAuth": True},
        {"localId": bare_id}]})
    assert "error" not in expect_ok(resp), describe(resp)
    resp = admin.request("POST", f"/v1/projects/{p}/tenants/{tenant_id}/accounts:lookup",
                         json={"localId": [link_id, custom_id, bare_id]})
    users = {u["localId"]: u for u in expect_ok(resp)["users"]}
    assert users[link_id].get("emailLinkSignin") is True, users[link_id]
    assert [i["providerId"] for i in users[link_id].get("providerUserInfo", [])] == ["password"], users[link_id]
    assert users[custom_id].get("customAuth") is True, users[custom_id]
    anonymous = psql(stack, f"SELECT local_id FROM users WHERE tenant_id = '{tenant_id}' AND is_anonymous")
    assert custom_id not in anonymous and link_id not in anonymous, anonymous
    assert bare_id in anonymous, "a user with nothing to sign in with is anonymous, as before"


# --------------------------------------------------------------------------------------
# 11b. The sign-in password is bounded before any hashing
# --------------------------------------------------------------------------------------

def hashes_done(stack) -> float:
    assert stack.directory_url, f"TESSERA_DIRECTORY_URL missing from {stack.env_file}"
    return value(scrape(stack.directory_url), "tessera_password_hash_wait_seconds_count")


def test_an_overlong_sign_in_password_is_refused_without_hashing(stack, admin, client, make_tenant):
    """signInWithPassword with 4,097 characters (sign-up's bound is 4,096) is the wrong-password answer
    at once, for a known and an unknown address: no hash is computed (the directory's hash count does
    not move), 50 in a row. Without enumeration protection it is INVALID_PASSWORD."""
    tenant_id = make_tenant(allowPasswordSignup=True, rateLimits={"passwordSignInsPerAccountPerHour": 0,
                                                                   "passwordSignInsPerIpPerHour": 0})["tenantId"]
    known = address("long")
    expect_ok(sign_up(client, tenant_id, known))
    overlong = "x" * 4097
    before = hashes_done(stack)
    started = time.monotonic()
    for i in range(50):
        expect_error(sign_in(client, tenant_id, known if i % 2 == 0 else address("nobody"), overlong),
                     "INVALID_LOGIN_CREDENTIALS")
    elapsed = time.monotonic() - started
    assert hashes_done(stack) == before, "a 4,097-character sign-in password was hashed"
    assert elapsed < 10, f"50 refusals took {elapsed:.1f}s"

    original = expect_ok(admin.get_config())
    mask = "emailPrivacyConfig.enableImprovedEmailPrivacy"
    expect_ok(admin.patch_config({"emailPrivacyConfig": {"enableImprovedEmailPrivacy": False}}, mask))
    try:
        before = hashes_done(stack)
        expect_error(sign_in(client, tenant_id, known, overlong), "INVALID_PASSWORD")
        assert hashes_done(stack) == before, "a 4,097-character sign-in password was hashed"
    finally:
        expect_ok(admin.patch_config(original, mask))
    expect_ok(sign_in(client, tenant_id, known))
