"""The three services and the nginx ingress: start, stop, readiness."""
from __future__ import annotations

import glob
import os
import shutil
import signal
import subprocess
import time

from . import proc
from .config import ROOT, SERVICES, render_nginx_conf, ready_timeout, service_env
from .context import Stack
from .output import die, info, show_log_tail

DEVNULL = subprocess.DEVNULL


def service_pattern(service: str) -> str:
    return f"/{service} serve"


def service_alive(st: Stack, service: str) -> bool:
    return proc.pid_alive(proc.pidfile_pid(st.paths.service_pidfile(service)), service_pattern(service))


def check_service_name(name: str) -> None:
    if name not in SERVICES:
        die(f"unknown service '{name}' (expected token-service, user-directory or cleanup-worker)")


def _stamp() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _run_logged(argv: list[str], env: dict[str, str] | None, log: str) -> bool:
    with open(log, "ab") as out:
        return subprocess.run(argv, env=env, stdin=DEVNULL, stdout=out, stderr=out).returncode == 0


def run_migrations(st: Stack) -> None:
    info("applying migrations (user-directory migrate)")
    log = f"{st.paths.log_dir}/migrate.log"
    env = service_env("user-directory", st.cfg, st.paths, st.env, st.dropped)
    if not _run_logged([f"{st.cfg.bin_dir}/user-directory", "migrate"], env, log):
        show_log_tail(log)
        die("user-directory migrate failed")


def ensure_signing_key(st: Stack) -> None:
    """ID tokens' keys in <stack>/keys, session cookies' own in <stack>/keys/session-cookies."""
    log = f"{st.paths.log_dir}/keys.log"
    for directory in (st.paths.keys_dir, f"{st.paths.keys_dir}/session-cookies"):
        if glob.glob(f"{glob.escape(directory)}/*.pem"):
            continue
        info(f"generating a signing key in {directory}")
        if not _run_logged([f"{st.cfg.bin_dir}/token-service", "keys", "generate", "--dir", directory], None, log):
            show_log_tail(log)
            die("token-service keys generate failed")
        if not glob.glob(f"{glob.escape(directory)}/*.pem"):
            die(f"token-service keys generate wrote no *.pem into {directory}")


def start_service(st: Stack, service: str) -> None:
    port = st.cfg.service_port(service)
    pidfile = st.paths.service_pidfile(service)
    log = st.paths.service_log(service)
    binary = f"{st.cfg.bin_dir}/{service}"
    if service_alive(st, service):
        info(f"{service} already running (pid {proc.pidfile_pid(pidfile)}, port {port})")
        return
    proc.remove(pidfile)
    if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        die(f"missing binary {binary}")
    if proc.port_in_use(port):
        die(f"port {port} ({service}) is already in use by another process")
    if service == "user-directory":
        run_migrations(st)
    elif service == "token-service":
        ensure_signing_key(st)
    info(f"starting {service} on 127.0.0.1:{port}")
    env = service_env(service, st.cfg, st.paths, st.env, st.dropped)
    with open(log, "ab") as out:
        out.write(f"--- {_stamp()} starting {service} serve\n".encode())
        out.flush()
        # A session of its own: Ctrl-C in the terminal reaches only this program, which then stops things
        # in order. The pid is the service's own (no shell in between).
        child = subprocess.Popen([binary, "serve"], env=env, stdin=DEVNULL, stdout=out, stderr=out,
                                 start_new_session=True)
    proc.write_pidfile(pidfile, child.pid)


def stop_service(st: Stack, service: str) -> None:
    pidfile = st.paths.service_pidfile(service)
    pid = proc.pidfile_pid(pidfile)
    if pid:
        proc.stop_pid(service, pid, service_pattern(service), signal.SIGTERM)
    proc.remove(pidfile)


def wait_ready(st: Stack, name: str, url: str, log: str, service: str = "") -> None:
    """Waits until URL answers 200; fails fast when the process behind it died."""
    timeout = ready_timeout(st.env)
    start = time.monotonic()
    code = "000"
    while time.monotonic() - start < timeout:
        code = proc.http_status(url)
        if code == "200":
            return
        if service and proc.gone(lambda: service_alive(st, service)):
            show_log_tail(log)
            die(f"{service} exited while starting")
        if name == "nginx" and proc.gone(lambda: nginx_alive(st)):
            show_log_tail(log)
            die("nginx exited while starting")
        time.sleep(0.25)
    show_log_tail(log)
    die(f"{name} did not become ready within {timeout}s ({url} answered {code})")


def wait_service_ready(st: Stack, service: str) -> None:
    wait_ready(st, service, f"http://127.0.0.1:{st.cfg.service_port(service)}/readyz",
               st.paths.service_log(service), service)


# ---------------------------------------------------------------------------------------------------
# nginx


def nginx_pattern(st: Stack) -> str:
    return f"-c {st.paths.nginx_conf}"


def nginx_alive(st: Stack) -> bool:
    return proc.pid_alive(proc.pidfile_pid(st.paths.nginx_pidfile), nginx_pattern(st))


def nginx_bin() -> str:
    if os.access("/usr/sbin/nginx", os.X_OK):
        return "/usr/sbin/nginx"
    found = shutil.which("nginx")
    if not found:
        die("nginx not found")
    return found


def write_nginx_conf(st: Stack) -> None:
    template = f"{ROOT}/deploy/nginx/tessera.conf.template"
    if not os.path.isfile(template):
        die(f"missing {template}")
    with open(template, encoding="utf-8") as handle:
        text = render_nginx_conf(handle.read(), st.cfg, st.paths, st.root)
    os.makedirs(f"{st.paths.nginx_dir}/tmp", exist_ok=True)
    tmp = f"{st.paths.nginx_conf}.tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, st.paths.nginx_conf)


def start_nginx(st: Stack) -> None:
    cfg, paths = st.cfg, st.paths
    log = f"{paths.log_dir}/nginx-error.log"
    nginx = nginx_bin()
    write_nginx_conf(st)
    if nginx_alive(st):
        info(f"nginx already running (pid {proc.pidfile_pid(paths.nginx_pidfile)}, port {cfg.stack_port})")
        return
    proc.remove(paths.nginx_pidfile)
    if proc.port_in_use(cfg.stack_port):
        die(f"port {cfg.stack_port} (ingress, TESSERA_PORT) is already in use by another process")
    if proc.port_in_use(cfg.admin_port):
        die(f"port {cfg.admin_port} (admin plane, TESSERA_ADMIN_PORT) is already in use by another process")
    info(f"starting nginx on 127.0.0.1:{cfg.stack_port} (admin plane 127.0.0.1:{cfg.admin_port})")
    with open(log, "a"):
        pass
    # nginx binds its listener before it daemonises, so a bind or config error fails here.
    if not _run_logged([nginx, "-p", f"{paths.nginx_dir}/", "-c", paths.nginx_conf], None, log):
        show_log_tail(log)
        die("nginx did not start")
    for _ in range(50):
        if nginx_alive(st):
            return
        time.sleep(0.1)
    show_log_tail(log)
    die(f"nginx started but wrote no live pid to {paths.nginx_pidfile}")


def stop_nginx(st: Stack) -> None:
    pid = proc.pidfile_pid(st.paths.nginx_pidfile)
    if pid:
        proc.stop_pid("nginx", pid, nginx_pattern(st), signal.SIGQUIT)
    proc.remove(st.paths.nginx_pidfile)
