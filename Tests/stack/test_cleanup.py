"""Anonymous-account auto-cleanup and housekeeping (docs/protocol/admin.md#anonymous-cleanup, #tesseras-own-admin-resources; issue #6).

The test stack runs with CLEANUP_ANONYMOUS_RETENTION=3s and a worker loop that sweeps only at start
(CLEANUP_INTERVAL=1h), so these tests run sweeps themselves with `cleanup-worker run-once` — the
same binary and command an operator uses — and can count what each sweep did."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import requests

from conftest import (HTTP_TIMEOUT, Admin, Client, Stack, describe, expect_error, expect_ok, parse_duration, psql,
                      wait_until)


def retention(stack: Stack) -> float:
    raw = stack.env.get("CLEANUP_ANONYMOUS_RETENTION")
    assert raw, f"CLEANUP_ANONYMOUS_RETENTION missing from {stack.env_file}: the test stack sets a short one"
    seconds = parse_duration(raw)
    assert seconds <= 10, f"the retention {raw} is too long for these tests"
    return seconds


def worker_command(stack: Stack) -> tuple[list[str], dict[str, str]]:
    binary = Path(stack.env["TESSERA_BIN_DIR"]) / "cleanup-worker"
    assert binary.is_file(), f"{binary} not found"
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "TESSERA_DIRECTORY_URL": stack.env["TESSERA_DIRECTORY_URL"],
        "TESSERA_INTERNAL_SECRET": stack.env["TESSERA_INTERNAL_SECRET"],
        "LOG_LEVEL": "warning",
    }
    return [str(binary), "run-once"], env


def parse_report(stdout: str) -> dict:
    lines = [line for line in stdout.splitlines() if line.startswith("sweep ")]
    assert lines, f"no sweep report in: {stdout!r}"
    verb, _, payload = lines[-1].partition(": ")
    report = json.loads(payload)
    assert report["skipped"] is (verb == "sweep skipped"), lines[-1]
    return report


def sweep(stack: Stack, **settings: str) -> dict:
    """One `cleanup-worker run-once`; its report (deleted, deletedByTenant, housekeeping, skipped)."""
    command, env = worker_command(stack)
    env.update(settings)
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return parse_report(done.stdout)


def sweep_until_done(stack: Stack, timeout: float = 15) -> dict:
    """Sweeps until a sweep is not skipped (the loop or another test may hold the lease briefly)."""
    deadline = time.monotonic() + timeout
    while True:
        report = sweep(stack)
        if not report["skipped"] or time.monotonic() > deadline:
            assert not report["skipped"], "the sweep lease stayed held"
            return report
        time.sleep(0.5)


def scope_path(admin: Admin, tenant_id: str) -> str:
    return f"/v2/projects/{admin.stack.project_id}/tenants/{tenant_id}"


def status(admin: Admin, tenant_id: str) -> dict:
    return expect_ok(admin.request("GET", scope_path(admin, tenant_id) + "/anonymousCleanup"))


def preview(admin: Admin, tenant_id: str, bucket: str = "hour") -> dict:
    return expect_ok(admin.request("GET", scope_path(admin, tenant_id) + "/anonymousCleanup:preview",
                                   params={"bucket": bucket}))


def set_autodelete(admin: Admin, tenant_id: str, on: bool) -> None:
    expect_ok(admin.patch_tenant(tenant_id, {"autodeleteAnonymousUsers": on},
                                 update_mask="autodeleteAnonymousUsers"))


def existing(admin: Admin, tenant_id: str, local_ids: list[str]) -> set[str]:
    found: set[str] = set()
    for start in range(0, len(local_ids), 100):
        found |= {u["localId"] for u in admin.lookup_users(tenant_id, local_ids[start:start + 100])}
    return found


def anonymous_users(client: Client, tenant_id: str, count: int) -> list:
    return [client.sign_up_anonymous(tenant_id) for _ in range(count)]


# The sweep compares `users.anonymous_due_at` with the database's clock. Instead of sleeping through the
# retention, the tests check the due times the directory wrote and then let the scope's time pass in the
# database: every clock-dependent stamp of its accounts (creation, last sign-in and refresh, due time) and
# the scope's enable time move back together, which is what waiting would have done to them.

def sql_text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def let_time_pass(stack: Stack, tenant_id: str, seconds: float) -> None:
    """As if `seconds` had passed for the scope's accounts (see above)."""
    scope = sql_text(tenant_id)
    millis = int(seconds * 1000)
    psql(stack, f"UPDATE users SET created_at = created_at - {millis}, "
                f"last_login_at = last_login_at - {millis}, last_refresh_at = last_refresh_at - {millis}, "
                f"anonymous_due_at = anonymous_due_at - make_interval(secs => {seconds}) "
                f"WHERE tenant_id = {scope}")
    psql(stack, f"UPDATE tenants SET autodelete_enabled_at = autodelete_enabled_at - make_interval(secs => {seconds}) "
                f"WHERE tenant_id = {scope}")


def due_after(stack: Stack, tenant_id: str, local_ids: list[str], since: str) -> list[float]:
    """Per account (those with a due time), seconds from `since` (an SQL expression over users u and
    tenants t) to its anonymous_due_at."""
    ids = ", ".join(sql_text(i) for i in local_ids)
    rows = psql(stack, f"SELECT extract(epoch FROM u.anonymous_due_at - ({since})) FROM users u "
                       f"JOIN tenants t USING (tenant_id) WHERE u.tenant_id = {sql_text(tenant_id)} "
                       f"AND u.local_id IN ({ids}) AND u.anonymous_due_at IS NOT NULL")
    return [float(row) for row in rows.splitlines()]


def assert_due_after_retention(stack: Stack, tenant_id: str, local_ids: list[str], since: str) -> None:
    """Every one of `local_ids` falls due `since` + the retention (within clock skew between the service's
    clock, which stamps creation, and the database's)."""
    delays = due_after(stack, tenant_id, local_ids, since)
    assert len(delays) == len(local_ids), f"{len(local_ids) - len(delays)} accounts have no due time"
    assert all(abs(d - retention(stack)) < 0.5 for d in delays), (retention(stack), delays)


CREATION = "to_timestamp(u.created_at / 1000.0)"
ENABLE_TIME = "t.autodelete_enabled_at"


def test_due_anonymous_accounts_disappear_and_their_sessions_end(stack, admin, client, make_tenant):
    tenant_id = make_tenant(autodeleteAnonymousUsers=True)["tenantId"]
    sessions = anonymous_users(client, tenant_id, 3)
    ids = [s.local_id for s in sessions]
    before = status(admin, tenant_id)
    assert before["enabled"] is True and before["scheduled"] == 3 and before["totalDeleted"] == 0, before
    assert before["retention"] == f"{int(retention(stack))}s", before

    # Not due yet: a sweep leaves them alone.
    report = sweep_until_done(stack)
    assert tenant_id not in report["deletedByTenant"], report
    assert existing(admin, tenant_id, ids) == set(ids)

    assert_due_after_retention(stack, tenant_id, ids, CREATION)
    let_time_pass(stack, tenant_id, retention(stack) + 0.5)
    report = sweep_until_done(stack)
    assert report["deletedByTenant"].get(tenant_id) == 3, report
    assert existing(admin, tenant_id, ids) == set()
    for session in sessions:
        expect_error(client.refresh_raw(session.refresh_token), "USER_NOT_FOUND")
        expect_error(client.lookup(session.id_token, tenant_id), "USER_NOT_FOUND")

    after = status(admin, tenant_id)
    assert after["totalDeleted"] == 3 and after["lastSweepDeleted"] == 3 and after["scheduled"] == 0, after
    assert after["lastSweepTime"], after
    entries = expect_ok(admin.request("GET", scope_path(admin, tenant_id) + "/auditLog"))["entries"]
    swept = [e for e in entries if e["actor"] == "system:cleanup"]
    assert swept and swept[0]["action"] == "anonymousCleanup.delete" and swept[0]["target"] == "users:3", entries


def test_an_account_upgraded_before_the_sweep_survives(stack, admin, client, make_tenant):
    tenant_id = make_tenant(autodeleteAnonymousUsers=True, allowPasswordSignup=True)["tenantId"]
    keep, lose = anonymous_users(client, tenant_id, 2)
    upgraded = expect_ok(client.post("/v1/accounts:signUp", {
        "idToken": keep.id_token, "email": f"kept-{keep.local_id.lower()}@example.com", "password": "correct horse",
        "tenantId": tenant_id, "returnSecureToken": True}))
    assert upgraded["localId"] == keep.local_id

    assert_due_after_retention(stack, tenant_id, [lose.local_id], CREATION)
    assert due_after(stack, tenant_id, [keep.local_id], CREATION) == [], "the upgrade ends the schedule"
    let_time_pass(stack, tenant_id, retention(stack) + 0.5)
    report = sweep_until_done(stack)
    assert report["deletedByTenant"].get(tenant_id) == 1, report
    assert existing(admin, tenant_id, [keep.local_id, lose.local_id]) == {keep.local_id}
    client.refresh(upgraded["refreshToken"])


def test_an_account_an_admin_links_a_provider_to_survives_the_sweep(stack, admin, client, make_tenant):
    """An admin's linkProviderUserInfo is an upgrade too: the linked account is no longer anonymous."""
    tenant_id = make_tenant(autodeleteAnonymousUsers=True)["tenantId"]
    keep, lose = anonymous_users(client, tenant_id, 2)
    expect_ok(admin.request("POST", admin.accounts_path(tenant_id, "update"), json={
        "localId": keep.local_id,
        "linkProviderUserInfo": {"providerId": "google.com", "rawId": f"g-{keep.local_id}"}}))

    assert due_after(stack, tenant_id, [keep.local_id], CREATION) == [], "the link ends the schedule"
    let_time_pass(stack, tenant_id, retention(stack) + 0.5)
    report = sweep_until_done(stack)
    assert report["deletedByTenant"].get(tenant_id) == 1, report
    assert existing(admin, tenant_id, [keep.local_id, lose.local_id]) == {keep.local_id}


def test_enabling_schedules_existing_accounts_at_enable_time_and_the_preview_matches(stack, admin, client,
                                                                                      make_tenant):
    tenant_id = make_tenant(autodeleteAnonymousUsers=False)["tenantId"]
    ids = [s.local_id for s in anonymous_users(client, tenant_id, 4)]
    assert due_after(stack, tenant_id, ids, CREATION) == [], "scheduled while autodelete was off"
    let_time_pass(stack, tenant_id, retention(stack) + 0.5)  # older than the retention, but nothing was scheduled

    seen = preview(admin, tenant_id)
    assert seen["anonymousUsers"] == 4 and seen["alreadyScheduled"] == 0, seen
    assert sum(b["count"] for b in seen["buckets"]) == 4 and seen["firstDueTime"], seen
    assert status(admin, tenant_id)["scheduled"] == 0
    assert existing(admin, tenant_id, ids) == set(ids), "the preview changes nothing"

    # Existing accounts fall due at enable time + retention, not at creation + retention.
    set_autodelete(admin, tenant_id, True)
    report = sweep_until_done(stack)
    assert tenant_id not in report["deletedByTenant"], report
    assert existing(admin, tenant_id, ids) == set(ids)

    assert_due_after_retention(stack, tenant_id, ids, ENABLE_TIME)
    let_time_pass(stack, tenant_id, retention(stack) + 0.5)
    report = sweep_until_done(stack)
    assert report["deletedByTenant"].get(tenant_id) == seen["anonymousUsers"], report
    assert existing(admin, tenant_id, ids) == set()
    assert status(admin, tenant_id)["totalDeleted"] == 4


def test_turning_it_off_keeps_what_is_scheduled_and_schedules_nothing_new(stack, admin, client, make_tenant):
    tenant_id = make_tenant(autodeleteAnonymousUsers=True)["tenantId"]
    [scheduled] = anonymous_users(client, tenant_id, 1)
    set_autodelete(admin, tenant_id, False)
    [unscheduled] = anonymous_users(client, tenant_id, 1)
    state = status(admin, tenant_id)
    assert state["enabled"] is False and state["scheduled"] == 1, state
    seen = preview(admin, tenant_id)
    assert seen["anonymousUsers"] == 2 and seen["alreadyScheduled"] == 1, seen

    assert_due_after_retention(stack, tenant_id, [scheduled.local_id], CREATION)
    assert due_after(stack, tenant_id, [unscheduled.local_id], CREATION) == []
    let_time_pass(stack, tenant_id, retention(stack) + 0.5)
    report = sweep_until_done(stack)
    assert report["deletedByTenant"].get(tenant_id) == 1, report
    assert existing(admin, tenant_id, [scheduled.local_id, unscheduled.local_id]) == {unscheduled.local_id}


def test_two_workers_at_once_delete_each_account_once(stack, admin, client, make_tenant):
    tenant_id = make_tenant(autodeleteAnonymousUsers=True)["tenantId"]
    ids = [s.local_id for s in anonymous_users(client, tenant_id, 60)]
    assert_due_after_retention(stack, tenant_id, ids, CREATION)
    let_time_pass(stack, tenant_id, retention(stack) + 0.5)
    command, env = worker_command(stack)
    env.update(CLEANUP_BATCH_SIZE="5", CLEANUP_BATCH_PAUSE="20ms")
    workers = [subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for _ in range(2)]
    reports = []
    for worker in workers:
        out, err = worker.communicate(timeout=120)
        assert worker.returncode == 0, f"exit {worker.returncode}\n{out}\n{err}"
        reports.append(parse_report(out))
    # One sweep at a time: the other worker found the lease held, or swept after the first had finished.
    assert sum(r["deletedByTenant"].get(tenant_id, 0) for r in reports) == 60, reports
    assert any(r["skipped"] or r["deletedByTenant"].get(tenant_id, 0) == 0 for r in reports), reports
    assert existing(admin, tenant_id, ids) == set()
    assert status(admin, tenant_id)["totalDeleted"] == 60


def test_a_worker_killed_mid_sweep_loses_nothing_and_the_next_sweep_finishes(stack, admin, client, make_tenant):
    tenant_id = make_tenant(autodeleteAnonymousUsers=True)["tenantId"]
    ids = [s.local_id for s in anonymous_users(client, tenant_id, 80)]
    assert_due_after_retention(stack, tenant_id, ids, CREATION)
    let_time_pass(stack, tenant_id, retention(stack) + 0.5)
    command, env = worker_command(stack)
    env.update(CLEANUP_BATCH_SIZE="4", CLEANUP_BATCH_PAUSE="150ms", CLEANUP_LEASE_TTL="2s")
    worker = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert wait_until(lambda: status(admin, tenant_id)["totalDeleted"] >= 8, timeout=30), "no progress"
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.communicate(timeout=30)
    left = existing(admin, tenant_id, ids)
    assert 0 < len(left) < 80, f"expected a half-done sweep, {len(left)} left"
    assert status(admin, tenant_id)["totalDeleted"] == 80 - len(left), "every committed batch is counted"

    # The dead worker's lease blocks others until it expires, then the next sweep finishes the job. It
    # expires within its CLEANUP_LEASE_TTL (2 s), and it expires now, in the database, instead of the
    # test waiting for it.
    assert sweep(stack)["skipped"] is True
    held = "WHERE name = 'anonymous-cleanup' AND holder IS NOT NULL"
    remaining = psql(stack, f"SELECT extract(epoch FROM expires_at - now()) FROM cleanup_lease {held}")
    assert remaining and float(remaining) <= 2.0, f"lease of the killed worker: {remaining!r} s left"
    if float(remaining) > 0:
        assert psql(stack, f"UPDATE cleanup_lease SET expires_at = now() - interval '1 ms' {held}") == "UPDATE 1"
    report = sweep_until_done(stack)
    assert report["deletedByTenant"].get(tenant_id) == len(left), report
    assert existing(admin, tenant_id, ids) == set()
    assert status(admin, tenant_id)["totalDeleted"] == 80


def test_the_preview_is_per_scope_and_admin_only(stack, admin, make_tenant):
    tenant_id = make_tenant()["tenantId"]
    resp = Admin(stack, token=None).request("GET", scope_path(admin, tenant_id) + "/anonymousCleanup:preview")
    assert resp.status_code == 401, describe(resp)
    resp = admin.request("GET", scope_path(admin, "no-such-tenant") + "/anonymousCleanup:preview")
    expect_error(resp, "TENANT_NOT_FOUND")
    resp = admin.request("GET", scope_path(admin, tenant_id) + "/anonymousCleanup:preview", params={"bucket": "week"})
    assert resp.status_code == 400, describe(resp)
    seen = preview(admin, tenant_id, "day")
    assert seen == {"anonymousUsers": 0, "alreadyScheduled": 0, "buckets": []}, seen
    project = expect_ok(admin.request("GET", f"/v2/projects/{stack.project_id}/anonymousCleanup"))
    assert project["enabled"] in (True, False) and "totalDeleted" in project, project


def test_the_worker_loop_runs_and_exports_metrics(stack):
    url = stack.env["TESSERA_CLEANUP_WORKER_URL"]
    # The stack's loop sweeps once at start (CLEANUP_INTERVAL=1h in the test stack).
    def swept() -> bool:
        text = requests.get(url + "/metrics", timeout=HTTP_TIMEOUT).text
        return 'tessera_cleanup_sweeps_total{outcome="completed"}' in text or \
            'tessera_cleanup_sweeps_total{outcome="skipped"}' in text
    assert wait_until(swept, timeout=20), requests.get(url + "/metrics", timeout=HTTP_TIMEOUT).text
    text = requests.get(url + "/metrics", timeout=HTTP_TIMEOUT).text
    for name in ("tessera_cleanup_anonymous_deleted_total", "tessera_cleanup_pruned_total",
                 "tessera_cleanup_last_sweep_duration_seconds"):
        assert name in text, text
