"""Paths, settings and the files that describe a stack: <stack>/run/config (the frozen configuration),
<stack>/env, the services' environments and nginx.conf. Everything here but `secret` and the file
writers is pure (it reads the environment mapping it is given)."""
from __future__ import annotations

import base64
import os
import re
from dataclasses import dataclass, field
from typing import Mapping

from .output import die
from .shell import ParseError, bash_q, parse_config_text, shell_quote, url_encode

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SERVICES = ("user-directory", "token-service", "cleanup-worker")
PG_BIN = "/usr/lib/postgresql/15/bin"
PG_LIB = "/usr/lib/postgresql/15/lib"
PG_AUTOCTL = "/usr/bin/pg_autoctl"
PASSTHROUGH_VARS = (
    "TESSERA_REFRESH_GRACE", "TESSERA_REFRESH_IDLE_TTL", "TESSERA_REFRESH_ABSOLUTE_TTL", "TESSERA_REAUTH_WINDOW",
    "TESSERA_KEY_RELOAD_INTERVAL", "TESSERA_INTERNAL_TIMEOUT", "TESSERA_INTERNAL_CONNECT_TIMEOUT",
    "TESSERA_PROJECT_NUMBER", "TESSERA_PUBLIC_URL",
    "TESSERA_AUTO_MIGRATE", "CLEANUP_ANONYMOUS_RETENTION", "CLEANUP_INTERVAL", "LOG_LEVEL", "LOG_FORMAT",
    "SWIFT_BACKTRACE",
    "TESSERA_PASSWORD_HASH_ROUNDS", "TESSERA_PASSWORD_HASH_MEM_COST", "TESSERA_HASH_THREADS", "TESSERA_HASH_QUEUE",
    "TESSERA_HASH_MAX_WAIT", "TESSERA_HASH_BUSY_MAX_WAIT", "TESSERA_HASH_PRIORITY", "TESSERA_HASH_CROWDED_SHARE",
    "TESSERA_HASH_ISOLATION", "TESSERA_HASH_GROUP_NICE",
    "TESSERA_HASH_CGROUP", "DATABASE_PRIMARY_CHECK_INTERVAL",
    "DATABASE_COMMIT_OUTCOME_WAIT", "TESSERA_PASSWORD_REFUSAL_WINDOW",
    "TESSERA_OOB_CODE_TTL", "TESSERA_ACTION_URL", "TESSERA_AUTHORIZED_DOMAINS", "TESSERA_IDP_JWKS_REFETCH_INTERVAL",
    "TESSERA_IDP_TIMEOUT", "TESSERA_TRUSTED_PROXIES", "TESSERA_IDP_ALLOWED_PRIVATE_ADDRESSES",
    "TESSERA_SESSION_COOKIE_KEYS_DIR",
    "TESSERA_IDP_FLOW_TTL", "TESSERA_AUTHORIZED_APPS",
    "CLEANUP_BATCH_SIZE", "CLEANUP_BATCH_PAUSE", "CLEANUP_BATCH_PAUSE_FACTOR",
    "CLEANUP_LEASE_TTL",
    "CLEANUP_SESSION_RETENTION",
    "CLEANUP_CODE_RETENTION", "CLEANUP_MAIL_RETENTION", "TESSERA_SHUTDOWN_TIMEOUT",
    "DATABASE_POOL_MIN", "DATABASE_POOL_MAX", "DATABASE_KEEPALIVE", "TESSERA_TASKS_ON_EVENT_LOOPS",
    "TESSERA_HTTP_LIBRARY_METRICS",
    "TESSERA_HEAP_TRIM_INTERVAL", "TESSERA_OWNER_TOKEN_SCOPE", "TESSERA_ADMIN_AUTH_FAILURES_PER_HOUR",
    "TESSERA_DATABASE_START_TIMEOUT", "TESSERA_MFA_KEYS", "TESSERA_MFA_KEYS_FILE",
    "TESSERA_SMS_SENDER", "TESSERA_SMS_WEBHOOK_URL", "TESSERA_SMS_WEBHOOK_SECRET", "TESSERA_SMS_WEBHOOK_SECRET_FILE",
    "TESSERA_SMS_TWILIO_ACCOUNT_SID", "TESSERA_SMS_TWILIO_AUTH_TOKEN", "TESSERA_SMS_TWILIO_AUTH_TOKEN_FILE",
    "TESSERA_SMS_TWILIO_FROM", "TESSERA_SMS_TWILIO_MESSAGING_SERVICE_SID", "TESSERA_SMS_TWILIO_BASE_URL",
    "TESSERA_SMS_FILE", "TESSERA_SMS_RETRY_BASE", "TESSERA_SMS_RETRY_MAX", "TESSERA_SMS_MAX_ATTEMPTS",
    "TESSERA_SMS_POLL_INTERVAL", "TESSERA_SMS_TIMEOUT",
    "TESSERA_RECAPTCHA_SITE_KEY", "TESSERA_RECAPTCHA_SECRET_KEY", "TESSERA_RECAPTCHA_SECRET_KEY_FILE",
    "TESSERA_RECAPTCHA_VERIFY_URL",
)
PASSTHROUGH_PREFIXES = ("SMTP_", "IDP_", "OTEL_")
# Of the pass-through settings, these (and every IDP_* variable) are also written to <stack>/env
# (tests time their waits by them).
ENV_FILE_SETTINGS = (
    "TESSERA_REFRESH_GRACE", "TESSERA_REFRESH_IDLE_TTL", "TESSERA_REFRESH_ABSOLUTE_TTL", "TESSERA_REAUTH_WINDOW",
    "TESSERA_KEY_RELOAD_INTERVAL", "CLEANUP_ANONYMOUS_RETENTION", "CLEANUP_INTERVAL", "TESSERA_OOB_CODE_TTL",
    "SMTP_URL", "SMTP_CA_FILE", "TESSERA_OWNER_TOKEN_SCOPE", "TESSERA_AUTHORIZED_APPS",
    # The SMS sink's address and the secret it verifies signatures with (Tests/stack/sms_sink.py).
    "TESSERA_SMS_SENDER", "TESSERA_SMS_WEBHOOK_URL", "TESSERA_SMS_WEBHOOK_SECRET",
)
PGHA_NODES = ("node1", "node2")
PGHA_FORMATION = "default"
# The names of run/config, in the order save_config writes them.
CONFIG_NAMES = ("STACK_PORT", "ADMIN_PORT", "TOKEN_PORT", "DIRECTORY_PORT", "WORKER_PORT", "PG_PORT", "PG_HA",
                "PG_PORT2", "PG_MONITOR_PORT", "PROJECT_ID", "API_KEY", "ADMIN_TOKEN", "INTERNAL_SECRET",
                "DB_PASSWORD", "BIN_DIR")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def setting(env: Mapping[str, str], name: str, default: str = "") -> str:
    """${NAME:-default}: unset and empty are the same."""
    return env.get(name) or default


# ---------------------------------------------------------------------------------------------------
# paths


class Paths:
    def __init__(self, stack_dir: str):
        self.stack_dir = stack_dir
        self.pg_data = f"{stack_dir}/pg"
        self.run_dir = f"{stack_dir}/run"
        self.pg_socket_dir = f"{self.run_dir}/pg"
        self.pg_ha_dir = f"{stack_dir}/pg-ha"
        self.pg_ha_run_dir = f"{self.run_dir}/pg-ha"
        self.log_dir = f"{stack_dir}/logs"
        self.keys_dir = f"{stack_dir}/keys"
        self.secrets_dir = f"{stack_dir}/secrets"
        self.nginx_dir = f"{stack_dir}/nginx"
        self.config_file = f"{self.run_dir}/config"
        self.env_file = f"{stack_dir}/env"
        self.pg_tls_dir = f"{stack_dir}/pg-tls"
        self.nginx_conf = f"{self.nginx_dir}/nginx.conf"
        self.nginx_pidfile = f"{self.run_dir}/nginx.pid"

    def service_pidfile(self, service: str) -> str:
        return f"{self.run_dir}/{service}.pid"

    def service_log(self, service: str) -> str:
        return f"{self.log_dir}/{service}.log"

    def pgha_data(self, name: str) -> str:
        return f"{self.pg_ha_dir}/{name}"

    def pgha_pidfile(self, name: str) -> str:
        return f"{self.run_dir}/pg-ha-{name}.pid"

    def pgha_log(self, name: str) -> str:
        return f"{self.log_dir}/pg-ha-{name}.log"


def resolve_paths(env: Mapping[str, str], create: bool = False, root: str = ROOT) -> Paths:
    directory = setting(env, "TESSERA_STACK_DIR", ".stack")
    if not directory.startswith("/"):
        directory = f"{root}/{directory}"
    if create:
        os.makedirs(directory, exist_ok=True)
    stack_dir = os.path.realpath(directory) if os.path.isdir(directory) else directory
    if re.search(r"[\s'\"\\]", stack_dir):
        die(f"the stack directory path must not contain spaces, quotes or backslashes: {stack_dir}")
    return Paths(stack_dir)


def make_dirs(paths: Paths) -> None:
    os.chmod(paths.stack_dir, 0o755)
    for directory in (paths.run_dir, paths.log_dir, paths.nginx_dir, paths.keys_dir, paths.secrets_dir):
        os.makedirs(directory, exist_ok=True)
    os.chmod(paths.keys_dir, 0o700)
    os.chmod(paths.secrets_dir, 0o700)
    os.chmod(paths.run_dir, 0o755)
    os.chmod(paths.log_dir, 0o755)


# ---------------------------------------------------------------------------------------------------
# settings


def valid_port_base(value: str) -> bool:
    return value.isascii() and value.isdigit() and 1024 <= int(value) <= 65531


def port_base(env: Mapping[str, str]) -> int:
    base = setting(env, "TESSERA_PORT", "9099")
    if not valid_port_base(base):
        die(f"TESSERA_PORT must be a number between 1024 and 65531 (got '{base}')")
    return int(base)


def pg_ha_setting(env: Mapping[str, str]) -> int:
    """TESSERA_PG_HA as 0 or 1 (unset, empty and 0 are the single PostgreSQL)."""
    value = env.get("TESSERA_PG_HA", "")
    if value in ("", "0"):
        return 0
    if value == "1":
        return 1
    die(f"TESSERA_PG_HA must be 1 (the HA profile) or 0/unset (got '{value}')")


def build_flags(env: Mapping[str, str]) -> list[str]:
    build = setting(env, "TESSERA_BUILD", "debug")
    if build == "debug":
        return []
    if build == "release":
        # The container image's build (deploy/Dockerfile): the same flags, so a release stack runs
        # what ships, and switching between them does not recompile everything.
        return ["-c", "release", "--static-swift-stdlib"]
    die(f"TESSERA_BUILD must be debug or release (got '{build}')")


def default_bin_dir(env: Mapping[str, str], root: str = ROOT) -> str:
    return setting(env, "TESSERA_BIN_DIR") or f"{root}/.build/{setting(env, 'TESSERA_BUILD', 'debug')}"


def ready_timeout(env: Mapping[str, str]) -> int:
    value = setting(env, "TESSERA_READY_TIMEOUT", "60")
    if not (value.isascii() and value.isdigit()):
        die("TESSERA_READY_TIMEOUT must be a number of seconds")
    return int(value)


def validate_env(env: Mapping[str, str]) -> None:
    """Fails fast on a bad setting, before anything is installed or built."""
    port_base(env)
    build_flags(env)
    ready_timeout(env)
    pg_ha_setting(env)


def is_passthrough(name: str) -> bool:
    return name in PASSTHROUGH_VARS or any(name.startswith(p) and len(name) > len(p) for p in PASSTHROUGH_PREFIXES)


def passthrough_from_env(env: Mapping[str, str]) -> list[str]:
    """The pass-through settings the environment gives (non-empty ones): PASSTHROUGH_VARS in their
    order, then per prefix the variables with it, sorted by name (as bash's `compgen -e` lists them)."""
    found = [f"{name}={env[name]}" for name in PASSTHROUGH_VARS if env.get(name)]
    for prefix in PASSTHROUGH_PREFIXES:
        found += [f"{name}={env[name]}" for name in sorted(env)
                  if name.startswith(prefix) and _NAME.match(name) and env[name]]
    return found


def check_overrides(args: list[str]) -> None:
    """NAME=VALUE arguments of restart/start: pass-through settings only (never the stack's own ports,
    secrets or internal URLs, which service_env sets)."""
    for arg in args:
        if "=" not in arg or not is_passthrough(arg.split("=", 1)[0]):
            die(f"'{arg}' is not NAME=VALUE with NAME a pass-through setting (PASSTHROUGH_VARS, PASSTHROUGH_PREFIXES)")


def apply_overrides(passthrough: list[str], args: list[str]) -> tuple[list[str], list[str]]:
    """PASSTHROUGH with the named settings replaced (this process only; the saved config stays);
    NAME= (empty) drops the setting, so the service uses its own default (not the stack's). Returns the
    new list and the dropped names."""
    names = {arg.split("=", 1)[0] for arg in args}
    kept = [kv for kv in passthrough if kv.split("=", 1)[0] not in names]
    dropped = []
    for arg in args:
        name, value = arg.split("=", 1)
        if value:
            kept.append(arg)
        else:
            dropped.append(name)
    return kept, dropped


# ---------------------------------------------------------------------------------------------------
# secrets


def random_secret() -> str:
    """32 random bytes as 64 hex digits: the services refuse secrets under 256 bits
    (docs/protocol/admin.md#the-admin-plane)."""
    return os.urandom(32).hex()


def _store_secret(path: str, value: str) -> None:
    old = os.umask(0o077)
    try:
        with open(f"{path}.tmp", "w", encoding="utf-8") as handle:
            handle.write(f"{value}\n")
        os.replace(f"{path}.tmp", path)
    finally:
        os.umask(old)


def _read_secret(path: str) -> str | None:
    """The file's text without its trailing newlines (as $(<file)), None when it is missing or empty."""
    try:
        if os.path.getsize(path) == 0:
            return None
        with open(path, encoding="utf-8", errors="surrogateescape") as handle:
            return handle.read().rstrip("\n")
    except OSError:
        return None


def secret(env: Mapping[str, str], secrets_dir: str, name: str) -> str:
    """NAME from the environment (verbatim), else <stack>/secrets/NAME, else generated and stored there."""
    if env.get(name):
        return env[name]
    path = f"{secrets_dir}/{name}"
    value = _read_secret(path)
    # Secrets a stack of an earlier version generated (48 hex digits) are too short for the services
    # now (256 bits): the bearer secrets are made anew; the database password stays.
    if value is not None and (name in ("TESSERA_DB_PASSWORD", "TESSERA_API_KEY") or len(value) >= 64):
        return value
    value = random_secret()
    _store_secret(path, value)
    os.chmod(path, 0o600)
    return value


def mfa_keys(secrets_dir: str) -> str:
    """The file of the key that seals second-factor secrets (TESSERA_MFA_KEYS_FILE, docs/configuration.md):
    32 random bytes in base64, made once per stack dir. Its path is what the directory is given."""
    path = f"{secrets_dir}/TESSERA_MFA_KEYS"
    if _read_secret(path) is None:
        _store_secret(path, base64.b64encode(os.urandom(32)).decode("ascii"))
    return path


def pgha_secret(secrets_dir: str, name: str) -> str:
    """A password of pg_autoctl's own roles: generated once per stack dir (hex, so it is safe in pgpass)."""
    path = f"{secrets_dir}/{name}"
    if _read_secret(path) is None:
        _store_secret(path, random_secret())
    with open(path, encoding="utf-8", errors="surrogateescape") as handle:
        return handle.readline().rstrip("\n")


# ---------------------------------------------------------------------------------------------------
# the configuration


@dataclass
class Config:
    stack_port: int
    admin_port: int
    token_port: int
    directory_port: int
    worker_port: int
    pg_port: int
    pg_ha: int
    pg_port2: int
    pg_monitor_port: int
    project_id: str
    api_key: str
    admin_token: str
    internal_secret: str
    db_password: str
    bin_dir: str
    passthrough: list[str] = field(default_factory=list)

    def service_port(self, service: str) -> int:
        ports = {"token-service": self.token_port, "user-directory": self.directory_port,
                 "cleanup-worker": self.worker_port}
        if service not in ports:
            die(f"unknown service: {service}")
        return ports[service]

    def pgha_port(self, name: str) -> int:
        ports = {"monitor": self.pg_monitor_port, "node1": self.pg_port, "node2": self.pg_port2}
        if name not in ports:
            die(f"unknown pg_auto_failover node: {name}")
        return ports[name]

    @property
    def stack_url(self) -> str:
        return f"http://127.0.0.1:{self.stack_port}"

    @property
    def admin_url(self) -> str:
        return f"http://127.0.0.1:{self.admin_port}"

    @property
    def token_url(self) -> str:
        return f"http://127.0.0.1:{self.token_port}"

    @property
    def directory_url(self) -> str:
        return f"http://127.0.0.1:{self.directory_port}"

    @property
    def worker_url(self) -> str:
        return f"http://127.0.0.1:{self.worker_port}"

    def _database_url(self, database: str) -> str:
        password = url_encode(self.db_password)
        if self.pg_ha:
            # Both nodes, in libpq's multi-host form: a client tries them in turn and keeps the one that
            # takes writes (the primary), so a failover needs no change of URL (psql, pgbench and libpq
            # read it as is).
            return (f"postgres://tessera:{password}@127.0.0.1:{self.pg_port},127.0.0.1:{self.pg_port2}/"
                    f"{database}?target_session_attrs=read-write")
        return f"postgres://tessera:{password}@127.0.0.1:{self.pg_port}/{database}"

    @property
    def database_url(self) -> str:
        return self._database_url("tessera")

    @property
    def test_database_url(self) -> str:
        return self._database_url("tessera_test")

    def listening_ports(self) -> list[int]:
        """Every port the stack listens on: the admin plane, then TESSERA_PORT..+4 (+6 with HA)."""
        return [self.admin_port, *range(self.stack_port, self.stack_port + 5 + 2 * self.pg_ha)]


def compute_config(env: Mapping[str, str], secrets_dir: str, bin_dir: str) -> Config:
    """The configuration `up` computes from the environment (secrets from secrets_dir, made when missing)."""
    base = port_base(env)
    admin = setting(env, "TESSERA_ADMIN_PORT", str(base - 1))
    if not valid_port_base(admin):
        die(f"TESSERA_ADMIN_PORT must be a number between 1024 and 65531 (got '{admin}')")
    pg_ha = pg_ha_setting(env)
    if pg_ha and base + 6 > 65535:
        die(f"TESSERA_PG_HA=1 needs TESSERA_PORT+6 as a port: TESSERA_PORT must be at most 65529 (got '{base}')")
    mfa_keys(secrets_dir)
    return Config(
        stack_port=base, admin_port=int(admin), token_port=base + 1, directory_port=base + 2,
        worker_port=base + 3, pg_port=base + 4, pg_ha=pg_ha, pg_port2=base + 5, pg_monitor_port=base + 6,
        project_id=setting(env, "TESSERA_PROJECT_ID", "tessera-local"),
        api_key=secret(env, secrets_dir, "TESSERA_API_KEY"),
        admin_token=secret(env, secrets_dir, "TESSERA_ADMIN_TOKEN"),
        internal_secret=secret(env, secrets_dir, "TESSERA_INTERNAL_SECRET"),
        db_password=secret(env, secrets_dir, "TESSERA_DB_PASSWORD"),
        bin_dir=bin_dir,
        passthrough=passthrough_from_env(env),
    )


def _config_values(config: Config) -> dict[str, str]:
    return {
        "STACK_PORT": str(config.stack_port), "ADMIN_PORT": str(config.admin_port),
        "TOKEN_PORT": str(config.token_port), "DIRECTORY_PORT": str(config.directory_port),
        "WORKER_PORT": str(config.worker_port), "PG_PORT": str(config.pg_port), "PG_HA": str(config.pg_ha),
        "PG_PORT2": str(config.pg_port2), "PG_MONITOR_PORT": str(config.pg_monitor_port),
        "PROJECT_ID": config.project_id, "API_KEY": config.api_key, "ADMIN_TOKEN": config.admin_token,
        "INTERNAL_SECRET": config.internal_secret, "DB_PASSWORD": config.db_password, "BIN_DIR": config.bin_dir,
    }


def config_text(config: Config) -> str:
    """run/config: bash assignments (printf %q), so scripts/bench and the tests can source it."""
    lines = ["# written by scripts/stack up; read back by restart/start/worker-run-once"]
    values = _config_values(config)
    lines += [f"{name}={bash_q(values[name])}" for name in CONFIG_NAMES]
    lines.append("PASSTHROUGH=()")
    lines += [f"PASSTHROUGH+=({bash_q(kv)})" for kv in config.passthrough]
    return "\n".join(lines) + "\n"


def parse_config(text: str) -> Config:
    try:
        scalars, arrays = parse_config_text(text)
    except ParseError as exc:
        die(f"cannot read the stack's configuration: {exc}")

    def number(name: str, default: int | None = None) -> int:
        value = scalars.get(name, "")
        if value == "" and default is not None:
            return default
        if not (value.isascii() and value.isdigit()):
            die(f"the stack's configuration has no number {name} (got '{value}')")
        return int(value)

    stack_port = number("STACK_PORT")
    return Config(
        stack_port=stack_port,
        # A configuration saved before the admin plane existed: its default port.
        admin_port=number("ADMIN_PORT", stack_port - 1),
        token_port=number("TOKEN_PORT"), directory_port=number("DIRECTORY_PORT"),
        worker_port=number("WORKER_PORT"), pg_port=number("PG_PORT"),
        # ... or before the HA profile existed: a single PostgreSQL.
        pg_ha=1 if number("PG_HA", 0) else 0,
        pg_port2=number("PG_PORT2", stack_port + 5), pg_monitor_port=number("PG_MONITOR_PORT", stack_port + 6),
        project_id=scalars.get("PROJECT_ID", ""), api_key=scalars.get("API_KEY", ""),
        admin_token=scalars.get("ADMIN_TOKEN", ""), internal_secret=scalars.get("INTERNAL_SECRET", ""),
        db_password=scalars.get("DB_PASSWORD", ""), bin_dir=scalars.get("BIN_DIR", ""),
        passthrough=list(arrays.get("PASSTHROUGH", [])),
    )


def save_config(paths: Paths, config: Config) -> None:
    tmp = f"{paths.config_file}.tmp"
    old = os.umask(0o077)
    try:
        with open(tmp, "w", encoding="utf-8", errors="surrogateescape") as handle:
            handle.write(config_text(config))
    finally:
        os.umask(old)
    os.replace(tmp, paths.config_file)


def load_config(paths: Paths) -> Config | None:
    try:
        with open(paths.config_file, encoding="utf-8", errors="surrogateescape") as handle:
            text = handle.read()
    except FileNotFoundError:
        return None
    return parse_config(text)


def env_differences(env: Mapping[str, str], config: Config) -> list[str]:
    """The settings of the environment that differ from a running stack's (they are ignored)."""
    names = []
    if env.get("TESSERA_PG_HA") and pg_ha_setting(env) != config.pg_ha:
        names.append("TESSERA_PG_HA")
    running = {"TESSERA_PORT": str(config.stack_port), "TESSERA_PROJECT_ID": config.project_id,
               "TESSERA_API_KEY": config.api_key, "TESSERA_ADMIN_TOKEN": config.admin_token,
               "TESSERA_INTERNAL_SECRET": config.internal_secret, "TESSERA_DB_PASSWORD": config.db_password}
    names += [name for name, value in running.items() if env.get(name) and env[name] != value]
    return names


# ---------------------------------------------------------------------------------------------------
# the services' environment


def service_env(service: str, config: Config, paths: Paths, env: Mapping[str, str],
                dropped: list[str] = ()) -> dict[str, str]:
    """The complete environment of SERVICE (nothing else of the caller's is inherited)."""
    out = {
        "PATH": setting(env, "PATH", "/usr/local/bin:/usr/bin:/bin"),
        "HOME": setting(env, "HOME", "/"),
        "LANG": setting(env, "LANG", "C.UTF-8"),
    }
    for name in ("TZ", "TMPDIR", "SSL_CERT_FILE", "SSL_CERT_DIR"):
        if env.get(name):
            out[name] = env[name]
    out.update({
        "TESSERA_PROJECT_ID": config.project_id,
        "TESSERA_INTERNAL_SECRET": config.internal_secret,
        "TESSERA_HTTP_HOST": "127.0.0.1",
    })
    if service == "user-directory":
        out.update({"TESSERA_HTTP_PORT": str(config.directory_port), "DATABASE_URL": config.database_url,
                    "TESSERA_ADMIN_TOKEN": config.admin_token, "TESSERA_API_KEY": config.api_key})
    elif service == "token-service":
        out.update({"TESSERA_HTTP_PORT": str(config.token_port), "TESSERA_API_KEY": config.api_key,
                    "TESSERA_DIRECTORY_URL": config.directory_url, "TESSERA_SIGNING_KEYS_DIR": paths.keys_dir})
    elif service == "cleanup-worker":
        out.update({"TESSERA_HTTP_PORT": str(config.worker_port), "TESSERA_DIRECTORY_URL": config.directory_url})
    # The stack's own defaults for two pass-through settings, unless the caller gave them (or dropped them
    # with NAME=): mailed links and OpenID discovery on the stack's URL, never on the request's Host
    # header; X-Forwarded-For believed only from nginx, which connects from 127.0.0.2 (proxy_bind in
    # deploy/nginx/tessera.conf.template), so a client asking a service port directly is counted as itself.
    given = {kv.split("=", 1)[0] for kv in config.passthrough} | set(dropped)
    if "TESSERA_PUBLIC_URL" not in given:
        out["TESSERA_PUBLIC_URL"] = config.stack_url
    # The key that seals TOTP seeds, made once per stack dir, unless the caller gave keys of its own.
    if service == "user-directory" and not given & {"TESSERA_MFA_KEYS", "TESSERA_MFA_KEYS_FILE"}:
        out["TESSERA_MFA_KEYS_FILE"] = f"{paths.secrets_dir}/TESSERA_MFA_KEYS"
    if service in ("token-service", "user-directory") and "TESSERA_TRUSTED_PROXIES" not in given:
        out["TESSERA_TRUSTED_PROXIES"] = "127.0.0.2"
    for kv in config.passthrough:
        name, value = kv.split("=", 1)
        out[name] = value
    return out


# ---------------------------------------------------------------------------------------------------
# the env file


def pgha_monitor_uri(config: Config, paths: Paths, password: str | None = None) -> str:
    auth = "autoctl_node" if password is None else f"autoctl_node:{password}"
    return (f"postgres://{auth}@127.0.0.1:{config.pg_monitor_port}/pg_auto_failover?sslmode=verify-full"
            f"&sslrootcert={paths.pg_tls_dir}/ca.crt")


def env_entries(config: Config, paths: Paths, monitor_password: str | None = None) -> list[tuple[str, str]]:
    entries = [
        ("TESSERA_URL", config.stack_url),
        ("TESSERA_PORT", str(config.stack_port)),
        ("TESSERA_ADMIN_URL", config.admin_url),
        ("TESSERA_ADMIN_PORT", str(config.admin_port)),
        ("TESSERA_PROJECT_ID", config.project_id),
        ("TESSERA_API_KEY", config.api_key),
        ("TESSERA_ADMIN_TOKEN", config.admin_token),
        ("TESSERA_INTERNAL_SECRET", config.internal_secret),
        ("TESSERA_TOKEN_SERVICE_URL", config.token_url),
        ("TESSERA_DIRECTORY_URL", config.directory_url),
        ("TESSERA_CLEANUP_WORKER_URL", config.worker_url),
        ("DATABASE_URL", config.database_url),
        ("TEST_DATABASE_URL", config.test_database_url),
        ("TESSERA_STACK_DIR", paths.stack_dir),
        ("TESSERA_BIN_DIR", config.bin_dir),
        ("TESSERA_SIGNING_KEYS_DIR", paths.keys_dir),
        ("TESSERA_PG_CA_FILE", f"{paths.pg_tls_dir}/ca.crt"),
    ]
    if config.pg_ha:
        # The HA profile's parts, for tools and failover tests: the monitor (its URI carries the
        # autoctl_node password: `psql "$TESSERA_PG_MONITOR_URI" -c "SELECT * FROM pgautofailover.node"`
        # says which node is the primary, `SELECT pgautofailover.perform_failover()` switches over), and
        # per node its port, data directory (postmaster.pid) and the pid file of its `pg_autoctl run`
        # (kill -KILL -- -PID kills that node's whole process group: keeper and PostgreSQL).
        entries += [
            ("TESSERA_PG_HA", "1"),
            ("TESSERA_PG_MONITOR_URI", pgha_monitor_uri(config, paths, monitor_password or "")),
            ("TESSERA_PG_MONITOR_PORT", str(config.pg_monitor_port)),
            ("TESSERA_PG_MONITOR_DATA", paths.pgha_data("monitor")),
            ("TESSERA_PG_MONITOR_PIDFILE", paths.pgha_pidfile("monitor")),
            ("TESSERA_PG_NODE1_PORT", str(config.pg_port)),
            ("TESSERA_PG_NODE1_DATA", paths.pgha_data("node1")),
            ("TESSERA_PG_NODE1_PIDFILE", paths.pgha_pidfile("node1")),
            ("TESSERA_PG_NODE2_PORT", str(config.pg_port2)),
            ("TESSERA_PG_NODE2_DATA", paths.pgha_data("node2")),
            ("TESSERA_PG_NODE2_PIDFILE", paths.pgha_pidfile("node2")),
        ]
    for kv in config.passthrough:
        name, value = kv.split("=", 1)
        # Identity-provider endpoints (docs/protocol/federated.md#federated-providers) tell clients and
        # tests where the providers are.
        if name in ENV_FILE_SETTINGS or name.startswith("IDP_"):
            entries.append((name, value))
    return entries


def env_file_text(config: Config, paths: Paths, monitor_password: str | None = None) -> str:
    lines = [f"# Tessera local stack ({paths.stack_dir}), written by scripts/stack up. Contains secrets."]
    lines += [f"export {name}={shell_quote(value)}" for name, value in env_entries(config, paths, monitor_password)]
    return "\n".join(lines) + "\n"


def write_env_file(paths: Paths, config: Config, monitor_password: str | None = None) -> None:
    tmp = f"{paths.env_file}.tmp"
    old = os.umask(0o077)
    try:
        with open(tmp, "w", encoding="utf-8", errors="surrogateescape") as handle:
            handle.write(env_file_text(config, paths, monitor_password))
    finally:
        os.umask(old)
    os.replace(tmp, paths.env_file)


# ---------------------------------------------------------------------------------------------------
# nginx.conf


def render_nginx_conf(template: str, config: Config, paths: Paths, as_root: bool) -> str:
    """deploy/nginx/tessera.conf.template with the stack's ports and directories."""
    text = template
    for placeholder, value in (("@PORT@", str(config.stack_port)), ("@ADMIN_PORT@", str(config.admin_port)),
                               ("@TOKEN_PORT@", str(config.token_port)),
                               ("@DIRECTORY_PORT@", str(config.directory_port)),
                               ("@PREFIX@", paths.nginx_dir), ("@LOG_DIR@", paths.log_dir),
                               ("@RUN_DIR@", paths.run_dir),
                               ("@USER_DIRECTIVE@", "user root;" if as_root else "")):
        text = text.replace(placeholder, value)
    left = re.search(r"@[A-Z_]*@", text)
    if left:
        die(f"unrendered placeholder in {paths.nginx_conf}.tmp: {left.group(0)}")
    return text
