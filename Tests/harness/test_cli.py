"""scripts/stack as a program: usage, exit codes and the messages other scripts and tests match on."""
from conftest import ROOT, run_stack

from stacklib import cli


def test_help_prints_the_usage_on_stdout_and_exits_0():
    for word in ("help", "-h", "--help"):
        proc = run_stack(word)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == cli.USAGE
        assert proc.stdout.startswith("scripts/stack — the local Tessera stack")
        for command in ("up", "down", "run", "restart SERVICE", "stop SERVICE", "start SERVICE", "status",
                        "logs [-f] [PART]", "worker-run-once", "pg-autoctl ARGS"):
            assert f"scripts/stack {command}" in proc.stdout


def test_no_command_prints_the_usage_on_stderr_and_exits_2():
    proc = run_stack()
    assert proc.returncode == 2
    assert proc.stdout == "" and proc.stderr == cli.USAGE


def test_an_unknown_command_is_named_and_exits_2():
    proc = run_stack("upp")
    assert proc.returncode == 2
    assert proc.stderr.startswith("unknown command: upp\n\n")
    assert proc.stderr.endswith(cli.USAGE)


def test_restart_and_start_name_a_service(stack_dir):
    for command in ("restart", "start", "stop"):
        for args in ((), ("nginx",), ("postgres",)):
            proc = run_stack(command, *args, env={"TESSERA_STACK_DIR": str(stack_dir)})
            assert proc.returncode == 1
            name = args[0] if args else ""
            assert proc.stderr == (f"error: unknown service '{name}' "
                                   "(expected token-service, user-directory or cleanup-worker)\n")


def test_restart_refuses_what_is_not_a_pass_through_setting_before_looking_for_the_stack(tmp_path):
    # tests/stack's test_hash_queue matches on "pass-through"; nothing is touched (no stack here at all).
    missing = tmp_path / "none"
    for bad in ("DATABASE_URL=postgres://elsewhere/db", "TESSERA_HASH_THREADS", "NOT_A_SETTING=1", "SMTP_=x",
                "TESSERA_PORT=1"):
        proc = run_stack("restart", "user-directory", bad, env={"TESSERA_STACK_DIR": str(missing)})
        assert proc.returncode == 1
        assert "pass-through" in proc.stderr and f"'{bad}'" in proc.stderr
    assert not missing.exists()


def test_commands_on_a_missing_stack(tmp_path):
    missing = tmp_path / "none"
    env = {"TESSERA_STACK_DIR": str(missing)}
    proc = run_stack("status", env=env)
    assert (proc.returncode, proc.stdout) == (3, f"stack dir {missing} does not exist (nothing running)\n")
    proc = run_stack("down", env=env)
    assert (proc.returncode, proc.stderr) == (0, f"==> nothing to stop in {missing}\n")
    for args in (("restart", "token-service"), ("start", "cleanup-worker"), ("stop", "user-directory"),
                 ("logs",), ("worker-run-once",), ("pg-autoctl", "show", "state")):
        proc = run_stack(*args, env=env)
        assert proc.returncode == 1, args
        assert proc.stderr == f"error: no stack in {missing} (start one with: scripts/stack up)\n", args
    assert not missing.exists()


def test_pg_autoctl_needs_the_ha_profile(stack_dir):
    (stack_dir / "run").mkdir()
    proc = run_stack("pg-autoctl", "show", "state", env={"TESSERA_STACK_DIR": str(stack_dir)})
    assert proc.returncode == 1
    assert proc.stderr == (f"error: no pg_auto_failover formation in {stack_dir} "
                           "(start one with: TESSERA_PG_HA=1 scripts/stack up)\n")


def test_up_refuses_bad_settings_before_installing_or_building_anything(tmp_path):
    target = tmp_path / "stack"
    cases = {
        "TESSERA_PORT": ("80", "TESSERA_PORT must be a number between 1024 and 65531 (got '80')"),
        "TESSERA_BUILD": ("fast", "TESSERA_BUILD must be debug or release (got 'fast')"),
        "TESSERA_READY_TIMEOUT": ("1m", "TESSERA_READY_TIMEOUT must be a number of seconds"),
        "TESSERA_PG_HA": ("yes", "TESSERA_PG_HA must be 1 (the HA profile) or 0/unset (got 'yes')"),
    }
    for name, (value, message) in cases.items():
        for command in ("up", "run"):
            proc = run_stack(command, env={"TESSERA_STACK_DIR": str(target), name: value})
            assert proc.returncode == 1, (name, proc.stderr)
            assert proc.stderr.startswith(f"error: {message}\n"), (name, proc.stderr)
            assert not target.exists()


def test_the_stack_directory_must_not_contain_spaces_or_quotes(tmp_path):
    for name in ("with space", "quo'te", 'dq"uote', "back\\slash"):
        proc = run_stack("status", env={"TESSERA_STACK_DIR": str(tmp_path / name)})
        assert proc.returncode == 1
        assert "the stack directory path must not contain spaces, quotes or backslashes" in proc.stderr


def test_logs_refuses_an_unknown_part(stack_dir):
    (stack_dir / "run").mkdir()
    proc = run_stack("logs", "nginx-everything", env={"TESSERA_STACK_DIR": str(stack_dir)})
    assert (proc.returncode, proc.stderr) == (1, "error: unknown log 'nginx-everything'\n")


def test_logs_prints_the_last_100_lines_of_each_file(stack_dir):
    logs = stack_dir / "logs"
    logs.mkdir(parents=True)
    (stack_dir / "run").mkdir()
    (logs / "token-service.log").write_text("".join(f"line {i}\n" for i in range(150)))
    (logs / "cleanup-worker.log").write_text("one\ntwo")
    proc = run_stack("logs", env={"TESSERA_STACK_DIR": str(stack_dir)})
    assert proc.returncode == 0, proc.stderr
    expected = (f"==> {logs}/cleanup-worker.log <==\none\ntwo"
                f"==> {logs}/token-service.log <==\n" + "".join(f"line {i}\n" for i in range(50, 150)))
    assert proc.stdout == expected
    proc = run_stack("logs", "token-service", env={"TESSERA_STACK_DIR": str(stack_dir)})
    assert proc.stdout.startswith(f"==> {logs}/token-service.log <==\nline 50\n")


def test_log_files_of_each_part(tmp_path):
    logs = tmp_path / "logs"
    (logs / "pg-ha-node1-server").mkdir(parents=True)
    for name in ("postgres.log", "pg-ha-node2.log", "pg-ha-monitor.log", "b.log", "a.log"):
        (logs / name).write_text("x\n")
    import os
    old, new = logs / "pg-ha-node1-server" / "postgresql-1.log", logs / "pg-ha-node1-server" / "postgresql-2.log"
    old.write_text("old\n")
    new.write_text("new\n")
    os.utime(old, (1000, 1000))
    d = str(logs)
    assert cli.log_files(d, "") == sorted(str(p) for p in logs.glob("*.log"))
    assert cli.log_files(d, "postgres") == [f"{d}/postgres.log", f"{d}/pg-ha-monitor.log", f"{d}/pg-ha-node2.log"]
    assert cli.log_files(d, "pg-node1") == [f"{d}/pg-ha-node1.log", f"{d}/pg-ha-node1-server/postgresql-2.log"]
    assert cli.log_files(d, "pg-monitor") == [f"{d}/pg-ha-monitor.log"]
    assert cli.log_files(d, "nginx") == [f"{d}/nginx-error.log", f"{d}/nginx-access.log"]
    for part in ("token-service", "user-directory", "cleanup-worker", "migrate", "keys", "initdb", "nginx-access",
                 "nginx-error"):
        assert cli.log_files(d, part) == [f"{d}/{part}.log"]


def test_the_entry_point_is_a_bash_shim_that_runs_the_package():
    text = (ROOT / "scripts" / "stack").read_text()
    assert text.startswith("#!/usr/bin/env bash\n")
    assert 'exec python3 -I -B "$ROOT/scripts/stacklib" "$@"' in text


def test_a_closed_pipe_ends_logs_quietly(stack_dir):
    (stack_dir / "run").mkdir()
    (stack_dir / "logs").mkdir()
    for name in ("a", "b", "c"):
        (stack_dir / "logs" / f"{name}.log").write_text("line\n" * 100)
    import subprocess
    done = subprocess.run(f"'{ROOT}/scripts/stack' logs | head -n 1", shell=True, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "TESSERA_STACK_DIR": str(stack_dir)}, timeout=30)
    assert done.stdout == f"==> {stack_dir}/logs/a.log <==\n"
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr, done.stderr
