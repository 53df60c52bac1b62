"""Caller identification (API key, admin bearer) and the Google error envelope (docs/protocol/README.md#transport-conventions, #errors)."""

from __future__ import annotations

import requests

from conftest import HTTP_TIMEOUT, describe, expect_status_error



def test_unknown_routes_answer_404_in_google_shape(stack, client):
    for resp in (
        client.post("/v1/accounts:frobnicate", {}),
        client.request("GET", "/v1/no/such/thing"),
        client.request("GET", "/definitely/not/a/route", key=None),
        requests.post(stack.url + "/v2/projects/" + stack.project_id + "/nothingHere",
                      headers={"Authorization": f"Bearer {stack.admin_token}"}, json={},
                      timeout=HTTP_TIMEOUT),
    ):
        err = expect_status_error(resp, 404, "NOT_FOUND")
        assert err["message"] == "Not Found", describe(resp)

