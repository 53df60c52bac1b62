"""The admin console (`/console/` on the admin plane, issue #25) in a real browser: Debian's Chromium
driven by Playwright (scripts/browser-deps installs it; nothing downloads a browser).

As an admin would: sign in with a credential, find a user by email, disable and re-enable them, turn
anonymous sign-in on for a tenant and see the API refuse then accept an anonymous sign-up, preview the
anonymous cleanup, and read the audit entries those actions wrote. A tenant-scoped admin cannot reach
another tenant's pages or actions, by link or by URL. A form posted without the session's CSRF token or
from another origin is refused, a session cookie replayed after sign-out opens nothing, and the console
does not exist on the public plane.

Screenshots of every page at 1280 and 360 px go to test-artifacts/console/."""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote

import pytest
import requests

from conftest import HTTP_TIMEOUT, REPO_ROOT, describe, expect_ok

ARTIFACTS = REPO_ROOT / "test-artifacts" / "console"
COOKIE = "tessera_console"
BROWSER_TIMEOUT_MS = 15_000
WIDTHS = (1280, 360)


@pytest.fixture(scope="module")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


def create_user(admin, tenant_id: str, email: str, password: str = "correct horse 1") -> str:
    path = f"/v1/projects/{admin.stack.project_id}/tenants/{tenant_id}/accounts"
    resp = admin.request("POST", path, json={"email": email, "password": password})
    return expect_ok(resp)["localId"]


def user_record(admin, tenant_id: str, local_id: str) -> dict:
    users = admin.lookup_users(tenant_id, [local_id])
    assert len(users) == 1, users
    return users[0]


def credential(admin, tenant_id: str) -> str:
    path = f"/v2/projects/{admin.stack.project_id}/tenants/{tenant_id}/adminCredentials"
    resp = admin.request("POST", path, json={"displayName": "console test"})
    return expect_ok(resp)["secret"]


class Admin:
    """One browser context (its own cookie jar): an admin at the console."""

    def __init__(self, browser, stack, artifacts: Path):
        self.stack = stack
        self.artifacts = artifacts
        self.context = browser.new_context(locale="en-US", viewport={"width": 1280, "height": 900})
        self.context.set_default_timeout(BROWSER_TIMEOUT_MS)
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)

    def url(self, path: str) -> str:
        return self.stack.admin_url + path

    def open(self, path: str):
        response = self.page.goto(self.url(path))
        assert response is not None
        return response

    def sign_in(self, secret: str):
        self.open("/console/sign-in")
        self.page.fill("#credential", secret)
        with self.page.expect_navigation():
            self.page.click("button[type=submit]")

    def click(self, selector: str):
        with self.page.expect_navigation():
            self.page.click(selector)

    def cookie(self) -> str | None:
        return next((c["value"] for c in self.context.cookies() if c["name"] == COOKIE), None)

    def shots(self, name: str) -> None:
        """The page at each width, then back to the desktop width."""
        # A template given a Swift optional it should not have shows the word: never on a page.
        assert "nil" not in self.page.inner_text("main").split(), name
        for width in WIDTHS:
            self.page.set_viewport_size({"width": width, "height": 900})
            self.page.screenshot(path=str(self.artifacts / f"{name}-{width}.png"), full_page=True)
            if width == 360:
                # Nothing wider than the viewport but the tables' own scrolling boxes.
                overflow = self.page.evaluate("document.documentElement.scrollWidth")
                assert overflow <= 362, f"{name} is {overflow}px wide at 360px"
        self.page.set_viewport_size({"width": 1280, "height": 900})

    def text(self) -> str:
        return self.page.inner_text("main")

    def close(self):
        self.context.close()


def session_hash(cookie: str) -> str:
    """What the directory keeps of a session cookie's value (Secrets.tokenHash)."""
    return base64.urlsafe_b64encode(hashlib.sha256(cookie.encode()).digest()).rstrip(b"=").decode()


def csrf_of(page_html: str) -> str:
    match = re.search(r'name="csrf" value="([^"]+)"', page_html)
    assert match, "no CSRF field on the page"
    return html.unescape(match.group(1))


def test_the_console_is_not_on_the_public_plane(stack):
    for path in ("/console/", "/console/sign-in", "/console/assets/console.css"):
        resp = requests.get(stack.url + path, timeout=HTTP_TIMEOUT, allow_redirects=False)
        assert resp.status_code == 404, describe(resp)
    resp = requests.post(stack.url + "/console/sign-in", data={"credential": stack.admin_token},
                         timeout=HTTP_TIMEOUT, allow_redirects=False)
    assert resp.status_code == 404 and "set-cookie" not in resp.headers, describe(resp)


def test_an_admin_finds_a_user_disables_and_enables_them_turns_anonymous_on_and_reads_the_audit(
        stack, admin, client, make_tenant, browser, artifacts):
    tenant_id = make_tenant(enableAnonymousUser=False)["tenantId"]
    email = f"console-{uuid.uuid4().hex[:8]}@example.com"
    local_id = create_user(admin, tenant_id, email)
    for n in range(3):
        create_user(admin, tenant_id, f"other-{n}-{uuid.uuid4().hex[:6]}@example.com")

    at = Admin(browser, stack, artifacts)
    try:
        at.open("/console/")
        assert at.page.url.endswith("/console/sign-in"), at.page.url
        at.shots("sign-in")
        at.page.fill("#credential", "tsa_not-a-credential")
        at.click("button[type=submit]")
        assert "This credential is not valid." in at.text()
        assert at.page.get_attribute("#credential", "aria-invalid") == "true"
        at.shots("sign-in-error")

        at.sign_in(stack.admin_token)
        assert at.page.url.endswith("/console/"), at.page.url
        assert tenant_id in at.text()
        at.shots("scopes")

        # Find the user by email from the tenant's users page.
        at.click(f"a[href='/console/tenants/{tenant_id}/users']")
        assert "4 users" in at.text()
        at.shots("users")
        # A page number past any offset PostgreSQL or Swift can hold is an empty page, not a crash.
        for page in ("9223372036854775807", "-3", "x"):
            response = at.open(f"/console/tenants/{tenant_id}/users?page={page}&sort=nonsense&show=nonsense")
            assert response.status == 200, (page, response.status)
        at.open(f"/console/tenants/{tenant_id}/users")
        at.page.fill("#q", email[:12])
        at.click("form[role=search] button[type=submit]")
        assert "1 user" in at.page.inner_text("p.count") and email in at.text()
        at.click(f"a[href='/console/tenants/{tenant_id}/users/{local_id}']")
        assert at.page.inner_text("h1") == email
        at.shots("user")
        # An id with characters a path must encode (imported ids may hold any): its page opens and acts.
        odd = "odd id+1/é"
        path = f"/v1/projects/{stack.project_id}/tenants/{tenant_id}/accounts"
        expect_ok(admin.request("POST", path, json={"localId": odd, "email": f"odd-{uuid.uuid4().hex[:6]}@example.com"}))
        at.open(f"/console/tenants/{tenant_id}/users?q={quote(odd)}")
        at.click("table a")
        assert odd in at.text()
        at.click("button:has-text('Disable')")
        assert "The user is disabled" in at.text() and user_record(admin, tenant_id, odd).get("disabled") is True
        at.open(f"/console/tenants/{tenant_id}/users/{local_id}")

        # Disable, then enable; the admin API sees each change.
        at.click("button:has-text('Disable')")
        assert "The user is disabled" in at.text()
        assert user_record(admin, tenant_id, local_id).get("disabled") is True
        at.click("button:has-text('Enable')")
        assert "enabled again" in at.text()
        assert not user_record(admin, tenant_id, local_id).get("disabled")

        # Anonymous sign-in: refused by the API, switched on here, then accepted.
        refused = client.sign_up_raw(tenant_id)
        assert refused.status_code == 400, describe(refused)
        at.click("nav.scope a:has-text('Sign-in methods')")
        assert not at.page.is_checked("#enableAnonymousUser")
        at.shots("sign-in-methods")
        at.page.check("#enableAnonymousUser")
        at.click("form.card button[type=submit]")
        assert "Saved." in at.text() and at.page.is_checked("#enableAnonymousUser")
        anonymous = [client.sign_up_anonymous(tenant_id) for _ in range(3)]
        assert all(s.local_id for s in anonymous)

        # The cleanup preview counts the three and draws them due in one week.
        at.click("nav.scope a:has-text('Anonymous cleanup')")
        assert "3 anonymous accounts would be removed" in at.text()
        assert at.page.locator("svg.chart rect.bar").count() == 1
        assert at.page.text_content("svg.chart text.bar-label") == "3"
        at.shots("cleanup")

        # The audit log names each action, its actor and its target.
        at.click("nav.scope a:has-text('Audit log')")
        log = at.text()
        for action in ("/users/{localId}/disable", "/users/{localId}/enable", "/sign-in-methods"):
            assert action in log, log
        assert f"user:{local_id}" in log and "bootstrap" in log
        at.shots("audit")

        at.open("/console/tenants")
        at.shots("tenants")
        # No script error and nothing the CSP had to refuse (the 401 of the wrong credential is expected).
        assert not [e for e in at.errors if "401" not in e], at.errors
    finally:
        at.close()


def test_a_tenant_admin_sees_only_its_tenant(stack, admin, make_tenant, browser, artifacts):
    own = make_tenant()["tenantId"]
    other = make_tenant()["tenantId"]
    other_user = create_user(admin, other, f"other-{uuid.uuid4().hex[:8]}@example.com")
    secret = credential(admin, own)

    at = Admin(browser, stack, artifacts)
    try:
        at.sign_in(secret)
        assert at.page.url.endswith(f"/console/tenants/{own}/users"), at.page.url
        links = at.page.eval_on_selector_all("a", "els => els.map(e => e.getAttribute('href'))")
        assert not any(other in (href or "") for href in links), links
        assert not any(href in ("/console/tenants", "/console/project/users") for href in links), links
        at.shots("tenant-admin-users")

        for path in (f"/console/tenants/{other}/users", f"/console/tenants/{other}/users/{other_user}",
                     f"/console/tenants/{other}/sign-in-methods", f"/console/tenants/{other}/audit",
                     "/console/project/users", "/console/tenants"):
            response = at.open(path)
            assert response.status == 403, (path, response.status)
            assert "Not allowed" in at.text()
        at.shots("tenant-admin-refused")

        # An action on the other tenant's user, with this session's own CSRF token: refused, nothing changes.
        token = csrf_of(at.open(f"/console/tenants/{own}/users").text())
        resp = requests.post(
            at.url(f"/console/tenants/{other}/users/{other_user}/disable"), data={"csrf": token},
            cookies={COOKIE: at.cookie()}, timeout=HTTP_TIMEOUT, allow_redirects=False)
        assert resp.status_code == 403, describe(resp)
        assert not user_record(admin, other, other_user).get("disabled")
        resp = requests.post(
            at.url(f"/console/tenants/{other}/delete"), data={"csrf": token, "confirm": other},
            cookies={COOKIE: at.cookie()}, timeout=HTTP_TIMEOUT, allow_redirects=False)
        assert resp.status_code == 403, describe(resp)
        assert admin.get_tenant(other).status_code == 200
    finally:
        at.close()


class EvilSite:
    """A page on another origin whose form posts to the console as soon as it loads."""

    def __init__(self, port: int, target: str):
        page = (f"<!doctype html><form id=f method=post action='{target}'>"
                "<input name=csrf value=guess></form><script>document.getElementById('f').submit()</script>")

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                body = page.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.url = f"http://127.0.0.1:{port}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def test_forms_need_the_session_token_and_the_console_origin_and_sign_out_ends_the_cookie(
        stack, admin, make_tenant, browser, artifacts):
    tenant_id = make_tenant()["tenantId"]
    local_id = create_user(admin, tenant_id, f"csrf-{uuid.uuid4().hex[:8]}@example.com")
    disable = f"/console/tenants/{tenant_id}/users/{local_id}/disable"

    at = Admin(browser, stack, artifacts)
    evil = EvilSite(stack.port + 28, stack.admin_url + disable)
    try:
        at.sign_in(stack.admin_token)
        cookie = at.cookie()
        assert cookie
        token = csrf_of(at.open(f"/console/tenants/{tenant_id}/users/{local_id}").text())
        jar = {COOKIE: cookie}

        # No token, a wrong token, another origin: each refused, the user untouched.
        for data, headers in (({}, {}), ({"csrf": "x" + token}, {}),
                              ({"csrf": token}, {"Origin": "http://evil.example"}),
                              ({"csrf": token}, {"Sec-Fetch-Site": "cross-site"})):
            resp = requests.post(at.url(disable), data=data, headers=headers, cookies=jar,
                                 timeout=HTTP_TIMEOUT, allow_redirects=False)
            assert resp.status_code == 403, (data, headers, describe(resp))
        assert not user_record(admin, tenant_id, local_id).get("disabled")

        # Real forms from other origins in the same browser. From another site (localhost is not
        # 127.0.0.1's site) the SameSite=Strict cookie stays home: the console asks for a sign-in.
        # From the same site on another port the cookie goes along, and the browser's Sec-Fetch-Site
        # (same-site, not same-origin) gets the form refused.
        for url, refused in ((evil.url.replace("127.0.0.1", "localhost"), "sign-in"), (evil.url, "refused")):
            page = at.context.new_page()
            with page.expect_navigation(url=re.compile(r".*/console/.*")):
                page.goto(url)
            page.wait_for_load_state()
            if refused == "sign-in":
                assert page.url.endswith("/console/sign-in"), page.url
            else:
                assert "Request refused" in page.inner_text("main"), page.url
            page.close()
        assert not user_record(admin, tenant_id, local_id).get("disabled")

        # The same request with the token and from the console's origin works.
        resp = requests.post(at.url(disable), data={"csrf": token}, cookies=jar,
                             headers={"Origin": stack.admin_url}, timeout=HTTP_TIMEOUT, allow_redirects=False)
        assert resp.status_code == 303, describe(resp)
        assert user_record(admin, tenant_id, local_id).get("disabled") is True

        # Sign out; the old cookie then opens nothing and changes nothing.
        at.open("/console/")
        at.click("header form button")
        assert at.page.url.endswith("/console/sign-in") and at.cookie() in (None, "")
        resp = requests.get(at.url(f"/console/tenants/{tenant_id}/users"), cookies=jar,
                            timeout=HTTP_TIMEOUT, allow_redirects=False)
        assert resp.status_code == 303 and resp.headers["location"] == "/console/sign-in", describe(resp)
        resp = requests.post(at.url(f"/console/tenants/{tenant_id}/users/{local_id}/enable"),
                             data={"csrf": token}, cookies=jar, timeout=HTTP_TIMEOUT, allow_redirects=False)
        assert resp.status_code == 303 and resp.headers["location"] == "/console/sign-in", describe(resp)
        assert user_record(admin, tenant_id, local_id).get("disabled") is True
    finally:
        evil.close()
        at.close()


def test_every_console_answer_carries_the_csp_and_a_session_cookie_that_scripts_cannot_read(stack):
    resp = requests.post(stack.admin_url + "/console/sign-in", data={"credential": stack.admin_token},
                         headers={"Sec-Fetch-Site": "same-origin"}, timeout=HTTP_TIMEOUT, allow_redirects=False)
    assert resp.status_code == 303, describe(resp)
    cookie = resp.headers["set-cookie"]
    for attribute in ("HttpOnly", "SameSite=Strict", "Path=/console/"):
        assert attribute in cookie, cookie
    csp = resp.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "frame-ancestors 'none'" in csp and "unsafe-inline" not in csp
    page = requests.get(stack.admin_url + "/console/", cookies=resp.cookies, timeout=HTTP_TIMEOUT)
    assert page.status_code == 200 and page.headers["cache-control"] == "no-store", describe(page)
    assert page.headers["content-security-policy"] == csp


def test_a_new_user_form_shows_errors_by_their_field_and_a_credential_secret_is_shown_once(
        stack, admin, make_tenant, browser, artifacts):
    tenant_id = make_tenant()["tenantId"]
    taken = f"taken-{uuid.uuid4().hex[:8]}@example.com"
    create_user(admin, tenant_id, taken)

    at = Admin(browser, stack, artifacts)
    scoped = Admin(browser, stack, artifacts)
    try:
        at.sign_in(stack.admin_token)
        at.open(f"/console/tenants/{tenant_id}/users")
        at.page.fill("#new-email", taken)
        at.page.fill("#new-password", "correct horse 1")
        at.click("#new-user button[type=submit]")
        assert at.page.inner_text("#new-email-error") == "Another user of this scope has this address."
        assert at.page.get_attribute("#new-email", "aria-invalid") == "true"
        at.page.fill("#new-email", f"new-{uuid.uuid4().hex[:8]}@example.com")
        at.page.fill("#new-password", "x")
        at.click("#new-user button[type=submit]")
        assert at.page.locator("#new-password-error").count() == 1 and at.page.locator("#new-email-error").count() == 0
        at.shots("users-new-user-error")
        at.page.fill("#new-password", "correct horse 1")
        at.click("#new-user button[type=submit]")
        assert "The user is created." in at.text()

        # Its profile: a bad claims object is refused next to its field; a good edit reaches the API.
        created_id = at.page.url.split("/users/")[1].split("?")[0]
        at.page.fill("#edit-claims", "{not json")
        at.click("#profile-form button[type=submit]")
        assert at.page.locator("#edit-claims-error").count() == 1
        assert at.page.get_attribute("#edit-claims", "aria-invalid") == "true"
        at.page.fill("#edit-claims", '{"role": "ops"}')
        at.page.fill("#edit-name", "Ops Person")
        at.click("#profile-form button[type=submit]")
        assert "Saved." in at.text()
        edited = user_record(admin, tenant_id, created_id)
        assert edited["displayName"] == "Ops Person" and json.loads(edited["customAttributes"]) == {"role": "ops"}

        # A credential for the tenant: its secret is on the answer to the form and nowhere after.
        at.click("nav.scope a:has-text('Admin credentials')")
        at.page.fill("#credential-name", "console ops")
        at.click("form.card button[type=submit]")
        secret = at.page.inner_text("code.secret-value").strip()
        assert secret.startswith("tsa_")
        at.shots("credentials-new-secret")
        at.open(f"/console/tenants/{tenant_id}/credentials")
        assert secret not in at.page.content() and at.page.locator("code.secret-value").count() == 0

        # It opens the tenant's console; revoked, its session ends at once.
        scoped.sign_in(secret)
        assert scoped.page.url.endswith(f"/console/tenants/{tenant_id}/users")
        assert scoped.page.locator("nav.scope a:has-text('Admin credentials')").count() == 0
        at.open(f"/console/tenants/{tenant_id}/credentials")
        at.click("button[aria-label^='Revoke console ops']")
        assert "The credential is revoked" in at.text()
        scoped.open(f"/console/tenants/{tenant_id}/users")
        assert scoped.page.url.endswith("/console/sign-in")
    finally:
        scoped.close()
        at.close()


def test_providers_are_set_up_in_the_console_and_the_admin_api_sees_them(stack, admin, make_tenant, browser, artifacts):
    tenant_id = make_tenant()["tenantId"]
    base = f"/v2/projects/{stack.project_id}/tenants/{tenant_id}"
    at = Admin(browser, stack, artifacts)
    try:
        at.sign_in(stack.admin_token)
        at.open(f"/console/tenants/{tenant_id}/providers")
        at.page.check("#google-com-enabled")
        at.page.fill("#google-com-client", "console-client.apps.example")
        at.click("#google-com button[type=submit]")
        assert "Saved." in at.text()
        google = expect_ok(admin.request("GET", f"{base}/defaultSupportedIdpConfigs/google.com"))
        assert google["enabled"] is True and google["clientId"] == "console-client.apps.example", google

        # An issuer that is not https is refused next to the form, and nothing is created.
        at.page.fill("#oidc-id", "oidc.console")
        at.page.fill("#oidc-issuer", "http://idp.example")
        at.page.fill("#oidc-client", "c-1")
        at.click("#new-oidc button[type=submit]")
        assert "issuer must be an https URL" in at.page.inner_text("#oidc-error")
        assert admin.request("GET", f"{base}/oauthIdpConfigs/oidc.console").status_code == 404
        at.page.fill("#oidc-id", "oidc.console")
        at.page.fill("#oidc-issuer", "https://idp.example")
        at.page.fill("#oidc-client", "c-1")
        at.page.fill("#oidc-domains", "example.com, Example.org")
        at.click("#new-oidc button[type=submit]")
        assert "Saved." in at.text()
        oidc = expect_ok(admin.request("GET", f"{base}/oauthIdpConfigs/oidc.console"))
        assert oidc["issuer"] == "https://idp.example" and oidc["trustedEmailDomains"] == ["example.com", "example.org"]
        at.shots("providers")
    finally:
        at.close()


def test_the_providers_page_shows_the_redirect_uri_and_takes_apple_s_code_flow_key(
        stack, admin, make_tenant, browser, artifacts):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    tenant_id = make_tenant()["tenantId"]
    base = f"/v2/projects/{stack.project_id}/tenants/{tenant_id}"
    redirect_uri = stack.url + "/__/auth/handler"
    pem = ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
    at = Admin(browser, stack, artifacts)
    try:
        at.sign_in(stack.admin_token)
        at.open(f"/console/tenants/{tenant_id}/providers")
        # One URL to register with every provider, shown at the top and next to each client id.
        assert at.page.inner_text("#redirect-uri") == redirect_uri
        assert redirect_uri in at.page.inner_text("#apple-com") and redirect_uri in at.page.inner_text("#github-com")

        # A key that is not Apple's kind (P-256) is refused next to the form; nothing is created.
        at.page.check("#apple-com-enabled")
        at.page.fill("#apple-com-client", "com.example.web")
        at.page.fill("#apple-team", "TEAM123456")
        at.page.fill("#apple-key-id", "KEY1234567")
        at.page.fill("#apple-key", "not a key")
        at.click("#apple-com button[type=submit]")
        assert "P-256" in at.page.inner_text("#apple-com-error")
        assert admin.request("GET", f"{base}/defaultSupportedIdpConfigs/apple.com").status_code == 404

        at.page.check("#apple-com-enabled")
        at.page.fill("#apple-com-client", "com.example.web")
        at.page.fill("#apple-team", "TEAM123456")
        at.page.fill("#apple-key-id", "KEY1234567")
        at.page.fill("#apple-key", pem)
        at.click("#apple-com button[type=submit]")
        assert "Saved." in at.text()
        apple = expect_ok(admin.request("GET", f"{base}/defaultSupportedIdpConfigs/apple.com"))
        code_flow = apple["appleSignInConfig"]["codeFlowConfig"]
        assert (code_flow["teamId"], code_flow["keyId"]) == ("TEAM123456", "KEY1234567"), apple
        assert code_flow["privateKey"].strip() == pem.strip()
        # The key is never shown again, and an empty field keeps it.
        assert at.page.input_value("#apple-key") == "" and "leave empty to keep it" in at.page.inner_text("#apple-com")
        at.click("#apple-com button[type=submit]")
        apple = expect_ok(admin.request("GET", f"{base}/defaultSupportedIdpConfigs/apple.com"))
        assert apple["appleSignInConfig"]["codeFlowConfig"]["privateKey"].strip() == pem.strip()
        at.shots("providers-apple")
    finally:
        at.close()


def test_the_project_s_authorized_domains_are_edited_on_its_sign_in_methods_page(
        stack, admin, make_tenant, browser, artifacts):
    """Project-wide state: the test keeps localhost and 127.0.0.1 in every list it saves (the suite's
    pages live there) and puts the deployment's default back at the end."""
    tenant_id = make_tenant()["tenantId"]
    at = Admin(browser, stack, artifacts)
    try:
        at.sign_in(stack.admin_token)
        at.open("/console/project/sign-in-methods")
        assert "deployment's default" in at.text()
        assert at.page.input_value("#authorized-domains").split() == ["localhost", "127.0.0.1"]

        at.page.fill("#authorized-domains", "localhost\n127.0.0.1\nhttps://app.example/")
        at.click("#domains-form button[value=save]")
        assert "host, or host:port" in at.page.inner_text("#domains-error")
        assert expect_ok(admin.get_config())["authorizedDomains"] == ["localhost", "127.0.0.1"]

        at.page.fill("#authorized-domains", "localhost\n127.0.0.1\nApp.Example\nlocalhost")
        at.click("#domains-form button[value=save]")
        assert "Saved." in at.text()
        assert expect_ok(admin.get_config())["authorizedDomains"] == ["localhost", "127.0.0.1", "app.example"]
        # The token service answers the same list to the SDKs (getProjectConfig).
        public = requests.get(f"{stack.url}/v1/projects", params={"key": stack.api_key}, timeout=HTTP_TIMEOUT)
        assert expect_ok(public)["authorizedDomains"] == ["localhost", "127.0.0.1", "app.example"]
        at.shots("authorized-domains")

        # A tenant's page lists them without a form: they are the project's.
        at.open(f"/console/tenants/{tenant_id}/sign-in-methods")
        assert at.page.locator("#domains-form").count() == 0
        assert "app.example" in at.page.inner_text("#domains-list")

        at.open("/console/project/sign-in-methods")
        at.click("#domains-form button[value=default]")
        assert "Saved." in at.text() and "deployment's default" in at.text()
        assert expect_ok(admin.get_config())["authorizedDomains"] == ["localhost", "127.0.0.1"]
    finally:
        admin.patch_config({}, update_mask="authorizedDomains")
        at.close()


def test_users_exported_from_one_tenant_import_into_another_and_sign_in_with_their_passwords(
        stack, admin, client, make_tenant, browser, artifacts, tmp_path):
    source = make_tenant()["tenantId"]
    target = make_tenant(allowPasswordSignup=True)["tenantId"]
    people = {f"move-{n}-{uuid.uuid4().hex[:6]}@example.com": f"pass phrase {n}" for n in range(3)}
    for email, password in people.items():
        create_user(admin, source, email, password)

    at = Admin(browser, stack, artifacts)
    try:
        at.sign_in(stack.admin_token)
        at.open(f"/console/tenants/{source}/transfer")
        with at.page.expect_download() as download:
            at.page.click("a[download]")
        exported = tmp_path / "users.json"
        download.value.save_as(str(exported))
        data = json.loads(exported.read_text())
        assert sorted(u["email"] for u in data["users"]) == sorted(people), data
        assert all(u.get("passwordHash") and u.get("salt") for u in data["users"])
        assert data["hashConfig"]["algorithm"] == "SCRYPT" and data["hashConfig"]["signerKey"]

        at.open(f"/console/tenants/{target}/transfer")
        at.page.set_input_files("#import-file", str(exported))
        at.page.click("#import button[type=submit]")
        at.page.locator("#import-status", has_text="Done").wait_for()
        assert at.page.inner_text("#import-status") == "Done: 3 imported, 0 refused, of 3."
        at.shots("transfer")
        # The same file again: every user is refused (their ids exist), and said so.
        at.page.click("#import button[type=submit]")
        at.page.locator("#import-status", has_text="Done: 0").wait_for()
        assert at.page.inner_text("#import-status") == "Done: 0 imported, 3 refused, of 3."
        assert at.page.locator("#import-failures li").count() == 3
        # Hashes without the parameters they need: the API's error, in words, and nothing imported.
        at.page.fill("#import-signer", "")
        broken = tmp_path / "no-key.json"
        broken.write_text(json.dumps({"users": [dict(u, localId=u["localId"] + "-x", email="x" + u["email"])
                                                for u in data["users"]]}))
        at.page.set_input_files("#import-file", str(broken))
        at.page.click("#import button[type=submit]")
        at.page.locator("#import-status", has_text="Import stopped").wait_for()
        assert "MISSING_SIGNER_KEY" in at.page.inner_text("#import-status")
        # The export is in the source tenant's audit log.
        at.open(f"/console/tenants/{source}/audit")
        assert f"GET /console/tenants/{source}/export.json" in at.text()
    finally:
        at.close()
    for email, password in people.items():
        resp = client.post("/v1/accounts:signInWithPassword",
                           {"email": email, "password": password, "tenantId": target, "returnSecureToken": True})
        assert expect_ok(resp)["email"] == email


def test_a_service_account_made_in_the_console_signs_custom_tokens_until_revoked(
        stack, client, make_tenant, browser, artifacts):
    from test_custom_tokens import private_key_of, sign, sign_in_raw, token_payload
    tenant_id = make_tenant()["tenantId"]
    at = Admin(browser, stack, artifacts)
    try:
        at.sign_in(stack.admin_token)
        at.open(f"/console/tenants/{tenant_id}/service-accounts")
        at.page.fill("#account-name", "backend")
        at.click("#new-service-account button[type=submit]")
        account = json.loads(at.page.inner_text("#service-account-json"))
        assert account["type"] == "service_account" and account["private_key"].startswith("-----BEGIN PRIVATE KEY")
        at.open(f"/console/tenants/{tenant_id}/service-accounts")
        assert at.page.locator("#service-account-json").count() == 0 and "PRIVATE KEY" not in at.page.content()

        token = sign(token_payload(account, "console-made", tenant_id=tenant_id), private_key_of(account),
                     account["private_key_id"])
        signed = sign_in_raw(client, token, tenant_id)
        assert signed.status_code == 200, describe(signed)

        at.click("button[aria-label^='Revoke backend']")
        assert "The service account is revoked" in at.text()
        refused = sign_in_raw(client, sign(token_payload(account, "console-made", tenant_id=tenant_id),
                                           private_key_of(account), account["private_key_id"]), tenant_id)
        assert refused.status_code == 400, describe(refused)
    finally:
        at.close()


def test_a_session_ends_when_idle_or_old_and_every_control_has_a_label_and_works_from_the_keyboard(
        stack, admin, make_tenant, browser, artifacts):
    from conftest import psql
    tenant_id = make_tenant()["tenantId"]
    local_id = create_user(admin, tenant_id, f"keys-{uuid.uuid4().hex[:8]}@example.com")
    at = Admin(browser, stack, artifacts)
    try:
        # Keyboard only: the skip link, then the credential field, typed into, sent with Enter.
        at.open("/console/sign-in")
        at.page.keyboard.press("Tab")
        assert at.page.evaluate("document.activeElement.className") == "skip"
        for _ in range(3):  # past the header's link, to the field
            at.page.keyboard.press("Tab")
            if at.page.evaluate("document.activeElement.id") == "credential":
                break
        assert at.page.evaluate("document.activeElement.id") == "credential"
        at.page.keyboard.type(stack.admin_token)
        with at.page.expect_navigation():
            at.page.keyboard.press("Enter")
        assert at.page.url.endswith("/console/")

        base = f"/console/tenants/{tenant_id}"
        for path in ("/console/", "/console/tenants", f"{base}/users", f"{base}/users/{local_id}",
                     f"{base}/sign-in-methods", f"{base}/providers", f"{base}/templates", f"{base}/cleanup",
                     f"{base}/audit", f"{base}/service-accounts", f"{base}/credentials", f"{base}/transfer"):
            at.open(path)
            unlabelled = at.page.eval_on_selector_all(
                "input:not([type=hidden]), select, textarea",
                "els => els.filter(e => e.labels.length === 0).map(e => e.name || e.id)")
            assert not unlabelled, (path, unlabelled)
            nameless = at.page.eval_on_selector_all(
                "button, a", "els => els.filter(e => !(e.innerText || e.getAttribute('aria-label') || '').trim())"
                ".map(e => e.outerHTML)")
            assert not nameless, (path, nameless)
        at.open(f"{base}/templates")
        at.shots("templates")
        at.open(f"{base}/service-accounts")
        at.shots("service-accounts")

        # Idle past the idle timeout (30 min), then past the lifetime (12 h): each time, signed out.
        psql(stack, "UPDATE console_sessions SET last_seen_at = now() - interval '31 minutes' "
                    f"WHERE session_hash = '{session_hash(at.cookie())}'")
        at.open(f"{base}/users")
        assert at.page.url.endswith("/console/sign-in")
        at.sign_in(stack.admin_token)
        psql(stack, "UPDATE console_sessions SET created_at = now() - interval '13 hours' "
                    f"WHERE session_hash = '{session_hash(at.cookie())}'")
        at.open(f"{base}/users")
        assert at.page.url.endswith("/console/sign-in")
    finally:
        at.close()


def test_the_session_cookie_is_secure_behind_tls(stack):
    """Behind a TLS ingress (X-Forwarded-Proto: https, which the local nginx sets from its scheme) the
    cookie is Secure (and a `__Host-` cookie, test_review_cookies_forms.py); over plain HTTP (this stack) it
    cannot be, or the browser would drop it."""
    for proto, secure in (("https", True), ("http", False)):
        resp = requests.post(stack.directory_url + "/console/sign-in", data={"credential": stack.admin_token},
                             headers={"X-Forwarded-Proto": proto, "Sec-Fetch-Site": "same-origin"},
                             timeout=HTTP_TIMEOUT, allow_redirects=False)
        assert resp.status_code == 303, describe(resp)
        assert ("; Secure" in resp.headers["set-cookie"]) == secure, resp.headers["set-cookie"]


def test_a_mail_template_is_checked_by_its_form_saved_previewed_and_reset(stack, admin, make_tenant, browser,
                                                                          artifacts):
    tenant_id = make_tenant()["tenantId"]
    api = f"/v2/projects/{stack.project_id}/tenants/{tenant_id}/mailTemplates"
    at = Admin(browser, stack, artifacts)
    try:
        at.sign_in(stack.admin_token)
        at.open(f"/console/tenants/{tenant_id}/templates")
        at.page.fill("#PASSWORD_RESET-body", "No link here.")
        at.click("#PASSWORD_RESET button[type=submit]")
        assert "%LINK%" in at.page.inner_text("#PASSWORD_RESET-error")
        assert at.page.get_attribute("#PASSWORD_RESET-body", "aria-invalid") == "true"
        at.page.fill("#PASSWORD_RESET-subject", "Reset for %APP_NAME%")
        at.page.fill("#PASSWORD_RESET-body", "Hello %DISPLAY_NAME%, follow %LINK%")
        at.click("#PASSWORD_RESET button[type=submit]")
        assert "Saved." in at.text()
        # The preview is the real renderer's: placeholders filled with the sample user.
        assert "Hello Ada, follow https://app.example.com/" in at.page.inner_text("#PASSWORD_RESET pre")
        saved = {t["requestType"]: t for t in expect_ok(admin.request("GET", api))["templates"]}
        assert saved["PASSWORD_RESET"]["custom"] is True
        assert saved["PASSWORD_RESET"]["body"] == "Hello %DISPLAY_NAME%, follow %LINK%"
        at.click("#PASSWORD_RESET button:has-text('Back to the built-in template')")
        saved = {t["requestType"]: t for t in expect_ok(admin.request("GET", api))["templates"]}
        assert saved["PASSWORD_RESET"]["custom"] is False
    finally:
        at.close()


def test_an_admin_sees_a_user_s_second_factor_and_removes_it(stack, admin, client, make_tenant, browser, artifacts):
    """docs/protocol/mfa.md#admins: the user page lists the factors and the sessions signed in with them; Remove
    takes one away, and the user signs in with the password again."""
    import test_mfa  # the TOTP helpers: a verified user, enrolment with a code computed as an app does

    tenant_id = make_tenant(allowPasswordSignup=True, mfaConfig=test_mfa.TOTP_ON)["tenantId"]
    email = test_mfa.address()
    user = test_mfa.verified_user(client, admin, tenant_id, email)
    _, enrolled = test_mfa.enrol(client, tenant_id, user["idToken"])
    enrollment = test_mfa.unverified_claims(enrolled["idToken"])["firebase"]["second_factor_identifier"]
    assert "mfaPendingCredential" in test_mfa.password_sign_in(client, tenant_id, email)

    at = Admin(browser, stack, artifacts)
    try:
        at.sign_in(stack.admin_token)
        at.open(f"/console/tenants/{tenant_id}/users/{user['localId']}")
        factors = at.page.inner_text("section[aria-labelledby=factors]")
        assert "Authenticator app (TOTP)" in factors and "phone app" in factors and enrollment in factors
        assert "password + totp" in at.page.inner_text("section[aria-labelledby=sessions]")
        at.shots("user-second-factor")
        at.click("button[aria-label='Remove the factor phone app']")
        assert "The second factor is removed" in at.text()
        assert "None: the user signs in with one factor." in at.page.inner_text("section[aria-labelledby=factors]")
        at.shots("user-second-factor-removed")
        assert at.errors == [], at.errors
    finally:
        at.close()
    assert "mfaInfo" not in admin.lookup_users(tenant_id, [user["localId"]])[0]
    expect_error = test_mfa.expect_error
    expect_error(client.refresh_raw(enrolled["refreshToken"]), "TOKEN_EXPIRED")
    assert "idToken" in test_mfa.password_sign_in(client, tenant_id, email)


def test_phone_sign_in_and_totp_are_switched_on_in_the_console(stack, admin, make_tenant, browser, artifacts):
    """docs/protocol/phone.md#turning-it-on, docs/protocol/mfa.md#turning-it-on: the sign-in methods page's two
    switches write the settings the admin API shows, and back off."""
    tenant_id = make_tenant()["tenantId"]
    at = Admin(browser, stack, artifacts)
    try:
        at.sign_in(stack.admin_token)
        at.open(f"/console/tenants/{tenant_id}/sign-in-methods")
        assert not at.page.is_checked("#enablePhoneSignIn") and not at.page.is_checked("#totpSecondFactors")
        at.page.check("#enablePhoneSignIn")
        at.page.check("#totpSecondFactors")
        at.click("form.card button[type=submit]")
        assert "Saved." in at.text()
        at.shots("sign-in-methods-phone-totp")
        tenant = expect_ok(admin.get_tenant(tenant_id))
        assert tenant["enablePhoneSignIn"] is True
        assert tenant["mfaConfig"]["providerConfigs"] == [
            {"state": "ENABLED", "totpProviderConfig": {"adjacentIntervals": 5}}], tenant
        at.page.uncheck("#totpSecondFactors")
        at.click("form.card button[type=submit]")
        tenant = expect_ok(admin.get_tenant(tenant_id))
        assert "providerConfigs" not in tenant["mfaConfig"] and tenant["enablePhoneSignIn"] is True, tenant
        assert at.errors == [], at.errors
    finally:
        at.close()


def test_text_message_settings_and_sms_factors_are_set_in_the_console(stack, admin, client, make_tenant, browser,
                                                                      artifacts):
    """docs/protocol/phone.md#turning-it-on: the sign-in methods page's text-message form writes the scope's test
    numbers and regions as the admin API shows them, refuses what the API refuses with the error by its field, and
    the SMS second-factor switch writes `mfaConfig`; a saved test number then signs in with its code."""
    tenant_id = make_tenant()["tenantId"]
    at = Admin(browser, stack, artifacts)
    try:
        at.sign_in(stack.admin_token)
        at.open(f"/console/tenants/{tenant_id}/sign-in-methods")
        assert at.page.is_checked("#regions-every") and at.page.input_value("#test-numbers") == ""
        at.page.fill("#test-numbers", "+1 650-555-0123 123456\n+44 7700 900123 12345")
        at.page.check("#regions-only")
        at.page.fill("#regions", "us, Germany")
        at.click("#sms-form button[type=submit]")
        assert "must be 6 digits" in at.page.inner_text("#test-numbers-error")
        assert at.page.get_attribute("#test-numbers", "aria-invalid") == "true"
        assert at.page.input_value("#test-numbers").endswith("12345") and at.page.is_checked("#regions-only")
        tenant = expect_ok(admin.get_tenant(tenant_id))
        assert not tenant.get("testPhoneNumbers") and "smsRegionConfig" not in tenant, tenant

        at.page.fill("#test-numbers", "+1 650-555-0123 123456\n+44 7700 900123 654321")
        at.click("#sms-form button[type=submit]")
        assert "is not a region code" in at.page.inner_text("#regions-error")
        at.page.fill("#regions", "us, de")
        at.click("#sms-form button[type=submit]")
        assert "Saved." in at.text()
        tenant = expect_ok(admin.get_tenant(tenant_id))
        assert tenant["testPhoneNumbers"] == {"+16505550123": "123456", "+447700900123": "654321"}, tenant
        assert tenant["smsRegionConfig"] == {"allowlistOnly": {"allowedRegions": ["US", "DE"]}}, tenant
        assert at.page.is_checked("#regions-only") and at.page.input_value("#regions") == "US DE"

        # Phone sign-in and SMS second factors on; the test number signs in with its code.
        at.page.check("#enablePhoneSignIn")
        at.page.check("#phoneSecondFactors")
        at.click("form.card button[type=submit]")
        assert "Saved." in at.text()
        at.shots("sign-in-methods-sms")
        tenant = expect_ok(admin.get_tenant(tenant_id))
        assert tenant["mfaConfig"]["state"] == "ENABLED" and tenant["mfaConfig"]["enabledProviders"] == ["PHONE_SMS"]
        session = expect_ok(client.post("/v1/accounts:sendVerificationCode",
                                        {"tenantId": tenant_id, "phoneNumber": "+16505550123"}))["sessionInfo"]
        expect_ok(client.post("/v1/accounts:signInWithPhoneNumber",
                              {"tenantId": tenant_id, "sessionInfo": session, "code": "123456"}))

        # Every region again, and the SMS factors off.
        at.page.check("#regions-every")
        at.click("#sms-form button[type=submit]")
        at.page.uncheck("#phoneSecondFactors")
        at.click("form.card button[type=submit]")
        tenant = expect_ok(admin.get_tenant(tenant_id))
        assert "smsRegionConfig" not in tenant and "PHONE_SMS" not in tenant["mfaConfig"].get("enabledProviders", [])
        # The browser reports the two refused forms' 400 answers, and nothing else.
        assert at.errors == ["Failed to load resource: the server responded with a status of 400 (Bad Request)"] * 2, \
            at.errors
    finally:
        at.close()
