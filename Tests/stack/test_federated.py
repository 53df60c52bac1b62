"""Federated sign-in through the stack against a local fake identity provider (fake_idp.py):
accounts:signInWithIdp for OIDC providers (google, apple, microsoft, yahoo, generic oidc.*) and the
OAuth user-info providers (facebook, github, twitter); verification of provider tokens; the trust
rules and automatic linking of docs/protocol/accounts.md#verified-email-and-automatic-linking; linking and unlinking (docs/protocol/federated.md#linking-a-federated-credential); "one account per email" (docs/protocol/federated.md#federated-sign-in,
docs/protocol/accounts.md#one-account-per-email); provider configuration through the admin API and the Python Admin SDK (docs/protocol/federated.md#federated-providers, docs/protocol/admin.md#admin-endpoints).

Every test but the allowDuplicateEmails one works in fresh tenants; that one uses the default scope
(the setting is project-level) and puts everything back."""

from __future__ import annotations

import json
import os
import random
import secrets
import time
import uuid
from urllib.parse import urlencode

import jwt
import pytest

from conftest import describe, expect_error, expect_ok, expect_status_error, oob_link, unverified_claims
from fake_idp import (BUILT_IN_PROVIDER_IDS, VERIFY_ASSERTION_KIND, configure_provider,
                      delete_provider_config, facebook_appsecret_proof,
                      idp_config_path, sha256_hex, sign_in_with_idp)

PASSWORD = "federated pw 1"


# --------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------

def new_sub(prefix: str = "sub") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:16]}"


def address(domain: str = "example.com") -> str:
    return f"fed-{uuid.uuid4().hex[:12]}@{domain}"


def idp_tenant(make_tenant, admin, idp, *provider_ids: str, **tenant_overrides) -> str:
    """A fresh tenant with ``provider_ids`` configured (enabled, the fake's client ids)."""
    tenant_id = make_tenant(**tenant_overrides)["tenantId"]
    for provider_id in provider_ids:
        configure_provider(admin, idp, provider_id, tenant_id=tenant_id)
    return tenant_id


def oidc_sign_in(client, idp, provider_id: str, tenant_id: str | None, sub: str, email: str | None = None,
                 *, link_id_token: str | None = None, **claims):
    token = idp.id_token(provider_id, sub, email=email, **claims)
    return sign_in_with_idp(client, provider_id, id_token=token, tenant_id=tenant_id, link_id_token=link_id_token)


def facebook_user(idp, email: str | None = None, name: str = "Fay Book") -> tuple[str, dict]:
    token = f"fb-token-{uuid.uuid4().hex}"
    first, _, last = name.partition(" ")
    profile = {"id": str(random.randrange(10 ** 14, 10 ** 15)), "name": name, "first_name": first,
               "last_name": last, "picture": {"data": {"url": f"https://img.example/fb/{uuid.uuid4().hex[:8]}.png"}}}
    if email is not None:
        profile["email"] = email
    idp.oauth_user("facebook.com", token, profile)
    return token, profile


def github_user(idp, email: str | None = None) -> tuple[str, dict]:
    token = f"gho_{uuid.uuid4().hex}"
    profile = {"id": random.randrange(10 ** 7, 10 ** 9), "login": f"octo-{uuid.uuid4().hex[:8]}",
               "name": "Octo Cat", "email": email, "avatar_url": "https://img.example/gh/octo.png"}
    idp.oauth_user("github.com", token, profile)
    return token, profile


def twitter_user(idp, email: str | None = None) -> tuple[str, str, dict]:
    token, secret = f"{random.randrange(10 ** 8, 10 ** 9)}-{uuid.uuid4().hex}", f"tw secret/{uuid.uuid4().hex}"
    profile = {"id_str": str(random.randrange(10 ** 17, 10 ** 18)), "screen_name": f"tweety_{uuid.uuid4().hex[:6]}",
               "name": "Tweety Bird", "profile_image_url_https": "https://img.example/tw/tweety.png"}
    if email is not None:
        profile["email"] = email
    idp.oauth_user("twitter.com", token, profile, token_secret=secret)
    return token, secret, profile


def signed_in(resp) -> dict:
    """A successful sign-in (or link) answer with tokens."""
    data = expect_ok(resp)
    assert data.get("kind") == VERIFY_ASSERTION_KIND, describe(resp)
    assert not data.get("needConfirmation") and "errorMessage" not in data, describe(resp)
    for name in ("localId", "idToken", "refreshToken"):
        assert isinstance(data.get(name), str) and data[name], describe(resp)
    assert data.get("expiresIn") == "3600", describe(resp)
    return data


def needs_confirmation(resp) -> dict:
    """HTTP 200 needConfirmation: no account, no tokens."""
    data = expect_ok(resp)
    assert data.get("kind") == VERIFY_ASSERTION_KIND, describe(resp)
    assert data.get("needConfirmation") is True, describe(resp)
    for name in ("localId", "idToken", "refreshToken"):
        assert name not in data, f"needConfirmation carries {name}: {describe(resp)}"
    return data


def link_refused(resp, code: str) -> dict:
    """returnIdpCredential: a refused link is HTTP 200 with errorMessage and no account or tokens."""
    data = expect_ok(resp)
    assert data.get("errorMessage") == code, describe(resp)
    for name in ("localId", "idToken", "refreshToken"):
        assert name not in data, f"refused link carries {name}: {describe(resp)}"
    return data


def user_record(admin, tenant_id: str | None, local_id: str) -> dict:
    users = admin.lookup_users(tenant_id, [local_id])
    assert len(users) == 1, f"user {local_id} not found in {tenant_id}"
    return users[0]


def provider_ids(user: dict) -> list[str]:
    return sorted(p["providerId"] for p in user.get("providerUserInfo") or [])


def links(user: dict) -> list[tuple[str, str]]:
    return sorted((p["providerId"], p.get("rawId")) for p in user.get("providerUserInfo") or [])


def state_of(user: dict) -> dict:
    """What a needConfirmation must leave untouched."""
    fields = ("email", "emailVerified", "displayName", "photoUrl", "validSince", "disabled", "passwordHash")
    return {**{name: user.get(name) for name in fields}, "links": links(user)}


def tenant_user_ids(admin, tenant_id: str) -> list[str]:
    path = f"/v1/projects/{admin.stack.project_id}/tenants/{tenant_id}/accounts:batchGet"
    data = expect_ok(admin.request("GET", path, params={"maxResults": 1000}))
    return sorted(u["localId"] for u in data.get("users", []))


def sign_up_password(client, tenant_id: str, email: str) -> dict:
    return expect_ok(client.post("/v1/accounts:signUp", {
        "tenantId": tenant_id, "email": email, "password": PASSWORD, "returnSecureToken": True}))


def sign_in_password(client, tenant_id: str, email: str):
    return client.post("/v1/accounts:signInWithPassword", {
        "tenantId": tenant_id, "email": email, "password": PASSWORD, "returnSecureToken": True})


def client_update(client, tenant_id: str, id_token: str, **fields):
    return client.post("/v1/accounts:update", {"tenantId": tenant_id, "idToken": id_token, **fields})


def admin_update(admin, tenant_id: str | None, **body):
    return admin.request("POST", admin.accounts_path(tenant_id, "update"), json=body)


def patch_provider(admin, provider_id: str, tenant_id: str | None, body: dict, mask: str):
    kind = "oauthIdpConfigs" if provider_id.startswith("oidc.") else "defaultSupportedIdpConfigs"
    return admin.request("PATCH", idp_config_path(admin.stack, kind, tenant_id, provider_id),
                         params={"updateMask": mask}, json=body)


# --------------------------------------------------------------------------------------
# A new user from an OIDC provider; the response; the ID token
# --------------------------------------------------------------------------------------

def test_google_gmail_first_sign_in_creates_a_verified_user_with_profile(client, admin, verifier, make_tenant,
                                                                         fake_idp):
    tenant_id = idp_tenant(make_tenant, admin, fake_idp, "google.com")
    sub, email, picture = new_sub(), address("gmail.com"), "https://img.example/gina.png"
    token = fake_idp.id_token("google", sub, email=email, name="Gina Gmail", given_name="Gina",
                              family_name="Gmail", picture=picture)
    resp = sign_in_with_idp(client, "google.com", id_token=token, tenant_id=tenant_id)
    data = signed_in(resp)
    assert data["providerId"] == "google.com" and data["isNewUser"] is True, describe(resp)
    assert data["federatedId"] == f"https://accounts.google.com/{sub}", describe(resp)
    assert data["email"] == email and data["emailVerified"] is True, describe(resp)
    assert data["displayName"] == "Gina Gmail" and data["fullName"] == "Gina Gmail", describe(resp)
    assert data["firstName"] == "Gina" and data["lastName"] == "Gmail", describe(resp)
    assert data["photoUrl"] == picture and data["oauthIdToken"] == token, describe(resp)
    assert data["tenantId"] == tenant_id, describe(resp)
    assert isinstance(data["rawUserInfo"], str), "rawUserInfo is a JSON string"
    raw = json.loads(data["rawUserInfo"])  # Google's user-info shape, as Firebase answers (issue 36)
    assert raw["id"] == sub and raw["email"] == email and raw["verified_email"] is True, raw
    assert raw["name"] == "Gina Gmail" and raw["given_name"] == "Gina" and raw["picture"] == picture, raw
    assert "sub" not in raw and "iss" not in raw, raw

    claims = verifier.verify(data["idToken"])
    assert claims["sub"] == data["localId"] and claims["firebase"]["tenant"] == tenant_id
    assert claims["firebase"]["sign_in_provider"] == "google.com"
    assert claims["firebase"]["identities"] == {"google.com": [sub], "email": [email]}
    assert claims["email"] == email and claims["email_verified"] is True
    assert claims["name"] == "Gina Gmail" and claims["picture"] == picture
    assert claims.get("provider_id") != "anonymous"

    user = expect_ok(client.lookup(data["idToken"], tenant_id))["users"][0]
    assert user["localId"] == data["localId"] and user["email"] == email and user["emailVerified"] is True
    assert user["displayName"] == "Gina Gmail" and user["photoUrl"] == picture
    assert "passwordHash" not in user, "a federated user has no password"
    [info] = user["providerUserInfo"]
    assert info["providerId"] == "google.com" and info["rawId"] == sub and info["email"] == email, info
    assert info.get("displayName") == "Gina Gmail" and info.get("photoUrl") == picture, info

    # The same Google account again: the same user, not new, a new session.
    again = signed_in(oidc_sign_in(client, fake_idp, "google.com", tenant_id, sub, email))
    assert again["localId"] == data["localId"] and again.get("isNewUser", False) is False
    assert again["refreshToken"] != data["refreshToken"]
    assert client.refresh(again["refreshToken"])["user_id"] == data["localId"]
    assert tenant_user_ids(admin, tenant_id) == [data["localId"]]


@pytest.mark.parametrize("provider_id, domain, idp_says_verified, trusted", [
    ("google.com", "gmail.com", True, True),
    ("google.com", "example.com", True, False),
    ("google.com", "gmail.com", False, False),
    ("yahoo.com", "yahoo.com", True, True),  # yahoo tokens are ES256 (P-256 JWKS)
    ("yahoo.com", "gmail.com", True, False),
    ("microsoft.com", "outlook.com", True, True),
    ("microsoft.com", "hotmail.com", True, True),
    ("microsoft.com", "example.com", True, False),
    ("apple.com", "example.org", True, True),
    ("apple.com", "example.org", False, False),
])
def test_new_user_email_verified_follows_provider_trust(client, admin, verifier, make_tenant, fake_idp,
                                                        provider_id, domain, idp_says_verified, trusted):
    tenant_id = idp_tenant(make_tenant, admin, fake_idp, provider_id)
    sub, email = new_sub(), address(domain)
    token = fake_idp.id_token(provider_id, sub, email=email, email_verified=idp_says_verified)
    assert jwt.get_unverified_header(token)["alg"] == ("ES256" if provider_id == "yahoo.com" else "RS256")
    data = signed_in(sign_in_with_idp(client, provider_id, id_token=token, tenant_id=tenant_id))
    assert data["isNewUser"] is True and data["providerId"] == provider_id and data["federatedId"] != ""
    claims = verifier.verify(data["idToken"])
    assert claims["email"] == email and claims["email_verified"] is trusted
    assert claims["firebase"]["sign_in_provider"] == provider_id
    assert claims["firebase"]["identities"][provider_id] == [sub]
    user = user_record(admin, tenant_id, data["localId"])
    assert user["email"] == email and user["emailVerified"] is trusted
    assert links(user) == [(provider_id, sub)]


@pytest.mark.parametrize("tid, edov, trusted", [
    ("0b3c1d2e-aaaa-bbbb-cccc-000000000001", None, False),  # any other Entra tenant ("nOAuth")
    ("0b3c1d2e-aaaa-bbbb-cccc-000000000001", True, True),   # its tenant verified the domain
    (None, None, False),
])
def test_microsoft_vouches_for_outlook_addresses_only_from_the_consumer_tenant(client, admin, make_tenant, fake_idp,
                                                                            tid, edov, trusted):
    """Microsoft sends no email_verified, and an Entra tenant can write any address into a user's mail
    attribute: an @outlook.com address counts as proven only in a consumer-account token or with
    xms_edov. Otherwise it never joins the verified account that owns the address."""
    tenant_id = idp_tenant(make_tenant, admin, fake_idp, "microsoft.com", "google.com")
    email = address("outlook.com")
    extra = {"tid": tid, **({"xms_edov": edov} if edov is not None else {})}
    token = fake_idp.id_token("microsoft", new_sub(), email=email, email_verified=None, extra=extra,
                              omit=("tid",) if tid is None else ())
    data = signed_in(sign_in_with_idp(client, "microsoft.com", id_token=token, tenant_id=tenant_id))
    assert user_record(admin, tenant_id, data["localId"])["emailVerified"] is trusted
    # The owner of the address, proven: a foreign tenant's token for it needs confirmation.
    owner = address("outlook.com")
    signed_in(sign_in_with_idp(client, "microsoft.com", tenant_id=tenant_id, id_token=fake_idp.id_token(
        "microsoft", new_sub(), email=owner, email_verified=None)))
    token = fake_idp.id_token("microsoft", new_sub(), email=owner, email_verified=None, extra=extra,
                              omit=("tid",) if tid is None else ())
    resp = sign_in_with_idp(client, "microsoft.com", id_token=token, tenant_id=tenant_id)
    if trusted:
        signed_in(resp)
    else:
        needs_confirmation(resp)


def test_google_sign_in_fills_empty_profile_fields_but_never_overwrites_them(client, admin, make_tenant, fake_idp):
    tenant_id = idp_tenant(make_tenant, admin, fake_idp, "google.com")
    sub, email, picture = new_sub(), address("gmail.com"), "https://img.example/later.png"
    first = signed_in(oidc_sign_in(client, fake_idp, "google.com", tenant_id, sub, email, name="From Google"))
    user = user_record(admin, tenant_id, first["localId"])
    assert user["displayName"] == "From Google" and not user.get("photoUrl")

    resp = client_update(client, tenant_id, first["idToken"], displayName="My Own Name")
    assert expect_ok(resp)["displayName"] == "My Own Name", describe(resp)

    second = signed_in(oidc_sign_in(client, fake_idp, "google.com", tenant_id, sub, email,
                                    name="Changed At Google", picture=picture))
    assert second["localId"] == first["localId"]
    user = user_record(admin, tenant_id, first["localId"])
    assert user["displayName"] == "My Own Name", "a later sign-in never overwrites what the user set"
    assert user["photoUrl"] == picture, "an empty field is filled from the provider"
    claims = unverified_claims(second["idToken"])
    assert claims["name"] == "My Own Name" and claims["picture"] == picture


# --------------------------------------------------------------------------------------
# docs/protocol/accounts.md#verified-email-and-automatic-linking: an existing user with the same email
# --------------------------------------------------------------------------------------

def test_untrusted_account_then_untrusted_provider_needs_confirmation(client, admin, make_tenant, fake_idp):
    tenant_id = idp_tenant(make_tenant, admin, fake_idp, "facebook.com", "github.com")
    email = address()
    fb_token, _ = facebook_user(fake_idp, email=email)
    first = signed_in(sign_in_with_idp(client, "facebook.com", access_token=fb_token, tenant_id=tenant_id))
    assert first["isNewUser"] is True
    before = state_of(user_record(admin, tenant_id, first["localId"]))
    assert before["emailVerified"] is False and [p for p, _ in before["links"]] == ["facebook.com"]

    gh_token, gh_profile = github_user(fake_idp, email=email)
    for _ in range(2):  # asked twice: the first answer linked nothing
        resp = sign_in_with_idp(client, "github.com", access_token=gh_token, tenant_id=tenant_id)
        data = needs_confirmation(resp)
        assert data["email"] == email and data["providerId"] == "github.com", describe(resp)
        assert data["verifiedProvider"] == ["facebook.com"], describe(resp)
        assert data["federatedId"] == str(gh_profile["id"]), describe(resp)
    assert state_of(user_record(admin, tenant_id, first["localId"])) == before
    assert tenant_user_ids(admin, tenant_id) == [first["localId"]]


def test_unverified_password_account_then_untrusted_provider_needs_confirmation(client, admin, make_tenant,
                                                                                fake_idp):
    tenant_id = idp_tenant(make_tenant, admin, fake_idp, "github.com", allowPasswordSignup=True)
    email = address()
    account = sign_up_password(client, tenant_id, email)
    before = state_of(user_record(admin, tenant_id, account["localId"]))
    gh_token, _ = github_user(fake_idp, email=email)
    resp = sign_in_with_idp(client, "github.com", access_token=gh_token, tenant_id=tenant_id)
    data = needs_confirmation(resp)
    assert data["email"] == email and data["providerId"] == "github.com", describe(resp)
    assert data.get("verifiedProvider", []) == [], f"password/phone are never listed: {describe(resp)}"
    assert state_of(user_record(admin, tenant_id, account["localId"])) == before
    assert tenant_user_ids(admin, tenant_id) == [account["localId"]]
    expect_ok(sign_in_password(client, tenant_id, email))


def test_trusted_account_then_untrusted_provider_needs_confirmation(client, admin, make_tenant, fake_idp):
    tenant_id = idp_tenant(make_tenant, admin, fake_idp, "google.com", "facebook.com")
    sub, email = new_sub(), address("gmail.com")
    owner = signed_in(oidc_sign_in(client, fake_idp, "google.com", tenant_id, sub, email))
    before = state_of(user_record(admin, tenant_id, owner["localId"]))
    assert before["emailVerified"] is True

    fb_token, fb_profile = facebook_user(fake_idp, email=email)
    resp = sign_in_with_idp(client, "facebook.com", access_token=fb_token, tenant_id=tenant_id)
    data = needs_confirmation(resp)
    assert data["email"] == email and data["providerId"] == "facebook.com", describe(resp)
    assert data["verifiedProvider"] == ["google.com"], describe(resp)
    assert data["federatedId"] == fb_profile["id"], describe(resp)
    assert state_of(user_record(admin, tenant_id, owner["localId"])) == before
    assert tenant_user_ids(admin, tenant_id) == [owner["localId"]]
    client.refresh(owner["refreshToken"])  # the owner's session is untouched


def test_trusted_provider_takes_over_an_untrusted_account(client, admin, make_tenant, fake_idp):
    tenant_id = idp_tenant(make_tenant, admin, fake_idp, "google.com", "facebook.com", allowPasswordSignup=True)
    email = address("gmail.com")
    account = sign_up_password(client, tenant_id, email)
    fb_token, _ = facebook_user(fake_idp, email=email)
    linked = signed_in(sign_in_with_idp(client, "facebook.com", access_token=fb_token, tenant_id=tenant_id,
                                        link_id_token=account["idToken"]))
    assert linked["localId"] == account["localId"]
    user = user_record(admin, tenant_id, account["localId"])
    assert provider_ids(user) == ["facebook.com", "password"] and user["emailVerified"] is False

    time.sleep(1.1)  # validSince has one-second resolution: tokens of the same second stay valid
    sub = new_sub()
    resp = oidc_sign_in(client, fake_idp, "google.com", tenant_id, sub, email, name="Rightful Owner")
    taken = signed_in(resp)
    assert taken["localId"] == account["localId"] and taken.get("isNewUser", False) is False, describe(resp)
    claims = unverified_claims(taken["idToken"])
    assert claims["email_verified"] is True and claims["firebase"]["sign_in_provider"] == "google.com"

    user = user_record(admin, tenant_id, account["localId"])
    assert user["emailVerified"] is True and user["email"] == email
    assert links(user) == [("google.com", sub)], "the password and facebook were removed"
    assert "passwordHash" not in user
    expect_error(sign_in_password(client, tenant_id, email), "INVALID_PASSWORD", "INVALID_LOGIN_CREDENTIALS")
    for old in (account, linked):  # every older session is revoked
        expect_error(client.refresh_raw(old["refreshToken"]), "TOKEN_EXPIRED")
    expect_error(client.lookup(linked["idToken"], tenant_id), "TOKEN_EXPIRED")
    assert client.refresh(taken["refreshToken"])["user_id"] == account["localId"]

    # The removed facebook login now meets a trusted account: needConfirmation.
    resp = sign_in_with_idp(client, "facebook.com", access_token=fb_token, tenant_id=tenant_id)
    later = needs_confirmation(resp)
    assert later["verifiedProvider"] == ["google.com"] and later["email"] == email, describe(resp)
    assert tenant_user_ids(admin, tenant_id) == [account["localId"]]


def test_trusted_account_then_another_trusted_provider_links(client, admin, verifier, make_tenant, fake_idp):
    tenant_id = idp_tenant(make_tenant, admin, fake_idp, "apple.com", "google.com")
    email, apple_sub, google_sub = address("gmail.com"), new_sub("apple"), new_sub("google")
    first = signed_in(oidc_sign_in(client, fake_idp, "apple.com", tenant_id, apple_sub, email))
    assert first["isNewUser"] is True
    assert user_record(admin, tenant_id, first["localId"])["emailVerified"] is True, "apple is trusted"

    resp = oidc_sign_in(client, fake_idp, "google.com", tenant_id, google_sub, email, name="Both Ways")
    second = signed_in(resp)
    assert second["localId"] == first["localId"] and second.get("isNewUser", False) is False, describe(resp)
    user = user_record(admin, tenant_id, first["localId"])
    assert links(user) == [("apple.com", apple_sub), ("google.com", google_sub)]
    assert user["emailVerified"] is True and user["displayName"] == "Both Ways"
    claims = verifier.verify(second["idToken"])
    assert claims["firebase"]["sign_in_provider"] == "google.com"
    assert claims["firebase"]["identities"] == {"apple.com": [apple_sub], "google.com": [google_sub],
                                               "email": [email]}
    # Either provider now signs in to the one account.
    assert signed_in(oidc_sign_in(client, fake_idp, "apple.com", tenant_id, apple_sub, email))["localId"] \
        == first["localId"]
    assert tenant_user_ids(admin, tenant_id) == [first["localId"]]


def test_same_provider_with_a_new_account_id_replaces_the_link(client, admin, make_tenant, fake_idp):
    tenant_id = idp_tenant(make_tenant, admin, fake_idp, "google.com")
    email, old_sub, new_sub_ = address("gmail.com"), new_sub("old"), new_sub("new")
    first = signed_in(oidc_sign_in(client, fake_idp, "google.com", tenant_id, old_sub, email))
    resp = oidc_sign_in(client, fake_idp, "google.com", tenant_id, new_sub_, email)
    second = signed_in(resp)
    assert second["localId"] == first["localId"] and second.get("emailRecycled") is True, describe(resp)
    assert links(user_record(admin, tenant_id, first["localId"])) == [("google.com", new_sub_)]


# --------------------------------------------------------------------------------------
# Generic OIDC providers and their trusted email domains
# --------------------------------------------------------------------------------------

def oidc_id() -> str:
    return f"oidc.acme{uuid.uuid4().hex[:8]}"


def test_oidc_provider_trusted_for_its_domain_takes_over_an_unverified_password_account(client, admin, make_tenant,
                                                                                        fake_idp):
    provider_id, domain = oidc_id(), f"acme{uuid.uuid4().hex[:6]}.test"
    tenant_id = make_tenant(allowPasswordSignup=True)["tenantId"]
    config = configure_provider(admin, fake_idp, provider_id, tenant_id=tenant_id, trusted_email_domains=[domain])
    assert config["trustedEmailDomains"] == [domain] and config["issuer"] == fake_idp.oidc_issuer(provider_id)
    email = address(domain)
    account = sign_up_password(client, tenant_id, email)
    time.sleep(1.1)  # validSince resolution

    sub = new_sub()
    resp = oidc_sign_in(client, fake_idp, provider_id, tenant_id, sub, email, email_verified=True)
    taken = signed_in(resp)
    assert taken["localId"] == account["localId"] and taken["providerId"] == provider_id, describe(resp)
    assert taken["federatedId"] == sub, describe(resp)
    user = user_record(admin, tenant_id, account["localId"])
    assert user["emailVerified"] is True and links(user) == [(provider_id, sub)] and "passwordHash" not in user
    expect_error(sign_in_password(client, tenant_id, email), "INVALID_PASSWORD", "INVALID_LOGIN_CREDENTIALS")
    expect_error(client.refresh_raw(account["refreshToken"]), "TOKEN_EXPIRED")
    claims = unverified_claims(taken["idToken"])
    assert claims["firebase"]["sign_in_provider"] == provider_id
    assert claims["firebase"]["identities"][provider_id] == [sub]


def test_a_takeover_kills_the_codes_the_previous_holder_asked_for(client, admin, make_tenant, fake_idp, mail_sink):
    """The one who set the password of an unverified account asks for an email change to an address
    of theirs; the owner then signs in with a provider trusted for the address and takes the account
    over. The pending change code must not move the account to the other party's address."""
    provider_id, domain = oidc_id(), f"acme{uuid.uuid4().hex[:6]}.test"
    tenant_id = make_tenant(allowPasswordSignup=True)["tenantId"]
    configure_provider(admin, fake_idp, provider_id, tenant_id=tenant_id, trusted_email_domains=[domain])
    email, theirs = address(domain), address("elsewhere.test")
    account = sign_up_password(client, tenant_id, email)
    expect_ok(client.post("/v1/accounts:sendOobCode", {"tenantId": tenant_id, "requestType": "VERIFY_AND_CHANGE_EMAIL",
                                                       "idToken": account["idToken"], "newEmail": theirs}))
    [mail] = mail_sink.wait_for(theirs)
    _, params = oob_link(mail)
    time.sleep(1.1)  # validSince resolution

    taken = signed_in(oidc_sign_in(client, fake_idp, provider_id, tenant_id, new_sub(), email, email_verified=True))
    assert taken["localId"] == account["localId"]
    expect_error(client.post("/v1/accounts:update", {"tenantId": tenant_id, "oobCode": params["oobCode"]}),
                 "INVALID_OOB_CODE")
    user = user_record(admin, tenant_id, account["localId"])
    assert user["email"] == email and user["emailVerified"] is True


def test_a_password_reset_by_the_owner_unlinks_what_was_linked_before_anyone_proved_the_address(
        client, admin, make_tenant, fake_idp, mail_sink):
    """Pre-account hijacking: someone signs up with the victim's address and links their own GitHub.
    The victim cannot sign up (EMAIL_EXISTS), resets the password through the mailbox, and must then
    be the only one who can sign in."""
    tenant_id = idp_tenant(make_tenant, admin, fake_idp, "github.com", allowPasswordSignup=True)
    email = address()
    account = sign_up_password(client, tenant_id, email)
    token, profile = github_user(fake_idp, email=address())
    signed_in(sign_in_with_idp(client, "github.com", access_token=token, tenant_id=tenant_id,
                               link_id_token=account["idToken"]))
    assert ("github.com", str(profile["id"])) in links(user_record(admin, tenant_id, account["localId"]))

    expect_ok(client.post("/v1/accounts:sendOobCode", {"tenantId": tenant_id, "requestType": "PASSWORD_RESET",
                                                       "email": email}))
    [mail] = mail_sink.wait_for(email)
    _, params = oob_link(mail)
    expect_ok(client.post("/v1/accounts:resetPassword", {"tenantId": tenant_id, "oobCode": params["oobCode"],
                                                         "newPassword": "the owner's password"}))
    user = user_record(admin, tenant_id, account["localId"])
    assert user["emailVerified"] is True and provider_ids(user) == ["password"], user
    # The GitHub identity no longer opens this account: it is a user of its own now.
    data = signed_in(sign_in_with_idp(client, "github.com", access_token=token, tenant_id=tenant_id))
    assert data["localId"] != account["localId"]


def test_oidc_provider_is_untrusted_outside_its_domains_or_when_it_says_unverified(client, admin, make_tenant,
                                                                                   fake_idp):
    provider_id, domain = oidc_id(), f"acme{uuid.uuid4().hex[:6]}.test"
    tenant_id = make_tenant(allowPasswordSignup=True)["tenantId"]
    configure_provider(admin, fake_idp, provider_id, tenant_id=tenant_id, trusted_email_domains=[domain])

    elsewhere = address("other.test")
    outside = sign_up_password(client, tenant_id, elsewhere)
    unverified = sign_up_password(client, tenant_id, address(domain))
    before = {a["localId"]: state_of(user_record(admin, tenant_id, a["localId"])) for a in (outside, unverified)}
    for account, verified in ((outside, True), (unverified, False)):
        resp = oidc_sign_in(client, fake_idp, provider_id, tenant_id, new_sub(), account["email"],
                            email_verified=verified)
        data = needs_confirmation(resp)
        assert data["providerId"] == provider_id and data["email"] == account["email"], describe(resp)
    after = {a["localId"]: state_of(user_record(admin, tenant_id, a["localId"])) for a in (outside, unverified)}
    assert after == before
    expect_ok(sign_in_password(client, tenant_id, elsewhere))

    # A new user outside the trusted domains starts unverified.
    data = signed_in(oidc_sign_in(client, fake_idp, provider_id, tenant_id, new_sub(), address("other.test")))
    assert data["isNewUser"] is True
    assert user_record(admin, tenant_id, data["localId"])["emailVerified"] is False


def test_oidc_provider_trust_wildcard_and_default(client, admin, make_tenant, fake_idp):
    wildcard, plain = oidc_id(), oidc_id()
    tenant_id = make_tenant()["tenantId"]
    configure_provider(admin, fake_idp, wildcard, tenant_id=tenant_id, trusted_email_domains=["*"])
    configure_provider(admin, fake_idp, plain, tenant_id=tenant_id)
    for provider_id, trusted in ((wildcard, True), (plain, False)):
        data = signed_in(oidc_sign_in(client, fake_idp, provider_id, tenant_id, new_sub(),
                                      address(f"d{uuid.uuid4().hex[:6]}.test"), email_verified=True))
        assert user_record(admin, tenant_id, data["localId"])["emailVerified"] is trusted, provider_id


# --------------------------------------------------------------------------------------
# Provider token verification
# --------------------------------------------------------------------------------------

FORGERIES = {
    "foreign_key_under_the_real_kid": lambda now, idp: {"sign_with_foreign_key": True},
    "wrong_audience": lambda now, idp: {"aud": "someone-elses-client-id"},
    "audience_list_without_the_client_id": lambda now, idp: {"aud": ["a-client", "b-client"]},
    "expired": lambda now, idp: {"iat": now - 7200, "exp": now - 300},
    "issued_in_the_future": lambda now, idp: {"iat": now + 900, "exp": now + 4500},
    "another_providers_issuer": lambda now, idp: {"issuer": idp.issuer("apple")},
    "alg_none": lambda now, idp: {"alg": "none"},
    "unknown_kid": lambda now, idp: {"kid": "no-such-kid"},
    "empty_sub": lambda now, idp: {"sub": ""},
}


@pytest.mark.parametrize("forgery", sorted(FORGERIES))
def test_forged_provider_tokens_are_refused(client, admin, make_tenant, fake_idp, forgery):
    tenant_id = idp_tenant(make_tenant, admin, fake_idp, "google.com")
    sub, email = new_sub(), address("gmail.com")
    overrides = FORGERIES[forgery](int(time.time()), fake_idp)
    token = fake_idp.id_token("google", overrides.pop("sub", sub), email=email, **overrides)
    resp = sign_in_with_idp(client, "google.com", id_token=token, tenant_id=tenant_id)
    expect_error(resp, "INVALID_IDP_RESPONSE")
    assert tenant_user_ids(admin, tenant_id) == [], "nothing is created from a refused token"
    # The genuine token for the same account works: the refusal was about the forgery.
    assert signed_in(oidc_sign_in(client, fake_idp, "google.com", tenant_id, sub, email))["isNewUser"] is True


def test_an_expiry_at_the_end_of_int64_is_not_a_crash(client, admin, make_tenant, fake_idp):
    """`exp` is the provider's integer: 2^63 - 1 once trapped the token service (`exp + leeway`). A
    far expiry is the provider's decision; the sign-in goes through and the service stays up."""
    tenant_id = idp_tenant(make_tenant, admin, fake_idp, "google.com")
    token = fake_idp.id_token("google", new_sub(), email=address("gmail.com"), exp=2**63 - 1)
    assert signed_in(sign_in_with_idp(client, "google.com", id_token=token, tenant_id=tenant_id))["isNewUser"]
    assert signed_in(oidc_sign_in(client, fake_idp, "google.com", tenant_id, new_sub(), address("gmail.com")))


def test_audience_may_be_a_list_containing_the_client_id(client, admin, make_tenant, fake_idp):
    tenant_id = idp_tenant(make_tenant, admin, fake_idp, "microsoft.com")
    token = fake_idp.id_token("microsoft", new_sub(), email=address("outlook.com"),
                              aud=["another-client", fake_idp.client_id("microsoft.com")])
    assert signed_in(sign_in_with_idp(client, "microsoft.com", id_token=token, tenant_id=tenant_id))["isNewUser"]


def test_nonce_must_match_raw_or_sha256_hex(client, admin, make_tenant, fake_idp):
    tenant_id = idp_tenant(make_tenant, admin, fake_idp, "apple.com")
    raw = secrets.token_urlsafe(24)

    def attempt(token_nonce, body_nonce, sub):
        token = fake_idp.id_token("apple", sub, email=address(), nonce=token_nonce)
        return sign_in_with_idp(client, "apple.com", id_token=token, nonce=body_nonce, tenant_id=tenant_id)

    signed_in(attempt(raw, raw, new_sub()))
    signed_in(attempt(sha256_hex(raw), raw, new_sub()))
    for token_nonce, body_nonce in (("something-else", raw), (None, raw), (raw, sha256_hex(raw)),
                                    (sha256_hex("other"), raw), (raw, None), (sha256_hex(raw), None)):
        expect_error(attempt(token_nonce, body_nonce, new_sub()), "MISSING_OR_INVALID_NONCE")
    assert len(tenant_user_ids(admin, tenant_id)) == 2


def test_a_discovery_document_cannot_point_the_keys_at_plain_http(client, admin, make_tenant, fake_idp):
    """A tenant's own OIDC issuer writes its discovery document: a jwks_uri on plain http (a cloud
    metadata endpoint, an internal service) is refused before the token service fetches it."""
    provider_id = f"oidc.meta{uuid.uuid4().hex[:8]}"
    tenant_id = idp_tenant(make_tenant, admin, fake_idp, provider_id)
    fake_idp.jwks_uri_overrides[provider_id.removeprefix("oidc.")] = "http://169.254.169.254/latest/meta-data/jwks"
    resp = oidc_sign_in(client, fake_idp, provider_id, tenant_id, new_sub(), address())
    expect_error(resp, "INVALID_IDP_RESPONSE")
    assert "jwks_uri" in describe(resp)
    assert tenant_user_ids(admin, tenant_id) == []


def test_oidc_jwks_is_cached_and_refetched_for_a_new_kid(client, admin, make_tenant, fake_idp):
    provider_id = f"oidc.cache{uuid.uuid4().hex[:8]}"  # its own JWKS URL: nothing cached yet
    tenant_id = idp_tenant(make_tenant, admin, fake_idp, provider_id)
    assert fake_idp.jwks_fetches(provider_id) <= 1
    for _ in range(2):
        signed_in(oidc_sign_in(client, fake_idp, provider_id, tenant_id, new_sub(), address()))
    assert fake_idp.jwks_fetches(provider_id) == 1, "two sign-ins, one JWKS fetch (Cache-Control max-age=300)"
    assert fake_idp.discovery_fetches(provider_id) >= 1

    new_kid = fake_idp.rotate_key(provider_id)
    token = fake_idp.id_token(provider_id, new_sub(), email=address())
    assert jwt.get_unverified_header(token)["kid"] == new_kid
    signed_in(sign_in_with_idp(client, provider_id, id_token=token, tenant_id=tenant_id))
    assert fake_idp.jwks_fetches(provider_id) == 2, "an unknown kid refetches the JWKS once"
    signed_in(oidc_sign_in(client, fake_idp, provider_id, tenant_id, new_sub(), address()))
    assert fake_idp.jwks_fetches(provider_id) == 2


def test_expired_provider_keys_keep_working_while_the_provider_is_down(client, admin, make_tenant, fake_idp):
    """A provider whose key endpoint fails after the cache expired: tokens under the keys last
    fetched still verify; a key Tessera never saw cannot, and that is a retryable 503."""
    provider_id = f"oidc.stale{uuid.uuid4().hex[:8]}"
    fake_idp.set_jwks(provider_id, max_age=1)
    tenant_id = idp_tenant(make_tenant, admin, fake_idp, provider_id)
    signed_in(oidc_sign_in(client, fake_idp, provider_id, tenant_id, new_sub(), address()))
    fake_idp.set_jwks(provider_id, failing=True)
    time.sleep(1.5)  # the cached key set has expired
    signed_in(oidc_sign_in(client, fake_idp, provider_id, tenant_id, new_sub(), address()))
    assert fake_idp.failed_jwks_fetches(provider_id) >= 1, "the expired set was not refreshed at all"

    fake_idp.rotate_key(provider_id, retire_old=True)
    resp = oidc_sign_in(client, fake_idp, provider_id, tenant_id, new_sub(), address())
    assert resp.status_code == 503 and resp.headers.get("Retry-After"), describe(resp)
    fake_idp.set_jwks(provider_id, failing=False)
    signed_in(oidc_sign_in(client, fake_idp, provider_id, tenant_id, new_sub(), address()))


def test_builtin_jwks_refetched_once_after_key_rotation(client, admin, make_tenant, fake_idp):
    tenant_id = idp_tenant(make_tenant, admin, fake_idp, "google.com")
    signed_in(oidc_sign_in(client, fake_idp, "google.com", tenant_id, new_sub(), address()))  # warm the cache
    before = fake_idp.jwks_fetches("google")
    fake_idp.rotate_key("google")
    for _ in range(3):
        signed_in(oidc_sign_in(client, fake_idp, "google.com", tenant_id, new_sub(), address()))
    assert fake_idp.jwks_fetches("google") == before + 1


# --------------------------------------------------------------------------------------
# Request errors and provider availability
# --------------------------------------------------------------------------------------

def test_sign_in_with_idp_request_errors(client, admin, make_tenant, fake_idp):
    tenant_id = idp_tenant(make_tenant, admin, fake_idp, "google.com")
    token = fake_idp.id_token("google", new_sub(), email=address())
    expect_error(sign_in_with_idp(client, "google.com", id_token=token, tenant_id=tenant_id, request_uri=None),
                 "MISSING_REQUEST_URI")
    expect_error(sign_in_with_idp(client, "google.com", id_token=token, tenant_id=tenant_id,
                                  request_uri="not a url"), "INVALID_REQUEST_URI")
    # No providerId in postBody or requestUri (idp.spec.ts:516).
    expect_error(sign_in_with_idp(client, "google.com", tenant_id=tenant_id,
                                  post_body=urlencode({"id_token": token})), "INVALID_CREDENTIAL_OR_PROVIDER_ID")
    expect_error(sign_in_with_idp(client, "google.com", tenant_id=tenant_id, post_body=""),
                 "INVALID_CREDENTIAL_OR_PROVIDER_ID")
    # A provider named without its credential.
    expect_error(sign_in_with_idp(client, "google.com", tenant_id=tenant_id), "INVALID_IDP_RESPONSE")
    for unknown in ("example.com", "oidc.", "password"):
        expect_error(sign_in_with_idp(client, unknown, id_token=token, tenant_id=tenant_id), "INVALID_PROVIDER_ID")
    resp = sign_in_with_idp(client, "saml.acme", tenant_id=tenant_id,
                            post_body=urlencode({"providerId": "saml.acme", "SAMLResponse": "PHNhbWw+"}))
    expect_status_error(resp, 501, "NOT_IMPLEMENTED")
    assert tenant_user_ids(admin, tenant_id) == []


def test_provider_not_configured_or_disabled_is_not_allowed(client, admin, make_tenant, fake_idp):
    tenant_id = make_tenant()["tenantId"]
    elsewhere = idp_tenant(make_tenant, admin, fake_idp, "google.com")  # configured only in another tenant
    sub, email = new_sub(), address("gmail.com")
    expect_error(oidc_sign_in(client, fake_idp, "google.com", tenant_id, sub, email), "OPERATION_NOT_ALLOWED")
    fb_token, _ = facebook_user(fake_idp, email=address())
    expect_error(sign_in_with_idp(client, "facebook.com", access_token=fb_token, tenant_id=tenant_id),
                 "OPERATION_NOT_ALLOWED")
    absent = oidc_id()
    expect_error(oidc_sign_in(client, fake_idp, absent, tenant_id, sub, email), "OPERATION_NOT_ALLOWED")

    configure_provider(admin, fake_idp, "google.com", tenant_id=tenant_id, enabled=False)
    configure_provider(admin, fake_idp, absent, tenant_id=tenant_id, enabled=False)
    expect_error(oidc_sign_in(client, fake_idp, "google.com", tenant_id, sub, email), "OPERATION_NOT_ALLOWED")
    expect_error(oidc_sign_in(client, fake_idp, absent, tenant_id, sub, email), "OPERATION_NOT_ALLOWED")
    assert tenant_user_ids(admin, tenant_id) == []

    # Enabled over the admin API: the very next sign-in works.
    for provider_id in ("google.com", absent):
        resp = patch_provider(admin, provider_id, tenant_id, {"enabled": True}, "enabled")
        assert expect_ok(resp)["enabled"] is True, describe(resp)
    here = signed_in(oidc_sign_in(client, fake_idp, "google.com", tenant_id, sub, email))
    signed_in(oidc_sign_in(client, fake_idp, absent, tenant_id, new_sub(), address()))
    # The same Google account in another tenant is another user.
    there = signed_in(oidc_sign_in(client, fake_idp, "google.com", elsewhere, sub, email))
    assert there["localId"] != here["localId"] and there["isNewUser"] is True


def test_disabled_user_signup_blocks_only_new_federated_users(client, admin, make_tenant, fake_idp):
    tenant_id = idp_tenant(make_tenant, admin, fake_idp, "google.com")
    sub, email = new_sub(), address("gmail.com")
    existing = signed_in(oidc_sign_in(client, fake_idp, "google.com", tenant_id, sub, email))
    resp = admin.patch_tenant(tenant_id, {"client": {"permissions": {"disabledUserSignup": True}}},
                              "client.permissions.disabledUserSignup")
    expect_ok(resp)
    expect_error(oidc_sign_in(client, fake_idp, "google.com", tenant_id, new_sub(), address("gmail.com")),
                 "ADMIN_ONLY_OPERATION")
    again = signed_in(oidc_sign_in(client, fake_idp, "google.com", tenant_id, sub, email))
    assert again["localId"] == existing["localId"]
    assert tenant_user_ids(admin, tenant_id) == [existing["localId"]]


def test_disabled_user_cannot_sign_in_with_a_provider(client, admin, make_tenant, fake_idp):
    tenant_id = idp_tenant(make_tenant, admin, fake_idp, "google.com")
    sub, email = new_sub(), address("gmail.com")
    data = signed_in(oidc_sign_in(client, fake_idp, "google.com", tenant_id, sub, email))
    expect_ok(admin_update(admin, tenant_id, localId=data["localId"], disableUser=True))
    expect_error(oidc_sign_in(client, fake_idp, "google.com", tenant_id, sub, email), "USER_DISABLED")
    expect_ok(admin_update(admin, tenant_id, localId=data["localId"], disableUser=False))
    assert signed_in(oidc_sign_in(client, fake_idp, "google.com", tenant_id, sub, email))["localId"] == data["localId"]


# --------------------------------------------------------------------------------------
# OAuth user-info providers
# --------------------------------------------------------------------------------------

def test_facebook_sign_in_through_the_graph_api(client, admin, verifier, make_tenant, fake_idp):
    tenant_id = idp_tenant(make_tenant, admin, fake_idp, "facebook.com")
    email = address()
    token, profile = facebook_user(fake_idp, email=email, name="Fay Book")
    resp = sign_in_with_idp(client, "facebook.com", access_token=token, tenant_id=tenant_id)
    data = signed_in(resp)
    assert data["providerId"] == "facebook.com" and data["federatedId"] == profile["id"], describe(resp)
    assert data["isNewUser"] is True and data["email"] == email, describe(resp)
    assert data["displayName"] == "Fay Book" and data["firstName"] == "Fay" and data["lastName"] == "Book"
    assert data["photoUrl"] == profile["picture"]["data"]["url"] and data["oauthAccessToken"] == token
    assert json.loads(data["rawUserInfo"])["id"] == profile["id"]
    seen = fake_idp.requests_to("/facebook/me")[-1]
    assert seen.status == 200 and seen.query["access_token"] == token
    assert seen.query.get("appsecret_proof") == facebook_appsecret_proof(fake_idp.client_secret("facebook"), token)
    assert {"id", "name", "email"} <= set(seen.query.get("fields", "").split(","))

    claims = verifier.verify(data["idToken"])
    assert claims["firebase"]["sign_in_provider"] == "facebook.com"
    assert claims["firebase"]["identities"] == {"facebook.com": [profile["id"]], "email": [email]}
    assert claims["email_verified"] is False, "facebook is never trusted"
    user = user_record(admin, tenant_id, data["localId"])
    assert user["emailVerified"] is False and links(user) == [("facebook.com", profile["id"])]
    assert user["displayName"] == "Fay Book" and user["photoUrl"] == profile["picture"]["data"]["url"]

    expect_error(sign_in_with_idp(client, "facebook.com", access_token="not-a-token", tenant_id=tenant_id),
                 "INVALID_IDP_RESPONSE")
    # A changed app secret: the appsecret_proof no longer matches what the provider expects.
    expect_ok(patch_provider(admin, "facebook.com", tenant_id, {"clientSecret": "a-rotated-secret"}, "clientSecret"))
    expect_error(sign_in_with_idp(client, "facebook.com", access_token=token, tenant_id=tenant_id),
                 "INVALID_IDP_RESPONSE")
    assert "appsecret_proof" in (fake_idp.requests_to("/facebook/me")[-1].refusal or "")


def test_github_sign_in_through_the_user_api(client, admin, make_tenant, fake_idp):
    tenant_id = idp_tenant(make_tenant, admin, fake_idp, "github.com")
    email = address()
    token, profile = github_user(fake_idp, email=email)
    resp = sign_in_with_idp(client, "github.com", access_token=token, tenant_id=tenant_id)
    data = signed_in(resp)
    assert data["providerId"] == "github.com" and data["federatedId"] == str(profile["id"]), describe(resp)
    assert data["screenName"] == profile["login"] and data["displayName"] == "Octo Cat", describe(resp)
    assert data["photoUrl"] == profile["avatar_url"] and data["email"] == email, describe(resp)
    assert data["oauthAccessToken"] == token and data["isNewUser"] is True, describe(resp)
    assert json.loads(data["rawUserInfo"])["login"] == profile["login"]
    seen = fake_idp.requests_to("/github/user")[-1]
    assert seen.status == 200 and seen.headers.get("authorization") == f"Bearer {token}"
    user = user_record(admin, tenant_id, data["localId"])
    assert links(user) == [("github.com", str(profile["id"]))] and user["emailVerified"] is False
    assert unverified_claims(data["idToken"])["firebase"]["identities"]["github.com"] == [str(profile["id"])]

    expect_error(sign_in_with_idp(client, "github.com", access_token="gho_wrong", tenant_id=tenant_id),
                 "INVALID_IDP_RESPONSE")
    check = fake_idp.requests_to("/github/applications/")[-1]
    assert check.method == "POST" and check.status == 404, "an unknown token fails GitHub's app check"


def test_github_and_facebook_tokens_issued_to_another_app_are_refused(client, admin, make_tenant, fake_idp):
    """The provider's user API answers for any token of the user, whichever app obtained it: a site
    the victim signed in to with GitHub or Facebook could otherwise sign in here as them. GitHub's
    token check and Facebook's appsecret_proof bind a token to this app, so both need the secret."""
    tenant_id = idp_tenant(make_tenant, admin, fake_idp, "github.com", "facebook.com")
    email = address()
    token, profile = github_user(fake_idp, email=email)
    fake_idp.oauth_user("github", token, profile, client_id="some-other-app")
    expect_error(sign_in_with_idp(client, "github.com", access_token=token, tenant_id=tenant_id),
                 "INVALID_IDP_RESPONSE")
    assert fake_idp.requests_to("/github/applications/")[-1].refusal == "token not issued to this app"
    fb_token, fb_profile = facebook_user(fake_idp, email=address())
    assert tenant_user_ids(admin, tenant_id) == []
    # Without the secret neither can be checked: the provider is refused, not trusted blindly.
    for provider_id, credential in (("github.com", {"access_token": token}),
                                    ("facebook.com", {"access_token": fb_token})):
        expect_ok(patch_provider(admin, provider_id, tenant_id, {}, "clientSecret"))
        expect_error(sign_in_with_idp(client, provider_id, tenant_id=tenant_id, **credential),
                     "OPERATION_NOT_ALLOWED")
    assert tenant_user_ids(admin, tenant_id) == []


def test_twitter_sign_in_with_an_oauth1_signed_request(client, admin, make_tenant, fake_idp):
    tenant_id = idp_tenant(make_tenant, admin, fake_idp, "twitter.com")
    email = address()
    token, secret, profile = twitter_user(fake_idp, email=email)
    resp = sign_in_with_idp(client, "twitter.com", access_token=token, token_secret=secret, tenant_id=tenant_id)
    data = signed_in(resp)
    seen = fake_idp.requests_to("/twitter/")[-1]
    assert seen.status == 200, f"the fake refused the stack's request: {seen.refusal}"
    assert seen.query == {"include_email": "true", "skip_status": "true"}
    assert data["providerId"] == "twitter.com" and data["federatedId"] == profile["id_str"], describe(resp)
    assert data["screenName"] == profile["screen_name"] and data["displayName"] == "Tweety Bird", describe(resp)
    assert data["photoUrl"] == profile["profile_image_url_https"] and data["email"] == email, describe(resp)
    assert data["oauthAccessToken"] == token and data["oauthTokenSecret"] == secret, describe(resp)
    assert json.loads(data["rawUserInfo"])["id_str"] == profile["id_str"]
    assert links(user_record(admin, tenant_id, data["localId"])) == [("twitter.com", profile["id_str"])]

    # A wrong token secret makes a wrong signature; an unknown token is unknown.
    expect_error(sign_in_with_idp(client, "twitter.com", access_token=token, token_secret="not the secret",
                                  tenant_id=tenant_id), "INVALID_IDP_RESPONSE")
    assert "bad signature" in (fake_idp.requests_to("/twitter/")[-1].refusal or "")
    expect_error(sign_in_with_idp(client, "twitter.com", access_token="1-unknown", token_secret=secret,
                                  tenant_id=tenant_id), "INVALID_IDP_RESPONSE")
    # The same account again signs in to the same user.
    again = signed_in(sign_in_with_idp(client, "twitter.com", access_token=token, token_secret=secret,
                                       tenant_id=tenant_id))
    assert again["localId"] == data["localId"] and again.get("isNewUser", False) is False


# --------------------------------------------------------------------------------------
# Linking and unlinking
# --------------------------------------------------------------------------------------

def test_anonymous_user_linked_to_google_keeps_its_id_and_stops_being_anonymous(client, admin, verifier,
                                                                               make_tenant, fake_idp):
    tenant_id = idp_tenant(make_tenant, admin, fake_idp, "google.com")
    anonymous = client.sign_up_anonymous(tenant_id)
    assert unverified_claims(anonymous.id_token).get("provider_id") == "anonymous"
    sub, email = new_sub(), address("gmail.com")
    resp = oidc_sign_in(client, fake_idp, "google.com", tenant_id, sub, email, name="Was Anonymous",
                        link_id_token=anonymous.id_token)
    data = signed_in(resp)
    assert data["localId"] == anonymous.local_id and data.get("isNewUser", False) is False, describe(resp)
    claims = verifier.verify(data["idToken"])
    assert claims["sub"] == anonymous.local_id
    assert claims["firebase"]["sign_in_provider"] == "google.com" and claims.get("provider_id") != "anonymous"
    assert claims["firebase"]["identities"] == {"google.com": [sub], "email": [email]}
    assert claims["email"] == email and claims["email_verified"] is True

    user = expect_ok(client.lookup(data["idToken"], tenant_id))["users"][0]
    assert links(user) == [("google.com", sub)]
    assert user["email"] == email and user["emailVerified"] is True and user["displayName"] == "Was Anonymous"
    refreshed = unverified_claims(client.refresh(data["refreshToken"])["id_token"])
    assert refreshed["firebase"]["sign_in_provider"] == "google.com" and refreshed.get("provider_id") != "anonymous"
    # Google now signs in to the former anonymous account.
    assert signed_in(oidc_sign_in(client, fake_idp, "google.com", tenant_id, sub, email))["localId"] \
        == anonymous.local_id
    assert tenant_user_ids(admin, tenant_id) == [anonymous.local_id]


@pytest.mark.parametrize("return_idp_credential", [False, True])
def test_link_conflicts(client, admin, make_tenant, fake_idp, return_idp_credential):
    """FEDERATED_USER_ID_ALREADY_LINKED / EMAIL_EXISTS: a 400 without returnIdpCredential, an
    HTTP 200 errorMessage with it (docs/protocol/federated.md#linking-a-federated-credential)."""
    tenant_id = idp_tenant(make_tenant, admin, fake_idp, "google.com", "facebook.com")
    flag = True if return_idp_credential else None  # None: the field is left out
    owner_sub, owner_email = new_sub(), address("gmail.com")
    owner = signed_in(oidc_sign_in(client, fake_idp, "google.com", tenant_id, owner_sub, owner_email))
    other = client.sign_up_anonymous(tenant_id)

    def check(resp, code, provider_id):
        if return_idp_credential:
            data = link_refused(resp, code)
            assert data["providerId"] == provider_id, describe(resp)
            return data
        expect_error(resp, code)
        return None

    # The owner's Google account (under another address) linked to another user.
    taken = fake_idp.id_token("google", owner_sub, email=address("gmail.com"))
    data = check(sign_in_with_idp(client, "google.com", id_token=taken, tenant_id=tenant_id,
                                  link_id_token=other.id_token, return_idp_credential=flag),
                 "FEDERATED_USER_ID_ALREADY_LINKED", "google.com")
    if data is not None:
        assert data["oauthIdToken"] == taken
    # ... or to its own user again: linked already, too.
    fresh = signed_in(oidc_sign_in(client, fake_idp, "google.com", tenant_id, owner_sub, owner_email))
    check(sign_in_with_idp(client, "google.com", id_token=fake_idp.id_token("google", owner_sub, email=owner_email),
                           tenant_id=tenant_id, link_id_token=fresh["idToken"],
                           return_idp_credential=flag),
          "FEDERATED_USER_ID_ALREADY_LINKED", "google.com")

    # A new facebook account whose email is the owner's.
    fb_token, _ = facebook_user(fake_idp, email=owner_email)
    data = check(sign_in_with_idp(client, "facebook.com", access_token=fb_token, tenant_id=tenant_id,
                                  link_id_token=other.id_token, return_idp_credential=flag),
                 "EMAIL_EXISTS", "facebook.com")
    if data is not None:
        assert data["email"] == owner_email

    assert links(user_record(admin, tenant_id, other.local_id)) == []
    assert links(user_record(admin, tenant_id, owner["localId"])) == [("google.com", owner_sub)]
    assert tenant_user_ids(admin, tenant_id) == sorted([owner["localId"], other.local_id])


def test_unlink_providers_down_to_the_last(client, admin, make_tenant, fake_idp):
    tenant_id = idp_tenant(make_tenant, admin, fake_idp, "google.com", "github.com")
    sub, email = new_sub(), address("gmail.com")
    first = signed_in(oidc_sign_in(client, fake_idp, "google.com", tenant_id, sub, email))
    gh_token, gh_profile = github_user(fake_idp, email=None)
    linked = signed_in(sign_in_with_idp(client, "github.com", access_token=gh_token, tenant_id=tenant_id,
                                        link_id_token=first["idToken"]))
    assert linked["localId"] == first["localId"]
    assert provider_ids(user_record(admin, tenant_id, first["localId"])) == ["github.com", "google.com"]

    # Unlinking needs a recent sign-in (re-auth window 3 s in the test stack): the link's fresh token.
    expect_ok(client_update(client, tenant_id, linked["idToken"], deleteProvider=["github.com"]))
    assert links(user_record(admin, tenant_id, first["localId"])) == [("google.com", sub)]
    # The github account is free again: signing in with it makes a new user.
    alone = signed_in(sign_in_with_idp(client, "github.com", access_token=gh_token, tenant_id=tenant_id))
    assert alone["isNewUser"] is True and alone["localId"] != first["localId"]

    # The last one too, as in Firebase (the emulator's setAccountInfo:1065): the user keeps its
    # session and may link another method; the provider's next sign-in makes a new user.
    fresh = signed_in(oidc_sign_in(client, fake_idp, "google.com", tenant_id, sub, email))
    expect_ok(client_update(client, tenant_id, fresh["idToken"], deleteProvider=["google.com"]))
    assert links(user_record(admin, tenant_id, first["localId"])) == []
    expect_ok(admin_update(admin, tenant_id, localId=alone["localId"], deleteProvider=["github.com"]))
    assert links(user_record(admin, tenant_id, alone["localId"])) == []


# --------------------------------------------------------------------------------------
# allowDuplicateEmails (project level; default scope)
# --------------------------------------------------------------------------------------

def test_allow_duplicate_emails_makes_one_user_per_provider(stack, client, admin, fake_idp):
    mask = "signIn.allowDuplicateEmails"
    original = expect_ok(admin.get_config())
    was = bool((original.get("signIn") or {}).get("allowDuplicateEmails"))
    providers = ("apple.com", "google.com")
    created: list[str] = []
    for provider_id in providers:  # leftovers of an interrupted run
        delete_provider_config(admin, provider_id)
    try:
        resp = admin.patch_config({"signIn": {"allowDuplicateEmails": True}}, mask)
        assert expect_ok(resp)["signIn"]["allowDuplicateEmails"] is True, describe(resp)
        for provider_id in providers:
            config = configure_provider(admin, fake_idp, provider_id)
            assert config["name"] == f"projects/{stack.project_id}/defaultSupportedIdpConfigs/{provider_id}"

        email, apple_sub, google_sub = address("gmail.com"), new_sub("apple"), new_sub("google")
        apple = signed_in(oidc_sign_in(client, fake_idp, "apple.com", None, apple_sub, email))
        created.append(apple["localId"])
        google = signed_in(oidc_sign_in(client, fake_idp, "google.com", None, google_sub, email))
        created.append(google["localId"])
        assert google["isNewUser"] is True and google["localId"] != apple["localId"], "two users for one email"
        assert "tenant" not in unverified_claims(google["idToken"])["firebase"]
        for data, provider_id, sub in ((apple, "apple.com", apple_sub), (google, "google.com", google_sub)):
            user = user_record(admin, None, data["localId"])
            assert "email" not in user, f"duplicate-email users keep the email in providerUserInfo only: {user}"
            [info] = user["providerUserInfo"]
            assert (info["providerId"], info["rawId"], info["email"]) == (provider_id, sub, email)
        again = signed_in(oidc_sign_in(client, fake_idp, "google.com", None, google_sub, email))
        assert again["localId"] == google["localId"]
    finally:
        for local_id in created:
            admin.delete_user_raw(None, local_id)
        for provider_id in providers:
            delete_provider_config(admin, provider_id)
        resp = admin.patch_config({"signIn": {"allowDuplicateEmails": was}}, mask)
        assert resp.status_code == 200, f"could not restore the project config: {describe(resp)}"
    assert bool(expect_ok(admin.get_config())["signIn"].get("allowDuplicateEmails")) is was


# --------------------------------------------------------------------------------------
# Provider configuration: admin API
# --------------------------------------------------------------------------------------

def assert_fields(data: dict, expected: dict, context: str = "") -> None:
    for name, value in expected.items():
        assert data.get(name) == value, f"{name}: {data.get(name)!r} != {value!r} {context} in {data}"


def expect_not_found(resp) -> None:
    err = expect_status_error(resp, 404, "NOT_FOUND")
    assert err["message"].split(" : ")[0] == "CONFIGURATION_NOT_FOUND", describe(resp)


def list_all(admin, path: str, key: str, page_size: int) -> list[dict]:
    items, token = [], None
    for _ in range(10):
        params = {"pageSize": page_size, **({"pageToken": token} if token else {})}
        resp = admin.request("GET", path, params=params)
        page = expect_ok(resp)
        assert len(page.get(key, [])) <= page_size, describe(resp)
        items += page.get(key, [])
        token = page.get("nextPageToken")
        if not token:
            return items
    raise AssertionError(f"{path}: paging never ends")


def test_default_supported_idp_configs_crud(stack, admin, make_tenant):
    tenant_id = make_tenant()["tenantId"]
    base = idp_config_path(stack, "defaultSupportedIdpConfigs", tenant_id)
    name = f"projects/{stack.project_id}/tenants/{tenant_id}/defaultSupportedIdpConfigs"

    def create(idp_id, body):
        return admin.request("POST", base, params={"idpId": idp_id}, json=body)

    google = {"enabled": True, "clientId": "g-client", "clientSecret": "g-secret"}
    created = expect_ok(create("google.com", google))
    assert_fields(created, {"name": f"{name}/google.com", **google})
    err = expect_status_error(create("google.com", google), 409, "ALREADY_EXISTS")
    assert err["message"].split(" : ")[0] == "CONFIGURATION_EXISTS"
    for bad in ("example.com", "oidc.acme", "password"):
        expect_error(create(bad, google), "INVALID_PROVIDER_ID")
    expect_error(create("facebook.com", {"enabled": True, "clientSecret": "fb-secret"}), "INVALID_CONFIG")
    expect_ok(create("github.com", {"enabled": False, "clientId": "gh-client"}))  # a secret is optional

    listed = list_all(admin, base, "defaultSupportedIdpConfigs", 1)
    assert sorted(c["name"] for c in listed) == [f"{name}/github.com", f"{name}/google.com"]
    assert_fields(expect_ok(admin.request("GET", f"{base}/google.com")), {"name": f"{name}/google.com", **google})

    resp = admin.request("PATCH", f"{base}/google.com", params={"updateMask": "enabled"},
                         json={"enabled": False, "clientId": "not-in-the-mask"})
    assert_fields(expect_ok(resp), {"enabled": False, "clientId": "g-client", "clientSecret": "g-secret"})
    resp = admin.request("PATCH", f"{base}/google.com", params={"updateMask": "clientId,clientSecret"},
                         json={"clientId": "g2", "clientSecret": "s2"})
    assert_fields(expect_ok(resp), {"enabled": False, "clientId": "g2", "clientSecret": "s2"})
    assert_fields(expect_ok(admin.request("GET", f"{base}/google.com")), {"clientId": "g2", "enabled": False})

    assert expect_ok(admin.request("DELETE", f"{base}/github.com")) == {}
    expect_not_found(admin.request("GET", f"{base}/github.com"))
    expect_not_found(admin.request("DELETE", f"{base}/github.com"))
    expect_not_found(admin.request("PATCH", f"{base}/github.com", params={"updateMask": "enabled"},
                                   json={"enabled": True}))
    # Another tenant sees none of it.
    other = idp_config_path(stack, "defaultSupportedIdpConfigs", make_tenant()["tenantId"])
    expect_not_found(admin.request("GET", f"{other}/google.com"))
    assert expect_ok(admin.request("GET", other)).get("defaultSupportedIdpConfigs", []) == []


def test_oauth_idp_configs_crud(stack, admin, make_tenant):
    tenant_id = make_tenant()["tenantId"]
    base = idp_config_path(stack, "oauthIdpConfigs", tenant_id)
    name = f"projects/{stack.project_id}/tenants/{tenant_id}/oauthIdpConfigs"

    def create(config_id, body):
        return admin.request("POST", base, params={"oauthIdpConfigId": config_id}, json=body)

    acme = {"clientId": "acme-client", "issuer": "https://idp.acme.test", "displayName": "Acme",
            "enabled": True, "trustedEmailDomains": ["acme.test"]}
    created = expect_ok(create("oidc.acme", acme))
    assert_fields(created, {"name": f"{name}/oidc.acme", **acme, "responseType": {"idToken": True, "code": False}})
    err = expect_status_error(create("oidc.acme", acme), 409, "ALREADY_EXISTS")
    assert err["message"].split(" : ")[0] == "CONFIGURATION_EXISTS"
    for bad in ("acme", "oidc.", "oidc.bad id", "google.com", "saml.acme"):
        expect_error(create(bad, acme), "INVALID_PROVIDER_ID")
    for issuer in ("http://idp.acme.test", "idp.acme.test", "ftp://idp.acme.test/", ""):
        expect_error(create("oidc.other", {**acme, "issuer": issuer}), "INVALID_CONFIG")
    expect_error(create("oidc.other", {k: v for k, v in acme.items() if k != "clientId"}), "INVALID_CONFIG")
    expect_not_found(admin.request("GET", f"{base}/oidc.other"))
    # Loopback issuers may be plain http (local providers, tests).
    expect_ok(create("oidc.local-1", {**acme, "issuer": "http://127.0.0.1:9/oidc/x"}))
    expect_ok(create("oidc.local_2", {**acme, "issuer": "http://localhost:9/oidc/y"}))

    listed = list_all(admin, base, "oauthIdpConfigs", 2)
    assert sorted(c["name"].rsplit("/", 1)[-1] for c in listed) == ["oidc.acme", "oidc.local-1", "oidc.local_2"]
    assert_fields(expect_ok(admin.request("GET", f"{base}/oidc.acme")), {"name": f"{name}/oidc.acme", **acme})

    resp = admin.request("PATCH", f"{base}/oidc.acme", params={"updateMask": "displayName,enabled"},
                         json={"displayName": "Acme Corp", "enabled": False, "clientId": "not-in-the-mask"})
    assert_fields(expect_ok(resp), {"displayName": "Acme Corp", "enabled": False, "clientId": "acme-client",
                                    "issuer": "https://idp.acme.test"})
    resp = admin.request("PATCH", f"{base}/oidc.acme", params={"updateMask": "trustedEmailDomains"},
                         json={"trustedEmailDomains": ["acme.test", "corp.acme.test"]})
    assert_fields(expect_ok(resp), {"trustedEmailDomains": ["acme.test", "corp.acme.test"]})
    expect_error(admin.request("PATCH", f"{base}/oidc.acme", params={"updateMask": "issuer"},
                               json={"issuer": "http://idp.acme.test"}), "INVALID_CONFIG")
    assert expect_ok(admin.request("GET", f"{base}/oidc.acme"))["issuer"] == "https://idp.acme.test"

    assert expect_ok(admin.request("DELETE", f"{base}/oidc.acme")) == {}
    expect_not_found(admin.request("GET", f"{base}/oidc.acme"))
    expect_not_found(admin.request("DELETE", f"{base}/oidc.acme"))


def test_default_supported_idps_lists_the_built_in_providers(admin):
    resp = admin.request("GET", "/v2/defaultSupportedIdps")
    entries = expect_ok(resp)["defaultSupportedIdps"]
    assert sorted(e["idpId"] for e in entries) == sorted(BUILT_IN_PROVIDER_IDS), describe(resp)
    assert all(isinstance(e.get("description"), str) and e["description"] for e in entries), describe(resp)


# --------------------------------------------------------------------------------------
# Provider configuration: the Python Admin SDK (emulator mode)
# --------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def sdk_app(stack):
    """As in test_admin_sdk.py: emulator mode with the admin token ``owner``."""
    firebase_admin = pytest.importorskip("firebase_admin")
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    assert stack.env.get("TESSERA_OWNER_TOKEN_SCOPE") == "project", \
        "the test stack must accept the Admin SDKs' `Bearer owner` (TESSERA_OWNER_TOKEN_SCOPE=project)"
    os.environ["FIREBASE_AUTH_EMULATOR_HOST"] = stack.admin_url.removeprefix("http://")  # the admin plane
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    account = {
        "type": "service_account", "project_id": stack.project_id, "private_key_id": "test",
        "private_key": key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                         serialization.NoEncryption()).decode(),
        "client_email": f"test@{stack.project_id}.iam.gserviceaccount.com", "client_id": "1",
        "token_uri": "https://oauth2.googleapis.com/token",
    }
    application = firebase_admin.initialize_app(firebase_admin.credentials.Certificate(account),
                                                {"projectId": stack.project_id},
                                                name=f"tessera-fed-{uuid.uuid4().hex[:6]}")
    yield application
    firebase_admin.delete_app(application)
    os.environ.pop("FIREBASE_AUTH_EMULATOR_HOST", None)


def test_admin_sdk_manages_oidc_provider_configs(sdk_app, client, make_tenant, fake_idp):
    from firebase_admin import auth, exceptions, tenant_mgt
    tenant_id = make_tenant()["tenantId"]
    tenant_auth = tenant_mgt.auth_for_tenant(tenant_id, app=sdk_app)
    provider_id = f"oidc.sdk{uuid.uuid4().hex[:8]}"
    issuer, client_id = fake_idp.oidc_issuer(provider_id), fake_idp.client_id(provider_id)

    created = tenant_auth.create_oidc_provider_config(provider_id, client_id=client_id, issuer=issuer,
                                                      display_name="SDK OIDC", enabled=True,
                                                      id_token_response_type=True)
    assert (created.provider_id, created.client_id, created.issuer) == (provider_id, client_id, issuer)
    assert created.display_name == "SDK OIDC" and created.enabled is True
    assert created.id_token_response_type is True and created.code_response_type is False
    fetched = tenant_auth.get_oidc_provider_config(provider_id)
    assert (fetched.provider_id, fetched.client_id, fetched.issuer, fetched.enabled) == \
        (provider_id, client_id, issuer, True)
    with pytest.raises((exceptions.ConflictError, exceptions.AlreadyExistsError)):  # 409
        tenant_auth.create_oidc_provider_config(provider_id, client_id=client_id, issuer=issuer)

    # The config made through the SDK is the one sign-in uses.
    data = signed_in(oidc_sign_in(client, fake_idp, provider_id, tenant_id, new_sub(), address()))
    assert data["providerId"] == provider_id

    updated = tenant_auth.update_oidc_provider_config(provider_id, display_name="Renamed", enabled=False)
    assert updated.display_name == "Renamed" and updated.enabled is False and updated.issuer == issuer
    expect_error(oidc_sign_in(client, fake_idp, provider_id, tenant_id, new_sub(), address()),
                 "OPERATION_NOT_ALLOWED")

    page = tenant_auth.list_oidc_provider_configs()
    assert [c.provider_id for c in page.provider_configs] == [provider_id]
    assert [c.display_name for c in page.iterate_all()] == ["Renamed"]

    tenant_auth.delete_oidc_provider_config(provider_id)
    with pytest.raises(auth.ConfigurationNotFoundError):
        tenant_auth.get_oidc_provider_config(provider_id)
    assert list(tenant_auth.list_oidc_provider_configs().iterate_all()) == []
