"""A local fake identity provider for the federated sign-in tests (API.md A.8; issue-5 wire spec).

The test stack points every built-in provider at one base URL ``B`` (``IDP_FAKE_URL`` in the stack's
env file, ``http://127.0.0.1:<TEST_PORT+26>``)::

    B/<google|apple|microsoft|yahoo>/jwks            the provider's JWKS (Cache-Control: max-age=300)
    B/oidc/<name>/.well-known/openid-configuration   {issuer: B/oidc/<name>, jwks_uri: B/oidc/<name>/jwks}
    B/oidc/<name>/jwks                               a generic OIDC provider's JWKS (any name works)
    B/facebook/me?access_token=T[&appsecret_proof=P] Graph API "me"
    B/github/user  (Authorization: Bearer T)         GitHub REST "user"
    POST B/github/applications/<client id>/token     GitHub's check that token T was issued to that app
                   (Basic client id:secret, {"access_token": T}): 200, or 404
    B/twitter/verify_credentials.json                Twitter 1.1, OAuth 1.0a (HMAC-SHA1, RFC 5849)

google/apple/microsoft and every generic OIDC provider sign RS256 with RSA-2048 keys; yahoo signs
ES256 with a P-256 key. Tokens are minted with :meth:`FakeIdp.id_token`; access tokens for the three
OAuth providers are registered with :meth:`FakeIdp.oauth_user`.

The module also has the HTTP helpers the tests use against the stack: :func:`sign_in_with_idp`,
:func:`configure_provider`, :func:`idp_config_path`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import secrets
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlparse

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa

DEFAULT = object()  # "use the fake's default" for optional arguments where None means "omit"

MICROSOFT_CONSUMER_TENANT = "9188040d-6c67-4c5b-b112-36a304b66dad"
OIDC_BUILT_INS = {"google": "google.com", "apple": "apple.com", "microsoft": "microsoft.com",
                  "yahoo": "yahoo.com"}
OAUTH_BUILT_INS = {"facebook": "facebook.com", "github": "github.com", "twitter": "twitter.com"}
BUILT_IN_PROVIDER_IDS = tuple(OIDC_BUILT_INS.values()) + tuple(OAUTH_BUILT_INS.values())
JWKS_MAX_AGE = 300


def b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _int_bytes(value: int, length: int | None = None) -> bytes:
    length = length or max(1, (value.bit_length() + 7) // 8)
    return value.to_bytes(length, "big")


def _key_name(provider: str) -> str:
    """The fake's name for a provider: ``google`` for google/google.com, ``oidc.<x>`` for oidc.<x>."""
    if provider in OIDC_BUILT_INS or provider in OAUTH_BUILT_INS:
        return provider
    for short, provider_id in {**OIDC_BUILT_INS, **OAUTH_BUILT_INS}.items():
        if provider == provider_id:
            return short
    if provider.startswith("oidc.") and len(provider) > 5:
        return provider
    raise ValueError(f"unknown provider {provider!r}: use google(.com), apple(.com), microsoft(.com), "
                     f"yahoo(.com), facebook(.com), github(.com), twitter(.com) or oidc.<name>")


def provider_id_of(provider: str) -> str:
    """``google`` → ``google.com``; ``oidc.acme`` stays."""
    name = _key_name(provider)
    return OIDC_BUILT_INS.get(name) or OAUTH_BUILT_INS.get(name) or name


# --------------------------------------------------------------------------------------
# Keys
# --------------------------------------------------------------------------------------

@dataclass
class SigningKey:
    kid: str
    alg: str  # RS256 or ES256
    private: Any

    @staticmethod
    def generate(alg: str, kid: str | None = None) -> "SigningKey":
        # Random kids: a stack that outlives one test session may still cache the previous
        # session's JWKS, and must see the new keys as unknown kids (and refetch), not as
        # known kids with a bad signature.
        kid = kid or f"{alg.lower()}-{uuid.uuid4().hex[:12]}"
        if alg == "RS256":
            return SigningKey(kid, alg, rsa.generate_private_key(public_exponent=65537, key_size=2048))
        if alg == "ES256":
            return SigningKey(kid, alg, ec.generate_private_key(ec.SECP256R1()))
        raise ValueError(alg)

    def jwk(self) -> dict:
        public = self.private.public_key().public_numbers()
        if self.alg == "RS256":
            return {"kty": "RSA", "use": "sig", "alg": "RS256", "kid": self.kid,
                    "n": b64url(_int_bytes(public.n)), "e": b64url(_int_bytes(public.e))}
        return {"kty": "EC", "use": "sig", "alg": "ES256", "kid": self.kid, "crv": "P-256",
                "x": b64url(_int_bytes(public.x, 32)), "y": b64url(_int_bytes(public.y, 32))}


@dataclass
class OidcState:
    """One OIDC provider of the fake (a built-in or a generic ``oidc.<name>``)."""
    alg: str
    keys: list[SigningKey] = field(default_factory=list)  # the last one signs
    jwks_fetches: int = 0
    discovery_fetches: int = 0
    max_age: int = JWKS_MAX_AGE  # the JWKS answer's Cache-Control max-age
    failing: bool = False  # the JWKS endpoint answers 503 (a provider outage)
    failed_fetches: int = 0

    @property
    def current(self) -> SigningKey:
        return self.keys[-1]


@dataclass
class OAuthUser:
    provider: str  # facebook / github / twitter
    token: str
    profile: dict
    token_secret: str | None = None
    client_id: str | None = None  # twitter: the consumer key the stack must sign with
    client_secret: str | None = None  # facebook: appsecret_proof key; twitter: consumer secret


@dataclass
class RecordedRequest:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    status: int = 0
    refusal: str | None = None  # why the fake refused it, for assertion messages


# --------------------------------------------------------------------------------------
# OAuth 1.0a (RFC 5849) — used by the fake to verify and by tests to sign
# --------------------------------------------------------------------------------------

def oauth_encode(value: str) -> str:
    """RFC 5849 §3.6 percent-encoding (RFC 3986 unreserved characters kept)."""
    return quote(value, safe="~-._")


def oauth1_base_string(method: str, base_url: str, params: list[tuple[str, str]]) -> str:
    """§3.4.1: METHOD & enc(base URL) & enc(sorted, encoded ``name=value`` pairs joined by ``&``)."""
    encoded = sorted((oauth_encode(k), oauth_encode(v)) for k, v in params)
    normalized = "&".join(f"{k}={v}" for k, v in encoded)
    return "&".join([method.upper(), oauth_encode(base_url), oauth_encode(normalized)])


def oauth1_signature(method: str, base_url: str, params: list[tuple[str, str]],
                     consumer_secret: str, token_secret: str) -> str:
    """HMAC-SHA1 signature (§3.4.2), base64."""
    key = f"{oauth_encode(consumer_secret)}&{oauth_encode(token_secret)}".encode()
    digest = hmac.new(key, oauth1_base_string(method, base_url, params).encode(), hashlib.sha1).digest()
    return base64.b64encode(digest).decode("ascii")


def oauth1_authorization(method: str, url: str, *, consumer_key: str, consumer_secret: str,
                         token: str, token_secret: str, nonce: str | None = None,
                         timestamp: int | None = None) -> str:
    """The ``Authorization: OAuth ...`` header a client would send for ``url`` (query included)."""
    parsed = urlparse(url)
    base_url = f"{parsed.scheme.lower()}://{parsed.netloc.lower()}{parsed.path or '/'}"
    oauth = {
        "oauth_consumer_key": consumer_key, "oauth_nonce": nonce or secrets.token_hex(16),
        "oauth_signature_method": "HMAC-SHA1", "oauth_timestamp": str(timestamp or int(time.time())),
        "oauth_token": token, "oauth_version": "1.0",
    }
    params = parse_qsl(parsed.query, keep_blank_values=True) + list(oauth.items())
    oauth["oauth_signature"] = oauth1_signature(method, base_url, params, consumer_secret, token_secret)
    return "OAuth " + ", ".join(f'{oauth_encode(k)}="{oauth_encode(v)}"' for k, v in oauth.items())


def parse_oauth_header(value: str) -> dict[str, str] | None:
    if not value or not value[:6].lower() == "oauth ":
        return None
    return {unquote(k): unquote(v) for k, v in re.findall(r'([A-Za-z0-9_.~%-]+)\s*=\s*"([^"]*)"', value[6:])}


def facebook_appsecret_proof(client_secret: str, access_token: str) -> str:
    return hmac.new(client_secret.encode(), access_token.encode(), hashlib.sha256).hexdigest()


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


# --------------------------------------------------------------------------------------
# The fake
# --------------------------------------------------------------------------------------

class FakeIdp:
    """The fake provider. ``base_url`` is ``http://127.0.0.1:<port>`` (no trailing slash)."""

    def __init__(self, base_url: str):
        parsed = urlparse(base_url)
        assert parsed.scheme == "http" and parsed.port, f"IDP_FAKE_URL must be http://host:port, got {base_url!r}"
        self.base_url = base_url.rstrip("/")
        self.host = parsed.hostname or "127.0.0.1"
        self.port = parsed.port
        self._lock = threading.RLock()
        self._oidc: dict[str, OidcState] = {}
        for short, _ in OIDC_BUILT_INS.items():
            alg = "ES256" if short == "yahoo" else "RS256"
            self._oidc[short] = OidcState(alg, [SigningKey.generate(alg, f"{short}-{uuid.uuid4().hex[:12]}")])
        self._foreign: dict[str, SigningKey] = {}
        self._oauth: dict[tuple[str, str], OAuthUser] = {}
        # A generic provider's discovery document names this jwks_uri instead of its own (by name).
        self.jwks_uri_overrides: dict[str, str] = {}
        self.requests: list[RecordedRequest] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> "FakeIdp":
        handler = type("FakeIdpHandler", (_Handler,), {"idp": self})
        self._server = ThreadingHTTPServer((self.host, self.port), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-idp", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> "FakeIdp":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- naming -----------------------------------------------------------------------------

    def issuer(self, provider: str) -> str:
        """``iss`` of a provider's tokens: B/google, B/apple…, B/oidc/<name> for ``oidc.<name>``."""
        name = _key_name(provider)
        if name.startswith("oidc."):
            return self.oidc_issuer(name)
        assert name in OIDC_BUILT_INS, f"{provider} has no ID tokens"
        return f"{self.base_url}/{name}"

    def oidc_issuer(self, name: str) -> str:
        """The issuer URL of generic OIDC provider ``name`` (``acme`` or ``oidc.acme``)."""
        name = name.removeprefix("oidc.")
        assert re.fullmatch(r"[A-Za-z0-9._-]+", name), name
        return f"{self.base_url}/oidc/{name}"

    def jwks_url(self, provider: str) -> str:
        return self.issuer(provider) + "/jwks"

    @staticmethod
    def client_id(provider: str) -> str:
        """The default client id (OIDC ``aud``; twitter's consumer key) the helpers configure."""
        return f"tessera-test-{_key_name(provider).replace('.', '-')}-client"

    @staticmethod
    def client_secret(provider: str) -> str:
        """The default client secret (facebook app secret; twitter consumer secret)."""
        return f"secret-of-{_key_name(provider)}"

    # -- OIDC keys --------------------------------------------------------------------------

    def _state(self, provider: str) -> OidcState:
        name = _key_name(provider)
        with self._lock:
            if name not in self._oidc:
                assert name.startswith("oidc."), f"{provider} has no ID tokens"
                self._oidc[name] = OidcState("RS256", [SigningKey.generate("RS256")])
            return self._oidc[name]

    def _state_for_path(self, name: str) -> OidcState | None:
        if name in OIDC_BUILT_INS:
            return self._state(name)
        if re.fullmatch(r"[A-Za-z0-9._-]+", name):
            return self._state("oidc." + name)
        return None

    def current_kid(self, provider: str) -> str:
        with self._lock:
            return self._state(provider).current.kid

    def kids(self, provider: str) -> list[str]:
        with self._lock:
            return [k.kid for k in self._state(provider).keys]

    def rotate_key(self, provider: str, *, retire_old: bool = False) -> str:
        """A new signing key (new kid) signs from now on; the old ones stay published unless
        ``retire_old``. Returns the new kid."""
        with self._lock:
            state = self._state(provider)
            key = SigningKey.generate(state.alg)
            state.keys = ([] if retire_old else state.keys) + [key]
            return key.kid

    def jwks(self, provider: str) -> dict:
        with self._lock:
            return {"keys": [k.jwk() for k in self._state(provider).keys]}

    def set_jwks(self, provider: str, *, max_age: int | None = None, failing: bool | None = None) -> None:
        """How the provider's JWKS endpoint answers: its cache lifetime, or an outage (503)."""
        with self._lock:
            state = self._state(provider)
            if max_age is not None:
                state.max_age = max_age
            if failing is not None:
                state.failing = failing

    def failed_jwks_fetches(self, provider: str) -> int:
        with self._lock:
            return self._state(provider).failed_fetches

    def jwks_fetches(self, provider: str) -> int:
        with self._lock:
            return self._state(provider).jwks_fetches

    def discovery_fetches(self, provider: str) -> int:
        with self._lock:
            return self._state(provider).discovery_fetches

    def public_key(self, provider: str, kid: str | None = None):
        with self._lock:
            state = self._state(provider)
            key = state.current if kid is None else next(k for k in state.keys if k.kid == kid)
            return key.private.public_key()

    # -- ID tokens --------------------------------------------------------------------------

    def id_token(self, provider: str, sub: str, *, email: str | None = None,
                 email_verified: bool | None = True, name: str | None = None,
                 picture: str | None = None, given_name: str | None = None,
                 family_name: str | None = None, aud: Any = DEFAULT, nonce: str | None = None,
                 iat: int | None = None, exp: int | None = None, issuer: str | None = None,
                 sign_with_foreign_key: bool = False, kid: Any = DEFAULT, alg: str | None = None,
                 extra: dict | None = None, omit: tuple[str, ...] = ()) -> str:
        """An ID token of ``provider`` (google, google.com, …, oidc.<name>) for ``sub``.

        ``email_verified`` is sent only with an email (None: left out). ``aud`` defaults to
        :meth:`client_id` (a list is sent as a JSON array). ``kid``: DEFAULT = the current key,
        None = no kid header, a string = that kid. ``sign_with_foreign_key`` signs with a key the
        JWKS does not publish, under the current (real) kid. ``alg="none"`` makes an unsigned
        token. ``omit`` drops claims after everything else is set.
        """
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": issuer or self.issuer(provider),
            "aud": self.client_id(provider) if aud is DEFAULT else aud,
            "sub": sub,
            "iat": now if iat is None else iat,
        }
        claims["exp"] = claims["iat"] + 3600 if exp is None else exp
        if _key_name(provider) == "microsoft":
            # A personal Microsoft account's token: its tenant is the consumer (MSA) tenant.
            claims["tid"] = MICROSOFT_CONSUMER_TENANT
        if email is not None:
            claims["email"] = email
            if email_verified is not None:
                claims["email_verified"] = email_verified
        for claim, value in (("name", name), ("picture", picture), ("given_name", given_name),
                             ("family_name", family_name), ("nonce", nonce)):
            if value is not None:
                claims[claim] = value
        claims.update(extra or {})
        for claim in omit:
            claims.pop(claim, None)

        with self._lock:
            state = self._state(provider)
            signing = state.current
            if sign_with_foreign_key:
                signing = self._foreign.setdefault(state.alg, SigningKey.generate(state.alg))
            header_kid = state.current.kid if kid is DEFAULT else kid
            algorithm = alg or state.alg
        headers: dict[str, Any] = {"typ": "JWT"}
        if header_kid is not None:
            headers["kid"] = header_kid
        if algorithm == "none":
            header = {"alg": "none", **headers}
            return (f"{b64url(json.dumps(header, separators=(',', ':')).encode())}."
                    f"{b64url(json.dumps(claims, separators=(',', ':')).encode())}.")
        return jwt.encode(claims, signing.private, algorithm=algorithm, headers=headers)

    # -- OAuth user-info providers ----------------------------------------------------------

    def oauth_user(self, provider: str, token: str, profile: dict, token_secret: str | None = None,
                   *, client_id: Any = DEFAULT, client_secret: Any = DEFAULT) -> OAuthUser:
        """Registers access token ``token`` of facebook/github/twitter: its user-info answer is
        ``profile``. facebook: with a ``client_secret`` (default :meth:`client_secret`; None = no
        check) the request must carry a matching ``appsecret_proof``. twitter: the OAuth 1.0a
        signature must use consumer key ``client_id`` / secret ``client_secret`` (defaults as
        configured by :func:`configure_provider`) and ``token_secret``."""
        name = _key_name(provider)
        assert name in OAUTH_BUILT_INS, f"{provider} is not an OAuth user-info provider"
        if name == "twitter":
            assert token_secret is not None, "twitter access tokens come with a token secret"
        user = OAuthUser(
            provider=name, token=token, profile=profile, token_secret=token_secret,
            client_id=self.client_id(name) if client_id is DEFAULT else client_id,
            client_secret=(self.client_secret(name) if client_secret is DEFAULT else client_secret)
            if name in ("facebook", "twitter") else None)
        with self._lock:
            self._oauth[(name, token)] = user
        return user

    def forget_oauth_user(self, provider: str, token: str) -> None:
        with self._lock:
            self._oauth.pop((_key_name(provider), token), None)

    def _oauth_lookup(self, provider: str, token: str) -> OAuthUser | None:
        with self._lock:
            return self._oauth.get((provider, token))

    # -- request log ------------------------------------------------------------------------

    def requests_to(self, path_prefix: str) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.path.startswith(path_prefix)]

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)


class _Handler(BaseHTTPRequestHandler):
    idp: FakeIdp  # set on the subclass made in FakeIdp.start
    protocol_version = "HTTP/1.1"
    server_version = "FakeIdp/1"
    timeout = 30  # an idle keep-alive connection's thread ends after this

    def log_message(self, format, *args):  # noqa: A002 - quiet: pytest shows failures itself
        pass

    def _send_json(self, record: RecordedRequest, status: int, body: Any, *,
                   headers: dict[str, str] | None = None, refusal: str | None = None) -> None:
        raw = json.dumps(body).encode()
        record.status, record.refusal = status, refusal
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(raw)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(raw)

    def do_POST(self):  # noqa: N802 - only GitHub's token check is a POST
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        path = urlparse(self.path).path
        record = RecordedRequest("POST", path, {}, {k.lower(): v for k, v in self.headers.items()})
        self.idp._record(record)
        parts = [p for p in path.split("/") if p]
        if len(parts) == 4 and parts[:2] == ["github", "applications"] and parts[3] == "token":
            return self._github_token_check(record, parts[2], raw)
        self._send_json(record, 405, {"error": "method not allowed"})

    def _github_token_check(self, record: RecordedRequest, client_id: str, raw: bytes) -> None:
        """GitHub's POST /applications/{client_id}/token: Basic client_id:client_secret; 200 when the
        token was issued to that app, 404 otherwise."""
        scheme, _, encoded = record.headers.get("authorization", "").partition(" ")
        try:
            login, _, secret = base64.b64decode(encoded).decode().partition(":")
        except ValueError:
            login, secret = "", ""
        if scheme.lower() != "basic" or login != client_id or secret != self.idp.client_secret("github"):
            return self._send_json(record, 404, {"message": "Not Found"}, refusal="bad app credentials")
        try:
            token = json.loads(raw or b"{}").get("access_token", "")
        except ValueError:
            token = ""
        user = self.idp._oauth_lookup("github", token) if token else None
        if user is None or user.client_id != client_id:
            return self._send_json(record, 404, {"message": "Not Found"}, refusal="token not issued to this app")
        self._send_json(record, 200, {"token": token, "app": {"client_id": client_id}, "user": user.profile})

    def do_GET(self):  # noqa: N802
        parsed = urlparse(self.path)
        path = parsed.path
        query = dict(parse_qsl(parsed.query, keep_blank_values=True))
        record = RecordedRequest("GET", path, query, {k.lower(): v for k, v in self.headers.items()})
        self.idp._record(record)
        parts = [p for p in path.split("/") if p]
        idp = self.idp
        try:
            if len(parts) == 2 and parts[0] in OIDC_BUILT_INS and parts[1] == "jwks":
                return self._jwks(record, parts[0])
            if len(parts) == 3 and parts[0] in OIDC_BUILT_INS and parts[1:] == [".well-known", "openid-configuration"]:
                return self._discovery(record, parts[0], idp.issuer(parts[0]))
            if len(parts) == 3 and parts[0] == "oidc" and parts[2] == "jwks":
                return self._jwks(record, parts[1], oidc=True)
            if len(parts) == 4 and parts[0] == "oidc" and parts[2:] == [".well-known", "openid-configuration"]:
                return self._discovery(record, parts[1], None, oidc=True)
            if path == "/facebook/me":
                return self._facebook(record, query)
            if path == "/github/user":
                return self._github(record)
            if path == "/twitter/verify_credentials.json":
                return self._twitter(record, parsed.query)
        except Exception as exc:  # a bug in the fake must show up as a readable answer
            return self._send_json(record, 500, {"error": f"fake IdP error: {exc!r}"}, refusal=repr(exc))
        return self._send_json(record, 404, {"error": "not found"}, refusal="no such path")

    # -- OIDC ------------------------------------------------------------------------------

    def _jwks(self, record: RecordedRequest, name: str, oidc: bool = False) -> None:
        state = self.idp._state_for_path(name) if oidc else self.idp._state(name)
        if state is None:
            return self._send_json(record, 404, {"error": "bad provider name"}, refusal="bad name")
        with self.idp._lock:
            if state.failing:
                state.failed_fetches += 1
                failing = True
            else:
                state.jwks_fetches += 1
                failing = False
                body = {"keys": [k.jwk() for k in state.keys]}
                max_age = state.max_age
        if failing:
            return self._send_json(record, 503, {"error": "outage"}, refusal="JWKS outage (set_jwks)")
        self._send_json(record, 200, body, headers={"Cache-Control": f"public, max-age={max_age}"})

    def _discovery(self, record: RecordedRequest, name: str, issuer: str | None, oidc: bool = False) -> None:
        state = self.idp._state_for_path(name) if oidc else self.idp._state(name)
        if state is None:
            return self._send_json(record, 404, {"error": "bad provider name"}, refusal="bad name")
        issuer = issuer or self.idp.oidc_issuer(name)
        with self.idp._lock:
            state.discovery_fetches += 1
        self._send_json(record, 200, {
            "issuer": issuer,
            "jwks_uri": self.idp.jwks_uri_overrides.get(name, issuer + "/jwks"),
            "authorization_endpoint": issuer + "/authorize",
            "token_endpoint": issuer + "/token",
            "response_types_supported": ["code", "id_token"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": [state.alg],
        }, headers={"Cache-Control": f"public, max-age={JWKS_MAX_AGE}"})

    # -- OAuth user-info ---------------------------------------------------------------------

    def _facebook(self, record: RecordedRequest, query: dict[str, str]) -> None:
        token = query.get("access_token", "")
        user = self.idp._oauth_lookup("facebook", token) if token else None
        if user is None:
            return self._send_json(record, 400, {"error": {
                "message": "Invalid OAuth access token.", "type": "OAuthException", "code": 190}},
                refusal="unknown access token")
        if user.client_secret is not None:
            expected = facebook_appsecret_proof(user.client_secret, token)
            if not hmac.compare_digest(query.get("appsecret_proof", ""), expected):
                return self._send_json(record, 400, {"error": {
                    "message": "Invalid appsecret_proof provided in the API argument",
                    "type": "GraphMethodException", "code": 100}}, refusal="bad or missing appsecret_proof")
        self._send_json(record, 200, user.profile)

    def _github(self, record: RecordedRequest) -> None:
        scheme, _, token = record.headers.get("authorization", "").partition(" ")
        user = None
        if scheme.lower() in ("bearer", "token") and token.strip():
            user = self.idp._oauth_lookup("github", token.strip())
        if user is None:
            return self._send_json(record, 401, {
                "message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"},
                refusal="missing or unknown bearer token")
        self._send_json(record, 200, user.profile)

    def _twitter(self, record: RecordedRequest, raw_query: str) -> None:
        def refuse(reason: str) -> None:
            self._send_json(record, 401, {"errors": [{"code": 32, "message": "Could not authenticate you."}]},
                            refusal=reason)

        oauth = parse_oauth_header(record.headers.get("authorization", ""))
        if oauth is None:
            return refuse("no OAuth Authorization header")
        for required in ("oauth_consumer_key", "oauth_token", "oauth_signature_method", "oauth_signature",
                         "oauth_timestamp", "oauth_nonce"):
            if not oauth.get(required):
                return refuse(f"{required} missing")
        if oauth["oauth_signature_method"] != "HMAC-SHA1":
            return refuse(f"signature method {oauth['oauth_signature_method']}")
        if oauth.get("oauth_version", "1.0") != "1.0":
            return refuse(f"oauth_version {oauth['oauth_version']}")
        if not oauth["oauth_timestamp"].isdigit() or abs(int(oauth["oauth_timestamp"]) - time.time()) > 600:
            return refuse(f"oauth_timestamp {oauth['oauth_timestamp']} is not now (seconds)")
        user = self.idp._oauth_lookup("twitter", oauth["oauth_token"])
        if user is None:
            return refuse("unknown oauth_token")
        if oauth["oauth_consumer_key"] != user.client_id:
            return refuse(f"consumer key {oauth['oauth_consumer_key']!r} != {user.client_id!r}")
        host = (record.headers.get("host") or f"{self.idp.host}:{self.idp.port}").lower()
        if host.endswith(":80"):
            host = host[:-3]
        base_url = f"http://{host}{record.path}"
        params = parse_qsl(raw_query, keep_blank_values=True)
        params += [(k, v) for k, v in oauth.items() if k.startswith("oauth_") and k != "oauth_signature"]
        expected = oauth1_signature("GET", base_url, params, user.client_secret or "", user.token_secret or "")
        if not hmac.compare_digest(expected, oauth["oauth_signature"]):
            return refuse("bad signature (base string: "
                          f"{oauth1_base_string('GET', base_url, params)})")
        self._send_json(record, 200, user.profile)


# --------------------------------------------------------------------------------------
# Test helpers against the stack
# --------------------------------------------------------------------------------------

REQUEST_URI = "http://localhost"
VERIFY_ASSERTION_KIND = "identitytoolkit#VerifyAssertionResponse"


def idp_post_body(provider_id: str, *, id_token: str | None = None, access_token: str | None = None,
                  token_secret: str | None = None, nonce: str | None = None,
                  extra: dict | None = None) -> str:
    fields: dict[str, str] = {"providerId": provider_id}
    if id_token is not None:
        fields["id_token"] = id_token
    if access_token is not None:
        fields["access_token"] = access_token
    if token_secret is not None:
        fields["oauth_token_secret"] = token_secret
    if nonce is not None:
        fields["nonce"] = nonce
    fields.update(extra or {})
    return urlencode(fields)


def sign_in_with_idp(client, provider_id: str, *, id_token: str | None = None,
                     access_token: str | None = None, token_secret: str | None = None,
                     nonce: str | None = None, tenant_id: str | None = None,
                     link_id_token: str | None = None, return_idp_credential: bool | None = True,
                     request_uri: str | None = REQUEST_URI, post_body: str | None = None,
                     **fields: Any):
    """POST /v1/accounts:signInWithIdp (returnSecureToken true); returns the raw response.

    ``link_id_token`` links the credential to that user (body ``idToken``);
    ``return_idp_credential=None`` leaves the field out; ``post_body`` replaces the built one."""
    body: dict[str, Any] = {
        "postBody": post_body if post_body is not None else idp_post_body(
            provider_id, id_token=id_token, access_token=access_token, token_secret=token_secret,
            nonce=nonce),
        "returnSecureToken": True,
    }
    if request_uri is not None:
        body["requestUri"] = request_uri
    if return_idp_credential is not None:
        body["returnIdpCredential"] = return_idp_credential
    if tenant_id is not None:
        body["tenantId"] = tenant_id
    if link_id_token is not None:
        body["idToken"] = link_id_token
    body.update(fields)
    return client.post("/v1/accounts:signInWithIdp", body)


def idp_config_path(stack, kind: str, tenant_id: str | None = None, config_id: str | None = None) -> str:
    """``/v2/projects/{p}[/tenants/{t}]/<kind>[/<id>]``; kind = defaultSupportedIdpConfigs or
    oauthIdpConfigs."""
    assert kind in ("defaultSupportedIdpConfigs", "oauthIdpConfigs"), kind
    path = f"/v2/projects/{stack.project_id}"
    if tenant_id is not None:
        path += f"/tenants/{tenant_id}"
    path += f"/{kind}"
    if config_id is not None:
        path += f"/{config_id}"
    return path


def config_kind(provider_id: str) -> str:
    return "oauthIdpConfigs" if provider_id.startswith("oidc.") else "defaultSupportedIdpConfigs"


def create_provider_config_raw(admin, provider_id: str, body: dict, tenant_id: str | None = None):
    kind = config_kind(provider_id)
    param = "oauthIdpConfigId" if kind == "oauthIdpConfigs" else "idpId"
    return admin.request("POST", idp_config_path(admin.stack, kind, tenant_id), params={param: provider_id},
                         json=body)


def configure_provider(admin, idp: FakeIdp, provider_id: str, *, tenant_id: str | None = None,
                       enabled: bool = True, client_id: Any = DEFAULT, client_secret: Any = DEFAULT,
                       issuer: Any = DEFAULT, trusted_email_domains: list[str] | None = None,
                       display_name: str | None = None) -> dict:
    """Configures ``provider_id`` (a built-in id, or ``oidc.<name>``) in a tenant (or the default
    scope) through the admin API with the fake's defaults, and returns the created config.
    ``client_secret=None`` leaves it out; an ``oidc.<name>`` provider gets issuer B/oidc/<name>."""
    from conftest import describe, expect_ok  # the tests' helpers (conftest is loaded by then)

    body: dict[str, Any] = {
        "enabled": enabled,
        "clientId": idp.client_id(provider_id) if client_id is DEFAULT else client_id,
    }
    secret = idp.client_secret(provider_id) if client_secret is DEFAULT else client_secret
    if secret is not None:
        body["clientSecret"] = secret
    if provider_id.startswith("oidc."):
        body["issuer"] = idp.oidc_issuer(provider_id) if issuer is DEFAULT else issuer
        if display_name is not None:
            body["displayName"] = display_name
        if trusted_email_domains is not None:
            body["trustedEmailDomains"] = trusted_email_domains
    else:
        assert provider_id in BUILT_IN_PROVIDER_IDS, provider_id
    resp = create_provider_config_raw(admin, provider_id, body, tenant_id)
    data = expect_ok(resp)
    assert data.get("name", "").endswith("/" + provider_id), describe(resp)
    return data


def delete_provider_config(admin, provider_id: str, tenant_id: str | None = None):
    return admin.request("DELETE", idp_config_path(admin.stack, config_kind(provider_id), tenant_id, provider_id))
