"""The two planes of the ingress (docs/protocol/admin.md#the-admin-plane), walked from the services' own route tables: every route
of the token service and the directory is served on exactly one plane and answers 404 on the other;
the internal API and /metrics are on neither. A route that demands an admin credential is on the
admin plane whatever its path, so a new admin route cannot land on the public plane by accident. A
bearer sent to the public plane never reaches a service."""

from __future__ import annotations

import re

import pytest
import requests

from conftest import HTTP_TIMEOUT, describe, expect_ok

# The admin API (docs/protocol/admin.md#the-admin-plane, #tesseras-own-admin-resources: Tessera's own
# resources are under it too), the v3 admin rpcs and the admin console (issue #25).
ADMIN = re.compile(r"^/(identitytoolkit\.googleapis\.com/)?(v[12]/projects/|v2/defaultSupportedIdps$)"
                   r"|^/(www\.googleapis\.com/)?identitytoolkit/v3/relyingparty/(downloadAccount|uploadAccount)$"
                   r"|^/console(/|$)")
# For the services themselves and the operator's scraper, on the service ports only.
NEITHER = re.compile(r"^/(internal/|metrics$)")
# End-user operations that also have a privileged form (docs/protocol/README.md#transport-conventions: an
# admin bearer instead of the API key): the end-user form on the public plane, the privileged one (with a
# bearer) on the admin plane; on v1 and as their v3 rpcs (the emulator's rest:53: an admin's
# getOobConfirmationCode).
PRIVILEGED_FORM = re.compile(
    r"^/((identitytoolkit\.googleapis\.com/)?v1/accounts:(lookup|update|delete|sendOobCode)"
    r"|(www\.googleapis\.com/)?identitytoolkit/v3/relyingparty/"
    r"(getAccountInfo|setAccountInfo|deleteAccount|getOobConfirmationCode))$")


def route_table(stack, base_url: str | None) -> list[tuple[str, str]]:
    assert base_url and stack.internal_secret, "the env file must name the service URLs and the internal secret"
    data = expect_ok(requests.get(base_url + "/internal/v1/routes", timeout=HTTP_TIMEOUT,
                                  headers={"X-Tessera-Internal": stack.internal_secret}))
    return [(r["method"], r["path"]) for r in data["routes"]]


def concrete(stack, template: str) -> str:
    path = template.replace("{project}", stack.project_id)
    path = re.sub(r"\{[^}]+\}", "x", path)
    return path.replace("**", "x").replace("*", "x")


def plane_of(path: str) -> str:
    if NEITHER.search(path):
        return "neither"
    return "admin" if ADMIN.search(path) else "public"


def refused_by(resp: requests.Response) -> str | None:
    """The plane whose ingress refused the path (its 404 says so), or None when a service answered."""
    if resp.status_code == 404:
        return resp.headers.get("X-Tessera-Plane")
    return None


@pytest.fixture(scope="module")
def routes(stack) -> list[tuple[str, str, str]]:
    table = [(service, method, path)
             for service, url in (("token-service", stack.token_service_url),
                                  ("user-directory", stack.directory_url))
             for method, path in route_table(stack, url)]
    assert len(table) > 100, table
    return table


def call(base: str, method: str, path: str, **kwargs) -> requests.Response:
    body = {} if method in ("POST", "PATCH", "PUT") else None
    return requests.request(method, base + path, json=body, timeout=HTTP_TIMEOUT, **kwargs)


def test_every_route_is_on_exactly_one_plane(stack, routes):
    mistakes = []
    for service, method, template in routes:
        if method == "HEAD":
            continue
        path = concrete(stack, template)
        plane = plane_of(template)
        # Wrong credentials: a route that is reached answers the service's own error and changes
        # nothing (with real ones, a PATCH of the config with {} would reset it).
        public = call(stack.url, method, path, params={"key": "not-the-api-key"})
        admin = call(stack.admin_url, method, path, headers={"Authorization": "Bearer not-a-credential"})
        expected = {"public": (None, "admin"), "admin": ("public", None), "neither": ("public", "admin")}[plane]
        if PRIVILEGED_FORM.search(template):
            expected = (None, None)
            # Without a bearer it is no admin call: not on the admin plane.
            anonymous = call(stack.admin_url, method, path, params={"key": "not-the-api-key"})
            if refused_by(anonymous) != "admin":
                mistakes.append(f"{service} {method} {template}: admin plane without a bearer "
                                f"{anonymous.status_code} {refused_by(anonymous)}")
        seen = (refused_by(public), refused_by(admin))
        if plane != "public":
            # The services route a path with a trailing slash as the path: that form must not get
            # through the public plane either.
            slashed = call(stack.url, method, path + "/", params={"key": "not-the-api-key"})
            if not (slashed.status_code == 404 and refused_by(slashed) in ("public", None)) or \
                    refused_by(slashed) is None and slashed.json()["error"]["message"] != "Not Found":
                mistakes.append(f"{service} {method} {template}/ ({plane}): public {slashed.status_code}")
        if seen != expected:
            mistakes.append(f"{service} {method} {template} ({plane}): public {public.status_code} "
                            f"{refused_by(public)}, admin {admin.status_code} {refused_by(admin)}")
    assert not mistakes, "\n".join(mistakes)


def test_a_route_that_demands_an_admin_credential_is_an_admin_route(stack, routes):
    """Asked directly (on the service's port) without any credential, every route that answers with the
    admin API's 401 must be one the ingress keeps on the admin plane."""
    for service, method, template in routes:
        if method == "HEAD" or plane_of(template) != "public":
            continue
        base = stack.token_service_url if service == "token-service" else stack.directory_url
        resp = call(base, method, concrete(stack, template))
        if resp.status_code == 401:
            pytest.fail(f"{service} {method} {template} demands an admin credential but is on the public "
                        f"plane: {describe(resp)}")


def test_the_public_plane_drops_bearer_credentials(stack, client, make_tenant):
    """A privileged call on an end-user path is an end-user call on the public plane: the bearer never
    reaches the token service, so the API key is what counts."""
    tenant = make_tenant()["tenantId"]
    session = client.sign_up_anonymous(tenant)
    owner = {"Authorization": f"Bearer {stack.admin_token}"}
    # Without the key, the admin secret does not make it an admin lookup.
    resp = requests.post(stack.url + "/v1/accounts:lookup", json={"localId": [session.local_id], "tenantId": tenant},
                         headers=owner, timeout=HTTP_TIMEOUT)
    assert resp.status_code == 403 and resp.json()["error"]["status"] == "PERMISSION_DENIED", describe(resp)
    # With the key it is what it always was: a lookup by ID token.
    resp = requests.post(stack.url + "/v1/accounts:lookup", params={"key": stack.api_key}, headers=owner,
                         json={"idToken": session.id_token, "tenantId": tenant}, timeout=HTTP_TIMEOUT)
    assert expect_ok(resp)["users"][0]["localId"] == session.local_id


def test_a_token_service_with_an_admin_listener_believes_no_bearer_on_its_public_port(stack, client, make_tenant):
    """Where the ingress cannot drop a header (ingress-nginx without snippets), the token service does it
    (TESSERA_ADMIN_HTTP_PORT): on its main port an admin bearer is not believed — the privileged lookup is
    an end-user call that needs the API key, and createSessionCookie has no credential — while the admin
    port, which only the admin Ingress reaches, serves both."""
    from test_secrets import free_port, running

    tenant = make_tenant()["tenantId"]
    session = client.sign_up_anonymous(tenant)
    owner = {"Authorization": f"Bearer {stack.admin_token}"}
    admin_port = free_port()
    with running(stack, "token-service", TESSERA_ADMIN_HTTP_PORT=str(admin_port)) as service:
        lookup = {"localId": [session.local_id], "tenantId": tenant}
        resp = requests.post(service.base + "/v1/accounts:lookup", json=lookup, headers=owner, timeout=HTTP_TIMEOUT)
        assert resp.status_code == 403 and resp.json()["error"]["status"] == "PERMISSION_DENIED", describe(resp)
        cookie_path = f"/v1/projects/{stack.project_id}/tenants/{tenant}:createSessionCookie"
        resp = requests.post(service.base + cookie_path, json={"idToken": session.id_token}, headers=owner,
                             timeout=HTTP_TIMEOUT)
        assert resp.status_code == 401 and resp.json()["error"]["status"] == "UNAUTHENTICATED", describe(resp)
        # The end-user form still works on the main port.
        resp = requests.post(service.base + "/v1/accounts:lookup", params={"key": stack.api_key}, headers=owner,
                             json={"idToken": session.id_token, "tenantId": tenant}, timeout=HTTP_TIMEOUT)
        assert expect_ok(resp)["users"][0]["localId"] == session.local_id
        # The admin port believes the bearer.
        admin_base = f"http://127.0.0.1:{admin_port}"
        resp = requests.post(admin_base + "/v1/accounts:lookup", json=lookup, headers=owner, timeout=HTTP_TIMEOUT)
        assert expect_ok(resp)["users"][0]["localId"] == session.local_id
        resp = requests.post(admin_base + cookie_path, json={"idToken": session.id_token}, headers=owner,
                             timeout=HTTP_TIMEOUT)
        assert expect_ok(resp)["sessionCookie"].count(".") == 2


def test_the_admin_api_works_on_the_admin_plane_only(stack, admin):
    path = f"/v2/projects/{stack.project_id}/config"
    expect_ok(admin.request("GET", path))
    resp = requests.get(stack.url + path, headers={"Authorization": f"Bearer {stack.admin_token}"},
                        timeout=HTTP_TIMEOUT)
    assert resp.status_code == 404 and resp.headers.get("X-Tessera-Plane") == "public", describe(resp)
    assert resp.json()["error"]["status"] == "NOT_FOUND"
    # End-user calls are not on the admin plane.
    resp = requests.post(stack.admin_url + "/v1/accounts:signUp", params={"key": stack.api_key}, json={},
                         timeout=HTTP_TIMEOUT)
    assert resp.status_code == 404 and resp.headers.get("X-Tessera-Plane") == "admin", describe(resp)


def test_owner_is_refused_unless_switched_on(stack, admin):
    """`Bearer owner` works on this stack because it sets TESSERA_OWNER_TOKEN_SCOPE=project for the Admin
    SDK tests; every such call is audited as `owner`. (The refusal without the switch is checked by
    test_secrets.py, which starts a directory of its own.)"""
    assert stack.env.get("TESSERA_OWNER_TOKEN_SCOPE") == "project"
    owner = requests.Session()
    owner.headers["Authorization"] = "Bearer owner"
    path = f"/v2/projects/{stack.project_id}/tenants"
    resp = owner.post(stack.admin_url + path, json={"displayName": "owner-made"}, timeout=HTTP_TIMEOUT)
    created = expect_ok(resp)
    try:
        request_id = resp.headers["X-Request-ID"]
        entries, token = [], None
        while True:
            page = expect_ok(admin.request("GET", f"/v2/projects/{stack.project_id}/auditLog",
                                           params={"pageSize": 1000, **({"pageToken": token} if token else {})}))
            entries += [e for e in page.get("entries", []) if e.get("requestId") == request_id]
            token = page.get("nextPageToken")
            if not token:
                break
        assert [e["actor"] for e in entries] == ["owner"], entries
    finally:
        admin.delete_tenant(created["tenantId"])
