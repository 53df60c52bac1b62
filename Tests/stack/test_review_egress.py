"""Issue 23, items 8, 4 and 11e through the stack.

8. A tenant's OIDC provider is whoever the tenant says it is: its issuer and the jwks_uri of its
   discovery document are URLs an attacker with a tenant admin credential writes. The token service
   must never connect to a loopback, private, link-local, CGNAT, unspecified, multicast or reserved
   address for it (checked after name resolution, so `localhost` and the other spellings of
   127.0.0.1 count), except what the operator allowed (TESSERA_IDP_ALLOWED_PRIVATE_ADDRESSES: the
   test stack allows the fake IdP's 127.0.0.1:<PORT+26> only). signInWithIdp answers 400
   INVALID_IDP_RESPONSE at once, the same whether anything listens there or not. The proof is a TCP
   listener of the test's own on a free loopback port: it must see no connection at all.
4. sendOobCode PASSWORD_RESET under email enumeration protection answers a known and an unknown
   address alike (byte for byte but the address) and mails only the known one.
11e. Session cookies are signed with a key set of their own, published apart from the ID tokens'.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import uuid

import jwt
import pytest
import requests

from conftest import HTTP_TIMEOUT, IT_PREFIX, describe, expect_error, expect_ok, jwt_parts, oob_link
from fake_idp import configure_provider, create_provider_config_raw, sign_in_with_idp

# The answer for a refused provider address comes at once: no connection, no connect timeout (2 s).
AT_ONCE_SECONDS = 1.5
# How long after the answer the listener keeps watching for a late (background) connection.
LATE_CONNECTION_GRACE = 0.3


# --------------------------------------------------------------------------------------
# A listener that records who connects
# --------------------------------------------------------------------------------------

class ConnectionRecorder:
    """Listens on 127.0.0.1:<free port> and, when the host has IPv6, on [::1] at the same port.
    Every connection is accepted, noted (peer and its first bytes, for the failure message) and closed."""

    def __init__(self):
        self.connections: list[tuple[str, bytes]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        v4 = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        v4.bind(("127.0.0.1", 0))
        v4.listen(16)
        self.port = v4.getsockname()[1]
        self._sockets = [v4]
        try:
            v6 = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
            v6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            v6.bind(("::1", self.port))
            v6.listen(16)
            self._sockets.append(v6)
        except OSError:
            pass  # no IPv6 loopback here: `localhost` then means 127.0.0.1 only
        self._threads = [threading.Thread(target=self._serve, args=(s,), daemon=True) for s in self._sockets]
        for thread in self._threads:
            thread.start()

    @property
    def has_ipv6(self) -> bool:
        return len(self._sockets) > 1

    def _serve(self, listening: socket.socket) -> None:
        listening.settimeout(0.1)
        while not self._stop.is_set():
            try:
                conn, peer = listening.accept()
            except (socket.timeout, OSError):
                continue
            first = b""
            try:
                conn.settimeout(0.3)
                first = conn.recv(200)
            except OSError:
                pass
            finally:
                conn.close()
            with self._lock:
                self.connections.append((str(peer[0]), first))

    def seen(self) -> list[tuple[str, bytes]]:
        with self._lock:
            return list(self.connections)

    def summary(self) -> str:
        """The connections seen, short: how many, and the first three (peer, first bytes)."""
        seen = self.seen()
        shown = ", ".join(f"{peer} {first[:48]!r}" for peer, first in seen[:3])
        return f"{len(seen)} connection(s): {shown}"

    def close(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=2)
        for s in self._sockets:
            s.close()


@pytest.fixture
def listener():
    recorder = ConnectionRecorder()
    yield recorder
    recorder.close()


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------

def new_provider_id(prefix: str = "egr") -> str:
    return f"oidc.{prefix}{uuid.uuid4().hex[:10]}"


def address() -> str:
    return f"egress-{uuid.uuid4().hex[:12]}@example.com"


def tenant_user_ids(admin, tenant_id: str) -> list[str]:
    path = f"/v1/projects/{admin.stack.project_id}/tenants/{tenant_id}/accounts:batchGet"
    data = expect_ok(admin.request("GET", path, params={"maxResults": 1000}))
    return sorted(u["localId"] for u in data.get("users", []))


def provider_with_issuer(admin, fake_idp, tenant_id: str, issuer: str) -> str | None:
    """Configures a generic OIDC provider with ``issuer`` in the tenant and returns its id. None when
    the admin API refuses the issuer itself (INVALID_CONFIG): refusing at configuration time is as
    good as refusing at sign-in, so callers that accept both pass None on."""
    provider_id = new_provider_id()
    resp = create_provider_config_raw(admin, provider_id, {
        "enabled": True, "clientId": fake_idp.client_id(provider_id), "issuer": issuer}, tenant_id)
    if resp.status_code == 400:
        expect_error(resp, "INVALID_CONFIG")
        return None
    expect_ok(resp)
    return provider_id


def sign_in_refused_at_once(client, fake_idp, listener, provider_id: str, tenant_id: str, issuer: str):
    """signInWithIdp with a good token of ``provider_id`` claiming ``issuer``: the listener (if any)
    saw no connection, and the answer is INVALID_IDP_RESPONSE within AT_ONCE_SECONDS. Returns the response."""
    token = fake_idp.id_token(provider_id, f"sub-{uuid.uuid4().hex[:12]}", email=address(), issuer=issuer)
    started = time.monotonic()
    resp = sign_in_with_idp(client, provider_id, id_token=token, tenant_id=tenant_id)
    elapsed = time.monotonic() - started
    if listener is not None:
        time.sleep(LATE_CONNECTION_GRACE)
        assert not listener.seen(), (f"the token service connected to the forbidden address for issuer "
                                     f"{issuer}: {listener.summary()} (answer: {describe(resp)})")
    expect_error(resp, "INVALID_IDP_RESPONSE")
    assert elapsed < AT_ONCE_SECONDS, f"answered after {elapsed:.2f}s, not at once: {describe(resp)}"
    return resp


# --------------------------------------------------------------------------------------
# 8. SSRF through a tenant's OIDC provider
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_an_oidc_issuer_on_loopback_is_never_connected_to(client, admin, make_tenant, fake_idp, listener, host):
    """The attack: a tenant admin names http://127.0.0.1:<port> (or http://localhost:<port>, the same
    after resolution) as its provider's issuer, and a sign-in makes the token service fetch the
    discovery document from any local service. It must answer INVALID_IDP_RESPONSE without a connection."""
    tenant_id = make_tenant()["tenantId"]
    issuer = f"http://{host}:{listener.port}"
    provider_id = new_provider_id()
    configure_provider(admin, fake_idp, provider_id, tenant_id=tenant_id, issuer=issuer)
    sign_in_refused_at_once(client, fake_idp, listener, provider_id, tenant_id, issuer)
    assert tenant_user_ids(admin, tenant_id) == [], "nothing is created from a refused provider"


def test_a_loopback_issuer_answers_alike_whether_its_port_is_open_or_closed(client, admin, make_tenant, fake_idp,
                                                                            listener):
    """Were the answers different (a 503 for a closed port, another for an open one), a tenant admin
    could scan the host's ports through the token service."""
    tenant_id = make_tenant()["tenantId"]
    answers = []
    for port, watch in ((closed_port(), None), (listener.port, listener)):
        issuer = f"http://127.0.0.1:{port}/realm"
        provider_id = new_provider_id()
        configure_provider(admin, fake_idp, provider_id, tenant_id=tenant_id, issuer=issuer)
        resp = sign_in_refused_at_once(client, fake_idp, watch, provider_id, tenant_id, issuer)
        # The message may name the address: the port number is the one thing that may differ.
        answers.append((resp.status_code, json.loads(resp.text.replace(str(port), "<port>"))))
    assert answers[0] == answers[1], f"closed port: {answers[0]}; open port: {answers[1]}"


# Other spellings of the host's own addresses, each reaching the listener when connected to.
LOOPBACK_SPELLINGS = [
    "https://0.0.0.0:{port}",               # unspecified: Linux connects it to the host itself
    "https://127.1:{port}",                 # inet_aton shorthand for 127.0.0.1
    "https://2130706433:{port}",            # 127.0.0.1 as one decimal number
    "https://[::ffff:127.0.0.1]:{port}",    # IPv4-mapped IPv6
    "https://127.0.0.1:{port}",             # https does not make loopback acceptable
    "https://localhost:{port}/tenant",
    "http://[::1]:{port}",                  # IPv6 loopback (the listener's [::1] socket, when the host has one)
]


@pytest.mark.parametrize("template", LOOPBACK_SPELLINGS)
def test_other_spellings_of_loopback_are_refused_too(client, admin, make_tenant, fake_idp, listener, template):
    """The check is on the address the name resolves to, not on the text of the URL. A refusal when
    the provider is configured (INVALID_CONFIG) is as good; either way nothing connects."""
    tenant_id = make_tenant()["tenantId"]
    issuer = template.format(port=listener.port)
    provider_id = provider_with_issuer(admin, fake_idp, tenant_id, issuer)
    if provider_id is not None:
        sign_in_refused_at_once(client, fake_idp, listener, provider_id, tenant_id, issuer)
    time.sleep(LATE_CONNECTION_GRACE)
    assert not listener.seen(), f"connected for issuer {issuer}: {listener.summary()}"


@pytest.mark.parametrize("host", [
    "10.0.0.1", "172.16.0.1", "192.168.0.1", "169.254.169.254", "100.64.0.1", "224.0.0.1", "240.0.0.1",
    "[fd00::1]", "[fe80::1]",
    # IPv6 forms that carry an IPv4 address (issue 35): IPv4-compatible loopback and private,
    # IPv4-mapped, Teredo.
    "[::7f00:1]", "[::a00:1]", "[::ffff:a00:1]", "[2001:0:a00:1::1]",
])
def test_private_and_reserved_issuers_are_refused_at_once(client, admin, make_tenant, fake_idp, host):
    """Private, link-local (the cloud metadata endpoint), CGNAT, multicast and reserved addresses:
    INVALID_IDP_RESPONSE at once (no connection attempt, so no connect timeout and no 503)."""
    tenant_id = make_tenant()["tenantId"]
    issuer = f"https://{host}/oidc"
    provider_id = provider_with_issuer(admin, fake_idp, tenant_id, issuer)
    if provider_id is not None:
        sign_in_refused_at_once(client, fake_idp, None, provider_id, tenant_id, issuer)


@pytest.mark.parametrize("template", [
    "http://127.0.0.1:{port}/jwks",
    "http://localhost:{port}/jwks",
    "https://127.0.0.1:{port}/jwks",
])
def test_a_discovery_document_cannot_name_keys_on_a_forbidden_address(client, admin, make_tenant, fake_idp,
                                                                      listener, template):
    """The issuer is the allowed fake IdP (127.0.0.1:<PORT+26>, TESSERA_IDP_ALLOWED_PRIVATE_ADDRESSES),
    so the discovery document is fetched; the jwks_uri it names is another loopback port, which the
    allow-list does not cover (an allowed address:port is not a licence for the whole host)."""
    provider_id = new_provider_id("jwk")
    tenant_id = make_tenant()["tenantId"]
    configure_provider(admin, fake_idp, provider_id, tenant_id=tenant_id)
    jwks_uri = template.format(port=listener.port)
    fake_idp.jwks_uri_overrides[provider_id.removeprefix("oidc.")] = jwks_uri
    try:
        token = fake_idp.id_token(provider_id, f"sub-{uuid.uuid4().hex[:12]}", email=address())
        started = time.monotonic()
        resp = sign_in_with_idp(client, provider_id, id_token=token, tenant_id=tenant_id)
        elapsed = time.monotonic() - started
        time.sleep(LATE_CONNECTION_GRACE)
        assert not listener.seen(), f"the token service fetched jwks_uri {jwks_uri}: {listener.summary()}"
        assert fake_idp.discovery_fetches(provider_id) >= 1, (
            "the allowed fake IdP's discovery document was never fetched: is TESSERA_IDP_ALLOWED_PRIVATE_ADDRESSES "
            f"set to the fake IdP's address in the stack? ({describe(resp)})")
        expect_error(resp, "INVALID_IDP_RESPONSE")
        assert elapsed < AT_ONCE_SECONDS, f"answered after {elapsed:.2f}s: {describe(resp)}"
        assert fake_idp.jwks_fetches(provider_id) == 0
        assert tenant_user_ids(admin, tenant_id) == []
    finally:
        fake_idp.jwks_uri_overrides.pop(provider_id.removeprefix("oidc."), None)


# --------------------------------------------------------------------------------------
# 4. Password reset under email enumeration protection
# --------------------------------------------------------------------------------------

@pytest.fixture
def protection_on(admin):
    """Email enumeration protection is a project switch (on by default): on for the test, restored after."""
    mask = "emailPrivacyConfig.enableImprovedEmailPrivacy"
    original = expect_ok(admin.get_config()).get("emailPrivacyConfig", {}).get("enableImprovedEmailPrivacy")
    if original is not True:
        expect_ok(admin.patch_config({"emailPrivacyConfig": {"enableImprovedEmailPrivacy": True}}, mask))
    yield
    if original is not True:
        expect_ok(admin.patch_config({"emailPrivacyConfig": {"enableImprovedEmailPrivacy": bool(original)}}, mask))


VOLATILE_HEADERS = {"date", "x-request-id"}


def test_password_reset_answers_a_known_and_an_unknown_address_alike(client, make_tenant, mail_sink, protection_on):
    """The known address gets its mail (with a code that works), the unknown none, and the two answers
    are the same once the address is taken out: status, headers, members and length. (The members'
    order is not compared: the service's JSON encoder orders them at random, for either address. The
    time each answer takes is measured by the benchmark's `oob-timing` scenario, not here.)"""
    tenant_id = make_tenant(allowPasswordSignup=True)["tenantId"]
    known, unknown = f"known-{uuid.uuid4().hex[:12]}@example.com", f"other-{uuid.uuid4().hex[:12]}@example.com"
    assert len(known) == len(unknown)
    expect_ok(client.post("/v1/accounts:signUp", {"tenantId": tenant_id, "email": known, "password": "secret123",
                                                  "returnSecureToken": True}))

    answers = {}
    for email in (known, unknown):
        resp = client.post("/v1/accounts:sendOobCode", {"tenantId": tenant_id, "requestType": "PASSWORD_RESET",
                                                        "email": email})
        data = expect_ok(resp)
        assert data == {"kind": "identitytoolkit#GetOobConfirmationCodeResponse", "email": email}, describe(resp)
        answers[email] = resp
    k, u = answers[known], answers[unknown]
    assert json.loads(k.text.replace(known, "<address>")) == json.loads(u.text.replace(unknown, "<address>")), (
        f"the answers differ beyond the address:\n known:   {k.text}\n unknown: {u.text}")
    assert len(k.content) == len(u.content) and k.status_code == u.status_code
    k_headers = {n.lower(): v for n, v in k.headers.items() if n.lower() not in VOLATILE_HEADERS}
    u_headers = {n.lower(): v for n, v in u.headers.items() if n.lower() not in VOLATILE_HEADERS}
    assert k_headers == u_headers, f"headers differ: known {k_headers}, unknown {u_headers}"

    [mail] = mail_sink.wait_for(known)
    _, params = oob_link(mail)
    assert params["mode"] == "resetPassword"
    info = expect_ok(client.post("/v1/accounts:resetPassword", {"tenantId": tenant_id, "oobCode": params["oobCode"]}))
    assert info["requestType"] == "PASSWORD_RESET" and info["email"] == known
    time.sleep(1.0)  # the outbox is polled every 200 ms in the test stack; the known mail came already
    assert not mail_sink.to(unknown), "an address no account has got a mail"
    assert len(mail_sink.to(known)) == 1


# --------------------------------------------------------------------------------------
# 11e. Session cookies have their own key set
# --------------------------------------------------------------------------------------

ID_TOKEN_JWKS_PATHS = [
    "/.well-known/jwks.json",
    "/service_accounts/v1/jwk/securetoken@system.gserviceaccount.com",
    "/www.googleapis.com/service_accounts/v1/jwk/securetoken@system.gserviceaccount.com",
]
ID_TOKEN_X509_PATHS = [
    "/robot/v1/metadata/x509/securetoken@system.gserviceaccount.com",
    "/www.googleapis.com/robot/v1/metadata/x509/securetoken@system.gserviceaccount.com",
]
SESSION_JWKS_PATHS = ["/v1/sessionCookiePublicKeys", IT_PREFIX + "/v1/sessionCookiePublicKeys"]
V3_PREFIXES = ["/www.googleapis.com/identitytoolkit/v3/relyingparty", "/identitytoolkit/v3/relyingparty"]


def published_kids(stack, path: str, *, x509: bool = False) -> set[str]:
    """The kids of a JWKS (``keys``) or of an X.509 map (kid -> certificate) on the public plane."""
    resp = requests.get(stack.url + path, timeout=HTTP_TIMEOUT)
    data = expect_ok(resp)
    kids = set(data) if x509 else {k["kid"] for k in data["keys"]}
    assert kids, f"no keys published: {describe(resp)}"
    return kids


def test_session_cookies_are_signed_with_their_own_keys(stack, client, admin, tenant_id):
    """A session cookie's key is published with the session-cookie keys (v1 and the v3 `publicKeys`)
    and never with the ID tokens' (every JWKS and X.509 path of securetoken), and the other way round;
    so a session cookie can never pass for an ID token (accounts:lookup: INVALID_ID_TOKEN)."""
    session = client.sign_up_anonymous(tenant_id)
    path = f"/v1/projects/{stack.project_id}/tenants/{tenant_id}:createSessionCookie"
    cookie = expect_ok(admin.request("POST", path, json={"idToken": session.id_token, "validDuration": 3600}))[
        "sessionCookie"]
    cookie_kid = jwt_parts(cookie)[0]["kid"]
    id_kid = jwt_parts(session.id_token)[0]["kid"]

    id_sets = {p: published_kids(stack, p) for p in ID_TOKEN_JWKS_PATHS}
    id_sets.update({p: published_kids(stack, p, x509=True) for p in ID_TOKEN_X509_PATHS})
    session_sets = {p: published_kids(stack, p) for p in SESSION_JWKS_PATHS}
    session_sets.update({p + "/publicKeys": published_kids(stack, p + "/publicKeys", x509=True)
                         for p in V3_PREFIXES})
    for p, kids in id_sets.items():
        assert cookie_kid not in kids, f"the session cookie's kid {cookie_kid} is among the ID-token keys of {p}: {kids}"
        assert id_kid in kids, f"the ID token's kid {id_kid} is not published at {p}: {kids}"
    for p, kids in session_sets.items():
        assert cookie_kid in kids, f"the session cookie's kid {cookie_kid} is not published at {p}: {kids}"
        assert id_kid not in kids, f"the ID token's kid {id_kid} is among the session-cookie keys of {p}: {kids}"

    # Genuinely signed by the session-cookie set.
    signing = jwt.PyJWKClient(stack.url + SESSION_JWKS_PATHS[0], cache_keys=False).get_signing_key_from_jwt(cookie)
    claims = jwt.decode(cookie, signing.key, algorithms=["RS256"], audience=stack.project_id,
                        issuer=f"https://session.firebase.google.com/{stack.project_id}")
    assert claims["sub"] == session.local_id
    # And never an ID token.
    expect_error(client.lookup(cookie, tenant_id), "INVALID_ID_TOKEN")
