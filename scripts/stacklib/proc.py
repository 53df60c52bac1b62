"""Processes, pid files, ports, HTTP probes and the stack directory's lock."""
from __future__ import annotations

import errno
import fcntl
import http.client
import os
import shutil
import signal
import socket
import time

from .output import die, info, warn


def is_root() -> bool:
    return os.geteuid() == 0


def as_root(argv: list[str]) -> list[str]:
    """ARGV as root: as is when we are root, else through sudo."""
    if is_root():
        return argv
    if shutil.which("sudo"):
        return ["sudo", *argv]
    die(f"need root to run: {' '.join(argv)} (install the packages yourself, or install sudo)")


def pid_alive(pid: str, pattern: str) -> bool:
    """A pid is alive when it exists, is not a zombie, and its command line contains PATTERN."""
    if not pid.isascii() or not pid.isdigit():
        return False
    try:
        # As `kill -0`: a process of another user (EPERM) is not ours, so not alive.
        os.kill(int(pid), 0)
    except (OSError, OverflowError):
        return False
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read().decode("utf-8", "replace")
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            cmdline = handle.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return False
    state = stat.rsplit(") ", 1)[-1][:1]
    if state == "Z":
        return False
    return pattern in cmdline


def gone(alive, settle: float = 0.25) -> bool:
    """ALIVE() is false now and still false after SETTLE seconds. A process started a moment ago can show
    an empty command line for an instant (execve closes the descriptors its parent waits on before it
    sets up the new program's arguments), so one look does not make it dead."""
    if alive():
        return False
    time.sleep(settle)
    return not alive()


def pidfile_pid(path: str) -> str:
    """The first line of a pid file ('' when it is missing or empty)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            line = handle.readline()
    except OSError:
        return ""
    return line.rstrip("\n").strip(" \t")


def write_pidfile(path: str, pid: int) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(f"{pid}\n")


def remove(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _wait_dead(pid: str, pattern: str, seconds: float) -> bool:
    for _ in range(int(seconds * 10)):
        if not pid_alive(pid, pattern):
            return True
        time.sleep(0.1)
    return not pid_alive(pid, pattern)


def stop_pid(name: str, pid: str, pattern: str, sig: int = signal.SIGTERM) -> None:
    """Sends SIG, waits up to 10 s, then SIGKILL."""
    if not pid_alive(pid, pattern):
        return
    info(f"stopping {name} (pid {pid})")
    try:
        os.kill(int(pid), sig)
    except OSError:
        pass
    if _wait_dead(pid, pattern, 10):
        return
    warn(f"{name} (pid {pid}) did not stop within 10 s; sending SIGKILL")
    try:
        os.kill(int(pid), signal.SIGKILL)
    except OSError:
        pass
    if not _wait_dead(pid, pattern, 5):
        warn(f"{name} (pid {pid}) is still alive")


def port_in_use(port: int) -> bool:
    """Something accepts connections on 127.0.0.1:PORT."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(2)
        try:
            sock.connect(("127.0.0.1", port))
        except OSError:
            return False
    return True


def http_status(url: str) -> str:
    """URL's status code ('000' when nothing answers within 2 s). http.client, not urllib: no proxy
    from the environment is ever asked about a loopback URL."""
    rest = url.split("://", 1)[1]
    hostport, _, path = rest.partition("/")
    host, _, port = hostport.rpartition(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=2)
    try:
        connection.request("GET", "/" + path)
        return str(connection.getresponse().status)
    except (OSError, http.client.HTTPException):
        return "000"
    finally:
        connection.close()


def ephemeral_range() -> tuple[int, int] | None:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range", encoding="ascii") as handle:
            fields = handle.read().split()
        return int(fields[0]), int(fields[1])
    except (OSError, ValueError, IndexError):
        return None


def ephemeral_warning(ports: list[int], port_range: tuple[int, int] | None) -> str | None:
    """A listening port inside the kernel's range for outgoing connections' local ports can be held, when
    a server starts, by any connection the machine has open (the services' own to PostgreSQL included):
    bind() then fails with "Address already in use" although nothing listens there. The CI saw nginx
    fail so on 39598; the stacks of the test scripts now sit below the range."""
    if port_range is None:
        return None
    low, high = port_range
    for port in ports:
        if low <= port <= high:
            return (f"port {port} lies in this machine's range for outgoing connections ({low}-{high}, "
                    f"net.ipv4.ip_local_port_range): a server may fail to start with 'Address already in use'; "
                    f"a TESSERA_PORT below {low} avoids it")
    return None


class Lock:
    """One stack operation at a time per stack directory: flock on <stack>/run/lock, waiting up to
    300 s. Reentrant within this process. Python opens files non-inheritable (PEP 446), so the
    long-lived children this process starts never hold the lock."""

    def __init__(self, path: str, timeout: float = 300):
        self.path = path
        self.timeout = timeout
        self.handle = None

    @property
    def held(self) -> bool:
        return self.handle is not None

    def acquire(self) -> None:
        if self.handle is not None:
            return
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        handle = open(self.path, "w")  # noqa: SIM115 (held until release)
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise
                if time.monotonic() >= deadline:
                    handle.close()
                    die(f"another scripts/stack command holds {self.path}")
                time.sleep(0.1)
        self.handle = handle

    def release(self) -> None:
        if self.handle is not None:
            self.handle.close()
            self.handle = None
