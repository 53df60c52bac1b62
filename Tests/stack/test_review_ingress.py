"""What reaches the services from outside, and how they read it (issue 23, items 3, 7, 9 and 11c).

* continueUrl is parsed as a browser parses it (WHATWG): a URL a browser would open on another host is
  refused (INVALID_CONTINUE_URI or UNAUTHORIZED_DOMAIN), on the end-user sendOobCode and on the admin
  plane's returnOobLink alike, and an accepted one travels in the link serialized the WHATWG way.
* The Host header is the caller's to write: with the stack's public URL, links and OpenID discovery never
  follow it; without one (a token service started beside the stack) a link or a discovery document is
  built on the Host only when it is exactly an authorized domain entry, port included.
* X-Forwarded-For is believed only from the configured proxies (the local stack's nginx connects from
  127.0.0.2); asked directly on the token service's own port, or of a service with no trusted proxies
  configured, a client cannot reset its sign-up count by writing the header.
* nginx's own refusals (a malformed request, headers or URI too long, a body over the limit) answer the
  Firebase error shape in JSON, on the public plane and the admin plane.
"""

from __future__ import annotations

import http.client
import json
import socket
import uuid
from urllib.parse import parse_qs, urlparse

import pytest
import requests

from conftest import HTTP_TIMEOUT, describe, error_code, expect_error, expect_ok, oob_link
from test_secrets import running

PASSWORD = "correct horse 1"

# A browser opens each of these somewhere other than an authorized domain (localhost, 127.0.0.1 and
# their subdomains), or not over http(s) at all.
REFUSED_CONTINUE_URLS = [
    r"https://evil.example\@localhost/",      # `\` is `/` to a browser: host evil.example
    r"https://evil.example\localhost/",
    "https://evil.example%5C@localhost/",     # userinfo, whatever it says
    "https://localhost@evil.example/",
    "https://user:pw@localhost/",
    r"https:\\evil.example/",
    "https://evil.example#@localhost/",
    "https://evil.example?@localhost/",
    "https://evil.example%2f.localhost/",     # the host decodes to `evil.example/.localhost`: invalid
    "https://evil.example%00.localhost/",
    "https://localhost.evil.example/",
    "javascript:alert(1)//localhost",
    "//evil.example/",
    "https://evil.example\t@localhost/",      # a browser drops the tab: userinfo again
    "http://[::1]@evil.example/",
    "ftp://localhost/",
]

# Accepted continue URLs and their WHATWG serialization, which is what the link carries.
ACCEPTED_CONTINUE_URLS = {
    "https://localhost/x?y=1#z": "https://localhost/x?y=1#z",
    "http://127.0.0.1:8080/": "http://127.0.0.1:8080/",
    "https://app.localhost/": "https://app.localhost/",
    "HTTPS://LOCALHOST/": "https://localhost/",
    "https://0x7f.0.0.1/": "https://127.0.0.1/",  # a browser reads the hex label: 127.0.0.1
}

REFUSALS = ("INVALID_CONTINUE_URI", "UNAUTHORIZED_DOMAIN")


def address() -> str:
    return f"ingress-{uuid.uuid4().hex[:12]}@example.com"


@pytest.fixture
def mail_tenant(make_tenant) -> str:
    """A password tenant without the per-account mail limit (these tests send many codes to one user)."""
    return make_tenant(allowPasswordSignup=True, rateLimits={"oobEmailsPerAccountPerHour": 0})["tenantId"]


def sign_up(client, tenant: str) -> str:
    email = address()
    expect_ok(client.post("/v1/accounts:signUp", {"tenantId": tenant, "email": email, "password": PASSWORD,
                                                  "returnSecureToken": True}))
    return email


def send_reset(client, tenant: str, email: str, continue_url: str | None = None, **kwargs) -> requests.Response:
    body = {"tenantId": tenant, "requestType": "PASSWORD_RESET", "email": email}
    if continue_url is not None:
        body["continueUrl"] = continue_url
    return client.post("/v1/accounts:sendOobCode", body, **kwargs)


def admin_link(admin, tenant: str, email: str, continue_url: str | None = None, **kwargs) -> requests.Response:
    body = {"requestType": "PASSWORD_RESET", "email": email, "returnOobLink": True}
    if continue_url is not None:
        body["continueUrl"] = continue_url
    return admin.request("POST", admin.accounts_path(tenant, "sendOobCode"), json=body, **kwargs)


def refusal_problem(resp: requests.Response) -> str | None:
    """None when `resp` is the 400 refusal of a continue URL, else what it was instead."""
    if resp.status_code == 400 and error_code(resp) in REFUSALS:
        return None
    return f"HTTP {resp.status_code} {resp.text[:200]}"


def continue_url_of(link: str) -> str | None:
    values = parse_qs(urlparse(link).query).get("continueUrl")
    return values[0] if values else None


# --------------------------------------------------------------------------------------
# 3. continueUrl, parsed the WHATWG way
# --------------------------------------------------------------------------------------

def test_continue_urls_a_browser_opens_elsewhere_are_refused_by_send_oob_code(client, mail_tenant):
    """Each URL is one a browser opens on a host that is not an authorized domain (or not over
    http(s)); the old RFC 3986 check read some of them differently (`%2f` in a host it percent-decodes
    into `evil.example/.localhost`, which ends in `.localhost`) and mailed the code to the attacker's page."""
    email = sign_up(client, mail_tenant)
    wrong = {url: problem for url in REFUSED_CONTINUE_URLS
             if (problem := refusal_problem(send_reset(client, mail_tenant, email, url))) is not None}
    assert not wrong, f"accepted (or not refused as a continue URL): {wrong}"


def test_continue_urls_a_browser_opens_elsewhere_are_refused_in_admin_links(client, admin, mail_tenant):
    """The admin plane's sendOobCode with returnOobLink checks continueUrl with the same parser."""
    email = sign_up(client, mail_tenant)
    wrong = {url: problem for url in REFUSED_CONTINUE_URLS
             if (problem := refusal_problem(admin_link(admin, mail_tenant, email, url))) is not None}
    assert not wrong, f"accepted (or not refused as a continue URL): {wrong}"


def test_accepted_continue_urls_are_mailed_in_their_whatwg_serialization(client, mail_sink, mail_tenant):
    """A URL on an authorized domain, as a browser reads it (`0x7f.0.0.1` is 127.0.0.1; scheme and host
    are case-insensitive), is accepted, and the mailed link carries the browser's serialization."""
    email = sign_up(client, mail_tenant)
    for raw in ACCEPTED_CONTINUE_URLS:
        resp = send_reset(client, mail_tenant, email, raw)
        assert resp.status_code == 200, f"{raw!r} refused: {describe(resp)}"
    mails = mail_sink.wait_for(email, count=len(ACCEPTED_CONTINUE_URLS))
    carried = sorted(oob_link(mail)[1].get("continueUrl", "") for mail in mails)
    assert carried == sorted(ACCEPTED_CONTINUE_URLS.values()), carried


def test_accepted_continue_urls_travel_serialized_in_admin_links(client, admin, mail_tenant):
    email = sign_up(client, mail_tenant)
    wrong = {}
    for raw, serialized in ACCEPTED_CONTINUE_URLS.items():
        resp = admin_link(admin, mail_tenant, email, raw)
        if resp.status_code != 200:
            wrong[raw] = f"HTTP {resp.status_code} {resp.text[:200]}"
        elif (carried := continue_url_of(resp.json().get("oobLink", ""))) != serialized:
            wrong[raw] = f"link carries {carried!r}, not {serialized!r}"
    assert not wrong, wrong


# --------------------------------------------------------------------------------------
# 7. The Host header
# --------------------------------------------------------------------------------------

DISCOVERY_PATHS = ("/.well-known/openid-configuration", "/securetoken.google.com/{p}/.well-known/openid-configuration")
FOREIGN_HOSTS = ("evil.localhost:31337", "evil.example", "localhost:31337")


def test_with_the_stacks_public_url_links_and_discovery_ignore_the_host_header(client, admin, mail_sink, mail_tenant,
                                                                                stack):
    """The test stack sets TESSERA_PUBLIC_URL to its own ingress URL (TESSERA_URL). A reset requested with
    `Host: evil.localhost:31337` (a subdomain of an authorized domain, which the host check let through)
    still mails a link to the stack; admin links and the discovery document's jwks_uri likewise."""
    email = sign_up(client, mail_tenant)
    expect_ok(send_reset(client, mail_tenant, email, headers={"Host": "evil.localhost:31337"}))
    [mail] = mail_sink.wait_for(email)
    link, _ = oob_link(mail)
    assert link.startswith(f"{stack.url}/__/auth/action?"), link

    resp = admin_link(admin, mail_tenant, email, headers={"Host": "evil.localhost:31337"})
    link = expect_ok(resp).get("oobLink", "")
    assert link.startswith(f"{stack.url}/__/auth/action?"), describe(resp)

    for path in DISCOVERY_PATHS:
        for host in FOREIGN_HOSTS:
            resp = requests.get(stack.url + path.format(p=stack.project_id), headers={"Host": host},
                                timeout=HTTP_TIMEOUT)
            assert expect_ok(resp)["jwks_uri"] == f"{stack.url}/.well-known/jwks.json", (host, describe(resp))


@pytest.fixture(scope="module")
def bare_token_service(stack):
    """The stack's token service binary beside the stack: no TESSERA_PUBLIC_URL, no TESSERA_TRUSTED_PROXIES,
    authorized domains `localhost` and `localhost:8080` (an entry with a port)."""
    with running(stack, "token-service", "/readyz", TESSERA_AUTHORIZED_DOMAINS="localhost,localhost:8080") as service:
        yield service


def test_without_a_public_url_a_link_needs_a_host_that_is_exactly_an_authorized_entry(bare_token_service, client,
                                                                                        mail_sink, mail_tenant, stack):
    """`evil.localhost` is a subdomain of `localhost` and `localhost:31337` names it with another port: both
    are the caller's server, so no link is built on them (UNAUTHORIZED_DOMAIN); `localhost` and
    `localhost:8080`, each an entry as written, are used as they came."""
    email = sign_up(client, mail_tenant)
    base = bare_token_service.base

    def reset(host: str) -> requests.Response:
        return requests.post(f"{base}/v1/accounts:sendOobCode", params={"key": stack.api_key}, timeout=HTTP_TIMEOUT,
                             headers={"Host": host},
                             json={"tenantId": mail_tenant, "requestType": "PASSWORD_RESET", "email": email})

    for host in ("evil.localhost", "evil.localhost:8080", "localhost:31337", "127.0.0.1"):
        expect_error(reset(host), "UNAUTHORIZED_DOMAIN")
    for host in ("localhost", "localhost:8080"):
        expect_ok(reset(host))
    mails = mail_sink.wait_for(email, count=2)
    links = sorted(oob_link(mail)[0].split("?", 1)[0] for mail in mails)
    assert links == ["http://localhost/__/auth/action", "http://localhost:8080/__/auth/action"], links


def test_without_a_public_url_discovery_answers_only_on_an_authorized_host(bare_token_service, stack):
    """A discovery document whose jwks_uri is on the caller's host would send a relying party to the
    caller's keys: an unauthorized Host is refused; an authorized one is used and the answer varies by it."""
    base = bare_token_service.base
    for path in DISCOVERY_PATHS:
        url = base + path.format(p=stack.project_id)
        for host in ("evil.localhost", "evil.example", "localhost:31337"):
            resp = requests.get(url, headers={"Host": host}, timeout=HTTP_TIMEOUT)
            assert "evil" not in resp.text and "31337" not in resp.text, describe(resp)
            expect_error(resp, "UNAUTHORIZED_DOMAIN")
        resp = requests.get(url, headers={"Host": "localhost:8080"}, timeout=HTTP_TIMEOUT)
        assert expect_ok(resp)["jwks_uri"] == "http://localhost:8080/.well-known/jwks.json", describe(resp)
        vary = [v.strip().lower() for v in resp.headers.get("Vary", "").split(",")]
        assert "host" in vary, resp.headers


# --------------------------------------------------------------------------------------
# 9. X-Forwarded-For, believed only from the configured proxies
# --------------------------------------------------------------------------------------

def sign_up_direct(base: str, stack, tenant: str, forwarded_for: str) -> requests.Response:
    return requests.post(f"{base}/v1/accounts:signUp", params={"key": stack.api_key}, timeout=HTTP_TIMEOUT,
                         headers={"X-Forwarded-For": forwarded_for},
                         json={"tenantId": tenant, "returnSecureToken": True})


def assert_spoofing_does_not_reset_the_count(base: str, stack, tenant: str) -> None:
    for n in range(3):
        expect_ok(sign_up_direct(base, stack, tenant, f"203.0.113.{n + 10}"))
    for n in range(2):
        resp = sign_up_direct(base, stack, tenant, f"198.51.100.{n + 10}")
        expect_error(resp, "TOO_MANY_ATTEMPTS_TRY_LATER")


def test_forwarded_for_is_not_believed_on_the_token_services_own_port(stack, make_tenant):
    """Asked directly from 127.0.0.1 (not the ingress's 127.0.0.2), a new X-Forwarded-For on every sign-up
    would be a new address each time, and the per-address limit would never apply."""
    assert stack.token_service_url, f"TESSERA_TOKEN_SERVICE_URL missing from {stack.env_file}"
    tenant = make_tenant(rateLimits={"signUpsPerIpPerHour": 3})["tenantId"]
    assert_spoofing_does_not_reset_the_count(stack.token_service_url, stack, tenant)


def test_forwarded_for_is_believed_from_no_one_by_default(bare_token_service, stack, make_tenant):
    """A token service with no TESSERA_TRUSTED_PROXIES trusts no proxy (the default was all of loopback)."""
    tenant = make_tenant(rateLimits={"signUpsPerIpPerHour": 3})["tenantId"]
    assert_spoofing_does_not_reset_the_count(bare_token_service.base, stack, tenant)


def post_from(source: str, url: str, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
    """POST over a connection whose local address is `source` (any 127/8 address works on loopback)."""
    parsed = urlparse(url)
    conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=HTTP_TIMEOUT, source_address=(source, 0))
    try:
        conn.request("POST", path, body=body, headers={"Content-Type": "application/json", **headers})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def test_through_the_ingress_the_client_is_the_address_nginx_saw(stack, make_tenant):
    """The ingress is the trusted proxy: a client at 127.0.0.3 is counted as 127.0.0.3 (its own
    X-Forwarded-For is overwritten by nginx), so its limit does not spend 127.0.0.1's, and 127.0.0.1
    asking the token service directly is counted as itself, whatever X-Forwarded-For it writes. (Without nginx's proxy_bind to the trusted
    127.0.0.2, every ingress request would count as 127.0.0.1.)"""
    tenant = make_tenant(rateLimits={"signUpsPerIpPerHour": 2})["tenantId"]
    path = f"/v1/accounts:signUp?key={stack.api_key}"
    body = ('{"tenantId":"%s","returnSecureToken":true}' % tenant).encode()
    statuses = [post_from("127.0.0.3", stack.url, path, body, {"X-Forwarded-For": f"203.0.113.{n + 20}"})
                for n in range(3)]
    assert [s for s, _ in statuses] == [200, 200, 400], statuses
    assert b"TOO_MANY_ATTEMPTS_TRY_LATER" in statuses[2][1], statuses[2]
    expect_ok(sign_up_direct(stack.token_service_url, stack, tenant, "127.0.0.3"))


# --------------------------------------------------------------------------------------
# 11c. nginx's own refusals in the Firebase error shape
# --------------------------------------------------------------------------------------

def raw_exchange(port: int, data: bytes) -> tuple[int, dict[str, str], bytes]:
    """Sends `data` as it is and reads one HTTP answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=HTTP_TIMEOUT) as sock:
        sock.sendall(data)
        resp = http.client.HTTPResponse(sock)
        resp.begin()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()


def nginx_refusals(path: str) -> list[tuple[str, int, bytes]]:
    head = f"POST {path} HTTP/1.1\r\nHost: localhost\r\n".encode()
    return [
        ("a header line without a colon", 400, head + b"Bad Header\r\nContent-Length: 0\r\n\r\n"),
        ("a request line that is not one", 400, b"GARBAGE\r\n\r\n"),
        ("a Host with a path", 400, f"POST {path} HTTP/1.1\r\nHost: localhost/x\r\n\r\n".encode()),
        ("an HTTP/1.1 request without Host", 400, f"POST {path} HTTP/1.1\r\nContent-Length: 0\r\n\r\n".encode()),
        ("chunked and Content-Length at once", 400,
         head + b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n"),
        ("headers over the buffers (nginx's 494)", 400, head + b"X-Big: " + b"a" * 40000 + b"\r\n\r\n"),
        ("a URI over the buffers", 414, f"GET {path}?{'a' * 40000} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode()),
        ("a body over client_max_body_size", 413, head + b"Content-Type: application/json\r\n"
                                                         b"Content-Length: 40000000\r\n\r\n"),
    ]


@pytest.mark.parametrize("plane", ["public", "admin"])
def test_nginx_own_refusals_answer_firebase_json(stack, plane):
    """An SDK or Admin SDK decodes every error body as JSON; nginx's HTML error pages were the only
    answers on either plane that were not."""
    url, path = ((stack.url, "/v1/accounts:signUp") if plane == "public"
                 else (stack.admin_url, f"/v2/projects/{stack.project_id}/tenants"))
    port = urlparse(url).port
    wrong = []
    for what, status, data in nginx_refusals(path):
        got, headers, body = raw_exchange(port, data)
        problem = None
        if got != status:
            problem = f"HTTP {got}, expected {status}"
        elif not headers.get("content-type", "").startswith("application/json"):
            problem = f"Content-Type {headers.get('content-type')!r}"
        else:
            try:
                err = json.loads(body)["error"]
                if err.get("code") != status or err.get("status") != "INVALID_ARGUMENT" \
                        or not isinstance(err.get("message"), str) or not err["message"]:
                    problem = f"error object {err}"
            except (ValueError, KeyError, TypeError):
                problem = "not the Firebase error shape"
        if problem:
            wrong.append(f"{what}: {problem}: {body[:120]!r}")
    assert not wrong, "\n".join(wrong)
