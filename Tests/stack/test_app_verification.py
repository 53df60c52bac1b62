"""App verification for the calls that text a code (docs/protocol/phone.md#app-verification): without reCAPTCHA
keys the stack asks for no proof and `recaptchaParams` names a placeholder site key; with the operator's keys
(`TESSERA_RECAPTCHA_*`, the token service restarted with them) `sendVerificationCode` and a phone factor's
`mfaEnrollment:start` and `mfaSignIn:start` text a code only for a token siteverify accepts, checked with the
operator's secret and the caller's address. A missing token is `MISSING_RECAPTCHA_TOKEN`, a refused one
`CAPTCHA_CHECK_FAILED`, an unreachable siteverify 503; a test number needs no token. Neither the token nor the
secret reaches the logs. The siteverify here is a stand-in in the test process."""

from __future__ import annotations

import json
import random
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

import pytest

from conftest import describe, expect_error, expect_ok, run_stack
from sms_sink import sms_code

V3 = "/www.googleapis.com/identitytoolkit/v3/relyingparty"
SITE_KEY = "6LeTesseraTestSiteKey0000000000000000000"
SECRET = "recaptcha-secret-" + uuid.uuid4().hex
GOOD = "good-token-" + uuid.uuid4().hex
PASSWORD = "correct horse 1"


def us_number() -> str:
    return f"+1650555{random.randrange(10_000):04d}"


class SiteVerify:
    """reCAPTCHA's siteverify as the token service calls it: a form POST of secret, response and remoteip. It
    accepts GOOD with SECRET and records every call."""

    def __init__(self):
        self.calls: list[dict[str, str]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                length = int(self.headers.get("Content-Length", "0"))
                form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
                outer.calls.append(form)
                ok = form.get("secret") == SECRET and form.get("response") == GOOD
                body = {"success": True, "hostname": "app.example"} if ok else \
                    {"success": False, "error-codes": ["invalid-input-response"]}
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/recaptcha/api/siteverify"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def send(client, tenant: str, number: str, **extra):
    return client.post("/v1/accounts:sendVerificationCode", {"phoneNumber": number, "tenantId": tenant, **extra})


def test_without_keys_no_proof_is_asked_for_and_the_site_key_is_a_placeholder(client, make_tenant, sms_sink):
    for method, path in (("GET", "/v1/recaptchaParams"), ("GET", f"{V3}/getRecaptchaParam"),
                         ("POST", f"{V3}/getRecaptchaParam")):
        resp = client.request(method, path)
        answer = expect_ok(resp)
        assert answer == {"kind": "identitytoolkit#GetRecaptchaParamResponse",
                          "recaptchaSiteKey": "tessera-app-verification-off"}, describe(resp)
    tenant = make_tenant(enablePhoneSignIn=True)["tenantId"]
    number = us_number()
    expect_ok(send(client, tenant, number))
    sms_sink.wait_for(number)


@pytest.mark.disruptive
def test_recaptcha_keys_make_the_texting_calls_ask_for_a_token(client, admin, stack, make_tenant, sms_sink):
    verify = SiteVerify()
    run_stack(stack, "restart", "token-service", f"TESSERA_RECAPTCHA_SITE_KEY={SITE_KEY}",
              f"TESSERA_RECAPTCHA_SECRET_KEY={SECRET}", f"TESSERA_RECAPTCHA_VERIFY_URL={verify.url}")
    try:
        for path in ("/v1/recaptchaParams", f"{V3}/getRecaptchaParam"):
            assert expect_ok(client.request("GET", path))["recaptchaSiteKey"] == SITE_KEY

        test_number = us_number()
        tenant = make_tenant(enablePhoneSignIn=True, allowPasswordSignup=True, testPhoneNumbers={test_number: "123456"},
                             mfaConfig={"state": "ENABLED", "enabledProviders": ["PHONE_SMS"]})["tenantId"]
        number = us_number()
        # No token, a refused one: no code, no SMS, nothing counted.
        expect_error(send(client, tenant, number), "MISSING_RECAPTCHA_TOKEN")
        assert verify.calls == []
        expect_error(send(client, tenant, number, recaptchaToken="forged"), "CAPTCHA_CHECK_FAILED")
        [call] = verify.calls
        assert call["secret"] == SECRET and call["response"] == "forged" and call["remoteip"], call
        # v3 too.
        expect_error(client.post(f"{V3}/sendVerificationCode", {"phoneNumber": number, "tenantId": tenant,
                                                                 "recaptchaToken": "forged"}), "CAPTCHA_CHECK_FAILED")
        time.sleep(0.5)
        assert sms_sink.to(number) == []
        # An accepted token texts the code, which signs in.
        session = expect_ok(send(client, tenant, number, recaptchaToken=GOOD))["sessionInfo"]
        [message] = sms_sink.wait_for(number)
        signed_in = expect_ok(client.post("/v1/accounts:signInWithPhoneNumber", {
            "sessionInfo": session, "code": sms_code(message), "tenantId": tenant}))
        # A test number needs no token: a developer's app in test mode sends none that would pass.
        expect_ok(send(client, tenant, test_number))
        expect_ok(send(client, tenant, test_number, recaptchaToken="fake"))

        # A phone factor: the token rides in phoneEnrollmentInfo and phoneSignInInfo, as the JS SDK sends it.
        email = f"rc-{uuid.uuid4().hex[:10]}@example.com"
        expect_ok(admin.request("POST", admin.accounts_path(tenant, "update"), json={
            "localId": signed_in["localId"], "email": email, "emailVerified": True, "password": PASSWORD}))
        user = expect_ok(client.post("/v1/accounts:signInWithPassword", {
            "tenantId": tenant, "email": email, "password": PASSWORD, "returnSecureToken": True}))
        factor_number = us_number()
        start = {"idToken": user["idToken"], "tenantId": tenant}
        expect_error(client.post("/v2/accounts/mfaEnrollment:start", {
            **start, "phoneEnrollmentInfo": {"phoneNumber": factor_number}}), "MISSING_RECAPTCHA_TOKEN")
        expect_error(client.post("/v2/accounts/mfaEnrollment:start", {
            **start, "phoneEnrollmentInfo": {"phoneNumber": factor_number, "recaptchaToken": "forged"}}),
            "CAPTCHA_CHECK_FAILED")
        session = expect_ok(client.post("/v2/accounts/mfaEnrollment:start", {
            **start, "phoneEnrollmentInfo": {"phoneNumber": factor_number, "recaptchaToken": GOOD}}
        ))["phoneSessionInfo"]["sessionInfo"]
        [message] = sms_sink.wait_for(factor_number)
        enrolled = expect_ok(client.post("/v2/accounts/mfaEnrollment:finalize", {
            **start, "phoneVerificationInfo": {"sessionInfo": session, "code": sms_code(message)}}))
        assert enrolled["idToken"]
        pending = expect_ok(client.post("/v1/accounts:signInWithPassword", {
            "tenantId": tenant, "email": email, "password": PASSWORD, "returnSecureToken": True}))
        [hint] = pending["mfaInfo"]
        sign_in = {"tenantId": tenant, "mfaPendingCredential": pending["mfaPendingCredential"],
                   "mfaEnrollmentId": hint["mfaEnrollmentId"]}
        expect_error(client.post("/v2/accounts/mfaSignIn:start", {**sign_in, "phoneSignInInfo": {}}),
                     "MISSING_RECAPTCHA_TOKEN")
        expect_ok(client.post("/v2/accounts/mfaSignIn:start", {**sign_in, "phoneSignInInfo": {"recaptchaToken": GOOD}}))
        sms_sink.wait_for(factor_number, 2)

        # siteverify unreachable: 503, no code.
        verify.stop()
        resp = send(client, tenant, us_number(), recaptchaToken=GOOD)
        assert resp.status_code == 503, describe(resp)

        # The token service's log never holds the secret or a token.
        log = (stack.stack_dir / "logs" / "token-service.log").read_text(errors="replace")
        assert SECRET not in log and GOOD not in log and "forged" not in log
    finally:
        if verify.thread.is_alive():
            verify.stop()
        run_stack(stack, "restart", "token-service")
    assert expect_ok(client.request("GET", "/v1/recaptchaParams"))["recaptchaSiteKey"] == "tessera-app-verification-off"
