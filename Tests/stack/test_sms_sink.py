"""The SMS sink (sms_sink.py) and the test stack's webhook sender, until phone sign-in can make the
directory send a text message itself: a message put straight into the outbox arrives at the sink, signed;
the sink refuses what a receiver must refuse."""

import json
import time
import uuid

import requests

from conftest import psql, wait_until
from sms_sink import sign, sms_code, verify_signature


def test_a_message_in_the_outbox_reaches_the_sink_signed_and_leaves_no_body(stack, sms_sink):
    number = "+1555" + str(uuid.uuid4().int)[:7]
    rows = psql(stack, f"""INSERT INTO sms_outbox (tenant_id, to_number, body, expires_at)
        VALUES ('', '{number}', 'Your code is 246810', now() + interval '5 minutes') RETURNING id""")
    outbox_id = rows.strip().splitlines()[0].strip()
    [message] = sms_sink.wait_for(number)
    assert message["id"] == outbox_id and message["scope"] == "" and sms_code(message) == "246810"
    # Recorded once the sink's 200 is back: delivered, and the body (the code) gone from the database.
    query = f"SELECT delivered_at IS NOT NULL AND body IS NULL FROM sms_outbox WHERE id = {outbox_id}"
    assert wait_until(lambda: psql(stack, query) == "t", timeout=10), psql(stack, query)


def test_the_sink_refuses_a_wrong_or_stale_signature(sms_sink):
    body = json.dumps({"to": "+15555550199", "body": "x", "scope": "", "id": "sink-test"}).encode()
    before = sms_sink.rejected
    for header in (sign("another-secret", body), sign(sms_sink.secret, body, int(time.time()) - 3600), "", "t=1"):
        response = requests.post(sms_sink.url, data=body, headers={"X-Tessera-Signature": header}, timeout=5)
        assert response.status_code == 401
    assert sms_sink.rejected == before + 4
    assert verify_signature(sms_sink.secret, sign(sms_sink.secret, body), body)
    assert not verify_signature(sms_sink.secret, sign(sms_sink.secret, body), body + b" ")


def test_the_sink_fails_on_request_and_records_a_repeated_id_once(sms_sink):
    body = json.dumps({"to": "+15555550198", "body": "Code 135791", "scope": "t", "id": f"r-{uuid.uuid4()}"}).encode()
    sms_sink.fail_next(503)
    post = lambda: requests.post(sms_sink.url, data=body, headers={"X-Tessera-Signature": sign(sms_sink.secret, body)},
                                 timeout=5)
    assert post().status_code == 503
    repeats = sms_sink.repeats
    assert post().status_code == 200 and post().status_code == 200
    assert len(sms_sink.to("+15555550198")) == 1 and sms_sink.repeats == repeats + 1
