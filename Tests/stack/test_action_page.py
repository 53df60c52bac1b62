"""The hosted action page (`/__/auth/action`) in a real browser: Debian's Chromium driven by Playwright
(scripts/browser-deps installs it; nothing downloads a browser). Every mailed link's flow as a user
goes through it: an app call makes the code mailed to the suite's SMTP sink, the link from the mail is
opened, the form is checked (hidden fields, labels, CSRF cookie, no request leaving the stack's
origin), filled and submitted, and the API confirms the action took effect. Also: second submissions,
expiry, the continue link's domain check, CSRF refusals, the CSP header, the page without JavaScript,
the five languages (fa right-to-left) and a basic accessibility check.

Screenshots of every mode's form and result (and the fa page) go to test-artifacts/action-page/."""

from __future__ import annotations

import base64
import hashlib
import re
import uuid
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlparse, urlunparse

import pytest
import requests

from conftest import HTTP_TIMEOUT, REPO_ROOT, describe, expect_error, expect_ok, oob_link, psql

ARTIFACTS = REPO_ROOT / "test-artifacts" / "action-page"
ACTION_PATH = "/__/auth/action"
CSRF_COOKIE = "tessera_action_csrf"
PASSWORD = "correct horse 1"
CONTINUE = "http://localhost:3000/after"          # authorized: localhost
CONTINUE_IP = "http://127.0.0.1:3000/done"        # authorized: 127.0.0.1
HIDDEN_FIELDS = ("mode", "oobCode", "apiKey", "tenantId", "continueUrl", "lang", "csrf")
LANGUAGES = ("en", "it", "ru", "th", "fa")
BROWSER_TIMEOUT_MS = 15_000


def address() -> str:
    return f"page-{uuid.uuid4().hex[:12]}@example.com"


# --------------------------------------------------------------------------------------
# The browser: one Chromium for the file, a fresh context (cookie jar) per visitor
# --------------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


def origin(url: str) -> str:
    parsed = urlparse(url)
    return f"{parsed.scheme}://{parsed.netloc}".lower()


class Visitor:
    """One browser context (its own cookies), recording every request it makes and every CSP violation."""

    def __init__(self, browser, stack, artifacts: Path, javascript: bool = True):
        self.stack = stack
        self.artifacts = artifacts
        self.context = browser.new_context(java_script_enabled=javascript, locale="en-US")
        self.context.set_default_timeout(BROWSER_TIMEOUT_MS)
        self.requests: list[str] = []
        self.console: list[str] = []
        self.context.on("request", lambda request: self.requests.append(request.url))
        self.page = self.context.new_page()
        self.page.on("console", lambda message: self.console.append(f"{message.type}: {message.text}"))

    def open(self, url: str):
        response = self.page.goto(url)
        assert response is not None, f"no response for {url}"
        assert_csp(response.headers, url)
        return response

    def submit(self):
        """Clicks #submit and waits for the page the POST answers."""
        with self.page.expect_navigation() as navigation:
            self.page.click("#submit")
        response = navigation.value
        assert response is not None
        assert_csp(response.headers, response.url)
        return response

    def screenshot(self, name: str) -> None:
        self.page.screenshot(path=str(self.artifacts / f"{name}.png"), full_page=True)

    def csrf_cookie(self) -> str | None:
        for cookie in self.context.cookies():
            if cookie["name"] == CSRF_COOKIE:
                return cookie["value"]
        return None

    def assert_own_origin_only(self) -> None:
        """Every request went to the stack's own origin (data:/about:/blob: URLs are not requests out)."""
        own = origin(self.stack.url)
        foreign = [u for u in self.requests if not u.startswith(("data:", "about:", "blob:")) and origin(u) != own]
        assert not foreign, f"requests outside {own}: {foreign}"
        assert self.requests, "no request recorded"
        violations = [m for m in self.console if "Content Security Policy" in m]
        assert not violations, f"the page breaks its own CSP: {violations}"

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def visit(browser, stack, artifacts):
    """visit(javascript=True) -> a new Visitor; every one is closed after the test."""
    opened: list[Visitor] = []

    def factory(javascript: bool = True) -> Visitor:
        visitor = Visitor(browser, stack, artifacts, javascript)
        opened.append(visitor)
        return visitor

    yield factory
    for visitor in opened:
        visitor.close()


# --------------------------------------------------------------------------------------
# Page checks
# --------------------------------------------------------------------------------------

def assert_csp(headers: dict, url: str) -> None:
    lowered = {k.lower(): v for k, v in headers.items()}
    policy = lowered.get("content-security-policy")
    assert policy, f"no Content-Security-Policy on {url}: {headers}"
    directives = [d.strip() for d in policy.split(";")]
    assert "default-src 'none'" in directives, f"CSP of {url} lacks default-src 'none': {policy!r}"


def check_accessibility(page) -> None:
    """One h1, a lang on <html>, every visible input labelled, the button named."""
    assert page.locator("h1").count() == 1, page.content()
    assert (page.get_attribute("html", "lang") or "").strip(), "the <html> element has no lang"
    inputs = page.locator("input:not([type=hidden])")
    for index in range(inputs.count()):
        field = inputs.nth(index)
        field_id, name = field.get_attribute("id"), field.get_attribute("name")
        named = bool((field.get_attribute("aria-label") or "").strip()) or bool(field.get_attribute("aria-labelledby"))
        if field_id:
            label = page.locator(f'label[for="{field_id}"]')
            named = named or (label.count() == 1 and bool(label.inner_text().strip()))
        if name:
            named = named or page.locator(f'label input[name="{name}"]').count() == 1
        assert named, f"input {field_id or index} has no label: {page.content()}"
    for index in range(page.locator("button").count()):
        assert page.locator("button").nth(index).inner_text().strip(), "a button without text"


def check_form(visitor: Visitor, params: dict, mode: str, tenant: str, inputs: dict[str, str]) -> dict:
    """The GET's form (5.): post to /__/auth/action, the hidden fields echo the link, csrf = the cookie,
    and exactly the visible inputs `inputs` (id -> type). Returns the hidden fields."""
    page = visitor.page
    form = page.locator("form#action-form")
    assert form.count() == 1, f"no form#action-form: {page.content()}"
    assert (form.get_attribute("method") or "").lower() == "post", page.content()
    assert form.get_attribute("action") == ACTION_PATH, page.content()
    hidden = {}
    hidden_inputs = form.locator("input[type=hidden]")
    for index in range(hidden_inputs.count()):
        element = hidden_inputs.nth(index)
        hidden[element.get_attribute("name")] = element.get_attribute("value") or ""
    expected = set(HIDDEN_FIELDS) if "continueUrl" in params else set(HIDDEN_FIELDS) - {"continueUrl"}
    assert expected <= set(hidden), f"hidden fields {sorted(hidden)}, expected {sorted(expected)}"
    assert hidden["mode"] == mode and hidden["oobCode"] == params["oobCode"], hidden
    assert hidden["apiKey"] == params["apiKey"] == visitor.stack.api_key, hidden
    assert hidden["tenantId"] == tenant and hidden["lang"] == params.get("lang", "en"), hidden
    if "continueUrl" in params:
        assert hidden["continueUrl"] == params["continueUrl"], hidden
    assert hidden["csrf"], "empty csrf field"
    assert visitor.csrf_cookie() == hidden["csrf"], \
        f"the {CSRF_COOKIE} cookie ({visitor.csrf_cookie()!r}) is not the form's csrf ({hidden['csrf']!r})"
    button = form.locator("button#submit")
    assert button.count() == 1 and button.get_attribute("type") == "submit", page.content()
    assert button.is_visible() and button.inner_text().strip()
    visible = form.locator("input:not([type=hidden])")
    found = {visible.nth(i).get_attribute("id"): visible.nth(i).get_attribute("type") for i in range(visible.count())}
    assert found == inputs, f"visible inputs {found}, expected {inputs}"
    for field_id in inputs:
        assert page.locator(f"#{field_id}").get_attribute("name") == field_id
        assert page.locator(f'label[for="{field_id}"]').count() == 1, f"no label for #{field_id}"
    check_accessibility(page)
    return hidden


def result(page) -> tuple[str | None, str | None]:
    """(data-outcome, data-code) of the page's #result section."""
    section = page.locator("section#result")
    assert section.count() == 1, f"no section#result: {page.content()}"
    assert section.inner_text().strip(), "the result has no message"
    return section.get_attribute("data-outcome"), section.get_attribute("data-code")


def assert_success(page) -> None:
    outcome, code = result(page)
    assert (outcome, code) == ("success", None), f"outcome {outcome!r} code {code!r}: {page.content()}"
    check_accessibility(page)


def assert_error(page, code: str) -> None:
    outcome, found = result(page)
    assert (outcome, found) == ("error", code), f"expected error {code}, got {outcome!r} {found!r}: {page.content()}"
    assert page.locator("form#action-form").count() == 0, "an error page offers no form"
    assert page.locator("#continue").count() == 0, "no continue link after an error"
    check_accessibility(page)


AUTHORIZED_DOMAINS = ("localhost", "127.0.0.1")  # the test stack's (TESSERA_AUTHORIZED_DOMAINS unset)


def offsite_links(page) -> list[str]:
    """Links whose target, as the browser resolves it (not as a server-side parser reads the href), is not
    http(s) on an authorized domain or one of its subdomains."""
    found = []
    anchors = page.locator("a[href]")
    for index in range(anchors.count()):
        protocol, hostname, href = anchors.nth(index).evaluate("a => [a.protocol, a.hostname, a.href]")
        authorized = any(hostname == d or hostname.endswith("." + d) for d in AUTHORIZED_DOMAINS)
        if protocol not in ("http:", "https:") or not authorized:
            found.append(f"{anchors.nth(index).get_attribute('id')}: {anchors.nth(index).get_attribute('href')} "
                         f"-> {href}")
    return found


def continue_href(page) -> str | None:
    link = page.locator("a#continue")
    return link.get_attribute("href") if link.count() else None


def with_params(link: str, **changes: str | None) -> str:
    """The link with query parameters replaced (None drops one)."""
    parsed = urlparse(link)
    query = {k: v[0] for k, v in parse_qs(parsed.query).items()}
    for name, value in changes.items():
        if value is None:
            query.pop(name, None)
        else:
            query[name] = value
    return urlunparse(parsed._replace(query=urlencode(query)))


# --------------------------------------------------------------------------------------
# App calls that mail a code
# --------------------------------------------------------------------------------------

@pytest.fixture
def tenant(make_tenant) -> str:
    return make_tenant(allowPasswordSignup=True, enableEmailLinkSignin=True)["tenantId"]


def sign_up(client, tenant: str, email: str, password: str = PASSWORD) -> dict:
    return expect_ok(client.post("/v1/accounts:signUp", {"tenantId": tenant, "email": email, "password": password,
                                                        "returnSecureToken": True}))


def mailed_link(client, mail_sink, stack, tenant: str, to: str, mode: str, **body) -> tuple[str, dict]:
    """sendOobCode(body), then the link of the mail it sent to `to` (its host is the stack's ingress)."""
    expect_ok(client.post("/v1/accounts:sendOobCode", {"tenantId": tenant, **body}))
    [mail] = mail_sink.wait_for(to)
    link, params = oob_link(mail)
    assert link.startswith(stack.url + ACTION_PATH + "?"), f"the link is not on the stack's ingress: {link}"
    assert params["mode"] == mode and params["tenantId"] == tenant and params["apiKey"] == stack.api_key, params
    return link, params


def sign_in(client, tenant: str, email: str, password: str):
    return client.post("/v1/accounts:signInWithPassword",
                       {"tenantId": tenant, "email": email, "password": password, "returnSecureToken": True})


def lookup(admin, tenant: str, local_id: str) -> dict:
    [user] = admin.lookup_users(tenant, [local_id])
    return user


def lookup_email(admin, tenant: str, email: str) -> list[dict]:
    resp = admin.request("POST", admin.accounts_path(tenant, "lookup"), json={"email": [email]})
    return expect_ok(resp).get("users", [])


# --------------------------------------------------------------------------------------
# Every mode, as a user goes through it
# --------------------------------------------------------------------------------------

def test_verify_email(client, admin, mail_sink, stack, tenant, visit):
    email = address()
    session = sign_up(client, tenant, email)
    link, params = mailed_link(client, mail_sink, stack, tenant, email, "verifyEmail",
                               requestType="VERIFY_EMAIL", idToken=session["idToken"], continueUrl=CONTINUE)
    user, twice = visit(), visit()
    user.open(link)
    check_form(user, params, "verifyEmail", tenant, {})
    user.screenshot("verifyEmail-form")
    twice.open(link)  # the same link in a second window, before the first one submits
    assert lookup(admin, tenant, session["localId"])["emailVerified"] is False, "the GET consumed the code"

    response = user.submit()
    assert response.status == 200
    assert_success(user.page)
    assert continue_href(user.page) == CONTINUE and not offsite_links(user.page)
    user.screenshot("verifyEmail-result")
    assert lookup(admin, tenant, session["localId"])["emailVerified"] is True
    assert expect_ok(client.lookup(session["idToken"], tenant))["users"][0]["emailVerified"] is True

    twice.submit()
    assert_error(twice.page, "INVALID_OOB_CODE")
    user.open(link)  # a used code: the GET shows the error directly
    assert_error(user.page, "INVALID_OOB_CODE")
    user.assert_own_origin_only()
    twice.assert_own_origin_only()


def test_reset_password(client, admin, mail_sink, stack, tenant, visit):
    email = address()
    sign_up(client, tenant, email)
    link, params = mailed_link(client, mail_sink, stack, tenant, email, "resetPassword",
                               requestType="PASSWORD_RESET", email=email, continueUrl=CONTINUE_IP)
    user, twice = visit(), visit()
    user.open(link)
    check_form(user, params, "resetPassword", tenant, {"newPassword": "password"})
    # A weak password: the browser's own constraint check may stop it (minlength); without that check
    # (an older browser, or the attribute edited away) the server refuses it and the code stays usable.
    user.page.fill("#newPassword", "123")
    if user.page.locator("#newPassword:invalid").count() == 1:
        user.page.click("#submit")
        user.page.wait_for_timeout(300)
        assert user.page.url == link and user.page.locator("form#action-form").count() == 1, "invalid form sent"
        user.page.evaluate("""() => { const f = document.getElementById('action-form');
                                        f.noValidate = true; }""")
    user.submit()
    assert_error(user.page, "WEAK_PASSWORD")
    expect_ok(sign_in(client, tenant, email, PASSWORD))

    user.open(link)
    twice.open(link)
    check_form(user, params, "resetPassword", tenant, {"newPassword": "password"})
    user.page.fill("#newPassword", "a brand new password")
    user.screenshot("resetPassword-form")
    assert user.submit().status == 200
    assert_success(user.page)
    assert continue_href(user.page) == CONTINUE_IP
    user.screenshot("resetPassword-result")

    expect_ok(sign_in(client, tenant, email, "a brand new password"))
    expect_error(sign_in(client, tenant, email, PASSWORD), "INVALID_LOGIN_CREDENTIALS", "INVALID_PASSWORD")

    twice.page.fill("#newPassword", "the second window's password")
    twice.submit()
    assert_error(twice.page, "INVALID_OOB_CODE")
    expect_error(sign_in(client, tenant, email, "the second window's password"),
                 "INVALID_LOGIN_CREDENTIALS", "INVALID_PASSWORD")
    expect_ok(sign_in(client, tenant, email, "a brand new password"))
    user.assert_own_origin_only()
    twice.assert_own_origin_only()


def test_verify_and_change_email(client, admin, mail_sink, stack, tenant, visit):
    old, new = address(), address()
    session = sign_up(client, tenant, old)
    link, params = mailed_link(client, mail_sink, stack, tenant, new, "verifyAndChangeEmail",
                               requestType="VERIFY_AND_CHANGE_EMAIL", idToken=session["idToken"], newEmail=new,
                               continueUrl=CONTINUE)
    user, twice = visit(), visit()
    user.open(link)
    check_form(user, params, "verifyAndChangeEmail", tenant, {})
    user.screenshot("verifyAndChangeEmail-form")
    twice.open(link)
    assert lookup(admin, tenant, session["localId"])["email"] == old, "the GET consumed the code"

    assert user.submit().status == 200
    assert_success(user.page)
    assert continue_href(user.page) == CONTINUE
    user.screenshot("verifyAndChangeEmail-result")
    record = lookup(admin, tenant, session["localId"])
    assert record["email"] == new and record["emailVerified"] is True, record
    expect_ok(sign_in(client, tenant, new, PASSWORD))
    expect_error(sign_in(client, tenant, old, PASSWORD), "INVALID_LOGIN_CREDENTIALS", "EMAIL_NOT_FOUND")

    twice.submit()
    assert_error(twice.page, "INVALID_OOB_CODE")
    user.assert_own_origin_only()
    twice.assert_own_origin_only()


def test_recover_email(client, admin, mail_sink, stack, tenant, visit):
    """An email change mails the old address a recoverEmail link (issue 36); on the page its owner puts the
    address back, and every session of the account ends."""
    old, new = address(), address()
    session = sign_up(client, tenant, old)
    expect_ok(client.post("/v1/accounts:update", {"tenantId": tenant, "idToken": session["idToken"], "email": new,
                                                  "returnSecureToken": True}))
    [mail] = mail_sink.wait_for(old)
    link, params = oob_link(mail)
    assert link.startswith(stack.url + ACTION_PATH + "?"), link
    assert params["mode"] == "recoverEmail" and params["tenantId"] == tenant, params
    user = visit()
    user.open(link)
    assert old in user.page.content(), "the page names the address it restores"
    check_form(user, params, "recoverEmail", tenant, {})
    user.screenshot("recoverEmail-form")
    assert lookup(admin, tenant, session["localId"])["email"] == new, "the GET applied the code"

    assert user.submit().status == 200
    assert_success(user.page)
    user.screenshot("recoverEmail-result")
    record = lookup(admin, tenant, session["localId"])
    assert record["email"] == old and record["emailVerified"] is True, record
    expect_error(client.post("/v1/accounts:lookup", {"tenantId": tenant, "idToken": session["idToken"]}),
                 "TOKEN_EXPIRED")
    expect_ok(sign_in(client, tenant, old, PASSWORD))
    user.assert_own_origin_only()


def test_email_link_sign_in(client, admin, mail_sink, stack, tenant, visit):
    email = address()
    link, params = mailed_link(client, mail_sink, stack, tenant, email, "signIn",
                               requestType="EMAIL_SIGNIN", email=email, continueUrl=CONTINUE)
    user, twice = visit(), visit()
    user.open(link)
    check_form(user, params, "signIn", tenant, {"email": "email"})
    # The app may finish the sign-in itself: continueUrl with the link's query appended.
    open_app = user.page.locator("a#open-app")
    assert open_app.count() == 1, f"no #open-app for an authorized continueUrl: {user.page.content()}"
    href = open_app.get_attribute("href")
    assert href.startswith(CONTINUE), href
    appended = {k: v[0] for k, v in parse_qs(urlparse(href).query).items()}
    for name in ("apiKey", "oobCode", "mode", "lang", "tenantId"):
        assert appended.get(name) == params[name], f"#open-app lacks {name}={params[name]}: {href}"
    assert not offsite_links(user.page), offsite_links(user.page)
    user.page.fill("#email", email)
    user.screenshot("signIn-form")
    twice.open(link)
    assert lookup_email(admin, tenant, email) == [], "the GET signed the user in"

    assert user.submit().status == 200
    assert_success(user.page)
    assert continue_href(user.page) == CONTINUE
    user.screenshot("signIn-result")
    [record] = lookup_email(admin, tenant, email)
    assert record["emailVerified"] is True and record.get("lastLoginAt"), record
    assert "password" in [p.get("providerId") for p in record.get("providerUserInfo", [])], record

    twice.page.fill("#email", email)
    twice.submit()
    assert_error(twice.page, "INVALID_OOB_CODE")
    assert len(lookup_email(admin, tenant, email)) == 1
    user.assert_own_origin_only()
    twice.assert_own_origin_only()


def test_open_app_link_only_to_an_authorized_domain(client, mail_sink, stack, tenant, visit):
    """#open-app carries the code: never to a continueUrl off the authorized domains (the link edited)."""
    email = address()
    link, _ = mailed_link(client, mail_sink, stack, tenant, email, "signIn",
                         requestType="EMAIL_SIGNIN", email=email, continueUrl=CONTINUE)
    user = visit()
    for continue_url in UNAUTHORIZED_CONTINUE_URLS:
        user.open(with_params(link, continueUrl=continue_url))
        assert user.page.locator("form#action-form").count() == 1
        assert not offsite_links(user.page), f"continueUrl {continue_url!r}: {offsite_links(user.page)}"
    user.assert_own_origin_only()


def test_email_link_sign_in_with_another_address_is_refused(client, admin, mail_sink, stack, tenant, visit):
    email, other = address(), address()
    link, params = mailed_link(client, mail_sink, stack, tenant, email, "signIn",
                               requestType="EMAIL_SIGNIN", email=email)
    user = visit()
    user.open(link)
    check_form(user, params, "signIn", tenant, {"email": "email"})
    assert user.page.locator("a#open-app").count() == 0, "no #open-app without a continueUrl"
    user.page.fill("#email", other)
    user.submit()
    assert_error(user.page, "INVALID_EMAIL")
    assert lookup_email(admin, tenant, other) == [] and lookup_email(admin, tenant, email) == []
    user.assert_own_origin_only()


# --------------------------------------------------------------------------------------
# Expiry, continue links, bad links
# --------------------------------------------------------------------------------------

def test_expired_code(client, mail_sink, stack, tenant, visit):
    email = address()
    sign_up(client, tenant, email)
    link, params = mailed_link(client, mail_sink, stack, tenant, email, "resetPassword",
                               requestType="PASSWORD_RESET", email=email)
    user = visit()
    user.open(link)
    check_form(user, params, "resetPassword", tenant, {"newPassword": "password"})

    # The code's lifetime ends now, in the database (as in test_oob.py, which also checks that the code
    # was given TESSERA_OOB_CODE_TTL; waiting that out cost the suite 9 s).
    code_hash = base64.urlsafe_b64encode(hashlib.sha256(params["oobCode"].encode()).digest()).rstrip(b"=").decode()
    assert psql(stack, "UPDATE oob_codes SET expires_at = now() - interval '1 second' "
                       f"WHERE code_hash = '{code_hash}'") == "UPDATE 1"
    page = requests.get(link, timeout=HTTP_TIMEOUT)
    assert re.search(r"""data-code=["']?EXPIRED_OOB_CODE\b""", page.text), describe(page)

    user.page.fill("#newPassword", "too late password")  # the form opened before the expiry
    user.submit()
    assert_error(user.page, "EXPIRED_OOB_CODE")
    user.screenshot("expired-result")
    user.open(link)
    assert_error(user.page, "EXPIRED_OOB_CODE")
    expect_ok(sign_in(client, tenant, email, PASSWORD))
    expect_error(sign_in(client, tenant, email, "too late password"), "INVALID_LOGIN_CREDENTIALS", "INVALID_PASSWORD")
    user.assert_own_origin_only()


UNAUTHORIZED_CONTINUE_URLS = [
    "https://evil.example/after",
    "http://localhost.evil.example/after",
    "http://localhost@evil.example/after",
    "http://evil.example/?next=http://localhost/",
    "http://evil.example\\@localhost/after",  # a browser reads the backslash as a slash: host evil.example
    "javascript://localhost/%0aalert(1)",
]


@pytest.mark.parametrize("continue_url", [None, *UNAUTHORIZED_CONTINUE_URLS])
def test_continue_link_only_to_an_authorized_domain(client, admin, mail_sink, stack, tenant, visit, continue_url):
    """The mailed link's continueUrl is authorized (sendOobCode checks it); here it is edited, as anyone
    holding the link can: the page must not offer a link off the authorized domains."""
    email = address()
    session = sign_up(client, tenant, email)
    link, _ = mailed_link(client, mail_sink, stack, tenant, email, "verifyEmail",
                          requestType="VERIFY_EMAIL", idToken=session["idToken"], continueUrl=CONTINUE)
    user = visit()
    user.open(with_params(link, continueUrl=continue_url))
    user.submit()
    assert_success(user.page)
    assert not offsite_links(user.page), f"continueUrl {continue_url!r}: {offsite_links(user.page)}"
    assert user.page.locator("#continue").count() == 0, f"#continue for {continue_url}: {user.page.content()}"
    assert lookup(admin, tenant, session["localId"])["emailVerified"] is True
    user.assert_own_origin_only()


def test_bad_links_show_an_error_page(client, mail_sink, stack, tenant, visit):
    email = address()
    sign_up(client, tenant, email)
    link, _ = mailed_link(client, mail_sink, stack, tenant, email, "resetPassword",
                          requestType="PASSWORD_RESET", email=email)
    user = visit()
    for changes, status, code in (
        ({"mode": "bogus"}, 400, "INVALID_MODE"),
        ({"oobCode": None}, 400, "INVALID_OOB_CODE"),
        ({"apiKey": "not-the-key"}, 400, "INVALID_API_KEY"),
        ({"oobCode": "garbage"}, None, "INVALID_OOB_CODE"),
    ):
        response = user.open(with_params(link, **changes))
        if status is not None:
            assert response.status == status, f"{changes}: HTTP {response.status}"
        assert_error(user.page, code)
    # None of those consumed the real code.
    user.open(link)
    check_form(user, parse_link(link), "resetPassword", tenant, {"newPassword": "password"})
    user.assert_own_origin_only()


def parse_link(link: str) -> dict:
    return {k: v[0] for k, v in parse_qs(urlparse(link).query).items()}


# --------------------------------------------------------------------------------------
# CSRF, CSP, no JavaScript, languages
# --------------------------------------------------------------------------------------

class FormFields(HTMLParser):
    def __init__(self):
        super().__init__()
        self.fields: dict[str, str] = {}

    def handle_starttag(self, tag, attrs):
        values = dict(attrs)
        if tag == "input" and values.get("name"):
            self.fields[values["name"]] = values.get("value") or ""


def csrf_cookie_of(response: requests.Response) -> str:
    """The cookie's value from the raw Set-Cookie header (whatever its Secure flag)."""
    raw = response.raw.headers.getlist("Set-Cookie") if hasattr(response.raw.headers, "getlist") \
        else [response.headers.get("Set-Cookie", "")]
    for header in raw:
        match = re.match(rf"\s*{CSRF_COOKIE}=([^;]*)", header)
        if match:
            return match.group(1)
    raise AssertionError(f"no {CSRF_COOKIE} cookie set: {describe(response)} headers={dict(response.headers)}")


def test_post_without_the_csrf_cookie_is_refused(client, admin, mail_sink, stack, tenant, visit):
    email = address()
    session = sign_up(client, tenant, email)
    link, _ = mailed_link(client, mail_sink, stack, tenant, email, "verifyEmail",
                          requestType="VERIFY_EMAIL", idToken=session["idToken"])
    page = requests.get(link, timeout=HTTP_TIMEOUT)
    assert page.status_code == 200, describe(page)
    assert_csp(page.headers, link)
    parser = FormFields()
    parser.feed(page.text)
    fields = parser.fields
    cookie = csrf_cookie_of(page)
    assert fields.get("csrf") == cookie, (fields, cookie)
    action = stack.url + ACTION_PATH

    refused = requests.post(action, data=fields, allow_redirects=False, timeout=HTTP_TIMEOUT)
    assert refused.status_code == 403, f"without the cookie: {describe(refused)}"
    assert_csp(refused.headers, action)
    forged = requests.post(action, data={**fields, "csrf": "x" + cookie}, headers={"Cookie": f"{CSRF_COOKIE}={cookie}"},
                           allow_redirects=False, timeout=HTTP_TIMEOUT)
    assert forged.status_code == 403, f"csrf field not the cookie: {describe(forged)}"
    assert lookup(admin, tenant, session["localId"])["emailVerified"] is False, "a refused POST verified the email"

    # In the browser: the cookie gone (another site's form would not carry it) -> the 403 page.
    user = visit()
    user.open(link)
    user.context.clear_cookies()
    assert user.submit().status == 403
    assert user.page.locator("form#action-form").count() == 0
    assert lookup(admin, tenant, session["localId"])["emailVerified"] is False, "a refused POST verified the email"

    # The code is still good: the real pair completes it.
    done = requests.post(action, data=fields, headers={"Cookie": f"{CSRF_COOKIE}={cookie}"},
                         allow_redirects=False, timeout=HTTP_TIMEOUT)
    assert done.status_code == 200 and re.search(r"""data-outcome=["']?success\b""", done.text), describe(done)
    assert_csp(done.headers, action)
    assert lookup(admin, tenant, session["localId"])["emailVerified"] is True
    user.assert_own_origin_only()


def test_without_javascript(client, admin, mail_sink, stack, tenant, visit):
    email = address()
    sign_up(client, tenant, email)
    link, params = mailed_link(client, mail_sink, stack, tenant, email, "resetPassword",
                               requestType="PASSWORD_RESET", email=email, continueUrl=CONTINUE)
    user = visit(javascript=False)
    user.open(link)
    check_form(user, params, "resetPassword", tenant, {"newPassword": "password"})
    user.page.fill("#newPassword", "typed without scripts")
    user.submit()
    assert_success(user.page)
    assert continue_href(user.page) == CONTINUE
    expect_ok(sign_in(client, tenant, email, "typed without scripts"))

    other = address()
    link, params = mailed_link(client, mail_sink, stack, tenant, other, "signIn",
                               requestType="EMAIL_SIGNIN", email=other)
    user.open(link)
    check_form(user, params, "signIn", tenant, {"email": "email"})
    user.page.fill("#email", other)
    user.submit()
    assert_success(user.page)
    [record] = lookup_email(admin, tenant, other)
    assert record["emailVerified"] is True
    user.assert_own_origin_only()


def test_languages(client, admin, mail_sink, stack, tenant, visit):
    email = address()
    session = sign_up(client, tenant, email)
    link, params = mailed_link(client, mail_sink, stack, tenant, email, "verifyEmail",
                               requestType="VERIFY_EMAIL", idToken=session["idToken"], continueUrl=CONTINUE)
    user = visit()
    headings, buttons = {}, {}
    for lang in LANGUAGES:
        user.open(with_params(link, lang=lang))
        page = user.page
        assert page.get_attribute("html", "lang") == lang, f"lang={lang}: {page.content()[:300]}"
        assert page.get_attribute("html", "dir") == ("rtl" if lang == "fa" else "ltr"), page.content()[:300]
        hidden = check_form(user, {**params, "lang": lang}, "verifyEmail", tenant, {})
        assert hidden["lang"] == lang
        headings[lang] = page.locator("h1").inner_text().strip()
        buttons[lang] = page.locator("#submit").inner_text().strip()
        assert headings[lang], f"empty heading in {lang}"
        if lang != "fa":
            user.screenshot(f"{lang}-form")
    for lang in LANGUAGES[1:]:
        assert headings[lang] != headings["en"], f"{lang} heading is the English one: {headings}"
    user.screenshot("fa-form")

    # The result page keeps the language.
    user.submit()
    assert_success(user.page)
    assert user.page.get_attribute("html", "lang") == "fa" and user.page.get_attribute("html", "dir") == "rtl"
    user.screenshot("fa-result")
    assert lookup(admin, tenant, session["localId"])["emailVerified"] is True
    user.assert_own_origin_only()
