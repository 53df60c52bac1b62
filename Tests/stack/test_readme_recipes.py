"""The README's recipes for verifying Tessera's ID tokens in a backend (docs/protocol/admin.md#the-admin-plane), run as written: the
Python code blocks of its "Verifying Tessera's ID tokens" section are executed, and each function accepts
a real token and refuses forged ones: signed by another key, an edited payload, alg none, and, signed
with the stack's own key, another audience or issuer, expired, issued in the future, no subject, and a
real token of another tenant."""

from __future__ import annotations

import base64
import json
import re
import time
from pathlib import Path

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from conftest import REPO_ROOT, jwt_parts


def recipes() -> dict:
    text = (REPO_ROOT / "README.md").read_text()
    section = text[text.index("### Verifying Tessera's ID tokens in a backend"):]
    section = section[:section.index("\n## ")] if "\n## " in section else section
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 2, "the README has the two Python recipes"
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, "README.md", "exec"), namespace)  # noqa: S102 - the README's own code
    return {name: namespace[name] for name in ("verify_with_pyjwt", "verify_with_google_auth")}


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def edited(token: str, **changes) -> str:
    header, payload, _ = jwt_parts(token)
    head, _, signature = token.split(".")
    payload.update(changes)
    return ".".join([head, b64(json.dumps(payload).encode()), signature])


@pytest.mark.parametrize("name", ["verify_with_pyjwt", "verify_with_google_auth"])
def test_the_readme_recipes_accept_real_tokens_and_refuse_forged_ones(stack, client, make_tenant, name):
    verify = recipes()[name]
    tenant = make_tenant()["tenantId"]
    session = client.sign_up_anonymous(tenant)
    claims = verify(session.id_token, stack.url, stack.project_id, tenant)
    assert claims["sub"] == session.local_id and claims["firebase"]["tenant"] == tenant

    header, payload, _ = jwt_parts(session.id_token)
    foreign_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    # The stack's own signing key (the test reads it from the key directory): tokens whose signature is
    # good and whose claims are wrong, which only the claim checks can refuse.
    keys_dir = Path(stack.env["TESSERA_SIGNING_KEYS_DIR"])
    pem = (keys_dir / f"{header['kid']}.pem").read_bytes()
    real_key = serialization.load_pem_private_key(pem, password=None)

    def signed(**changes):
        return jwt.encode({**payload, **changes}, real_key, algorithm="RS256", headers={"kid": header["kid"]})

    assert verify(signed(), stack.url, stack.project_id, tenant)["sub"] == session.local_id
    forged = [
        ("another audience", signed(aud="other-project")),
        ("another issuer", signed(iss="https://securetoken.google.com/other-project")),
        ("expired", signed(exp=int(time.time()) - 3600, iat=int(time.time()) - 7200)),
        ("no subject", signed(sub="")),
        ("issued in the future", signed(iat=int(time.time()) + 3600, exp=int(time.time()) + 7200)),
        ("another key, same kid", jwt.encode(payload, foreign_key, algorithm="RS256", headers={"kid": header["kid"]})),
        ("edited payload", edited(session.id_token, sub="someone-else", user_id="someone-else")),
        ("alg none", b64(json.dumps({"alg": "none", "typ": "JWT"}).encode()) + "."
         + b64(json.dumps(payload).encode()) + "."),
    ]
    for what, token in forged:
        with pytest.raises(Exception):
            verify(token, stack.url, stack.project_id, tenant)
            pytest.fail(f"{name} accepted a forged token: {what}")
    # A real token of another tenant is refused when the backend names its tenant.
    other = make_tenant()["tenantId"]
    with pytest.raises(Exception):
        verify(session.id_token, stack.url, stack.project_id, other)
