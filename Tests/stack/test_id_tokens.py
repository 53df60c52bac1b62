"""Anonymous sign-up issues RS256 ID tokens that standard libraries verify from the
published keys alone (JWKS, X.509 map, OpenID discovery)."""

from __future__ import annotations

import re
import time

import jwt
import requests
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import rsa

from conftest import (ANON_SIGNUP_KIND, HTTP_TIMEOUT, TokenVerifier, body_json, describe,
                      expect_ok, jwt_parts)

JWKS_PATHS = [
    "/.well-known/jwks.json",
    "/service_accounts/v1/jwk/securetoken@system.gserviceaccount.com",
    "/www.googleapis.com/service_accounts/v1/jwk/securetoken@system.gserviceaccount.com",
]
X509_PATHS = [
    "/robot/v1/metadata/x509/securetoken@system.gserviceaccount.com",
    "/www.googleapis.com/robot/v1/metadata/x509/securetoken@system.gserviceaccount.com",
]


def check_anonymous_claims(claims: dict, stack, local_id: str, tenant_id: str | None) -> None:
    now = time.time()
    assert claims["iss"] == stack.issuer
    assert claims["aud"] == stack.project_id
    assert claims["sub"] == local_id
    assert claims["user_id"] == local_id
    for name in ("iat", "exp", "auth_time"):
        assert isinstance(claims.get(name), int), f"{name} must be whole seconds: {claims}"
    assert claims["exp"] == claims["iat"] + 3600, claims
    assert abs(claims["iat"] - now) < 120, claims
    assert claims["auth_time"] <= claims["iat"], claims
    assert claims.get("provider_id") == "anonymous", claims
    firebase = claims.get("firebase")
    assert isinstance(firebase, dict), claims
    assert firebase.get("identities") == {}, claims
    assert firebase.get("sign_in_provider") == "anonymous", claims
    assert firebase.get("tenant") == tenant_id, claims
    assert "email" not in claims, claims


def test_anonymous_sign_up_returns_tokens_verifiable_from_jwks_url_alone(stack, client, tenant_id):
    resp = client.sign_up_raw(tenant_id)
    data = expect_ok(resp)
    assert data.get("kind") == ANON_SIGNUP_KIND, describe(resp)
    assert data.get("expiresIn") == "3600", describe(resp)
    assert "email" not in data, describe(resp)
    local_id, id_token = data["localId"], data["idToken"]
    assert isinstance(data.get("refreshToken"), str) and len(data["refreshToken"]) >= 16

    header, _, _ = jwt_parts(id_token)
    assert header.get("alg") == "RS256", header
    assert header.get("typ") == "JWT", header
    assert isinstance(header.get("kid"), str) and header["kid"], header

    # A relying party that knows only the JWKS URL.
    claims = TokenVerifier(stack).verify(id_token)
    check_anonymous_claims(claims, stack, local_id, tenant_id)


def test_jwks_endpoints_publish_the_signing_key_in_standard_form(stack, client, tenant_id):
    session = client.sign_up_anonymous(tenant_id)
    kid = jwt_parts(session.id_token)[0]["kid"]
    key_sets = []
    for path in JWKS_PATHS:
        resp = requests.get(stack.url + path, timeout=HTTP_TIMEOUT)
        data = expect_ok(resp)
        keys = data.get("keys")
        assert isinstance(keys, list) and keys, describe(resp)
        for key in keys:
            assert key.get("kty") == "RSA", key
            assert key.get("alg") == "RS256", key
            assert key.get("use") == "sig", key
            assert isinstance(key.get("kid"), str) and key["kid"], key
            assert re.fullmatch(r"[A-Za-z0-9_-]+", key.get("n", "")), key
            assert re.fullmatch(r"[A-Za-z0-9_-]+", key.get("e", "")), key
            assert "d" not in key and "p" not in key, "private key material published!"
        kids = sorted(k["kid"] for k in keys)
        assert kid in kids, f"{path} lacks the signing kid {kid}: {kids}"
        key_sets.append(kids)
        # Every JWKS path verifies the token with a standard client.
        claims = TokenVerifier(stack, stack.url + path).verify(session.id_token)
        assert claims["sub"] == session.local_id
    assert all(ks == key_sets[0] for ks in key_sets), key_sets


def test_x509_certificate_map_verifies_id_tokens(stack, client, tenant_id):
    session = client.sign_up_anonymous(tenant_id)
    kid = jwt_parts(session.id_token)[0]["kid"]
    jwks_kids = sorted(k["kid"] for k in
                       expect_ok(requests.get(stack.url + JWKS_PATHS[0], timeout=HTTP_TIMEOUT))["keys"])
    for path in X509_PATHS:
        resp = requests.get(stack.url + path, timeout=HTTP_TIMEOUT)
        certs = expect_ok(resp)
        cache_control = resp.headers.get("Cache-Control", "")
        assert "public" in cache_control, f"Cache-Control {cache_control!r}: {describe(resp)}"
        match = re.search(r"max-age=(\d+)", cache_control)
        assert match and int(match.group(1)) > 0, f"Cache-Control {cache_control!r}"
        assert sorted(certs) == jwks_kids, (sorted(certs), jwks_kids)
        assert kid in certs, describe(resp)
        cert = x509.load_pem_x509_certificate(certs[kid].encode("ascii"))
        public_key = cert.public_key()
        assert isinstance(public_key, rsa.RSAPublicKey)
        assert public_key.key_size >= 2048
        claims = jwt.decode(session.id_token, public_key, algorithms=["RS256"],
                            audience=stack.project_id, issuer=stack.issuer, leeway=5)
        assert claims["sub"] == session.local_id
        assert claims["firebase"]["tenant"] == tenant_id


def test_openid_discovery_documents_point_at_working_keys(stack, client, tenant_id):
    session = client.sign_up_anonymous(tenant_id)
    for path in ("/.well-known/openid-configuration",
                 f"/securetoken.google.com/{stack.project_id}/.well-known/openid-configuration"):
        resp = requests.get(stack.url + path, timeout=HTTP_TIMEOUT)
        doc = expect_ok(resp)
        assert doc.get("issuer") == stack.issuer, describe(resp)
        jwks_uri = doc.get("jwks_uri")
        assert isinstance(jwks_uri, str) and jwks_uri.startswith("http"), describe(resp)
        assert "RS256" in doc.get("id_token_signing_alg_values_supported", []), describe(resp)
        assert isinstance(doc.get("response_types_supported"), list), describe(resp)
        assert isinstance(doc.get("subject_types_supported"), list), describe(resp)
        # The advertised jwks_uri must itself work for a standard client.
        keys_resp = requests.get(jwks_uri, timeout=HTTP_TIMEOUT)
        assert keys_resp.status_code == 200, f"jwks_uri {jwks_uri}: {describe(keys_resp)}"
        assert isinstance(body_json(keys_resp).get("keys"), list), describe(keys_resp)
        claims = TokenVerifier(stack, jwks_uri).verify(session.id_token)
        assert claims["sub"] == session.local_id


def test_sign_up_works_with_google_host_prefix_and_key_header(stack, client, tenant_id, verifier):
    resp = client.sign_up_raw(tenant_id, prefixed=True, key_in_header=True)
    data = expect_ok(resp)
    assert data.get("kind") == ANON_SIGNUP_KIND, describe(resp)
    claims = verifier.verify(data["idToken"])
    assert claims["sub"] == data["localId"]
    assert claims["firebase"]["tenant"] == tenant_id
