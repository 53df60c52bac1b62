"""Prometheus metrics on every service (issue #7, observability): HTTP answers by route template,
status and error code, tokens issued by type and provider, internal-call latency, the password-hash
queue; `/metrics` is served on each service's own port and not through the ingress."""

from __future__ import annotations

import uuid

import requests

from conftest import HTTP_TIMEOUT, expect_error, expect_ok, scrape, value

def test_token_service_counts_requests_errors_and_tokens(stack, client, make_tenant):
    url = stack.env["TESSERA_TOKEN_SERVICE_URL"]
    tenant_id = make_tenant(allowPasswordSignup=True)["tenantId"]
    before = scrape(url)
    client.sign_up_anonymous(tenant_id)
    email = f"metrics-{uuid.uuid4().hex[:10]}@example.com"
    expect_ok(client.post("/v1/accounts:signUp", {"email": email, "password": "correct horse",
                                                  "tenantId": tenant_id, "returnSecureToken": True}))
    expect_error(client.post("/v1/accounts:signInWithPassword", {"email": email, "password": "wrong password",
                                                                 "tenantId": tenant_id}),
                 "INVALID_PASSWORD", "INVALID_LOGIN_CREDENTIALS")
    after = scrape(url)

    def grew(name: str, by: float = 1, **labels: str) -> None:
        delta = value(after, name, **labels) - value(before, name, **labels)
        assert delta >= by, f"{name}{labels} grew by {delta}"

    grew("tessera_http_requests_total", method="POST", route="/v1/accounts:signUp", status="200", by=2)
    grew("tessera_http_requests_total", route="/v1/accounts:signInWithPassword", status="400")
    grew("tessera_http_errors_total", route="/v1/accounts:signInWithPassword")
    grew("tessera_tokens_issued_total", type="id_token", provider="anonymous")
    grew("tessera_tokens_issued_total", type="refresh_token", provider="password")
    grew("tessera_internal_call_duration_seconds_count", path="/internal/v1/accounts:signInWithPassword",
         outcome="answered")
    grew("tessera_http_request_duration_seconds_count", route="/v1/accounts:signUp", by=2)


def test_directory_labels_routes_by_template_and_reports_the_hash_queue(stack, admin, client, make_tenant):
    url = stack.env["TESSERA_DIRECTORY_URL"]
    tenant_id = make_tenant(allowPasswordSignup=True)["tenantId"]
    expect_ok(admin.get_tenant(tenant_id))
    expect_ok(client.post("/v1/accounts:signUp", {"email": f"hash-{uuid.uuid4().hex[:10]}@example.com",
                                                  "password": "correct horse", "tenantId": tenant_id}))
    samples = scrape(url)
    routes = {l.get("route") for n, l, _ in samples if n == "tessera_http_requests_total"}
    assert "/v2/projects/{project}/tenants/{tenant}" in routes, routes
    assert not any(tenant_id in (r or "") for r in routes), "route labels must be templates, never ids"
    # The password sign-up went through the hashing pool.
    assert value(samples, "tessera_password_hash_wait_seconds_count") > 0
    assert any(n == "tessera_password_hash_queue_depth_operations" for n, _, _ in samples)


def test_metrics_are_not_served_through_the_ingress(stack):
    resp = requests.get(stack.url + "/metrics", timeout=HTTP_TIMEOUT)
    assert resp.status_code == 404, resp.text
    assert resp.json()["error"]["status"] == "NOT_FOUND"
