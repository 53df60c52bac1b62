"""Admin accounts:query (B.2.3): count, sort, paging and the email / userId / anonymous filters."""

from __future__ import annotations

import uuid

from conftest import describe, expect_ok


def test_query_counts_sorts_pages_and_filters(admin, client, make_tenant):
    tenant_id = make_tenant(allowPasswordSignup=True)["tenantId"]
    emails = sorted(f"q{i}-{uuid.uuid4().hex[:6]}@example.com" for i in range(3))
    ids = [expect_ok(client.post("/v1/accounts:signUp", {"tenantId": tenant_id, "email": e, "password": "secret12"}))
           ["localId"] for e in emails]
    anonymous = [client.sign_up_anonymous(tenant_id).local_id for _ in range(2)]
    path = admin.accounts_path(tenant_id, "query")

    def query(**body):
        return expect_ok(admin.request("POST", path, json=body))

    everything = query()
    assert everything["recordsCount"] == "5" and len(everything["userInfo"]) == 5
    assert [u["localId"] for u in everything["userInfo"]] == sorted(ids + anonymous)

    only_count = query(returnUserInfo=False, expression=[{"anonymous": True}])
    assert only_count == {"recordsCount": "2"}

    by_email = query(expression=[{"email": emails[1].upper()}])
    assert [u["email"] for u in by_email["userInfo"]] == [emails[1]]
    by_id = query(expression=[{"userId": ids[0]}, {"userId": anonymous[0]}])
    assert sorted(u["localId"] for u in by_id["userInfo"]) == sorted([ids[0], anonymous[0]])

    newest_email_first = query(sortBy="USER_EMAIL", order="DESC", expression=[{"email": e} for e in emails])
    assert [u["email"] for u in newest_email_first["userInfo"]] == list(reversed(emails))
    page = query(sortBy="USER_EMAIL", order="ASC", limit=2, offset=1, expression=[{"email": e} for e in emails])
    assert page["recordsCount"] == "3" and [u["email"] for u in page["userInfo"]] == emails[1:3]

    resp = admin.request("POST", path, json={"sortBy": "SHOE_SIZE"})
    assert resp.status_code == 400 and resp.json()["error"]["status"] == "INVALID_ARGUMENT", describe(resp)
