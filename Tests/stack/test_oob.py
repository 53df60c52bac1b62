"""Out-of-band flows through the stack and a real SMTP exchange: verification, password reset,
email change, single use and expiry of codes, continue URLs, enumeration protection, and an SMTP
server that is down when the mail is queued (docs/protocol/accounts.md#email-delivery, #end-user-endpoints, #email-enumeration-protection, #emailverified)."""

from __future__ import annotations

import base64
import hashlib
import time
import uuid

import pytest

from conftest import describe, expect_error, expect_ok, oob_link, parse_duration, psql, wait_until

PASSWORD = "correct horse 1"
CONTINUE = "http://localhost:3000/after"


def address() -> str:
    return f"mail-{uuid.uuid4().hex[:12]}@example.com"


@pytest.fixture
def tenant(make_tenant) -> str:
    return make_tenant(allowPasswordSignup=True)["tenantId"]


def sign_up(client, tenant, email, password=PASSWORD) -> dict:
    return expect_ok(client.post("/v1/accounts:signUp", {"tenantId": tenant, "email": email, "password": password,
                                                        "returnSecureToken": True}))


def send(client, tenant, **body):
    return client.post("/v1/accounts:sendOobCode", {"tenantId": tenant, **body})


def code_hash(code: str) -> str:
    """How the directory keys a code in oob_codes: unpadded base64url of its SHA-256."""
    return base64.urlsafe_b64encode(hashlib.sha256(code.encode()).digest()).rstrip(b"=").decode()


def test_verification_mail_arrives_over_smtp_and_its_code_verifies_the_email(client, mail_sink, tenant, stack):
    email = address()
    session = sign_up(client, tenant, email)
    resp = send(client, tenant, requestType="VERIFY_EMAIL", idToken=session["idToken"], continueUrl=CONTINUE)
    data = expect_ok(resp)
    assert data == {"kind": "identitytoolkit#GetOobConfirmationCodeResponse", "email": email}, describe(resp)

    [mail] = mail_sink.wait_for(email)
    assert mail["tls"] and mail["authenticated"], "delivered over STARTTLS with AUTH"
    assert "Verify your email" in mail["subject"]
    _, params = oob_link(mail)
    assert params["mode"] == "verifyEmail" and params["apiKey"] == stack.api_key
    assert params["tenantId"] == tenant and params["continueUrl"] == CONTINUE

    applied = expect_ok(client.post("/v1/accounts:update", {"tenantId": tenant, "oobCode": params["oobCode"]}))
    assert applied["emailVerified"] is True and applied["email"] == email
    user = expect_ok(client.lookup(session["idToken"], tenant))["users"][0]
    assert user["emailVerified"] is True
    # Single use.
    expect_error(client.post("/v1/accounts:update", {"tenantId": tenant, "oobCode": params["oobCode"]}),
                 "INVALID_OOB_CODE")


def test_password_reset_through_the_mailed_code(client, mail_sink, tenant):
    email = address()
    session = sign_up(client, tenant, email)
    expect_ok(send(client, tenant, requestType="PASSWORD_RESET", email=email.upper()))
    [mail] = mail_sink.wait_for(email)
    _, params = oob_link(mail)
    assert params["mode"] == "resetPassword"
    code = params["oobCode"]

    # Without a new password the code is only inspected, not consumed.
    info = expect_ok(client.post("/v1/accounts:resetPassword", {"tenantId": tenant, "oobCode": code}))
    assert info["requestType"] == "PASSWORD_RESET" and info["email"] == email
    expect_error(client.post("/v1/accounts:resetPassword",
                             {"tenantId": tenant, "oobCode": code, "newPassword": "123"}), "WEAK_PASSWORD")
    done = expect_ok(client.post("/v1/accounts:resetPassword",
                                 {"tenantId": tenant, "oobCode": code, "newPassword": "a new password"}))
    assert done["kind"] == "identitytoolkit#ResetPasswordResponse" and done["email"] == email

    expect_error(client.refresh_raw(session["refreshToken"]), "TOKEN_EXPIRED")
    signed_in = expect_ok(client.post("/v1/accounts:signInWithPassword",
                                      {"tenantId": tenant, "email": email, "password": "a new password"}))
    user = expect_ok(client.lookup(signed_in["idToken"], tenant))["users"][0]
    assert user["emailVerified"] is True, "a reset through the mailbox proves the address (docs/protocol/accounts.md#emailverified)"
    expect_error(client.post("/v1/accounts:resetPassword",
                             {"tenantId": tenant, "oobCode": code, "newPassword": "third password"}), "INVALID_OOB_CODE")


def test_links_are_built_on_the_public_url_whatever_the_host_header(client, mail_sink, make_tenant, stack):
    """The test stack sets TESSERA_PUBLIC_URL to its own URL (TESSERA_URL): the mailed link is built on it,
    never on the request's Host, which is the caller's to write. A reset requested with `Host: evil.example`
    would otherwise mail the victim a genuine link to the attacker's server, code included; an authorized
    host with a port of its own (`localhost:<port>`) or a Host that hides a foreign name is not followed
    either (issue 23). (Without a public URL, a link is built only on a Host that is exactly an authorized
    domain entry: test_review_ingress.py.)"""
    tenant = make_tenant(allowPasswordSignup=True, rateLimits={"oobEmailsPerAccountPerHour": 0})["tenantId"]
    email = address()
    sign_up(client, tenant, email)
    hosts = ("evil.example", f"localhost:{stack.port}", "localhost@evil.example", "evil.example#.localhost")
    for host in hosts:
        expect_ok(client.post("/v1/accounts:sendOobCode", {"tenantId": tenant, "requestType": "PASSWORD_RESET",
                                                           "email": email}, headers={"Host": host}))
    mails = mail_sink.wait_for(email, count=len(hosts))
    assert len(mails) == len(hosts), mails
    for mail in mails:
        link, _ = oob_link(mail)
        assert link.startswith(f"{stack.url}/__/auth/action?"), link
        assert "evil" not in link, link


def test_a_code_sent_before_a_revocation_is_refused(client, admin, mail_sink, tenant):
    """A code older than its user's validSince (here an admin's revocation, set far in the future) is
    INVALID_OOB_CODE, never a 500 (the comparison once overflowed a timestamp)."""
    email = address()
    session = sign_up(client, tenant, email)
    expect_ok(send(client, tenant, requestType="PASSWORD_RESET", email=email))
    [mail] = mail_sink.wait_for(email)
    _, params = oob_link(mail)
    expect_ok(admin.request("POST", admin.accounts_path(tenant, "update"),
                            json={"localId": session["localId"], "validSince": str(2**63 - 1)}))
    expect_error(client.post("/v1/accounts:resetPassword", {"tenantId": tenant, "oobCode": params["oobCode"],
                                                            "newPassword": "a new password"}), "INVALID_OOB_CODE")


def test_expired_code_answers_expired_oob_code(client, mail_sink, tenant, stack):
    email = address()
    sign_up(client, tenant, email)
    expect_ok(send(client, tenant, requestType="PASSWORD_RESET", email=email))
    [mail] = mail_sink.wait_for(email)
    _, params = oob_link(mail)
    # The code was given the stack's lifetime (TESSERA_OOB_CODE_TTL, 8 s in the test stack)...
    raw_ttl = stack.env.get("TESSERA_OOB_CODE_TTL")
    assert raw_ttl, f"TESSERA_OOB_CODE_TTL missing from {stack.env_file}: the test stack sets a short one"
    where = f"WHERE code_hash = '{code_hash(params['oobCode'])}'"
    lifetime = psql(stack, f"SELECT extract(epoch FROM expires_at - created_at) FROM oob_codes {where}")
    assert lifetime and abs(float(lifetime) - parse_duration(raw_ttl)) < 0.01, (lifetime, raw_ttl)
    # ...and that lifetime ends now, in the database, instead of the suite waiting it out.
    assert psql(stack, f"UPDATE oob_codes SET expires_at = now() - interval '1 second' {where}") == "UPDATE 1"
    expect_error(client.post("/v1/accounts:resetPassword",
                             {"tenantId": tenant, "oobCode": params["oobCode"], "newPassword": "a new password"}),
                 "EXPIRED_OOB_CODE")


def test_email_change_through_the_new_address(client, mail_sink, verifier, tenant):
    old, new = address(), address()
    session = sign_up(client, tenant, old)
    taken = address()
    sign_up(client, tenant, taken)
    expect_error(send(client, tenant, requestType="VERIFY_AND_CHANGE_EMAIL", idToken=session["idToken"], newEmail=taken),
                 "EMAIL_EXISTS")
    expect_ok(send(client, tenant, requestType="VERIFY_AND_CHANGE_EMAIL", idToken=session["idToken"], newEmail=new))
    [mail] = mail_sink.wait_for(new)
    assert not mail_sink.to(old), "the code goes to the new address only"
    _, params = oob_link(mail)
    assert params["mode"] == "verifyAndChangeEmail"
    applied = expect_ok(client.post("/v1/accounts:update", {"tenantId": tenant, "oobCode": params["oobCode"]}))
    assert applied["email"] == new and applied["emailVerified"] is True
    expect_error(client.refresh_raw(session["refreshToken"]), "TOKEN_EXPIRED")
    signed_in = expect_ok(client.post("/v1/accounts:signInWithPassword",
                                      {"tenantId": tenant, "email": new, "password": PASSWORD}))
    assert verifier.verify(signed_in["idToken"])["email_verified"] is True


def test_unknown_email_reset_is_silent_under_protection(client, mail_sink, tenant, stack):
    email = address()
    resp = send(client, tenant, requestType="PASSWORD_RESET", email=email)
    assert expect_ok(resp) == {"kind": "identitytoolkit#GetOobConfirmationCodeResponse", "email": email}
    # No code was made and no mail queued (a mail leaves only through the outbox, written before the
    # answer), and none arrives (the outbox is polled every 200 ms in the test stack).
    assert psql(stack, f"SELECT count(*) FROM oob_codes WHERE email = '{email}'") == "0"
    assert psql(stack, f"SELECT count(*) FROM mail_outbox WHERE recipient = '{email}'") == "0"
    time.sleep(0.6)
    assert not mail_sink.to(email)


def test_request_errors(client, tenant):
    session = sign_up(client, tenant, address())
    expect_error(send(client, tenant, email=address()), "MISSING_REQ_TYPE")
    expect_error(send(client, tenant, requestType="PASSWORD_RESET"), "MISSING_EMAIL")
    expect_error(send(client, tenant, requestType="PASSWORD_RESET", email="nope"), "INVALID_EMAIL")
    expect_error(send(client, tenant, requestType="VERIFY_EMAIL"), "INVALID_ID_TOKEN")
    expect_error(send(client, tenant, requestType="VERIFY_AND_CHANGE_EMAIL", idToken=session["idToken"]),
                 "MISSING_NEW_EMAIL")
    expect_error(send(client, tenant, requestType="PASSWORD_RESET", email=address(), returnOobLink=True),
                 "INSUFFICIENT_PERMISSION")
    expect_error(send(client, tenant, requestType="PASSWORD_RESET", email=address(), continueUrl="not a url"),
                 "INVALID_CONTINUE_URI")
    expect_error(send(client, tenant, requestType="PASSWORD_RESET", email=address(),
                      continueUrl="https://evil.example/"), "UNAUTHORIZED_DOMAIN")
    expect_error(client.post("/v1/accounts:resetPassword", {"tenantId": tenant}), "MISSING_OOB_CODE")
    expect_error(client.post("/v1/accounts:resetPassword", {"tenantId": tenant, "oobCode": "garbage"}),
                 "INVALID_OOB_CODE")
    expect_error(client.post("/v1/accounts:update", {"tenantId": tenant, "oobCode": "garbage"}), "INVALID_OOB_CODE")
    # Android sends the proto enum number (docs/protocol/README.md#transport-conventions).
    expect_ok(send(client, tenant, requestType=1, email=address()))


def outbox(stack, email: str) -> tuple[int, bool, bool, bool]:
    """The outbox row of the one mail to `email`: (attempts, has an error, waits for a retry, delivered)."""
    row = psql(stack, "SELECT attempts, last_error IS NOT NULL, claimed_until IS NULL AND next_attempt_at > now(), "
                      f"delivered_at IS NOT NULL FROM mail_outbox WHERE recipient = '{email}'")
    if not row:
        return 0, False, False, False
    assert "\n" not in row, f"expected one outbox row for {email}: {row!r}"
    attempts, failed, retry_due_later, delivered = row.split("|")
    return int(attempts), failed == "t", retry_due_later == "t", delivered == "t"


def test_mail_queued_while_smtp_is_down_is_delivered_once_it_is_back(client, mail_sink, tenant, stack):
    email = address()
    sign_up(client, tenant, email)
    mail_sink.stop()
    try:
        expect_ok(send(client, tenant, requestType="PASSWORD_RESET", email=email))
        # At least two delivery attempts fail (retry base 1 s in the test stack), and a third is scheduled.
        def failed_twice() -> bool:
            attempts, failed, retry_due_later, delivered = outbox(stack, email)
            assert not delivered, "delivered while the SMTP server was down"
            return attempts >= 2 and failed and retry_due_later
        assert wait_until(failed_twice, timeout=15, interval=0.1), outbox(stack, email)
    finally:
        mail_sink.start()
    # The retry falls due now instead of after the backoff (2 s after the second failure): the outbox is
    # what is tested here, not the clock.
    updated = psql(stack, "UPDATE mail_outbox SET next_attempt_at = now() "
                          f"WHERE recipient = '{email}' AND delivered_at IS NULL")
    assert updated == "UPDATE 1" or outbox(stack, email)[3], updated
    messages = mail_sink.wait_for(email, timeout=30)
    assert wait_until(lambda: outbox(stack, email)[3], timeout=10, interval=0.1), "the delivery was not recorded"
    time.sleep(0.5)  # no second copy follows (the outbox is polled every 200 ms in the test stack)
    assert len(mail_sink.to(email)) == 1, "delivered exactly once"
    assert outbox(stack, email)[3]
    _, params = oob_link(messages[0])
    expect_ok(client.post("/v1/accounts:resetPassword",
                          {"tenantId": tenant, "oobCode": params["oobCode"], "newPassword": "after the outage"}))


def test_tenant_mail_templates_replace_the_defaults(client, admin, mail_sink, tenant):
    path = f"/v2/projects/{admin.stack.project_id}/tenants/{tenant}/mailTemplates"
    listed = expect_ok(admin.request("GET", path))["templates"]
    assert {t["requestType"] for t in listed} == {"VERIFY_EMAIL", "PASSWORD_RESET", "VERIFY_AND_CHANGE_EMAIL",
                                                  "EMAIL_SIGNIN", "RECOVER_EMAIL"}
    assert not any(t["custom"] for t in listed) and all("%LINK%" in t["body"] for t in listed)

    resp = admin.request("PATCH", f"{path}/PASSWORD_RESET", json={"body": "no link here"})
    assert resp.status_code == 400 and resp.json()["error"]["status"] == "INVALID_ARGUMENT", describe(resp)
    custom = expect_ok(admin.request("PATCH", f"{path}/PASSWORD_RESET", json={
        "subject": "Reset for %APP_NAME% ✓", "body": "Hi %EMAIL%, use %LINK% soon."}))
    assert custom["custom"] is True

    email = address()
    sign_up(client, tenant, email)
    expect_ok(send(client, tenant, requestType="PASSWORD_RESET", email=email))
    [mail] = mail_sink.wait_for(email)
    assert mail["subject"].startswith("Reset for ") and mail["subject"].endswith("✓")
    assert mail["body"].startswith(f"Hi {email}, use http") and mail["body"].rstrip().endswith("soon.")

    reset = expect_ok(admin.request("DELETE", f"{path}/PASSWORD_RESET"))
    assert reset["custom"] is False
    resp = admin.request("PATCH", f"{path}/OLD_EMAIL_AGREE", json={"body": "%LINK%"})
    assert resp.status_code == 400, describe(resp)
