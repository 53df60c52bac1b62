"""Every endpoint that takes an ID token refuses anything Tessera did not sign exactly as
presented: alg none, HMAC keyed with the public key, foreign keys, unknown kids, edited
payloads, and garbage. Each must be 400 INVALID_ID_TOKEN, and nothing may change."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from dataclasses import dataclass

import jwt
import pytest
import requests
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from jwt.algorithms import RSAAlgorithm

from conftest import (HTTP_TIMEOUT, Client, Session, TenantFactory, b64url_encode,
                      expect_error, expect_ok, jwt_parts)


@dataclass
class Kit:
    tenant_id: str
    other_tenant_id: str
    victim: Session
    other: Session
    header: dict
    payload: dict
    signature: str
    spki_pem: bytes
    pkcs1_pem: bytes
    cert_pem: bytes
    attacker_key: rsa.RSAPrivateKey


def encode_segment(obj: dict) -> str:
    return b64url_encode(json.dumps(obj, separators=(",", ":")).encode())


def assemble(header: dict, payload: dict, signature: str) -> str:
    return f"{encode_segment(header)}.{encode_segment(payload)}.{signature}"


def hs256(header: dict, payload: dict, secret: bytes) -> str:
    signing_input = f"{encode_segment(header)}.{encode_segment(payload)}"
    mac = hmac.new(secret, signing_input.encode("ascii"), hashlib.sha256).digest()
    return f"{signing_input}.{b64url_encode(mac)}"


@pytest.fixture(scope="module")
def kit(stack, admin):
    factory = TenantFactory(admin)
    try:
        tenant_id = factory()["tenantId"]
        other_tenant_id = factory()["tenantId"]
        client = Client(stack)
        victim = client.sign_up_anonymous(tenant_id)
        other = client.sign_up_anonymous(tenant_id)
        header, payload, signature = jwt_parts(victim.id_token)

        jwks = expect_ok(requests.get(stack.url + "/.well-known/jwks.json", timeout=HTTP_TIMEOUT))
        jwk = next(k for k in jwks["keys"] if k["kid"] == header["kid"])
        public_key = jwt.PyJWK(jwk).key
        spki_pem = public_key.public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo)
        pkcs1_pem = public_key.public_bytes(serialization.Encoding.PEM,
                                            serialization.PublicFormat.PKCS1)
        certs = expect_ok(requests.get(
            stack.url + "/robot/v1/metadata/x509/securetoken@system.gserviceaccount.com",
            timeout=HTTP_TIMEOUT))
        cert_pem = certs[header["kid"]].encode("ascii")
        x509.load_pem_x509_certificate(cert_pem)  # sanity

        yield Kit(tenant_id, other_tenant_id, victim, other, header, payload, signature,
                  spki_pem, pkcs1_pem, cert_pem,
                  rsa.generate_private_key(public_exponent=65537, key_size=2048))
    finally:
        factory.cleanup()


def forge(kit: Kit, variant: str) -> tuple[str, str | None]:
    """Returns (token, tenantId to send)."""
    h, p, sig = dict(kit.header), dict(kit.payload), kit.signature
    kid = h["kid"]
    now = int(time.time())
    tenant = kit.tenant_id

    def tampered(**changes) -> str:
        body = dict(p)
        body.update(changes)
        return assemble(h, body, sig)

    def own_key(headers: dict) -> str:
        return jwt.encode(p, kit.attacker_key, algorithm="RS256", headers=headers)

    if variant == "alg_none":
        return assemble({"alg": "none", "typ": "JWT"}, p, ""), tenant
    if variant == "alg_none_with_kid":
        return assemble({"alg": "none", "kid": kid, "typ": "JWT"}, p, ""), tenant
    if variant == "alg_none_keeping_signature":
        return assemble({"alg": "none", "kid": kid, "typ": "JWT"}, p, sig), tenant
    if variant == "alg_NONE_uppercase":
        return assemble({"alg": "NONE", "kid": kid, "typ": "JWT"}, p, ""), tenant
    if variant == "hs256_with_public_key_spki_pem":
        return hs256({"alg": "HS256", "kid": kid, "typ": "JWT"}, p, kit.spki_pem), tenant
    if variant == "hs256_with_public_key_pkcs1_pem":
        return hs256({"alg": "HS256", "kid": kid, "typ": "JWT"}, p, kit.pkcs1_pem), tenant
    if variant == "hs256_with_certificate_pem":
        return hs256({"alg": "HS256", "kid": kid, "typ": "JWT"}, p, kit.cert_pem), tenant
    if variant == "own_rsa_key_unknown_kid":
        return own_key({"kid": "attacker-key-1", "typ": "JWT"}), tenant
    if variant == "own_rsa_key_known_kid":
        return own_key({"kid": kid, "typ": "JWT"}), tenant
    if variant == "own_rsa_key_no_kid":
        return own_key({"typ": "JWT"}), tenant
    if variant == "own_rsa_key_embedded_jwk":
        public_jwk = json.loads(RSAAlgorithm.to_jwk(kit.attacker_key.public_key()))
        return own_key({"kid": "attacker-key-2", "typ": "JWT", "jwk": public_jwk}), tenant
    if variant == "real_signature_exp_in_past":
        return tampered(iat=now - 7200, exp=now - 3600, auth_time=now - 7200), tenant
    if variant == "real_signature_aud_changed":
        return tampered(aud="another-project"), tenant
    if variant == "real_signature_iss_changed":
        return tampered(iss="https://securetoken.google.com/another-project"), tenant
    if variant == "real_signature_other_user":
        return tampered(sub=kit.other.local_id, user_id=kit.other.local_id), tenant
    if variant == "real_signature_other_tenant":
        firebase = dict(p["firebase"])
        firebase["tenant"] = kit.other_tenant_id
        # Sent without tenantId: a server that skips the signature would look the user up in
        # the other tenant and answer USER_NOT_FOUND instead of INVALID_ID_TOKEN.
        return tampered(firebase=firebase), None
    if variant == "real_payload_other_tokens_signature":
        return assemble(h, p, jwt_parts(kit.other.id_token)[2]), tenant
    if variant == "truncated_signature":
        return assemble(h, p, sig[:-8]), tenant
    if variant == "unknown_kid_real_signature":
        return assemble(dict(h, kid="no-such-kid"), p, sig), tenant
    if variant == "garbage":
        return "garbage", tenant
    if variant == "three_garbage_segments":
        return "a.b.c", tenant
    if variant == "header_only":
        return encode_segment(h), tenant
    if variant == "empty_json_segments":
        return f"{b64url_encode(b'{}')}.{b64url_encode(b'{}')}.", tenant
    if variant == "header_nested_5000_deep":
        # The header is read before the signature is checked: deep nesting must be refused,
        # not recursed into until the stack runs out.
        nested = b'{"alg":"RS256","kid":"' + kid.encode() + b'","x":' + b"[" * 5000 + b"]" * 5000 + b"}"
        return f"{b64url_encode(nested)}.{encode_segment(p)}.{sig}", tenant
    raise AssertionError(variant)


VARIANTS = [
    "alg_none", "alg_none_with_kid", "alg_none_keeping_signature", "alg_NONE_uppercase",
    "hs256_with_public_key_spki_pem", "hs256_with_public_key_pkcs1_pem",
    "hs256_with_certificate_pem",
    "own_rsa_key_unknown_kid", "own_rsa_key_known_kid", "own_rsa_key_no_kid",
    "own_rsa_key_embedded_jwk",
    "real_signature_exp_in_past", "real_signature_aud_changed", "real_signature_iss_changed",
    "real_signature_other_user", "real_signature_other_tenant",
    "real_payload_other_tokens_signature", "truncated_signature", "unknown_kid_real_signature",
    "garbage", "three_garbage_segments", "header_only", "empty_json_segments",
    "header_nested_5000_deep",
]


def test_genuine_token_is_accepted(stack, kit):
    """Control: the unmodified token works, so the refusals below are about the forgery."""
    client = Client(stack)
    data = expect_ok(client.lookup(kit.victim.id_token, kit.tenant_id))
    assert data["users"][0]["localId"] == kit.victim.local_id


@pytest.mark.parametrize("variant", VARIANTS)
def test_forged_id_token_is_refused_by_lookup_and_delete(stack, admin, kit, variant):
    client = Client(stack)
    token, tenant = forge(kit, variant)
    expect_error(client.lookup(token, tenant), "INVALID_ID_TOKEN")
    expect_error(client.delete(token, tenant), "INVALID_ID_TOKEN")
    # Nothing was deleted.
    found = admin.lookup_users(kit.tenant_id, [kit.victim.local_id, kit.other.local_id])
    assert sorted(u["localId"] for u in found) == sorted([kit.victim.local_id,
                                                          kit.other.local_id])


def test_genuine_tokens_still_work_after_forgery_attempts(stack, kit):
    client = Client(stack)
    for session in (kit.victim, kit.other):
        data = expect_ok(client.lookup(session.id_token, kit.tenant_id))
        assert data["users"][0]["localId"] == session.local_id
