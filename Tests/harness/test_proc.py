"""Processes, pid files, the lock, ports and `status` (with fake pid files; no stack runs)."""
import http.server
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest
from conftest import run_stack

from stacklib import cli, config, postgres, proc, services
from stacklib.context import Stack
from stacklib.output import StackError


def sleeper(*marker: str) -> subprocess.Popen:
    """A process whose command line ends with MARKER (e.g. '/x/user-directory', 'serve'), once it has one."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", *marker])
    for _ in range(200):
        with open(f"/proc/{child.pid}/cmdline", "rb") as handle:
            if " ".join(marker).encode() in handle.read().replace(b"\0", b" "):
                break
        time.sleep(0.01)
    return child


@pytest.fixture
def processes():
    started = []
    yield started
    for child in started:
        child.kill()
        child.wait()


def test_pid_alive(processes):
    child = sleeper("/bin/user-directory", "serve")
    processes.append(child)
    pid = str(child.pid)
    assert proc.pid_alive(pid, "/user-directory serve")
    assert not proc.pid_alive(pid, "/token-service serve")
    for garbage in ("", "abc", "-1", "12 34", "99999999999999999999"):
        assert not proc.pid_alive(garbage, "")


def test_a_zombie_is_not_alive(processes):
    child = sleeper("/bin/token-service", "serve")
    child.kill()
    for _ in range(50):
        with open(f"/proc/{child.pid}/stat") as handle:
            if handle.read().rsplit(") ", 1)[1].startswith("Z"):
                break
        time.sleep(0.05)
    assert not proc.pid_alive(str(child.pid), "/token-service serve")
    child.wait()
    assert not proc.pid_alive(str(child.pid), "")


def test_pidfile_pid(tmp_path):
    path = tmp_path / "x.pid"
    assert proc.pidfile_pid(str(path)) == ""
    path.write_text(" 123 \nmore\n")
    assert proc.pidfile_pid(str(path)) == "123"
    proc.write_pidfile(str(path), 456)
    assert path.read_text() == "456\n"


def test_stop_pid_terminates_and_says_so(processes, capsys):
    child = sleeper("/bin/cleanup-worker", "serve")
    processes.append(child)
    proc.stop_pid("cleanup-worker", str(child.pid), "/cleanup-worker serve")
    assert child.wait(5) == -signal.SIGTERM
    assert capsys.readouterr().err == f"==> stopping cleanup-worker (pid {child.pid})\n"
    proc.stop_pid("cleanup-worker", str(child.pid), "/cleanup-worker serve")  # gone: nothing to say
    assert capsys.readouterr().err == ""


def test_stop_pid_leaves_a_process_with_another_command_line_alone(processes):
    child = sleeper("/bin/something-else")
    processes.append(child)
    proc.stop_pid("cleanup-worker", str(child.pid), "/cleanup-worker serve")
    assert child.poll() is None


# ---------------------------------------------------------------------------------------------------
# the lock


def test_the_lock_is_exclusive_across_processes_and_reentrant(tmp_path):
    path = str(tmp_path / "run" / "lock")
    lock = proc.Lock(path)
    lock.acquire()
    lock.acquire()  # reentrant
    assert lock.held
    holder = subprocess.run([sys.executable, "-c", "import fcntl,sys; f=open(sys.argv[1],'w');"
                             "fcntl.flock(f, fcntl.LOCK_EX|fcntl.LOCK_NB)", path], capture_output=True)
    assert holder.returncode != 0, "another process took the held lock"
    other = proc.Lock(path, timeout=0.3)
    started = time.monotonic()
    with pytest.raises(StackError) as raised:
        other.acquire()
    assert time.monotonic() - started >= 0.3
    assert raised.value.message == f"another scripts/stack command holds {path}"
    lock.release()
    other.acquire()
    other.release()


def test_the_lock_waits_for_its_holder(tmp_path):
    path = str(tmp_path / "lock")
    lock = proc.Lock(path)
    lock.acquire()
    threading.Timer(0.3, lock.release).start()
    other = proc.Lock(path, timeout=5)
    started = time.monotonic()
    other.acquire()
    assert 0.2 < time.monotonic() - started < 3
    other.release()


def test_children_never_inherit_the_lock(tmp_path):
    lock = proc.Lock(str(tmp_path / "lock"))
    lock.acquire()
    child = subprocess.Popen(["sleep", "5"], close_fds=False)
    try:
        targets = {os.readlink(f"/proc/{child.pid}/fd/{fd}") for fd in os.listdir(f"/proc/{child.pid}/fd")}
        assert str(tmp_path / "lock") not in targets
    finally:
        child.kill()
        child.wait()
        lock.release()


def test_a_command_waits_for_another_one_holding_the_lock(stack_dir):
    """`stop` of a stack whose lock another command holds fails after the wait (shortened here)."""
    (stack_dir / "run").mkdir()
    lock = proc.Lock(str(stack_dir / "run" / "lock"))
    lock.acquire()
    try:
        holder = Stack({"TESSERA_STACK_DIR": str(stack_dir)}, config.resolve_paths({"TESSERA_STACK_DIR": str(stack_dir)}))
        holder.lock.timeout = 0.2
        with pytest.raises(StackError, match="another scripts/stack command holds"):
            holder.lock.acquire()
    finally:
        lock.release()
    proc_ = run_stack("stop", "token-service", env={"TESSERA_STACK_DIR": str(stack_dir)})
    assert proc_.returncode == 0, proc_.stderr


# ---------------------------------------------------------------------------------------------------
# ports and probes


def test_port_in_use_and_http_status():
    server = http.server.HTTPServer(("127.0.0.1", 0), type("H", (http.server.BaseHTTPRequestHandler,), {
        "do_GET": lambda self: (self.send_response(200 if self.path == "/readyz" else 503), self.end_headers()),
        "log_message": lambda self, *args: None}))
    port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        assert proc.port_in_use(port)
        assert proc.http_status(f"http://127.0.0.1:{port}/readyz") == "200"
        assert proc.http_status(f"http://127.0.0.1:{port}/other") == "503"
    finally:
        server.shutdown()
        server.server_close()
    assert not proc.port_in_use(port)
    assert proc.http_status(f"http://127.0.0.1:{port}/readyz") == "000"


def test_ephemeral_warning():
    assert proc.ephemeral_warning([9098, 9099], None) is None
    assert proc.ephemeral_warning([9098, 9099], (32768, 60999)) is None
    message = proc.ephemeral_warning([39598, 39599, 39600], (32768, 60999))
    assert message == ("port 39598 lies in this machine's range for outgoing connections (32768-60999, "
                       "net.ipv4.ip_local_port_range): a server may fail to start with 'Address already in use'; "
                       "a TESSERA_PORT below 32768 avoids it")


# ---------------------------------------------------------------------------------------------------
# status


def fake_stack(stack_dir, processes, running=("user-directory", "token-service", "cleanup-worker", "nginx"),
               pg_ha=0):
    env = {"TESSERA_STACK_DIR": str(stack_dir)}
    paths = config.resolve_paths(env)
    config.make_dirs(paths)
    cfg = config.compute_config({"TESSERA_PORT": "23099", "TESSERA_PG_HA": str(pg_ha)}, paths.secrets_dir, "/b")
    config.save_config(paths, cfg)
    pids = {}
    for part in running:
        if part == "nginx":
            child = sleeper("-c", paths.nginx_conf)
            proc.write_pidfile(paths.nginx_pidfile, child.pid)
        else:
            child = sleeper(f"/b/{part}", "serve")
            proc.write_pidfile(paths.service_pidfile(part), child.pid)
        processes.append(child)
        pids[part] = child.pid
    return Stack(env, paths), pids


def test_status_of_a_stack_with_everything_stopped(stack_dir, processes):
    fake_stack(stack_dir, processes, running=())
    proc_ = run_stack("status", env={"TESSERA_STACK_DIR": str(stack_dir)})
    assert proc_.returncode == 3
    assert proc_.stdout == (f"stack dir {stack_dir}\n"
                            "  postgres        stopped\n"
                            "  user-directory  stopped\n"
                            "  token-service   stopped\n"
                            "  cleanup-worker  stopped\n"
                            "  nginx           stopped\n")


def test_status_with_fake_pid_files(stack_dir, processes, monkeypatch):
    st, pids = fake_stack(stack_dir, processes)
    # PostgreSQL stopped: 3, the running parts with their pids and ports, no URL.
    lines, status = cli.status_lines(st)
    assert status == 3
    assert lines == [f"stack dir {stack_dir}", "  postgres        stopped",
                     f"  user-directory  running  pid {pids['user-directory']:<8} port 23101",
                     f"  token-service   running  pid {pids['token-service']:<8} port 23100",
                     f"  cleanup-worker  running  pid {pids['cleanup-worker']:<8} port 23102",
                     f"  nginx           running  pid {pids['nginx']:<8} port 23099"]
    # With PostgreSQL up as well: 0 and the URL.
    monkeypatch.setattr(postgres, "single_running", lambda st: True)
    monkeypatch.setattr(postgres, "pg_pid", lambda st: "4242")
    lines, status = cli.status_lines(st)
    assert status == 0
    assert lines[1] == "  postgres        running  pid 4242     port 23103"
    assert lines[-1] == "URL http://127.0.0.1:23099"
    # A pid file whose process is something else does not count; nor does a dead pid.
    other = sleeper("/b/not-the-worker", "serve")
    processes.append(other)
    proc.write_pidfile(st.paths.service_pidfile("cleanup-worker"), other.pid)
    lines, status = cli.status_lines(st)
    assert status == 3 and "  cleanup-worker  stopped" in lines and not lines[-1].startswith("URL")
    os.kill(pids["token-service"], signal.SIGKILL)
    processes[1].wait()
    assert not services.service_alive(st, "token-service")


def test_status_of_the_ha_profile_names_its_parts(stack_dir, processes, monkeypatch):
    st, pids = fake_stack(stack_dir, processes, pg_ha=1)
    node1 = sleeper("/usr/bin/pg_autoctl", "run")
    processes.append(node1)
    proc.write_pidfile(st.paths.pgha_pidfile("node1"), node1.pid)
    os.makedirs(st.paths.pgha_data("node1"))
    with open(f"{st.paths.pgha_data('node1')}/postmaster.pid", "w") as handle:
        handle.write("777\n/data\n")
    monkeypatch.setattr(postgres, "pgha_states", lambda st: [("node1", "23103", "wait_primary", "wait_primary"),
                                                             ("node2", "23104", "catchingup", "secondary")])
    monkeypatch.setattr(postgres, "pgha_sync_standbys", lambda st, name: "")
    lines, status = cli.status_lines(st)
    assert status == 3
    assert lines[1:4] == [
        "  pg-monitor      stopped",
        f"  pg-node1        running  pid {node1.pid:<8} port 23103  postgres pid 777      "
        "wait_primary (synchronous standby: none)",
        "  pg-node2        stopped"]


def test_roles_from_the_monitor():
    states = [("node1", "1", "primary", "primary"), ("node2", "2", "catchingup", "secondary")]
    assert postgres.primary_of(states) == "node1"
    assert postgres.role_of(states, "node2") == "catchingup -> secondary"
    assert postgres.role_of(states, "node3") == ""
    assert postgres.primary_of([("node1", "1", "primary", "draining")]) is None
    assert postgres.primary_of([("node2", "1", "single", "single")]) == "node2"


def ignored_signals(pid) -> int:
    with open(f"/proc/{pid}/status") as handle:
        return int(next(line for line in handle if line.startswith("SigIgn:")).split()[1], 16)


def test_a_started_service_gets_exactly_its_environment_a_session_and_a_log_line(stack_dir, tmp_path, processes):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    worker = bin_dir / "cleanup-worker"
    worker.write_text(f"#!{sys.executable}\nimport time\ntime.sleep(30)\n")
    worker.chmod(0o755)
    with socket.socket() as probe:  # a free port for the fake worker (base + 3)
        probe.bind(("127.0.0.1", 0))
        base = probe.getsockname()[1] - 3
    env = {"TESSERA_STACK_DIR": str(stack_dir), "PATH": os.environ["PATH"], "HOME": "/home/x", "PGPORT": "1",
           "LOG_LEVEL": "debug"}
    paths = config.resolve_paths(env)
    config.make_dirs(paths)
    st = Stack(env, paths)
    st.config = config.compute_config({**env, "TESSERA_PORT": str(base), "TESSERA_ADMIN_PORT": "2000"},
                                      paths.secrets_dir, str(bin_dir))
    services.start_service(st, "cleanup-worker")
    pid = int(proc.pidfile_pid(paths.service_pidfile("cleanup-worker")))
    processes.append(type("Pid", (), {"kill": lambda self: os.kill(pid, signal.SIGKILL),
                                      "wait": lambda self: os.waitpid(pid, 0)})())
    for _ in range(100):
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            if b"cleanup-worker" in handle.read():
                break
        time.sleep(0.02)
    with open(f"/proc/{pid}/environ", "rb") as handle:
        environ = dict(item.split("=", 1) for item in handle.read().decode().split("\0") if item)
    assert environ == config.service_env("cleanup-worker", st.cfg, paths, env)
    assert environ["LOG_LEVEL"] == "debug" and "PGPORT" not in environ
    assert os.getsid(pid) == pid, "the service leads a session of its own"
    # No signal ignored that this process does not ignore itself (a caller started in the background,
    # or under nohup, passes its own ignored SIGINT, SIGQUIT or SIGHUP on, as the bash version did).
    mask = 1 << (signal.SIGINT - 1) | 1 << (signal.SIGQUIT - 1) | 1 << (signal.SIGTERM - 1) | 1 << (signal.SIGHUP - 1)
    assert ignored_signals(pid) & mask == ignored_signals("self") & mask
    log = (stack_dir / "logs" / "cleanup-worker.log").read_text()
    assert log.startswith("--- ") and log.endswith(" starting cleanup-worker serve\n")


def test_gone_looks_twice():
    answers = iter([False, True])
    assert not proc.gone(lambda: next(answers), settle=0.01), "one look at a process just started is not enough"
    answers = iter([False, False])
    assert proc.gone(lambda: next(answers), settle=0.01)
    assert not proc.gone(lambda: True, settle=0.01)
