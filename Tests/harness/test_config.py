"""Settings: ports, validation, pass-through settings and their overrides, secrets, the services'
environments, paths."""
import base64
import os
import stat

import pytest

from stacklib import config
from stacklib.config import Config, Paths
from stacklib.output import StackError


def compute(env, tmp_path, bin_dir="/bin-dir"):
    secrets = tmp_path / "secrets"
    secrets.mkdir(exist_ok=True)
    return config.compute_config(env, str(secrets), bin_dir)


def test_ports_follow_tessera_port(tmp_path):
    cfg = compute({"TESSERA_PORT": "23099"}, tmp_path)
    assert (cfg.stack_port, cfg.admin_port, cfg.token_port, cfg.directory_port, cfg.worker_port, cfg.pg_port,
            cfg.pg_port2, cfg.pg_monitor_port) == (23099, 23098, 23100, 23101, 23102, 23103, 23104, 23105)
    assert cfg.pg_ha == 0
    assert cfg.listening_ports() == [23098, 23099, 23100, 23101, 23102, 23103]
    cfg = compute({"TESSERA_PORT": "23099", "TESSERA_PG_HA": "1"}, tmp_path)
    assert cfg.pg_ha == 1
    assert cfg.listening_ports() == [23098, *range(23099, 23106)]


def test_defaults(tmp_path):
    cfg = compute({"TESSERA_PORT": "", "TESSERA_PROJECT_ID": ""}, tmp_path)
    assert (cfg.stack_port, cfg.admin_port, cfg.project_id, cfg.bin_dir) == (9099, 9098, "tessera-local", "/bin-dir")
    assert cfg.stack_url == "http://127.0.0.1:9099" and cfg.admin_url == "http://127.0.0.1:9098"
    assert (cfg.token_url, cfg.directory_url, cfg.worker_url) == (
        "http://127.0.0.1:9100", "http://127.0.0.1:9101", "http://127.0.0.1:9102")


@pytest.mark.parametrize("value", ["1023", "65532", "abc", "9099 ", "-1", "٣٠٠٠", "1e4"])
def test_tessera_port_is_checked(tmp_path, value):
    with pytest.raises(StackError) as raised:
        compute({"TESSERA_PORT": value}, tmp_path)
    assert raised.value.message == f"TESSERA_PORT must be a number between 1024 and 65531 (got '{value}')"


@pytest.mark.parametrize("value", ["1025", "65531"])
def test_tessera_port_bounds(tmp_path, value):
    assert compute({"TESSERA_PORT": value}, tmp_path).stack_port == int(value)


def test_the_lowest_base_needs_an_admin_port_of_its_own(tmp_path):
    # 1024 is a valid base, but its default admin port (base - 1) is not.
    assert compute({"TESSERA_PORT": "1024", "TESSERA_ADMIN_PORT": "2000"}, tmp_path).admin_port == 2000
    with pytest.raises(StackError, match=r"TESSERA_ADMIN_PORT .* \(got '1023'\)"):
        compute({"TESSERA_PORT": "1024"}, tmp_path)


def test_admin_port(tmp_path):
    assert compute({"TESSERA_ADMIN_PORT": "30000"}, tmp_path).admin_port == 30000
    with pytest.raises(StackError) as raised:
        compute({"TESSERA_ADMIN_PORT": "99999"}, tmp_path)
    assert raised.value.message == "TESSERA_ADMIN_PORT must be a number between 1024 and 65531 (got '99999')"


def test_the_ha_profile_needs_six_ports_above_the_base(tmp_path):
    assert compute({"TESSERA_PORT": "65529", "TESSERA_PG_HA": "1"}, tmp_path).pg_monitor_port == 65535
    with pytest.raises(StackError) as raised:
        compute({"TESSERA_PORT": "65530", "TESSERA_PG_HA": "1"}, tmp_path)
    assert "TESSERA_PORT must be at most 65529 (got '65530')" in raised.value.message
    assert compute({"TESSERA_PORT": "65530"}, tmp_path).pg_ha == 0


@pytest.mark.parametrize("value,expected", [("", 0), ("0", 0), ("1", 1)])
def test_pg_ha_setting(value, expected):
    assert config.pg_ha_setting({"TESSERA_PG_HA": value}) == expected
    assert config.pg_ha_setting({}) == 0


@pytest.mark.parametrize("value", ["2", "yes", "true", " 1"])
def test_pg_ha_setting_refuses_other_values(value):
    with pytest.raises(StackError, match="TESSERA_PG_HA must be 1"):
        config.pg_ha_setting({"TESSERA_PG_HA": value})


def test_build_flags_and_binary_directory():
    assert config.build_flags({}) == [] and config.build_flags({"TESSERA_BUILD": ""}) == []
    assert config.build_flags({"TESSERA_BUILD": "release"}) == ["-c", "release", "--static-swift-stdlib"]
    with pytest.raises(StackError, match="TESSERA_BUILD must be debug or release"):
        config.build_flags({"TESSERA_BUILD": "Release"})
    assert config.default_bin_dir({}, root="/r") == "/r/.build/debug"
    assert config.default_bin_dir({"TESSERA_BUILD": "release"}, root="/r") == "/r/.build/release"
    # scripts/test passes TESSERA_BIN_DIR='' : the default.
    assert config.default_bin_dir({"TESSERA_BIN_DIR": ""}, root="/r") == "/r/.build/debug"
    assert config.default_bin_dir({"TESSERA_BIN_DIR": "/opt/bin"}, root="/r") == "/opt/bin"


def test_ready_timeout():
    assert config.ready_timeout({}) == 60
    assert config.ready_timeout({"TESSERA_READY_TIMEOUT": "5"}) == 5
    for bad in ("-1", "1.5", "60s"):
        with pytest.raises(StackError, match="TESSERA_READY_TIMEOUT must be a number of seconds"):
            config.ready_timeout({"TESSERA_READY_TIMEOUT": bad})


# ---------------------------------------------------------------------------------------------------
# pass-through settings


def test_pass_through_settings_from_the_environment():
    env = {"LOG_LEVEL": "debug", "TESSERA_REFRESH_GRACE": "2s", "SMTP_URL": "smtp://x", "SMTP_CA_FILE": "/ca",
           "IDP_B": "b", "IDP_A": "a", "IDP_": "bare prefix", "OTEL_X": "o", "CLEANUP_INTERVAL": "",
           "IDP_EMPTY": "", "TESSERA_API_KEY": "k", "DATABASE_URL": "postgres://x", "PATH": "/bin",
           "IDP_BAD-NAME": "x", "TESSERA_HASH_THREADS": "1"}
    # PASSTHROUGH_VARS in their order, then SMTP_*, IDP_*, OTEL_* each sorted by name; empty values left out.
    assert config.passthrough_from_env(env) == [
        "TESSERA_REFRESH_GRACE=2s", "LOG_LEVEL=debug", "TESSERA_HASH_THREADS=1",
        "SMTP_CA_FILE=/ca", "SMTP_URL=smtp://x", "IDP_=bare prefix", "IDP_A=a", "IDP_B=b", "OTEL_X=o"]


def test_every_env_file_setting_is_a_pass_through_setting():
    for name in config.ENV_FILE_SETTINGS:
        assert config.is_passthrough(name), name
    assert len(set(config.PASSTHROUGH_VARS)) == len(config.PASSTHROUGH_VARS)


def test_is_passthrough():
    assert config.is_passthrough("LOG_LEVEL") and config.is_passthrough("SMTP_X") and config.is_passthrough("OTEL_A")
    for name in ("SMTP_", "IDP_", "TESSERA_PORT", "DATABASE_URL", "TESSERA_API_KEY", "TESSERA_INTERNAL_SECRET",
                 "TESSERA_HTTP_PORT", "log_level", ""):
        assert not config.is_passthrough(name), name


def test_check_overrides():
    config.check_overrides([])
    config.check_overrides(["LOG_LEVEL=debug", "SMTP_URL=", "IDP_X=a=b"])
    for bad in ("LOG_LEVEL", "TESSERA_PORT=1", "=x", "DATABASE_URL=x"):
        with pytest.raises(StackError) as raised:
            config.check_overrides(["LOG_LEVEL=debug", bad])
        assert raised.value.message == (f"'{bad}' is not NAME=VALUE with NAME a pass-through setting "
                                        "(PASSTHROUGH_VARS, PASSTHROUGH_PREFIXES)")


def test_apply_overrides_replaces_adds_and_drops():
    saved = ["LOG_LEVEL=info", "SMTP_URL=smtp://a", "TESSERA_REFRESH_GRACE=2s"]
    assert config.apply_overrides(saved, []) == (saved, [])
    kept, dropped = config.apply_overrides(saved, ["LOG_LEVEL=debug", "SMTP_URL=", "IDP_X=a=b"])
    assert kept == ["TESSERA_REFRESH_GRACE=2s", "LOG_LEVEL=debug", "IDP_X=a=b"]
    assert dropped == ["SMTP_URL"]
    assert saved == ["LOG_LEVEL=info", "SMTP_URL=smtp://a", "TESSERA_REFRESH_GRACE=2s"]  # not changed
    # Dropping what was not set still counts as given (the stack's own default is not applied either).
    assert config.apply_overrides([], ["TESSERA_PUBLIC_URL="]) == ([], ["TESSERA_PUBLIC_URL"])


# ---------------------------------------------------------------------------------------------------
# secrets


def test_secrets_are_generated_once_and_reused(tmp_path):
    secrets = tmp_path / "s"
    secrets.mkdir()
    first = config.secret({}, str(secrets), "TESSERA_ADMIN_TOKEN")
    assert len(first) == 64 and int(first, 16) >= 0
    path = secrets / "TESSERA_ADMIN_TOKEN"
    assert path.read_text() == first + "\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert config.secret({}, str(secrets), "TESSERA_ADMIN_TOKEN") == first
    assert config.secret({"TESSERA_ADMIN_TOKEN": ""}, str(secrets), "TESSERA_ADMIN_TOKEN") == first
    # Given in the environment: used verbatim, the stored one stays.
    assert config.secret({"TESSERA_ADMIN_TOKEN": "short given"}, str(secrets), "TESSERA_ADMIN_TOKEN") == "short given"
    assert path.read_text() == first + "\n"
    assert not list(secrets.glob("*.tmp"))


def test_short_secrets_of_an_earlier_version_are_made_anew_except_the_password_and_api_key(tmp_path):
    secrets = tmp_path / "s"
    secrets.mkdir()
    old = "ab" * 24
    for name in ("TESSERA_ADMIN_TOKEN", "TESSERA_INTERNAL_SECRET", "TESSERA_API_KEY", "TESSERA_DB_PASSWORD"):
        (secrets / name).write_text(old + "\n\n")
    assert config.secret({}, str(secrets), "TESSERA_API_KEY") == old
    assert config.secret({}, str(secrets), "TESSERA_DB_PASSWORD") == old
    for name in ("TESSERA_ADMIN_TOKEN", "TESSERA_INTERNAL_SECRET"):
        new = config.secret({}, str(secrets), name)
        assert len(new) == 64 and new != old
        assert (secrets / name).read_text() == new + "\n"


def test_an_empty_secret_file_is_replaced(tmp_path):
    secrets = tmp_path / "s"
    secrets.mkdir()
    (secrets / "TESSERA_DB_PASSWORD").write_text("")
    assert len(config.secret({}, str(secrets), "TESSERA_DB_PASSWORD")) == 64


def test_pg_ha_secrets(tmp_path):
    first = config.pgha_secret(str(tmp_path), "pg-ha-monitor-password")
    assert len(first) == 64
    assert stat.S_IMODE((tmp_path / "pg-ha-monitor-password").stat().st_mode) == 0o600
    assert config.pgha_secret(str(tmp_path), "pg-ha-monitor-password") == first


def test_compute_config_reads_secrets_and_pass_through_settings(tmp_path):
    env = {"TESSERA_API_KEY": "key", "TESSERA_DB_PASSWORD": "p@ss word", "LOG_LEVEL": "debug",
           "TESSERA_PROJECT_ID": "demo"}
    cfg = compute(env, tmp_path)
    assert (cfg.api_key, cfg.db_password, cfg.project_id, cfg.passthrough) == ("key", "p@ss word", "demo",
                                                                               ["LOG_LEVEL=debug"])
    assert len(cfg.admin_token) == 64 and len(cfg.internal_secret) == 64
    assert cfg.database_url == "postgres://tessera:p%40ss%20word@127.0.0.1:9103/tessera"
    assert cfg.test_database_url == "postgres://tessera:p%40ss%20word@127.0.0.1:9103/tessera_test"
    assert compute(env, tmp_path).admin_token == cfg.admin_token
    cfg = compute({**env, "TESSERA_PG_HA": "1"}, tmp_path)
    assert cfg.database_url == ("postgres://tessera:p%40ss%20word@127.0.0.1:9103,127.0.0.1:9104/tessera"
                                "?target_session_attrs=read-write")


def test_env_differences(tmp_path):
    cfg = compute({"TESSERA_PORT": "23099", "TESSERA_API_KEY": "key"}, tmp_path)
    assert config.env_differences({}, cfg) == []
    assert config.env_differences({"TESSERA_PORT": "23099", "TESSERA_API_KEY": "key", "TESSERA_PG_HA": "0"},
                                  cfg) == []
    assert config.env_differences({"TESSERA_PORT": "24099", "TESSERA_API_KEY": "other", "TESSERA_PG_HA": "1",
                                   "TESSERA_PROJECT_ID": "x", "TESSERA_DB_PASSWORD": cfg.db_password}, cfg) == [
        "TESSERA_PG_HA", "TESSERA_PORT", "TESSERA_PROJECT_ID", "TESSERA_API_KEY"]


# ---------------------------------------------------------------------------------------------------
# the services' environment


def sample_config(passthrough=()):
    return Config(stack_port=23099, admin_port=23098, token_port=23100, directory_port=23101, worker_port=23102,
                  pg_port=23103, pg_ha=0, pg_port2=23104, pg_monitor_port=23105, project_id="proj", api_key="KEY",
                  admin_token="ADMIN", internal_secret="INTERNAL", db_password="pw", bin_dir="/b",
                  passthrough=list(passthrough))


CALLER = {"PATH": "/usr/bin", "HOME": "/home/me", "LANG": "de_DE.UTF-8", "TZ": "UTC", "TMPDIR": "",
          "SSL_CERT_FILE": "/ca.pem", "PGPORT": "5432", "LOG_LEVEL": "trace", "DATABASE_URL": "postgres://other"}


def test_service_environments():
    cfg, paths = sample_config(), Paths("/s")
    common = {"PATH": "/usr/bin", "HOME": "/home/me", "LANG": "de_DE.UTF-8", "TZ": "UTC", "SSL_CERT_FILE": "/ca.pem",
              "TESSERA_PROJECT_ID": "proj", "TESSERA_INTERNAL_SECRET": "INTERNAL", "TESSERA_HTTP_HOST": "127.0.0.1",
              "TESSERA_PUBLIC_URL": "http://127.0.0.1:23099"}
    assert config.service_env("user-directory", cfg, paths, CALLER) == {
        **common, "TESSERA_HTTP_PORT": "23101", "DATABASE_URL": "postgres://tessera:pw@127.0.0.1:23103/tessera",
        "TESSERA_ADMIN_TOKEN": "ADMIN", "TESSERA_API_KEY": "KEY", "TESSERA_TRUSTED_PROXIES": "127.0.0.2",
        "TESSERA_MFA_KEYS_FILE": "/s/secrets/TESSERA_MFA_KEYS"}
    assert config.service_env("token-service", cfg, paths, CALLER) == {
        **common, "TESSERA_HTTP_PORT": "23100", "TESSERA_API_KEY": "KEY",
        "TESSERA_DIRECTORY_URL": "http://127.0.0.1:23101", "TESSERA_SIGNING_KEYS_DIR": "/s/keys",
        "TESSERA_TRUSTED_PROXIES": "127.0.0.2"}
    assert config.service_env("cleanup-worker", cfg, paths, CALLER) == {
        **common, "TESSERA_HTTP_PORT": "23102", "TESSERA_DIRECTORY_URL": "http://127.0.0.1:23101"}


def test_mfa_key_is_made_once_and_given_keys_win(tmp_path):
    secrets = str(tmp_path)
    path = config.mfa_keys(secrets)
    key = open(path, encoding="utf-8").read().strip()
    assert len(base64.b64decode(key, validate=True)) == 32 and os.stat(path).st_mode & 0o077 == 0
    assert config.mfa_keys(secrets) == path and open(path, encoding="utf-8").read().strip() == key
    own = config.service_env("user-directory", sample_config(["TESSERA_MFA_KEYS_FILE=/etc/keys"]), Paths("/s"), {})
    assert own["TESSERA_MFA_KEYS_FILE"] == "/etc/keys"
    given = config.service_env("user-directory", sample_config(["TESSERA_MFA_KEYS=abc"]), Paths("/s"), {})
    assert "TESSERA_MFA_KEYS_FILE" not in given and given["TESSERA_MFA_KEYS"] == "abc"


def test_service_environment_defaults_without_a_caller_environment():
    env = config.service_env("cleanup-worker", sample_config(), Paths("/s"), {})
    assert (env["PATH"], env["HOME"], env["LANG"]) == ("/usr/local/bin:/usr/bin:/bin", "/", "C.UTF-8")


def test_pass_through_settings_reach_the_services_and_replace_the_stack_defaults():
    cfg = sample_config(["LOG_LEVEL=debug", "TESSERA_PUBLIC_URL=https://id.example", "TESSERA_TRUSTED_PROXIES=10.0.0.1"])
    for service in ("user-directory", "token-service", "cleanup-worker"):
        env = config.service_env(service, cfg, Paths("/s"), CALLER)
        assert env["LOG_LEVEL"] == "debug"
        assert env["TESSERA_PUBLIC_URL"] == "https://id.example"
        assert env["TESSERA_TRUSTED_PROXIES"] == "10.0.0.1"


def test_dropped_settings_leave_the_service_its_own_default():
    kept, dropped = config.apply_overrides(["LOG_LEVEL=debug"], ["TESSERA_PUBLIC_URL=", "TESSERA_TRUSTED_PROXIES=",
                                                                 "LOG_LEVEL="])
    env = config.service_env("token-service", sample_config(kept), Paths("/s"), CALLER, dropped)
    for name in ("TESSERA_PUBLIC_URL", "TESSERA_TRUSTED_PROXIES", "LOG_LEVEL"):
        assert name not in env


# ---------------------------------------------------------------------------------------------------
# paths


def test_resolve_paths(tmp_path, monkeypatch):
    target = tmp_path / "real"
    target.mkdir()
    (tmp_path / "link").symlink_to(target)
    paths = config.resolve_paths({"TESSERA_STACK_DIR": str(tmp_path / "link")})
    assert paths.stack_dir == str(target.resolve())
    assert paths.config_file == f"{target.resolve()}/run/config"
    assert paths.env_file == f"{target.resolve()}/env"
    assert config.resolve_paths({"TESSERA_STACK_DIR": "rel/dir"}, root="/repo").stack_dir == "/repo/rel/dir"
    assert config.resolve_paths({"TESSERA_STACK_DIR": ""}, root="/repo").stack_dir == "/repo/.stack"
    created = config.resolve_paths({"TESSERA_STACK_DIR": str(tmp_path / "new" / "deep")}, create=True)
    assert os.path.isdir(created.stack_dir)


def test_make_dirs(tmp_path):
    paths = Paths(str(tmp_path / "s"))
    os.mkdir(paths.stack_dir)
    config.make_dirs(paths)
    modes = {name: stat.S_IMODE(os.stat(f"{paths.stack_dir}/{name}").st_mode)
             for name in ("run", "logs", "nginx", "keys", "secrets")}
    assert modes["keys"] == modes["secrets"] == 0o700
    assert modes["run"] == modes["logs"] == 0o755
