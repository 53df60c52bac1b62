"""The files a stack writes, byte for byte as the bash version of scripts/stack wrote them
(fixtures/README.md): run/config (bash's printf %q), the env file, nginx.conf; and reading run/config back."""
import random
import shutil
import subprocess

import pytest
from conftest import FIXTURES, ROOT

from stacklib import config, shell
from stacklib.config import Config, Paths
from stacklib.output import StackError

BASH = shutil.which("bash")

PASSTHROUGH = [
    "TESSERA_REFRESH_GRACE=2s",
    "LOG_LEVEL=debug",
    "TESSERA_AUTHORIZED_APPS=com.example.tessera.android,1:123456789012:ios:0123456789abcdef",
    "TESSERA_ACTION_URL=https://x.test/a?b=c&d='e'",
    "TESSERA_PUBLIC_URL=",
    "SMTP_URL=smtp://tessera:sink-password@localhost:19124",
    "SMTP_FROM=Tessera <no-reply@example.test>",
    "IDP_GOOGLE_ISSUER=http://127.0.0.1:19125/google",
    "IDP_MICROSOFT_TOKEN_URL=http://127.0.0.1:19125/microsoft/{tenant}/token",
    "IDP_X=~home",
    "IDP_Y=#hash;(x)",
    'IDP_Z=é"\\',
    "OTEL_TAB=a\tb\nc",
]
MONITOR_PASSWORD = "0123456789abcdef" * 4


def fixture_config(pg_ha: int) -> Config:
    return Config(stack_port=19099, admin_port=19098, token_port=19100, directory_port=19101, worker_port=19102,
                  pg_port=19103, pg_ha=pg_ha, pg_port2=19104, pg_monitor_port=19105, project_id="tessera-local",
                  api_key="aa11" * 16, admin_token="bb22" * 16, internal_secret="cc33" * 16,
                  db_password="p'w d$x/é%+~", bin_dir="/srv/repo/.build/debug", passthrough=list(PASSTHROUGH))


def fixture_paths() -> Paths:
    return Paths("/srv/stack-fixture")


def reference(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


# ---------------------------------------------------------------------------------------------------
# run/config


@pytest.mark.parametrize("pg_ha", [0, 1])
def test_config_is_written_as_the_bash_version_wrote_it(pg_ha):
    assert config.config_text(fixture_config(pg_ha)) == reference(f"config-{pg_ha}")


@pytest.mark.parametrize("pg_ha", [0, 1])
def test_config_written_by_the_bash_version_reads_back(pg_ha):
    assert config.parse_config(reference(f"config-{pg_ha}")) == fixture_config(pg_ha)


def test_config_round_trip(tmp_path):
    paths = Paths(str(tmp_path))
    (tmp_path / "run").mkdir()
    assert config.load_config(paths) is None
    cfg = fixture_config(1)
    config.save_config(paths, cfg)
    assert config.load_config(paths) == cfg
    assert oct((tmp_path / "run" / "config").stat().st_mode & 0o777) == "0o600"
    assert not (tmp_path / "run" / "config.tmp").exists()


def test_a_config_of_an_earlier_version_gets_the_defaults_of_later_settings():
    text = ("STACK_PORT=9099\nTOKEN_PORT=9100\nDIRECTORY_PORT=9101\nWORKER_PORT=9102\nPG_PORT=9103\n"
            "PROJECT_ID=p\nAPI_KEY=k\nADMIN_TOKEN=a\nINTERNAL_SECRET=i\nDB_PASSWORD=d\nBIN_DIR=/b\n"
            "PASSTHROUGH=()\nPASSTHROUGH+=(LOG_LEVEL=debug)\n")
    cfg = config.parse_config(text)
    assert (cfg.admin_port, cfg.pg_ha, cfg.pg_port2, cfg.pg_monitor_port) == (9098, 0, 9104, 9105)
    assert cfg.passthrough == ["LOG_LEVEL=debug"]


def test_a_damaged_config_is_an_error():
    for text in ("STACK_PORT=9099\nTOKEN_PORT='9100\n", "echo hello\n", "STACK_PORT=x\n", "PASSTHROUGH+=(a\n"):
        with pytest.raises(StackError):
            config.parse_config(text)


SAMPLES = ["", "plain", "a b", "it's", 'say "hi"', "back\\slash", "$HOME", "`cmd`", "a;b&c|d", "(x)", "{a,b}",
           "*?[]", "~", "~user", "a~b", "a=~b", "a:~b", "#x", "x#", "!bang", "^caret", "<>", "tab\there",
           "new\nline", "cr\rx", "\x1b[0m", "\x7f", "\x01\x02", "é", "日本語", "é\x01", "emoji 🙂", "'", "''",
           "\\'", "a'b\"c\\d$e`f", "x=y", "%+,-./:=@_", "trailing\\", "\v\f\a\b"]


@pytest.mark.skipif(BASH is None, reason="needs bash")
def test_bash_q_is_what_bash_printf_q_prints():
    rng = random.Random(38)
    alphabet = [chr(c) for c in range(1, 128)] + ["é", "ß", "日", "🙂", "\u00a0", "\u200b"]
    samples = SAMPLES + ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12))) for _ in range(300)]
    out = subprocess.run([BASH, "-c", 'for s in "$@"; do printf "%q\\0" "$s"; done', "bash", *samples],
                         capture_output=True, env={"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}, check=True).stdout
    expected = out.decode("utf-8").split("\0")[:-1]
    assert [shell.bash_q(s) for s in samples] == expected


@pytest.mark.skipif(BASH is None, reason="needs bash")
def test_bash_reads_the_written_config_back_as_the_same_values(tmp_path):
    """scripts/bench and Tests/stack/fresh_stack.py source run/config with bash."""
    rng = random.Random(5)
    alphabet = [chr(c) for c in range(1, 128)] + ["é", "日"]
    values = SAMPLES + ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 10))) for _ in range(100)]
    cfg = fixture_config(0)
    cfg.passthrough = [f"IDP_V{i}={v}" for i, v in enumerate(values)]
    cfg.db_password = "".join(values[:20])
    path = tmp_path / "config"
    path.write_text(config.config_text(cfg), encoding="utf-8")
    out = subprocess.run([BASH, "-c", 'source "$1" && printf "%s\\0" "$DB_PASSWORD" "${PASSTHROUGH[@]}"', "bash",
                          str(path)], capture_output=True, env={"LANG": "C.UTF-8"}, check=True).stdout
    assert out.decode("utf-8").split("\0")[:-1] == [cfg.db_password, *cfg.passthrough]
    assert config.parse_config(path.read_text(encoding="utf-8")) == cfg


def test_parse_word_reads_the_quoting_of_shells():
    assert shell.parse_word("a\\ b rest") == ("a b", 4)
    assert shell.parse_word("'a b'\"c d\"$'e\\tf'") == ("a bc de\tf", 17)
    assert shell.parse_word(r"$'\101\x42\u00e9\E\c@'") == ("ABé\x1b\x00", 22)
    assert shell.parse_word("x)y", stop=")") == ("x", 1)
    assert shell.parse_word('"a\\$b\\x"') == ("a$b\\x", 8)


# ---------------------------------------------------------------------------------------------------
# the env file


@pytest.mark.parametrize("pg_ha", [0, 1])
def test_env_file_is_written_as_the_bash_version_wrote_it(pg_ha):
    text = config.env_file_text(fixture_config(pg_ha), fixture_paths(), MONITOR_PASSWORD if pg_ha else None)
    assert text == reference(f"env-{pg_ha}")


def test_env_file_carries_the_pass_through_settings_tests_time_by_and_every_idp_setting():
    names = [name for name, _ in config.env_entries(fixture_config(0), fixture_paths())]
    assert names[17:] == ["TESSERA_REFRESH_GRACE", "TESSERA_AUTHORIZED_APPS", "SMTP_URL", "IDP_GOOGLE_ISSUER",
                          "IDP_MICROSOFT_TOKEN_URL", "IDP_X", "IDP_Y", "IDP_Z"]
    assert "LOG_LEVEL" not in names and "SMTP_FROM" not in names and "OTEL_TAB" not in names
    assert "TESSERA_PG_HA" not in names


@pytest.mark.skipif(BASH is None, reason="needs bash")
def test_the_env_file_sources_to_its_values(tmp_path):
    paths = Paths(str(tmp_path))
    cfg = fixture_config(1)
    config.write_env_file(paths, cfg, MONITOR_PASSWORD)
    assert oct((tmp_path / "env").stat().st_mode & 0o777) == "0o600"
    out = subprocess.run([BASH, "-c", '. "$1/env" && env -0', "bash", str(tmp_path)], capture_output=True,
                         env={"LANG": "C.UTF-8"}, check=True).stdout.decode("utf-8")
    sourced = dict(item.split("=", 1) for item in out.split("\0") if "=" in item)
    for name, value in config.env_entries(cfg, paths, MONITOR_PASSWORD):
        assert sourced[name] == value, name


@pytest.mark.parametrize("value,quoted", [("", ""), ("abc-1.2_3/4:5@6%7+8=9,0", "abc-1.2_3/4:5@6%7+8=9,0"),
                                          ("a b", "'a b'"), ("it's", "'it'\\''s'"), ("{x}", "'{x}'"),
                                          ("~", "'~'"), ("é", "'é'")])
def test_shell_quote(value, quoted):
    assert shell.shell_quote(value) == quoted


def test_url_encode_and_sql_literal():
    assert shell.url_encode("aZ09._~-") == "aZ09._~-"
    assert shell.url_encode("p@ss/wörd %'") == "p%40ss%2Fw%C3%B6rd%20%25%27"
    assert shell.sql_literal("it's") == "'it''s'"


# ---------------------------------------------------------------------------------------------------
# nginx.conf


@pytest.mark.parametrize("as_root", [0, 1])
def test_nginx_conf_is_rendered_as_the_bash_version_rendered_it(as_root):
    paths = Paths("/srv/x")
    paths.nginx_dir = "/srv/a&b|c\\d/nginx"
    paths.log_dir = "/srv/a&b|c\\d/logs"
    text = config.render_nginx_conf(reference("nginx.template"), fixture_config(0), paths, bool(as_root))
    assert text == reference(f"nginx-{as_root}.conf")


def test_the_real_template_renders_completely():
    template = (ROOT / "deploy" / "nginx" / "tessera.conf.template").read_text(encoding="utf-8")
    text = config.render_nginx_conf(template, fixture_config(0), Paths("/srv/s"), False)
    assert "listen 127.0.0.1:19099 default_server;" in text
    assert "listen 127.0.0.1:19098;" in text
    assert "server 127.0.0.1:19100 max_fails=0;" in text and "server 127.0.0.1:19101 max_fails=0;" in text
    assert "pid /srv/s/run/nginx.pid;" in text and "/srv/s/logs/nginx-access.log" in text
    assert "@unavailable" in text


def test_an_unknown_placeholder_is_an_error():
    with pytest.raises(StackError) as raised:
        config.render_nginx_conf("listen @PORT@;\nroot @DOCROOT@;\n", fixture_config(0), Paths("/s"), False)
    assert raised.value.message == "unrendered placeholder in /s/nginx/nginx.conf.tmp: @DOCROOT@"
