"""The second outside review's findings on the console and the hosted pages (issue 35):

- a console form over 1 MiB, even unauthenticated on `/console/sign-in`, answers a 413 page, not a 500;
- the console's sign-in refuses a POST that carries neither `Origin` nor `Sec-Fetch-Site` (no browser
  sends that; no session's CSRF token guards this form yet);
- over HTTPS the console's session cookie and the action page's CSRF cookie carry the `__Host-` prefix
  (Secure, Path=/, no Domain), and a request over HTTPS reads only the prefixed name, so a cookie tossed
  in by a sibling subdomain or a plain-HTTP page is not taken for the real one. Over plain HTTP (the
  local stack) they keep their bare names. HTTPS is what the ingress says in `X-Forwarded-Proto`, so the
  services are asked directly here."""

from __future__ import annotations

import html
import re
import uuid
from urllib.parse import urlsplit

import requests

from conftest import HTTP_TIMEOUT, describe, expect_ok

BROWSER = {"Sec-Fetch-Site": "same-origin"}
HTTPS = {"X-Forwarded-Proto": "https"}


def console_sign_in(base: str, secret: str, headers: dict) -> requests.Response:
    return requests.post(base + "/console/sign-in", data={"credential": secret}, headers=headers,
                         timeout=HTTP_TIMEOUT, allow_redirects=False)


def test_a_console_form_over_a_mebibyte_is_a_413_page(stack):
    big = {"credential": "x" * (1 << 20 + 1)}
    for base in (stack.admin_url, stack.directory_url):
        resp = requests.post(base + "/console/sign-in", data=big, headers=BROWSER, timeout=HTTP_TIMEOUT,
                             allow_redirects=False)
        assert resp.status_code == 413, describe(resp)
        assert resp.headers["content-type"].startswith("text/html"), describe(resp)
        assert "Form too large" in resp.text and "set-cookie" not in resp.headers


def test_the_console_sign_in_refuses_a_post_that_names_no_origin(stack):
    resp = console_sign_in(stack.admin_url, stack.admin_token, {})
    assert resp.status_code == 403 and "set-cookie" not in resp.headers, describe(resp)
    assert "Request refused" in resp.text
    assert console_sign_in(stack.admin_url, stack.admin_token, {"Sec-Fetch-Site": "cross-site"}).status_code == 403
    assert console_sign_in(stack.admin_url, stack.admin_token,
                           {"Origin": "https://evil.example"}).status_code == 403
    # What browsers send: either header from the console's own origin.
    assert console_sign_in(stack.admin_url, stack.admin_token, BROWSER).status_code == 303
    assert console_sign_in(stack.admin_url, stack.admin_token, {"Origin": stack.admin_url}).status_code == 303


def set_cookie(resp: requests.Response) -> str:
    assert "set-cookie" in resp.headers, describe(resp)
    return resp.headers["set-cookie"]


def test_the_console_session_cookie_is_a_host_cookie_over_https(stack):
    base = stack.directory_url
    resp = console_sign_in(base, stack.admin_token, {**BROWSER, **HTTPS})
    assert resp.status_code == 303, describe(resp)
    cookie = set_cookie(resp)
    assert cookie.startswith("__Host-tessera_console="), cookie
    for attribute in ("Path=/;", "Secure", "HttpOnly", "SameSite=Strict"):
        assert attribute in cookie + ";", cookie
    assert "Domain" not in cookie
    token = cookie.split(";")[0].split("=", 1)[1]
    page = requests.get(base + "/console/", headers={**HTTPS, "Cookie": f"__Host-tessera_console={token}"},
                        timeout=HTTP_TIMEOUT, allow_redirects=False)
    assert page.status_code == 200, describe(page)
    # The bare name is what a page on another subdomain or on plain HTTP could set: not read over HTTPS.
    tossed = requests.get(base + "/console/", headers={**HTTPS, "Cookie": f"tessera_console={token}"},
                          timeout=HTTP_TIMEOUT, allow_redirects=False)
    assert tossed.status_code == 303 and tossed.headers["location"] == "/console/sign-in", describe(tossed)
    # Signing out over HTTPS removes the prefixed cookie.
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert csrf, "the page's sign-out form carries the session's CSRF token"
    out = requests.post(base + "/console/sign-out", data={"csrf": html.unescape(csrf.group(1))},
                        headers={**BROWSER, **HTTPS, "Cookie": f"__Host-tessera_console={token}"},
                        timeout=HTTP_TIMEOUT, allow_redirects=False)
    assert set_cookie(out).startswith("__Host-tessera_console=;"), describe(out)


def test_over_plain_http_the_console_cookie_keeps_its_name_and_path(stack):
    cookie = set_cookie(console_sign_in(stack.admin_url, stack.admin_token, BROWSER))
    assert cookie.startswith("tessera_console=") and "Path=/console/" in cookie and "Secure" not in cookie


def action_query(admin, stack) -> str:
    """A password-reset link's query, made by the admin API."""
    email = f"cookie-{uuid.uuid4().hex[:10]}@example.com"
    expect_ok(admin.request("POST", f"/v1/projects/{stack.project_id}/accounts",
                            json={"email": email, "password": "correct horse 1"}))
    link = expect_ok(admin.request("POST", f"/v1/projects/{stack.project_id}/accounts:sendOobCode",
                                   json={"requestType": "PASSWORD_RESET", "email": email,
                                         "returnOobLink": True}))["oobLink"]
    return urlsplit(link).query


def test_the_action_page_csrf_cookie_is_a_host_cookie_over_https(stack, admin):
    query = action_query(admin, stack)
    page = requests.get(f"{stack.token_service_url}/__/auth/action?{query}", headers=HTTPS, timeout=HTTP_TIMEOUT)
    assert page.status_code == 200, describe(page)
    cookie = set_cookie(page)
    assert cookie.startswith("__Host-tessera_action_csrf=") and "Path=/;" in cookie + ";" and "Secure" in cookie, \
        cookie
    csrf = cookie.split(";")[0].split("=", 1)[1]
    form = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert form and form.group(1) == csrf
    # The bare-named cookie (what another subdomain could toss in) does not pass the form's check.
    action = f"{stack.token_service_url}/__/auth/action"
    fields = dict(pair.split("=", 1) for pair in query.split("&"))
    body = {**fields, "csrf": csrf, "newPassword": "another horse 2"}
    tossed = requests.post(action, data=body, headers={**HTTPS, "Cookie": f"tessera_action_csrf={csrf}"},
                           timeout=HTTP_TIMEOUT)
    assert tossed.status_code in (400, 403) and "another horse" not in tossed.text, describe(tossed)
    done = requests.post(action, data=body, headers={**HTTPS, "Cookie": f"__Host-tessera_action_csrf={csrf}"},
                         timeout=HTTP_TIMEOUT)
    assert done.status_code == 200, describe(done)
    # Over plain HTTP the cookie keeps its bare name and the page's path.
    plain = requests.get(f"{stack.token_service_url}/__/auth/action?{action_query(admin, stack)}",
                         timeout=HTTP_TIMEOUT)
    assert set_cookie(plain).startswith("tessera_action_csrf=") and "Path=/__/auth/action" in set_cookie(plain)
