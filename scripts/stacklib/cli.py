"""The commands of scripts/stack, and its usage."""
from __future__ import annotations

import glob
import os
import signal
import subprocess
import sys
import time
from typing import Mapping

from . import postgres, proc, services
from .config import (PG_AUTOCTL, PG_BIN, PG_LIB, ROOT, SERVICES, build_flags, check_overrides, apply_overrides,
                     compute_config, default_bin_dir, env_differences, load_config, make_dirs, pg_ha_setting,
                     pgha_secret, resolve_paths, save_config, service_env, setting, validate_env, write_env_file)
from .context import Stack
from .output import StackError, die, info, warn

USAGE = '''\
scripts/stack — the local Tessera stack: PostgreSQL 15, the three services and the nginx ingress,
all on 127.0.0.1, all state under one stack directory (default .stack/).

  scripts/stack up                 install what is missing, build, start everything, write <stack>/env
  scripts/stack down               stop what this stack directory started (removes nothing else)
  scripts/stack run                up, then stay in the foreground until Ctrl-C / SIGTERM, then down
  scripts/stack restart SERVICE [NAME=VALUE ...]
                                   stop and start one service with the same environment, wait for /readyz;
                                   NAME=VALUE changes a pass-through setting for this start only
                                   (NAME= drops it: the service's default)
  scripts/stack stop SERVICE       stop one service (token-service, user-directory, cleanup-worker)
  scripts/stack start SERVICE [NAME=VALUE ...]
                                   start one stopped service with the saved environment (and changes)
  scripts/stack status             which parts are running (exit 0 when all are, 3 otherwise)
  scripts/stack logs [-f] [PART]   tail the logs (PART: a service, postgres, nginx, nginx-access,
                                   pg-monitor, pg-node1, pg-node2)
  scripts/stack worker-run-once    run one cleanup sweep (`cleanup-worker run-once`) with the stack env
  scripts/stack pg-autoctl ARGS... the HA profile's pg_autoctl, as the postgres user with the stack's
                                   pg_autoctl files; --pgdata defaults to node 1 (whose configuration names
                                   the monitor): `pg-autoctl show state`, `pg-autoctl perform switchover`

Configuration (environment; see docs/configuration.md, "Local stack"):
  TESSERA_PORT (9099)       ingress; token-service +1, user-directory +2, cleanup-worker +3, PostgreSQL +4;
                            with TESSERA_PG_HA=1 also the second PostgreSQL node +5, the pg_auto_failover
                            monitor +6 (tests and tools use +25..+33: SMTP sink, fake IdP, tracing, bench)
  TESSERA_PG_HA=1           the HA profile: instead of the single PostgreSQL, a pg_auto_failover monitor and
                            two PostgreSQL 15 nodes with synchronous replication ("PostgreSQL HA profile" in
                            scripts/stacklib/postgres.py); DATABASE_URL then names both nodes
                            (target_session_attrs=read-write)
  TESSERA_ADMIN_PORT (TESSERA_PORT-1)  the ingress's admin plane (docs/protocol/admin.md#the-admin-plane)
  TESSERA_STACK_DIR (.stack), TESSERA_BUILD (debug|release), TESSERA_SKIP_BUILD=1 (use existing binaries),
  TESSERA_BIN_DIR (override the binary directory), TESSERA_READY_TIMEOUT (seconds, 60),
  TESSERA_PROJECT_ID (tessera-local), TESSERA_API_KEY, TESSERA_ADMIN_TOKEN, TESSERA_INTERNAL_SECRET,
  TESSERA_DB_PASSWORD (generated once per stack dir, stored under <stack>/secrets/, used verbatim when given),
  and the pass-through service settings listed in PASSTHROUGH_VARS / PASSTHROUGH_PREFIXES
  (scripts/stacklib/config.py).
  Two of those have a default of the stack's own (service_env): TESSERA_PUBLIC_URL is the stack's URL
  (http://127.0.0.1:TESSERA_PORT), and the token service and the directory get
  TESSERA_TRUSTED_PROXIES=127.0.0.2, the address nginx connects to them from (proxy_bind).

Once a stack is running, its configuration is frozen in <stack>/run/config: a second `up`, `restart`,
`start` and `worker-run-once` reuse it, so a restarted service gets exactly the environment it had
(the caller's environment does not leak in). Run `down` first to apply a changed configuration;
NAME=VALUE arguments to `restart`/`start` change pass-through settings for that one start, without
rewriting the saved configuration, so a later plain `restart` goes back to it.
'''


class Usage(Exception):
    """A wrong command line: usage on stderr, exit status 2."""


# ---------------------------------------------------------------------------------------------------
# install and build


def _pg_ha_installed() -> bool:
    return os.access(PG_AUTOCTL, os.X_OK) and os.path.isfile(f"{PG_LIB}/pgautofailover.so")


def _have(command: str) -> bool:
    import shutil
    return shutil.which(command) is not None


def missing_packages(env: Mapping[str, str]) -> list[str]:
    packages = []
    if not os.access(f"{PG_BIN}/postgres", os.X_OK):
        packages.append("postgresql")
    if not os.access("/usr/sbin/nginx", os.X_OK) and not _have("nginx"):
        packages.append("nginx-light")
    if not _have("curl"):
        packages.append("curl")
    if not _have("openssl"):
        packages.append("openssl")
    # The HA profile: pg_autoctl (pg-auto-failover-cli) and the monitor's extension, one Debian package.
    if pg_ha_setting(env) and not _pg_ha_installed():
        packages.append("postgresql-15-auto-failover")
    return packages


def install_packages(env: Mapping[str, str]) -> None:
    packages = missing_packages(env)
    if not packages:
        return
    if not _have("apt-get"):
        die(f"missing {' '.join(packages)} and apt-get is not available; install them yourself")
    info(f"installing {' '.join(packages)}")
    for argv in (["apt-get", "update"],
                 ["env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "install", "-y", *packages]):
        if subprocess.run(proc.as_root(argv)).returncode != 0:
            die(f"{' '.join(argv)} failed")
    if not os.access(f"{PG_BIN}/postgres", os.X_OK):
        die(f"PostgreSQL 15 is still missing at {PG_BIN} after installing")
    if pg_ha_setting(env) and not _pg_ha_installed():
        die("pg_auto_failover is still missing after installing postgresql-15-auto-failover "
            f"({PG_AUTOCTL}, {PG_LIB}/pgautofailover.so)")


def build_binaries(env: Mapping[str, str]) -> str:
    """Builds the services (unless TESSERA_SKIP_BUILD=1); returns the directory of their binaries."""
    flags = build_flags(env)
    if setting(env, "TESSERA_SKIP_BUILD", "0") == "1":
        bin_dir = default_bin_dir(env)
    else:
        info(f"building: swift build{' ' + ' '.join(flags) if flags else ''}")
        for argv in ([f"{ROOT}/scripts/build-deps"], ["swift", "build", *flags]):
            done = subprocess.run(argv, cwd=ROOT)
            if done.returncode != 0:
                raise StackError(f"{' '.join(argv)} failed (exit {done.returncode})", done.returncode)
        if setting(env, "TESSERA_BIN_DIR"):
            bin_dir = env["TESSERA_BIN_DIR"]
        else:
            done = subprocess.run(["swift", "build", *flags, "--show-bin-path"], cwd=ROOT,
                                  stdout=subprocess.PIPE, text=True)
            if done.returncode != 0:
                raise StackError("swift build --show-bin-path failed", done.returncode)
            bin_dir = done.stdout.rstrip("\n")
    for service in SERVICES:
        binary = f"{bin_dir}/{service}"
        if not os.access(binary, os.X_OK):
            die(f"missing binary {binary} (build it, or unset TESSERA_SKIP_BUILD)")
    return bin_dir


# ---------------------------------------------------------------------------------------------------
# commands


def _stack(env: Mapping[str, str], create: bool = False) -> Stack:
    return Stack(env, resolve_paths(env, create=create))


def _require_stack(st: Stack) -> None:
    if not os.path.isdir(st.paths.run_dir):
        die(f"no stack in {st.paths.stack_dir} (start one with: scripts/stack up)")


def _warn_if_ephemeral(st: Stack) -> None:
    message = proc.ephemeral_warning(st.cfg.listening_ports(), proc.ephemeral_range())
    if message:
        warn(message)


def _compute(st: Stack, bin_dir: str) -> None:
    st.config = compute_config(st.env, st.paths.secrets_dir, bin_dir)
    _warn_if_ephemeral(st)


def load_or_compute_config(st: Stack) -> None:
    """For commands that act on an existing stack: its saved config, else what `up` would compute."""
    st.config = load_config(st.paths)
    if st.config is None:
        make_dirs(st.paths)
        _compute(st, default_bin_dir(st.env))


def any_part_running(st: Stack) -> bool:
    return (postgres.running(st) or services.nginx_alive(st)
            or any(services.service_alive(st, service) for service in SERVICES))


def summary(st: Stack) -> str:
    cfg, paths = st.cfg, st.paths
    return f"""
Tessera is running.
  URL          {cfg.stack_url}
  admin URL    {cfg.admin_url}   (the admin API; not on the URL above)
  project id   {cfg.project_id}
  API key      {cfg.api_key}
  admin token  {cfg.admin_token}
  env file     {paths.env_file}   (source it: . {paths.env_file})
  logs         {paths.log_dir}    (scripts/stack logs [-f] [service])
"""


def cmd_up(env: Mapping[str, str], st: Stack | None = None) -> int:
    validate_env(env)
    st = st or _stack(env, create=True)
    install_packages(env)
    bin_dir = build_binaries(env)
    make_dirs(st.paths)
    st.lock.acquire()
    loaded = load_config(st.paths) if any_part_running(st) else None
    if loaded is not None:
        st.config = loaded
        info(f"reusing the configuration of the running stack in {st.paths.stack_dir}")
        for name in env_differences(env, loaded):
            warn(f"{name} in the environment differs from the running stack in {st.paths.stack_dir}; it is "
                 "ignored (run 'scripts/stack down' first to apply it)")
        if loaded.bin_dir != bin_dir:
            warn(f"the running stack uses binaries from {loaded.bin_dir} (not {bin_dir})")
    else:
        _compute(st, bin_dir)
    save_config(st.paths, st.cfg)
    postgres.start(st)
    services.start_service(st, "user-directory")
    services.wait_service_ready(st, "user-directory")
    services.start_service(st, "token-service")
    services.start_service(st, "cleanup-worker")
    services.start_nginx(st)
    services.wait_service_ready(st, "token-service")
    services.wait_service_ready(st, "cleanup-worker")
    services.wait_ready(st, "nginx", f"{st.cfg.stack_url}/healthz", f"{st.paths.log_dir}/nginx-error.log")
    monitor_password = pgha_secret(st.paths.secrets_dir, "pg-ha-monitor-password") if st.cfg.pg_ha else None
    write_env_file(st.paths, st.cfg, monitor_password)
    st.lock.release()
    sys.stdout.write(summary(st))
    sys.stdout.flush()
    return 0


def cmd_down(env: Mapping[str, str], st: Stack | None = None) -> int:
    st = st or _stack(env)
    if not os.path.isdir(st.paths.run_dir):
        info(f"nothing to stop in {st.paths.stack_dir}")
        return 0
    st.lock.acquire()
    services.stop_nginx(st)
    services.stop_service(st, "token-service")
    services.stop_service(st, "cleanup-worker")
    services.stop_service(st, "user-directory")
    postgres.stop(st)
    st.lock.release()
    info(f"stack in {st.paths.stack_dir} stopped")
    return 0


def _prepare_service_command(env: Mapping[str, str], args: list[str]) -> tuple[Stack, str]:
    """restart/start: SERVICE [NAME=VALUE ...] checked, the stack's configuration loaded with the changes."""
    service = args[0] if args else ""
    services.check_service_name(service)
    overrides = args[1:]
    check_overrides(overrides)
    st = _stack(env)
    _require_stack(st)
    st.lock.acquire()
    load_or_compute_config(st)
    st.cfg.passthrough, st.dropped = apply_overrides(st.cfg.passthrough, overrides)
    return st, service


def cmd_restart(env: Mapping[str, str], args: list[str]) -> int:
    st, service = _prepare_service_command(env, args)
    services.stop_service(st, service)
    services.start_service(st, service)
    services.wait_service_ready(st, service)
    st.lock.release()
    info(f"{service} restarted (pid {proc.pidfile_pid(st.paths.service_pidfile(service))})")
    return 0


def cmd_start(env: Mapping[str, str], args: list[str]) -> int:
    st, service = _prepare_service_command(env, args)
    services.start_service(st, service)
    services.wait_service_ready(st, service)
    st.lock.release()
    return 0


def cmd_stop(env: Mapping[str, str], args: list[str]) -> int:
    service = args[0] if args else ""
    services.check_service_name(service)
    st = _stack(env)
    _require_stack(st)
    st.lock.acquire()
    services.stop_service(st, service)
    st.lock.release()
    return 0


def status_lines(st: Stack) -> tuple[list[str], int]:
    """The lines of `status` and its exit status (0 when every part runs, 3 otherwise)."""
    st.config = load_config(st.paths) if os.path.isfile(st.paths.config_file) else None
    cfg = st.config
    lines = [f"stack dir {st.paths.stack_dir}"]
    status = 0
    if cfg is not None and cfg.pg_ha:
        ha_lines, all_up = postgres.pgha_status_lines(st)
        lines += ha_lines
        if not all_up:
            status = 3
    elif postgres.single_running(st):
        lines.append(f"  {'postgres':<15} running  pid {postgres.pg_pid(st):<8} port {cfg.pg_port if cfg else '?'}")
    else:
        lines.append(f"  {'postgres':<15} stopped")
        status = 3
    for service in SERVICES:
        if services.service_alive(st, service):
            pid = proc.pidfile_pid(st.paths.service_pidfile(service))
            port = cfg.service_port(service) if cfg else "?"
            lines.append(f"  {service:<15} running  pid {pid:<8} port {port}")
        else:
            lines.append(f"  {service:<15} stopped")
            status = 3
    if services.nginx_alive(st):
        lines.append(f"  {'nginx':<15} running  pid {proc.pidfile_pid(st.paths.nginx_pidfile):<8} "
                     f"port {cfg.stack_port if cfg else '?'}")
    else:
        lines.append(f"  {'nginx':<15} stopped")
        status = 3
    if cfg is not None and status == 0:
        lines.append(f"URL {cfg.stack_url}")
    return lines, status


def cmd_status(env: Mapping[str, str]) -> int:
    st = _stack(env)
    if not os.path.isdir(st.paths.stack_dir):
        print(f"stack dir {st.paths.stack_dir} does not exist (nothing running)", flush=True)
        return 3
    lines, status = status_lines(st)
    for line in lines:
        print(line, flush=True)
    return status


def log_files(log_dir: str, part: str) -> list[str]:
    """The log files of PART ('' for all of <stack>/logs/*.log)."""
    escaped = glob.escape(log_dir)
    if part == "":
        return sorted(glob.glob(f"{escaped}/*.log")) or [f"{log_dir}/*.log"]
    if part in (*SERVICES, "migrate", "keys", "initdb", "nginx-access", "nginx-error"):
        return [f"{log_dir}/{part}.log"]
    if part == "postgres":
        return [f"{log_dir}/postgres.log", *sorted(glob.glob(f"{escaped}/pg-ha-*.log"))]
    if part in ("pg-monitor", "pg-node1", "pg-node2"):
        name = part[len("pg-"):]
        files = [f"{log_dir}/pg-ha-{name}.log"]
        # and the newest file of that PostgreSQL's own log (logging_collector, <data>/log)
        server = f"{log_dir}/pg-ha-{name}-server"
        try:
            entries = [entry for entry in os.scandir(server)]
        except OSError:
            entries = []
        if entries:
            newest = max(entries, key=lambda entry: entry.stat(follow_symlinks=False).st_mtime_ns)
            files.append(f"{server}/{newest.name}")
        return files
    if part == "nginx":
        return [f"{log_dir}/nginx-error.log", f"{log_dir}/nginx-access.log"]
    die(f"unknown log '{part}'")


def cmd_logs(env: Mapping[str, str], args: list[str]) -> int:
    st = _stack(env)
    _require_stack(st)
    follow = bool(args) and args[0] == "-f"
    if follow:
        args = args[1:]
    files = log_files(st.paths.log_dir, args[0] if args else "")
    sys.stdout.flush()
    if follow:
        os.execvp("tail", ["tail", "-n", "50", "-F", "--", *files])
    for path in files:
        if not os.path.isfile(path):
            continue
        print(f"==> {path} <==", flush=True)
        subprocess.run(["tail", "-n", "100", "--", path])
    return 0


def cmd_worker_run_once(env: Mapping[str, str], args: list[str]) -> int:
    st = _stack(env)
    _require_stack(st)
    load_or_compute_config(st)
    binary = f"{st.cfg.bin_dir}/cleanup-worker"
    if not os.access(binary, os.X_OK):
        die(f"missing binary {binary}")
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(binary, [binary, "run-once", *args], service_env("cleanup-worker", st.cfg, st.paths, st.env))


def cmd_pg_autoctl(env: Mapping[str, str], args: list[str]) -> int:
    st = _stack(env)
    _require_stack(st)
    if not os.path.isdir(st.paths.pg_ha_dir):
        die(f"no pg_auto_failover formation in {st.paths.stack_dir} "
            "(start one with: TESSERA_PG_HA=1 scripts/stack up)")
    argv = postgres.pgha_autoctl_argv(st, args)
    if st.pg_cwd:
        os.chdir(st.pg_cwd)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execvp(argv[0], argv)


class _Terminated(Exception):
    pass


def _on_sigterm(signum, frame):
    raise _Terminated()


def cmd_run(env: Mapping[str, str]) -> int:
    """up, then in the foreground until Ctrl-C (exit 130) or SIGTERM (143); then down, whatever happened."""
    signal.signal(signal.SIGTERM, _on_sigterm)
    status = 0
    st: Stack | None = None
    try:
        validate_env(env)
        st = _stack(env, create=True)
        cmd_up(env, st)
        info("running in the foreground; Ctrl-C stops the stack")
        reported: set[str] = set()
        while True:
            time.sleep(5)
            for service in SERVICES:
                if services.service_alive(st, service):
                    reported.discard(service)
                elif service not in reported:
                    warn(f"{service} is no longer running; see {st.paths.service_log(service)} "
                         f"(scripts/stack restart {service})")
                    reported.add(service)
    except KeyboardInterrupt:
        status = 130
    except _Terminated:
        status = 143
    except StackError as exc:
        sys.stderr.write(f"error: {exc.message}\n")
        status = exc.status
    finally:
        # Ctrl-C and SIGTERM while stopping are ignored: down runs to its end.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        try:
            cmd_down(env, st)
        except StackError as exc:
            sys.stderr.write(f"error: {exc.message}\n")
            status = status or exc.status
    return status


COMMANDS = ("up", "down", "run", "restart", "stop", "start", "status", "logs", "worker-run-once", "pg-autoctl")


def dispatch(command: str, args: list[str], env: Mapping[str, str]) -> int:
    if command == "up":
        return cmd_up(env)
    if command == "down":
        return cmd_down(env)
    if command == "run":
        return cmd_run(env)
    if command == "restart":
        return cmd_restart(env, args)
    if command == "stop":
        return cmd_stop(env, args)
    if command == "start":
        return cmd_start(env, args)
    if command == "status":
        return cmd_status(env)
    if command == "logs":
        return cmd_logs(env, args)
    if command == "worker-run-once":
        return cmd_worker_run_once(env, args)
    if command == "pg-autoctl":
        return cmd_pg_autoctl(env, args)
    if command in ("-h", "--help", "help"):
        sys.stdout.write(USAGE)
        return 0
    if command == "":
        sys.stderr.write(USAGE)
        return 2
    sys.stderr.write(f"unknown command: {command}\n\n{USAGE}")
    return 2


def main(argv: list[str], env: Mapping[str, str] | None = None) -> int:
    env = os.environ if env is None else env
    command, args = (argv[0], argv[1:]) if argv else ("", [])
    try:
        return dispatch(command, args, env)
    except StackError as exc:
        sys.stdout.flush()
        sys.stderr.write(f"error: {exc.message}\n")
        sys.stderr.flush()
        return exc.status
    except KeyboardInterrupt:
        return 130
