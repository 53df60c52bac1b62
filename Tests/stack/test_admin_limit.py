"""The failed-admin-authentication limit (issue 35; docs/architecture.md, "The admin authentication
limit"), with a directory and a token service of their own (limit 3; the test stack switches the limit
off, since its many deliberate wrong credentials all come from 127.0.0.1). Both trust 127.0.0.1 as their
proxy, so each call names its client address in X-Forwarded-For, as the ingress does.

- Every admin authentication counts against the real client, whichever service first sees it: the Admin
  SDKs' privileged calls on client paths (`accounts:lookup|update|delete|sendOobCode`, v3
  `downloadAccount`/`uploadAccount`), which the token service relays, and `:createSessionCookie`, which
  it checks through `admin:check`, are charged to the caller's address, never to the token service's.
- A blocked address gets TOO_MANY_ATTEMPTS_TRY_LATER for unknown credentials only: a known credential
  still works from it, so nobody's wrong guesses lock the admins out.
- The relayed address is believed only beside the internal secret."""

from __future__ import annotations

import secrets

import pytest
import requests

from conftest import HTTP_TIMEOUT, describe, expect_ok
from test_secrets import STRONG, running


def random_address(_role: str = "") -> str:
    """An address no other run has used: the counts live in the stack's database for the hour."""
    return "2001:db8:" + ":".join(secrets.token_hex(2) for _ in range(6))


@pytest.fixture(scope="module")
def services(stack):
    """A directory (limit 3) and a token service that relays to it."""
    with running(stack, "user-directory", "/readyz", TESSERA_ADMIN_TOKEN=STRONG,
                 TESSERA_ADMIN_AUTH_FAILURES_PER_HOUR="3", TESSERA_TRUSTED_PROXIES="127.0.0.1") as directory:
        with running(stack, "token-service", "/healthz", TESSERA_DIRECTORY_URL=directory.base,
                     TESSERA_TRUSTED_PROXIES="127.0.0.1",
                     TESSERA_SESSION_COOKIE_KEYS_DIR=stack.env.get("TESSERA_SESSION_COOKIE_KEYS_DIR")) as tokens:
            yield directory, tokens


def admin_get(directory, stack, secret: str, address: str, extra: dict | None = None) -> requests.Response:
    headers = {"Authorization": f"Bearer {secret}", "X-Forwarded-For": address}
    headers.update(extra or {})
    return requests.get(f"{directory.base}/v2/projects/{stack.project_id}/config", timeout=HTTP_TIMEOUT,
                        headers=headers)


def relayed_lookup(tokens, stack, secret: str, address: str) -> requests.Response:
    """The Admin SDKs' `getUser`: a privileged `accounts:lookup` on the client path."""
    return requests.post(f"{tokens.base}/v1/accounts:lookup", timeout=HTTP_TIMEOUT,
                         json={"localId": ["nobody-" + secrets.token_hex(4)]},
                         headers={"Authorization": f"Bearer {secret}", "X-Forwarded-For": address})


def relayed_download(tokens, stack, secret: str, address: str) -> requests.Response:
    """The legacy Admin SDKs' `listUsers`: v3 `downloadAccount`."""
    return requests.post(f"{tokens.base}/identitytoolkit/v3/relyingparty/downloadAccount", timeout=HTTP_TIMEOUT,
                         json={"targetProjectId": stack.project_id, "maxResults": 1},
                         headers={"Authorization": f"Bearer {secret}", "X-Forwarded-For": address})


def session_cookie(tokens, stack, secret: str, address: str) -> requests.Response:
    return requests.post(f"{tokens.base}/v1/projects/{stack.project_id}:createSessionCookie", timeout=HTTP_TIMEOUT,
                         json={"idToken": "not-a-token", "validDuration": 3600},
                         headers={"Authorization": f"Bearer {secret}", "X-Forwarded-For": address})


def wrong() -> str:
    return "wrong-" + secrets.token_hex(16)


def is_blocked(response: requests.Response) -> bool:
    return (response.status_code == 400 and response.json()["error"]["message"] == "TOO_MANY_ATTEMPTS_TRY_LATER"
            and int(response.headers.get("Retry-After", "0")) > 0)


def test_an_address_past_the_limit_is_refused_unknown_credentials_but_not_a_known_one(services, stack):
    directory, _ = services
    guesser, bystander = random_address("203.0.113"), random_address("198.51.100")
    for _ in range(3):
        assert admin_get(directory, stack, wrong(), guesser).status_code == 401
    refused = admin_get(directory, stack, wrong(), guesser)
    assert is_blocked(refused), describe(refused)
    # A valid credential is never locked out by someone else's guesses, even from the same address
    # (a NAT, the ingress of a misconfigured deployment).
    expect_ok(admin_get(directory, stack, STRONG, guesser))
    assert is_blocked(admin_get(directory, stack, wrong(), guesser)), "still blocked for unknown credentials"
    assert admin_get(directory, stack, wrong(), bystander).status_code == 401, "other addresses are not affected"
    expect_ok(admin_get(directory, stack, STRONG, bystander))


def test_relayed_admin_calls_are_charged_to_the_caller_not_to_the_token_service(services, stack):
    directory, tokens = services
    guesser, bystander = random_address("203.0.113"), random_address("198.51.100")
    for attempt in range(3):
        call = relayed_lookup if attempt % 2 == 0 else relayed_download
        answer = call(tokens, stack, wrong(), guesser)
        assert answer.status_code == 401, describe(answer)
    # The guesser is blocked on every path: relayed, and the admin plane itself (one count per address).
    assert is_blocked(relayed_lookup(tokens, stack, wrong(), guesser))
    assert is_blocked(relayed_download(tokens, stack, wrong(), guesser))
    assert is_blocked(admin_get(directory, stack, wrong(), guesser))
    # Nobody else is: before the fix, the three guesses above were the token service's, and every
    # admin's relayed call was refused for the hour.
    assert relayed_lookup(tokens, stack, wrong(), bystander).status_code == 401
    expect_ok(relayed_lookup(tokens, stack, STRONG, bystander))
    expect_ok(relayed_download(tokens, stack, STRONG, bystander))
    # The guesser's own valid credential still works through the relay.
    expect_ok(relayed_lookup(tokens, stack, STRONG, guesser))


def test_a_blocked_caller_cannot_keep_guessing_through_the_relay(services, stack):
    directory, tokens = services
    guesser = random_address("192.0.2")
    for _ in range(3):
        assert admin_get(directory, stack, wrong(), guesser).status_code == 401
    for call in (relayed_lookup, relayed_download, session_cookie):
        answer = call(tokens, stack, wrong(), guesser)
        assert is_blocked(answer), (call.__name__, describe(answer))


def test_session_cookie_admin_checks_are_counted_and_limited(services, stack):
    directory, tokens = services
    guesser = random_address("203.0.113")
    for _ in range(3):
        answer = session_cookie(tokens, stack, wrong(), guesser)
        assert answer.status_code == 401, describe(answer)
    assert is_blocked(session_cookie(tokens, stack, wrong(), guesser))
    assert is_blocked(admin_get(directory, stack, wrong(), guesser)), "counted against the same address"
    # The right credential passes the check and reaches the ID token's.
    answer = session_cookie(tokens, stack, STRONG, guesser)
    assert answer.status_code == 400 and answer.json()["error"]["message"].startswith("INVALID_ID_TOKEN"), \
        describe(answer)


@pytest.mark.parametrize("secret_header", [None, "wrong-internal-secret"])
def test_a_relayed_address_is_believed_only_beside_the_internal_secret(services, stack, secret_header):
    """A caller that reaches the directory cannot pin its failures on someone else's address."""
    directory, _ = services
    guesser, victim = random_address("203.0.113"), random_address("198.51.100")
    forged = {"X-Tessera-Client-Address": victim}
    if secret_header:
        forged["X-Tessera-Internal"] = secret_header
    for _ in range(3):
        assert admin_get(directory, stack, wrong(), guesser, forged).status_code == 401
    assert is_blocked(admin_get(directory, stack, wrong(), guesser)), "charged to the real address"
    assert admin_get(directory, stack, wrong(), victim).status_code == 401, "the named address is not charged"
