"""Sign-in with a provider's own pages in a real browser (issue 34): Debian's Chromium, an app that behaves as
one built on the Firebase JS SDK 12.18 in emulator mode (Tests/stack/browser/, reproduced from the SDK's
sources: docs/oauth-flows.md), Tessera's hosted handler and relay iframe, and the fake identity provider's
authorization pages (Tests/stack/fake_idp.py).

Offline, the browser cannot load Google's gapi script (https://apis.google.com/js/api.js): every page, popup
and iframe of a context gets the test double Tests/stack/browser/gapi_double.js instead, whose header
documents the surface it implements; production browsers load the real one.

What a user of signInWithPopup / signInWithRedirect sees: the popup opens the handler, goes to the provider
and back, the relay iframe hands the event to the app, which signs in, links or re-authenticates; after a
redirect, getRedirectResult answers on the reloaded page. Screenshots go to test-artifacts/oauth-flows/."""

from __future__ import annotations

import json
import uuid

import pytest

from conftest import expect_ok
from fake_idp import configure_provider
from sdk_browser import expect_error, expect_result, oauth_artifacts, sdk_app, sdk_pages  # noqa: F401

PASSWORD = "browser password 1"


@pytest.fixture
def idp(fake_idp):
    """The session's fake identity provider (conftest), on IDP_FAKE_URL."""
    return fake_idp


def configure_apple(stack, admin, idp, tenant_id: str) -> None:
    """apple.com in the tenant, with a code-flow key of the fake's (its client secret is signed with it)."""
    key = idp.apple_key()
    configure_provider(admin, idp, "apple.com", tenant_id=tenant_id)
    expect_ok(admin.request(
        "PATCH", f"/v2/projects/{stack.project_id}/tenants/{tenant_id}/defaultSupportedIdpConfigs/apple.com",
        json={"appleSignInConfig": {"codeFlowConfig": {
            "teamId": key.team_id, "keyId": key.key_id, "privateKey": key.private_key_pem}}}))


def account(idp, provider: str, **claims) -> str:
    """A new account at the fake provider; returns its login_hint (the app passes it as a custom parameter)."""
    hint = f"{provider.split('.')[0]}-{uuid.uuid4().hex[:10]}"
    idp.add_account(provider, hint, sub=claims.pop("sub", "sub-" + hint), **claims)
    return hint


def test_signin_with_popup_through_google_then_link_and_reauthenticate(
        stack, admin, make_tenant, idp, sdk_app, oauth_artifacts):
    tenant_id = make_tenant(allowPasswordSignup=True)["tenantId"]
    configure_provider(admin, idp, "google.com", tenant_id=tenant_id)
    configure_provider(admin, idp, "github.com", tenant_id=tenant_id)
    hint = account(idp, "google.com", email=f"{uuid.uuid4().hex[:8]}@gmail.com", name="Popup User")
    app = sdk_app(tenant_id)

    flow = app.start_popup("signInWithPopup", "google.com", custom_parameters={"login_hint": hint})
    # The SDK closes the popup as soon as the event arrives: no screenshot of it can be relied on here.
    result = expect_result(flow.wait())
    user = result["user"]
    assert user["providerData"][0]["providerId"] == "google.com" and user["displayName"] == "Popup User", user
    assert result["additionalUserInfo"]["isNewUser"] is True
    sent = app.idp_requests()[-1]
    assert sent["requestUri"].startswith(stack.url + "/__/auth/handler?") and sent["sessionId"]
    assert sent["tenantId"] == tenant_id and sent["returnIdpCredential"] is True
    # The event came through the relay iframe (gapi), as the SDK's event manager takes it.
    assert any(e.get("authEvent", {}).get("type") == "signInViaPopup" and e.get("status") == "ACK"
               for e in app.events()), app.events()
    assert not app.foreign_requests(), app.foreign_requests()
    app.screenshot("popup-signed-in")

    # Link GitHub to the signed-in user through a popup: same user, two providers.
    gh_hint = account(idp, "github.com", email="linked@example.com", name="Popup User")
    linked = expect_result(app.popup_flow("linkWithPopup", "github.com", custom_parameters={"login_hint": gh_hint}))
    assert linked["user"]["uid"] == user["uid"]
    assert {p["providerId"] for p in linked["user"]["providerData"]} == {"google.com", "github.com"}
    assert app.idp_requests()[-1].get("idToken"), "link sends the user's ID token"

    # Re-authenticate with Google: the same user; with another Google account: user-mismatch.
    again = expect_result(app.popup_flow(
        "reauthenticateWithPopup", "google.com", custom_parameters={"login_hint": hint}))
    assert again["user"]["uid"] == user["uid"]
    other = account(idp, "google.com", email=f"{uuid.uuid4().hex[:8]}@gmail.com")
    expect_error(app.popup_flow("reauthenticateWithPopup", "google.com", custom_parameters={"login_hint": other}),
                 "auth/user-mismatch")


def test_signin_with_redirect_answers_get_redirect_result_after_the_reload(
        stack, admin, make_tenant, idp, sdk_app):
    tenant_id = make_tenant()["tenantId"]
    configure_provider(admin, idp, "microsoft.com", tenant_id=tenant_id)
    hint = account(idp, "microsoft.com", email=f"{uuid.uuid4().hex[:8]}@outlook.com", name="Redirected")
    app = sdk_app(tenant_id)
    outcome = app.redirect_flow("signInWithRedirect", "microsoft.com", custom_parameters={"login_hint": hint})
    result = expect_result(outcome)
    assert result["user"]["providerData"][0]["providerId"] == "microsoft.com"
    assert result["operationType"] == "signIn"
    assert app.current_user()["uid"] == result["user"]["uid"]
    app.screenshot("redirect-signed-in")
    # A second load has nothing pending: getRedirectResult is null, and the user stays signed in.
    state = app.reload()
    assert state["redirect"]["state"] == "fulfilled" and state["redirect"]["result"] is None, state["redirect"]
    assert app.current_user()["uid"] == result["user"]["uid"]


def test_apple_signs_in_through_a_popup_with_its_form_post_answer(stack, admin, make_tenant, idp, sdk_app):
    tenant_id = make_tenant()["tenantId"]
    configure_apple(stack, admin, idp, tenant_id)
    hint = account(idp, "apple.com", email=f"{uuid.uuid4().hex[:8]}@privaterelay.appleid.com",
                   user_json={"name": {"firstName": "Ada", "lastName": "Lovelace"}})
    app = sdk_app(tenant_id)
    result = expect_result(app.popup_flow("signInWithPopup", "apple.com", custom_parameters={"login_hint": hint}))
    assert result["user"]["displayName"] == "Ada Lovelace", result["user"]
    sent = app.idp_requests()[-1]
    # Apple answers with a form POST: the SDK sends it on as postBody, the handler's URL as requestUri.
    assert sent["requestUri"] == stack.url + "/__/auth/handler" and "code=" in sent["postBody"]


def test_a_redirect_whose_provider_is_disabled_comes_back_with_the_error(stack, admin, make_tenant, idp, sdk_app):
    tenant_id = make_tenant()["tenantId"]
    configure_provider(admin, idp, "yahoo.com", tenant_id=tenant_id, enabled=False)
    app = sdk_app(tenant_id)
    before = len(idp.authorize_requests("yahoo"))
    outcome = app.redirect_flow("signInWithRedirect", "yahoo.com")
    expect_error(outcome, "auth/operation-not-allowed")
    assert len(idp.authorize_requests("yahoo")) == before, "nothing went to the provider"


def test_the_popup_closed_before_the_provider_answered_is_reported_to_the_app(
        stack, admin, make_tenant, idp, sdk_app):
    tenant_id = make_tenant()["tenantId"]
    configure_provider(admin, idp, "google.com", tenant_id=tenant_id)
    app = sdk_app(tenant_id)
    # The SDK notices the closed popup on its next poll (every 2 s) and then waits 8 s for a late auth event
    # before it reports the cancellation (sdk_flows.js, pollUserCancellation): the page's clock is moved on
    # through both waits instead of the test sleeping them. The clock runs normally until then.
    app.page.clock.install()
    # No account for this hint: the fake provider stops on its refusal page; the user closes the popup.
    flow = app.start_popup("signInWithPopup", "google.com", custom_parameters={"login_hint": "nobody-here"})
    flow.popup.wait_for_load_state()
    flow.popup.close()
    app.page.clock.fast_forward(2_100)
    app.page.clock.fast_forward(8_100)
    expect_error(flow.wait(), "auth/popup-closed-by-user")
    assert app.current_user() is None


def test_the_hosted_paths_and_a_provider_denial_reach_the_app_as_errors(stack, admin, make_tenant, idp, sdk_app):
    tenant_id = make_tenant()["tenantId"]
    configure_provider(admin, idp, "facebook.com", tenant_id=tenant_id)
    hint = account(idp, "facebook.com", deny=True)
    app = sdk_app(tenant_id, widget_paths="hosted")
    outcome = app.popup_flow("signInWithPopup", "facebook.com", custom_parameters={"login_hint": hint})
    expect_error(outcome, "auth/user-cancelled")
    assert app.iframe_requested() and app.iframe_frame().url.startswith(stack.url + "/__/auth/iframe?")


def _follow_to_app_link(browser, url: str, artifacts, name: str) -> str:
    """Opens a mobile SDK's handler URL in Chromium (as the in-app browser would), follows the provider's pages
    back to Tessera's handler, and returns the app URL it hands the SDK (the link the page offers; its script
    navigates to the same URL, which a desktop browser cannot open)."""
    context = browser.new_context(locale="en-US")
    try:
        page = context.new_page()
        # The page goes on to the app's URL by itself, which keeps a desktop browser from calling it loaded.
        page.goto(url, wait_until="commit")
        page.wait_for_url("**/__/auth/handler**", timeout=30_000, wait_until="commit")
        page.wait_for_selector("#return-to-app", state="attached")
        page.screenshot(path=str(artifacts / f"{name}.png"), full_page=True)
        data = json.loads(page.text_content("#tessera-auth-event"))
        href = page.get_attribute("#return-to-app", "href")
        assert data["mode"] == "app" and data["url"] == href, data
        return href
    finally:
        context.close()


def test_the_apple_sdk_s_handler_url_comes_back_to_the_app_scheme_and_redeems_with_verify_assertion(
        stack, admin, make_tenant, idp, browser, oauth_artifacts):
    import hashlib
    from urllib.parse import unquote, urlencode

    import requests

    tenant_id = make_tenant()["tenantId"]
    configure_apple(stack, admin, idp, tenant_id)
    hint = account(idp, "apple.com", email=f"{uuid.uuid4().hex[:8]}@example.com")
    session_id, event_id = "QWERTYUIOP", "ASDFGHJKLZ"  # the Apple SDK's: ten capital letters each
    query = {"apiKey": stack.api_key, "authType": "signInWithRedirect", "ibi": "com.example.tessera.ios",
             "sessionId": hashlib.sha256(session_id.encode()).hexdigest(), "v": "FirebaseAuth.iOS/12.19.0",
             "eventId": event_id, "providerId": "apple.com", "clientId": "123456789012-abcdefghij.apps.googleusercontent.com",
             "tid": tenant_id, "customParameters": json.dumps({"login_hint": hint})}
    url = stack.url + "/emulator/auth/handler?" + urlencode(query).replace("+", "%20")
    app_url = _follow_to_app_link(browser, url, oauth_artifacts, "ios-return-to-app")

    # As AuthWebUtils parses it: the scheme is the reversed client id, the deep link carries authType,
    # eventId and the link (OAuthProvider.swift, AuthWebUtils.swift; docs/oauth-flows.md).
    prefix = "com.googleusercontent.apps.123456789012-abcdefghij://firebaseauth/link?deep_link_id="
    assert app_url.startswith(prefix), app_url
    deep = unquote(app_url[len(prefix):].replace("+", " "))
    fields = dict(pair.split("=", 1) for pair in deep.split("?", 1)[1].split("&"))
    fields = {k: unquote(v.replace("+", " ")) for k, v in fields.items()}
    assert fields["authType"] == "signInWithRedirect" and fields["eventId"] == event_id
    link = fields["link"]
    body = {"requestUri": link, "postBody": "providerId=apple.com", "sessionId": session_id,
            "returnSecureToken": True, "returnIdpCredential": True, "autoCreate": True, "tenantId": tenant_id}
    resp = requests.post(f"{stack.url}/www.googleapis.com/identitytoolkit/v3/relyingparty/verifyAssertion",
                         params={"key": stack.api_key}, json=body, timeout=10)
    signed_in = expect_ok(resp)
    assert signed_in["providerId"] == "apple.com" and signed_in["idToken"] and signed_in["isNewUser"] is True


def test_the_android_sdk_s_handler_url_comes_back_as_an_intent_and_redeems_with_signin_with_idp(
        stack, admin, make_tenant, idp, browser, oauth_artifacts):
    from urllib.parse import unquote, urlencode

    import requests

    tenant_id = make_tenant()["tenantId"]
    configure_provider(admin, idp, "google.com", tenant_id=tenant_id)
    hint = account(idp, "google.com", email=f"{uuid.uuid4().hex[:8]}@gmail.com")
    session_id, event_id = str(uuid.uuid4()), str(uuid.uuid4())
    query = {"eid": "p", "v": "X23.1.0", "authType": "signInWithRedirect", "apiKey": stack.api_key,
             "providerId": "google.com", "sessionId": session_id, "eventId": event_id,
             "apn": "com.example.tessera.android", "sha1Cert": "ab" * 20, "publicKey": "k",
             "customParameters": json.dumps({"login_hint": hint}), "tid": tenant_id}
    app_url = _follow_to_app_link(
        browser, stack.url + "/emulator/auth/handler?" + urlencode(query), oauth_artifacts, "android-return-to-app")
    assert app_url.startswith(
        "intent://firebase.auth/#Intent;scheme=genericidp;package=com.example.tessera.android;"), app_url
    extras = dict(part.split("=", 1) for part in app_url.split("#Intent;", 1)[1].split(";") if "=" in part)
    assert extras["S.eventId"] == event_id and extras["B.encryptionEnabled"] == "false"
    link = unquote(extras["S.link"])
    body = {"requestUri": link, "sessionId": session_id, "returnSecureToken": True, "returnIdpCredential": True,
            "tenantId": tenant_id}
    resp = requests.post(f"{stack.url}/identitytoolkit.googleapis.com/v1/accounts:signInWithIdp",
                         params={"key": stack.api_key}, json=body, timeout=10)
    assert expect_ok(resp)["providerId"] == "google.com"


@pytest.mark.parametrize("language,words,direction", [
    ("en", "This sign-in has expired", "ltr"), ("it", "Questo accesso è scaduto", "ltr"),
    ("ru", "Срок этого входа истёк", "ltr"), ("th", "การลงชื่อเข้าใช้นี้หมดอายุ", "ltr"),
    ("fa", "مهلت این ورود تمام شده", "rtl"),
])
def test_the_handler_speaks_the_browser_s_language(stack, browser, oauth_artifacts, language, words, direction):
    """A provider's answer for a sign-in Tessera does not know (expired, used, forged): the page says so in the
    browser's language, right to left in Persian, with the handler's headers."""
    context = browser.new_context(locale=language)
    try:
        page = context.new_page()
        response = page.goto(stack.url + "/__/auth/handler?code=x&state=" + "A" * 43)
        assert response.status == 400
        assert page.get_attribute("html", "dir") == direction and page.get_attribute("html", "lang") == language
        assert words in page.inner_text("#result") and page.get_attribute("#result", "data-outcome") == "error"
        headers = response.headers
        assert "script-src 'self'" in headers["content-security-policy"]
        assert headers["referrer-policy"] == "no-referrer" and "cross-origin-opener-policy" not in headers
        page.screenshot(path=str(oauth_artifacts / f"handler-expired-{language}.png"), full_page=True)
    finally:
        context.close()
