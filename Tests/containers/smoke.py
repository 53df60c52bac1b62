"""End-user and admin calls against a Tessera deployment's ingress, for scripts/test-containers (the
compose stack and the Kubernetes manifests' pods). Standard library only: it runs with the host's
python3, outside the test venv.

    python3 Tests/containers/smoke.py PUBLIC_URL ADMIN_URL [PRIVILEGED_URL]

Reads TESSERA_API_KEY, TESSERA_ADMIN_TOKEN and TESSERA_PROJECT_ID from the environment. Through the
admin plane it creates a tenant (password and anonymous sign-up on); through the public plane an
anonymous sign-up, a refresh of its refresh token, a password sign-up and sign-in, and a lookup with the
ID token; through the admin plane again, a lookup of those users with the admin bearer (the admin API's
accounts:lookup and the privileged end-user form, on PRIVILEGED_URL when given: the token service's admin
port, where no ingress routes the admin plane), and the tenant deleted. Prints one line per call;
exits 1 at the first failure."""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request
import uuid


def call(method: str, url: str, body: dict | None = None, bearer: str | None = None,
         form: str | None = None) -> dict:
    headers = {}
    data = None
    if form is not None:
        headers["Content-Type"] = "application/x-www-form-urlencoded"
        data = form.encode()
    elif body is not None:
        headers["Content-Type"] = "application/json"
        data = json.dumps(body).encode()
    if bearer:
        headers["Authorization"] = f"Bearer {bearer}"
    request = urllib.request.Request(url, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=15) as response:
            text = response.read().decode()
            status = response.status
    except urllib.error.HTTPError as error:
        text, status = error.read().decode(), error.code
    except OSError as error:
        sys.exit(f"smoke: {method} {url.split('?')[0]}: {error}")
    if status != 200:
        sys.exit(f"smoke: {method} {url.split('?')[0]} answered HTTP {status}: {text[:400]}")
    print(f"ok  {method} {url.split('?')[0]}", flush=True)
    return json.loads(text) if text else {}


def main() -> None:
    public, admin = sys.argv[1].rstrip("/"), sys.argv[2].rstrip("/")
    privileged = (sys.argv[3] if len(sys.argv) > 3 else admin).rstrip("/")
    key, token, project = (os.environ["TESSERA_API_KEY"], os.environ["TESSERA_ADMIN_TOKEN"],
                           os.environ["TESSERA_PROJECT_ID"])
    tenants = f"{admin}/v2/projects/{project}/tenants"
    tenant = call("POST", tenants, {"displayName": "container-smoke", "allowPasswordSignup": True,
                                    "enableAnonymousUser": True}, bearer=token)["tenantId"]

    def end_user(path: str, body: dict) -> dict:
        return call("POST", f"{public}/v1/{path}?key={key}", {**body, "tenantId": tenant})

    anonymous = end_user("accounts:signUp", {"returnSecureToken": True})
    assert anonymous["idToken"] and anonymous["refreshToken"], anonymous
    refreshed = call("POST", f"{public}/v1/token?key={key}",
                     form=f"grant_type=refresh_token&refresh_token={anonymous['refreshToken']}")
    assert refreshed["user_id"] == anonymous["localId"] and refreshed["id_token"], refreshed

    email = f"smoke-{uuid.uuid4().hex[:10]}@example.com"
    end_user("accounts:signUp", {"email": email, "password": "container smoke 1"})
    signed_in = end_user("accounts:signInWithPassword", {"email": email, "password": "container smoke 1",
                                                         "returnSecureToken": True})
    [me] = end_user("accounts:lookup", {"idToken": signed_in["idToken"]})["users"]
    assert me["email"] == email, me

    found = call("POST", f"{admin}/v1/projects/{project}/tenants/{tenant}/accounts:lookup",
                 {"localId": [anonymous["localId"], signed_in["localId"]]}, bearer=token)["users"]
    assert sorted(user["localId"] for user in found) == sorted([anonymous["localId"], signed_in["localId"]]), found
    [by_email] = call("POST", f"{privileged}/v1/accounts:lookup", {"tenantId": tenant, "email": [email]},
                      bearer=token)["users"]
    assert by_email["localId"] == signed_in["localId"], by_email
    call("DELETE", f"{tenants}/{tenant}", bearer=token)
    print(f"smoke: tenant {tenant}: sign-ups, a refresh, a sign-in and lookups on both planes passed")


if __name__ == "__main__":
    main()
