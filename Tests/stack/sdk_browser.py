"""The Firebase JS SDK's OAuth popup and redirect flows in a real browser: the harness for whole-stack tests of
Tessera's hosted handler page (/emulator/auth/handler, /__/auth/handler) and relay iframe (/emulator/auth/iframe,
/__/auth/iframe).

The real SDK cannot be installed here (no npm registry), and Google's gapi script cannot be loaded offline. So:

* ``browser/app.html`` + ``browser/sdk_flows.js`` is an app that behaves as one built on firebase 12.18.0 in
  emulator mode: signInWithPopup / linkWithPopup / reauthenticateWithPopup, the three *WithRedirect calls and
  getRedirectResult, reproduced from the SDK's sources (handler URL, iframe URL, gapi calls, event matching,
  signInWithIdp body and headers, error mapping, storage keys, timeouts). Its test surface is ``window.__sdk``.
* ``browser/gapi_double.js`` stands in for https://apis.google.com/js/api.js. Every page, popup and iframe of a
  browser context gets it (:func:`install_gapi_double`), so the app (parent) and Tessera's iframe page (child)
  talk through it. Its header comment documents the surface it implements.
* :class:`PagesServer` serves ``browser/`` on 127.0.0.1 (or localhost, to match the stack): the app must be
  same-site with the stack, because browsers partition an iframe's storage by top-level site, and the redirect
  flow relies on the iframe reading the sessionStorage the handler wrote.

Use from a test module::

    from sdk_browser import sdk_pages, sdk_app, oauth_artifacts  # noqa: F401  (fixtures)

    def test_popup(sdk_app):
        app = sdk_app()                                  # the stack's API key, no tenant
        flow = app.start_popup("signInWithPopup", "google.com", scopes=["email"])
        ...drive flow.popup (a Playwright Page) through the IdP...
        result = expect_result(flow.wait())
        assert result["user"]["uid"] and app.idp_requests()[-1]["requestUri"]

Browser: Debian's Chromium at /usr/bin/chromium (scripts/browser-deps), headless, through conftest's ``browser``
fixture (or :func:`launch_chromium` outside pytest). Screenshots go to test-artifacts/oauth-flows/.

SDK references in the JS files: firebase/firebase-js-sdk @ 6f865964, packages/auth/src/; the contract summary is
docs/oauth-flows.md §4.1.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable
from urllib.parse import urlencode, urlparse

import pytest

from conftest import CHROMIUM, REPO_ROOT
from sdk_traffic import JS_GMPID, JS_VERSION

BROWSER_DIR = Path(__file__).resolve().parent / "browser"
ARTIFACTS = REPO_ROOT / "test-artifacts" / "oauth-flows"
GAPI_SCRIPT_URL = "https://apis.google.com/js/api.js"
# Every request for the gapi loader, with or without a query (?onload=__iframefcbNNN).
GAPI_ROUTE = re.compile(r"^https://apis\.google\.com/js/api\.js(?:[?#].*)?$")
SDK_VERSION = JS_VERSION  # "12.18.0": the v= of the handler and iframe URLs

POPUP_METHODS = ("signInWithPopup", "linkWithPopup", "reauthenticateWithPopup")
REDIRECT_METHODS = ("signInWithRedirect", "linkWithRedirect", "reauthenticateWithRedirect")
LOOPBACK_HOSTS = ("127.0.0.1", "localhost")

BROWSER_TIMEOUT_MS = 15_000   # Playwright's default per action
FLOW_TIMEOUT_MS = 30_000      # one flow step (popup open, redirect round trip, op settling)
# A popup the user closed is reported after the SDK's poll (<= 2 s) plus its 8 s grace
# (platform_browser/strategies/popup.ts:55-58, 300-321).
POPUP_CLOSED_MS = 2_000 + 8_000


# ======================================================================================================================
# Static server for browser/
# ======================================================================================================================

class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-store")
        super().end_headers()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class's name)
        pass


class PagesServer:
    """A static HTTP server for ``browser/`` on 127.0.0.1:<free port>, in a daemon thread."""

    def __init__(self, directory: Path = BROWSER_DIR, bind: str = "127.0.0.1"):
        self.directory = Path(directory)
        handler = functools.partial(_QuietHandler, directory=str(self.directory))
        self.httpd = http.server.ThreadingHTTPServer((bind, 0), handler)
        self.httpd.daemon_threads = True
        self.port: int = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="sdk-pages", daemon=True)

    def start(self) -> "PagesServer":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def origin(self, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}"

    def app_url(self, emulator_url: str, api_key: str, *, app_name: str | None = None,
                tenant_id: str | None = None, app_id: str | None = JS_GMPID, auth_domain: str | None = None,
                language: str | None = None, widget_paths: str | None = None, host: str | None = None) -> str:
        """The app page's URL. ``host`` defaults to :func:`app_host_for` ``emulator_url`` (same site as the stack).
        ``widget_paths="hosted"`` makes the app use /__/auth/handler and /__/auth/iframe (a harness-only switch;
        see sdk_flows.js)."""
        params: dict[str, str] = {"emulator": emulator_url, "apiKey": api_key}
        for name, value in (("appName", app_name), ("tenantId", tenant_id), ("appId", app_id),
                            ("authDomain", auth_domain), ("lang", language), ("widgetPaths", widget_paths)):
            if value is not None:
                params[name] = value
        return f"{self.origin(host or app_host_for(emulator_url))}/app.html?{urlencode(params)}"

    def __enter__(self) -> "PagesServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def app_host_for(emulator_url: str) -> str:
    """The host to serve the app from: the stack's own loopback name (127.0.0.1 or localhost), so app and stack
    are same-site (ports do not count), else 127.0.0.1."""
    host = (urlparse(emulator_url).hostname or "").lower()
    return host if host in LOOPBACK_HOSTS else "127.0.0.1"


def origin_of(url: str) -> str:
    parsed = urlparse(url)
    return f"{parsed.scheme}://{parsed.netloc}".lower()


# ======================================================================================================================
# The gapi double and the browser
# ======================================================================================================================

def gapi_double_source(options: dict | None = None) -> str:
    """gapi_double.js, preceded by ``window.__FAKE_GAPI_OPTIONS = {...}`` when ``options`` are given. Options
    (documented in the script): loadTimeout, loadTimeoutMs, loadDelayMs, noPong, gapiQuery."""
    source = (BROWSER_DIR / "gapi_double.js").read_text(encoding="utf-8")
    if options:
        source = f"window.__FAKE_GAPI_OPTIONS = {json.dumps(options)};\n" + source
    return source


def install_gapi_double(context, options: dict | None = None) -> None:
    """Answers https://apis.google.com/js/api.js* with the double for every page, popup and iframe of the
    Playwright BrowserContext ``context``."""
    body = gapi_double_source(options)

    def fulfill(route) -> None:
        route.fulfill(status=200, content_type="text/javascript; charset=utf-8", body=body,
                      headers={"Cache-Control": "no-store", "Access-Control-Allow-Origin": "*"})

    context.route(GAPI_ROUTE, fulfill)


def launch_chromium(playwright):
    """Debian's Chromium, headless, the way conftest's ``browser`` fixture launches it (for scripts outside
    pytest; tests use that fixture)."""
    if not os.access(CHROMIUM, os.X_OK):
        raise RuntimeError(f"{CHROMIUM} not found: run scripts/browser-deps (Debian's chromium package)")
    args = ["--no-sandbox"] if os.geteuid() == 0 else []
    return playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=args)


# ======================================================================================================================
# Outcomes
# ======================================================================================================================
# An outcome is the record window.__sdk keeps of one call: {id, method, args, state: 'pending'|'fulfilled'|
# 'rejected', result, error, started, settled}. result is a UserCredential view {operationType, providerId, user,
# _tokenResponse, additionalUserInfo}, null (getRedirectResult without a redirect), or a plain value; error is
# {name, code: 'auth/...', message, customData}.

class SdkFlowError(AssertionError):
    """A flow step that could not go on because the SDK call settled first (e.g. rejected before opening its
    popup or navigating)."""

    def __init__(self, message: str, outcome: dict | None):
        self.outcome = outcome
        error = (outcome or {}).get("error") or {}
        self.code = error.get("code")
        super().__init__(f"{message}: {json.dumps(outcome)[:1500]}")


def expect_result(outcome: dict) -> Any:
    """The result of a fulfilled outcome (asserts it was fulfilled)."""
    assert outcome and outcome.get("state") == "fulfilled", f"expected success, got {json.dumps(outcome)[:1500]}"
    return outcome["result"]


def expect_error(outcome: dict, *codes: str) -> dict:
    """The error of a rejected outcome whose code is one of ``codes`` ('auth/...')."""
    assert outcome and outcome.get("state") == "rejected", f"expected {codes}, got {json.dumps(outcome)[:1500]}"
    error = outcome["error"] or {}
    assert error.get("code") in codes, f"expected {' or '.join(codes)}, got {json.dumps(outcome)[:1500]}"
    return error


def provider_args(provider_id: str, scopes: list[str] | tuple[str, ...] | None = None,
                  custom_parameters: dict | None = None, generic: bool = False) -> dict:
    """The ``args`` of a popup/redirect method: the provider as the app builds it. google.com is a
    GoogleAuthProvider (always adds the 'profile' scope) unless ``generic`` (new OAuthProvider('google.com'));
    saml.* is a SAMLAuthProvider (no scopes)."""
    args: dict[str, Any] = {"providerId": provider_id}
    if scopes:
        args["scopes"] = list(scopes)
    if custom_parameters:
        args["customParameters"] = dict(custom_parameters)
    if generic:
        args["generic"] = True
    return args


# ======================================================================================================================
# The app in a browser context
# ======================================================================================================================

@dataclass
class PopupFlow:
    """A popup flow under way: ``popup`` is the handler window (a Playwright Page) to drive."""
    app: "SdkApp"
    op: int
    popup: Any

    def wait(self, timeout_ms: int = FLOW_TIMEOUT_MS) -> dict:
        """The outcome once the SDK call settles."""
        return self.app.wait(self.op, timeout_ms)


class SdkApp:
    """One browser context (own cookies and storage, the gapi double installed) with the app page open on it.

    ``emulator_url`` is what the app passes to connectAuthEmulator: the stack's base URL.
    """

    def __init__(self, browser, pages: PagesServer, emulator_url: str, api_key: str, *,
                 tenant_id: str | None = None, app_name: str | None = None, app_id: str | None = JS_GMPID,
                 auth_domain: str | None = None, language: str | None = None, widget_paths: str | None = None,
                 gapi_options: dict | None = None, artifacts: Path = ARTIFACTS, locale: str = "en-US"):
        self.emulator_url = emulator_url.rstrip("/")
        self.emulator_origin = origin_of(self.emulator_url)
        self.api_key = api_key
        self.tenant_id = tenant_id
        self.app_name = app_name or "[DEFAULT]"
        self.artifacts = artifacts
        self.url = pages.app_url(self.emulator_url, api_key, app_name=app_name, tenant_id=tenant_id,
                                 app_id=app_id, auth_domain=auth_domain, language=language,
                                 widget_paths=widget_paths)
        self.app_path_prefix = self.url.split("?", 1)[0]
        hosted = widget_paths == "hosted"
        self.handler_base = self.emulator_url + ("/__/auth/handler" if hosted else "/emulator/auth/handler")
        self.iframe_base = self.emulator_url + ("/__/auth/iframe" if hosted else "/emulator/auth/iframe")
        self.context = browser.new_context(locale=locale)
        self.context.set_default_timeout(BROWSER_TIMEOUT_MS)
        install_gapi_double(self.context, gapi_options)
        self.requests: list[str] = []        # every request URL of the context (app, popups, iframes)
        self.console: list[str] = []         # console messages of every page (frames included)
        self.popups: list[Any] = []          # every popup Page the app opened
        self.handler_navigations: list[str] = []  # main-frame navigation requests to the handler
        self.app_loads = 0                   # main-frame loads of the app page
        self.context.on("request", self._on_request)
        self.context.on("page", self._on_page)
        self.page = self.context.new_page()
        self.page.on("framenavigated", self._on_navigated)
        self.page.on("popup", lambda popup: self.popups.append(popup))

    # -- event plumbing -------------------------------------------------------------------------------------------

    def _on_request(self, request) -> None:
        self.requests.append(request.url)
        try:
            page = getattr(self, "page", None)
            if page is not None and request.is_navigation_request() and request.frame == page.main_frame \
                    and request.url.startswith(self.handler_base):
                self.handler_navigations.append(request.url)
        except Exception:  # the frame may be gone already
            pass

    def _on_page(self, page) -> None:
        def record(message, page=page) -> None:
            label = "app" if page is getattr(self, "page", None) else "popup"
            self.console.append(f"{label} {message.type}: {message.text}")
        page.on("console", record)

    def _on_navigated(self, frame) -> None:
        if frame == self.page.main_frame and frame.url.startswith(self.app_path_prefix):
            self.app_loads += 1

    # -- page ------------------------------------------------------------------------------------------------------

    def open(self) -> dict:
        """Loads the app page and waits until auth initialization finished; returns :meth:`state`."""
        response = self.page.goto(self.url)
        assert response is not None and response.ok, f"app page {self.url}: {response and response.status}"
        return self.wait_ready()

    def reload(self) -> dict:
        self.page.reload()
        return self.wait_ready()

    def wait_ready(self, timeout_ms: int = FLOW_TIMEOUT_MS) -> dict:
        """Waits for window.__sdk.ready (auth init done, a pending redirect completed) and for the app's own
        getRedirectResult() to settle."""
        try:
            self.page.wait_for_function(
                "() => window.__sdk && (window.__sdk.configError || (window.__sdk.ready && window.__sdk.redirect"
                " && window.__sdk.redirect.state !== 'pending'))", timeout=timeout_ms)
        except Exception as exc:
            raise AssertionError(f"the app did not finish initializing ({exc}); state: {self._safe_state()}") \
                from None
        state = self.state()
        assert not state.get("configError"), state["configError"]
        return state

    def state(self) -> dict:
        """window.__sdk.snapshot(): config, currentUser, lastResult, lastError, redirect, ops, requests,
        idpRequests, events, popups, handlerUrls, iframe, storage, journal."""
        return self.page.evaluate("() => window.__sdk.snapshot()")

    def _safe_state(self) -> str:
        try:
            return json.dumps(self.state())[:4000]
        except Exception as exc:  # navigating, crashed...
            return f"<unavailable: {exc}>"

    def current_user(self) -> dict | None:
        return self.page.evaluate("() => window.__sdk.currentUser")

    def idp_requests(self) -> list[dict]:
        """Every signInWithIdp request body the app sent on this page load, in order."""
        return self.page.evaluate("() => window.__sdk.idpRequests")

    def rest_requests(self, endpoint: str | None = None) -> list[dict]:
        """Every REST call of this page load ({endpoint, url, method, headers, body, status, response, error}),
        optionally only those to ``endpoint`` (e.g. '/v1/accounts:lookup')."""
        entries = self.page.evaluate("() => window.__sdk.requests")
        return [e for e in entries if endpoint is None or e["endpoint"] == endpoint]

    def events(self) -> list[dict]:
        """Every message the SDK's 'authEvent' handler got from the iframe: {message, authEvent, status|error}."""
        return self.page.evaluate("() => window.__sdk.events")

    def storage(self) -> dict:
        """{'local': {...}, 'session': {...}}: the app origin's firebase:* keys, parsed."""
        return self.page.evaluate("() => window.__sdk.storage()")

    def gapi_log(self, frame=None) -> list[dict]:
        """The gapi double's log in the app page, or in ``frame`` (e.g. :meth:`iframe_frame`)."""
        target = frame or self.page
        return target.evaluate("() => (window.gapi && window.gapi.__fake) ? window.gapi.__fake.log : null")

    def iframe_frame(self):
        """The Playwright Frame of the relay iframe the SDK opened, or None."""
        for frame in self.page.frames:
            if frame.url.startswith(self.iframe_base):
                return frame
        return None

    def iframe_requested(self) -> bool:
        return any(url.startswith(self.iframe_base) for url in self.requests)

    def foreign_requests(self) -> list[str]:
        """Request URLs that left the machine's loopback (the gapi route is answered in the browser and does not
        count)."""
        out = []
        for url in self.requests:
            host = (urlparse(url).hostname or "").lower()
            if url.startswith(("data:", "about:", "blob:")) or GAPI_ROUTE.match(url):
                continue
            if host not in LOOPBACK_HOSTS and host != "::1" and host != "[::1]":
                out.append(url)
        return out

    def screenshot(self, name: str, page=None, full_page: bool = True) -> Path:
        self.artifacts.mkdir(parents=True, exist_ok=True)
        path = self.artifacts / f"{name}.png"
        (page or self.page).screenshot(path=str(path), full_page=full_page)
        return path

    def close(self) -> None:
        try:
            self.context.close()
        except Exception:
            pass

    # -- calls -------------------------------------------------------------------------------------------------------

    def start(self, method: str, args: dict | None = None) -> int:
        """Starts window.__sdk method ``method`` without waiting; returns its op id."""
        return self.page.evaluate("([m, a]) => window.__sdk.start(m, a)", [method, args or {}])

    def op(self, op_id: int) -> dict:
        return self.page.evaluate("id => window.__sdk.op(id)", op_id)

    def wait(self, op_id: int, timeout_ms: int = FLOW_TIMEOUT_MS) -> dict:
        """The outcome of op ``op_id`` once it settles."""
        try:
            self.page.wait_for_function("id => window.__sdk.op(id).state !== 'pending'", arg=op_id,
                                        timeout=timeout_ms)
        except Exception as exc:
            raise AssertionError(f"op {op_id} did not settle within {timeout_ms} ms ({exc}); "
                                 f"state: {self._safe_state()}") from None
        return self.op(op_id)

    def call(self, method: str, args: dict | None = None, timeout_ms: int = FLOW_TIMEOUT_MS) -> dict:
        """Runs a method that needs no interaction (signInAnonymously, signOut, getRedirectResult, ...)."""
        return self.wait(self.start(method, args), timeout_ms)

    def _op_if_settled(self, op_id: int) -> dict | None:
        try:
            record = self.op(op_id)
        except Exception:  # navigating away: the op cannot be read now
            return None
        return record if record and record["state"] != "pending" else None

    # -- popup flows ---------------------------------------------------------------------------------------------

    def start_popup(self, method: str, provider_id: str, scopes: list[str] | None = None,
                    custom_parameters: dict | None = None, generic: bool = False,
                    timeout_ms: int = FLOW_TIMEOUT_MS) -> PopupFlow:
        """Starts signInWithPopup / linkWithPopup / reauthenticateWithPopup and returns once the SDK opened its
        popup (after the iframe is up: the SDK opens the iframe first). Raises SdkFlowError if the call settles
        before any popup opens (e.g. auth/network-request-failed when the iframe never answers the ping)."""
        assert method in POPUP_METHODS, method
        before = len(self.popups)
        op_id = self.start(method, provider_args(provider_id, scopes, custom_parameters, generic))
        deadline = time.monotonic() + timeout_ms / 1000
        while time.monotonic() < deadline:
            if len(self.popups) > before:
                popup = self.popups[before]
                popup.set_default_timeout(BROWSER_TIMEOUT_MS)
                return PopupFlow(self, op_id, popup)
            settled = self._op_if_settled(op_id)
            if settled is not None:
                raise SdkFlowError(f"{method} settled before opening a popup", settled)
            self.page.wait_for_timeout(50)
        raise SdkFlowError(f"{method} opened no popup within {timeout_ms} ms", self._op_if_settled(op_id))

    def popup_flow(self, method: str, provider_id: str, drive: Callable[[Any], None] | None = None, *,
                   scopes: list[str] | None = None, custom_parameters: dict | None = None, generic: bool = False,
                   timeout_ms: int = FLOW_TIMEOUT_MS) -> dict:
        """Starts the popup flow, hands the popup Page to ``drive`` (the test's IdP interaction), and returns the
        outcome."""
        flow = self.start_popup(method, provider_id, scopes, custom_parameters, generic, timeout_ms)
        if drive is not None:
            drive(flow.popup)
        return flow.wait(timeout_ms)

    # -- redirect flows ------------------------------------------------------------------------------------------

    def start_redirect(self, method: str, provider_id: str, scopes: list[str] | None = None,
                       custom_parameters: dict | None = None, generic: bool = False,
                       timeout_ms: int = FLOW_TIMEOUT_MS) -> str:
        """Starts signInWithRedirect / linkWithRedirect / reauthenticateWithRedirect and returns the handler URL
        the page navigated to (the tab then shows the handler, or wherever it redirects). Raises SdkFlowError if
        the call settles first (e.g. auth/provider-already-linked from linkWithRedirect)."""
        assert method in REDIRECT_METHODS, method
        before = len(self.handler_navigations)
        self._loads_before_redirect = self.app_loads
        op_id = self.start(method, provider_args(provider_id, scopes, custom_parameters, generic))
        deadline = time.monotonic() + timeout_ms / 1000
        while time.monotonic() < deadline:
            if len(self.handler_navigations) > before:
                return self.handler_navigations[before]
            settled = self._op_if_settled(op_id)
            if settled is not None:
                raise SdkFlowError(f"{method} settled instead of navigating to the handler", settled)
            self.page.wait_for_timeout(50)
        raise SdkFlowError(f"{method} did not navigate to {self.handler_base} within {timeout_ms} ms", None)

    def wait_redirect_return(self, timeout_ms: int = FLOW_TIMEOUT_MS) -> dict:
        """Waits until the tab is back on the app page (a new load), auth init completed the redirect and the
        app's getRedirectResult() settled; returns that outcome (result, null or error)."""
        loads = getattr(self, "_loads_before_redirect", self.app_loads)
        deadline = time.monotonic() + timeout_ms / 1000
        while self.app_loads <= loads:
            if time.monotonic() > deadline:
                raise AssertionError(f"the tab did not come back to {self.app_path_prefix} within {timeout_ms} ms "
                                     f"(now at {self.page.url})")
            self.page.wait_for_timeout(50)
        self.page.wait_for_load_state("domcontentloaded")
        self.wait_ready(max(1, int((deadline - time.monotonic()) * 1000)))
        return self.page.evaluate("() => window.__sdk.op(window.__sdk.redirect.id)")

    def redirect_flow(self, method: str, provider_id: str, drive: Callable[[Any], None] | None = None, *,
                      scopes: list[str] | None = None, custom_parameters: dict | None = None,
                      generic: bool = False, timeout_ms: int = FLOW_TIMEOUT_MS) -> dict:
        """Starts the redirect flow, lets ``drive`` act on ``self.page`` (now at the handler/IdP), waits for the
        return to the app and returns getRedirectResult()'s outcome."""
        self.start_redirect(method, provider_id, scopes, custom_parameters, generic, timeout_ms)
        if drive is not None:
            drive(self.page)
        return self.wait_redirect_return(timeout_ms)


# ======================================================================================================================
# Fixtures (import them into the test module: from sdk_browser import sdk_pages, sdk_app, oauth_artifacts)
# ======================================================================================================================

@pytest.fixture(scope="session")
def sdk_pages():
    """The static server of browser/ (app.html, sdk_flows.js, gapi_double.js)."""
    server = PagesServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def oauth_artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


@pytest.fixture
def sdk_app(browser, stack, sdk_pages, oauth_artifacts):
    """sdk_app(tenant_id=None, *, open=True, **SdkApp options) -> an SdkApp on the stack (its URL and API key),
    opened unless open=False; every one is closed after the test."""
    made: list[SdkApp] = []

    def factory(tenant_id: str | None = None, *, open: bool = True, **kwargs: Any) -> SdkApp:  # noqa: A002
        kwargs.setdefault("artifacts", oauth_artifacts)
        app = SdkApp(browser, sdk_pages, stack.url, kwargs.pop("api_key", stack.api_key), tenant_id=tenant_id,
                     **kwargs)
        made.append(app)
        if open:
            app.open()
        return app

    yield factory
    for app in made:
        app.close()
