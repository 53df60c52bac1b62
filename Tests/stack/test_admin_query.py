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


def test_batch_get_and_batch_delete_follow_b23(admin, client, make_tenant):
    tenant_id = make_tenant()["tenantId"]
    ids = sorted(client.sign_up_anonymous(tenant_id).local_id for _ in range(2))
    path = f"/v1/projects/{admin.stack.project_id}/tenants/{tenant_id}/accounts:batchGet"
    full = expect_ok(admin.request("GET", path, params={"maxResults": 2}))
    assert [u["localId"] for u in full["users"]] == ids
    assert full["nextPageToken"] == ids[-1], "a full page always carries a token"
    after = expect_ok(admin.request("GET", path, params={"maxResults": 2, "nextPageToken": full["nextPageToken"]}))
    assert "users" not in after and "nextPageToken" not in after
    assert all("passwordHash" not in u for u in full["users"])  # anonymous users have none

    delete_path = admin.accounts_path(tenant_id, "batchDelete")
    resp = admin.request("POST", delete_path, json={"localIds": ids + ["unknown-id"]})
    errors = expect_ok(resp)["errors"]
    assert [(e["index"], e["localId"]) for e in errors] == [(0, ids[0]), (1, ids[1])]
    assert errors[0]["message"] == "NOT_DISABLED : Disable the account before batch deletion."
    assert expect_ok(admin.request("POST", delete_path, json={"localIds": ids, "force": True})) == {}
    assert admin.lookup_users(tenant_id, ids) == []
    resp = admin.request("POST", delete_path, json={"localIds": [f"id-{i}" for i in range(1001)], "force": True})
    assert resp.json()["error"]["message"] == "LOCAL_ID_LIST_EXCEEDS_LIMIT", describe(resp)
    resp = admin.request("POST", admin.accounts_path(tenant_id, "lookup"), json={"localId": [str(i) for i in range(101)]})
    assert resp.status_code == 400, describe(resp)
