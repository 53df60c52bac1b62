"""PostgreSQL: the single cluster, and the HA profile (TESSERA_PG_HA=1).

PostgreSQL HA profile: pg_auto_failover (Debian's postgresql-15-auto-failover)

  <stack>/pg-ha/monitor  the monitor (a PostgreSQL with the pgautofailover extension), TESSERA_PORT+6
  <stack>/pg-ha/node1    PostgreSQL node 1, TESSERA_PORT+4 (the single PostgreSQL's port)
  <stack>/pg-ha/node2    PostgreSQL node 2, TESSERA_PORT+5
  <stack>/pg-ha/{config,share,pgpass}   pg_autoctl's configuration and state (XDG_CONFIG_HOME,
                         XDG_DATA_HOME) and the password file of its own connections
  <stack>/run/pg-ha-NAME.pid   the pid of `pg_autoctl run` (the keeper; PostgreSQL is its child, in
                         its process group); <stack>/logs/pg-ha-NAME.log its log; PostgreSQL's own
                         log lives in <data>/log, linked as <stack>/logs/pg-ha-NAME-server

Everything listens on 127.0.0.1 only and runs as the postgres user (when we are root). Each node is
one `pg_autoctl run` (keeper + PostgreSQL); the monitor assigns the roles: with two nodes, one is the
primary and the other a synchronous standby (replication quorum: synchronous_standby_names is
`ANY 1 (pgautofailover_standby_N)` once the standby has caught up; pg_stat_replication says `quorum`).
When the primary is lost, the monitor promotes the standby; when the standby is lost, the primary
goes on alone (wait_primary: synchronous replication off) until it is back.

Security on loopback: the clusters are made by our initdb like the single one (local: peer, host:
scram-sha-256, UTF8, locale C), and pg_autoctl is told to leave pg_hba.conf alone (--skip-pg-hba):
initdb's rules already cover its connections from 127.0.0.1. pg_autoctl's own roles have passwords
(generated in <stack>/secrets/, handed to libpq through <stack>/pg-ha/pgpass, never on a command
line): autoctl_node (the nodes' connections to the monitor) and pgautofailover_replicator (streaming
replication, pg_basebackup, pg_rewind; a superuser, so never trusted without a password). Every
instance offers TLS with the stack's own CA and certificate (<stack>/pg-tls, as the single
PostgreSQL, so TESSERA_PG_CA_FILE and sslmode=verify-full work against either node); pg_autoctl's own
connections use it and verify it (sslmode=verify-full).

Failover timing: the monitor's health checks are tuned for a loopback test (configure_monitor): a lost
primary is replaced in about 10 s instead of about 1 min with the defaults.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time

from . import proc
from .config import (PG_AUTOCTL, PG_BIN, PGHA_FORMATION, PGHA_NODES, pgha_monitor_uri, pgha_secret,
                     ready_timeout)
from .context import Stack
from .output import die, info, show_log_tail, warn
from .shell import sql_literal

DEVNULL = subprocess.DEVNULL


def _chown_postgres(*paths: str) -> None:
    for path in paths:
        shutil.chown(path, "postgres", "postgres")


def _append(path: str):
    return open(path, "ab")  # noqa: SIM115 (closed by the caller's with)


def ensure_postgres_can_traverse(st: Stack) -> None:
    """When root, the postgres user must be able to reach the stack directory."""
    if not st.root:
        return
    if subprocess.run(["id", "postgres"], stdout=DEVNULL, stderr=DEVNULL).returncode != 0:
        die("the postgres system user does not exist (is the postgresql package installed?)")
    directory = st.paths.stack_dir
    while directory not in ("/", ""):
        if subprocess.run(["runuser", "-u", "postgres", "--", "test", "-x", directory],
                          stdout=DEVNULL, stderr=DEVNULL).returncode != 0:
            info(f"granting search (o+x) permission on {directory} so the postgres user can reach the stack")
            os.chmod(directory, os.stat(directory).st_mode | 0o001)
        directory = os.path.dirname(directory)


def _pg_ctl_status(st: Stack, data: str) -> bool:
    return subprocess.run(st.pg_argv([f"{PG_BIN}/pg_ctl", "status", "-D", data]), cwd=st.pg_cwd,
                          stdout=DEVNULL, stderr=DEVNULL).returncode == 0


# ---------------------------------------------------------------------------------------------------
# the single PostgreSQL


def single_running(st: Stack) -> bool:
    if not os.path.isfile(f"{st.paths.pg_data}/PG_VERSION"):
        return False
    return _pg_ctl_status(st, st.paths.pg_data)


def running(st: Stack) -> bool:
    """The single PostgreSQL or any part of the HA profile."""
    return single_running(st) or pgha_any_running(st)


def pg_pid(st: Stack) -> str:
    return proc.pidfile_pid(f"{st.paths.pg_data}/postmaster.pid")


def _prepare_dirs(st: Stack) -> None:
    paths = st.paths
    os.makedirs(paths.pg_data, exist_ok=True)
    os.makedirs(paths.pg_socket_dir, exist_ok=True)
    log = f"{paths.log_dir}/postgres.log"
    with open(log, "a"):
        pass
    if st.root:
        ensure_postgres_can_traverse(st)
        _chown_postgres(paths.pg_data, paths.pg_socket_dir, log)
    os.chmod(paths.pg_data, 0o700)
    os.chmod(paths.pg_socket_dir, 0o700)


def _initdb_argv(st: Stack, data: str) -> list[str]:
    return [f"{PG_BIN}/initdb", "-D", data, "-U", st.pg_superuser(), "--auth-local=peer",
            "--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C"]


def _init(st: Stack) -> None:
    paths = st.paths
    if os.path.isfile(f"{paths.pg_data}/PG_VERSION"):
        return
    info(f"initialising the PostgreSQL cluster in {paths.pg_data}")
    log = f"{paths.log_dir}/initdb.log"
    with open(log, "wb") as out:
        done = subprocess.run(st.pg_argv(_initdb_argv(st, paths.pg_data)), cwd=st.pg_cwd, stdout=out, stderr=out)
    if done.returncode != 0:
        show_log_tail(log)
        die("initdb failed")


def tls(st: Stack) -> None:
    """A throw-away CA and a server certificate for 127.0.0.1 and localhost: the stack's PostgreSQL offers
    TLS, so a DATABASE_URL with sslmode=verify-full&sslrootcert=<stack>/pg-tls/ca.crt works against it
    (docs/protocol/admin.md#the-admin-plane). The services' own DATABASE_URL stays on loopback without TLS."""
    directory = st.paths.pg_tls_dir

    def present(name: str) -> bool:
        path = f"{directory}/{name}"
        return os.path.isfile(path) and os.path.getsize(path) > 0

    if not (present("server.key") and present("server.crt") and present("ca.crt")):
        os.makedirs(directory, exist_ok=True)
        quiet = {"stdout": DEVNULL, "stderr": DEVNULL}
        old = os.umask(0o077)
        try:
            ok = subprocess.run(
                ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                 "-days", "3650", "-subj", "/CN=Tessera local stack CA", "-keyout", f"{directory}/ca.key",
                 "-out", f"{directory}/ca.crt"], stdout=None, stderr=DEVNULL).returncode == 0
            ok = ok and subprocess.run(
                ["openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                 "-subj", "/CN=localhost", "-keyout", f"{directory}/server.key", "-out", f"{directory}/server.csr"],
                stderr=DEVNULL).returncode == 0
            if ok:
                with open(f"{directory}/server.ext", "w", encoding="ascii") as handle:
                    handle.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
            ok = ok and subprocess.run(
                ["openssl", "x509", "-req", "-in", f"{directory}/server.csr", "-CA", f"{directory}/ca.crt",
                 "-CAkey", f"{directory}/ca.key", "-CAcreateserial", "-days", "3650",
                 "-extfile", f"{directory}/server.ext", "-out", f"{directory}/server.crt"],
                **quiet).returncode == 0
        except OSError:
            ok = False
        finally:
            os.umask(old)
        if not ok:
            die(f"could not make the PostgreSQL TLS certificate in {directory}")
        os.chmod(f"{directory}/ca.crt", 0o644)
        os.chmod(f"{directory}/server.crt", 0o644)
    if st.root:
        _chown_postgres(f"{directory}/server.key", f"{directory}/server.crt")
    os.chmod(f"{directory}/server.key", 0o600)


def start(st: Stack) -> None:
    if st.cfg.pg_ha:
        pgha_start(st)
        return
    paths, cfg = st.paths, st.cfg
    _prepare_dirs(st)
    _init(st)
    tls(st)
    if single_running(st):
        info(f"PostgreSQL already running (pid {pg_pid(st)}, port {cfg.pg_port})")
    else:
        if proc.port_in_use(cfg.pg_port):
            die(f"port {cfg.pg_port} (PostgreSQL, TESSERA_PORT+4) is already in use by another process")
        info(f"starting PostgreSQL on 127.0.0.1:{cfg.pg_port}")
        tls_dir = paths.pg_tls_dir
        options = (f"-p {cfg.pg_port} -k '{paths.pg_socket_dir}' -c listen_addresses=127.0.0.1 "
                   f"-c max_connections=200 -c ssl=on -c ssl_cert_file='{tls_dir}/server.crt' "
                   f"-c ssl_key_file='{tls_dir}/server.key'")
        log = f"{paths.log_dir}/postgres.log"
        done = subprocess.run(st.pg_argv([f"{PG_BIN}/pg_ctl", "start", "-D", paths.pg_data, "-l", log, "-w",
                                          "-t", "60", "-o", options]), cwd=st.pg_cwd, stdout=DEVNULL)
        if done.returncode != 0:
            show_log_tail(log)
            die("PostgreSQL did not start")
    provision(st, cfg.pg_port)


def psql(st: Stack, sql: str, port: int, database: str = "postgres") -> tuple[bool, str]:
    """SQL (on stdin) as the cluster owner over the stack's socket directory; (succeeded, output)."""
    done = subprocess.run(st.pg_argv([f"{PG_BIN}/psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h",
                                      st.paths.pg_socket_dir, "-p", str(port), "-U", st.pg_superuser(),
                                      "-d", database]),
                          cwd=st.pg_cwd, input=sql, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return done.returncode == 0, done.stdout


def _psql_or_die(st: Stack, sql: str, port: int, message: str, database: str = "postgres") -> None:
    ok, out = psql(st, sql, port, database)
    if not ok:
        sys.stderr.write(out.rstrip("\n") + "\n")
        die(message)


def provision(st: Stack, port: int) -> None:
    """Role `tessera` with the stack's password, databases `tessera` and `tessera_test`; idempotent.
    The password travels on stdin, never on a command line. PORT: the HA profile's primary."""
    sql = (
        "SELECT 'CREATE ROLE tessera LOGIN' WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'tessera')\\gexec\n"
        f"ALTER ROLE tessera WITH LOGIN PASSWORD {sql_literal(st.cfg.db_password)};\n"
        "SELECT 'CREATE DATABASE tessera OWNER tessera' WHERE NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = 'tessera')\\gexec\n"
        "SELECT 'CREATE DATABASE tessera_test OWNER tessera' WHERE NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = 'tessera_test')\\gexec\n"
    )
    _psql_or_die(st, sql, port, "could not create the tessera role and databases")


def stop(st: Stack) -> None:
    """Stops whatever runs: the single PostgreSQL and the HA profile's processes (whatever the configuration)."""
    pgha_stop(st)
    if not os.path.isfile(f"{st.paths.pg_data}/PG_VERSION") or not single_running(st):
        return
    info(f"stopping PostgreSQL (pid {pg_pid(st)})")
    done = subprocess.run(st.pg_argv([f"{PG_BIN}/pg_ctl", "stop", "-D", st.paths.pg_data, "-m", "fast", "-w",
                                      "-t", "60"]), cwd=st.pg_cwd, stdout=DEVNULL)
    if done.returncode != 0:
        warn(f"pg_ctl stop failed; see {st.paths.log_dir}/postgres.log")


# ---------------------------------------------------------------------------------------------------
# the HA profile


def pgha_env(st: Stack) -> list[str]:
    """The whole environment of every pg_autoctl command (nothing of the caller's: a PGPORT or PGDATA in
    the developer's shell must not reach it): its files under the stack, libpq's password file, the
    socket directory for its local connections. An `env -i` prefix, so it holds through runuser."""
    paths = st.paths
    return ["env", "-i", f"PATH={PG_BIN}:/usr/local/bin:/usr/bin:/bin", f"HOME={paths.pg_ha_dir}", "LANG=C.UTF-8",
            f"XDG_CONFIG_HOME={paths.pg_ha_dir}/config", f"XDG_DATA_HOME={paths.pg_ha_dir}/share",
            f"XDG_RUNTIME_DIR={paths.pg_ha_run_dir}", f"PGPASSFILE={paths.pg_ha_dir}/pgpass",
            f"PGHOST={paths.pg_socket_dir}"]


def pgha_ctl(st: Stack, args: list[str], log: str) -> bool:
    """pg_autoctl ARGS (stdin empty, output appended to LOG); True when it succeeded."""
    with _append(log) as out:
        return subprocess.run(st.pg_argv([*pgha_env(st), PG_AUTOCTL, *args]), cwd=st.pg_cwd, stdin=DEVNULL,
                              stdout=out, stderr=out).returncode == 0


def pgha_created(st: Stack, name: str) -> bool:
    """A node is created when pg_autoctl has its configuration and no unfinished initialisation
    (pg_autoctl keys its files by the data directory's absolute path)."""
    data = st.paths.pgha_data(name)
    cfg = f"{st.paths.pg_ha_dir}/config/pg_autoctl{data}/pg_autoctl.cfg"
    init = f"{st.paths.pg_ha_dir}/share/pg_autoctl{data}/pg_autoctl.init"
    return (os.path.isfile(cfg) and os.path.getsize(cfg) > 0 and not os.path.lexists(init)
            and os.path.isfile(f"{data}/PG_VERSION"))


def pgha_pid(st: Stack, name: str) -> str:
    return proc.pidfile_pid(st.paths.pgha_pidfile(name))


def pgha_alive(st: Stack, name: str) -> bool:
    return proc.pid_alive(pgha_pid(st, name), "pg_autoctl")


def pgha_any_running(st: Stack) -> bool:
    return any(pgha_alive(st, name) for name in ("monitor", *PGHA_NODES))


def pgha_postmaster_pid(st: Stack, name: str) -> str:
    return proc.pidfile_pid(f"{st.paths.pgha_data(name)}/postmaster.pid")


def _pgha_prepare_dirs(st: Stack) -> None:
    paths, cfg = st.paths, st.cfg
    for directory in (f"{paths.pg_ha_dir}/config", f"{paths.pg_ha_dir}/share", paths.pg_ha_run_dir,
                      paths.pg_socket_dir):
        os.makedirs(directory, exist_ok=True)
    for name in ("monitor", *PGHA_NODES):
        with open(paths.pgha_log(name), "a"):
            pass
        link = f"{paths.log_dir}/pg-ha-{name}-server"
        # ln -sfn: a link (or file) there is replaced
        if os.path.islink(link) or (os.path.lexists(link) and not os.path.isdir(link)):
            os.unlink(link)
        if not os.path.lexists(link):
            os.symlink(f"{paths.pgha_data(name)}/log", link)
    pgpass = f"{paths.pg_ha_dir}/pgpass"
    old = os.umask(0o077)
    try:
        with open(f"{pgpass}.tmp", "w", encoding="utf-8") as handle:
            handle.write(f"127.0.0.1:{cfg.pg_monitor_port}:pg_auto_failover:autoctl_node:"
                         f"{pgha_secret(paths.secrets_dir, 'pg-ha-monitor-password')}\n"
                         f"127.0.0.1:*:*:pgautofailover_replicator:"
                         f"{pgha_secret(paths.secrets_dir, 'pg-ha-replication-password')}\n")
        os.replace(f"{pgpass}.tmp", pgpass)
    finally:
        os.umask(old)
    if st.root:
        ensure_postgres_can_traverse(st)
        _chown_postgres(paths.pg_ha_dir, f"{paths.pg_ha_dir}/config", f"{paths.pg_ha_dir}/share", pgpass,
                        paths.pg_ha_run_dir, paths.pg_socket_dir)
        _chown_postgres(*(paths.pgha_log(name) for name in ("monitor", *PGHA_NODES)))
    for directory in (paths.pg_ha_dir, paths.pg_ha_run_dir, paths.pg_socket_dir):
        os.chmod(directory, 0o700)
    os.chmod(pgpass, 0o600)


def _pgha_initdb(st: Stack, name: str) -> None:
    """The monitor's and node 1's cluster, made like the single one (node 2 is a pg_basebackup of the
    primary, so it gets node 1's settings and pg_hba.conf). postgresql.auto.conf comes after pg_autoctl's
    postgresql-auto-failover.conf, so these win: its defaults include password_encryption = md5, which
    scram-sha-256 in pg_hba.conf would refuse."""
    data = st.paths.pgha_data(name)
    if os.path.isfile(f"{data}/PG_VERSION"):
        return
    info(f"initialising the PostgreSQL cluster of pg_auto_failover {name} in {data}")
    log = st.paths.pgha_log(name)
    with _append(log) as out:
        done = subprocess.run(st.pg_argv([*pgha_env(st), *_initdb_argv(st, data)]), cwd=st.pg_cwd,
                              stdin=DEVNULL, stdout=out, stderr=out)
    if done.returncode != 0:
        show_log_tail(log)
        die(f"initdb of {data} failed")
    lines = ["# written by scripts/stack (the HA profile)",
             f"unix_socket_directories = '{st.paths.pg_socket_dir}'",
             "password_encryption = 'scram-sha-256'"]
    if name != "monitor":
        lines.append("max_connections = 200")
        # pg_auto_failover's default keeps 8 GB of WAL for a standby that rejoins; replication slots keep
        # what a known standby needs anyway, so a smaller safety net does on a laptop.
        lines.append("wal_keep_size = '1GB'")
    with open(f"{data}/postgresql.auto.conf", "a", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")


def _pgha_ssl_options(st: Stack) -> list[str]:
    """The stack's CA and server certificate (tls) on every instance; pg_autoctl's connections verify them."""
    tls_dir = st.paths.pg_tls_dir
    return ["--ssl-ca-file", f"{tls_dir}/ca.crt", "--server-cert", f"{tls_dir}/server.crt",
            "--server-key", f"{tls_dir}/server.key", "--ssl-mode", "verify-full"]


def _pgha_create_monitor(st: Stack) -> None:
    if pgha_created(st, "monitor"):
        return
    _pgha_initdb(st, "monitor")
    port = st.cfg.pg_monitor_port
    info(f"creating the pg_auto_failover monitor (127.0.0.1:{port})")
    log = st.paths.pgha_log("monitor")
    if not pgha_ctl(st, ["create", "monitor", "--pgctl", f"{PG_BIN}/pg_ctl", "--pgdata", st.paths.pgha_data("monitor"),
                         "--pgport", str(port), "--listen", "127.0.0.1", "--hostname", "127.0.0.1",
                         "--skip-pg-hba", *_pgha_ssl_options(st)], log):
        show_log_tail(log)
        die("pg_autoctl create monitor failed")


def _pgha_create_node(st: Stack, name: str) -> None:
    if pgha_created(st, name):
        return
    # Node 1 starts from a cluster of ours; node 2 is made by pg_autoctl (pg_basebackup of the primary).
    if name == "node1":
        _pgha_initdb(st, "node1")
    port = st.cfg.pgha_port(name)
    info(f"creating pg_auto_failover {name} (127.0.0.1:{port})")
    log = st.paths.pgha_log(name)
    if not pgha_ctl(st, ["create", "postgres", "--pgctl", f"{PG_BIN}/pg_ctl", "--pgdata", st.paths.pgha_data(name),
                         "--pghost", st.paths.pg_socket_dir, "--pgport", str(port), "--listen", "127.0.0.1",
                         "--hostname", "127.0.0.1", "--username", st.pg_superuser(), "--name", name,
                         "--formation", PGHA_FORMATION, "--monitor", pgha_monitor_uri(st.cfg, st.paths),
                         "--skip-pg-hba", *_pgha_ssl_options(st)], log):
        show_log_tail(log)
        die(f"pg_autoctl create postgres ({name}) failed")


def pgha_configure_node(st: Stack, name: str) -> None:
    """Keeper settings (in its configuration file, read at `pg_autoctl run`). A primary that can reach
    neither the monitor nor its standby for network_partition_timeout demotes itself; it must be shorter
    than the monitor's primary_demote_timeout (pgha_configure_monitor), so an isolated primary has
    stopped taking writes before the standby is promoted. Production: 20 (s), the default."""
    log = st.paths.pgha_log(name)
    if not pgha_ctl(st, ["config", "set", "--pgdata", st.paths.pgha_data(name),
                         "timeout.network_partition_timeout", "3"], log):
        show_log_tail(log)
        die(f"pg_autoctl config set ({name}) failed")


def _pgha_start_one(st: Stack, name: str) -> None:
    paths = st.paths
    pidfile, log, data, port = paths.pgha_pidfile(name), paths.pgha_log(name), paths.pgha_data(name), st.cfg.pgha_port(name)
    if pgha_alive(st, name):
        info(f"pg_auto_failover {name} already running (pid {pgha_pid(st, name)}, port {port})")
        return
    proc.remove(pidfile)
    if proc.port_in_use(port):
        die(f"port {port} (pg_auto_failover {name}) is already in use by another process")
    info(f"starting pg_auto_failover {name} on 127.0.0.1:{port}")
    with _append(log) as out:
        out.write(f"--- {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} starting pg_autoctl run\n".encode())
        out.flush()
        # A session (and process group) of its own, with PostgreSQL in it: kill -KILL -- -PID takes the
        # whole node down. setpriv (not runuser) drops to postgres, so the pid is pg_autoctl's.
        drop = ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups"] if st.root else []
        child = subprocess.Popen([*drop, *pgha_env(st), PG_AUTOCTL, "run", "--pgdata", data], cwd="/",
                                 stdin=DEVNULL, stdout=out, stderr=out, start_new_session=True)
    proc.write_pidfile(pidfile, child.pid)


def _pgha_stop_one(st: Stack, name: str) -> None:
    """Stops NAME's pg_autoctl (it stops its PostgreSQL first; --fast: PostgreSQL's fast shutdown, so an
    open client session does not hold it up), then any PostgreSQL a killed pg_autoctl left behind."""
    data = st.paths.pgha_data(name)
    pid = pgha_pid(st, name)
    if proc.pid_alive(pid, "pg_autoctl"):
        info(f"stopping pg_auto_failover {name} (pid {pid})")
        pgha_ctl(st, ["stop", "--pgdata", data, "--fast"], st.paths.pgha_log(name))
        for _ in range(600):
            if not proc.pid_alive(pid, "pg_autoctl"):
                break
            time.sleep(0.1)
        if proc.pid_alive(pid, "pg_autoctl"):
            warn(f"pg_auto_failover {name} (pid {pid}) did not stop within 60 s")
            proc.stop_pid(f"pg_auto_failover {name}", pid, "pg_autoctl")
    proc.remove(st.paths.pgha_pidfile(name))
    if os.path.isfile(f"{data}/postmaster.pid") and _pg_ctl_status(st, data):
        info(f"stopping the PostgreSQL of pg_auto_failover {name} (pid {pgha_postmaster_pid(st, name)})")
        done = subprocess.run(st.pg_argv([f"{PG_BIN}/pg_ctl", "stop", "-D", data, "-m", "fast", "-w", "-t", "60"]),
                              cwd=st.pg_cwd, stdout=DEVNULL)
        if done.returncode != 0:
            warn(f"pg_ctl stop of {data} failed")


def pgha_stop(st: Stack) -> None:
    """The monitor first: with it gone no failover is decided while the nodes stop, and the formation
    starts again as it was."""
    if not os.path.isdir(st.paths.pg_ha_dir):
        return
    for name in ("monitor", "node2", "node1"):
        _pgha_stop_one(st, name)


def pgha_query(st: Stack, name: str, sql: str, database: str = "postgres") -> str | None:
    """SQL on NAME over the socket as the cluster owner: its rows (unaligned, |), None when it failed."""
    done = subprocess.run(st.pg_argv([f"{PG_BIN}/psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-h",
                                      st.paths.pg_socket_dir, "-p", str(st.cfg.pgha_port(name)), "-U",
                                      st.pg_superuser(), "-d", database, "-c", sql]),
                          cwd=st.pg_cwd, stdin=DEVNULL, stdout=subprocess.PIPE, stderr=DEVNULL, text=True)
    if done.returncode != 0:
        return None
    return done.stdout.rstrip("\n")


def pgha_states(st: Stack) -> list[tuple[str, ...]]:
    """The nodes as the monitor sees them: (name, port, reported state, goal state)."""
    out = pgha_query(st, "monitor", "SELECT nodename, nodeport, reportedstate, goalstate FROM pgautofailover.node "
                     f"WHERE formationid = '{PGHA_FORMATION}' ORDER BY nodeid", "pg_auto_failover")
    return [tuple(line.split("|")) for line in (out or "").split("\n") if line]


def primary_of(states: list[tuple[str, ...]]) -> str | None:
    """The node the monitor has as primary (reported and assigned), if any."""
    for state in states:
        if len(state) >= 4 and state[2] == state[3] and state[2] in ("primary", "wait_primary", "single"):
            return state[0]
    return None


def role_of(states: list[tuple[str, ...]], name: str) -> str:
    """NAME's reported state, with "-> goal" while it changes ('' when the monitor does not say)."""
    role = ""
    for state in states:
        if len(state) >= 4 and state[0] == name:
            role = state[2] if state[2] == state[3] else f"{state[2]} -> {state[3]}"
    return role


def pgha_sync_standbys(st: Stack, primary: str) -> str:
    """The primary's synchronous standbys: "application_name=sync_state" (sync or quorum), comma-separated."""
    return pgha_query(st, primary, "SELECT string_agg(application_name || '=' || sync_state, ',' ORDER BY "
                      "application_name) FROM pg_stat_replication WHERE sync_state IN ('sync', 'quorum')") or ""


def pgha_timeout(env) -> int:
    return max(ready_timeout(env), 180)


def _pgha_check_alive(st: Stack, *names: str) -> None:
    for name in names:
        if proc.gone(lambda: pgha_alive(st, name)):
            show_log_tail(st.paths.pgha_log(name))
            die(f"pg_auto_failover {name} exited (see {st.paths.pgha_log(name)})")


_WRITABLE = "SELECT NOT pg_is_in_recovery() AND current_setting('transaction_read_only') = 'off'"


def _pgha_wait_writable(st: Stack, name: str) -> None:
    """Waits until NAME's PostgreSQL takes writes (the monitor's database, or a node in state single)."""
    timeout = pgha_timeout(st.env)
    start_time = time.monotonic()
    while time.monotonic() - start_time < timeout:
        if pgha_query(st, name, _WRITABLE) == "t":
            return
        _pgha_check_alive(st, name)
        time.sleep(0.5)
    show_log_tail(st.paths.pgha_log(name))
    die(f"pg_auto_failover {name} did not take writes within {timeout}s")


def _pgha_wait_formation(st: Stack) -> str:
    """Waits until one node is the primary, takes writes, and the other is its synchronous standby;
    returns the primary's name."""
    timeout = pgha_timeout(st.env)
    start_time = time.monotonic()
    states: list[tuple[str, ...]] = []
    info("waiting for the pg_auto_failover formation: a primary with a synchronous standby")
    while time.monotonic() - start_time < timeout:
        _pgha_check_alive(st, "monitor", *PGHA_NODES)
        states = pgha_states(st)
        primary = primary_of(states)
        if (primary and any(len(s) >= 4 and re.fullmatch(r"[0-9]+", s[1]) and s[2] == s[3] == "secondary"
                            for s in states)
                and pgha_query(st, primary, _WRITABLE) == "t"):
            sync = pgha_sync_standbys(st, primary)
            if sync:
                info(f"pg_auto_failover: {primary} (127.0.0.1:{st.cfg.pgha_port(primary)}) is the primary; "
                     f"synchronous standby: {sync}")
                return primary
        time.sleep(0.5)
    shown = "\n".join(" ".join(s) for s in states) or "(nothing)"
    sys.stderr.write(f"the monitor says (name port reported goal):\n{shown}\n")
    for name in ("monitor", *PGHA_NODES):
        show_log_tail(st.paths.pgha_log(name), 15)
    die(f"the pg_auto_failover formation has no primary with a synchronous standby after {timeout}s")


def pgha_configure_monitor(st: Stack) -> None:
    """The monitor's health checks and failover timeouts (GUCs of the pgautofailover extension, in the
    monitor's postgresql.auto.conf). Tuned for a loopback test, where a lost node refuses connections at
    once and nothing is slow: a lost primary is noticed in about 3 s and replaced in about 10 s. The
    production values (pg_auto_failover's defaults, for real networks, where a short blip must not cost a
    failover) are in the comments; a failover then takes 30-60 s."""
    password = pgha_secret(st.paths.secrets_dir, "pg-ha-monitor-password")
    sql = f"""SET password_encryption = 'scram-sha-256';
ALTER ROLE autoctl_node PASSWORD {sql_literal(password)};
-- a round of health checks (a connection attempt to every node) this often; production 5s
ALTER SYSTEM SET pgautofailover.health_check_period = '1s';
-- a connection attempt that has not succeeded by then fails; production 5s
ALTER SYSTEM SET pgautofailover.health_check_timeout = '1s';
-- failed attempts retried this many times, this far apart, before the node is marked bad;
-- production 2 and 2s
ALTER SYSTEM SET pgautofailover.health_check_max_retries = 2;
ALTER SYSTEM SET pgautofailover.health_check_retry_delay = '500ms';
-- a node marked bad whose keeper has not reported for this long is unhealthy: failover starts;
-- production 20s
ALTER SYSTEM SET pgautofailover.node_considered_unhealthy_timeout = '3s';
-- the old primary gets this long to stop itself (demote) before the standby is promoted; must be
-- longer than the keepers' timeout.network_partition_timeout (3 s here, pgha_configure_node);
-- production 30s (network_partition_timeout 20 s)
ALTER SYSTEM SET pgautofailover.primary_demote_timeout = '5s';
-- no failover in the first this-long after the monitor (re)starts; production 10s
ALTER SYSTEM SET pgautofailover.startup_grace_period = '3s';
SELECT pg_reload_conf();
"""
    _psql_or_die(st, sql, st.cfg.pg_monitor_port, "could not configure the pg_auto_failover monitor", "pg_auto_failover")


def pgha_status_lines(st: Stack) -> tuple[list[str], bool]:
    """`scripts/stack status` lines of the HA profile: per part its pg_autoctl's pid, port, PostgreSQL's
    pid and, from the monitor, its role (reported state, "-> goal" while it changes); the primary's line
    names its synchronous standby (pg_stat_replication: quorum with two nodes). False when a part is down."""
    states = pgha_states(st)
    lines, all_up = [], True
    for name in ("monitor", *PGHA_NODES):
        if not pgha_alive(st, name):
            lines.append(f"  {'pg-' + name:<15} stopped")
            all_up = False
            continue
        role = ""
        if name != "monitor":
            role = role_of(states, name)
            if role in ("primary", "wait_primary"):
                role += f" (synchronous standby: {pgha_sync_standbys(st, name) or 'none'})"
        lines.append(f"  {'pg-' + name:<15} running  pid {pgha_pid(st, name):<8} port {st.cfg.pgha_port(name):<6} "
                     f"postgres pid {pgha_postmaster_pid(st, name):<8} {role}")
    return lines, all_up


def pgha_start(st: Stack) -> None:
    tls(st)
    _pgha_prepare_dirs(st)
    _pgha_create_monitor(st)
    _pgha_start_one(st, "monitor")
    _pgha_wait_writable(st, "monitor")
    pgha_configure_monitor(st)
    _pgha_create_node(st, "node1")
    pgha_configure_node(st, "node1")
    _pgha_start_one(st, "node1")
    if not pgha_created(st, "node2"):
        # pg_basebackup for node 2 logs in as pgautofailover_replicator, which pg_autoctl made without a
        # password on node 1 (then the only node, so the primary).
        _pgha_wait_writable(st, "node1")
        password = pgha_secret(st.paths.secrets_dir, "pg-ha-replication-password")
        _psql_or_die(st, "SET password_encryption = 'scram-sha-256';\n"
                     f"ALTER ROLE pgautofailover_replicator PASSWORD {sql_literal(password)};\n",
                     st.cfg.pg_port, "could not set the password of pgautofailover_replicator on node1")
        _pgha_create_node(st, "node2")
    pgha_configure_node(st, "node2")
    _pgha_start_one(st, "node2")
    primary = _pgha_wait_formation(st)
    provision(st, st.cfg.pgha_port(primary))


def pgha_autoctl_argv(st: Stack, args: list[str]) -> list[str]:
    """`scripts/stack pg-autoctl ARGS`: PGDATA is pg_autoctl's default for --pgdata (node 1)."""
    return st.pg_argv([*pgha_env(st), f"PGDATA={st.paths.pgha_data('node1')}", PG_AUTOCTL, *args])
