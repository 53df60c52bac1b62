"""The legacy Gitkit v3 API through the ingress (docs/protocol/accounts.md#legacy-v3-paths, docs/protocol/admin.md#the-admin-plane):
the admin rpcs `downloadAccount` / `uploadAccount` are served on the admin plane only. What the token service
answers on both v3 prefixes (every rpc of the table, the admin export and import with `targetProjectId`,
the project config and session-cookie keys, the v2 reCAPTCHA, password-policy and revocation answers,
`autoCreate: false`, `federatedId`) is tested in process: Tests/TesseraTests/InProcess/InProcessLegacyV3Tests.swift.
The SDKs' call sequences over these paths are in test_sdk_conformance.py."""

from __future__ import annotations

import requests

from conftest import HTTP_TIMEOUT, describe


def test_the_v3_admin_rpcs_are_not_on_the_public_plane(stack):
    """Even with an admin credential and the API key, the public plane's ingress answers the v3 admin
    rpcs itself with a 404 (docs/protocol/admin.md#the-admin-plane)."""
    resp = requests.post(f"{stack.url}/www.googleapis.com/identitytoolkit/v3/relyingparty/downloadAccount",
                         params={"key": stack.api_key}, json={"targetProjectId": stack.project_id},
                         headers={"Content-Type": "application/json", "Authorization": f"Bearer {stack.admin_token}"},
                         timeout=HTTP_TIMEOUT)
    assert resp.status_code == 404 and resp.headers.get("X-Tessera-Plane") == "public", describe(resp)
