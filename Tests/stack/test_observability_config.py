"""The observability configuration (issue #27): Prometheus alerting and recording rules, their
promtool unit tests, the example scrape configuration and the Grafana dashboard.

promtool (Debian's `prometheus` package) checks the rules, runs their unit tests and checks the
example configuration; a machine without it fails these tests, it does not skip them. The dashboard
and the rules may only name metrics Tessera exposes (the list below), and against the running stack,
after a little traffic, every one of them is served by one of the three services."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest
import requests
import yaml

from conftest import REPO_ROOT, expect_error, expect_ok, run_stack, scrape

PROMETHEUS_DIR = REPO_ROOT / "deploy" / "prometheus"
ALERTS = PROMETHEUS_DIR / "alerts.yml"
ALERT_TESTS = PROMETHEUS_DIR / "alerts.test.yml"
EXAMPLE_CONFIG = PROMETHEUS_DIR / "prometheus.example.yml"
DASHBOARD = REPO_ROOT / "deploy" / "grafana" / "tessera.json"
RUNBOOK = REPO_ROOT / "docs" / "operations.md"

SERVICES = ("token-service", "user-directory", "cleanup-worker")

# Every series Tessera exposes, by name. Histograms are listed once; they are served as
# <name>_bucket, <name>_sum and <name>_count.
GAUGES_AND_COUNTERS = {
    # every service
    "tessera_http_requests_total",
    "tessera_http_errors_total",
    "process_cpu_seconds_total",
    "process_resident_memory_bytes",
    "process_virtual_memory_bytes",
    "process_open_fds",
    "process_max_fds",
    "process_start_time_seconds",
    "tessera_http_requests_in_flight",
    # token-service
    "tessera_tokens_issued_total",
    "tessera_signing_key_active_since_timestamp_seconds",
    "tessera_signing_key_expiry_timestamp_seconds",
    "tessera_signing_keys",
    "tessera_password_gate_refused_total",
    # user-directory
    "tessera_password_hash_queue_depth_operations",
    "tessera_password_hash_refused_total",
    "tessera_password_hash_dropped_total",
    "tessera_password_hash_yields_total",
    "tessera_password_hash_worker_starts_total",
    "tessera_password_hash_threads",
    "tessera_password_hash_queue_limit",
    "tessera_refresh_token_reuse_total",
    "tessera_mail_outbox_pending",
    "tessera_mail_outbox_oldest_age_seconds",
    "tessera_mail_deliveries_total",
    "tessera_sms_outbox_pending",
    "tessera_sms_outbox_oldest_age_seconds",
    "tessera_sms_deliveries_total",
    "tessera_sms_budget_refusals_total",
    "tessera_db_pool_connections_max",
    "tessera_db_pool_connections_in_use",
    "tessera_db_unavailable_total",
    # cleanup-worker
    "tessera_cleanup_sweeps_total",
    "tessera_cleanup_anonymous_deleted_total",
    "tessera_cleanup_pruned_total",
    "tessera_cleanup_last_sweep_timestamp_seconds",
    "tessera_cleanup_last_sweep_duration_seconds",
}
HISTOGRAMS = {
    "tessera_http_request_duration_seconds",
    "tessera_internal_call_duration_seconds",
    "tessera_password_hash_wait_seconds",
    "tessera_db_pool_wait_seconds",
}
# Made by Prometheus itself for every target, not by the services.
PROMETHEUS_SERIES = {"up"}
KNOWN_METRICS = (GAUGES_AND_COUNTERS | PROMETHEUS_SERIES
                 | {f"{h}{suffix}" for h in HISTOGRAMS for suffix in ("_bucket", "_sum", "_count")})

# Labels the rules and the dashboard select or group by, and the values they match on.
LABELS_USED = {
    "tessera_http_requests_total": {"method": None, "route": None, "status": None},
    "tessera_http_errors_total": {"route": None, "code": None},
    "tessera_http_request_duration_seconds_bucket": {"route": None, "le": None},
    "tessera_internal_call_duration_seconds_bucket": {"path": None, "le": None},
    "tessera_internal_call_duration_seconds_count": {"path": None, "outcome": None},
    "tessera_tokens_issued_total": {"type": {"id_token", "refresh_token"}, "provider": {"password"}},
    "tessera_cleanup_sweeps_total": {"outcome": {"completed", "skipped", "failed", "lease_lost"}},
    "tessera_mail_deliveries_total": {"outcome": {"sent", "retry", "given_up"}},
    "tessera_cleanup_pruned_total": {"kind": None},
    "tessera_signing_key_active_since_timestamp_seconds": {"set": {"id_token", "session_cookie"}},
    "tessera_signing_key_expiry_timestamp_seconds": {"set": {"id_token", "session_cookie"}},
    "tessera_signing_keys": {"set": {"id_token", "session_cookie"}},
}

# Hummingbird's own request series, recorded through swift-metrics into the service's registry when
# TESSERA_HTTP_LIBRARY_METRICS=true (off by default: they repeat tessera_http_* at a measurable cost).
# Documented, not used by the rules or the dashboard.
LIBRARY_SERIES = {"hb_requests_total", "hb_request_errors_total", "http_server_active_requests",
                  "http_server_request_duration_seconds_bucket"}

REQUIRED_ROWS = ["Traffic & errors", "Latency", "Tokens", "Password hashing", "Mail outbox", "Database pool",
                 "Cleanup worker", "Process", "Signing keys"]


# --------------------------------------------------------------------------------------------------
# promtool
# --------------------------------------------------------------------------------------------------

def promtool() -> str:
    found = shutil.which("promtool") or ("/usr/bin/promtool" if Path("/usr/bin/promtool").is_file() else None)
    if found is None:
        pytest.fail("promtool not found: install Debian's `prometheus` package (the CI does)", pytrace=False)
    return found


def run_promtool(*args: str, cwd: Path = REPO_ROOT) -> subprocess.CompletedProcess:
    result = subprocess.run([promtool(), *args], cwd=cwd, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, (f"promtool {' '.join(args)} exited {result.returncode}:\n"
                                    f"{result.stdout}\n{result.stderr}")
    return result


def test_promtool_checks_the_rules():
    output = run_promtool("check", "rules", str(ALERTS.relative_to(REPO_ROOT))).stdout
    assert "SUCCESS" in output, output


def test_promtool_unit_tests_of_the_alerts_pass():
    output = run_promtool("test", "rules", str(ALERT_TESTS.relative_to(REPO_ROOT))).stdout
    assert "SUCCESS" in output, output


def test_promtool_checks_the_example_configuration():
    output = run_promtool("check", "config", str(EXAMPLE_CONFIG.relative_to(REPO_ROOT))).stdout
    assert "alerts.yml" in output, f"the example loads alerts.yml: {output}"


def test_the_example_scrapes_the_three_services_under_their_names():
    config = yaml.safe_load(EXAMPLE_CONFIG.read_text())
    assert config["rule_files"] == ["alerts.yml"]
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    ports = {"token-service": 8081, "user-directory": 8082, "cleanup-worker": 8083}
    for service, port in ports.items():
        job = jobs[service]
        assert job.get("metrics_path", "/metrics") == "/metrics"
        targets = [t for group in job["static_configs"] for t in group["targets"]]
        assert targets == [f"{service}:{port}"], targets


# --------------------------------------------------------------------------------------------------
# The rules, their tests and their runbooks
# --------------------------------------------------------------------------------------------------

def rule_groups() -> list[dict]:
    return yaml.safe_load(ALERTS.read_text())["groups"]


def alert_rules() -> list[dict]:
    return [rule for group in rule_groups() for rule in group["rules"] if "alert" in rule]


def recorded_names() -> set[str]:
    return {rule["record"] for group in rule_groups() for rule in group["rules"] if "record" in rule}


def markdown_anchors(text: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    anchors = set()
    for line in text.splitlines():
        match = re.match(r"#{1,6}\s+(.*)", line)
        if match:
            title = re.sub(r"[^\w\- ]", "", match.group(1).strip().lower())
            anchors.add(title.replace(" ", "-"))
    return anchors


def test_every_alert_has_a_duration_a_severity_and_a_runbook():
    alerts = alert_rules()
    assert len(alerts) >= 20
    anchors = markdown_anchors(RUNBOOK.read_text())
    names = [rule["alert"] for rule in alerts]
    assert len(names) == len(set(names)), "alert names are unique"
    for rule in alerts:
        name = rule["alert"]
        assert re.fullmatch(r"Tessera[A-Z]\w+", name), name
        assert rule.get("for"), f"{name} has no `for:`"
        assert rule.get("labels", {}).get("severity") in ("page", "ticket"), name
        annotations = rule.get("annotations", {})
        for key in ("summary", "description", "runbook_url"):
            assert annotations.get(key), f"{name} has no {key}"
        page, _, anchor = annotations["runbook_url"].partition("#")
        assert page == "docs/operations.md" and anchor in anchors, \
            f"{name}: runbook {annotations['runbook_url']} is not a section of docs/operations.md"


def test_the_alerts_cover_what_an_operator_needs():
    expressions = " ".join(rule["expr"] for rule in alert_rules())
    for needed in ("up", "job:tessera_http_requests_5xx:ratio_rate5m",
                   "job:tessera_http_request_duration_seconds:p99_5m", "job:tessera_password_hash_refused",
                   "instance:tessera_password_hash_queue:saturation", "tessera_mail_outbox_oldest_age_seconds",
                   "tessera_mail_outbox_pending", 'tessera_mail_deliveries_total{outcome="given_up"}',
                   "job:tessera_refresh_token_reuse", 'outcome="lease_lost"',
                   'outcome="failed"', "tessera_cleanup_last_sweep_timestamp_seconds",
                   "tessera_signing_key_expiry_timestamp_seconds",
                   "tessera_signing_key_active_since_timestamp_seconds", "instance:process_fds:utilization",
                   "instance:tessera_db_pool:utilization"):
        assert needed in expressions, f"no alert uses {needed}"


def test_every_alert_fires_in_a_unit_test_and_some_are_checked_quiet():
    tests = yaml.safe_load(ALERT_TESTS.read_text())
    assert tests["rule_files"] == ["alerts.yml"]
    fired, quiet = set(), set()
    for case in tests["tests"]:
        for check in case.get("alert_rule_test", []):
            (fired if check.get("exp_alerts") else quiet).add(check["alertname"])
    names = {rule["alert"] for rule in alert_rules()}
    assert names - fired == set(), f"alerts never seen firing in alerts.test.yml: {sorted(names - fired)}"
    assert fired <= names, f"tests of unknown alerts: {sorted(fired - names)}"
    assert len(quiet) >= 10, f"only {sorted(quiet)} are checked not to fire"


# --------------------------------------------------------------------------------------------------
# Metric names in PromQL
# --------------------------------------------------------------------------------------------------

PROMQL_KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or",
                   "unless", "offset", "inf", "nan"}


def metric_names(expr: str) -> set[str]:
    """The series names a PromQL expression selects (function names, keywords, label names and
    recorded names included, label values, numbers and durations left out)."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'', '""', expr)
    text = re.sub(r"\{[^}]*\}", " ", text)
    text = re.sub(r"\[[^\]]*\]", " ", text)
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    text = re.sub(r"(?<![\w:])\d[\w.]*", " ", text)
    names = set()
    for match in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", text):
        word = match.group(0)
        if text[match.end():].lstrip().startswith("("):
            continue  # a function
        if word.lower() in PROMQL_KEYWORDS:
            continue
        names.add(word)
    return names


def test_metric_names_are_found_in_promql():
    expr = ('histogram_quantile(0.99, sum by (job, le) (rate(a_bucket{route!~"/x|/y", job=~"$job"}'
            '[$__rate_interval]))) / on (job) group_left b:rec:rate5m > 2 * 86400 and time() - c offset 1h')
    assert metric_names(expr) == {"a_bucket", "b:rec:rate5m", "c"}


def dashboard() -> dict:
    return json.loads(DASHBOARD.read_text())


def dashboard_panels() -> list[dict]:
    panels = []
    for panel in dashboard()["panels"]:
        panels.append(panel)
        panels.extend(panel.get("panels", []))  # collapsed rows keep theirs inside
    return panels


def dashboard_expressions() -> list[str]:
    return [target["expr"] for panel in dashboard_panels() if panel["type"] != "row"
            for target in panel["targets"]]


def rule_expressions() -> list[str]:
    return [rule["expr"] for group in rule_groups() for rule in group["rules"]]


def used_metric_names() -> set[str]:
    """Every series the rules and the dashboard select, recorded names left out."""
    names = set()
    for expr in rule_expressions() + dashboard_expressions():
        names |= metric_names(expr)
    return {name for name in names if ":" not in name}


def test_rules_and_dashboard_name_only_known_metrics():
    recorded = recorded_names()
    for expr in rule_expressions() + dashboard_expressions():
        for name in metric_names(expr):
            if ":" in name:
                assert name in recorded, f"{name} (in {expr!r}) is recorded by no rule"
            else:
                assert name in KNOWN_METRICS, f"{name} (in {expr!r}) is not a metric Tessera exposes"
    for expr in rule_expressions() + dashboard_expressions():
        for name in metric_names(expr):
            assert not any(name == h for h in HISTOGRAMS), f"histogram {name} selected without a suffix"


def test_the_runbook_lists_every_metric():
    text = RUNBOOK.read_text()
    listed = set(re.findall(r"`([a-z_:]+)`", text.split("\n## Metrics", 1)[1]))
    names = GAUGES_AND_COUNTERS | HISTOGRAMS | PROMETHEUS_SERIES | {
        n.removesuffix("_bucket") for n in LIBRARY_SERIES}
    assert names - listed == set(), f"docs/operations.md, Metrics, lacks {sorted(names - listed)}"


# --------------------------------------------------------------------------------------------------
# The dashboard
# --------------------------------------------------------------------------------------------------

def test_the_dashboard_has_its_inputs_variables_and_rows():
    board = dashboard()
    assert board["schemaVersion"] >= 39
    assert board["uid"] and board["title"]
    assert [i["name"] for i in board["__inputs"]] == ["DS_PROMETHEUS"]
    assert board["__inputs"][0]["pluginId"] == "prometheus"
    variables = {v["name"]: v for v in board["templating"]["list"]}
    assert variables["DS_PROMETHEUS"]["type"] == "datasource"
    assert variables["DS_PROMETHEUS"]["query"] == "prometheus"
    for name in ("job", "instance"):
        assert variables[name]["type"] == "query" and variables[name]["multi"] and variables[name]["includeAll"]
    rows = [p["title"] for p in dashboard_panels() if p["type"] == "row"]
    assert rows == REQUIRED_ROWS


def test_every_dashboard_panel_queries_prometheus_for_the_chosen_services():
    panels = [p for p in dashboard_panels() if p["type"] != "row"]
    ids = [p["id"] for p in dashboard_panels()]
    assert len(ids) == len(set(ids)), "panel ids are unique"
    assert len(panels) >= 25
    for panel in panels:
        title = panel["title"]
        assert panel["datasource"] == {"type": "prometheus", "uid": "${DS_PROMETHEUS}"}, title
        assert panel["targets"], f"panel {title!r} has no query"
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24 and grid["h"] > 0, title
        for target in panel["targets"]:
            expr = target.get("expr", "")
            assert expr.strip(), f"panel {title!r} has a target without a PromQL expression"
            assert target["datasource"]["uid"] == "${DS_PROMETHEUS}", title
            assert 'job=~"$job"' in expr and 'instance=~"$instance"' in expr, \
                f"panel {title!r}: {expr} ignores the job and instance variables"


def test_the_dashboard_queries_are_valid_promql(tmp_path):
    """promtool parses each query (Grafana's variables replaced by what they expand to)."""
    rules = []
    for i, expr in enumerate(dashboard_expressions()):
        concrete = (expr.replace("$__rate_interval", "1m").replace("$__interval", "1m")
                    .replace("$job", ".*").replace("$instance", ".*"))
        rules.append({"record": f"dashboard:query_{i}", "expr": concrete})
    path = tmp_path / "dashboard-queries.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    run_promtool("check", "rules", str(path))


# --------------------------------------------------------------------------------------------------
# Against the running stack: everything named is served
# --------------------------------------------------------------------------------------------------

def service_urls(stack) -> dict[str, str]:
    urls = {
        "token-service": stack.token_service_url,
        "user-directory": stack.directory_url,
        "cleanup-worker": (stack.env.get("TESSERA_CLEANUP_WORKER_URL") or "").rstrip("/") or None,
    }
    missing = [name for name, url in urls.items() if not url]
    assert not missing, f"{stack.env_file} names no URL for {missing}"
    return urls


def make_traffic(stack, client, tenant_id: str) -> None:
    """A password sign-up and sign-in, a refresh, a wrong password, and a refresh token used again
    after its grace window (reuse detection)."""
    email = f"observability-{uuid.uuid4().hex[:10]}@example.com"
    signed_up = expect_ok(client.post("/v1/accounts:signUp", {
        "email": email, "password": "correct horse battery", "tenantId": tenant_id, "returnSecureToken": True}))
    assert signed_up["refreshToken"]
    signed_in = expect_ok(client.post("/v1/accounts:signInWithPassword", {
        "email": email, "password": "correct horse battery", "tenantId": tenant_id, "returnSecureToken": True}))
    expect_error(client.post("/v1/accounts:signInWithPassword", {
        "email": email, "password": "wrong horse", "tenantId": tenant_id, "returnSecureToken": True}),
        "INVALID_PASSWORD", "INVALID_LOGIN_CREDENTIALS")
    first = signed_in["refreshToken"]
    client.refresh(first)
    time.sleep(stack.refresh_grace + 0.5)
    expect_error(client.refresh_raw(first), "TOKEN_EXPIRED", "INVALID_REFRESH_TOKEN")


def test_every_metric_the_rules_and_dashboard_use_is_served(stack, client, make_tenant):
    tenant_id = make_tenant(allowPasswordSignup=True)["tenantId"]
    make_traffic(stack, client, tenant_id)
    samples = {service: scrape(url) for service, url in service_urls(stack).items()}
    served = {name for service_samples in samples.values() for name, _, _ in service_samples}
    needed = used_metric_names() - PROMETHEUS_SERIES
    missing = sorted(needed - served)
    assert not missing, f"named by the rules or the dashboard but served by no service: {missing}"

    every = [sample for service_samples in samples.values() for sample in service_samples]
    for name, labels in LABELS_USED.items():
        series = [l for n, l, _ in every if n == name]
        assert series, f"{name} is not served"
        for label, values in labels.items():
            assert all(label in l for l in series), f"{name} lacks the label {label}: {series[:3]}"
            if values:
                seen = {l[label] for l in series}
                assert values <= seen, f"{name}: {label} takes {sorted(seen)}, the rules expect {sorted(values)}"


def test_library_metrics_through_swift_metrics_are_served_when_turned_on(stack):
    """With TESSERA_HTTP_LIBRARY_METRICS=true a service adds Hummingbird's MetricsMiddleware, whose
    series go through swift-metrics into the service's own registry under Prometheus names; without
    it (the default) they are absent. Checked on the cleanup worker, restarted with the setting and
    then as it was."""
    url = service_urls(stack)["cleanup-worker"]
    assert not LIBRARY_SERIES & {name for name, _, _ in scrape(url)}, "off by default"
    run_stack(stack, "restart", "cleanup-worker", "TESSERA_HTTP_LIBRARY_METRICS=true")
    try:
        requests.get(f"{url}/healthz", timeout=5).raise_for_status()
        samples = scrape(url)
        served = {name for name, _, _ in samples}
        assert LIBRARY_SERIES <= served, f"missing {sorted(LIBRARY_SERIES - served)}"
        routes = {labels.get("http_route") for name, labels, _ in samples if name == "hb_requests_total"}
        assert "/healthz" in routes, routes
    finally:
        run_stack(stack, "restart", "cleanup-worker")
    assert not LIBRARY_SERIES & {name for name, _, _ in scrape(url)}
