"""Issue 27 part 2, the acceptance test of `tessera export` / `tessera import`: a tenant with every kind
of user, its sign-in settings, identity providers and a mail template is exported from the test stack
by the operators' command line and imported into a fresh, empty stack (fresh_stack.py), where every
user signs in as before.

The source tenant (password sign-up, email link and anonymous on; google.com and an OIDC provider; a
custom EMAIL_SIGNIN mail template) holds: an email+password user, an anonymous user, an email-link-only
user, a google.com user with a password linked, an OIDC user, a custom-token user (a registered
service-account key), a user with custom claims, a disabled user, a phone-number user, users imported by
accounts:batchCreate with BCRYPT, PBKDF2_SHA256, HMAC_SHA256, STANDARD_SCRYPT and foreign-key SCRYPT
hashes (kept as imported until their first sign-in, so exported with a per-user `tesseraPasswordHash`),
users imported with `tessera import --from-firebase` from a Firebase CLI export and its console hash
config (Firebase scrypt, mem_cost 14), and BULK_USERS plain users so that an import takes three batches.

`tessera export --tenant T --output F` writes F with mode 0600 in Firebase's export format (`users[]`
with localId, email, passwordHash, salt, providerUserInfo…, top-level `hashConfig`; what Firebase's
format cannot carry under `tessera`). `tessera import F --create-tenant` into the fresh stack is stopped
after its first batch (the hidden testing option --stop-after-batches), resumed and stopped after the
second, then resumed from the state file (F.import-state.json) the first run left, as a run killed
between a batchCreate and recording it would: it ends in the one tenant it created, the batch sent twice
counted as already present, no duplicate. In the new tenant every old password signs in (all hash
kinds), google.com and the OIDC provider sign in to the same localId, the custom-token user signs in
with its backend's key registered again, the email link arrives with the custom template and signs in,
the disabled users stay disabled, custom claims reach the ID token, profiles and createdAt survive, no
account became anonymous, and the provider configs, mail template and sign-in settings came across. An
import where one user fails exits 4 and imports the others.

The CLI is `<repo>/.build/debug/tessera` unless TESSERA_CLI names another binary. About 20 s, the fresh
stack's start included.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
import stat
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jwt
import pytest
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from conftest import (REPO_ROOT, Admin, Client, describe, expect_error, expect_ok, oob_link, tenant_body,
                      unique_name, unverified_claims)
from fake_idp import configure_provider, idp_config_path, sign_in_with_idp
from fresh_stack import FreshStack

CLI = Path(os.environ.get("TESSERA_CLI") or REPO_ROOT / ".build" / "debug" / "tessera")
FRESH_PORT_OFFSET = 300  # fresh_stack.py: +300 is the CLI import target
BULK_USERS = 2500  # plain users (no password): with the special users, an import of three batches
CLI_TIMEOUT = 300  # seconds, per CLI run
OIDC_PROVIDER = "oidc.transfer"
CONTINUE = "http://localhost:3000/finish"
EXIT_OK, EXIT_PARTIAL = 0, 4

# The published firebase/scrypt test vector (docs/protocol/accounts.md#firebase-scrypt): checks this file's
# Firebase scrypt.
VECTOR = {
    "signer": "jxspr8Ki0RYycVU8zykbdLGjFQ3McFUH0uiiTvC8pVMXAn210wjLNmdZJzxUECKbm0QsEmYUSDzZvpjeJ9WmXA==",
    "separator": "Bw==", "rounds": 8, "mem_cost": 14, "salt": "42xEC+ixf3L2lw==", "password": "user1password",
    "hash": "lSrfV15cpx95/sZS2W9c9Kp6i/LVgQNDNC/qzrCnh1SAyZvqmZqAjTdn3aoItz+VHjoZilo78198JAdRuid5lQ==",
}

TIMINGS: dict[str, float] = {}


# --------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------

def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def unb64(text: str) -> bytes:
    """Standard or URL-safe base64, padded or not (Firebase exports use both alphabets)."""
    text = text.replace("-", "+").replace("_", "/")
    return base64.b64decode(text + "=" * (-len(text) % 4))


def firebase_scrypt(password: str, salt: bytes, key: bytes, separator: bytes, rounds: int, mem_cost: int) -> bytes:
    """Firebase scrypt (docs/protocol/accounts.md#firebase-scrypt): AES-256-CTR (zero counter) of the signer key under
    scrypt(password, salt + separator, N = 2^mem_cost, r = rounds, p = 1)."""
    derived = hashlib.scrypt(password.encode(), salt=salt + separator, n=2 ** mem_cost, r=rounds, p=1, dklen=32,
                             maxmem=64 * 1024 * 1024)
    encryptor = Cipher(algorithms.AES(derived), modes.CTR(b"\0" * 16)).encryptor()
    return encryptor.update(key) + encryptor.finalize()


CUSTOM_TOKEN_AUDIENCE = "https://identitytoolkit.googleapis.com/google.identity.identitytoolkit.v1.IdentityToolkit"


def register_service_account(admin: Admin, tenant_id: str, key: rsa.RSAPrivateKey) -> dict:
    """Registers the public half of ``key`` as a service account of the tenant (docs/protocol/admin.md#tesseras-own-admin-resources)."""
    pem = key.public_key().public_bytes(serialization.Encoding.PEM,
                                        serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    path = f"/v2/projects/{admin.stack.project_id}/tenants/{tenant_id}/serviceAccounts"
    return expect_ok(admin.request("POST", path, json={"displayName": "transfer backend", "publicKeyPem": pem}))


def custom_token_sign_in(client: Client, tenant_id: str, account: dict, key: rsa.RSAPrivateKey,
                         uid: str) -> requests.Response:
    """accounts:signInWithCustomToken with a token the backend signs with its service-account key (docs/protocol/tokens.md#custom-tokens)."""
    now = int(time.time())
    payload = {"iss": account["client_email"], "sub": account["client_email"], "aud": CUSTOM_TOKEN_AUDIENCE,
               "iat": now, "exp": now + 3600, "uid": uid, "tenant_id": tenant_id}
    token = jwt.encode(payload, key, algorithm="RS256", headers={"kid": account["private_key_id"]})
    return client.post("/v1/accounts:signInWithCustomToken",
                       {"token": token, "tenantId": tenant_id, "returnSecureToken": True})


def sign_in(client: Client, tenant_id: str, email: str, password: str) -> requests.Response:
    return client.post("/v1/accounts:signInWithPassword",
                       {"tenantId": tenant_id, "email": email, "password": password, "returnSecureToken": True})


def send_email_link(client: Client, tenant_id: str, email: str) -> requests.Response:
    return client.post("/v1/accounts:sendOobCode", {"tenantId": tenant_id, "requestType": "EMAIL_SIGNIN",
                                                    "email": email, "continueUrl": CONTINUE,
                                                    "canHandleCodeInApp": True})


def email_link_sign_in(client: Client, tenant_id: str, email: str, code: str) -> requests.Response:
    return client.post("/v1/accounts:signInWithEmailLink",
                       {"tenantId": tenant_id, "email": email, "oobCode": code, "returnSecureToken": True})


def tenant_path(admin: Admin, tenant_id: str) -> str:
    return f"/v1/projects/{admin.stack.project_id}/tenants/{tenant_id}"


def admin_create(admin: Admin, tenant_id: str, **fields: Any) -> str:
    resp = admin.request("POST", f"{tenant_path(admin, tenant_id)}/accounts", json=fields)
    return expect_ok(resp)["localId"]


def admin_update(admin: Admin, tenant_id: str, local_id: str, **fields: Any) -> dict:
    return expect_ok(admin.request("POST", admin.accounts_path(tenant_id, "update"),
                                   json={"localId": local_id, **fields}))


def batch_create(admin: Admin, tenant_id: str, users: list[dict], **hash_settings: Any) -> None:
    resp = admin.request("POST", admin.accounts_path(tenant_id, "batchCreate"),
                         json={**hash_settings, "users": users}, timeout=120)
    data = expect_ok(resp)
    assert not data.get("error"), describe(resp)


def all_users(admin: Admin, tenant_id: str, *, foreign: bool = False) -> list[dict]:
    """Every user of a tenant (accounts:batchGet, pages of 1000); with ``foreign``, the
    `tesseraPasswordHash` of hashes the tenant's hash config does not describe."""
    users: list[dict] = []
    token = ""
    while True:
        params = {"maxResults": "1000"}
        if token:
            params["nextPageToken"] = token
        if foreign:
            params["tesseraForeignHashes"] = "true"
        resp = admin.request("GET", admin.accounts_path(tenant_id, "batchGet"), params=params, timeout=120)
        data = expect_ok(resp)
        page = data.get("users", [])
        users.extend(page)
        token = data.get("nextPageToken") or ""
        if not page or not token:
            return users


def lookup(admin: Admin, tenant_id: str, local_ids: list[str]) -> dict[str, dict]:
    found: dict[str, dict] = {}
    for start in range(0, len(local_ids), 100):
        for user in admin.lookup_users(tenant_id, local_ids[start:start + 100]):
            found[user["localId"]] = user
    return found


def custom_templates(admin: Admin, tenant_id: str) -> dict[str, dict]:
    path = f"/v2/projects/{admin.stack.project_id}/tenants/{tenant_id}/mailTemplates"
    return {t["requestType"]: t for t in expect_ok(admin.request("GET", path))["templates"] if t.get("custom")}


def provider_configs(admin: Admin, tenant_id: str) -> dict[str, dict]:
    """The tenant's provider configs by id, without the `name` (it carries the tenant id)."""
    configs: dict[str, dict] = {}
    for kind in ("defaultSupportedIdpConfigs", "oauthIdpConfigs"):
        resp = admin.request("GET", idp_config_path(admin.stack, kind, tenant_id))
        for config in expect_ok(resp).get(kind, []):
            configs[config["name"].rsplit("/", 1)[-1]] = {k: v for k, v in config.items() if k != "name"}
    return configs


# --------------------------------------------------------------------------------------
# The command line
# --------------------------------------------------------------------------------------

@dataclass
class CliRun:
    args: list[str]
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    def __str__(self) -> str:
        return (f"tessera {' '.join(self.args)} exited {self.returncode} after {self.seconds:.1f}s\n"
                f"stdout:\n{self.stdout[-4000:]}\nstderr:\n{self.stderr[-4000:]}")

    def documents(self) -> list[Any]:
        """The JSON of --json output: one document, or one per line (progress events, then a summary)."""
        text = self.stdout.strip()
        try:
            return [json.loads(text)]
        except ValueError:
            pass
        documents = []
        for line in text.splitlines():
            line = line.strip()
            if line.startswith(("{", "[")):
                try:
                    documents.append(json.loads(line))
                except ValueError:
                    pass
        return documents


def cli_env(target) -> dict[str, str]:
    """The caller's environment without any TESSERA_* setting, plus the target stack's admin plane."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TESSERA_")}
    env.update({"TESSERA_ADMIN_URL": target.admin_url, "TESSERA_ADMIN_TOKEN": target.admin_token,
                "TESSERA_PROJECT_ID": target.project_id})
    return env


def run_cli(target, *args: str, timeout: float = CLI_TIMEOUT) -> CliRun:
    started = time.monotonic()
    proc = subprocess.run([str(CLI), *args], env=cli_env(target), capture_output=True, text=True, timeout=timeout)
    done = CliRun(list(args), proc.returncode, proc.stdout, proc.stderr, time.monotonic() - started)
    assert target.admin_token not in proc.stdout + proc.stderr, f"the CLI printed the admin token: {done}"
    return done


def summary_of(run: CliRun) -> dict:
    """The one JSON document `tessera import --json` prints."""
    documents = [d for d in run.documents() if isinstance(d, dict)]
    assert documents, f"no JSON summary on stdout: {run}"
    return documents[-1]


def assert_stopped(run: CliRun) -> None:
    """`--stop-after-batches` stops the import with a STOPPED error (exit 1), to be run again."""
    assert run.returncode not in (EXIT_OK, EXIT_PARTIAL, 64), str(run)
    assert "STOPPED" in run.stderr, str(run)


@pytest.fixture(scope="module")
def cli() -> Path:
    if not os.access(CLI, os.X_OK):
        pytest.fail(f"the tessera CLI {CLI} is missing (build it, or set TESSERA_CLI)", pytrace=False)
    return CLI


# --------------------------------------------------------------------------------------
# The source tenant: every kind of user
# --------------------------------------------------------------------------------------

@dataclass
class User:
    role: str
    local_id: str
    email: str | None = None
    password: str | None = None
    algorithm: str | None = None  # the hash algorithm it was imported with, if any
    provider: str | None = None  # a federated provider linked to it
    sub: str | None = None  # its subject there
    claims: dict | None = None
    disabled: bool = False
    phone: str | None = None


@dataclass
class Source:
    tenant: dict
    run: str
    users: dict[str, User] = field(default_factory=dict)
    bulk_ids: list[str] = field(default_factory=list)
    firebase_key: bytes = b""
    template_marker: str = ""
    backend_key: rsa.RSAPrivateKey | None = None  # signs the custom-token user's tokens

    @property
    def tenant_id(self) -> str:
        return self.tenant["tenantId"]

    def add(self, user: User) -> User:
        assert user.role not in self.users
        self.users[user.role] = user
        return user


def import_hashed_users(admin: Admin, source: Source) -> None:
    """accounts:batchCreate with five hash algorithms; each user's hash stays as imported (and is
    exported as `tesseraPasswordHash`) until its first sign-in."""
    import bcrypt

    run, tenant_id = source.run, source.tenant_id

    def user(role: str, algorithm: str, password: str, hash_bytes: bytes, salt: bytes | None, **extra) -> dict:
        record = source.add(User(role, f"imp-{role}-{run}", f"{role}-{run}@example.com", password, algorithm))
        body = {"localId": record.local_id, "email": record.email, "passwordHash": b64(hash_bytes),
                "displayName": f"Imported {role}", "emailVerified": True, "createdAt": 1_500_000_000_000, **extra}
        if salt is not None:
            body["salt"] = b64(salt)
        return body

    password = "bcrypt pass 1"
    batch_create(admin, tenant_id, [user("bcrypt", "BCRYPT", password,
                                         bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=4)), None)],
                 hashAlgorithm="BCRYPT")

    password, salt = "pbkdf2 pass 1", os.urandom(16)
    batch_create(admin, tenant_id, [user("pbkdf2", "PBKDF2_SHA256", password,
                                         hashlib.pbkdf2_hmac("sha256", password.encode(), salt, 1000), salt)],
                 hashAlgorithm="PBKDF2_SHA256", rounds=1000)

    password, salt, key = "hmac pass 1", os.urandom(12), os.urandom(32)
    batch_create(admin, tenant_id, [user("hmac", "HMAC_SHA256", password,
                                         hmac.new(key, salt + password.encode(), hashlib.sha256).digest(), salt,
                                         customAttributes=json.dumps({"imported": True}))],
                 hashAlgorithm="HMAC_SHA256", signerKey=b64(key))

    password, salt = "standard scrypt pass 1", os.urandom(16)
    batch_create(admin, tenant_id, [user("stdscrypt", "STANDARD_SCRYPT", password,
                                         hashlib.scrypt(password.encode(), salt=salt, n=1024, r=8, p=1, dklen=64),
                                         salt)],
                 hashAlgorithm="STANDARD_SCRYPT", cpuMemCost=1024, blockSize=8, parallelization=1, dkLen=64)

    # Firebase scrypt with another project's key (not the tenant's): a foreign hash.
    password, salt, key, separator = "foreign scrypt pass 1", os.urandom(10), os.urandom(64), b"\x07"
    batch_create(admin, tenant_id, [user("scrypt", "SCRYPT", password,
                                         firebase_scrypt(password, salt, key, separator, 8, 14), salt,
                                         phoneNumber=f"+1556{secrets.randbelow(10 ** 7):07d}")],
                 hashAlgorithm="SCRYPT", signerKey=b64(key), saltSeparator=b64(separator), rounds=8, memoryCost=14)


def firebase_export(source: Source, directory: Path) -> tuple[Path, Path]:
    """A Firebase CLI export (auth:export JSON) of three users and the project's hash config as the
    Firebase console shows it ("Password hash parameters"): Firebase scrypt, rounds 8, mem_cost 14."""
    run = source.run
    key, separator = os.urandom(64), b"\x07"
    source.firebase_key = key
    entries = []
    people = [("fbplain", None, {"customAttributes": json.dumps({"tier": "gold"})}),
              ("fbgoogle", f"fb-google-{run}", {"photoUrl": f"https://img.example/{run}/fb.png"}),
              ("fbdisabled", None, {"disabled": True})]
    for number, (role, google_sub, extra) in enumerate(people):
        password, salt = f"firebase {role} pw", os.urandom(8)
        email = f"{role}-{run}@{'gmail.com' if google_sub else 'example.com'}"
        user = source.add(User(role, f"fb{number}{uuid.uuid4().hex[:24]}", email, password, "SCRYPT",
                               provider="google.com" if google_sub else None, sub=google_sub,
                               disabled=bool(extra.get("disabled")),
                               claims=json.loads(extra["customAttributes"]) if "customAttributes" in extra else None))
        providers = [{"providerId": "password", "rawId": email, "email": email, "displayName": f"Firebase {role}"}]
        if google_sub:
            providers.append({"providerId": "google.com", "rawId": google_sub, "email": email,
                              "displayName": f"Firebase {role}", "photoUrl": extra["photoUrl"]})
        entry = {
            "localId": user.local_id, "email": email, "emailVerified": True,
            "passwordHash": b64(firebase_scrypt(password, salt, key, separator, 8, 14)), "salt": b64(salt),
            "displayName": f"Firebase {role}", "lastSignedInAt": "1650000000000", "createdAt": "1600000000000",
            "providerUserInfo": providers, **extra,
        }
        entries.append(entry)
    users_file = directory / "firebase-users.json"
    users_file.write_text(json.dumps({"users": entries}, indent=2))
    hash_file = directory / "firebase-hash-config.txt"
    hash_file.write_text(console_hash_config(key, separator))
    return users_file, hash_file


def console_hash_config(key: bytes, separator: bytes) -> str:
    """A Firebase project's password hash parameters as its console shows them."""
    return ("hash_config {\n"
            "  algorithm: SCRYPT,\n"
            f"  base64_signer_key: {b64(key)},\n"
            f"  base64_salt_separator: {b64(separator)},\n"
            "  rounds: 8,\n"
            "  mem_cost: 14,\n"
            "}\n")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("cli-transfer")


@pytest.fixture(scope="module")
def source(request, cli, stack, admin, fake_idp, mail_sink, workdir) -> Source:
    started = time.monotonic()
    run = uuid.uuid4().hex[:8]
    tenant = admin.create_tenant(tenant_body(displayName=unique_name("xfer"), allowPasswordSignup=True,
                                             enableEmailLinkSignin=True, enableAnonymousUser=True))
    src = Source(tenant, run)
    request.addfinalizer(lambda: admin.delete_tenant(src.tenant_id))
    tenant_id, client = src.tenant_id, Client(stack)

    configure_provider(admin, fake_idp, "google.com", tenant_id=tenant_id)
    configure_provider(admin, fake_idp, OIDC_PROVIDER, tenant_id=tenant_id, display_name="Transfer OIDC",
                       trusted_email_domains=["transfer.example"])
    src.template_marker = f"transfer-{run}"
    template = {"subject": "Your %APP_NAME% sign-in link",
                "body": f"Hello %EMAIL%,\n\nsign in with %LINK% ({src.template_marker}).\n"}
    expect_ok(admin.request("PATCH", f"/v2/projects/{stack.project_id}/tenants/{tenant_id}/mailTemplates/EMAIL_SIGNIN",
                            json=template))

    # Email + password (signUp), with a profile.
    pw = src.add(User("password", "", f"password-{run}@example.com", "plain password 1"))
    data = expect_ok(client.post("/v1/accounts:signUp", {"tenantId": tenant_id, "email": pw.email,
                                                         "password": pw.password, "displayName": "Pass Word",
                                                         "returnSecureToken": True}))
    pw.local_id = data["localId"]
    admin_update(admin, tenant_id, pw.local_id, photoUrl=f"https://img.example/{run}/pw.png")

    # Anonymous.
    src.add(User("anonymous", client.sign_up_anonymous(tenant_id).local_id))

    # Email link only (passwordless).
    link = src.add(User("emaillink", "", f"link-{run}@example.com"))
    expect_ok(send_email_link(client, tenant_id, link.email))
    [mail] = mail_sink.wait_for(link.email)
    assert src.template_marker in mail["body"], mail
    data = expect_ok(email_link_sign_in(client, tenant_id, link.email, oob_link(mail)[1]["oobCode"]))
    assert data.get("isNewUser") is True, data
    link.local_id = data["localId"]

    # google.com, then a password linked to it.
    fed = src.add(User("google", "", f"fed-{run}@gmail.com", "federated password 1", provider="google.com",
                       sub=f"g-{run}-{uuid.uuid4().hex[:8]}"))
    token = fake_idp.id_token("google.com", fed.sub, email=fed.email, name="Fed Eral",
                              picture=f"https://img.example/{run}/fed.png")
    data = expect_ok(sign_in_with_idp(client, "google.com", id_token=token, tenant_id=tenant_id))
    assert data.get("isNewUser") is True, data
    fed.local_id = data["localId"]
    expect_ok(client.post("/v1/accounts:update", {"tenantId": tenant_id, "idToken": data["idToken"],
                                                  "password": fed.password, "returnSecureToken": True}))

    # A generic OIDC provider.
    oidc = src.add(User("oidc", "", f"oidc-{run}@transfer.example", provider=OIDC_PROVIDER,
                        sub=f"o-{run}-{uuid.uuid4().hex[:8]}"))
    token = fake_idp.id_token(OIDC_PROVIDER, oidc.sub, email=oidc.email, name="Oi Dee")
    oidc.local_id = expect_ok(sign_in_with_idp(client, OIDC_PROVIDER, id_token=token, tenant_id=tenant_id))["localId"]

    # Custom claims.
    claims = src.add(User("claims", "", f"claims-{run}@example.com", "claims password 1",
                          claims={"role": "admin", "level": 3, "teams": ["a", "b"]}))
    claims.local_id = admin_create(admin, tenant_id, email=claims.email, password=claims.password,
                                   emailVerified=True, displayName="Claire Claims")
    admin_update(admin, tenant_id, claims.local_id, customAttributes=json.dumps(claims.claims))

    # Disabled.
    off = src.add(User("disabled", "", f"disabled-{run}@example.com", "disabled password 1", disabled=True))
    off.local_id = admin_create(admin, tenant_id, email=off.email, password=off.password, disabled=True,
                                displayName="Dis Abled")

    # Phone number only (admin create).
    phone = src.add(User("phone", "", phone=f"+1555{secrets.randbelow(10 ** 7):07d}"))
    phone.local_id = admin_create(admin, tenant_id, phoneNumber=phone.phone, displayName="Phone Only",
                                  photoUrl=f"https://img.example/{run}/phone.png")

    # Phone second factors (admin create): they move with the user (docs/cli.md, "Export format").
    mfa = src.add(User("mfa", "", f"mfa-{run}@example.com", "factor password 1",
                       phone=f"+1650555{secrets.randbelow(10 ** 4):04d}"))
    mfa.local_id = admin_create(admin, tenant_id, email=mfa.email, password=mfa.password, emailVerified=True,
                                mfaInfo=[{"phoneInfo": mfa.phone, "displayName": "desk"},
                                         {"phoneInfo": f"+1650555{secrets.randbelow(10 ** 4):04d}"}])

    # Custom token only (a backend's service account): no email, no provider, not anonymous.
    src.backend_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    account = register_service_account(admin, tenant_id, src.backend_key)
    custom = src.add(User("custom", f"custom-{run}"))
    data = expect_ok(custom_token_sign_in(client, tenant_id, account, src.backend_key, custom.local_id))
    assert data.get("isNewUser") is True, data

    import_hashed_users(admin, src)

    # Plain users without a password, so that an import takes more than one batch.
    bulk_started = time.monotonic()
    for start in range(0, BULK_USERS, 1000):
        batch = [{"localId": f"bulk-{run}-{i:05d}", "email": f"bulk-{run}-{i:05d}@example.com",
                  "displayName": f"Bulk {i}"} for i in range(start, min(start + 1000, BULK_USERS))]
        batch_create(admin, tenant_id, batch)
        src.bulk_ids.extend(u["localId"] for u in batch)
    TIMINGS["source: bulk batchCreate"] = time.monotonic() - bulk_started

    # A Firebase CLI export and its console hash config, imported by the CLI.
    users_file, hash_file = firebase_export(src, workdir)
    done = run_cli(stack, "import", "--json", "--from-firebase", str(users_file), "--hash-config", str(hash_file),
                   "--tenant", tenant_id)
    TIMINGS["tessera import --from-firebase"] = done.seconds
    assert done.returncode == EXIT_OK, str(done)
    TIMINGS["source: setup in all"] = time.monotonic() - started
    return src


def expected_count(source: Source) -> int:
    return len(source.users) + len(source.bulk_ids)


# --------------------------------------------------------------------------------------
# Export
# --------------------------------------------------------------------------------------

@dataclass
class Export:
    path: Path
    document: dict
    run: CliRun

    def user(self, local_id: str) -> dict:
        found = [u for u in self.document["users"] if u.get("localId") == local_id]
        assert len(found) == 1, f"{local_id}: {len(found)} entries in the export"
        return found[0]

    def extra(self, local_id: str) -> dict:
        """What Firebase's format cannot carry, kept by Tessera for a user: its entry in
        `tessera.users`, or else the members of the user itself."""
        found = [u for u in (self.document.get("tessera") or {}).get("users") or [] if u.get("localId") == local_id]
        assert len(found) <= 1, f"{local_id}: {len(found)} entries in tessera.users"
        return found[0] if found else self.user(local_id)


@pytest.fixture(scope="module")
def export(cli, stack, source, workdir) -> Export:
    path = workdir / "export" / "tenant.json"
    path.parent.mkdir()
    done = run_cli(stack, "export", "--json", "--tenant", source.tenant_id, "--output", str(path))
    TIMINGS["tessera export"] = done.seconds
    assert done.returncode == EXIT_OK, str(done)
    assert path.is_file(), f"no export file at {path}: {done}"
    return Export(path, json.loads(path.read_text()), done)


def test_the_firebase_import_keeps_firebase_scrypt_hashes_until_sign_in(stack, admin, source):
    """`tessera import --from-firebase` read the Firebase CLI's export and the console's hash config:
    the users are there with their profiles, their hashes kept as Firebase scrypt (rounds 8, mem_cost 14,
    the Firebase project's key) for the directory to verify."""
    assert firebase_scrypt(VECTOR["password"], unb64(VECTOR["salt"]), unb64(VECTOR["signer"]),
                           unb64(VECTOR["separator"]), VECTOR["rounds"], VECTOR["mem_cost"]) == unb64(VECTOR["hash"])
    roles = ("fbplain", "fbgoogle", "fbdisabled")
    found = lookup(admin, source.tenant_id, [source.users[r].local_id for r in roles])
    assert len(found) == 3, found
    for role in roles:
        user, record = source.users[role], found[source.users[role].local_id]
        assert record["email"] == user.email and record["emailVerified"] is True, record
        assert record["displayName"] == f"Firebase {role}" and record["createdAt"] == "1600000000000", record
        assert record.get("disabled", False) is user.disabled, record
    assert json.loads(found[source.users["fbplain"].local_id].get("customAttributes", "{}")) == {"tier": "gold"}
    google = [p for p in found[source.users["fbgoogle"].local_id].get("providerUserInfo", [])
              if p["providerId"] == "google.com"]
    assert [p["rawId"] for p in google] == [source.users["fbgoogle"].sub], found

    exported = {u["localId"]: u for u in all_users(admin, source.tenant_id, foreign=True)
                if u["localId"] in {source.users[r].local_id for r in roles}}
    for role in roles:
        foreign = exported[source.users[role].local_id].get("tesseraPasswordHash")
        assert foreign, f"batchGet?tesseraForeignHashes=true has no tesseraPasswordHash: {exported}"
        assert foreign["hashAlgorithm"] == "SCRYPT" and foreign["rounds"] == 8 and foreign["memoryCost"] == 14, foreign
        assert unb64(foreign["signerKey"]) == source.firebase_key and unb64(foreign["saltSeparator"]) == b"\x07", foreign


def test_a_partial_failure_exits_4_and_imports_the_rest(stack, admin, client, make_tenant, workdir):
    """Exit status 4: a Firebase user whose email another account has fails, with its reason in the
    --json summary; the other user of the same batch goes in and signs in with its Firebase password."""
    tenant_id = make_tenant(allowPasswordSignup=True)["tenantId"]
    taken = f"taken-{uuid.uuid4().hex[:8]}@example.com"
    admin_create(admin, tenant_id, email=taken, password="the first owner 1")
    key, separator = os.urandom(64), b"\x07"
    users = []
    for email in (taken, f"free-{uuid.uuid4().hex[:8]}@example.com"):
        salt = os.urandom(8)
        users.append({"localId": f"fbp-{uuid.uuid4().hex[:16]}", "email": email,
                      "passwordHash": b64(firebase_scrypt("partial pw 1", salt, key, separator, 8, 14)),
                      "salt": b64(salt), "createdAt": "1600000000000"})
    users_file, hash_file = workdir / "partial-users.json", workdir / "partial-hash-config.txt"
    users_file.write_text(json.dumps({"users": users}))
    hash_file.write_text(console_hash_config(key, separator))
    done = run_cli(stack, "import", "--json", "--from-firebase", str(users_file), "--hash-config", str(hash_file),
                   "--tenant", tenant_id)
    assert done.returncode == EXIT_PARTIAL, str(done)
    summary = summary_of(done)
    assert summary["users"]["imported"] == 1 and summary["users"]["failed"] == 1, summary
    [failure] = summary["failures"]
    assert failure["id"] == users[0]["localId"] and "email exists" in failure["message"], summary
    assert not admin.lookup_users(tenant_id, [users[0]["localId"]])
    expect_ok(sign_in(client, tenant_id, users[1]["email"], "partial pw 1"))
    expect_ok(sign_in(client, tenant_id, taken, "the first owner 1"))


def test_export_is_private_and_in_firebase_format(stack, admin, source, export):
    mode = stat.S_IMODE(os.stat(export.path).st_mode)
    assert mode == 0o600, f"{export.path} has mode {oct(mode)}: an export holds password hashes"
    assert stack.admin_token not in export.path.read_text(), "the admin token is not written to the export"
    doc = export.document
    assert isinstance(doc.get("users"), list), list(doc)
    ids = [u.get("localId") for u in doc["users"]]
    assert len(ids) == len(set(ids)) == expected_count(source), (len(ids), len(set(ids)), expected_count(source))
    assert set(ids) == {u["localId"] for u in all_users(admin, source.tenant_id)}

    # The tenant's own hash config, as Firebase's hash parameters.
    config = doc.get("hashConfig")
    assert isinstance(config, dict), f"no top-level hashConfig: {list(doc)}"
    tenant_config = expect_ok(admin.get_tenant(source.tenant_id))["hashConfig"]
    assert config.get("algorithm") == "SCRYPT", config
    signer = config.get("signerKey") or config.get("base64_signer_key")
    separator = config.get("saltSeparator") or config.get("base64_salt_separator")
    rounds, mem_cost = config.get("rounds"), config.get("memoryCost", config.get("mem_cost"))
    assert signer and unb64(signer) == unb64(tenant_config["signerKey"]), (config, tenant_config)
    assert separator and unb64(separator) == unb64(tenant_config["saltSeparator"]), (config, tenant_config)
    assert int(rounds) == tenant_config["rounds"] and int(mem_cost) == tenant_config["memoryCost"], config

    # A password the tenant hashed: passwordHash + salt that Firebase scrypt with that config verifies.
    for role in ("password", "google", "claims", "disabled"):
        user, entry = source.users[role], export.user(source.users[role].local_id)
        assert entry.get("email") == user.email, entry
        assert entry.get("passwordHash") and entry.get("salt"), f"{role}: {entry}"
        assert "tesseraPasswordHash" not in entry, entry
        assert unb64(entry["passwordHash"]) == firebase_scrypt(
            user.password, unb64(entry["salt"]), unb64(signer), unb64(separator), int(rounds), int(mem_cost)), role
    # Imported hashes not re-made yet: per user, with the batchCreate settings that verify them.
    for user in source.users.values():
        if user.algorithm is None:
            continue
        entry = export.user(user.local_id)
        foreign = export.extra(user.local_id).get("tesseraPasswordHash")
        assert isinstance(foreign, dict), f"{user.role}: no tesseraPasswordHash: {entry}"
        assert foreign.get("hashAlgorithm") == user.algorithm and foreign.get("passwordHash"), foreign
        assert "passwordHash" not in entry, f"{user.role}: a foreign hash is not a Firebase-scrypt passwordHash"
    scrypt = export.extra(source.users["fbplain"].local_id)["tesseraPasswordHash"]
    assert unb64(scrypt["signerKey"]) == source.firebase_key and scrypt["memoryCost"] == 14, scrypt
    # Firebase's importer takes only these members and these providers; the rest is Tessera's.
    allowed = {"localId", "email", "emailVerified", "passwordHash", "salt", "displayName", "photoUrl",
               "lastSignedInAt", "createdAt", "phoneNumber", "disabled", "customAttributes", "providerUserInfo",
               "mfaInfo"}
    for entry in doc["users"]:
        assert set(entry) <= allowed, entry
        for provider in entry.get("providerUserInfo", []):
            assert provider["providerId"] in ("google.com", "facebook.com", "twitter.com", "github.com"), entry
    oidc = source.users["oidc"]
    assert (OIDC_PROVIDER, oidc.sub) in {(p.get("providerId"), p.get("rawId"))
                                         for p in export.extra(oidc.local_id).get("providerUserInfo", [])}

    fed = export.user(source.users["google"].local_id)
    assert {(p.get("providerId"), p.get("rawId")) for p in fed.get("providerUserInfo", [])} >= {
        ("google.com", source.users["google"].sub)}, fed
    claims = export.user(source.users["claims"].local_id)
    assert isinstance(claims.get("customAttributes"), str), claims
    assert json.loads(claims["customAttributes"]) == source.users["claims"].claims
    assert export.user(source.users["disabled"].local_id).get("disabled") is True
    assert export.user(source.users["phone"].local_id).get("phoneNumber") == source.users["phone"].phone
    anonymous = export.user(source.users["anonymous"].local_id)
    assert not anonymous.get("email") and not anonymous.get("providerUserInfo"), anonymous
    link = export.user(source.users["emaillink"].local_id)
    assert link.get("email") == source.users["emaillink"].email and link.get("emailVerified") is True, link
    assert not link.get("passwordHash") and not export.extra(link["localId"]).get("tesseraPasswordHash"), link
    for entry in doc["users"]:
        assert isinstance(entry.get("createdAt"), str) and entry["createdAt"].isdigit(), entry


# --------------------------------------------------------------------------------------
# Import into a fresh stack, interrupted and resumed
# --------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def fresh(stack, source, export):
    started = time.monotonic()
    with FreshStack(stack, port=stack.port + FRESH_PORT_OFFSET, name="transfer") as fresh_stack:
        TIMINGS["fresh stack up"] = time.monotonic() - started
        yield fresh_stack


@dataclass
class Imported:
    tenant_id: str
    first: CliRun
    resumed: CliRun
    state_file: Path
    admin: Admin
    client: Client


@pytest.fixture(scope="module")
def imported(cli, fresh, export) -> Imported:
    """`tessera import F --create-tenant` into the fresh stack, in batches of 1,000: stopped after its
    first batch (the hidden testing option --stop-after-batches), run again and stopped after the
    second, then the state file as the first run left it put back — what a run killed after its second
    batchCreate went through, before it recorded the batch, leaves (the state file is replaced
    atomically, so it is one or the other) — and run to the end."""
    fresh_admin = Admin(fresh.stack)
    total = len(export.document["users"])
    assert total > 2000, "the import takes three batches"
    state_file = Path(str(export.path) + ".import-state.json")
    assert not state_file.exists()
    args = ["import", "--json", str(export.path), "--create-tenant"]

    first = run_cli(fresh, *args, "--stop-after-batches", "1")
    TIMINGS["tessera import, stopped after batch 1"] = first.seconds
    assert_stopped(first)
    assert state_file.is_file(), f"no state file {state_file} after the stopped import: {first}"
    assert stat.S_IMODE(os.stat(state_file).st_mode) & 0o077 == 0, "the state file is private"
    tenants = expect_ok(fresh_admin.list_tenants()).get("tenants", [])
    assert len(tenants) == 1, f"the import created one tenant: {tenants}"
    tenant_id = tenants[0]["tenantId"]
    assert len(all_users(fresh_admin, tenant_id)) == 1000, f"one batch of 1,000 went in: {first}"
    after_first = state_file.read_bytes()

    second = run_cli(fresh, *args, "--stop-after-batches", "1")
    TIMINGS["tessera import, resumed, stopped after batch 2"] = second.seconds
    assert_stopped(second)
    assert len(all_users(fresh_admin, tenant_id)) == 2000, f"it went on with the second batch: {second}"
    # The second run "dies" after its batchCreate, before recording it.
    state_file.write_bytes(after_first)

    resumed = run_cli(fresh, *args)
    TIMINGS["tessera import, resumed to the end"] = resumed.seconds
    assert resumed.returncode == EXIT_OK, str(resumed)
    summary = summary_of(resumed)
    assert summary.get("tenantId") == tenant_id and summary.get("createdTenant") is True, summary
    assert summary.get("finished") is True and not summary.get("failures"), summary
    users = summary.get("users") or {}
    assert users.get("total") == total and users.get("failed") == 0, summary
    assert users.get("alreadyPresent") == 1000, f"the batch sent again counts as already present: {summary}"
    assert users.get("imported") + users.get("alreadyPresent") == total, summary
    assert summary.get("providers") == 2 and summary.get("mailTemplates", 0) >= 1, summary
    return Imported(tenant_id, first, resumed, state_file, fresh_admin, Client(fresh.stack))


def test_the_resumed_import_completes_without_duplicates(fresh, source, export, imported):
    users = all_users(imported.admin, imported.tenant_id)
    ids = [u["localId"] for u in users]
    assert len(ids) == len(set(ids)) == expected_count(source), (len(ids), len(set(ids)), expected_count(source))
    assert set(ids) == {u["localId"] for u in export.document["users"]}
    emails = [u["email"] for u in users if u.get("email")]
    assert len(emails) == len(set(emails))
    tenants = expect_ok(imported.admin.list_tenants()).get("tenants", [])
    assert [t["tenantId"] for t in tenants] == [imported.tenant_id], "one tenant, created once"
    # Run once more: nothing left to do, nothing duplicated.
    again = run_cli(fresh, "import", "--json", str(export.path), "--create-tenant")
    assert again.returncode == EXIT_OK, str(again)
    assert len(all_users(imported.admin, imported.tenant_id)) == expected_count(source)
    assert len(expect_ok(imported.admin.list_tenants()).get("tenants", [])) == 1


def test_tenant_settings_providers_and_mail_template_came_across(admin, source, imported):
    old = expect_ok(admin.get_tenant(source.tenant_id))
    new = expect_ok(imported.admin.get_tenant(imported.tenant_id))
    for name in ("displayName", "allowPasswordSignup", "enableEmailLinkSignin", "enableAnonymousUser", "disableAuth",
                 "autodeleteAnonymousUsers", "client", "mfaConfig", "rateLimits"):
        assert new.get(name) == old.get(name), (name, old, new)
    assert provider_configs(imported.admin, imported.tenant_id) == provider_configs(admin, source.tenant_id)
    old_templates = custom_templates(admin, source.tenant_id)
    assert set(old_templates) == {"EMAIL_SIGNIN"}
    assert custom_templates(imported.admin, imported.tenant_id) == old_templates


PROFILE_FIELDS = ("email", "emailVerified", "displayName", "photoUrl", "phoneNumber", "disabled", "createdAt",
                  "lastLoginAt", "customAttributes")


def profile(record: dict, *, email_link: bool = False) -> dict:
    """What an import keeps of a user (admin lookup), normalized. The email-link mark and the
    `password` entry it makes appear are left to test_the_email_link_user_keeps_its_sign_in_method."""
    fields = {name: record.get(name) for name in PROFILE_FIELDS}
    fields["disabled"] = bool(fields["disabled"])
    fields["emailVerified"] = bool(fields["emailVerified"])
    fields["customAttributes"] = json.loads(fields["customAttributes"] or "{}")
    fields["providers"] = sorted((p["providerId"], p.get("rawId")) for p in record.get("providerUserInfo", [])
                                 if not (email_link and p["providerId"] == "password"))
    return fields


def test_profiles_survive(admin, source, imported):
    ids = [u.local_id for u in source.users.values()] + source.bulk_ids[:50] + source.bulk_ids[-50:]
    old, new = lookup(admin, source.tenant_id, ids), lookup(imported.admin, imported.tenant_id, ids)
    assert set(new) == set(old) == set(ids)
    link_id = source.users["emaillink"].local_id
    for local_id in ids:
        assert profile(new[local_id], email_link=local_id == link_id) == \
            profile(old[local_id], email_link=local_id == link_id), local_id
    phone = new[source.users["phone"].local_id]
    assert phone["phoneNumber"] == source.users["phone"].phone and phone["displayName"] == "Phone Only"
    assert new[source.users["bcrypt"].local_id]["createdAt"] == "1500000000000"
    assert new[source.users["fbplain"].local_id]["createdAt"] == "1600000000000"
    assert not new[source.users["anonymous"].local_id].get("providerUserInfo")


def test_phone_factors_came_across(admin, source, export, imported):
    """A user's phone second factors are in the export's `mfaInfo` (Firebase's member) and come back with their
    ids, numbers, names and enrolment times."""
    user = source.users["mfa"]
    [old] = admin.lookup_users(source.tenant_id, [user.local_id])
    [new] = imported.admin.lookup_users(imported.tenant_id, [user.local_id])
    assert len(old["mfaInfo"]) == 2 and old["mfaInfo"][0]["phoneInfo"] == user.phone, old
    assert export.user(user.local_id)["mfaInfo"] == old["mfaInfo"]
    assert new["mfaInfo"] == old["mfaInfo"]


def anonymous_users(admin: Admin, tenant_id: str) -> int:
    """How many accounts the anonymous cleanup counts as anonymous in a tenant (docs/protocol/admin.md#tesseras-own-admin-resources preview)."""
    path = f"/v2/projects/{admin.stack.project_id}/tenants/{tenant_id}/anonymousCleanup:preview"
    return expect_ok(admin.request("GET", path))["anonymousUsers"]


def test_no_user_becomes_anonymous_in_the_import(admin, source, imported):
    """The anonymous account is still anonymous, and no other became one: the cleanup (docs/protocol/admin.md#anonymous-cleanup) deletes
    anonymous accounts once enabled, so a phone-number or custom-token user (no email, no provider, no
    password) counted as anonymous after the move would be deleted. The custom-token user keeps its
    `customAuth` mark (docs/protocol/accounts.md#the-user-record)."""
    assert anonymous_users(admin, source.tenant_id) == 1
    custom = source.users["custom"].local_id
    [before] = admin.lookup_users(source.tenant_id, [custom])
    assert before.get("customAuth") is True, before
    problems = []
    count = anonymous_users(imported.admin, imported.tenant_id)
    if count != 1:
        problems.append(f"the new tenant has {count} anonymous accounts, the old one 1")
    [after] = imported.admin.lookup_users(imported.tenant_id, [custom])
    if after.get("customAuth") is not True:
        problems.append(f"the custom-token user lost customAuth: before {before}, after {after}")
    assert not problems, "; ".join(problems)


def test_the_email_link_user_keeps_its_sign_in_method(admin, source, imported):
    """Before it signs in on the new deployment, the passwordless user is still one (docs/protocol/accounts.md#email-link-sign-in, #the-user-record): its
    `emailLinkSignin` mark and the `password` provider entry that stands for it came across."""
    user = source.users["emaillink"]
    [old] = admin.lookup_users(source.tenant_id, [user.local_id])
    [new] = imported.admin.lookup_users(imported.tenant_id, [user.local_id])
    assert old.get("emailLinkSignin") is True
    assert new.get("emailLinkSignin") is True and new.get("providerUserInfo") == old.get("providerUserInfo"), \
        f"the email-link user lost its sign-in method in the transfer: before {old}, after {new}"


# --------------------------------------------------------------------------------------
# Sign-ins on the fresh stack
# --------------------------------------------------------------------------------------

def test_every_old_password_signs_in(source, imported):
    client, tenant_id = imported.client, imported.tenant_id
    signed_in = []
    for user in source.users.values():
        if user.password is None or user.disabled:
            continue
        wrong = sign_in(client, tenant_id, user.email, user.password + " not")
        expect_error(wrong, "INVALID_PASSWORD", "INVALID_LOGIN_CREDENTIALS")
        data = expect_ok(sign_in(client, tenant_id, user.email, user.password))
        assert data["localId"] == user.local_id, (user.role, data)
        claims = unverified_claims(data["idToken"])
        assert claims["firebase"]["tenant"] == tenant_id and claims["sub"] == user.local_id
        # Again: the first sign-in re-made an imported hash with the new tenant's key.
        expect_ok(sign_in(client, tenant_id, user.email, user.password))
        signed_in.append(user.algorithm or "tenant's Firebase scrypt")
    assert {"BCRYPT", "PBKDF2_SHA256", "HMAC_SHA256", "STANDARD_SCRYPT", "SCRYPT",
            "tenant's Firebase scrypt"} <= set(signed_in), signed_in


def test_the_disabled_users_stay_disabled(source, imported):
    for role in ("disabled", "fbdisabled"):
        user = source.users[role]
        expect_error(sign_in(imported.client, imported.tenant_id, user.email, user.password), "USER_DISABLED")


def test_custom_claims_reach_the_id_token(source, imported):
    for role in ("claims", "fbplain", "hmac"):
        user = source.users[role]
        data = expect_ok(sign_in(imported.client, imported.tenant_id, user.email, user.password))
        claims = unverified_claims(data["idToken"])
        expected = user.claims if user.claims is not None else {"imported": True}
        for name, value in expected.items():
            assert claims.get(name) == value, (role, name, claims)


def test_federated_users_sign_in_to_the_same_account(fake_idp, source, imported):
    for role in ("google", "oidc", "fbgoogle"):
        user = source.users[role]
        token = fake_idp.id_token(user.provider, user.sub, email=user.email)
        resp = sign_in_with_idp(imported.client, user.provider, id_token=token, tenant_id=imported.tenant_id)
        data = expect_ok(resp)
        assert data["localId"] == user.local_id and not data.get("isNewUser"), (role, describe(resp))
        assert not data.get("needConfirmation"), describe(resp)
        assert unverified_claims(data["idToken"])["firebase"]["sign_in_provider"] == user.provider


def test_the_custom_token_user_signs_in_with_its_backend_key(source, imported):
    """Service accounts are not part of an export: the operator registers the backend's public key in
    the new tenant, and the backend's custom tokens sign the same user in again."""
    account = register_service_account(imported.admin, imported.tenant_id, source.backend_key)
    uid = source.users["custom"].local_id
    data = expect_ok(custom_token_sign_in(imported.client, imported.tenant_id, account, source.backend_key, uid))
    assert data.get("isNewUser") is False, data
    assert unverified_claims(data["idToken"])["sub"] == uid


def test_the_email_link_signs_in_with_the_custom_template(mail_sink, source, imported):
    user = source.users["emaillink"]
    expect_ok(send_email_link(imported.client, imported.tenant_id, user.email))
    mail = mail_sink.wait_for(user.email, 2)[1]
    assert source.template_marker in mail["body"], f"the tenant's EMAIL_SIGNIN template came across: {mail}"
    link, params = oob_link(mail)
    assert params.get("tenantId") == imported.tenant_id, link
    data = expect_ok(email_link_sign_in(imported.client, imported.tenant_id, user.email, params["oobCode"]))
    assert data["localId"] == user.local_id and not data.get("isNewUser"), data


@pytest.fixture(scope="module", autouse=True)
def report_timings(request):
    started = time.monotonic()
    yield
    TIMINGS["module in all"] = time.monotonic() - started
    reporter = request.config.pluginmanager.getplugin("terminalreporter")
    if reporter is not None:
        reporter.write_line("")
        for name, seconds in TIMINGS.items():
            reporter.write_line(f"test_cli_transfer timing: {name}: {seconds:.1f}s")
