"""Server-side authorization flows with identity providers (issue 34) through the whole stack, against the
fake identity provider (fake_idp.py), at the HTTP level: no browser runs here, each step is the request the
SDK or the browser makes, in the shape read from the SDKs' sources (docs/oauth-flows.md, section 4, cites
them).

1. Every provider signs in through the hosted handler for every SDK platform and through createAuthUri:
   the JS SDK's popup and redirect (the JSON event block the handler page carries, redeemed with the SDK's
   signInWithIdp body), the Apple SDK (the deep link, decoded as AuthWebUtils does, then v3
   verifyAssertion), the Android SDK (the GenericIdpActivity intent, then verifyAssertion or v1
   signInWithIdp), and an app of its own (createAuthUri, the answer on its continueUri).
2. Linking, re-authentication and the trust rules (docs/design-notes.md) give through the popup what they give on the
   credential path (test_federated.py).
3. Every refusal, each leaving no user behind: unknown, replayed, other-scope, other-API-key, expired
   states; wrong or missing session ids; a requestUri that is not the flow's; unauthorized redirectUrl,
   continueUri and apps; a wrong API key; disabled, unconfigured and failing providers; a user who says no.
4. What reaches the provider: the one redirect_uri, PKCE S256, a nonce the ID token carries, Apple's
   form_post and ES256 client secret, the client secret, custom parameters (the flow's own never
   overridden).
5. The relay iframe and the handler pages: CSP, Referrer-Policy, a JSON block that no value can break out of.
6. Authorized domains as project configuration (shared project state: always put back).

Every test makes its own tenant(s); the fake IdP records what Tessera sent it.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import random
import re
import secrets
import string
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlsplit

import jwt
import pytest
import requests

from conftest import (HTTP_TIMEOUT, IT_PREFIX, describe, expect_error, expect_ok, expect_status_error, psql,
                      unverified_claims)
from fake_idp import (BUILT_IN_PROVIDER_IDS, VERIFY_ASSERTION_KIND, FakeAccount, complete_authorization,
                      configure_provider, create_provider_config_raw, idp_config_path, pkce_challenge)

# --------------------------------------------------------------------------------------
# Constants: what the SDKs send
# --------------------------------------------------------------------------------------

EMULATOR_HANDLER = "/emulator/auth/handler"  # where the SDKs' emulator setting points
HANDLER = "/__/auth/handler"  # the production path, and the provider's one redirect_uri
V3_RELYINGPARTY = "/www.googleapis.com/identitytoolkit/v3/relyingparty"  # the Apple/Android SDKs' API
APP_NAME = "[DEFAULT]"
JS_SDK_VERSION = "12.18.0"
APP_PAGE = "http://localhost:5173/login?next=%2Fhome"  # the JS app's page (redirectUrl)
CONTINUE_URI = "http://localhost:3000/finish"  # an app's own flow (createAuthUri)
IOS_BUNDLE = "com.example.tessera.ios"  # the Apple SDK's ibi (not what TESSERA_AUTHORIZED_APPS is matched with)
ANDROID_PACKAGE = "com.example.tessera.android"  # in the stack's TESSERA_AUTHORIZED_APPS
# The Apple SDK's callback scheme is made from its client id (reversed) or its Google app id; the handler
# takes an iOS app when its scheme (or that id) is in TESSERA_AUTHORIZED_APPS. These defaults are used when
# the stack's list names no client id or app id of its own (see ios_client_id, ios_app_id).
IOS_CLIENT_ID = "123456789012-abcdefghij.apps.googleusercontent.com"
IOS_APP_ID = "1:123456789012:ios:0123456789abcdef"
UNLISTED_CLIENT_ID = "666000666000-evilevilevil.apps.googleusercontent.com"
IOS_SDK_VERSION = "FirebaseAuth.iOS/11.4.0 com.example.tessera.ios/1.0 iPhone/17.5 hw/sim"
ANDROID_SDK_VERSION = "X23.1.0"
ANDROID_SHA1 = "3b1f" * 10  # the signing certificate's SHA-1, 40 hex digits
EVENT_BLOCK = re.compile(r'<script id="tessera-auth-event" type="application/json">(.*?)</script>', re.S)
DEFAULT_DOMAINS = ["localhost", "127.0.0.1"]

# The flows by provider: "oidc-code" and "oidc-idtoken" are a tenant's OIDC provider (oidc.<name>) with
# responseType {code: true} and {idToken: true}.
ALL_PROVIDERS = ["google.com", "apple.com", "microsoft.com", "yahoo.com", "facebook.com", "github.com",
                 "twitter.com", "oidc-code", "oidc-idtoken"]
# Every provider on every platform (the issue's acceptance: popup, redirect and the mobile handler).
PLATFORM_PROVIDERS = ALL_PROVIDERS
OIDC_CODE = {"google.com", "microsoft.com", "yahoo.com", "oidc-code"}  # code + PKCE + nonce
PKCE = OIDC_CODE | {"facebook.com", "github.com"}
NONCE = OIDC_CODE | {"apple.com", "oidc-idtoken"}
FORM_POST = {"apple.com", "oidc-idtoken"}


# --------------------------------------------------------------------------------------
# Helpers: the test's world (stack, admin, client, fake IdP), tenants and provider accounts
# --------------------------------------------------------------------------------------

@dataclass
class World:
    """Everything a flow test talks to."""
    stack: Any
    admin: Any
    client: Any
    idp: Any
    make_tenant: Any
    verifier: Any

    @property
    def handler_url(self) -> str:
        """The provider's redirect_uri: the stack's public URL + /__/auth/handler."""
        return self.stack.url + HANDLER


@pytest.fixture
def world(stack, admin, client, fake_idp, make_tenant, verifier):
    yield World(stack, admin, client, fake_idp, make_tenant, verifier)
    fake_idp.clear_token_failures()  # an injected failure a test did not use must not leak into the next


@dataclass
class Tenant:
    """A fresh tenant and the provider id configured for each flow kind (``tenant["oidc-code"]`` is the
    ``oidc.<name>`` configured with the code flow; a built-in's kind is its id)."""
    id: str
    providers: dict[str, str] = field(default_factory=dict)

    def __getitem__(self, kind: str) -> str:
        return self.providers[kind]


def configure(world: World, tenant_id: str, kind: str, *, enabled: bool = True) -> str:
    """Configures provider ``kind`` in the tenant for the authorization flows; returns its provider id.

    apple.com gets ``appleSignInConfig.codeFlowConfig`` with a key the fake knows (its client secret is an
    ES256 JWT); ``oidc-code`` an ``oidc.<name>`` with responseType {code: true} and a client secret (sent by
    Basic: the fake's discovery lists client_secret_basic); ``oidc-idtoken`` one with responseType
    {idToken: true} and no secret; the others the fake's default client id and secret."""
    idp = world.idp
    if kind == "apple.com":
        key = idp.apple_key()
        body = {"enabled": enabled, "clientId": idp.client_id("apple"),
                "appleSignInConfig": {"codeFlowConfig": {"teamId": key.team_id, "keyId": key.key_id,
                                                         "privateKey": key.private_key_pem}}}
        expect_ok(create_provider_config_raw(world.admin, "apple.com", body, tenant_id))
        return "apple.com"
    if kind in ("oidc-code", "oidc-idtoken"):
        provider_id = f"oidc.{kind.split('-')[1]}{uuid.uuid4().hex[:8]}"
        body = {"enabled": enabled, "clientId": idp.client_id(provider_id), "issuer": idp.oidc_issuer(provider_id),
                "displayName": "Acme Login"}
        if kind == "oidc-code":
            body.update(clientSecret=idp.client_secret(provider_id), responseType={"code": True})
        else:
            body.update(responseType={"idToken": True})
        data = expect_ok(create_provider_config_raw(world.admin, provider_id, body, tenant_id))
        assert data.get("responseType", {}).get("code" if kind == "oidc-code" else "idToken") is True, data
        return provider_id
    assert kind in BUILT_IN_PROVIDER_IDS, kind
    configure_provider(world.admin, idp, kind, tenant_id=tenant_id, enabled=enabled)
    return kind


def provider_tenant(world: World, *kinds: str, **overrides) -> Tenant:
    """A fresh tenant with the providers of ``kinds`` configured and enabled."""
    tenant = Tenant(world.make_tenant(**overrides)["tenantId"])
    for kind in kinds:
        tenant.providers[kind] = configure(world, tenant.id, kind)
    return tenant


def new_account(world: World, provider_id: str, *, email: Any = None, domain: str = "example.com",
                name: str | None = "Flo Wright", **kwargs) -> FakeAccount:
    """Registers an account that signs in at the fake's authorization endpoint for ``login_hint`` (its
    ``login_hint`` attribute). The ids look like the provider's (digits for facebook, github, twitter).
    apple.com gets no name in its token (Apple's never has one) but sends ``user`` by form_post."""
    hint = f"u{uuid.uuid4().hex[:12]}"
    digits = provider_id in ("facebook.com", "github.com", "twitter.com")
    sub = str(random.randrange(10 ** 12, 10 ** 13)) if digits else f"sub-{uuid.uuid4().hex[:16]}"
    if email is None:
        email = f"flow-{uuid.uuid4().hex[:10]}@{domain}"
    if provider_id == "apple.com" and "user_json" not in kwargs:
        first, _, last = (name or "").partition(" ")
        kwargs["user_json"] = {"name": {"firstName": first, "lastName": last}, "email": email}
        name = None
    return world.idp.add_account(provider_id, hint, sub=sub, email=email or None, name=name, **kwargs)


def federated_id(provider_id: str, account: FakeAccount) -> str:
    """What signInWithIdp answers as ``federatedId``: Google's is a URL, the others the raw id."""
    return f"https://accounts.google.com/{account.sub}" if provider_id == "google.com" else account.sub


def display_name(account: FakeAccount) -> str | None:
    if account.name:
        return account.name
    if account.user_json:
        name = account.user_json["name"]
        return f"{name['firstName']} {name['lastName']}".strip() or None
    return None


def tenant_user_ids(world: World, tenant_id: str | None) -> list[str]:
    """Every user of the tenant (admin batchGet)."""
    scope = f"/v1/projects/{world.stack.project_id}" + (f"/tenants/{tenant_id}" if tenant_id else "")
    data = expect_ok(world.admin.request("GET", scope + "/accounts:batchGet", params={"maxResults": 1000}))
    return sorted(u["localId"] for u in data.get("users", []))


def user_record(world: World, tenant_id: str, local_id: str) -> dict:
    users = world.admin.lookup_users(tenant_id, [local_id])
    assert len(users) == 1, f"user {local_id} not found in {tenant_id}"
    return users[0]


def links(user: dict) -> list[tuple[str, str | None]]:
    return sorted((p["providerId"], p.get("rawId")) for p in user.get("providerUserInfo") or [])


def flows_in(world: World, tenant_id: str) -> int:
    """How many flows the tenant has in the directory (started, not yet redeemed)."""
    assert re.fullmatch(r"[A-Za-z0-9-]+", tenant_id), tenant_id
    return int(psql(world.stack, f"SELECT count(*) FROM auth_flows WHERE tenant_id = '{tenant_id}'"))


def expire_flow(world: World, tenant_id: str, state: str) -> int:
    """Moves the flow's expiry into the past (no waiting for TESSERA_IDP_FLOW_TTL); returns how many flows
    that touched (the directory keeps a flow under the SHA-256 of its state)."""
    assert re.fullmatch(r"[A-Za-z0-9-]+", tenant_id), tenant_id
    digest = hashlib.sha256(state.encode()).hexdigest()
    return int(psql(world.stack, "WITH moved AS (UPDATE auth_flows SET expires_at = now() - interval '1 second' "
                                 f"WHERE tenant_id = '{tenant_id}' AND state_hash = '{digest}' RETURNING 1) "
                                 "SELECT count(*) FROM moved"))


# --------------------------------------------------------------------------------------
# Helpers: URLs as the SDKs build them
# --------------------------------------------------------------------------------------

def uri_component(value: str) -> str:
    """JavaScript's encodeURIComponent (also what Android's Uri.Builder produces)."""
    return quote(value, safe="-_.!~*'()")


def sdk_query(pairs: list[tuple[str, str | None]]) -> str:
    """A query as the JS and Android SDKs write one: every pair percent-encoded, ``None`` left out."""
    return "&".join(f"{uri_component(k)}={uri_component(v)}" for k, v in pairs if v is not None)


def apple_query(pairs: list[tuple[str, str | None]]) -> str:
    """A query as the Apple SDK writes one (URLComponents.queryItems, then ``+`` → ``%2B``): spaces are
    ``%20``, ``:``, ``/``, ``,`` stay as they are, ``&``, ``=``, ``+`` and JSON's braces and quotes are
    encoded."""
    return "&".join(f"{quote(k, safe='')}={quote(v, safe=':/,@!$()*;?')}" for k, v in pairs if v is not None)


def authorized_apps(stack) -> list[str]:
    """The stack's TESSERA_AUTHORIZED_APPS."""
    return [entry.strip() for entry in stack.env.get("TESSERA_AUTHORIZED_APPS", "").split(",") if entry.strip()]


def ios_client_id(stack) -> str:
    """An iOS client id the stack authorizes: one listed (or the one whose reversed form, the scheme, is
    listed); else IOS_CLIENT_ID."""
    for entry in authorized_apps(stack):
        if entry.endswith(".apps.googleusercontent.com"):
            return entry
        if entry.startswith("com.googleusercontent.apps."):
            return ".".join(reversed(entry.split(".")))
    return IOS_CLIENT_ID


def ios_app_id(stack) -> str:
    """An iOS Google app id the stack authorizes: one listed (or its ``app-…`` scheme); else IOS_APP_ID."""
    for entry in authorized_apps(stack):
        if re.fullmatch(r"\d+:\d+:ios:[0-9a-f]+", entry):
            return entry
        if re.fullmatch(r"app-\d+-\d+-ios-[0-9a-f]+", entry):
            return entry.removeprefix("app-").replace("-", ":")
    return IOS_APP_ID


def event_id_digits() -> str:
    """A JS SDK popup eventId: 10 random decimal digits."""
    return "".join(random.choice(string.digits) for _ in range(10))


def apple_random() -> str:
    """AuthWebUtils.randomString(withLength: 10): 10 uppercase letters (the Apple SDK's eventId, sessionId)."""
    return "".join(random.choice(string.ascii_uppercase) for _ in range(10))


def web_handler_url(world: World, provider_id: str, *, tenant_id: str | None, auth_type: str = "signInViaPopup",
                    event_id: Any = "digits", redirect_url: str = APP_PAGE, custom: dict | None = None,
                    scopes: str | None = None, api_key: str | None = None, app_name: str = APP_NAME,
                    path: str = EMULATOR_HANDLER, base: str | None = None) -> str:
    """The JS SDK's handler URL (core/util/handler.ts: its parameters in its order, encodeURIComponent).
    ``event_id="digits"``: 10 digits for a popup or link/reauth, none for signInViaRedirect."""
    if event_id == "digits":
        event_id = None if auth_type == "signInViaRedirect" else event_id_digits()
    pairs = [("apiKey", api_key or world.stack.api_key), ("appName", app_name), ("authType", auth_type),
             ("redirectUrl", redirect_url), ("v", JS_SDK_VERSION), ("eventId", event_id),
             ("providerId", provider_id), ("customParameters", json.dumps(custom) if custom else None),
             ("scopes", scopes), ("tid", tenant_id)]
    return (base or world.stack.url) + path + "?" + sdk_query(pairs)


def page_data(resp: requests.Response) -> dict:
    """The handler page's JSON block (``#tessera-auth-event``), from a 200 HTML page."""
    assert resp.status_code == 200, describe(resp)
    assert resp.headers.get("Content-Type", "").startswith("text/html"), describe(resp)
    blocks = EVENT_BLOCK.findall(resp.text)
    assert len(blocks) == 1, f"one JSON block expected: {describe(resp)}"
    return json.loads(blocks[0])


def error_page_code(resp: requests.Response, status: int = 400) -> str:
    """The code of the handler's error page (``data-code`` of ``#result``); asserts no redirect, no event."""
    assert resp.status_code == status, describe(resp)
    assert "Location" not in resp.headers, describe(resp)
    assert resp.headers.get("Content-Type", "").startswith("text/html"), describe(resp)
    assert EVENT_BLOCK.search(resp.text) is None, f"an error page carries no event: {describe(resp)}"
    match = re.search(r'<section id="result" data-outcome="error" data-code="([A-Z_]+)"', resp.text)
    assert match, describe(resp)
    return match.group(1)


def authorize_path(world: World, provider_id: str, microsoft_tenant: str = "common") -> str:
    if provider_id == "microsoft.com":
        return f"/microsoft/{microsoft_tenant}/authorize"
    return world.idp.endpoint_path(provider_id, "authorize")


def to_provider(world: World, resp: requests.Response, provider_id: str, **kwargs) -> str:
    """Asserts the handler (or createAuthUri's authUri) sends the browser to the provider's authorization
    endpoint; returns that URL."""
    assert resp.status_code == 302, describe(resp)
    location = resp.headers["Location"]
    parts = urlsplit(location)
    assert f"{parts.scheme}://{parts.netloc}" == world.idp.base_url, location
    assert parts.path == authorize_path(world, provider_id, **kwargs), location
    assert resp.headers.get("Referrer-Policy") == "no-referrer", describe(resp)
    return location


def answer_fields(url: str, post_body: str | None = None) -> dict[str, str]:
    """The provider's answer as Tessera reads it: the URL's query, then a form_post body's fields."""
    fields = dict(parse_qsl(urlsplit(url).query, keep_blank_values=True))
    fields.update(parse_qsl(post_body or "", keep_blank_values=True))
    return fields


# --------------------------------------------------------------------------------------
# Helpers: one flow per platform, start to answer
# --------------------------------------------------------------------------------------

@dataclass
class WebFlow:
    """A JS SDK popup/redirect: the provider's authorization URL, the handler page's JSON block, its event."""
    authorize_url: str
    page: requests.Response
    data: dict
    event: dict

    @property
    def fields(self) -> dict[str, str]:
        return answer_fields(self.event["urlResponse"], self.event["postBody"])

    @property
    def state(self) -> str:
        return self.fields["state"]


def web_flow(world: World, tenant_id: str | None, provider_id: str, account: FakeAccount, *,
             auth_type: str = "signInViaPopup", custom: dict | None = None, **kwargs) -> WebFlow:
    """The JS SDK opens the handler (popup or redirect), the browser goes through the provider, and the
    handler's page comes back with the event. Checks the event has the SDK's shape and echoes the start."""
    http = requests.Session()
    custom = {"login_hint": account.login_hint, **(custom or {})}
    url = web_handler_url(world, provider_id, tenant_id=tenant_id, auth_type=auth_type, custom=custom, **kwargs)
    start = http.get(url, allow_redirects=False, timeout=HTTP_TIMEOUT)
    authorize_url = to_provider(world, start, provider_id)
    page = complete_authorization(http, authorize_url, timeout=HTTP_TIMEOUT)
    data = page_data(page)
    event = data["authEvent"]
    sent = dict(parse_qsl(urlsplit(url).query))
    popup = auth_type.endswith("ViaPopup")
    assert data["mode"] == ("popup" if popup else "redirect"), data
    assert data["apiKey"] == world.stack.api_key and data["appName"] == sent["appName"], data
    assert data["storageKey"] == f"{world.stack.api_key}:{sent['appName']}", data
    assert set(event) == {"type", "eventId", "urlResponse", "sessionId", "postBody", "tenantId", "error"}, event
    assert event["type"] == auth_type and event["eventId"] == sent.get("eventId"), (event, sent)
    assert event["error"] is None and event["tenantId"] == tenant_id, event
    assert isinstance(event["sessionId"], str) and len(event["sessionId"]) >= 20, event
    assert event["urlResponse"].startswith(world.handler_url), event
    if event["postBody"] is None:
        assert event["urlResponse"].startswith(world.handler_url + "?"), event
    else:
        assert event["urlResponse"] == world.handler_url, event
    assert "state" in answer_fields(event["urlResponse"], event["postBody"]), event
    return WebFlow(authorize_url, page, data, event)


def redeem_web(world: World, event: dict, *, id_token: str | None = None, **overrides) -> requests.Response:
    """The JS SDK's signInWithIdp for an auth event (core/strategies/idp.ts): requestUri = urlResponse,
    sessionId, postBody and tenantId when set, returnSecureToken and returnIdpCredential; idToken to link."""
    body: dict[str, Any] = {"requestUri": event["urlResponse"], "sessionId": event["sessionId"],
                            "returnSecureToken": True, "returnIdpCredential": True}
    if event.get("postBody"):
        body["postBody"] = event["postBody"]
    if event.get("tenantId"):
        body["tenantId"] = event["tenantId"]
    if id_token is not None:
        body["idToken"] = id_token
    body.update(overrides)
    body = {k: v for k, v in body.items() if v is not None}
    return world.client.post("/v1/accounts:signInWithIdp", body, prefix=IT_PREFIX)


@dataclass
class MobileFlow:
    """An Apple or Android SDK flow: the raw session id the app keeps, its eventId, where the handler's
    page sends the browser back (deep link or intent), and the ``link`` to redeem."""
    authorize_url: str
    page: requests.Response
    session_id: str
    event_id: str
    app_url: str
    link: str


def offered_link(page: requests.Response) -> str:
    """The ``Return to the app`` link of a mobile answer page (for browsers that want a tap to open an app)."""
    match = re.search(r'<a id="return-to-app" href="([^"]*)"', page.text)
    assert match, describe(page)
    return html.unescape(match.group(1))


def apple_sdk_arguments(query: str) -> dict[str, str]:
    """AuthWebUtils.dictionary(withHttpArgumentsString:): split on ``&`` and ``=``, each side first ``+`` →
    space then percent-decoded; the first occurrence of a name wins."""
    arguments: dict[str, str] = {}
    for pair in query.split("&"):
        if not pair:
            continue
        name, _, value = pair.partition("=")
        arguments.setdefault(unquote(name.replace("+", " ")), unquote(value.replace("+", " ")))
    return arguments


def apple_callback_scheme(client_id: str | None, app_id: str | None) -> str:
    """OAuthProvider's callback scheme: the reversed client id, else ``app-`` + the app id with ``-``."""
    if client_id:
        return ".".join(reversed(client_id.split(".")))
    return "app-" + app_id.replace(":", "-")


def apple_callback_arguments(url: str, scheme: str, event_id: str) -> dict[str, str]:
    """Checks a callback as AuthWebUtils.isExpectedCallbackURL does (``<scheme>://firebaseauth/link``, a
    ``deep_link_id`` whose query has authType signInWithRedirect and the eventId); returns the deep link's
    arguments as OAuthProvider.oAuthResponseForURL reads them."""
    assert url.split("?", 1)[0].split("#", 1)[0] == f"{scheme}://firebaseauth/link", url
    parts = urlsplit(url)
    assert parts.scheme == scheme and parts.netloc == "firebaseauth" and parts.path == "/link", url
    deep_link = apple_sdk_arguments(parts.query)["deep_link_id"]
    inner = urlsplit(deep_link)
    assert inner.scheme in ("http", "https") and inner.path == "/__/auth/callback", deep_link
    arguments = apple_sdk_arguments(inner.query)
    assert arguments["authType"] == "signInWithRedirect" and arguments["eventId"] == event_id, arguments
    return arguments


def read_apple_deep_link(url: str, scheme: str, event_id: str) -> str:
    """The ``link`` of a successful callback."""
    arguments = apple_callback_arguments(url, scheme, event_id)
    assert "firebaseError" not in arguments, arguments
    return arguments["link"]


def apple_sdk_url(world: World, tenant_id: str | None, provider_id: str, login_hint: str, *,
                  client_id: Any = "listed", app_id: str | None = None,
                  bundle: str = IOS_BUNDLE) -> tuple[str, str, str]:
    """The Apple SDK's handler URL (OAuthProvider.getHeadfulLiteUrl: its parameters in its order, the SHA-256
    of the raw session id, ``scopes=`` empty as the SDK sends it by default); returns (URL, raw session id,
    eventId). ``client_id="listed"``: the stack's authorized iOS client id (ios_client_id)."""
    if client_id == "listed":
        client_id = ios_client_id(world.stack)
    session_id, event_id = apple_random(), apple_random()
    pairs = [("apiKey", world.stack.api_key), ("authType", "signInWithRedirect"), ("ibi", bundle),
             ("sessionId", hashlib.sha256(session_id.encode()).hexdigest()), ("v", IOS_SDK_VERSION),
             ("eventId", event_id), ("providerId", provider_id), ("clientId", client_id), ("appId", app_id),
             ("tid", tenant_id), ("scopes", ""), ("customParameters", json.dumps({"login_hint": login_hint}))]
    return world.stack.url + EMULATOR_HANDLER + "?" + apple_query(pairs), session_id, event_id


def apple_sdk_flow(world: World, tenant_id: str | None, provider_id: str, account: FakeAccount, *,
                   client_id: Any = "listed", app_id: str | None = None) -> MobileFlow:
    """The Apple SDK opens the handler, the browser goes through the provider, and the handler's page sends
    it to the deep link (checked and read as the SDK does)."""
    if client_id == "listed":
        client_id = ios_client_id(world.stack)
    url, session_id, event_id = apple_sdk_url(world, tenant_id, provider_id, account.login_hint,
                                              client_id=client_id, app_id=app_id)
    http = requests.Session()
    authorize_url = to_provider(world, http.get(url, allow_redirects=False, timeout=HTTP_TIMEOUT), provider_id)
    page = complete_authorization(http, authorize_url, timeout=HTTP_TIMEOUT)
    data = page_data(page)
    assert data["mode"] == "app", data
    link = read_apple_deep_link(data["url"], apple_callback_scheme(client_id, app_id), event_id)
    assert offered_link(page) == data["url"], "the page offers the link to tap as well"
    return MobileFlow(authorize_url, page, session_id, event_id, data["url"], link)


def read_android_intent(url: str, package: str) -> dict[str, str]:
    """The string extras of the handler's intent URI for GenericIdpActivity, decoded as Intent.parseUri
    does (percent-decoding only); checks its scheme, package and ``B.encryptionEnabled=false``."""
    prefix = "intent://firebase.auth/#Intent;"
    assert url.startswith(prefix) and url.endswith(";end"), url
    parts = dict(item.partition("=")[::2] for item in url[len(prefix):-len(";end")].split(";"))
    assert parts.pop("scheme") == "genericidp" and parts.pop("package") == package, url
    assert parts.pop("B.encryptionEnabled") == "false", url
    assert all(name.startswith("S.") for name in parts), url
    return {name[2:]: unquote(value) for name, value in parts.items()}


def android_sdk_url(world: World, tenant_id: str | None, provider_id: str, login_hint: str, *,
                    package: str = ANDROID_PACKAGE) -> tuple[str, str, str]:
    """The Android SDK's handler URL (GenericIdpActivity: eid, v, authType, apiKey, providerId, sessionId,
    eventId (a UUID), apn, sha1Cert, publicKey, customParameters, tid); returns (URL, session id, eventId)."""
    session_id, event_id = str(uuid.uuid4()), str(uuid.uuid4())
    pairs = [("eid", "p"), ("v", ANDROID_SDK_VERSION), ("authType", "signInWithRedirect"),
             ("apiKey", world.stack.api_key), ("providerId", provider_id), ("sessionId", session_id),
             ("eventId", event_id), ("apn", package), ("sha1Cert", ANDROID_SHA1),
             ("publicKey", base64.b64encode(secrets.token_bytes(48)).decode()),
             ("customParameters", json.dumps({"login_hint": login_hint})), ("tid", tenant_id)]
    return world.stack.url + EMULATOR_HANDLER + "?" + sdk_query(pairs), session_id, event_id


def android_sdk_flow(world: World, tenant_id: str | None, provider_id: str, account: FakeAccount) -> MobileFlow:
    """The Android SDK opens the handler, the browser goes through the provider, and the handler's page
    sends it to the intent URI (read as Intent.parseUri does)."""
    url, session_id, event_id = android_sdk_url(world, tenant_id, provider_id, account.login_hint)
    http = requests.Session()
    authorize_url = to_provider(world, http.get(url, allow_redirects=False, timeout=HTTP_TIMEOUT), provider_id)
    page = complete_authorization(http, authorize_url, timeout=HTTP_TIMEOUT)
    data = page_data(page)
    assert data["mode"] == "app", data
    extras = read_android_intent(data["url"], ANDROID_PACKAGE)
    assert extras["authType"] == "signInWithRedirect" and extras["eventId"] == event_id, extras
    assert extras["link"].startswith(world.handler_url + "?"), extras
    assert offered_link(page) == data["url"], "the page offers the intent to tap as well"
    return MobileFlow(authorize_url, page, session_id, event_id, data["url"], extras["link"])


def verify_assertion(world: World, flow: MobileFlow, provider_id: str, tenant_id: str | None, **overrides):
    """The Apple SDK's (and Android's) v3 verifyAssertion: requestUri = link, postBody providerId=…, the
    RAW session id, autoCreate true."""
    body: dict[str, Any] = {"requestUri": flow.link, "postBody": f"providerId={quote(provider_id)}",
                            "returnSecureToken": True, "returnIdpCredential": True, "sessionId": flow.session_id,
                            "tenantId": tenant_id, "autoCreate": True}
    body.update(overrides)
    body = {k: v for k, v in body.items() if v is not None}
    return world.client.post("/verifyAssertion", body, prefix=V3_RELYINGPARTY)


@dataclass
class AppFlow:
    """An app's own flow: createAuthUri's answer, the provider, and the URL the handler sent the browser to
    (the continueUri with the provider's answer)."""
    created: dict
    authorize_url: str
    returned_to: str

    @property
    def session_id(self) -> str:
        return self.created["sessionId"]

    @property
    def state(self) -> str:
        return answer_fields(self.returned_to)["state"]


def create_auth_uri(world: World, provider_id: str, tenant_id: str | None, **fields) -> requests.Response:
    body = {"providerId": provider_id, "continueUri": CONTINUE_URI, "tenantId": tenant_id, **fields}
    return world.client.post("/v1/accounts:createAuthUri", {k: v for k, v in body.items() if v is not None})


def app_flow(world: World, tenant_id: str | None, provider_id: str, account: FakeAccount, *,
             continue_uri: str = CONTINUE_URI, **fields) -> AppFlow:
    """createAuthUri with providerId + continueUri (+ customParameter, tenantId), the browser follows
    authUri through the provider; Tessera's handler answers with a 302 to continueUri?<provider's answer>."""
    resp = create_auth_uri(world, provider_id, tenant_id, continueUri=continue_uri,
                           customParameter={"login_hint": account.login_hint}, **fields)
    created = expect_ok(resp)
    assert created["kind"] == "identitytoolkit#CreateAuthUriResponse", describe(resp)
    assert created["providerId"] == provider_id and isinstance(created["sessionId"], str), describe(resp)
    http = requests.Session()
    authorize_url = created["authUri"]
    parts = urlsplit(authorize_url)
    assert f"{parts.scheme}://{parts.netloc}{parts.path}" == world.idp.base_url + authorize_path(world, provider_id)
    back = complete_authorization(http, authorize_url, timeout=HTTP_TIMEOUT)
    assert back.status_code == 302, describe(back)
    returned_to = back.headers["Location"]
    assert returned_to.startswith(continue_uri + "?"), returned_to
    assert "state" in answer_fields(returned_to), returned_to
    return AppFlow(created, authorize_url, returned_to)


def redeem_app(world: World, flow: AppFlow, tenant_id: str | None, **overrides) -> requests.Response:
    """The app's signInWithIdp: requestUri = the URL the browser came back to, the createAuthUri sessionId."""
    body = {"requestUri": flow.returned_to, "sessionId": flow.session_id, "tenantId": tenant_id,
            "returnSecureToken": True, **overrides}
    return world.client.post("/v1/accounts:signInWithIdp", {k: v for k, v in body.items() if v is not None})


# --------------------------------------------------------------------------------------
# Helpers: outcomes
# --------------------------------------------------------------------------------------

def signed_in(resp: requests.Response) -> dict:
    """A successful signInWithIdp: tokens, no needConfirmation, no errorMessage."""
    data = expect_ok(resp)
    assert data.get("kind") == VERIFY_ASSERTION_KIND, describe(resp)
    assert not data.get("needConfirmation") and "errorMessage" not in data, describe(resp)
    for name in ("localId", "idToken", "refreshToken"):
        assert isinstance(data.get(name), str) and data[name], describe(resp)
    assert data.get("expiresIn") == "3600", describe(resp)
    return data


def check_user(world: World, resp: requests.Response, tenant_id: str, provider_id: str, account: FakeAccount,
               *, new: bool = True) -> dict:
    """The answer is ``account`` signed in with ``provider_id``: the provider's profile, a (new) user linked
    to that identity, and an ID token naming the provider as sign_in_provider."""
    data = signed_in(resp)
    assert data["providerId"] == provider_id and data["tenantId"] == tenant_id, describe(resp)
    assert data["federatedId"] == federated_id(provider_id, account), describe(resp)
    assert data.get("email") == account.email, describe(resp)
    assert data.get("displayName") == display_name(account), describe(resp)
    assert data.get("isNewUser", False) is new, describe(resp)
    claims = world.verifier.verify(data["idToken"])
    assert claims["sub"] == data["localId"] and claims["firebase"]["tenant"] == tenant_id, claims
    assert claims["firebase"]["sign_in_provider"] == provider_id, claims
    assert claims["firebase"]["identities"][provider_id] == [account.sub], claims
    user = user_record(world, tenant_id, data["localId"])
    assert (provider_id, account.sub) in links(user), user
    return data


def refused_event(data: dict, code: str, auth_type: str = "signInViaPopup") -> dict:
    """A handler page that delivers an error event to the JS SDK: its type, no session, the SDK's code."""
    event = data["authEvent"]
    assert event["type"] == auth_type and event["sessionId"] is None and event["urlResponse"] is None, data
    assert isinstance(event["error"], dict) and event["error"]["code"] == code, data
    return event


def refusal(world: World, resp: requests.Response, code: str, tenant_id: str, *, users: list[str] | None = None):
    """A Firebase error ``code`` (HTTP 400), and the tenant's users are exactly ``users`` (none by default)."""
    expect_error(resp, code)
    assert tenant_user_ids(world, tenant_id) == sorted(users or []), f"a refusal left users behind: {code}"


# --------------------------------------------------------------------------------------
# What reaches the provider (section 4), checked on every provider's popup flow
# --------------------------------------------------------------------------------------

def check_provider_traffic(world: World, kind: str, provider_id: str, flow: WebFlow, signed: dict) -> None:
    """What Tessera sent the provider for this flow: the authorization request's parameters (each once),
    and the token request's (or Twitter's two OAuth 1.0a legs)."""
    idp = world.idp
    query_pairs = parse_qsl(urlsplit(flow.authorize_url).query, keep_blank_values=True)
    names = [name for name, _ in query_pairs]
    assert len(names) == len(set(names)), f"a parameter twice: {flow.authorize_url}"
    query = dict(query_pairs)
    answer = flow.fields
    if kind == "twitter.com":
        # Leg 1 (signed, no token): the callback is the handler with the state; leg 3: the request token
        # the browser authorized, its verifier; the user-info call then works with the access token.
        assert set(query) == {"oauth_token", "login_hint"}, query
        [leg1] = [r for r in idp.request_token_requests()
                  if (r.oauth_params or {}).get("oauth_callback") == f"{world.handler_url}?state={flow.state}"]
        assert leg1.status == 200 and "oauth_token" not in leg1.oauth_params, leg1
        assert leg1.oauth_params["oauth_consumer_key"] == idp.client_id("twitter"), leg1
        [leg3] = [r for r in idp.token_requests("twitter")
                  if (r.oauth_params or {}).get("oauth_token") == query["oauth_token"]]
        assert leg3.status == 200 and leg3.oauth_params.get("oauth_verifier") == answer["oauth_verifier"], leg3
        assert signed.get("oauthAccessToken") and signed.get("oauthTokenSecret"), signed
        return
    assert query["client_id"] == idp.client_id(provider_id), query
    assert query["redirect_uri"] == world.handler_url, query
    assert query["state"] == flow.state and len(query["state"].split(".")[0]) == 43, query
    assert query["response_type"] == ("id_token" if kind == "oidc-idtoken" else "code"), query
    scopes = query["scope"].split(" ")
    if kind == "apple.com":
        assert scopes == ["name", "email"], query
    elif kind == "facebook.com":
        assert scopes == ["email", "public_profile"], query
    elif kind == "github.com":
        assert scopes == ["read:user", "user:email"], query
    else:
        assert scopes[:3] == ["openid", "email", "profile"], query
    if kind in PKCE:
        assert query["code_challenge_method"] == "S256", query
        assert re.fullmatch(r"[A-Za-z0-9_-]{43}", query["code_challenge"]), query
    else:
        assert "code_challenge" not in query and "code_challenge_method" not in query, query
    if kind in NONCE:
        assert len(query.get("nonce", "")) >= 22, query
        # The ID token the provider issued for the flow carries the flow's nonce.
        assert unverified_claims(signed["oauthIdToken"])["nonce"] == query["nonce"], signed
    else:
        assert "nonce" not in query, query
    if kind in FORM_POST:
        assert query["response_mode"] == "form_post", query
        assert flow.event["postBody"] is not None, flow.event
    else:
        assert "response_mode" not in query, query
    if kind == "oidc-idtoken":
        assert idp.token_requests(provider_id) == [], "the ID-token flow has no token request"
        return
    [token] = [r for r in idp.token_requests(provider_id) if r.form.get("code") == answer["code"]]
    assert token.status == 200, (token.refusal, token.form)
    assert token.form["grant_type"] == "authorization_code", token.form
    assert token.form["redirect_uri"] == world.handler_url, token.form
    if kind in PKCE:
        assert pkce_challenge(token.form["code_verifier"]) == query["code_challenge"], token.form
    else:
        assert "code_verifier" not in token.form, token.form
    if kind == "apple.com":
        secret = token.form["client_secret"]
        header, claims = jwt.get_unverified_header(secret), unverified_claims(secret)
        assert header["alg"] == "ES256" and claims["sub"] == idp.client_id("apple"), (header, claims)
        assert claims["aud"] == idp.issuer("apple") and claims["exp"] - claims["iat"] <= 15777000, claims
    elif kind == "oidc-code":
        assert token.basic_credentials == (idp.client_id(provider_id), idp.client_secret(provider_id)), token
        assert "client_secret" not in token.form, token.form
    else:
        assert token.form["client_id"] == idp.client_id(provider_id), token.form
        assert token.form["client_secret"] == idp.client_secret(provider_id), token.form


# ======================================================================================
# 1. Every provider, every platform
# ======================================================================================

@pytest.mark.parametrize("kind", ALL_PROVIDERS)
def test_every_provider_signs_in_through_the_js_popup_and_is_sent_what_it_expects(world, kind):
    tenant = provider_tenant(world, kind)
    provider_id = tenant[kind]
    account = new_account(world, provider_id)
    flow = web_flow(world, tenant.id, provider_id, account, scopes="profile" if kind == "google.com" else None)
    resp = redeem_web(world, flow.event)
    data = check_user(world, resp, tenant.id, provider_id, account)
    check_provider_traffic(world, kind, provider_id, flow, data)
    assert tenant_user_ids(world, tenant.id) == [data["localId"]]


def test_the_same_provider_account_signs_in_again_as_the_same_user(world):
    tenant = provider_tenant(world, "google.com")
    account = new_account(world, "google.com")
    first = check_user(world, redeem_web(world, web_flow(world, tenant.id, "google.com", account).event),
                       tenant.id, "google.com", account)
    again = check_user(world, redeem_web(world, web_flow(world, tenant.id, "google.com", account).event),
                       tenant.id, "google.com", account, new=False)
    assert again["localId"] == first["localId"] and again["refreshToken"] != first["refreshToken"]
    assert world.client.refresh(again["refreshToken"])["user_id"] == first["localId"]
    assert tenant_user_ids(world, tenant.id) == [first["localId"]]


def test_microsoft_tenant_parameter_picks_the_tenant_endpoints_and_a_malformed_one_starts_nothing(world):
    tenant = provider_tenant(world, "microsoft.com")
    account = new_account(world, "microsoft.com", domain="outlook.com")
    http = requests.Session()
    url = web_handler_url(world, "microsoft.com", tenant_id=tenant.id,
                          custom={"tenant": "contoso.onmicrosoft.com", "login_hint": account.login_hint})
    authorize_url = to_provider(world, http.get(url, allow_redirects=False, timeout=HTTP_TIMEOUT), "microsoft.com",
                                microsoft_tenant="contoso.onmicrosoft.com")
    assert "tenant" not in dict(parse_qsl(urlsplit(authorize_url).query)), "tenant fills the URL, not the query"
    event = page_data(complete_authorization(http, authorize_url, timeout=HTTP_TIMEOUT))["authEvent"]
    check_user(world, redeem_web(world, event), tenant.id, "microsoft.com", account)
    code = answer_fields(event["urlResponse"])["code"]
    [token] = [r for r in world.idp.token_requests("microsoft") if r.form.get("code") == code]
    assert token.path == "/microsoft/contoso.onmicrosoft.com/token" and token.status == 200, token

    before = len(world.idp.authorize_requests("microsoft"))
    flows = flows_in(world, tenant.id)
    for bad in ("../common", "a b", "x" * 65):
        resp = requests.get(web_handler_url(world, "microsoft.com", tenant_id=tenant.id, custom={"tenant": bad}),
                            allow_redirects=False, timeout=HTTP_TIMEOUT)
        assert resp.status_code == 200 and "Location" not in resp.headers, describe(resp)
        refused_event(page_data(resp), "auth/invalid-credential")
    assert len(world.idp.authorize_requests("microsoft")) == before and flows_in(world, tenant.id) == flows


@pytest.mark.parametrize("kind", PLATFORM_PROVIDERS)
def test_js_redirect_flow_signs_in_and_goes_back_to_the_app_page(world, kind):
    tenant = provider_tenant(world, kind)
    provider_id = tenant[kind]
    account = new_account(world, provider_id)
    flow = web_flow(world, tenant.id, provider_id, account, auth_type="signInViaRedirect", path=HANDLER)
    assert flow.event["eventId"] is None, "signInWithRedirect sends no eventId"
    # The page keeps the event for the relay iframe of the page it goes back to, under the key the iframe
    # reads: firebase:redirectEvent:<apiKey>:<appName>.
    assert flow.data["redirectUrl"] == APP_PAGE, flow.data
    assert flow.data["storageKey"] == f"{world.stack.api_key}:{APP_NAME}", flow.data
    for script in ("/__/auth/handler.js", "/__/auth/iframe.js"):
        resp = requests.get(world.stack.url + script, timeout=HTTP_TIMEOUT)
        assert resp.status_code == 200 and resp.headers["Content-Type"].startswith("text/javascript"), describe(resp)
        assert '"firebase:redirectEvent:" +' in resp.text, f"{script} uses the redirect event's storage key"
    check_user(world, redeem_web(world, flow.event), tenant.id, provider_id, account)


@pytest.mark.parametrize("kind", PLATFORM_PROVIDERS)
def test_apple_sdk_flow_signs_in_through_the_deep_link_and_verify_assertion(world, kind):
    tenant = provider_tenant(world, kind)
    provider_id = tenant[kind]
    account = new_account(world, provider_id)
    flow = apple_sdk_flow(world, tenant.id, provider_id, account)
    assert flow.link.startswith(world.handler_url + "?"), flow.link
    assert "state" in answer_fields(flow.link), "the link carries the provider's answer (a form_post's as a query)"
    data = check_user(world, verify_assertion(world, flow, provider_id, tenant.id), tenant.id, provider_id, account)
    assert tenant_user_ids(world, tenant.id) == [data["localId"]]


@pytest.mark.parametrize("by", ["app-id", "client-id"])
def test_apple_sdk_returns_to_the_scheme_it_registered(world, by):
    """With clientId the scheme is the reversed client id; with appId (and no clientId), app-<googleAppID with
    - for :>."""
    tenant = provider_tenant(world, "google.com")
    account = new_account(world, "google.com")
    if by == "client-id":
        client_id, app_id = ios_client_id(world.stack), None
        expected = ".".join(reversed(client_id.split(".")))
    else:
        client_id, app_id = None, ios_app_id(world.stack)
        expected = "app-" + app_id.replace(":", "-")
    flow = apple_sdk_flow(world, tenant.id, "google.com", account, client_id=client_id, app_id=app_id)
    assert flow.app_url.startswith(expected + "://firebaseauth/link?deep_link_id="), flow.app_url
    check_user(world, verify_assertion(world, flow, "google.com", tenant.id), tenant.id, "google.com", account)


def test_apple_sdk_reauthentication_finds_the_same_user_and_never_creates_one(world):
    """The Apple SDK re-authenticates with autoCreate false: the user who has the identity signs in again;
    an identity nobody has is USER_NOT_FOUND, and no user is made."""
    tenant = provider_tenant(world, "apple.com")
    account = new_account(world, "apple.com")
    first = check_user(world, verify_assertion(world, apple_sdk_flow(world, tenant.id, "apple.com", account),
                                               "apple.com", tenant.id), tenant.id, "apple.com", account)
    flow = apple_sdk_flow(world, tenant.id, "apple.com", account)
    again = check_user(world, verify_assertion(world, flow, "apple.com", tenant.id, autoCreate=False),
                       tenant.id, "apple.com", account, new=False)
    assert again["localId"] == first["localId"]
    stranger = new_account(world, "apple.com")
    flow = apple_sdk_flow(world, tenant.id, "apple.com", stranger)
    refusal(world, verify_assertion(world, flow, "apple.com", tenant.id, autoCreate=False), "USER_NOT_FOUND",
            tenant.id, users=[first["localId"]])


@pytest.mark.parametrize("kind", PLATFORM_PROVIDERS)
def test_android_sdk_flow_signs_in_through_the_intent_and_verify_assertion(world, kind):
    tenant = provider_tenant(world, kind)
    provider_id = tenant[kind]
    account = new_account(world, provider_id)
    flow = android_sdk_flow(world, tenant.id, provider_id, account)
    check_user(world, verify_assertion(world, flow, provider_id, tenant.id), tenant.id, provider_id, account)


@pytest.mark.parametrize("kind", ["google.com", "apple.com", "twitter.com"])
def test_android_sdk_flow_redeems_with_v1_sign_in_with_idp_and_no_post_body(world, kind):
    """The link alone names the flow: no postBody, the v1 path."""
    tenant = provider_tenant(world, kind)
    account = new_account(world, kind)
    flow = android_sdk_flow(world, tenant.id, kind, account)
    resp = world.client.post("/v1/accounts:signInWithIdp", {
        "requestUri": flow.link, "sessionId": flow.session_id, "tenantId": tenant.id, "returnSecureToken": True,
        "returnIdpCredential": True}, prefix=IT_PREFIX)
    check_user(world, resp, tenant.id, kind, account)


@pytest.mark.parametrize("kind", ALL_PROVIDERS)
def test_create_auth_uri_flow_signs_in_through_the_continue_uri(world, kind):
    tenant = provider_tenant(world, kind)
    provider_id = tenant[kind]
    account = new_account(world, provider_id)
    flow = app_flow(world, tenant.id, provider_id, account)
    if kind != "twitter.com":
        assert dict(parse_qsl(urlsplit(flow.authorize_url).query))["redirect_uri"] == world.handler_url
    data = check_user(world, redeem_app(world, flow, tenant.id), tenant.id, provider_id, account)
    assert tenant_user_ids(world, tenant.id) == [data["localId"]]


def test_create_auth_uri_adds_the_requested_scopes_and_keeps_the_apps_session_id(world):
    tenant = provider_tenant(world, "google.com")
    account = new_account(world, "google.com")
    mine = secrets.token_urlsafe(24)
    flow = app_flow(world, tenant.id, "google.com", account, sessionId=mine,
                    oauthScope=json.dumps({"google.com": "https://www.googleapis.com/auth/drive.readonly,openid"}))
    assert flow.session_id == mine
    scope = dict(parse_qsl(urlsplit(flow.authorize_url).query))["scope"]
    assert scope == "openid email profile https://www.googleapis.com/auth/drive.readonly", scope
    check_user(world, redeem_app(world, flow, tenant.id), tenant.id, "google.com", account)


# ======================================================================================
# 2. Linking, re-authentication and the trust rules through the popup
# ======================================================================================

def test_link_via_popup_links_the_provider_to_the_current_user(world):
    tenant = provider_tenant(world, "google.com", allowPasswordSignup=True)
    owner = expect_ok(world.client.post("/v1/accounts:signUp", {
        "tenantId": tenant.id, "email": f"owner-{uuid.uuid4().hex[:8]}@example.com", "password": "flows pw 1",
        "returnSecureToken": True}))
    account = new_account(world, "google.com", domain="gmail.com")
    flow = web_flow(world, tenant.id, "google.com", account, auth_type="linkViaPopup")
    data = signed_in(redeem_web(world, flow.event, id_token=owner["idToken"]))
    assert data["localId"] == owner["localId"] and data.get("isNewUser", False) is False, data
    user = user_record(world, tenant.id, owner["localId"])
    assert links(user) == sorted([("google.com", account.sub), ("password", owner["email"])]), user
    assert unverified_claims(data["idToken"])["firebase"]["identities"]["google.com"] == [account.sub]
    assert tenant_user_ids(world, tenant.id) == [owner["localId"]]


def test_reauth_via_popup_signs_the_same_user_in_again(world):
    tenant = provider_tenant(world, "github.com")
    account = new_account(world, "github.com")
    first = check_user(world, redeem_web(world, web_flow(world, tenant.id, "github.com", account).event),
                       tenant.id, "github.com", account)
    flow = web_flow(world, tenant.id, "github.com", account, auth_type="reauthViaPopup")
    again = check_user(world, redeem_web(world, flow.event), tenant.id, "github.com", account, new=False)
    # The SDK's reauthenticate checks the new token is the same user's (else auth/user-mismatch).
    assert again["localId"] == first["localId"] == unverified_claims(again["idToken"])["sub"]
    assert tenant_user_ids(world, tenant.id) == [first["localId"]]


def test_trusted_google_through_the_popup_takes_over_an_untrusted_account(world):
    tenant = provider_tenant(world, "google.com", allowPasswordSignup=True)
    email = f"owner-{uuid.uuid4().hex[:8]}@gmail.com"
    squatter = expect_ok(world.client.post("/v1/accounts:signUp", {
        "tenantId": tenant.id, "email": email, "password": "flows pw 1", "returnSecureToken": True}))
    account = new_account(world, "google.com", email=email, name="Rightful Owner")
    data = signed_in(redeem_web(world, web_flow(world, tenant.id, "google.com", account).event))
    assert data["localId"] == squatter["localId"] and data.get("isNewUser", False) is False, data
    claims = unverified_claims(data["idToken"])
    assert claims["email_verified"] is True and claims["firebase"]["sign_in_provider"] == "google.com"
    user = user_record(world, tenant.id, squatter["localId"])
    assert links(user) == [("google.com", account.sub)] and "passwordHash" not in user, user
    assert user["emailVerified"] is True
    assert tenant_user_ids(world, tenant.id) == [squatter["localId"]]


def test_facebook_through_the_popup_needs_confirmation_for_a_trusted_account(world):
    tenant = provider_tenant(world, "google.com", "facebook.com")
    email = f"owner-{uuid.uuid4().hex[:8]}@gmail.com"
    google = new_account(world, "google.com", email=email)
    owner = check_user(world, redeem_web(world, web_flow(world, tenant.id, "google.com", google).event),
                       tenant.id, "google.com", google)
    before = user_record(world, tenant.id, owner["localId"])
    facebook = new_account(world, "facebook.com", email=email)
    resp = redeem_web(world, web_flow(world, tenant.id, "facebook.com", facebook).event)
    data = expect_ok(resp)
    assert data["needConfirmation"] is True and data["verifiedProvider"] == ["google.com"], describe(resp)
    assert data["email"] == email and data["providerId"] == "facebook.com", describe(resp)
    for name in ("localId", "idToken", "refreshToken"):
        assert name not in data, describe(resp)
    assert links(user_record(world, tenant.id, owner["localId"])) == links(before)
    assert tenant_user_ids(world, tenant.id) == [owner["localId"]]


def test_linking_an_identity_another_user_holds_answers_200_with_error_message(world):
    tenant = provider_tenant(world, "google.com")
    account = new_account(world, "google.com", domain="gmail.com")
    owner = check_user(world, redeem_web(world, web_flow(world, tenant.id, "google.com", account).event),
                       tenant.id, "google.com", account)
    other = world.client.sign_up_anonymous(tenant.id)
    flow = web_flow(world, tenant.id, "google.com", account, auth_type="linkViaPopup")
    resp = redeem_web(world, flow.event, id_token=other.id_token)
    data = expect_ok(resp)
    assert data["errorMessage"] == "FEDERATED_USER_ID_ALREADY_LINKED", describe(resp)
    assert data["providerId"] == "google.com" and data.get("oauthIdToken"), describe(resp)
    for name in ("localId", "idToken", "refreshToken"):
        assert name not in data, describe(resp)
    assert links(user_record(world, tenant.id, other.local_id)) == []
    assert tenant_user_ids(world, tenant.id) == sorted([owner["localId"], other.local_id])


def test_the_scope_s_self_service_switches_govern_a_flow_as_they_govern_a_credential(world):
    """With client.permissions.disabledUserSignup, a first sign-in through a flow answers ADMIN_ONLY_OPERATION
    and creates nobody, while an identity the scope already has still signs in; with disableAuth, the handler
    starts nothing and the popup's SDK gets auth/operation-not-allowed."""
    tenant = provider_tenant(world, "google.com")
    known = new_account(world, "google.com")
    existing = check_user(world, redeem_web(world, web_flow(world, tenant.id, "google.com", known).event),
                          tenant.id, "google.com", known)
    expect_ok(world.admin.patch_tenant(tenant.id, {"client": {"permissions": {"disabledUserSignup": True}}},
                                       update_mask="client.permissions.disabledUserSignup"))
    stranger = new_account(world, "google.com")
    refusal(world, redeem_web(world, web_flow(world, tenant.id, "google.com", stranger).event),
            "ADMIN_ONLY_OPERATION", tenant.id, users=[existing["localId"]])
    again = check_user(world, redeem_web(world, web_flow(world, tenant.id, "google.com", known).event),
                       tenant.id, "google.com", known, new=False)
    assert again["localId"] == existing["localId"]

    expect_ok(world.admin.patch_tenant(tenant.id, {"disableAuth": True}, update_mask="disableAuth"))
    before = len(world.idp.authorize_requests("google"))
    resp = requests.get(web_handler_url(world, "google.com", tenant_id=tenant.id), allow_redirects=False,
                        timeout=HTTP_TIMEOUT)
    refused_event(page_data(resp), "auth/operation-not-allowed")
    assert len(world.idp.authorize_requests("google")) == before and flows_in(world, tenant.id) == 0


def test_a_tenant_s_trusted_pair_lets_its_oidc_provider_take_over_through_a_flow(world):
    """A tenant's OIDC provider listed as verifying a domain (trustedEmailDomains) is trusted for it through
    a flow as through a credential: it takes over an account whose address nobody proved; without the pair
    the same sign-in needs confirmation."""
    tenant = provider_tenant(world, "oidc-code", allowPasswordSignup=True)
    provider_id = tenant["oidc-code"]
    domain = f"acme{uuid.uuid4().hex[:6]}.example"

    def squatter() -> dict:
        return expect_ok(world.client.post("/v1/accounts:signUp", {
            "tenantId": tenant.id, "email": f"owner-{uuid.uuid4().hex[:8]}@{domain}", "password": "flows pw 1",
            "returnSecureToken": True}))

    untrusted_owner = squatter()
    account = new_account(world, provider_id, email=untrusted_owner["email"])
    resp = redeem_web(world, web_flow(world, tenant.id, provider_id, account).event)
    assert expect_ok(resp).get("needConfirmation") is True, describe(resp)

    path = idp_config_path(world.admin.stack, "oauthIdpConfigs", tenant.id, provider_id)
    expect_ok(world.admin.request("PATCH", path, params={"updateMask": "trustedEmailDomains"},
                                  json={"trustedEmailDomains": [domain]}))
    owner = squatter()
    account = new_account(world, provider_id, email=owner["email"])
    data = signed_in(redeem_web(world, web_flow(world, tenant.id, provider_id, account).event))
    assert data["localId"] == owner["localId"], data
    user = user_record(world, tenant.id, owner["localId"])
    assert links(user) == [(provider_id, account.sub)] and user["emailVerified"] is True, user


# ======================================================================================
# 3. Refusals
# ======================================================================================

def forged_state(tenant_id: str | None) -> str:
    """A state as Tessera makes them (43 base64url characters, then the tenant) that it never issued."""
    random_part = base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode()
    if tenant_id is None:
        return random_part
    return random_part + "." + base64.urlsafe_b64encode(tenant_id.encode()).rstrip(b"=").decode()


@pytest.mark.parametrize("state", ["random", "never-issued"])
def test_an_unknown_state_is_refused(world, state):
    tenant = provider_tenant(world, "google.com")
    value = secrets.token_hex(8) if state == "random" else forged_state(tenant.id)
    resp = world.client.post("/v1/accounts:signInWithIdp", {
        "requestUri": f"{world.handler_url}?code={secrets.token_urlsafe(32)}&state={value}",
        "sessionId": secrets.token_urlsafe(24), "tenantId": tenant.id, "returnSecureToken": True,
        "returnIdpCredential": True}, prefix=IT_PREFIX)
    refusal(world, resp, "INVALID_IDP_RESPONSE", tenant.id)
    # The handler, given that answer by a browser, shows an error page and sends it nowhere.
    page = requests.get(f"{world.handler_url}?code=x&state={value}", allow_redirects=False, timeout=HTTP_TIMEOUT)
    assert error_page_code(page) == "INVALID_IDP_RESPONSE"


def test_a_replayed_answer_is_refused_and_starts_no_second_session(world):
    tenant = provider_tenant(world, "google.com")
    account = new_account(world, "google.com")
    flow = web_flow(world, tenant.id, "google.com", account)
    first = check_user(world, redeem_web(world, flow.event), tenant.id, "google.com", account)
    for _ in range(2):
        refusal(world, redeem_web(world, flow.event), "INVALID_IDP_RESPONSE", tenant.id, users=[first["localId"]])
    token_calls = [r for r in world.idp.token_requests("google") if r.form.get("code") == flow.fields["code"]]
    assert len(token_calls) == 1, "a replay never reaches the provider"
    # The handler no longer knows the state either: a replayed answer in a browser gets the error page.
    page = requests.get(flow.event["urlResponse"], allow_redirects=False, timeout=HTTP_TIMEOUT)
    assert error_page_code(page) == "INVALID_IDP_RESPONSE"


def test_concurrent_redemptions_of_one_answer_sign_in_once(world):
    """Eight redemptions of the same answer at once (a double-clicking app, an attacker racing it): one
    signs in, every other is INVALID_IDP_RESPONSE, one user."""
    tenant = provider_tenant(world, "google.com")
    account = new_account(world, "google.com")
    flow = web_flow(world, tenant.id, "google.com", account)
    body = {"requestUri": flow.event["urlResponse"], "sessionId": flow.event["sessionId"], "tenantId": tenant.id,
            "returnSecureToken": True, "returnIdpCredential": True}
    url = f"{world.stack.url}{IT_PREFIX}/v1/accounts:signInWithIdp"

    def redeem(_):
        return requests.post(url, params={"key": world.stack.api_key}, json=body, timeout=HTTP_TIMEOUT)

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(redeem, range(8)))
    winners = [resp for resp in answers if resp.status_code == 200]
    assert len(winners) == 1, [describe(resp) for resp in answers]
    for resp in answers:
        if resp is not winners[0]:
            expect_error(resp, "INVALID_IDP_RESPONSE")
    local_id = check_user(world, winners[0], tenant.id, "google.com", account)["localId"]
    assert tenant_user_ids(world, tenant.id) == [local_id]


def test_a_state_of_another_scope_is_refused_without_consuming_the_flow(world):
    tenant = provider_tenant(world, "google.com")
    other = provider_tenant(world, "google.com")
    account = new_account(world, "google.com")
    flow = web_flow(world, tenant.id, "google.com", account)
    refusal(world, redeem_web(world, flow.event, tenantId=other.id), "INVALID_IDP_RESPONSE", other.id)
    expect_error(redeem_web(world, {**flow.event, "tenantId": None}), "INVALID_IDP_RESPONSE")
    assert tenant_user_ids(world, tenant.id) == []
    # The flow is still there for its own scope.
    check_user(world, redeem_web(world, flow.event), tenant.id, "google.com", account)
    assert tenant_user_ids(world, other.id) == []


@pytest.fixture(scope="module")
def other_key_token_service(stack):
    """The stack's token service binary beside the stack with another TESSERA_API_KEY, against the same
    directory; its public URL is the stack's, so the provider answers to the stack's handler."""
    from test_secrets import running  # starts `<binary> serve` on a port of its own (test_review_ingress does too)
    key = secrets.token_hex(32)
    settings = {name: value for name, value in stack.env.items() if name.startswith("IDP_")}
    settings.update(TESSERA_API_KEY=key, TESSERA_PUBLIC_URL=stack.url,
                    TESSERA_IDP_ALLOWED_PRIVATE_ADDRESSES=urlsplit(stack.env["IDP_FAKE_URL"]).netloc,
                    TESSERA_AUTHORIZED_APPS=stack.env.get("TESSERA_AUTHORIZED_APPS", ""))
    with running(stack, "token-service", "/readyz", **settings) as service:
        service.api_key = key
        yield service


def test_a_flow_is_bound_to_the_api_key_that_started_it(world, other_key_token_service):
    other = other_key_token_service
    tenant = provider_tenant(world, "google.com")
    account = new_account(world, "google.com")

    def redeem_at(base: str, key: str, event: dict) -> requests.Response:
        body = {"requestUri": event["urlResponse"], "sessionId": event["sessionId"], "tenantId": tenant.id,
                "returnSecureToken": True, "returnIdpCredential": True}
        return requests.post(f"{base}/v1/accounts:signInWithIdp", params={"key": key}, json=body,
                             timeout=HTTP_TIMEOUT)

    # Started with the stack's key, redeemed where the key is another: refused (and spent).
    flow = web_flow(world, tenant.id, "google.com", account)
    refusal(world, redeem_at(other.base, other.api_key, flow.event), "INVALID_IDP_RESPONSE", tenant.id)
    refusal(world, redeem_web(world, flow.event), "INVALID_IDP_RESPONSE", tenant.id)

    # Started with the other key (its handler); the provider answers to the stack's handler, which hands
    # the answer back; redeemed with the stack's key: refused.
    def started_there() -> dict:
        http = requests.Session()
        url = web_handler_url(world, "google.com", tenant_id=tenant.id, api_key=other.api_key, base=other.base,
                              custom={"login_hint": account.login_hint})
        authorize_url = to_provider(world, http.get(url, allow_redirects=False, timeout=HTTP_TIMEOUT), "google.com")
        assert dict(parse_qsl(urlsplit(authorize_url).query))["redirect_uri"] == world.handler_url
        data = page_data(complete_authorization(http, authorize_url, timeout=HTTP_TIMEOUT))
        assert data["apiKey"] == other.api_key, data
        return data["authEvent"]

    refusal(world, redeem_at(world.stack.url, world.stack.api_key, started_there()), "INVALID_IDP_RESPONSE",
            tenant.id)
    # ... and where it was started, it signs in.
    check_user(world, redeem_at(other.base, other.api_key, started_there()), tenant.id, "google.com", account)


def test_a_missing_session_id_is_refused_and_the_flow_still_redeems(world):
    tenant = provider_tenant(world, "google.com")
    account = new_account(world, "google.com")
    flow = web_flow(world, tenant.id, "google.com", account)
    for missing in (None, ""):
        refusal(world, redeem_web(world, {**flow.event, "sessionId": missing}), "INVALID_IDP_RESPONSE", tenant.id)
    check_user(world, redeem_web(world, flow.event), tenant.id, "google.com", account)


@pytest.mark.parametrize("platform", ["web", "apple-hash-instead-of-raw", "android"])
def test_a_wrong_session_id_is_refused_and_spends_the_flow(world, platform):
    """The flow is consumed before the session id is compared: a wrong one spends it (single use)."""
    tenant = provider_tenant(world, "google.com")
    account = new_account(world, "google.com")
    if platform == "web":
        flow = web_flow(world, tenant.id, "google.com", account)
        wrong = redeem_web(world, {**flow.event, "sessionId": secrets.token_urlsafe(24)})
        right = redeem_web(world, flow.event)
    elif platform == "android":
        flow = android_sdk_flow(world, tenant.id, "google.com", account)
        wrong = verify_assertion(world, flow, "google.com", tenant.id, sessionId=str(uuid.uuid4()))
        right = verify_assertion(world, flow, "google.com", tenant.id)
    else:
        # The handler saw the SHA-256; only the app holds the raw id it was made from.
        flow = apple_sdk_flow(world, tenant.id, "google.com", account)
        wrong = verify_assertion(world, flow, "google.com", tenant.id,
                                 sessionId=hashlib.sha256(flow.session_id.encode()).hexdigest())
        right = verify_assertion(world, flow, "google.com", tenant.id)
    refusal(world, wrong, "INVALID_IDP_RESPONSE", tenant.id)
    refusal(world, right, "INVALID_IDP_RESPONSE", tenant.id)


@pytest.mark.parametrize("tampering", ["named-as-another-provider", "a-provider-error", "no-code", "another-code"])
def test_an_answer_that_is_not_the_providers_answer_to_this_flow_is_refused(world, tampering):
    """The flow's state with something else than what the provider answered: a postBody naming another
    provider, an ``error`` other than access_denied, no code, a code the provider never issued."""
    tenant = provider_tenant(world, "google.com")
    account = new_account(world, "google.com")
    flow = web_flow(world, tenant.id, "google.com", account)
    state = quote(flow.state)
    answer = {"named-as-another-provider": flow.event["urlResponse"],
              "a-provider-error": f"{world.handler_url}?error=temporarily_unavailable&state={state}",
              "no-code": f"{world.handler_url}?state={state}",
              "another-code": f"{world.handler_url}?code={secrets.token_urlsafe(32)}&state={state}"}[tampering]
    post_body = "providerId=facebook.com" if tampering == "named-as-another-provider" else None
    refusal(world, redeem_web(world, {**flow.event, "urlResponse": answer, "postBody": post_body}),
            "INVALID_IDP_RESPONSE", tenant.id)
    assert [r for r in world.idp.token_requests("google") if r.form.get("code") == flow.fields["code"]] == [], \
        "the provider's real code was never exchanged"


@pytest.mark.parametrize("where", ["another-path", "another-host", "another-port", "the-handler"])
def test_a_request_uri_that_is_not_the_flows_continue_uri_is_refused(world, where):
    tenant = provider_tenant(world, "google.com")
    account = new_account(world, "google.com")
    flow = app_flow(world, tenant.id, "google.com", account)
    query = flow.returned_to.split("?", 1)[1]
    elsewhere = {"another-path": "http://localhost:3000/other", "another-host": "http://127.0.0.1:3000/finish",
                 "another-port": "http://localhost:3001/finish", "the-handler": world.handler_url}[where]
    resp = redeem_app(world, AppFlow(flow.created, flow.authorize_url, f"{elsewhere}?{query}"), tenant.id)
    refusal(world, resp, "INVALID_REQUEST_URI", tenant.id)


@pytest.mark.parametrize("redirect_url", ["https://evil.example/", "http://localhost.evil.example:5173/",
                                          "https://evil.example\\@localhost/"])
def test_an_unauthorized_redirect_url_on_a_js_redirect_gets_an_error_page_and_starts_nothing(world, redirect_url):
    tenant = provider_tenant(world, "google.com")
    before = len(world.idp.authorize_requests("google"))
    resp = requests.get(web_handler_url(world, "google.com", tenant_id=tenant.id, auth_type="signInViaRedirect",
                                        redirect_url=redirect_url), allow_redirects=False, timeout=HTTP_TIMEOUT)
    assert error_page_code(resp) == "UNAUTHORIZED_DOMAIN"
    assert len(world.idp.authorize_requests("google")) == before and flows_in(world, tenant.id) == 0


@pytest.mark.parametrize("redirect_url", ["https://evil.example/", "http://localhost.evil.example:5173/"])
def test_an_unauthorized_redirect_url_on_a_js_popup_gets_an_error_page_and_starts_nothing(world, redirect_url):
    """A page, not an event: the SDK sends its own page's URL, so an unauthorized one means the opener is on
    no authorized domain — and then its relay iframe, which only authorized domains may frame
    (frame-ancestors), could not take an event anyway. Nothing goes to the provider."""
    tenant = provider_tenant(world, "google.com")
    before = len(world.idp.authorize_requests("google"))
    url = web_handler_url(world, "google.com", tenant_id=tenant.id, redirect_url=redirect_url)
    resp = requests.get(url, allow_redirects=False, timeout=HTTP_TIMEOUT)
    assert error_page_code(resp) == "UNAUTHORIZED_DOMAIN"
    assert "tessera-auth-event" not in resp.text
    assert len(world.idp.authorize_requests("google")) == before and flows_in(world, tenant.id) == 0


@pytest.mark.parametrize("provider_id", ["github.com", "twitter.com", "apple.com"])
def test_a_provider_without_what_redeems_its_answer_is_refused_before_the_user_goes_there(world, provider_id):
    """A code flow's client secret (Twitter's consumer secret) or Apple's code-flow key is needed to redeem
    the answer: without it the start is refused, instead of the user signing in at the provider for an
    answer Tessera cannot redeem."""
    tenant = Tenant(world.make_tenant()["tenantId"])
    configure_provider(world.admin, world.idp, provider_id, tenant_id=tenant.id, client_secret=None)
    before = len(world.idp.authorize_requests(provider_id.split(".")[0]))
    resp = create_auth_uri(world, provider_id, tenant.id)
    expect_error(resp, "OPERATION_NOT_ALLOWED")
    assert "configured without" in resp.json()["error"]["message"], describe(resp)
    assert flows_in(world, tenant.id) == 0
    assert len(world.idp.authorize_requests(provider_id.split(".")[0])) == before


def test_create_auth_uri_refuses_an_unauthorized_continue_uri(world):
    tenant = provider_tenant(world, "google.com")
    before = len(world.idp.authorize_requests("google"))
    for continue_uri in ("https://evil.example/finish", "http://localhost.evil.example/finish"):
        resp = create_auth_uri(world, "google.com", tenant.id, continueUri=continue_uri)
        expect_error(resp, "UNAUTHORIZED_DOMAIN")
    expect_error(create_auth_uri(world, "google.com", tenant.id, continueUri="not a url"), "INVALID_CONTINUE_URI")
    expect_error(create_auth_uri(world, "google.com", tenant.id, continueUri=None), "MISSING_CONTINUE_URI")
    assert len(world.idp.authorize_requests("google")) == before and flows_in(world, tenant.id) == 0


@pytest.mark.parametrize("continue_uri", ["http://localhost:3000/#/finish", "http://localhost:3000/finish?state=mine"],
                         ids=["hash-routed-page", "page-with-its-own-state-parameter"])
def test_a_continue_uri_create_auth_uri_accepts_leads_to_an_answer_that_redeems(world, continue_uri):
    """Whatever continueUri createAuthUri accepts, the URL the browser is sent back to must redeem: the
    provider's answer has to land where requestUri's query is read (not in the fragment of a hash-routed
    single-page app) and its state has to be the one read (not the page's own ``state`` parameter).
    Refusing such a continueUri up front (INVALID_CONTINUE_URI) would do as well."""
    tenant = provider_tenant(world, "google.com")
    account = new_account(world, "google.com")
    resp = create_auth_uri(world, "google.com", tenant.id, continueUri=continue_uri,
                           customParameter={"login_hint": account.login_hint})
    if resp.status_code == 400:
        expect_error(resp, "INVALID_CONTINUE_URI")
        assert flows_in(world, tenant.id) == 0
        return
    created = expect_ok(resp)
    back = complete_authorization(requests.Session(), created["authUri"], timeout=HTTP_TIMEOUT)
    assert back.status_code == 302, describe(back)
    flow = AppFlow(created, created["authUri"], back.headers["Location"])
    check_user(world, redeem_app(world, flow, tenant.id), tenant.id, "google.com", account)


@pytest.mark.parametrize("path", [HANDLER, EMULATOR_HANDLER])
def test_create_auth_uri_refuses_the_handler_itself_as_continue_uri(world, path):
    """The handler sends an app's flow on to its continueUri; were that the handler (under either of its
    paths), the browser would be sent to itself with the answer, again and again."""
    tenant = provider_tenant(world, "google.com")
    for continue_uri in (world.stack.url + path, world.stack.url + path + "?next=1"):
        expect_error(create_auth_uri(world, "google.com", tenant.id, continueUri=continue_uri), "INVALID_CONTINUE_URI")
    assert flows_in(world, tenant.id) == 0


@pytest.mark.parametrize("app", ["ios-unlisted-scheme", "ios-unlisted-scheme-with-a-listed-app-id",
                                 "ios-unlisted-bundle-and-scheme", "android-unlisted-package"])
def test_a_mobile_app_not_in_the_authorized_apps_gets_a_refusal_page_and_starts_nothing(world, app):
    """The answer goes to whichever app claims the URL scheme (iOS: the reversed clientId, else app-<appId>)
    or the package (Android): a flow starts only when that scheme or package is authorized. The bundle id
    the link names proves nothing, and neither does a listed identifier in a parameter the scheme is not
    made from (the SDK sends clientId or appId; a link with both returns to clientId's scheme)."""
    tenant = provider_tenant(world, "google.com")
    before = len(world.idp.authorize_requests("google"))
    if app == "ios-unlisted-scheme":
        url, _, _ = apple_sdk_url(world, tenant.id, "google.com", "someone", client_id=UNLISTED_CLIENT_ID)
    elif app == "ios-unlisted-scheme-with-a-listed-app-id":
        url, _, _ = apple_sdk_url(world, tenant.id, "google.com", "someone", client_id=UNLISTED_CLIENT_ID,
                                  app_id=ios_app_id(world.stack))
    elif app == "ios-unlisted-bundle-and-scheme":
        url, _, _ = apple_sdk_url(world, tenant.id, "google.com", "someone", client_id=UNLISTED_CLIENT_ID,
                                  bundle="com.evil.app")
    else:
        url, _, _ = android_sdk_url(world, tenant.id, "google.com", "someone", package="com.evil.app")
    resp = requests.get(url, allow_redirects=False, timeout=HTTP_TIMEOUT)
    assert error_page_code(resp) == "UNAUTHORIZED_DOMAIN"
    assert len(world.idp.authorize_requests("google")) == before and flows_in(world, tenant.id) == 0


@pytest.mark.parametrize("path", [EMULATOR_HANDLER, HANDLER, "/emulator/auth/iframe", "/__/auth/iframe"])
@pytest.mark.parametrize("key", ["wrong", "missing"])
def test_a_wrong_api_key_gets_a_400_page(world, path, key):
    tenant = provider_tenant(world, "google.com")
    url = web_handler_url(world, "google.com", tenant_id=tenant.id, api_key="AIza" + secrets.token_hex(16), path=path)
    if key == "missing":
        url = re.sub(r"apiKey=[^&]*&", "", url)
    resp = requests.get(url, allow_redirects=False, timeout=HTTP_TIMEOUT)
    assert error_page_code(resp) == "INVALID_API_KEY"
    assert flows_in(world, tenant.id) == 0


def test_a_disabled_or_unconfigured_provider_is_not_allowed(world):
    """OPERATION_NOT_ALLOWED from createAuthUri, auth/operation-not-allowed as the JS SDK's event and as the
    mobile SDKs' firebaseError; no flow starts."""
    tenant = Tenant(world.make_tenant()["tenantId"])
    configure(world, tenant.id, "google.com", enabled=False)
    configure(world, tenant.id, "apple.com", enabled=False)
    for provider_id in ("google.com", "apple.com", "facebook.com", "oidc.nowhere"):  # the last two: not configured
        expect_error(create_auth_uri(world, provider_id, tenant.id), "OPERATION_NOT_ALLOWED")
        for auth_type in ("signInViaPopup", "signInViaRedirect"):
            resp = requests.get(web_handler_url(world, provider_id, tenant_id=tenant.id, auth_type=auth_type),
                                allow_redirects=False, timeout=HTTP_TIMEOUT)
            refused_event(page_data(resp), "auth/operation-not-allowed", auth_type)
        # An authorized app is told as its SDK reads a refusal: firebaseError in the deep link / the intent.
        url, _, event_id = apple_sdk_url(world, tenant.id, provider_id, "someone")
        data = page_data(requests.get(url, allow_redirects=False, timeout=HTTP_TIMEOUT))
        assert data["mode"] == "app", data
        arguments = apple_callback_arguments(data["url"], apple_callback_scheme(ios_client_id(world.stack), None),
                                             event_id)
        assert "link" not in arguments, arguments
        assert json.loads(arguments["firebaseError"])["code"] == "auth/operation-not-allowed", arguments
        url, _, event_id = android_sdk_url(world, tenant.id, provider_id, "someone")
        data = page_data(requests.get(url, allow_redirects=False, timeout=HTTP_TIMEOUT))
        extras = read_android_intent(data["url"], ANDROID_PACKAGE)
        assert extras["eventId"] == event_id and "link" not in extras, extras
        assert json.loads(extras["firebaseError"])["code"] == "auth/operation-not-allowed", extras
    assert flows_in(world, tenant.id) == 0
    expect_error(create_auth_uri(world, "saml.acme", tenant.id), "INVALID_PROVIDER_ID")
    expect_error(create_auth_uri(world, "example.com", tenant.id), "INVALID_PROVIDER_ID")


def test_too_many_starts_from_one_address_are_refused_and_store_nothing(world):
    """Each start keeps a row until it is redeemed or expires, and anyone with the API key can start one:
    the scope's rateLimits.idpSignInsPerIpPerHour bounds them per client address."""
    tenant = provider_tenant(world, "google.com", rateLimits={"idpSignInsPerIpPerHour": 2})
    for _ in range(2):
        to_provider(world, requests.get(web_handler_url(world, "google.com", tenant_id=tenant.id),
                                        allow_redirects=False, timeout=HTTP_TIMEOUT), "google.com")
    resp = requests.get(web_handler_url(world, "google.com", tenant_id=tenant.id), allow_redirects=False,
                        timeout=HTTP_TIMEOUT)
    refused_event(page_data(resp), "auth/too-many-requests")
    resp = create_auth_uri(world, "google.com", tenant.id)
    expect_error(resp, "TOO_MANY_ATTEMPTS_TRY_LATER")
    assert resp.headers.get("Retry-After", "").isdigit(), describe(resp)
    assert flows_in(world, tenant.id) == 2


def test_a_provider_disabled_between_start_and_redemption_is_refused_at_redemption(world):
    tenant = provider_tenant(world, "google.com")
    account = new_account(world, "google.com")
    flow = web_flow(world, tenant.id, "google.com", account)
    path = idp_config_path(world.stack, "defaultSupportedIdpConfigs", tenant.id, "google.com")
    expect_ok(world.admin.request("PATCH", path, params={"updateMask": "enabled"}, json={"enabled": False}))
    refusal(world, redeem_web(world, flow.event), "OPERATION_NOT_ALLOWED", tenant.id)
    assert [r for r in world.idp.token_requests("google") if r.form.get("code") == flow.fields["code"]] == [], \
        "the code of a disabled provider is never exchanged"


def test_a_provider_token_endpoint_outage_is_unavailable_and_the_flow_is_spent(world):
    tenant = provider_tenant(world, "google.com")
    account = new_account(world, "google.com")
    flow = web_flow(world, tenant.id, "google.com", account)
    world.idp.fail_token_endpoint("google", 500)
    resp = redeem_web(world, flow.event)
    expect_status_error(resp, 503, "UNAVAILABLE")
    assert resp.headers.get("Retry-After", "").isdigit(), describe(resp)
    assert tenant_user_ids(world, tenant.id) == []
    # The flow was consumed when it was redeemed: the same answer again is unknown (sign in again).
    refusal(world, redeem_web(world, flow.event), "INVALID_IDP_RESPONSE", tenant.id)


def test_a_provider_refusing_the_code_is_an_invalid_idp_response(world):
    tenant = provider_tenant(world, "google.com")
    account = new_account(world, "google.com")
    flow = web_flow(world, tenant.id, "google.com", account)
    world.idp.fail_token_endpoint("google", 400)
    refusal(world, redeem_web(world, flow.event), "INVALID_IDP_RESPONSE", tenant.id)


def test_twitter_outages_are_reported_at_the_start_and_at_the_redemption(world):
    tenant = provider_tenant(world, "twitter.com")
    account = new_account(world, "twitter.com")
    world.idp.fail_token_endpoint("twitter", 500, endpoint="request_token")
    resp = requests.get(web_handler_url(world, "twitter.com", tenant_id=tenant.id), allow_redirects=False,
                        timeout=HTTP_TIMEOUT)
    refused_event(page_data(resp), "auth/network-request-failed")
    assert flows_in(world, tenant.id) == 0
    flow = web_flow(world, tenant.id, "twitter.com", account)
    world.idp.fail_token_endpoint("twitter", 500)
    expect_status_error(redeem_web(world, flow.event), 503, "UNAVAILABLE")
    assert tenant_user_ids(world, tenant.id) == []


@pytest.mark.parametrize("kind", ["google.com", "apple.com", "github.com", "twitter.com"])
def test_a_user_who_denies_consent_at_the_provider_is_user_cancelled(world, kind):
    tenant = provider_tenant(world, kind)
    account = new_account(world, kind, deny=True)
    flow = web_flow(world, tenant.id, kind, account)
    assert "code" not in flow.fields and "oauth_verifier" not in flow.fields, flow.fields
    exchanged = len(world.idp.token_requests(kind))
    refusal(world, redeem_web(world, flow.event), "USER_CANCELLED", tenant.id)
    assert len(world.idp.token_requests(kind)) == exchanged, "nothing is exchanged at the provider"


def test_an_expired_flow_is_refused(world):
    tenant = provider_tenant(world, "google.com")
    account = new_account(world, "google.com")
    flow = web_flow(world, tenant.id, "google.com", account)
    assert expire_flow(world, tenant.id, flow.state) == 1
    refusal(world, redeem_web(world, flow.event), "INVALID_IDP_RESPONSE", tenant.id)

    # A flow that expires before the provider answers: the handler's page says so, and sends nothing on.
    http = requests.Session()
    start = http.get(web_handler_url(world, "google.com", tenant_id=tenant.id,
                                     custom={"login_hint": account.login_hint}),
                     allow_redirects=False, timeout=HTTP_TIMEOUT)
    state = dict(parse_qsl(urlsplit(to_provider(world, start, "google.com")).query))["state"]
    assert expire_flow(world, tenant.id, state) == 1
    page = complete_authorization(http, start.headers["Location"], timeout=HTTP_TIMEOUT)
    assert error_page_code(page) == "INVALID_IDP_RESPONSE"
    assert tenant_user_ids(world, tenant.id) == []


def test_housekeeping_prunes_expired_flows_and_keeps_live_ones(world):
    """Abandoned sign-ins do not stay in the directory: one `cleanup-worker run-once` removes a flow past its
    expiry and leaves an unexpired one."""
    from test_cleanup import sweep_until_done  # one `cleanup-worker run-once` (retried while the lease is held)
    tenant = provider_tenant(world, "google.com")
    states = []
    for _ in range(2):
        resp = requests.get(web_handler_url(world, "google.com", tenant_id=tenant.id), allow_redirects=False,
                            timeout=HTTP_TIMEOUT)
        states.append(dict(parse_qsl(urlsplit(to_provider(world, resp, "google.com")).query))["state"])
    assert flows_in(world, tenant.id) == 2 and expire_flow(world, tenant.id, states[0]) == 1
    sweep_until_done(world.stack)
    remaining = psql(world.stack, f"SELECT state_hash FROM auth_flows WHERE tenant_id = '{tenant.id}'").split()
    assert remaining == [hashlib.sha256(states[1].encode()).hexdigest()], remaining


def test_an_id_token_posted_without_the_flows_nonce_is_refused(world):
    """A tenant's ID-token flow: the token that comes back must carry the nonce the flow sent; one minted
    for another sign-in (another nonce, or none) is refused."""
    tenant = provider_tenant(world, "oidc-idtoken")
    provider_id = tenant["oidc-idtoken"]
    account = new_account(world, provider_id)
    for nonce in ("another-nonce-" + secrets.token_hex(8), None):
        flow = web_flow(world, tenant.id, provider_id, account)
        fields = dict(parse_qsl(flow.event["postBody"]))
        fields["id_token"] = world.idp.id_token(provider_id, account.sub, email=account.email, nonce=nonce)
        post_body = "&".join(f"{quote(k)}={quote(v)}" for k, v in fields.items())
        refusal(world, redeem_web(world, {**flow.event, "postBody": post_body}), "MISSING_OR_INVALID_NONCE",
                tenant.id)


def test_a_credential_sign_in_whose_request_uri_carries_the_apps_own_state_still_signs_in(world):
    """The credential path is not a flow's: an app that ran its own OAuth flow sends its page's URL (the
    provider's code and the app's own ``state`` in it) as requestUri, the credential in postBody and no
    sessionId, as Firebase's REST API allows; that signs in, as it did before the flows existed."""
    tenant = provider_tenant(world, "google.com")
    sub, email = f"sub-{uuid.uuid4().hex[:12]}", f"own-{uuid.uuid4().hex[:8]}@example.com"
    token = world.idp.id_token("google", sub, email=email)
    resp = world.client.post("/v1/accounts:signInWithIdp", {
        "requestUri": "http://localhost:3000/oauth/callback?code=4%2F0AbCdEf&state=app-own-state-1234&scope=email",
        "postBody": f"id_token={token}&providerId=google.com", "tenantId": tenant.id, "returnSecureToken": True})
    data = signed_in(resp)
    assert data["federatedId"] == f"https://accounts.google.com/{sub}" and data["email"] == email, describe(resp)


# ======================================================================================
# 4. Custom parameters (the rest of what reaches the provider is checked per provider above)
# ======================================================================================

def test_custom_parameters_pass_through_and_never_override_the_flows_own(world):
    tenant = provider_tenant(world, "google.com")
    account = new_account(world, "google.com")
    custom = {"prompt": "consent", "hd": "example.com", "client_id": "evil-client",
              "redirect_uri": "https://evil.example/cb", "state": "mine", "scope": "admin", "nonce": "n",
              "response_type": "token", "Client_Id": "evil-2", "code_challenge_method": "plain"}
    flow = web_flow(world, tenant.id, "google.com", account, custom=custom,
                    scopes="profile,https://www.googleapis.com/auth/calendar.readonly")
    pairs = parse_qsl(urlsplit(flow.authorize_url).query, keep_blank_values=True)
    names = [name for name, _ in pairs]
    assert len(names) == len(set(names)) and "Client_Id" not in names, pairs
    query = dict(pairs)
    assert query["prompt"] == "consent" and query["hd"] == "example.com", query
    assert query["login_hint"] == account.login_hint, query
    assert query["client_id"] == world.idp.client_id("google") and query["redirect_uri"] == world.handler_url
    assert query["state"] != "mine" and query["nonce"] != "n" and query["response_type"] == "code", query
    assert query["code_challenge_method"] == "S256", query
    assert query["scope"] == "openid email profile https://www.googleapis.com/auth/calendar.readonly", query
    check_user(world, redeem_web(world, flow.event), tenant.id, "google.com", account)


# ======================================================================================
# 5. The relay iframe and the handler pages
# ======================================================================================

def csp(resp: requests.Response) -> dict[str, list[str]]:
    """The Content-Security-Policy header as directive → sources."""
    header = resp.headers.get("Content-Security-Policy")
    assert header, f"no CSP: {describe(resp)}"
    directives = {}
    for part in header.split(";"):
        words = part.split()
        if words:
            directives[words[0]] = words[1:]
    return directives


def scripts_of(html: str) -> list[str]:
    """Every ``<script ...>`` start tag of a page."""
    return re.findall(r"<script\b[^>]*>", html, re.I)


def assert_no_inline_script(resp: requests.Response) -> None:
    for tag in scripts_of(resp.text):
        assert 'src="' in tag or 'type="application/json"' in tag, f"inline script {tag}: {describe(resp)}"
    policy = csp(resp)
    assert "'unsafe-inline'" not in policy.get("script-src", []) and "'unsafe-eval'" not in policy.get("script-src", [])


@pytest.mark.parametrize("path", ["/emulator/auth/iframe", "/__/auth/iframe"])
def test_the_relay_iframe_answers_with_a_csp_framing_it_only_in_authorized_domains(world, path):
    # As gapi loads it: the SDK's parameters, then usegapi and jsh (and a fragment the server never sees).
    query = sdk_query([("apiKey", world.stack.api_key), ("appName", APP_NAME), ("v", JS_SDK_VERSION), ("eid", "p"),
                       ("usegapi", "1"), ("jsh", "m;/_/scs/abc-static/_/js/k=gapi.lb.en.abc/d=1/rs=x/m=__features__")])
    resp = requests.get(f"{world.stack.url}{path}?{query}", timeout=HTTP_TIMEOUT)
    assert resp.status_code == 200 and resp.headers["Content-Type"].startswith("text/html"), describe(resp)
    policy = csp(resp)
    ancestors = policy["frame-ancestors"]
    for source in ("http://localhost:*", "https://localhost:*", "http://127.0.0.1:*", "https://127.0.0.1:*"):
        assert source in ancestors, policy
    assert "*" not in ancestors and "'none'" not in ancestors and not any("evil" in s for s in ancestors), policy
    assert "'self'" in policy["script-src"] and "https://apis.google.com" in policy["script-src"], policy
    assert resp.headers.get("Referrer-Policy") == "no-referrer", describe(resp)
    assert "X-Frame-Options" not in resp.headers, "the relay iframe must be framable by the app's page"
    assert_no_inline_script(resp)
    sources = [re.search(r'src="([^"]+)"', tag).group(1) for tag in scripts_of(resp.text)]
    assert "/__/auth/iframe.js" in sources and "https://apis.google.com/js/api.js" in sources, sources
    missing = requests.get(f"{world.stack.url}{path}?apiKey={world.stack.api_key}", timeout=HTTP_TIMEOUT)
    assert error_page_code(missing) == "INVALID_ARGUMENT"


def test_the_handler_pages_carry_a_strict_csp_and_no_referrer(world):
    tenant = provider_tenant(world, "google.com")
    account = new_account(world, "google.com")
    pages = {
        "event": web_flow(world, tenant.id, "google.com", account).page,
        "app": apple_sdk_flow(world, tenant.id, "google.com", account).page,
        "error": requests.get(web_handler_url(world, "google.com", tenant_id=tenant.id, api_key="wrong"),
                              timeout=HTTP_TIMEOUT),
        "error-event": requests.get(web_handler_url(world, "yahoo.com", tenant_id=tenant.id), timeout=HTTP_TIMEOUT),
    }
    for name, resp in pages.items():
        policy = csp(resp)
        assert policy["script-src"] == ["'self'"] and policy["default-src"] == ["'none'"], (name, policy)
        assert policy["frame-ancestors"] == ["'none'"], (name, policy)
        assert resp.headers.get("Referrer-Policy") == "no-referrer", (name, describe(resp))
        assert resp.headers.get("Cache-Control") == "no-store", (name, describe(resp))
        assert resp.headers.get("X-Content-Type-Options") == "nosniff", (name, describe(resp))
        assert "Cross-Origin-Opener-Policy" not in resp.headers, "the popup must keep its opener"
        assert_no_inline_script(resp)


def test_the_event_block_escapes_markup_from_the_request(world):
    tenant = provider_tenant(world, "google.com")
    account = new_account(world, "google.com")
    app_name = "</script><script>alert(1)</script><!--"
    event_id = "12345</script>&<b>"
    redirect_url = "http://localhost:5173/x?q=</script><script>alert(2)</script>"
    flow = web_flow(world, tenant.id, "google.com", account, app_name=app_name, event_id=event_id,
                    redirect_url=redirect_url)
    html = flow.page.text
    assert "<script>alert" not in html and "<!--" not in html and "<b>" not in html, html
    assert len(re.findall(r"</script>", html)) == len(scripts_of(html)), "no value closes a script element"
    assert flow.data["appName"] == app_name and flow.event["eventId"] == event_id, flow.data
    assert unquote(flow.data["redirectUrl"]) == redirect_url, flow.data
    check_user(world, redeem_web(world, flow.event), tenant.id, "google.com", account)
    # An error event echoes them as safely.
    resp = requests.get(web_handler_url(world, "yahoo.com", tenant_id=tenant.id, app_name=app_name,
                                        event_id=event_id), timeout=HTTP_TIMEOUT)
    assert "<script>alert" not in resp.text, resp.text
    assert refused_event(page_data(resp), "auth/operation-not-allowed")["eventId"] == event_id


# ======================================================================================
# 6. Authorized domains as project configuration
# ======================================================================================

def put_back_default_domains(world: World) -> None:
    """PATCH with the mask and no value: back to the deployment's default (localhost, 127.0.0.1)."""
    resp = world.admin.patch_config({}, "authorizedDomains")
    assert expect_ok(resp)["authorizedDomains"] == DEFAULT_DOMAINS, describe(resp)


def test_authorized_domains_are_project_config_that_governs_every_continue_url(world):
    """Setting the project config's authorizedDomains changes what the handler's redirectUrl, createAuthUri's
    continueUri and sendOobCode's continueUrl accept, the relay iframe's frame-ancestors and what
    GET /v1/projects answers; PATCH with the mask and no value goes back to the deployment's default. The
    list set keeps localhost and 127.0.0.1 (other suites run beside this one) and is put back in any case."""
    tenant = provider_tenant(world, "google.com", allowPasswordSignup=True, enableEmailLinkSignin=True)
    app = "https://app.example.com/login"
    sub = "https://eu.app.example.com/login"

    def email_link(url: str) -> str:
        """An admin's email-link sign-in link whose continueUrl is ``url`` (checked against the domains)."""
        path = f"/v1/projects/{world.stack.project_id}/tenants/{tenant.id}/accounts:sendOobCode"
        resp = world.admin.request("POST", path, json={
            "requestType": "EMAIL_SIGNIN", "email": f"link-{uuid.uuid4().hex[:8]}@example.com",
            "continueUrl": url, "returnOobLink": True})
        return expect_ok(resp)["oobLink"]

    def offers_the_app(link: str) -> bool:
        """Whether the action page (a GET uses nothing) offers to open the app at the link's continueUrl."""
        page = requests.get(link, timeout=HTTP_TIMEOUT)
        assert page.status_code == 200, describe(page)
        return 'id="open-app" href="https://app.example.com/login?' in page.text

    def handler(url: str) -> requests.Response:
        return requests.get(web_handler_url(world, "google.com", tenant_id=tenant.id, auth_type="signInViaRedirect",
                                            redirect_url=url), allow_redirects=False, timeout=HTTP_TIMEOUT)

    def oob(url: str) -> requests.Response:
        return world.client.post("/v1/accounts:sendOobCode", {
            "requestType": "PASSWORD_RESET", "email": f"nobody-{uuid.uuid4().hex[:8]}@example.com",
            "tenantId": tenant.id, "continueUrl": url})

    def iframe_ancestors() -> list[str]:
        resp = requests.get(f"{world.stack.url}/__/auth/iframe?apiKey={world.stack.api_key}&appName=x",
                            timeout=HTTP_TIMEOUT)
        return csp(resp)["frame-ancestors"]

    def public_domains() -> list[str]:
        return expect_ok(world.client.request("GET", "/v1/projects"))["authorizedDomains"]

    assert expect_ok(world.admin.get_config())["authorizedDomains"] == DEFAULT_DOMAINS
    assert public_domains() == DEFAULT_DOMAINS
    assert error_page_code(handler(app)) == "UNAUTHORIZED_DOMAIN"
    expect_error(create_auth_uri(world, "google.com", tenant.id, continueUri=app), "UNAUTHORIZED_DOMAIN")
    expect_error(oob(app), "UNAUTHORIZED_DOMAIN")
    try:
        wanted = [*DEFAULT_DOMAINS, "app.example.com"]
        resp = world.admin.patch_config({"authorizedDomains": wanted}, "authorizedDomains")
        assert expect_ok(resp)["authorizedDomains"] == wanted, describe(resp)
        assert expect_ok(world.admin.get_config())["authorizedDomains"] == wanted
        assert public_domains() == wanted
        for url in (app, sub):
            to_provider(world, handler(url), "google.com")
            expect_ok(create_auth_uri(world, "google.com", tenant.id, continueUri=url))
            expect_ok(oob(url))
        assert "https://app.example.com:*" in iframe_ancestors() and "http://localhost:*" in iframe_ancestors()
        assert error_page_code(handler("https://example.com/")) == "UNAUTHORIZED_DOMAIN"
        link = email_link(app)
        assert offers_the_app(link), "the action page follows a continueUrl on an authorized domain"
    finally:
        put_back_default_domains(world)
    # The same link, once the domain is no longer authorized: the page no longer offers it.
    assert not offers_the_app(link)
    admin_refused = world.admin.request(
        "POST", f"/v1/projects/{world.stack.project_id}/tenants/{tenant.id}/accounts:sendOobCode",
        json={"requestType": "EMAIL_SIGNIN", "email": "x@example.com", "continueUrl": app, "returnOobLink": True})
    expect_error(admin_refused, "UNAUTHORIZED_DOMAIN")
    assert expect_ok(world.admin.get_config())["authorizedDomains"] == DEFAULT_DOMAINS
    assert public_domains() == DEFAULT_DOMAINS
    assert error_page_code(handler(app)) == "UNAUTHORIZED_DOMAIN"
    expect_error(oob(app), "UNAUTHORIZED_DOMAIN")
    assert not any("example.com" in source for source in iframe_ancestors())


@pytest.mark.parametrize("invalid", ["https://x/", "*.x", "a b", "app.example.com/path", "user@app.example.com", ""])
def test_an_invalid_authorized_domain_is_refused_and_changes_nothing(world, invalid):
    try:
        resp = world.admin.patch_config({"authorizedDomains": [*DEFAULT_DOMAINS, invalid]}, "authorizedDomains")
        expect_error(resp, "INVALID_CONFIG")
        assert expect_ok(world.admin.get_config())["authorizedDomains"] == DEFAULT_DOMAINS
    finally:
        if expect_ok(world.admin.get_config())["authorizedDomains"] != DEFAULT_DOMAINS:
            put_back_default_domains(world)
