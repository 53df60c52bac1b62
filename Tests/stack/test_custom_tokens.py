"""Service accounts and custom tokens (issue #5; docs/protocol/tokens.md#token-rules, docs/protocol/admin.md#tesseras-own-admin-resources, docs/protocol/tokens.md#custom-tokens).

Tessera generates Google-format service-account key files (or registers an existing public key);
the real Firebase Admin SDK, *not* in emulator mode, mints RS256 custom tokens with them, and
``accounts:signInWithCustomToken`` verifies them exactly: signature against the registered key
(``kid`` = ``private_key_id``), ``aud``, ``iss``/``sub``, lifetime, reserved claims, the tenant.

The Admin SDK only signs for real when ``FIREBASE_AUTH_EMULATOR_HOST`` is unset at the moment its
auth client and signer are created (test_admin_sdk.py sets it for its own module), so every SDK call
here runs inside ``not_emulated()``, which removes the variable and puts it back afterwards, on apps
with unique names that this module creates and deletes.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import time
import uuid
from contextlib import contextmanager
from typing import Any

import jwt
import pytest
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from conftest import (HTTP_TIMEOUT, RFC3339, b64url_encode, describe, expect_error, expect_ok,
                      expect_status_error, jwt_parts, unverified_claims)

firebase_admin = pytest.importorskip("firebase_admin")
from firebase_admin import auth, credentials, tenant_mgt  # noqa: E402

AUDIENCE = "https://identitytoolkit.googleapis.com/google.identity.identitytoolkit.v1.IdentityToolkit"
CUSTOM_TOKEN_KIND = "identitytoolkit#VerifyCustomTokenResponse"
EMULATOR_VAR = "FIREBASE_AUTH_EMULATOR_HOST"
KEY_ID = re.compile(r"^[0-9a-f]{40}$")


# --------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------

@contextmanager
def emulator_host(value: str | None):
    """Sets (or, with None, removes) FIREBASE_AUTH_EMULATOR_HOST and restores it afterwards."""
    saved = os.environ.get(EMULATOR_VAR)
    if value is None:
        os.environ.pop(EMULATOR_VAR, None)
    else:
        os.environ[EMULATOR_VAR] = value
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(EMULATOR_VAR, None)
        else:
            os.environ[EMULATOR_VAR] = saved


def not_emulated():
    return emulator_host(None)


def new_uid(prefix: str = "ct") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:16]}"


def rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def public_pem(key: rsa.RSAPrivateKey) -> str:
    return key.public_key().public_bytes(serialization.Encoding.PEM,
                                         serialization.PublicFormat.SubjectPublicKeyInfo).decode()


def private_key_of(account: dict) -> rsa.RSAPrivateKey:
    key = serialization.load_pem_private_key(account["private_key"].encode(), password=None)
    assert isinstance(key, rsa.RSAPrivateKey), f"not an RSA key: {type(key)}"
    return key


def accounts_path(stack, tenant_id: str | None = None) -> str:
    scope = f"/v2/projects/{stack.project_id}"
    if tenant_id is not None:
        scope += f"/tenants/{tenant_id}"
    return f"{scope}/serviceAccounts"


def token_payload(account: dict, uid: str | None, **overrides: Any) -> dict:
    """A valid custom-token payload for ``account`` (what the Admin SDK puts in), with overrides;
    an override whose value is ``None`` removes that claim."""
    now = int(time.time())
    payload: dict[str, Any] = {
        "iss": account["client_email"], "sub": account["client_email"], "aud": AUDIENCE,
        "iat": now, "exp": now + 3600,
    }
    if uid is not None:
        payload["uid"] = uid
    for name, value in overrides.items():
        if value is None:
            payload.pop(name, None)
        else:
            payload[name] = value
    return payload


def sign(payload: dict, key: rsa.RSAPrivateKey, kid: str | None) -> str:
    headers = {"kid": kid} if kid is not None else None
    return jwt.encode(payload, key, algorithm="RS256", headers=headers)


def segment(obj: dict) -> str:
    return b64url_encode(json.dumps(obj, separators=(",", ":")).encode())


def sign_in_raw(client, token: str | None, tenant_id: str | None = None,
                **extra: Any) -> requests.Response:
    body: dict[str, Any] = {"returnSecureToken": True}
    if token is not None:
        body["token"] = token
    if tenant_id is not None:
        body["tenantId"] = tenant_id
    body.update(extra)
    return client.post("/v1/accounts:signInWithCustomToken", body)


def sign_in(client, token: str, tenant_id: str | None = None) -> dict:
    resp = sign_in_raw(client, token, tenant_id)
    data = expect_ok(resp)
    assert data.get("kind") == CUSTOM_TOKEN_KIND, describe(resp)
    assert isinstance(data.get("isNewUser"), bool), describe(resp)
    assert isinstance(data.get("idToken"), str) and data["idToken"], describe(resp)
    assert isinstance(data.get("refreshToken"), str) and data["refreshToken"], describe(resp)
    assert data.get("expiresIn") == "3600", describe(resp)
    return data


def admin_users(admin, tenant_id: str | None, uid: str) -> list[dict]:
    return admin.lookup_users(tenant_id, [uid])


def admin_update(admin, tenant_id: str | None, **body: Any) -> dict:
    return expect_ok(admin.request("POST", admin.accounts_path(tenant_id, "update"), json=body))


def list_accounts(call, path: str) -> list[dict]:
    """Every entry of a paged ``…/serviceAccounts`` list; also checks no page leaks a private key."""
    found: list[dict] = []
    token = None
    for _ in range(100):
        params = {"pageToken": token} if token else None
        resp = call("GET", path, params=params)
        data = expect_ok(resp)
        assert "PRIVATE KEY" not in resp.text, f"a list shows private key material: {describe(resp)}"
        page = data.get("serviceAccounts", [])
        assert isinstance(page, list), describe(resp)
        for entry in page:
            assert not {"private_key", "privateKey", "privateKeyPem"} & set(entry), describe(resp)
        found += page
        token = data.get("nextPageToken")
        if not token:
            return found
    raise AssertionError(f"{path}: more than 100 pages")


def as_credential(stack, secret: str):
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {secret}"
    return lambda method, path, **kw: session.request(method, stack.admin_url + path, timeout=HTTP_TIMEOUT, **kw)


class ServiceAccounts:
    """Creates service accounts through the admin API and deletes them afterwards."""

    def __init__(self, stack, admin):
        self.stack, self.admin = stack, admin
        self.created: list[tuple[str | None, str]] = []

    def create_raw(self, tenant_id: str | None = None, body: dict | None = None,
                   call=None) -> requests.Response:
        call = call or self.admin.request
        body = body if body is not None else {"displayName": f"ct {uuid.uuid4().hex[:6]}"}
        resp = call("POST", accounts_path(self.stack, tenant_id), json=body)
        if resp.status_code == 200 and isinstance(resp.json().get("accountId"), str):
            self.created.append((tenant_id, resp.json()["accountId"]))
        return resp

    def create(self, tenant_id: str | None = None, call=None, **body: Any) -> dict:
        body.setdefault("displayName", f"ct {uuid.uuid4().hex[:6]}")
        resp = self.create_raw(tenant_id, body, call=call)
        data = expect_ok(resp)
        assert isinstance(data.get("accountId"), str) and data["accountId"], describe(resp)
        return data

    def delete_raw(self, account: dict, call=None) -> requests.Response:
        call = call or self.admin.request
        return call("DELETE", f"{accounts_path(self.stack, account.get('tenantId'))}/{account['accountId']}")

    def cleanup(self) -> None:
        for tenant_id, account_id in reversed(self.created):
            try:
                self.admin.request("DELETE", f"{accounts_path(self.stack, tenant_id)}/{account_id}")
            except requests.RequestException:
                pass


@contextmanager
def sdk_app(account: dict):
    """A named firebase_admin App holding ``account`` as its credential, not in emulator mode."""
    with not_emulated():
        app = firebase_admin.initialize_app(credentials.Certificate(account),
                                            {"projectId": account["project_id"]},
                                            name=f"tessera-ct-{uuid.uuid4().hex[:8]}")
    try:
        yield app
    finally:
        firebase_admin.delete_app(app)


def mint(app, uid: str, claims: dict | None = None, tenant_id: str | None = None) -> str:
    """``create_custom_token`` of the real Admin SDK (tenant-scoped client when ``tenant_id``)."""
    with not_emulated():
        if tenant_id is None:
            token = auth.create_custom_token(uid, claims, app=app)
        else:
            token = tenant_mgt.auth_for_tenant(tenant_id, app=app).create_custom_token(uid, claims)
    return token.decode() if isinstance(token, bytes) else token


# --------------------------------------------------------------------------------------
# Fixtures
# --------------------------------------------------------------------------------------

@pytest.fixture
def service_accounts(stack, admin, make_tenant):
    # Depends on make_tenant so that this cleanup runs before the tenants are deleted.
    factory = ServiceAccounts(stack, admin)
    yield factory
    factory.cleanup()


@pytest.fixture(scope="module")
def project_account(stack, admin):
    """A project-level service account generated by Tessera (with its private key)."""
    factory = ServiceAccounts(stack, admin)
    account = factory.create(displayName="custom tokens")
    yield account
    factory.cleanup()


@pytest.fixture(scope="module")
def project_key(project_account) -> rsa.RSAPrivateKey:
    return private_key_of(project_account)


@pytest.fixture(scope="module")
def app(project_account):
    with sdk_app(project_account) as application:
        yield application


@pytest.fixture
def default_users(admin):
    """uids of default-scope users a test creates; deleted afterwards."""
    uids: list[str] = []
    yield uids
    for uid in uids:
        try:
            admin.delete_user_raw(None, uid)
        except requests.RequestException:
            pass


# --------------------------------------------------------------------------------------
# Generated service accounts and the Admin SDK
# --------------------------------------------------------------------------------------

def test_generated_service_account_is_a_google_key_file(stack, project_account):
    account = project_account
    assert account["type"] == "service_account"
    assert account["project_id"] == stack.project_id
    assert KEY_ID.match(account["private_key_id"]), account["private_key_id"]
    assert account["private_key"].startswith("-----BEGIN PRIVATE KEY-----"), "PKCS#8 PEM expected"
    assert private_key_of(account).key_size >= 2048
    assert "@" in account["client_email"]
    assert isinstance(account["client_id"], str) and account["client_id"]
    # Google's client libraries require token_uri; Tessera names no certificate URLs of Google's.
    assert isinstance(account.get("token_uri"), str) and account["token_uri"], account
    assert account["name"] == f"projects/{stack.project_id}/serviceAccounts/{account['accountId']}"
    assert account["displayName"] == "custom tokens"
    assert "tenantId" not in account
    # What firebase_admin reads from a key file.
    with not_emulated():
        credential = credentials.Certificate(account)
        assert credential.project_id == stack.project_id
        assert credential.service_account_email == account["client_email"]


def test_admin_sdk_custom_token_signs_in(stack, client, admin, verifier, project_account, app,
                                         default_users):
    uid = new_uid()
    default_users.append(uid)
    developer_claims = {"role": "admin", "team": "blue", "level": 7}
    token = mint(app, uid, developer_claims)

    header, payload, signature = jwt_parts(token)
    assert header["alg"] == "RS256" and header["kid"] == project_account["private_key_id"], header
    assert signature, "the SDK did not sign (emulator mode leaked into this app?)"
    assert payload["iss"] == payload["sub"] == project_account["client_email"]
    assert payload["aud"] == AUDIENCE and payload["uid"] == uid and payload["claims"] == developer_claims

    first = sign_in(client, token)
    assert first["isNewUser"] is True
    claims = verifier.verify(first["idToken"])
    assert claims["sub"] == uid and claims["user_id"] == uid
    assert claims["firebase"]["sign_in_provider"] == "custom"
    assert claims["firebase"].get("identities") == {}, "no email, no provider"
    assert "tenant" not in claims["firebase"] and "provider_id" not in claims
    assert claims["role"] == "admin" and claims["team"] == "blue" and claims["level"] == 7
    assert "claims" not in claims and "uid" not in claims, "developer claims go to the top level"

    second = sign_in(client, mint(app, uid, {"role": "viewer"}))
    assert second["isNewUser"] is False
    claims = verifier.verify(second["idToken"])
    assert claims["sub"] == uid and claims["role"] == "viewer"
    assert "team" not in claims, "claims belong to the token that started the session"

    # A refresh keeps the claims of the first session.
    refreshed = client.refresh(first["refreshToken"])
    assert refreshed["user_id"] == uid
    claims = verifier.verify(refreshed["id_token"])
    assert claims["firebase"]["sign_in_provider"] == "custom"
    assert claims["role"] == "admin" and claims["team"] == "blue" and claims["level"] == 7

    [user] = admin_users(admin, None, uid)
    assert user["localId"] == uid
    assert user["customAuth"] is True
    assert not user.get("providerUserInfo"), user
    assert "email" not in user and "passwordHash" not in user


def test_custom_attributes_and_token_claims_merge(client, admin, verifier, app, default_users):
    uid = new_uid()
    default_users.append(uid)
    assert sign_in(client, mint(app, uid))["isNewUser"] is True
    attributes = {"role": "user", "plan": "free", "level": 1}
    admin_update(admin, None, localId=uid, customAttributes=json.dumps(attributes))

    signed_in = sign_in(client, mint(app, uid, {"role": "admin", "team": "red"}))
    assert signed_in["isNewUser"] is False
    claims = verifier.verify(signed_in["idToken"])
    assert claims["plan"] == "free" and claims["level"] == 1, "the user's customAttributes"
    assert claims["team"] == "red", "the token's claims"
    assert claims["role"] == "admin", "the token's claims win over customAttributes"
    assert claims["sub"] == uid and claims["firebase"]["sign_in_provider"] == "custom"

    refreshed = verifier.verify(client.refresh(signed_in["refreshToken"])["id_token"])
    assert (refreshed["role"], refreshed["team"], refreshed["plan"]) == ("admin", "red", "free")

    # The token's claims live in the session, not in the user record.
    [user] = admin_users(admin, None, uid)
    assert json.loads(user["customAttributes"]) == attributes
    # A session without token claims carries the customAttributes alone.
    plain = verifier.verify(sign_in(client, mint(app, uid))["idToken"])
    assert plain["role"] == "user" and plain["plan"] == "free" and "team" not in plain


def test_a_users_phone_number_is_in_its_id_tokens(client, admin, verifier, app, default_users):
    """docs/protocol/tokens.md#id-tokens: `phone_number` and `firebase.identities.phone` for a user with a phone number (set by an
    admin: phone sign-in itself is out of scope)."""
    uid = new_uid()
    default_users.append(uid)
    sign_in(client, mint(app, uid))
    phone = f"+1555{uuid.uuid4().int % 10**7:07d}"
    admin_update(admin, None, localId=uid, phoneNumber=phone)
    claims = verifier.verify(sign_in(client, mint(app, uid))["idToken"])
    assert claims["phone_number"] == phone
    assert claims["firebase"]["identities"]["phone"] == [phone]


def test_hand_signed_tokens_with_the_generated_key_sign_in(client, verifier, project_account,
                                                           project_key, default_users):
    """The baseline every refusal below departs from by one change: it must be accepted."""
    uid = new_uid()
    default_users.append(uid)
    token = sign(token_payload(project_account, uid, claims={"via": "pyjwt"}), project_key,
                 project_account["private_key_id"])
    data = sign_in(client, token)
    assert data["isNewUser"] is True
    claims = verifier.verify(data["idToken"])
    assert claims["sub"] == uid and claims["via"] == "pyjwt"

    # Without a kid the key is found by iss (= client_email).
    no_kid = sign(token_payload(project_account, uid), project_key, None)
    assert "kid" not in jwt_parts(no_kid)[0]
    assert sign_in(client, no_kid)["isNewUser"] is False

    # A claims object just under the 1000-character limit is fine.
    near_limit = {"blob": "x" * 900}
    assert len(json.dumps(near_limit)) < 1000
    data = sign_in(client, sign(token_payload(project_account, uid, claims=near_limit), project_key,
                                project_account["private_key_id"]))
    assert verifier.verify(data["idToken"])["blob"] == "x" * 900


# --------------------------------------------------------------------------------------
# Tenants
# --------------------------------------------------------------------------------------

def test_tenant_service_account_tokens_stay_in_their_tenant(stack, client, admin, verifier,
                                                            make_tenant, service_accounts, app):
    p = stack.project_id
    tenant_a, tenant_b = make_tenant()["tenantId"], make_tenant()["tenantId"]
    account = service_accounts.create(tenant_a, displayName="tenant a")
    assert account["tenantId"] == tenant_a
    assert account["name"] == f"projects/{p}/tenants/{tenant_a}/serviceAccounts/{account['accountId']}"
    assert account["type"] == "service_account" and "private_key" in account
    assert KEY_ID.match(account["private_key_id"]), account["private_key_id"]
    key = private_key_of(account)

    uid = new_uid("ten")
    with sdk_app(account) as tenant_app:
        token = mint(tenant_app, uid, {"plan": "pro"}, tenant_id=tenant_a)
    header, payload, _ = jwt_parts(token)
    assert header["kid"] == account["private_key_id"] and header["alg"] == "RS256"
    assert payload["tenant_id"] == tenant_a and payload["iss"] == account["client_email"]

    data = sign_in(client, token, tenant_a)
    assert data["isNewUser"] is True
    claims = verifier.verify(data["idToken"])
    assert claims["firebase"]["tenant"] == tenant_a
    assert claims["firebase"]["sign_in_provider"] == "custom"
    assert claims["sub"] == uid and claims["plan"] == "pro"
    [user] = admin_users(admin, tenant_a, uid)
    assert user["customAuth"] is True and user.get("tenantId") == tenant_a

    # The token names tenant A: nowhere else.
    expect_error(sign_in_raw(client, token), "TENANT_ID_MISMATCH")
    expect_error(sign_in_raw(client, token, tenant_b), "TENANT_ID_MISMATCH")

    # Tenant A's key used for tenant B (or for the default scope) with a matching tenant_id claim.
    other_uid = new_uid("ten")
    forged_b = sign(token_payload(account, other_uid, tenant_id=tenant_b), key, account["private_key_id"])
    assert unverified_claims(forged_b)["tenant_id"] == tenant_b
    expect_error(sign_in_raw(client, forged_b, tenant_b), "CREDENTIAL_MISMATCH")
    default_scope = sign(token_payload(account, other_uid), key, account["private_key_id"])
    expect_error(sign_in_raw(client, default_scope), "CREDENTIAL_MISMATCH")
    assert admin_users(admin, tenant_b, other_uid) == []
    assert admin_users(admin, None, other_uid) == []

    # A project-level service account signs for any tenant (the usual Firebase setup).
    project_uid = new_uid("ten")
    data = sign_in(client, mint(app, project_uid, tenant_id=tenant_b), tenant_b)
    assert data["isNewUser"] is True
    assert verifier.verify(data["idToken"])["firebase"]["tenant"] == tenant_b
    expect_error(sign_in_raw(client, mint(app, project_uid, tenant_id=tenant_b)), "TENANT_ID_MISMATCH")


# --------------------------------------------------------------------------------------
# Refusals
# --------------------------------------------------------------------------------------

def emulator_mode_token(stack, account: dict, uid: str) -> str:
    """What the Admin SDK makes in emulator mode: ``alg: none`` and no signature."""
    with emulator_host(stack.admin_url.removeprefix("http://").removeprefix("https://")):
        emulated = firebase_admin.initialize_app(credentials.Certificate(account),
                                                 {"projectId": stack.project_id},
                                                 name=f"tessera-ct-emu-{uuid.uuid4().hex[:8]}")
        try:
            token = auth.create_custom_token(uid, {"role": "admin"}, app=emulated)
        finally:
            firebase_admin.delete_app(emulated)
    token = token.decode() if isinstance(token, bytes) else token
    header, payload, signature = jwt_parts(token)
    assert header["alg"] == "none" and signature == "", header
    assert payload["aud"] == AUDIENCE and payload["uid"] == uid
    return token


def _alg_none_real_kid(stack, account, key, uid):
    header = {"alg": "none", "typ": "JWT", "kid": account["private_key_id"]}
    return f"{segment(header)}.{segment(token_payload(account, uid))}."


def _hs256_with_public_key(stack, account, key, uid):
    header = {"alg": "HS256", "typ": "JWT", "kid": account["private_key_id"]}
    signing_input = f"{segment(header)}.{segment(token_payload(account, uid))}"
    mac = hmac.new(public_pem(key).encode(), signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{b64url_encode(mac)}"


def _foreign_key_real_kid(stack, account, key, uid):
    return sign(token_payload(account, uid), rsa_key(), account["private_key_id"])


def _foreign_key_no_kid(stack, account, key, uid):
    return sign(token_payload(account, uid), rsa_key(), None)


def _unknown_kid(stack, account, key, uid):
    return sign(token_payload(account, uid), key, "0" * 40)


def _edited_payload(stack, account, key, uid):
    genuine = sign(token_payload(account, "someone-else"), key, account["private_key_id"])
    head, _, signature = genuine.split(".")
    return f"{head}.{segment(token_payload(account, uid))}.{signature}"


def _wrong_aud(stack, account, key, uid):
    return sign(token_payload(account, uid, aud=AUDIENCE + "2"), key, account["private_key_id"])


def _project_id_aud(stack, account, key, uid):
    return sign(token_payload(account, uid, aud=stack.project_id), key, account["private_key_id"])


def _expired(stack, account, key, uid):
    now = int(time.time())
    return sign(token_payload(account, uid, iat=now - 7200, exp=now - 3600), key, account["private_key_id"])


def _lifetime_over_an_hour(stack, account, key, uid):
    now = int(time.time())
    return sign(token_payload(account, uid, iat=now - 60, exp=now + 3600), key, account["private_key_id"])


def _lifetime_overflowing_int64(stack, account, key, uid):
    # exp - iat does not fit in 64 bits: this once trapped the directory.
    return sign(token_payload(account, uid, iat=-9_000_000_000_000_000_000, exp=9_000_000_000_000_000_000), key,
                account["private_key_id"])


def _issued_in_the_future(stack, account, key, uid):
    now = int(time.time())
    return sign(token_payload(account, uid, iat=now + 1800, exp=now + 2400), key, account["private_key_id"])


def _iss_not_client_email(stack, account, key, uid):
    return sign(token_payload(account, uid, iss="someone@example.com"), key, account["private_key_id"])


def _sub_not_client_email(stack, account, key, uid):
    return sign(token_payload(account, uid, sub="someone@example.com"), key, account["private_key_id"])


def _uid_too_long(stack, account, key, uid):
    return sign(token_payload(account, uid + "x" * 129), key, account["private_key_id"])


def _emulator_sdk(stack, account, key, uid):
    return emulator_mode_token(stack, account, uid)


REFUSED = {
    "emulator-sdk-alg-none": _emulator_sdk,
    "alg-none-real-kid": _alg_none_real_kid,
    "hs256-public-key": _hs256_with_public_key,
    "foreign-key-real-kid": _foreign_key_real_kid,
    "foreign-key-no-kid": _foreign_key_no_kid,
    "unknown-kid": _unknown_kid,
    "edited-payload": _edited_payload,
    "wrong-aud": _wrong_aud,
    "aud-project-id": _project_id_aud,
    "expired": _expired,
    "lifetime-over-3600": _lifetime_over_an_hour,
    "lifetime-overflowing-int64": _lifetime_overflowing_int64,
    "iat-in-future": _issued_in_the_future,
    "iss-not-client-email": _iss_not_client_email,
    "sub-not-client-email": _sub_not_client_email,
    "uid-over-128": _uid_too_long,
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_invalid_custom_tokens_are_refused(stack, client, admin, project_account, project_key, case):
    uid = new_uid("bad")
    token = REFUSED[case](stack, project_account, project_key, uid)
    expect_error(sign_in_raw(client, token), "INVALID_CUSTOM_TOKEN")
    assert admin_users(admin, None, uid) == [], f"{case}: a user was created"


@pytest.mark.parametrize("garbage", ["garbage", "a.b.c", "eyJhbGciOiJSUzI1NiJ9.e30.", "{\"uid\":\"x\"}"])
def test_garbage_is_an_invalid_custom_token(client, garbage):
    expect_error(sign_in_raw(client, garbage), "INVALID_CUSTOM_TOKEN")


def test_request_and_claims_errors(client, admin, project_account, project_key):
    kid = project_account["private_key_id"]
    expect_error(sign_in_raw(client, None), "MISSING_CUSTOM_TOKEN")
    expect_error(sign_in_raw(client, ""), "MISSING_CUSTOM_TOKEN")
    expect_error(sign_in_raw(client, sign(token_payload(project_account, None), project_key, kid)),
                 "MISSING_IDENTIFIER")

    uid = new_uid("claims")
    # The reserved names of docs/protocol/tokens.md#id-tokens: a custom claim may not add the account's email, its
    # verification, a phone number or `provider_id` to a token (the outside review injected them for a user
    # without an email).
    for name, value in (("firebase", {"sign_in_provider": "password"}), ("iss", "https://evil.example"),
                        ("email", "victim@example.com"), ("email_verified", True),
                        ("phone_number", "+15555550100"), ("provider_id", "anonymous")):
        resp = sign_in_raw(client, sign(token_payload(project_account, uid, claims={"ok": 1, name: value}),
                                        project_key, kid))
        expect_error(resp, "FORBIDDEN_CLAIM")
        assert name in resp.json()["error"]["message"], describe(resp)
    for claims in ([1, 2], "role=admin"):
        expect_error(sign_in_raw(client, sign(token_payload(project_account, uid, claims=claims),
                                              project_key, kid)), "INVALID_CLAIMS")
    # The same names through the admin API's custom claims (Admin SDK `set_custom_user_claims`).
    created = expect_ok(admin.request("POST", f"/v1/projects/{admin.stack.project_id}/accounts", json={}))
    for name in ("email", "email_verified", "phone_number", "provider_id"):
        resp = admin.request("POST", f"/v1/projects/{admin.stack.project_id}/accounts:update", json={
            "localId": created["localId"], "customAttributes": json.dumps({name: "x"})})
        expect_error(resp, "FORBIDDEN_CLAIM")
        assert resp.json()["error"]["message"] == f"FORBIDDEN_CLAIM : {name}", describe(resp)
    # Reserved names with control or invisible characters (issue 35): a verifier that reads names as C
    # strings, or drops invisible characters, would see `email`.
    for name in ("email\u0000", "email\u0000x", "\u200bemail", "role\u0007", "admin\u202e"):
        resp = sign_in_raw(client, sign(token_payload(project_account, uid, claims={name: "victim@example.com"}),
                                        project_key, kid))
        expect_error(resp, "INVALID_CLAIMS")
        resp = admin.request("POST", f"/v1/projects/{admin.stack.project_id}/accounts:update", json={
            "localId": created["localId"], "customAttributes": json.dumps({name: "victim@example.com"})})
        expect_error(resp, "INVALID_CLAIMS")
    too_large = {"blob": "x" * 1001}
    expect_error(sign_in_raw(client, sign(token_payload(project_account, uid, claims=too_large),
                                          project_key, kid)), "CLAIMS_TOO_LARGE")
    assert admin_users(admin, None, uid) == []


def test_deleted_service_account_tokens_stop_working(stack, client, admin, service_accounts,
                                                     default_users):
    account = service_accounts.create(displayName="short-lived")
    key = private_key_of(account)
    uid = new_uid()
    default_users.append(uid)
    token = sign(token_payload(account, uid), key, account["private_key_id"])
    assert sign_in(client, token)["isNewUser"] is True

    resp = service_accounts.delete_raw(account)
    assert expect_ok(resp) == {}, describe(resp)
    expect_error(sign_in_raw(client, token), "INVALID_CUSTOM_TOKEN")
    expect_error(sign_in_raw(client, sign(token_payload(account, uid), key, None)), "INVALID_CUSTOM_TOKEN")
    listed = list_accounts(admin.request, accounts_path(stack))
    assert account["accountId"] not in [a["accountId"] for a in listed]

    err = expect_status_error(service_accounts.delete_raw(account), 404, "NOT_FOUND")
    assert err["message"].split(" : ")[0] == "CONFIGURATION_NOT_FOUND", err


# --------------------------------------------------------------------------------------
# Registering an existing key, listing, scoped admin credentials
# --------------------------------------------------------------------------------------

def test_registering_an_existing_public_key(stack, client, verifier, service_accounts, default_users):
    key = rsa_key()
    account = service_accounts.create(displayName="my own key", publicKeyPem=public_pem(key))
    assert "private_key" not in account, "Tessera never had the private key"
    assert account["type"] == "service_account" and account["project_id"] == stack.project_id
    assert KEY_ID.match(account["private_key_id"]), account["private_key_id"]
    assert "@" in account["client_email"] and account["displayName"] == "my own key"
    assert account["name"] == f"projects/{stack.project_id}/serviceAccounts/{account['accountId']}"

    uid = new_uid("own")
    default_users.append(uid)
    now = int(time.time())
    payload = {"iss": account["client_email"], "sub": account["client_email"], "aud": AUDIENCE,
               "uid": uid, "iat": now, "exp": now + 600, "claims": {"source": "own-key"}}
    token = jwt.encode(payload, key, algorithm="RS256", headers={"kid": account["private_key_id"]})
    data = sign_in(client, token)
    assert data["isNewUser"] is True
    claims = verifier.verify(data["idToken"])
    assert claims["sub"] == uid and claims["source"] == "own-key"
    assert claims["firebase"]["sign_in_provider"] == "custom"

    body = {"displayName": "broken", "publicKeyPem": "not a pem"}
    expect_error(service_accounts.create_raw(body=body), "INVALID_CONFIG")
    armored_garbage = "-----BEGIN PUBLIC KEY-----\nAAAAAAAAAAAA\n-----END PUBLIC KEY-----\n"
    expect_error(service_accounts.create_raw(body={"displayName": "broken", "publicKeyPem": armored_garbage}),
                 "INVALID_CONFIG")


def test_lists_show_public_data_only(stack, admin, make_tenant, service_accounts, project_account,
                                     project_key):
    listed = list_accounts(admin.request, accounts_path(stack))
    [entry] = [a for a in listed if a["accountId"] == project_account["accountId"]]
    assert entry["name"] == project_account["name"]
    assert entry["displayName"] == project_account["displayName"]
    assert entry["clientEmail"] == project_account["client_email"]
    assert entry["clientId"] == project_account["client_id"]
    assert entry["privateKeyId"] == project_account["private_key_id"]
    assert "tenantId" not in entry
    assert isinstance(entry.get("createTime"), str) and RFC3339.match(entry["createTime"]), entry
    listed_key = serialization.load_pem_public_key(entry["publicKeyPem"].encode())
    assert listed_key.public_numbers() == project_key.public_key().public_numbers()

    tenant_id = make_tenant()["tenantId"]
    first = service_accounts.create(tenant_id, displayName="one")
    own_key = rsa_key()
    second = service_accounts.create(tenant_id, displayName="two", publicKeyPem=public_pem(own_key))
    in_tenant = list_accounts(admin.request, accounts_path(stack, tenant_id))
    assert sorted(a["accountId"] for a in in_tenant) == sorted([first["accountId"], second["accountId"]])
    assert all(a["tenantId"] == tenant_id for a in in_tenant), in_tenant
    [two] = [a for a in in_tenant if a["accountId"] == second["accountId"]]
    assert serialization.load_pem_public_key(two["publicKeyPem"].encode()).public_numbers() \
        == own_key.public_key().public_numbers()
    # The project-level path is the default scope: tenant accounts are not in it.
    project_ids = {a["accountId"] for a in list_accounts(admin.request, accounts_path(stack))}
    assert first["accountId"] not in project_ids and second["accountId"] not in project_ids


def test_tenant_admin_credential_manages_only_its_tenants_accounts(stack, client, admin, make_tenant,
                                                                   service_accounts, project_account):
    p = stack.project_id
    own, other = make_tenant()["tenantId"], make_tenant()["tenantId"]
    other_account = service_accounts.create(other, displayName="other")
    secret = expect_ok(admin.request("POST", f"/v2/projects/{p}/tenants/{own}/adminCredentials",
                                     json={"displayName": "sa manager"}))["secret"]
    call = as_credential(stack, secret)

    mine = service_accounts.create(own, call=call, displayName="by tenant admin")
    assert mine["tenantId"] == own and "private_key" in mine
    listed = list_accounts(call, accounts_path(stack, own))
    assert [a["accountId"] for a in listed] == [mine["accountId"]]

    # Its key works in its tenant.
    uid = new_uid("tcred")
    token = sign(token_payload(mine, uid, tenant_id=own), private_key_of(mine), mine["private_key_id"])
    assert sign_in(client, token, own)["isNewUser"] is True

    forbidden = [
        ("POST", accounts_path(stack), {"displayName": "nope"}),
        ("GET", accounts_path(stack), None),
        ("DELETE", f"{accounts_path(stack)}/{project_account['accountId']}", None),
        ("POST", accounts_path(stack, other), {"displayName": "nope"}),
        ("GET", accounts_path(stack, other), None),
        ("DELETE", f"{accounts_path(stack, other)}/{other_account['accountId']}", None),
    ]
    for method, path, body in forbidden:
        resp = call(method, path, json=body)
        assert resp.status_code == 403, f"{method} {path}: {describe(resp)}"
        assert resp.json()["error"]["message"] == "INSUFFICIENT_PERMISSION", describe(resp)
    # Naming another tenant's account under its own path finds nothing.
    resp = call("DELETE", f"{accounts_path(stack, own)}/{other_account['accountId']}")
    assert resp.status_code in (403, 404), describe(resp)
    assert other_account["accountId"] in [a["accountId"] for a in list_accounts(admin.request,
                                                                               accounts_path(stack, other))]
    assert project_account["accountId"] in [a["accountId"] for a in list_accounts(admin.request,
                                                                                 accounts_path(stack))]

    assert expect_ok(service_accounts.delete_raw(mine, call=call)) == {}
    assert list_accounts(call, accounts_path(stack, own)) == []
    expect_error(sign_in_raw(client, token, own), "INVALID_CUSTOM_TOKEN")


# --------------------------------------------------------------------------------------
# Self-service switches and disabled users
# --------------------------------------------------------------------------------------

def test_signup_switch_and_disabled_users(stack, client, admin, verifier, make_tenant, service_accounts):
    p = stack.project_id
    tenant_id = make_tenant(disabledUserSignup=True)["tenantId"]
    account = service_accounts.create(tenant_id)
    key = private_key_of(account)

    def token_for(uid: str) -> str:
        return sign(token_payload(account, uid, tenant_id=tenant_id, claims={"tier": "gold"}), key,
                    account["private_key_id"])

    newcomer = new_uid("new")
    expect_error(sign_in_raw(client, token_for(newcomer), tenant_id), "ADMIN_ONLY_OPERATION")
    assert admin_users(admin, tenant_id, newcomer) == []

    existing = new_uid("old")
    created = expect_ok(admin.request("POST", f"/v1/projects/{p}/tenants/{tenant_id}/accounts",
                                      json={"localId": existing}))
    assert created["localId"] == existing
    data = sign_in(client, token_for(existing), tenant_id)
    assert data["isNewUser"] is False
    claims = verifier.verify(data["idToken"])
    assert claims["sub"] == existing and claims["firebase"]["tenant"] == tenant_id
    assert claims["firebase"]["sign_in_provider"] == "custom" and claims["tier"] == "gold"
    [user] = admin_users(admin, tenant_id, existing)
    assert user["customAuth"] is True

    admin_update(admin, tenant_id, localId=existing, disableUser=True)
    expect_error(sign_in_raw(client, token_for(existing), tenant_id), "USER_DISABLED")
    expect_error(client.refresh_raw(data["refreshToken"]), "USER_DISABLED")
