"""Issue 23, the account findings of the outside review: per-tenant password-hash keys (1), mail codes
invalidated by sequence rather than by clock (10), one account per Unicode-normalized address and no
mixed-script domains (11a), the sign-in password bounded before hashing (11b), and bounded admin
string fields (11d). Each test reproduces the attack as the review ran it and asserts that it fails."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import re
import time
import unicodedata
import uuid

import pytest
import requests
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from conftest import describe, expect_error, expect_ok, oob_link, psql, scrape, value
from test_passwords import PASSWORD, sign_in, sign_up

MAX_FIELD = 2048  # Firebase's bound on displayName and photoUrl


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


def check_hash_config(config: dict) -> None:
    assert config["algorithm"] == "SCRYPT", config
    assert base64.b64decode(config["signerKey"]) and base64.b64decode(config["saltSeparator"]), config
    assert isinstance(config["rounds"], int) and isinstance(config["memoryCost"], int), config


def project_hash_config(admin) -> dict:
    return expect_ok(admin.get_config())["signIn"]["hashConfig"]


def admin_create(admin, tenant_id, **fields):
    """Admin `accounts` (create a user) in a tenant."""
    return admin.request("POST", f"/v1/projects/{admin.stack.project_id}/tenants/{tenant_id}/accounts", json=fields)


def send(client, tenant_id, **body):
    return client.post("/v1/accounts:sendOobCode", {"tenantId": tenant_id, **body})


def mailed_codes(mail_sink, email: str, count: int) -> list[str]:
    return [oob_link(m)[1]["oobCode"] for m in mail_sink.wait_for(email, count)[:count]]


def reset(client, tenant_id, code, new_password):
    return client.post("/v1/accounts:resetPassword", {"tenantId": tenant_id, "oobCode": code,
                                                      "newPassword": new_password})


def apply_code(client, tenant_id, code):
    return client.post("/v1/accounts:update", {"tenantId": tenant_id, "oobCode": code})


@pytest.fixture
def password_tenant(make_tenant) -> str:
    return make_tenant(allowPasswordSignup=True)["tenantId"]


# --------------------------------------------------------------------------------------
# 1. Per-tenant hash keys
# --------------------------------------------------------------------------------------

def test_a_tenant_admin_cannot_recover_the_project_signer_key_from_an_exported_hash(stack, admin, make_tenant):
    """The review's attack: with a tenant-scoped credential, create a user with a known password, export
    its hash and salt with batchGet, run scrypt over the password and AES-CTR-decrypt the hash. The
    plaintext is the key the hash was made with: it must be the tenant's own signer key (its hashConfig),
    never the project's, which protects every other scope's hashes."""
    p, tenant_id = stack.project_id, make_tenant(allowPasswordSignup=True)["tenantId"]
    call = tenant_credential(stack, admin, tenant_id)
    email, password = address("attack"), "known password 1"
    created = expect_ok(call("POST", f"/v1/projects/{p}/tenants/{tenant_id}/accounts",
                             json={"email": email, "password": password}))
    user = batch_get(call, stack, tenant_id)[created["localId"]]
    assert user.get("passwordHash") and user.get("salt"), f"the tenant admin exports the hash: {user}"

    tenant_config = expect_ok(admin.get_tenant(tenant_id))["hashConfig"]
    project_key = base64.b64decode(project_hash_config(admin)["signerKey"])
    recovered = signer_key_behind(password, user, tenant_config)
    assert recovered != project_key, "a tenant admin recovered the project's signer key from an exported hash"
    assert recovered == base64.b64decode(tenant_config["signerKey"]), \
        "the exported hash is made with the tenant's own key, as its hashConfig says"


def test_each_tenant_has_its_own_hash_config_shown_to_its_admins(stack, admin, make_tenant):
    """A tenant's hashConfig (admin GET tenant) is its own: the project admin and the tenant's scoped
    credential see the same one, it differs from the project's signIn.hashConfig and from any other
    tenant's; the project's stays hidden from the tenant credential, as does the other tenant."""
    p = stack.project_id
    own, other = make_tenant()["tenantId"], make_tenant()["tenantId"]
    call = tenant_credential(stack, admin, own)

    seen_by_project = expect_ok(admin.get_tenant(own))["hashConfig"]
    check_hash_config(seen_by_project)
    resp = call("GET", f"/v2/projects/{p}/tenants/{own}")
    seen_by_tenant = expect_ok(resp).get("hashConfig")
    assert seen_by_tenant == seen_by_project, f"the tenant's own admin sees its hashConfig: {describe(resp)}"

    project = project_hash_config(admin)
    check_hash_config(project)
    assert seen_by_project["signerKey"] != project["signerKey"], "a tenant's signer key is not the project's"
    other_config = expect_ok(admin.get_tenant(other))["hashConfig"]
    check_hash_config(other_config)
    assert other_config["signerKey"] not in (seen_by_project["signerKey"], project["signerKey"]), \
        "every tenant has a signer key of its own"

    for path in (f"/v2/projects/{p}/config", f"/v2/projects/{p}/tenants/{other}"):
        resp = call("GET", path)
        assert resp.status_code == 403, describe(resp)
        assert project["signerKey"] not in resp.text and other_config["signerKey"] not in resp.text, describe(resp)


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


def test_imported_hashes_are_exported_with_their_settings_only_when_asked_and_reimport_elsewhere(
        stack, admin, client, make_tenant):
    """Hashes the scope's hashConfig does not describe (here PBKDF2_SHA256 and HMAC_SHA256, imported and
    not yet re-made at a sign-in) are stripped from a plain batchGet, as Firebase strips them; with
    `tesseraForeignHashes=true` (what `tessera export` asks) each comes in a `tesseraPasswordHash` object
    holding exactly the batchCreate settings that verify it, and a batchCreate with those settings in
    another tenant gives a user who signs in with the old password."""
    p = stack.project_id
    source, target = (make_tenant(allowPasswordSignup=True)["tenantId"] for _ in range(2))
    password, salt, key = "imported password 7", os.urandom(12), os.urandom(32)
    users = {
        "PBKDF2_SHA256": ({"rounds": 1000}, hashlib.pbkdf2_hmac("sha256", password.encode(), salt, 1000)),
        "HMAC_SHA256": ({"signerKey": base64.b64encode(key).decode(), "passwordHashOrder": "SALT_AND_PASSWORD"},
                        hmac.new(key, salt + password.encode(), hashlib.sha256).digest()),
    }
    ids = {}
    for algorithm, (settings, digest) in users.items():
        local_id, email = f"fh-{uuid.uuid4().hex[:10]}", address("foreign")
        ids[algorithm] = (local_id, email)
        resp = admin.request("POST", f"/v1/projects/{p}/tenants/{source}/accounts:batchCreate", json={
            "hashAlgorithm": algorithm, **settings,
            "users": [{"localId": local_id, "email": email, "passwordHash": base64.urlsafe_b64encode(digest).decode(),
                       "salt": base64.urlsafe_b64encode(salt).decode()}]})
        assert "error" not in expect_ok(resp), describe(resp)

    plain = batch_get(admin.request, stack, source)
    foreign = batch_get(admin.request, stack, source, foreign=True)
    for algorithm, (settings, digest) in users.items():
        local_id, email = ids[algorithm]
        assert "passwordHash" not in plain[local_id] and "tesseraPasswordHash" not in plain[local_id], plain[local_id]
        exported = foreign[local_id]["tesseraPasswordHash"]
        assert "passwordHash" not in foreign[local_id], foreign[local_id]
        assert exported["hashAlgorithm"] == algorithm, exported
        assert base64.b64decode(exported["passwordHash"]) == digest and base64.b64decode(exported["salt"]) == salt
        assert {k: v for k, v in exported.items() if k not in ("hashAlgorithm", "passwordHash", "salt")} == settings

        body = {k: v for k, v in exported.items() if k not in ("passwordHash", "salt")}
        body["users"] = [{"localId": local_id, "email": email, "passwordHash": exported["passwordHash"],
                          "salt": exported["salt"]}]
        resp = admin.request("POST", f"/v1/projects/{p}/tenants/{target}/accounts:batchCreate", json=body)
        assert "error" not in expect_ok(resp), describe(resp)
        signed_in = expect_ok(sign_in(client, target, email, password))
        assert signed_in["localId"] == local_id


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
# 10. Codes invalidated by sequence, not by clock
# --------------------------------------------------------------------------------------

def test_a_reset_code_is_refused_once_the_password_changed(stack, admin, client, mail_sink, password_tenant):
    """A PASSWORD_RESET code sent before a password change (the user's own accounts:update, then an
    admin's) is INVALID_OOB_CODE at once: no minute of clock tolerance keeps it alive."""
    tenant_id, email = password_tenant, address("reset")
    session = expect_ok(sign_up(client, tenant_id, email))

    expect_ok(send(client, tenant_id, requestType="PASSWORD_RESET", email=email))
    [first] = mailed_codes(mail_sink, email, 1)
    changed = expect_ok(client.post("/v1/accounts:update", {"tenantId": tenant_id, "idToken": session["idToken"],
                                                           "password": "changed by the user",
                                                           "returnSecureToken": True}))
    expect_error(reset(client, tenant_id, first, "attacker password"), "INVALID_OOB_CODE")
    expect_ok(sign_in(client, tenant_id, email, "changed by the user"))
    assert changed["localId"] == session["localId"]

    expect_ok(send(client, tenant_id, requestType="PASSWORD_RESET", email=email))
    second = mailed_codes(mail_sink, email, 2)[1]
    expect_ok(admin.request("POST", admin.accounts_path(tenant_id, "update"),
                            json={"localId": session["localId"], "password": "changed by an admin"}))
    expect_error(reset(client, tenant_id, second, "attacker password"), "INVALID_OOB_CODE")
    expect_ok(sign_in(client, tenant_id, email, "changed by an admin"))
    assert sign_in(client, tenant_id, email, "attacker password").status_code == 400


def test_a_reset_code_is_refused_once_another_reset_code_was_used(client, mail_sink, password_tenant):
    """Two PASSWORD_RESET codes outstanding: using one ends the other."""
    tenant_id, email = password_tenant, address("reset2")
    expect_ok(sign_up(client, tenant_id, email))
    expect_ok(send(client, tenant_id, requestType="PASSWORD_RESET", email=email))
    expect_ok(send(client, tenant_id, requestType="PASSWORD_RESET", email=email))
    first, second = mailed_codes(mail_sink, email, 2)
    expect_ok(reset(client, tenant_id, second, "from the second code"))
    expect_error(reset(client, tenant_id, first, "from the first code"), "INVALID_OOB_CODE")
    expect_ok(sign_in(client, tenant_id, email, "from the second code"))
    assert sign_in(client, tenant_id, email, "from the first code").status_code == 400


def test_a_verification_code_is_refused_once_another_was_used(client, mail_sink, password_tenant):
    """Two VERIFY_EMAIL codes outstanding: using one ends the other."""
    tenant_id, email = password_tenant, address("verify")
    session = expect_ok(sign_up(client, tenant_id, email))
    for _ in range(2):
        expect_ok(send(client, tenant_id, requestType="VERIFY_EMAIL", idToken=session["idToken"]))
    first, second = mailed_codes(mail_sink, email, 2)
    assert expect_ok(apply_code(client, tenant_id, first))["emailVerified"] is True
    expect_error(apply_code(client, tenant_id, second), "INVALID_OOB_CODE")


def test_an_email_change_code_is_refused_once_the_email_changed(admin, client, mail_sink, password_tenant):
    """A VERIFY_AND_CHANGE_EMAIL code sent before the address changed (the user's own accounts:update,
    then an admin's back to the first address, all within the minute) no longer moves the account,
    though the address is again the one the code was sent from; nor does one of two such codes once
    the other was used (and the address was put back)."""
    tenant_id, old = password_tenant, address("old")
    session = expect_ok(sign_up(client, tenant_id, old))
    local_id = session["localId"]

    def set_email_by_admin(email):
        expect_ok(admin.request("POST", admin.accounts_path(tenant_id, "update"),
                                json={"localId": local_id, "email": email}))

    def current_email():
        [user] = admin.lookup_users(tenant_id, [local_id])
        return user["email"]

    stale, direct = address("stale"), address("direct")
    expect_ok(send(client, tenant_id, requestType="VERIFY_AND_CHANGE_EMAIL", idToken=session["idToken"],
                   newEmail=stale))
    [code] = mailed_codes(mail_sink, stale, 1)
    updated = expect_ok(client.post("/v1/accounts:update", {"tenantId": tenant_id, "idToken": session["idToken"],
                                                           "email": direct, "returnSecureToken": True}))
    assert updated["email"] == direct
    set_email_by_admin(old)
    expect_error(apply_code(client, tenant_id, code), "INVALID_OOB_CODE")
    assert current_email() == old

    signed_in = expect_ok(sign_in(client, tenant_id, old))
    one, two = address("one"), address("two")
    for new in (one, two):
        expect_ok(send(client, tenant_id, requestType="VERIFY_AND_CHANGE_EMAIL", idToken=signed_in["idToken"],
                       newEmail=new))
    [code_one], [code_two] = mailed_codes(mail_sink, one, 1), mailed_codes(mail_sink, two, 1)
    assert expect_ok(apply_code(client, tenant_id, code_two))["email"] == two
    set_email_by_admin(old)
    expect_error(apply_code(client, tenant_id, code_one), "INVALID_OOB_CODE")
    assert current_email() == old


# --------------------------------------------------------------------------------------
# 11a. One account per address, whatever its Unicode normalization; no mixed-script domains
# --------------------------------------------------------------------------------------

def test_nfc_and_nfd_forms_of_an_address_are_one_account(admin, client, password_tenant):
    """`josé@…` with é precomposed (NFC) and decomposed (e + U+0301, NFD) is the same address: the
    second sign-up is EMAIL_EXISTS, and either form signs in the one account; both orders."""
    tenant_id, tag = password_tenant, uuid.uuid4().hex[:8]
    for first_form, second_form in (("NFC", "NFD"), ("NFD", "NFC")):
        base = f"josé-{first_form.lower()}-{tag}@example.com"
        first, second = unicodedata.normalize(first_form, base), unicodedata.normalize(second_form, base)
        assert first != second
        created = expect_ok(sign_up(client, tenant_id, first))
        expect_error(sign_up(client, tenant_id, second), "EMAIL_EXISTS")
        expect_error(admin_create(admin, tenant_id, email=second, password=PASSWORD), "EMAIL_EXISTS")
        assert expect_ok(sign_in(client, tenant_id, second))["localId"] == created["localId"]
        assert expect_ok(sign_in(client, tenant_id, first))["localId"] == created["localId"]


def test_a_domain_label_mixing_scripts_is_refused(admin, client, password_tenant):
    """`user@pаypal.com` with a Cyrillic а (U+0430) in a Latin label is a look-alike of paypal.com:
    INVALID_EMAIL on sign-up and on admin create, wherever the label is, and nobody is created. A label
    of one script (Latin with a diacritic, all Cyrillic) is an address like any other."""
    tenant_id = password_tenant
    for domain in ("p\u0430ypal.com", "\u0430pple.com", "mail.g\u043eogle.com"):
        spoof = f"user-{uuid.uuid4().hex[:8]}@{domain}"
        expect_error(sign_up(client, tenant_id, spoof), "INVALID_EMAIL")
        expect_error(admin_create(admin, tenant_id, email=spoof, password=PASSWORD), "INVALID_EMAIL")
    assert batch_get(admin.request, admin.stack, tenant_id) == {}, "nobody is created"
    for domain in ("b\u00fccher.example", "\u043f\u0440\u0438\u043c\u0435\u0440.\u0440\u0444"):
        expect_ok(sign_up(client, tenant_id, f"user-{uuid.uuid4().hex[:8]}@{domain}"))


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


# --------------------------------------------------------------------------------------
# 11d. displayName and photoUrl bounded at 2,048 characters everywhere they are written
# --------------------------------------------------------------------------------------

LONG = {"displayName": "n" * (MAX_FIELD + 1), "photoUrl": "https://example.com/" + "p" * (MAX_FIELD + 1 - 20)}
AT_BOUND = {"displayName": "n" * MAX_FIELD, "photoUrl": "https://example.com/" + "p" * (MAX_FIELD - 20)}
CODES = {"displayName": "INVALID_DISPLAY_NAME", "photoUrl": "INVALID_PHOTO_URL"}
SHORT = {"displayName": "Ada", "photoUrl": "https://example.com/ada.png"}


def user_by_email(admin, tenant_id, email) -> dict | None:
    found = expect_ok(admin.request("POST", admin.accounts_path(tenant_id, "lookup"), json={"email": [email]}))
    return (found.get("users") or [None])[0]


@pytest.mark.parametrize("field", ["displayName", "photoUrl"])
def test_overlong_profile_fields_are_refused_by_admin_create_and_update(admin, password_tenant, field):
    """A 31 MB displayName was stored: admin `accounts` and `accounts:update` refuse a displayName or
    photoUrl over 2,048 characters (INVALID_DISPLAY_NAME / INVALID_PHOTO_URL) and store nothing;
    2,048 is accepted."""
    tenant_id, email = password_tenant, address("admin")
    expect_error(admin_create(admin, tenant_id, email=email, **{field: LONG[field]}), CODES[field])
    assert user_by_email(admin, tenant_id, email) is None, "nothing is created when refused"

    local_id = expect_ok(admin_create(admin, tenant_id, email=email, **{field: SHORT[field]}))["localId"]
    resp = admin.request("POST", admin.accounts_path(tenant_id, "update"), json={"localId": local_id, field: LONG[field]})
    expect_error(resp, CODES[field])
    [user] = admin.lookup_users(tenant_id, [local_id])
    assert user.get(field) == SHORT[field], "nothing is changed when refused"

    expect_ok(admin.request("POST", admin.accounts_path(tenant_id, "update"),
                            json={"localId": local_id, field: AT_BOUND[field]}))
    [user] = admin.lookup_users(tenant_id, [local_id])
    assert user.get(field) == AT_BOUND[field]


@pytest.mark.parametrize("field", ["displayName", "photoUrl"])
def test_overlong_profile_fields_are_refused_by_end_user_sign_up_and_update(admin, client, password_tenant, field):
    """The end-user paths too: signUp and accounts:update (idToken) with a displayName or photoUrl over
    2,048 characters are refused and store nothing."""
    tenant_id, email = password_tenant, address("self")
    expect_error(sign_up(client, tenant_id, email, **{field: LONG[field]}), CODES[field])
    assert user_by_email(admin, tenant_id, email) is None, "nothing is created when refused"

    session = expect_ok(sign_up(client, tenant_id, email))
    expect_ok(client.post("/v1/accounts:update", {"tenantId": tenant_id, "idToken": session["idToken"],
                                                 field: SHORT[field]}))
    resp = client.post("/v1/accounts:update", {"tenantId": tenant_id, "idToken": session["idToken"],
                                               field: LONG[field]})
    expect_error(resp, CODES[field])
    [user] = admin.lookup_users(tenant_id, [session["localId"]])
    assert user.get(field) == SHORT[field], "nothing is changed when refused"


def test_batch_create_refuses_each_user_with_an_overlong_profile_field(admin, password_tenant):
    """accounts:batchCreate reports a per-user error for a displayName or photoUrl over 2,048 characters,
    does not create that user, and imports the others."""
    tenant_id = password_tenant
    users = [{"localId": f"bound-{uuid.uuid4().hex[:10]}", "email": address("batch"), **fields}
             for fields in ({"displayName": "fine"}, {"displayName": LONG["displayName"]},
                            {"photoUrl": LONG["photoUrl"]}, dict(AT_BOUND))]
    resp = admin.request("POST", admin.accounts_path(tenant_id, "batchCreate"), json={"users": users})
    assert resp.status_code == 200, describe(resp)
    errors = resp.json().get("error") or []
    assert sorted(e.get("index") for e in errors) == [1, 2], describe(resp)
    found = admin.lookup_users(tenant_id, [u["localId"] for u in users])
    assert sorted(u["localId"] for u in found) == sorted([users[0]["localId"], users[3]["localId"]]), \
        "the refused users are not created"
