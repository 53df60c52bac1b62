"""The cleanup worker: it runs, reaches the directory over the authenticated internal API,
reports health, and `run-once` performs one sweep and exits 0."""

from __future__ import annotations

import subprocess

import requests

from conftest import Stack, stack_command_env, stack_script


def test_worker_reports_ready_when_it_reaches_the_directory(stack: Stack):
    url = stack.env.get("TESSERA_CLEANUP_WORKER_URL")
    assert url, f"TESSERA_CLEANUP_WORKER_URL missing from {stack.env_file}"
    for path in ("/healthz", "/readyz"):
        resp = requests.get(url + path, timeout=10)
        assert resp.status_code == 200, f"{path}: {resp.status_code} {resp.text}"
        assert resp.json()["status"] == "ok" and resp.json()["version"], resp.text


def test_worker_run_once_sweeps_and_exits_zero(stack: Stack):
    done = subprocess.run(
        [str(stack_script()), "worker-run-once"], env=stack_command_env(stack),
        capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    # "skipped" when another worker (the stack's loop) holds the sweep lease at that moment.
    assert "sweep finished" in done.stdout or "sweep skipped" in done.stdout, done.stdout


def test_ingress_does_not_expose_the_internal_api(stack: Stack):
    resp = requests.get(
        stack.url + "/internal/v1/status",
        headers={"X-Tessera-Internal": stack.env["TESSERA_INTERNAL_SECRET"]}, timeout=10)
    # /internal/* is routed to the token service, which has no such route.
    assert resp.status_code == 404, resp.text
