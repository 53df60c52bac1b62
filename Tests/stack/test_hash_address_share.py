"""One address cannot take the whole hashing pool (issue 37; docs/scaling.md, "Login storms", step 5), through
HTTP: the client address the token service reads (X-Forwarded-For from a trusted proxy) is the one the
directory's pool counts.

A directory and a token service of their own, both trusting 127.0.0.1 as their proxy so that each call names
its client address: one hashing thread, 16 places, a wait limit long enough never to refuse, and hashes of
64 MiB (mem cost 16, a few hundred milliseconds each; Firebase-scrypt's largest, 128 MiB, only doubled the
test's time) so that they overlap. While address B has a hash in the pool, address A sends 20 sign-ins at
once. Past three quarters of the room (12 of 16 places), A, which holds more than three quarters of the
hashes, is refused with `Retry-After: 1`, and B's next sign-in still finds a place. Without the share A
would take all 16 places and B would be refused.

Every sign-in names an unknown email, so each costs one hash (the burn of docs/protocol/accounts.md#passwords) and answers EMAIL_NOT_FOUND or
INVALID_LOGIN_CREDENTIALS."""

from __future__ import annotations

import threading
import time
import uuid

import requests

from conftest import describe
from test_secrets import STRONG, running

A = "2001:db8:a::1"
B = "2001:db8:b::1"
BURST = 20


def sign_in(tokens, stack, tenant_id: str, address: str) -> requests.Response:
    return requests.post(
        f"{tokens.base}/v1/accounts:signInWithPassword?key={stack.api_key}", timeout=60,
        json={"tenantId": tenant_id, "email": f"nobody-{uuid.uuid4().hex[:12]}@example.com",
              "password": "not-a-password", "returnSecureToken": True},
        headers={"X-Forwarded-For": address})


def is_refusal(response: requests.Response) -> bool:
    return response.status_code == 503 and response.headers.get("Retry-After", "").strip().isdigit()


def test_one_address_leaves_a_quarter_of_the_pool_to_the_others(stack, make_tenant):
    tenant_id = make_tenant(allowPasswordSignup=True)["tenantId"]
    with running(stack, "user-directory", "/readyz", TESSERA_ADMIN_TOKEN=STRONG, TESSERA_TRUSTED_PROXIES="127.0.0.1",
                 TESSERA_HASH_THREADS="1", TESSERA_HASH_QUEUE="15", TESSERA_HASH_MAX_WAIT="60s",
                 TESSERA_PASSWORD_HASH_MEM_COST="16") as directory:
        with running(stack, "token-service", "/healthz", TESSERA_DIRECTORY_URL=directory.base,
                     TESSERA_TRUSTED_PROXIES="127.0.0.1", TESSERA_INTERNAL_TIMEOUT="60s",
                     TESSERA_PASSWORD_REFUSAL_WINDOW="0s",
                     TESSERA_SESSION_COOKIE_KEYS_DIR=stack.env.get("TESSERA_SESSION_COOKIE_KEYS_DIR")) as tokens:
            # One hash alone, to know how long one takes here.
            started = time.monotonic()
            first = sign_in(tokens, stack, tenant_id, B)
            one_hash = time.monotonic() - started
            assert first.status_code == 400, describe(first)

            answers: dict[str, list[requests.Response]] = {A: [], B: []}
            lock = threading.Lock()

            def attempt(address: str) -> None:
                response = sign_in(tokens, stack, tenant_id, address)
                with lock:
                    answers[address].append(response)

            # B's hash is in the pool when A's burst arrives: the pool then knows two addresses.
            b_first = threading.Thread(target=attempt, args=(B,))
            b_first.start()
            time.sleep(min(0.05, one_hash / 4))
            gate = threading.Barrier(BURST)

            def burst() -> None:
                gate.wait(timeout=30)
                attempt(A)

            a_threads = [threading.Thread(target=burst) for _ in range(BURST)]
            for thread in a_threads:
                thread.start()
            # Once A's refusals are in, B asks again while A's admitted hashes still fill the pool.
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                with lock:
                    refused_a = sum(is_refusal(r) for r in answers[A])
                if refused_a >= BURST - 16 + 1:
                    break
                time.sleep(0.005)
            b_second = threading.Thread(target=attempt, args=(B,))
            b_second.start()
            for thread in [b_first, b_second, *a_threads]:
                thread.join(timeout=120)

    assert len(answers[A]) == BURST and len(answers[B]) == 2, "some sign-ins never answered"
    for response in answers[A] + answers[B]:
        assert response.status_code in (400, 503), describe(response)
    a_refused = [r for r in answers[A] if r.status_code == 503]
    assert all(is_refusal(r) and r.headers["Retry-After"].strip() == "1" for r in a_refused), \
        [describe(r) for r in a_refused]
    # With B in the pool, A keeps at most 11 of the 16 places, 12 once B's hash ended, one more for each of
    # its own that ended during the burst: refused 9, 8, 7 times. Without the share it would keep 15 and be
    # refused 5 times.
    assert len(a_refused) >= BURST - 13, (
        f"A was refused {len(a_refused)} of {BURST} times (one hash took {one_hash:.2f} s)")
    assert len(a_refused) < BURST, "A got nothing"
    for response in answers[B]:
        assert response.status_code == 400, f"B was refused beside A's burst: {describe(response)}"
