"""A local fake identity provider for the federated sign-in tests (docs/protocol/federated.md#federated-providers; issue-5 wire spec).

The test stack points every built-in provider at one base URL ``B`` (``IDP_FAKE_URL`` in the stack's
env file, ``http://127.0.0.1:<TEST_PORT+26>``)::

    B/<google|apple|microsoft|yahoo>/jwks            the provider's JWKS (Cache-Control: max-age=300)
    B/<google|apple|microsoft|yahoo>/.well-known/openid-configuration
    B/oidc/<name>/.well-known/openid-configuration   {issuer: B/oidc/<name>, jwks_uri: B/oidc/<name>/jwks,
                                                      authorization_endpoint, token_endpoint, ...}
    B/oidc/<name>/jwks                               a generic OIDC provider's JWKS (any name works)
    B/facebook/me?access_token=T[&appsecret_proof=P] Graph API "me"
    B/github/user  (Authorization: Bearer T)         GitHub REST "user"
    POST B/github/applications/<client id>/token     GitHub's check that token T was issued to that app
                   (Basic client id:secret, {"access_token": T}): 200, or 404
    B/twitter/verify_credentials.json                Twitter 1.1, OAuth 1.0a (HMAC-SHA1, RFC 5849)

The authorization flows (server-side popup/redirect sign-in; see "Authorization flows" below)::

    GET  B/<google|apple|microsoft|yahoo>/authorize  OIDC authorization endpoint (code; PKCE S256)
    POST B/<google|apple|microsoft|yahoo>/token      token endpoint: {access_token, id_token, ...}
    GET  B/microsoft/<tenant>/authorize, POST B/microsoft/<tenant>/token   the same, for a
                                                     deployment whose URLs carry Microsoft's {tenant}
    GET  B/oidc/<name>/authorize                     generic OIDC (code, or implicit id_token)
    POST B/oidc/<name>/token
    GET  B/facebook/dialog/oauth                     Facebook Login dialog
    POST B/facebook/oauth/access_token               {access_token, token_type, ...}; the token then
                                                     works at B/facebook/me
    GET  B/github/login/oauth/authorize              GitHub OAuth app
    POST B/github/login/oauth/access_token           JSON with Accept: application/json (form-encoded
                                                     otherwise, as GitHub does); the token then works at
                                                     B/github/user and the token check
    POST B/twitter/oauth/request_token               OAuth 1.0a leg 1 (signed, oauth_callback)
    GET  B/twitter/oauth/authenticate?oauth_token=R  leg 2: redirects to the callback with oauth_verifier
    POST B/twitter/oauth/access_token                leg 3 (signed with R, oauth_verifier); the access
                                                     token then works at B/twitter/verify_credentials.json

google/apple/microsoft and every generic OIDC provider sign RS256 with RSA-2048 keys; yahoo signs
ES256 with a P-256 key. Tokens are minted with :meth:`FakeIdp.id_token`; access tokens for the three
OAuth providers are registered with :meth:`FakeIdp.oauth_user`.

Authorization flows: a test registers the account that "signs in" with :meth:`FakeIdp.add_account`;
the authorization endpoint picks it by the ``login_hint`` query parameter (twitter: also
``screen_name``), so the app passes it as a custom parameter. The endpoint checks ``client_id``
(:meth:`FakeIdp.client_id` or one added with :meth:`FakeIdp.register_client`), an absolute
``redirect_uri``, ``response_type`` and ``state``, then answers per ``response_mode``: a 302 to
``redirect_uri?code=..&state=..`` (query), or a 200 HTML page that auto-submits a POST form
(form_post; :func:`form_post_fields` parses it). Codes are single-use, live
:attr:`FakeIdp.code_lifetime` seconds, and are bound to client, redirect_uri, nonce and PKCE
challenge. Token endpoints take client_secret_basic or client_secret_post; apple's client secret is
an ES256 JWT made with a key from :meth:`FakeIdp.apple_key`. Every request is recorded
(:attr:`FakeIdp.requests`, :meth:`FakeIdp.authorize_requests`, :meth:`FakeIdp.token_requests`) with
its query, headers and, for POSTs, body/form; :meth:`FakeIdp.fail_token_endpoint` injects failures.
:func:`complete_authorization` plays the browser for tests without one.

The module also has the HTTP helpers the tests use against the stack: :func:`sign_in_with_idp`,
:func:`configure_provider`, :func:`idp_config_path`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import html
import json
import re
import secrets
import threading
import time
import uuid
from dataclasses import dataclass, field
from html.parser import HTMLParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, unquote_plus, urlencode, urlparse

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

DEFAULT = object()  # "use the fake's default" for optional arguments where None means "omit"

MICROSOFT_CONSUMER_TENANT = "9188040d-6c67-4c5b-b112-36a304b66dad"
OIDC_BUILT_INS = {"google": "google.com", "apple": "apple.com", "microsoft": "microsoft.com",
                  "yahoo": "yahoo.com"}
OAUTH_BUILT_INS = {"facebook": "facebook.com", "github": "github.com", "twitter": "twitter.com"}
BUILT_IN_PROVIDER_IDS = tuple(OIDC_BUILT_INS.values()) + tuple(OAUTH_BUILT_INS.values())
# The authorization-flow endpoints of the OAuth providers (OIDC ones: <issuer path>/authorize, /token).
FLOW_PATHS = {
    "facebook": {"authorize": "/facebook/dialog/oauth", "token": "/facebook/oauth/access_token"},
    "github": {"authorize": "/github/login/oauth/authorize", "token": "/github/login/oauth/access_token"},
    "twitter": {"request_token": "/twitter/oauth/request_token", "authorize": "/twitter/oauth/authenticate",
                "token": "/twitter/oauth/access_token"},
}
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
    headers: dict[str, str]  # names lower-cased
    status: int = 0
    refusal: str | None = None  # why the fake refused it, for assertion messages
    body: str = ""  # a POST's body as text (UTF-8, undecodable bytes replaced)
    form: dict[str, str] = field(default_factory=dict)  # a form-urlencoded POST body, parsed
    location: str | None = None  # where a redirect answer pointed

    @property
    def basic_credentials(self) -> tuple[str, str] | None:
        """``(client id, secret)`` of an ``Authorization: Basic`` header (RFC 6749 §2.3.1: both
        form-urlencoded before base64, decoded here), or None."""
        scheme, _, encoded = self.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "basic":
            return None
        try:
            user, sep, secret = base64.b64decode(encoded.strip(), validate=True).decode().partition(":")
        except ValueError:
            return None
        return (unquote_plus(user), unquote_plus(secret)) if sep else None

    @property
    def oauth_params(self) -> dict[str, str] | None:
        """The parameters of an ``Authorization: OAuth ...`` header (OAuth 1.0a), or None."""
        return parse_oauth_header(self.headers.get("authorization", ""))


@dataclass
class FakeAccount:
    """An account that signs in at a provider's authorization endpoint (:meth:`FakeIdp.add_account`)."""
    provider: str  # the fake's name: google, apple, ..., facebook, github, twitter, oidc.<name>
    login_hint: str
    sub: str
    email: str | None = None
    email_verified: bool | None = True
    name: str | None = None
    picture: str | None = None
    given_name: str | None = None
    family_name: str | None = None
    extra_claims: dict | None = None
    profile: dict | None = None  # facebook/github/twitter user-info answer (None: built from the above)
    deny: bool = False
    user_json: dict | None = None  # apple: the form_post ``user`` field


@dataclass
class AuthCode:
    code: str
    provider: str
    client_id: str
    redirect_uri: str
    scope: str
    nonce: str | None
    code_challenge: str | None
    code_challenge_method: str | None
    account: FakeAccount
    expires_at: float
    used: bool = False


@dataclass
class AppleKey:
    """A Sign in with Apple private key (what Apple's .p8 download holds) registered with the fake.

    Tessera signs apple's client secret with it: an ES256 JWT, header ``kid`` = :attr:`key_id`,
    claims ``iss`` = :attr:`team_id`, ``sub`` = the client (Services) id, ``aud`` = :attr:`audience`
    (the fake's apple issuer), ``iat``, ``exp`` (at most 15777000 s, six months, after iat)."""
    team_id: str
    key_id: str
    private_key_pem: str  # PKCS#8 PEM text, like a .p8 file
    audience: str
    private_key: Any = field(repr=False, default=None)

    def client_secret(self, client_id: str, *, iat: int | None = None, exp: int | None = None,
                      audience: str | None = None, issuer: str | None = None,
                      kid: str | None = None) -> str:
        """A client secret JWT as Tessera should make it (overrides make broken ones)."""
        now = int(time.time())
        iat = now if iat is None else iat
        claims = {"iss": issuer or self.team_id, "sub": client_id, "aud": audience or self.audience,
                  "iat": iat, "exp": iat + 3600 if exp is None else exp}
        return jwt.encode(claims, self.private_key, algorithm="ES256", headers={"kid": kid or self.key_id})


@dataclass
class TwitterRequestToken:
    token: str
    secret: str
    callback: str
    consumer_key: str
    consumer_secret: str
    verifier: str | None = None
    account: FakeAccount | None = None
    denied: bool = False
    used: bool = False
    expires_at: float = float("inf")


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
                         token: str | None = None, token_secret: str = "", nonce: str | None = None,
                         timestamp: int | None = None, callback: str | None = None,
                         verifier: str | None = None,
                         body: dict[str, str] | list[tuple[str, str]] | None = None) -> str:
    """The ``Authorization: OAuth ...`` header a client would send for ``url`` (query included).

    ``token=None`` leaves ``oauth_token`` out (a request-token request, signed with an empty token
    secret); ``callback``/``verifier`` add ``oauth_callback``/``oauth_verifier`` to the header (and so
    to the signature); ``body`` is the form-urlencoded body the request will carry, whose parameters
    the signature covers too (RFC 5849 §3.4.1.3.1)."""
    parsed = urlparse(url)
    base_url = f"{parsed.scheme.lower()}://{parsed.netloc.lower()}{parsed.path or '/'}"
    oauth = {
        "oauth_consumer_key": consumer_key, "oauth_nonce": nonce or secrets.token_hex(16),
        "oauth_signature_method": "HMAC-SHA1", "oauth_timestamp": str(timestamp or int(time.time())),
    }
    if token is not None:
        oauth["oauth_token"] = token
    oauth["oauth_version"] = "1.0"
    if callback is not None:
        oauth["oauth_callback"] = callback
    if verifier is not None:
        oauth["oauth_verifier"] = verifier
    body_params = list(body.items()) if isinstance(body, dict) else list(body or [])
    params = parse_qsl(parsed.query, keep_blank_values=True) + body_params + list(oauth.items())
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


def pkce_challenge(verifier: str) -> str:
    """RFC 7636 S256: ``base64url(sha256(verifier))`` without padding."""
    return b64url(hashlib.sha256(verifier.encode("ascii")).digest())


PKCE_VERIFIER = re.compile(r"[A-Za-z0-9._~-]{43,128}")


def _absolute_url(value: str | None) -> bool:
    if not value:
        return False
    parsed = urlparse(value)
    return parsed.scheme in ("http", "https") and bool(parsed.hostname) and "#" not in value


def _append_query(url: str, params: list[tuple[str, str]] | dict[str, str]) -> str:
    return url + ("&" if "?" in url else "?") + urlencode(params)


class _FormParser(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.action: str | None = None
        self.fields: dict[str, str] = {}
        self._forms = 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form":
            self._forms += 1
            if self._forms == 1:
                self.action = attrs.get("action") or ""
        elif tag == "input" and self._forms == 1 and attrs.get("name"):
            self.fields[attrs["name"]] = attrs.get("value") or ""


def form_post_fields(page: str) -> tuple[str, dict[str, str]]:
    """``(action, {name: value})`` of the first form of a ``response_mode=form_post`` page (what a
    browser would POST, and where). Raises ValueError when the page has no form."""
    parser = _FormParser()
    parser.feed(page)
    parser.close()
    if parser.action is None:
        raise ValueError(f"no <form> in the page: {page[:300]!r}")
    return parser.action, parser.fields


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
        # Authorization flows.
        self.code_lifetime = 60  # seconds an authorization code (or a twitter request token) lives
        self._accounts: dict[tuple[str, str], FakeAccount] = {}
        self._clients: dict[tuple[str, str], str] = {}  # (name, client id) → secret
        self._codes: dict[str, AuthCode] = {}
        self._apple_keys: dict[str, AppleKey] = {}
        self._twitter_tokens: dict[str, TwitterRequestToken] = {}
        self._twitter_nonces: set[tuple[str, str, str]] = set()
        self._failures: dict[tuple[str, str], list[int]] = {}  # (name, endpoint) → [status, times left]
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

    # -- authorization flows: accounts, clients, keys ----------------------------------------

    def add_account(self, provider: str, login_hint: str, *, sub: str, email: str | None = None,
                    email_verified: bool | None = True, name: str | None = None,
                    picture: str | None = None, given_name: str | None = None,
                    family_name: str | None = None, extra_claims: dict | None = None,
                    profile: dict | None = None, deny: bool = False,
                    user_json: dict | None = None) -> FakeAccount:
        """Registers (or replaces) the account that signs in at ``provider``'s authorization endpoint
        when the request carries ``login_hint=<login_hint>`` (twitter: or ``screen_name``).

        OIDC providers put ``sub``, ``email``, ``email_verified`` (sent only with an email; None
        leaves it out), ``name``, ``picture``, ``given_name``, ``family_name`` and ``extra_claims``
        in the ID token. facebook/github/twitter answer ``profile`` at their user-info endpoint for
        the issued access token; without one a profile is built from the fields (facebook: id,
        name, first_name, last_name, email, picture.data.url; github: id (an int when ``sub`` is
        digits), login = login_hint, name, email, avatar_url; twitter: id_str, screen_name =
        login_hint, name, email, profile_image_url_https). ``deny`` makes the user refuse consent.
        ``user_json`` (apple) is sent as the form_post ``user`` field (JSON text) with the code."""
        key = _key_name(provider)
        account = FakeAccount(key, login_hint, sub, email, email_verified, name, picture, given_name,
                              family_name, extra_claims, profile, deny, user_json)
        with self._lock:
            self._accounts[(key, login_hint)] = account
        return account

    def remove_account(self, provider: str, login_hint: str) -> None:
        with self._lock:
            self._accounts.pop((_key_name(provider), login_hint), None)

    def account(self, provider: str, login_hint: str) -> FakeAccount | None:
        with self._lock:
            return self._accounts.get((_key_name(provider), login_hint))

    def register_client(self, provider: str, client_id: str, client_secret: Any = DEFAULT) -> None:
        """Another client (app) of ``provider`` besides :meth:`client_id`, with its own secret (default
        :meth:`client_secret`; apple's secret is a JWT and this value is unused). Its ID tokens'
        ``aud`` is that client id; facebook's appsecret_proof, twitter's consumer secret and GitHub's
        token check use its secret."""
        name = _key_name(provider)
        with self._lock:
            self._clients[(name, client_id)] = self.client_secret(name) if client_secret is DEFAULT else client_secret

    def _client_known(self, name: str, client_id: str) -> bool:
        with self._lock:
            return client_id == self.client_id(name) or (name, client_id) in self._clients

    def _client_secret_of(self, name: str, client_id: str) -> str:
        with self._lock:
            return self._clients.get((name, client_id), self.client_secret(name))

    def apple_key(self, *, team_id: str | None = None, key_id: str | None = None) -> AppleKey:
        """Makes a P-256 key the apple token endpoint accepts client secrets from (several can be
        registered; the client secret's ``kid`` picks one). ``team_id``/``key_id`` default to random
        10-character ids like Apple's."""
        def apple_id() -> str:
            return "".join(secrets.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") for _ in range(10))

        private = ec.generate_private_key(ec.SECP256R1())
        pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption()).decode("ascii")
        key = AppleKey(team_id or apple_id(), key_id or apple_id(), pem, self.issuer("apple"), private)
        with self._lock:
            self._apple_keys[key.key_id] = key
        return key

    def forget_apple_key(self, key_id: str) -> None:
        with self._lock:
            self._apple_keys.pop(key_id, None)

    # -- authorization flows: endpoints, codes, failures, request log -------------------------

    def endpoint_path(self, provider: str, endpoint: str) -> str:
        """The path of ``provider``'s ``authorize`` or ``token`` endpoint (twitter: ``authorize`` is
        oauth/authenticate, ``token`` oauth/access_token; also ``request_token``)."""
        name = _key_name(provider)
        if name in FLOW_PATHS:
            if endpoint not in FLOW_PATHS[name]:
                raise ValueError(f"{name} has no {endpoint} endpoint")
            return FLOW_PATHS[name][endpoint]
        if endpoint not in ("authorize", "token"):
            raise ValueError(f"{name} has no {endpoint} endpoint")
        prefix = f"/oidc/{name.removeprefix('oidc.')}" if name.startswith("oidc.") else f"/{name}"
        return f"{prefix}/{endpoint}"

    def authorize_url(self, provider: str) -> str:
        return self.base_url + self.endpoint_path(provider, "authorize")

    def token_url(self, provider: str) -> str:
        return self.base_url + self.endpoint_path(provider, "token")

    def authorize_requests(self, provider: str) -> list[RecordedRequest]:
        """The recorded requests to ``provider``'s authorization endpoint (oldest first)."""
        return self._requests_at(self.endpoint_path(provider, "authorize"))

    def token_requests(self, provider: str) -> list[RecordedRequest]:
        """The recorded requests to ``provider``'s token endpoint (twitter: oauth/access_token), each
        with ``form`` (the parsed body) and ``basic_credentials``/``oauth_params``."""
        return self._requests_at(self.endpoint_path(provider, "token"))

    def request_token_requests(self) -> list[RecordedRequest]:
        """The recorded requests to twitter's oauth/request_token."""
        return self._requests_at(FLOW_PATHS["twitter"]["request_token"])

    def _requests_at(self, path: str) -> list[RecordedRequest]:
        def matches(recorded: str) -> bool:
            if recorded == path:
                return True
            # Microsoft's endpoints also answer under a tenant: /microsoft/<tenant>/authorize.
            parts = recorded.split("/")
            return (path.startswith("/microsoft/") and len(parts) == 4 and parts[1] == "microsoft"
                    and _TENANT.fullmatch(parts[2]) is not None and parts[3] == path.rsplit("/", 1)[1])

        with self._lock:
            return [r for r in self.requests if matches(r.path)]

    def fail_token_endpoint(self, provider: str, status: int = 500, times: int = 1, *,
                            endpoint: str = "token") -> None:
        """The next ``times`` requests to ``provider``'s token endpoint answer ``status`` without
        looking at them (an authorization code they carry stays usable). 400 answers
        ``{"error": "invalid_grant"}``, other statuses ``{"error": "server_error"}`` (twitter: its
        "Could not authenticate you." body). ``endpoint="request_token"`` targets twitter's first
        leg instead of oauth/access_token."""
        name = _key_name(provider)
        self.endpoint_path(name, endpoint)  # validates
        with self._lock:
            if times > 0:
                self._failures[(name, endpoint)] = [status, times]
            else:
                self._failures.pop((name, endpoint), None)

    def clear_token_failures(self, provider: str | None = None) -> None:
        """Drops failures :meth:`fail_token_endpoint` set (of one provider, or all)."""
        with self._lock:
            for key in list(self._failures):
                if provider is None or key[0] == _key_name(provider):
                    del self._failures[key]

    def reset_flows(self) -> None:
        """Drops injected failures, outstanding authorization codes and twitter request tokens, and
        restores :attr:`code_lifetime`; accounts, registered clients and apple keys stay."""
        with self._lock:
            self._failures.clear()
            self._codes.clear()
            self._twitter_tokens.clear()
            self.code_lifetime = 60

    def _take_failure(self, name: str, endpoint: str) -> int | None:
        with self._lock:
            failure = self._failures.get((name, endpoint))
            if failure is None:
                return None
            failure[1] -= 1
            if failure[1] <= 0:
                del self._failures[(name, endpoint)]
            return failure[0]

    def expire_codes(self, provider: str | None = None) -> None:
        """Every outstanding authorization code (and twitter request token) expires now."""
        name = None if provider is None else _key_name(provider)
        with self._lock:
            for code in self._codes.values():
                if name is None or code.provider == name:
                    code.expires_at = 0
            if name in (None, "twitter"):
                for token in self._twitter_tokens.values():
                    token.expires_at = 0

    def codes(self, provider: str | None = None) -> list[AuthCode]:
        """The authorization codes issued so far (of one provider, or all), oldest first."""
        name = None if provider is None else _key_name(provider)
        with self._lock:
            return [c for c in self._codes.values() if name is None or c.provider == name]

    def _issue_code(self, name: str, account: FakeAccount, query: dict[str, str]) -> str:
        code = secrets.token_urlsafe(32)
        with self._lock:
            self._codes[code] = AuthCode(
                code=code, provider=name, client_id=query["client_id"], redirect_uri=query["redirect_uri"],
                scope=query.get("scope", ""), nonce=query.get("nonce"),
                code_challenge=query.get("code_challenge"),
                code_challenge_method=query.get("code_challenge_method"), account=account,
                expires_at=time.time() + self.code_lifetime)
        return code

    def _account_id_token(self, name: str, account: FakeAccount, client_id: str, nonce: str | None) -> str:
        return self.id_token(name, account.sub, email=account.email, email_verified=account.email_verified,
                             name=account.name, picture=account.picture, given_name=account.given_name,
                             family_name=account.family_name, aud=client_id, nonce=nonce,
                             extra=account.extra_claims)

    @staticmethod
    def _account_profile(account: FakeAccount) -> dict:
        if account.profile is not None:
            return account.profile
        if account.provider == "facebook":
            profile: dict[str, Any] = {"id": account.sub, "name": account.name, "first_name": account.given_name,
                                       "last_name": account.family_name, "email": account.email}
            profile = {k: v for k, v in profile.items() if v is not None}
            if account.picture is not None:
                profile["picture"] = {"data": {"url": account.picture}}
            return profile
        if account.provider == "github":
            return {"id": int(account.sub) if account.sub.isdigit() else account.sub, "login": account.login_hint,
                    "name": account.name, "email": account.email, "avatar_url": account.picture}
        profile = {"id_str": account.sub, "screen_name": account.login_hint, "name": account.name,
                   "email": account.email, "profile_image_url_https": account.picture}
        return {k: v for k, v in profile.items() if v is not None}

    def _apple_secret_problem(self, client_id: str, secret: str) -> str | None:
        """Why apple's client secret JWT is not acceptable for ``client_id``, or None."""
        try:
            header = jwt.get_unverified_header(secret)
        except jwt.PyJWTError as exc:
            return f"apple client_secret is not a JWT ({exc})"
        if header.get("alg") != "ES256":
            return f"apple client_secret alg {header.get('alg')!r}, not ES256"
        with self._lock:
            key = self._apple_keys.get(header.get("kid") or "")
        if key is None:
            return f"apple client_secret kid {header.get('kid')!r} is not a key made with apple_key()"
        try:
            claims = jwt.decode(secret, key.private_key.public_key(), algorithms=["ES256"],
                                options={"verify_aud": False, "verify_iss": False, "verify_iat": False,
                                         "require": ["iss", "sub", "aud", "iat", "exp"]})
        except jwt.ExpiredSignatureError:
            return "apple client_secret expired"
        except jwt.InvalidSignatureError:
            return "apple client_secret: bad signature (ES256 JWS signatures are raw r||s, 64 bytes)"
        except jwt.PyJWTError as exc:
            return f"apple client_secret: {exc}"
        if claims["iss"] != key.team_id:
            return f"apple client_secret iss {claims['iss']!r} != team id {key.team_id!r}"
        if claims["sub"] != client_id:
            return f"apple client_secret sub {claims['sub']!r} != client_id {client_id!r}"
        if claims["aud"] != key.audience:
            return f"apple client_secret aud {claims['aud']!r} != {key.audience!r} (a string)"
        iat, exp = claims["iat"], claims["exp"]
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (iat, exp)):
            return "apple client_secret iat/exp must be numbers (seconds since the epoch)"
        if iat > time.time() + 60:
            return f"apple client_secret iat {iat} is in the future"
        if exp - iat > 15777000:
            return f"apple client_secret lives {exp - iat} s, more than 15777000 (six months)"
        return None

    # -- request log ------------------------------------------------------------------------

    def requests_to(self, path_prefix: str) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.path.startswith(path_prefix)]

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)


_TOKEN_PATHS = {paths["token"] for paths in FLOW_PATHS.values()} | {FLOW_PATHS["twitter"]["request_token"]}


_TENANT = re.compile(r"[A-Za-z0-9.-]{1,64}")


def _oidc_name_ok(name: str) -> bool:
    return re.fullmatch(r"[A-Za-z0-9._-]+", name) is not None


def _is_form(headers: dict[str, str]) -> bool:
    return headers.get("content-type", "").split(";")[0].strip().lower() == "application/x-www-form-urlencoded"


def _form_post_page(action: str, fields: dict[str, str]) -> str:
    inputs = "\n".join(f'    <input type="hidden" name="{html.escape(k)}" value="{html.escape(v)}">'
                       for k, v in fields.items())
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Submit this form</title></head>\n"
            f"<body>\n  <form method=\"post\" action=\"{html.escape(action)}\">\n{inputs}\n"
            f"    <noscript><button type=\"submit\">Continue</button></noscript>\n  </form>\n"
            f"  <script>document.forms[0].submit()</script>\n</body></html>\n")


class _Handler(BaseHTTPRequestHandler):
    idp: FakeIdp  # set on the subclass made in FakeIdp.start
    protocol_version = "HTTP/1.1"
    server_version = "FakeIdp/1"
    timeout = 30  # an idle keep-alive connection's thread ends after this

    def log_message(self, format, *args):  # noqa: A002 - quiet: pytest shows failures itself
        pass

    def _send_json(self, record: RecordedRequest, status: int, body: Any, *,
                   headers: dict[str, str] | None = None, refusal: str | None = None) -> None:
        self._send_body(record, status, json.dumps(body).encode(), "application/json; charset=utf-8",
                        headers=headers, refusal=refusal)

    def _send_body(self, record: RecordedRequest, status: int, raw: bytes, content_type: str, *,
                   headers: dict[str, str] | None = None, refusal: str | None = None) -> None:
        record.status, record.refusal = status, refusal
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(raw)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(raw)

    def _send_redirect(self, record: RecordedRequest, location: str, *, refusal: str | None = None) -> None:
        record.location = location
        self._send_body(record, 302, b"", "text/plain; charset=utf-8",
                        headers={"Location": location, "Cache-Control": "no-store"}, refusal=refusal)

    def _read_body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):  # trailers
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def do_POST(self):  # noqa: N802
        raw = self._read_body()
        parsed = urlparse(self.path)
        path = parsed.path
        headers = {k.lower(): v for k, v in self.headers.items()}
        record = RecordedRequest("POST", path, dict(parse_qsl(parsed.query, keep_blank_values=True)), headers,
                                 body=raw.decode("utf-8", errors="replace"))
        if _is_form(headers):
            record.form = dict(parse_qsl(record.body, keep_blank_values=True))
        self.idp._record(record)
        parts = [p for p in path.split("/") if p]
        try:
            if len(parts) == 4 and parts[:2] == ["github", "applications"] and parts[3] == "token":
                return self._github_token_check(record, parts[2], raw)
            if len(parts) == 2 and parts[0] in OIDC_BUILT_INS and parts[1] == "token":
                return self._token(record, parts[0])
            if len(parts) == 3 and parts[0] == "microsoft" and _TENANT.fullmatch(parts[1]) and parts[2] == "token":
                return self._token(record, "microsoft")
            if len(parts) == 3 and parts[0] == "oidc" and parts[2] == "token" and _oidc_name_ok(parts[1]):
                return self._token(record, "oidc." + parts[1])
            if path in (FLOW_PATHS["facebook"]["token"], FLOW_PATHS["github"]["token"]):
                return self._token(record, parts[0])
            if path == FLOW_PATHS["twitter"]["request_token"]:
                return self._twitter_request_token(record, parsed.query)
            if path == FLOW_PATHS["twitter"]["token"]:
                return self._twitter_access_token(record, parsed.query)
        except Exception as exc:  # a bug in the fake must show up as a readable answer
            return self._send_json(record, 500, {"error": f"fake IdP error: {exc!r}"}, refusal=repr(exc))
        self._send_json(record, 405, {"error": "method not allowed"}, refusal="no such POST path")

    def _github_token_check(self, record: RecordedRequest, client_id: str, raw: bytes) -> None:
        """GitHub's POST /applications/{client_id}/token: Basic client_id:client_secret; 200 when the
        token was issued to that app, 404 otherwise."""
        scheme, _, encoded = record.headers.get("authorization", "").partition(" ")
        try:
            login, _, secret = base64.b64decode(encoded).decode().partition(":")
        except ValueError:
            login, secret = "", ""
        if scheme.lower() != "basic" or login != client_id or secret != self.idp._client_secret_of("github", client_id):
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
            if len(parts) == 2 and parts[0] in OIDC_BUILT_INS and parts[1] == "authorize":
                return self._authorize(record, parts[0])
            if len(parts) == 3 and parts[0] == "microsoft" and _TENANT.fullmatch(parts[1]) and parts[2] == "authorize":
                return self._authorize(record, "microsoft")
            if len(parts) == 3 and parts[0] == "oidc" and parts[2] == "authorize" and _oidc_name_ok(parts[1]):
                return self._authorize(record, "oidc." + parts[1])
            if path in (FLOW_PATHS["facebook"]["authorize"], FLOW_PATHS["github"]["authorize"]):
                return self._authorize(record, parts[0])
            if path == FLOW_PATHS["twitter"]["authorize"]:
                return self._twitter_authenticate(record)
            if path in _TOKEN_PATHS or (len(parts) == 2 and parts[0] in OIDC_BUILT_INS and parts[1] == "token") \
                    or (len(parts) == 3 and parts[0] == "oidc" and parts[2] == "token"):
                return self._send_json(record, 405, {"error": "invalid_request",
                                                     "error_description": "use POST"}, refusal="GET of a POST endpoint")
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
            "response_modes_supported": ["query", "form_post"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
            "grant_types_supported": ["authorization_code", "implicit"],
            "code_challenge_methods_supported": ["S256"],
            "scopes_supported": ["openid", "email", "profile"],
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
        base_url = self._oauth1_base_url(record)
        params = parse_qsl(raw_query, keep_blank_values=True)
        params += [(k, v) for k, v in oauth.items() if k.startswith("oauth_") and k != "oauth_signature"]
        expected = oauth1_signature("GET", base_url, params, user.client_secret or "", user.token_secret or "")
        if not hmac.compare_digest(expected, oauth["oauth_signature"]):
            return refuse("bad signature (base string: "
                          f"{oauth1_base_string('GET', base_url, params)})")
        self._send_json(record, 200, user.profile)

    def _oauth1_base_url(self, record: RecordedRequest) -> str:
        host = (record.headers.get("host") or f"{self.idp.host}:{self.idp.port}").lower()
        if host.endswith(":80"):
            host = host[:-3]
        return f"http://{host}{record.path}"

    # -- authorization flows (OAuth 2 / OIDC) ----------------------------------------------

    def _authorize(self, record: RecordedRequest, name: str) -> None:
        idp, q = self.idp, record.query

        def refuse(description: str, error: str = "invalid_request") -> None:
            self._send_json(record, 400, {"error": error, "error_description": description},
                            refusal=description)

        client_id = q.get("client_id", "")
        if not client_id:
            return refuse("client_id missing")
        if not idp._client_known(name, client_id):
            return refuse(f"unknown client_id {client_id!r} for {name} (the fake knows "
                          f"{idp.client_id(name)!r} and register_client ones)", "invalid_client")
        redirect_uri = q.get("redirect_uri")
        if not _absolute_url(redirect_uri):
            return refuse(f"redirect_uri {redirect_uri!r} is not an absolute http(s) URL without a fragment")
        response_type = q.get("response_type", "")
        supported = ("code", "id_token") if name.startswith("oidc.") else ("code",)
        if response_type not in supported:
            return refuse(f"response_type {response_type!r} not supported by {name} (supported: "
                          f"{', '.join(supported)})", "unsupported_response_type")
        if not q.get("state"):
            return refuse("state missing")
        default_mode = "fragment" if response_type == "id_token" else "query"
        response_mode = q.get("response_mode", default_mode)
        if response_mode not in ("query", "fragment", "form_post"):
            return refuse(f"response_mode {response_mode!r} not supported")
        if response_type == "id_token" and response_mode == "query":
            return refuse("response_mode query cannot carry an id_token (OIDC core 3.2.2.5)")
        scopes = q.get("scope", "").split()
        if name == "apple" and response_mode != "form_post" and {"name", "email"} & set(scopes):
            return refuse("response_mode must be form_post when name or email scope is requested (as Apple "
                          "requires)")
        if response_type == "id_token":
            if "openid" not in scopes:
                return refuse("the implicit flow needs the openid scope")
            if not q.get("nonce"):
                return refuse("nonce is required with response_type id_token (OIDC core 3.2.2.1)")
        challenge, method = q.get("code_challenge"), q.get("code_challenge_method")
        if method is not None and challenge is None:
            return refuse("code_challenge_method without code_challenge")
        if challenge is not None:
            if method != "S256":
                return refuse(f"code_challenge_method {method!r}: the fake takes S256 only (missing means "
                              f"plain)")
            if not re.fullmatch(r"[A-Za-z0-9_-]{43}", challenge):
                return refuse(f"code_challenge {challenge!r} is not a base64url SHA-256 (43 characters)")
        hint = q.get("login_hint")
        account = idp.account(name, hint) if hint else None
        if account is None:
            return refuse(f"no account for login_hint {hint!r} at {name} (add one with add_account)")

        if account.deny:
            fields = {"error": "access_denied", "error_description": "The user denied the request",
                      "state": q["state"]}
            return self._deliver(record, redirect_uri, response_mode, fields, refusal="account denies (deny=True)")
        if response_type == "id_token":
            fields = {"id_token": idp._account_id_token(name, account, client_id, q.get("nonce")),
                      "state": q["state"]}
        else:
            fields = {"code": idp._issue_code(name, account, q), "state": q["state"]}
            if name == "apple" and account.user_json is not None and response_mode == "form_post":
                fields["user"] = json.dumps(account.user_json)
        self._deliver(record, redirect_uri, response_mode, fields)

    def _deliver(self, record: RecordedRequest, redirect_uri: str, mode: str, fields: dict[str, str], *,
                 refusal: str | None = None) -> None:
        """The authorization response to ``redirect_uri`` in response mode ``mode``."""
        if mode == "form_post":
            record.location = redirect_uri
            return self._send_body(record, 200, _form_post_page(redirect_uri, fields).encode(),
                                   "text/html; charset=utf-8", headers={"Cache-Control": "no-store"},
                                   refusal=refusal)
        if mode == "fragment":
            return self._send_redirect(record, f"{redirect_uri}#{urlencode(fields)}", refusal=refusal)
        self._send_redirect(record, _append_query(redirect_uri, fields), refusal=refusal)

    def _token(self, record: RecordedRequest, name: str) -> None:
        idp, form = self.idp, record.form
        no_store = {"Cache-Control": "no-store", "Pragma": "no-cache"}

        def fail(status: int, error: str, description: str, headers: dict[str, str] | None = None) -> None:
            self._send_json(record, status, {"error": error, "error_description": description},
                            headers={**no_store, **(headers or {})}, refusal=f"{error}: {description}")

        injected = idp._take_failure(name, "token")
        if injected is not None:
            body = {"error": "invalid_grant"} if injected == 400 else {
                "error": "server_error", "error_description": "injected failure"}
            return self._send_json(record, injected, body, headers=no_store,
                                   refusal=f"injected failure (fail_token_endpoint, {injected})")
        if not _is_form(record.headers):
            return fail(400, "invalid_request", "the body must be application/x-www-form-urlencoded "
                        f"(Content-Type {record.headers.get('content-type')!r})")
        if form.get("grant_type") != "authorization_code":
            return fail(400, "unsupported_grant_type", f"grant_type {form.get('grant_type')!r}")

        # Client authentication: client_secret_basic or client_secret_post, not both.
        basic = record.basic_credentials
        if "authorization" in record.headers and basic is None:
            return fail(401, "invalid_client", "an Authorization header that is not valid Basic credentials",
                        {"WWW-Authenticate": 'Basic realm="fake-idp"'})
        if basic is not None and "client_secret" in form:
            return fail(400, "invalid_request", "the client authenticated with both client_secret_basic and "
                        "client_secret_post")
        if basic is not None:
            client_id, secret = basic
            if "client_id" in form and form["client_id"] != client_id:
                return fail(400, "invalid_request", f"client_id {form['client_id']!r} in the body != Basic "
                            f"{client_id!r}")
        else:
            client_id, secret = form.get("client_id", ""), form.get("client_secret")
        challenge_header = {"WWW-Authenticate": 'Basic realm="fake-idp"'} if basic is not None else None
        if not client_id:
            return fail(401, "invalid_client", "no client_id", challenge_header)
        if not idp._client_known(name, client_id):
            return fail(401, "invalid_client", f"unknown client_id {client_id!r}", challenge_header)
        if not secret:
            return fail(401, "invalid_client", "no client_secret", challenge_header)
        if name == "apple":
            problem = idp._apple_secret_problem(client_id, secret)
            if problem is not None:
                return fail(401, "invalid_client", problem, challenge_header)
        elif not hmac.compare_digest(secret.encode(), idp._client_secret_of(name, client_id).encode()):
            return fail(401, "invalid_client", f"wrong client_secret for {client_id!r}", challenge_header)

        # The code: known, unused, unexpired — then it is spent, whatever happens next.
        value = form.get("code")
        if not value:
            return fail(400, "invalid_request", "code missing")
        with idp._lock:
            code = idp._codes.get(value)
            problem = None
            if code is None or code.provider != name:
                problem = "unknown authorization code"
            elif code.used:
                problem = "authorization code already used"
            elif time.time() > code.expires_at:
                problem = "authorization code expired"
            else:
                code.used = True
        if problem is not None:
            return fail(400, "invalid_grant", problem)
        if code.client_id != client_id:
            return fail(400, "invalid_grant", f"the code was issued to {code.client_id!r}, not {client_id!r}")
        if form.get("redirect_uri") != code.redirect_uri:
            return fail(400, "invalid_grant", f"redirect_uri {form.get('redirect_uri')!r} != the authorization "
                        f"request's {code.redirect_uri!r}")
        verifier = form.get("code_verifier")
        if code.code_challenge is not None:
            if not verifier:
                return fail(400, "invalid_grant", "code_verifier missing (the authorization request had a "
                            "code_challenge)")
            if not PKCE_VERIFIER.fullmatch(verifier):
                return fail(400, "invalid_grant", "code_verifier is not 43-128 unreserved characters")
            if not hmac.compare_digest(pkce_challenge(verifier), code.code_challenge):
                return fail(400, "invalid_grant", "PKCE: base64url(sha256(code_verifier)) != code_challenge")
        elif verifier is not None:
            return fail(400, "invalid_grant", "code_verifier sent but the authorization request had no "
                        "code_challenge")

        account = code.account
        if name in OAUTH_BUILT_INS:  # facebook, github
            token = ("EAA" if name == "facebook" else "gho_") + secrets.token_urlsafe(30).replace("-", "x")
            idp.oauth_user(name, token, idp._account_profile(account), client_id=client_id,
                           client_secret=idp._client_secret_of(name, client_id))
            if name == "github":
                scope = ",".join(code.scope.split())  # GitHub answers scopes comma-separated
                answer = {"access_token": token, "token_type": "bearer", "scope": scope}
                if "application/json" not in record.headers.get("accept", "").lower():
                    # GitHub answers form-encoded unless asked for JSON.
                    return self._send_body(record, 200, urlencode(answer).encode(),
                                           "application/x-www-form-urlencoded; charset=utf-8", headers=no_store)
                return self._send_json(record, 200, answer, headers=no_store)
            return self._send_json(record, 200, {"access_token": token, "token_type": "bearer",
                                                 "expires_in": 5183944, "scope": code.scope}, headers=no_store)
        self._send_json(record, 200, {
            "access_token": secrets.token_urlsafe(32), "token_type": "Bearer", "expires_in": 3600,
            "scope": code.scope, "id_token": idp._account_id_token(name, account, client_id, code.nonce),
        }, headers=no_store)

    # -- twitter (OAuth 1.0a three legs) -----------------------------------------------------

    def _oauth1_refuse(self, record: RecordedRequest, reason: str, status: int = 401) -> None:
        self._send_json(record, status, {"errors": [{"code": 32, "message": "Could not authenticate you."}]},
                        refusal=reason)

    def _oauth1_problem(self, oauth: dict[str, str] | None, required: tuple[str, ...]) -> str | None:
        """Checks an OAuth 1.0a request's header parameters (not yet its signature)."""
        if oauth is None:
            return "no OAuth Authorization header"
        for name in ("oauth_consumer_key", "oauth_signature_method", "oauth_signature", "oauth_timestamp",
                     "oauth_nonce") + required:
            if not oauth.get(name):
                return f"{name} missing"
        if oauth["oauth_signature_method"] != "HMAC-SHA1":
            return f"signature method {oauth['oauth_signature_method']}"
        if oauth.get("oauth_version", "1.0") != "1.0":
            return f"oauth_version {oauth['oauth_version']}"
        if not oauth["oauth_timestamp"].isdigit() or abs(int(oauth["oauth_timestamp"]) - time.time()) > 600:
            return f"oauth_timestamp {oauth['oauth_timestamp']} is not now (seconds)"
        if not self.idp._client_known("twitter", oauth["oauth_consumer_key"]):
            return f"unknown consumer key {oauth['oauth_consumer_key']!r}"
        return None

    def _oauth1_signature_problem(self, record: RecordedRequest, raw_query: str, oauth: dict[str, str],
                                  consumer_secret: str, token_secret: str) -> str | None:
        base_url = self._oauth1_base_url(record)
        params = parse_qsl(raw_query, keep_blank_values=True)
        if _is_form(record.headers):
            params += parse_qsl(record.body, keep_blank_values=True)
        params += [(k, v) for k, v in oauth.items() if k.startswith("oauth_") and k != "oauth_signature"]
        expected = oauth1_signature(record.method, base_url, params, consumer_secret, token_secret)
        if not hmac.compare_digest(expected, oauth["oauth_signature"]):
            return f"bad signature (base string: {oauth1_base_string(record.method, base_url, params)})"
        with self.idp._lock:
            seen = (oauth["oauth_consumer_key"], oauth["oauth_timestamp"], oauth["oauth_nonce"])
            if seen in self.idp._twitter_nonces:
                return f"oauth_nonce {oauth['oauth_nonce']!r} replayed"
            self.idp._twitter_nonces.add(seen)
        return None

    def _send_form(self, record: RecordedRequest, fields: dict[str, str]) -> None:
        self._send_body(record, 200, urlencode(fields).encode(), "text/plain; charset=utf-8",
                        headers={"Cache-Control": "no-store"})

    def _twitter_request_token(self, record: RecordedRequest, raw_query: str) -> None:
        idp = self.idp
        injected = idp._take_failure("twitter", "request_token")
        if injected is not None:
            return self._oauth1_refuse(record, f"injected failure (fail_token_endpoint, {injected})", injected)
        oauth = record.oauth_params
        problem = self._oauth1_problem(oauth, ("oauth_callback",))
        if problem is None and oauth.get("oauth_token"):
            problem = "request_token must not carry oauth_token"
        if problem is None and not _absolute_url(oauth["oauth_callback"]):
            problem = f"oauth_callback {oauth['oauth_callback']!r} is not an absolute http(s) URL"
        if problem is not None:
            return self._oauth1_refuse(record, problem)
        consumer_key = oauth["oauth_consumer_key"]
        consumer_secret = idp._client_secret_of("twitter", consumer_key)
        problem = self._oauth1_signature_problem(record, raw_query, oauth, consumer_secret, "")
        if problem is not None:
            return self._oauth1_refuse(record, problem)
        token = TwitterRequestToken(token=secrets.token_urlsafe(24), secret=secrets.token_urlsafe(24),
                                    callback=oauth["oauth_callback"], consumer_key=consumer_key,
                                    consumer_secret=consumer_secret)
        token.expires_at = time.time() + max(idp.code_lifetime, 300)
        with idp._lock:
            idp._twitter_tokens[token.token] = token
        self._send_form(record, {"oauth_token": token.token, "oauth_token_secret": token.secret,
                                 "oauth_callback_confirmed": "true"})

    def _twitter_authenticate(self, record: RecordedRequest) -> None:
        idp, q = self.idp, record.query

        def refuse(description: str) -> None:
            self._send_json(record, 400, {"error": description}, refusal=description)

        with idp._lock:
            token = idp._twitter_tokens.get(q.get("oauth_token", ""))
            if token is None or token.used:
                problem = "unknown or used oauth_token"
            elif time.time() > token.expires_at:
                problem = "expired oauth_token"
            elif token.verifier is not None or token.denied:
                problem = "this request token was already authorized"
            else:
                problem = None
        if problem is not None:
            return refuse(f"{problem}: {q.get('oauth_token')!r}")
        hint = q.get("login_hint") or q.get("screen_name")
        account = idp.account("twitter", hint) if hint else None
        if account is None:
            return refuse(f"no account for login_hint/screen_name {hint!r} at twitter (add one with add_account)")
        if account.deny:
            with idp._lock:
                token.denied = True
            return self._send_redirect(record, _append_query(token.callback, {"denied": token.token}),
                                       refusal="account denies (deny=True)")
        with idp._lock:
            token.verifier, token.account = secrets.token_urlsafe(24), account
        self._send_redirect(record, _append_query(token.callback, {"oauth_token": token.token,
                                                                   "oauth_verifier": token.verifier}))

    def _twitter_access_token(self, record: RecordedRequest, raw_query: str) -> None:
        idp = self.idp
        injected = idp._take_failure("twitter", "token")
        if injected is not None:
            return self._oauth1_refuse(record, f"injected failure (fail_token_endpoint, {injected})", injected)
        oauth = record.oauth_params
        problem = self._oauth1_problem(oauth, ("oauth_token",))
        if problem is not None:
            return self._oauth1_refuse(record, problem)
        with idp._lock:
            token = idp._twitter_tokens.get(oauth["oauth_token"])
        if token is None:
            return self._oauth1_refuse(record, f"unknown request token {oauth['oauth_token']!r}")
        if oauth["oauth_consumer_key"] != token.consumer_key:
            return self._oauth1_refuse(record, f"consumer key {oauth['oauth_consumer_key']!r} != the request "
                                       f"token's {token.consumer_key!r}")
        problem = self._oauth1_signature_problem(record, raw_query, oauth, token.consumer_secret, token.secret)
        if problem is not None:
            return self._oauth1_refuse(record, problem)
        verifier = oauth.get("oauth_verifier") or record.form.get("oauth_verifier") \
            or record.query.get("oauth_verifier")
        with idp._lock:
            if token.used:
                problem = "request token already used (or expired)"
            elif time.time() > token.expires_at:
                problem = "request token expired"
            elif token.denied or token.verifier is None or token.account is None:
                problem = "request token was not authorized (denied, or oauth/authenticate not visited)"
            elif not verifier:
                problem = "oauth_verifier missing"
            elif not hmac.compare_digest(verifier, token.verifier):
                problem = "wrong oauth_verifier"
            token.used = True
        if problem is not None:
            return self._oauth1_refuse(record, problem)
        account = token.account
        profile = idp._account_profile(account)
        user_id = str(profile.get("id_str") or account.sub)
        screen_name = str(profile.get("screen_name") or account.login_hint)
        access, access_secret = f"{user_id}-{secrets.token_urlsafe(24)}", secrets.token_urlsafe(32)
        idp.oauth_user("twitter", access, profile, access_secret, client_id=token.consumer_key,
                       client_secret=token.consumer_secret)
        self._send_form(record, {"oauth_token": access, "oauth_token_secret": access_secret,
                                 "user_id": user_id, "screen_name": screen_name})


# --------------------------------------------------------------------------------------
# Test helpers against the stack
# --------------------------------------------------------------------------------------

def complete_authorization(session, authorize_url: str, *, timeout: float = 30, **kwargs):
    """Plays the browser at the fake's authorization endpoint: GETs ``authorize_url`` (the
    ``Location`` Tessera redirected to), then delivers the answer to the ``redirect_uri`` the way a
    browser would — a 302 is followed with a GET, a form_post page is POSTed — and returns that
    response (redirects not followed). A refusal of the fake (no redirect, no form) is returned as
    is. ``session`` is a ``requests.Session`` (or anything with its get/post); ``kwargs`` go to the
    delivering request."""
    first = session.get(authorize_url, allow_redirects=False, timeout=timeout)
    location = first.headers.get("Location")
    if first.status_code in (301, 302, 303, 307, 308) and location:
        return session.get(location, allow_redirects=False, timeout=timeout, **kwargs)
    if first.status_code == 200 and first.headers.get("Content-Type", "").startswith("text/html"):
        action, fields = form_post_fields(first.text)
        return session.post(action, data=fields, allow_redirects=False, timeout=timeout, **kwargs)
    return first


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
