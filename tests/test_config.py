"""Configuration: defaults < config.toml < RAGTAP_* environment < command-line flags; unknown keys are errors."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from ragtap.config import DEFAULT_THRESHOLDS, Config, ConfigError, load_config
from ragtap.recognise import CustomPattern

REPO = Path(__file__).resolve().parent.parent


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def defaults() -> Config:
    """`Config()` with the one default `load_config` fills in: the capture store in the data directory."""
    from ragtap.config import STORE_FILE, data_dir

    return dataclasses.replace(Config(), store=dataclasses.replace(Config().store, path=str(data_dir() / STORE_FILE)))


def test_defaults_without_a_file() -> None:
    config = load_config(environ={})
    assert config == defaults()
    assert config.thresholds == DEFAULT_THRESHOLDS
    assert config.server.host == "127.0.0.1" and config.server.port == 8787


def test_the_shipped_config_toml_is_the_defaults() -> None:
    assert load_config(REPO / "config.toml", environ={}) == defaults()


def test_precedence_file_then_env_then_flags(tmp_path: Path) -> None:
    path = write(tmp_path, '[server]\nport = 9001\nupstream = "http://file:1/v1"\nhost = "0.0.0.0"\n[scoring]\nqueue_size = 10\n')
    env = {"RAGTAP_PORT": "9002", "RAGTAP_UPSTREAM": "http://env:2/v1", "RAGTAP_QUEUE_SIZE": "20"}
    flags = {"server": {"port": 9003, "upstream": None, "host": None}}  # None = flag not given

    only_file = load_config(path, environ={})
    assert (only_file.server.port, only_file.server.upstream, only_file.server.host, only_file.scoring.queue_size) == (9001, "http://file:1/v1", "0.0.0.0", 10)
    file_env = load_config(path, environ=env)
    assert (file_env.server.port, file_env.server.upstream, file_env.scoring.queue_size) == (9002, "http://env:2/v1", 20)
    everything = load_config(path, environ=env, flags=flags)
    assert (everything.server.port, everything.server.upstream, everything.server.host) == (9003, "http://env:2/v1", "0.0.0.0")
    assert everything.scoring.queue_size == 20
    assert load_config(environ={}, flags={"server": {"port": 1}}).server.port == 1


def test_reads_os_environ_when_not_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGTAP_THRESHOLD_QA", "0.33")
    monkeypatch.setenv("RAGTAP_DEBUG_HEADERS", "true")
    config = load_config()
    assert config.thresholds.qa == pytest.approx(0.33) and config.server.debug_headers is True


def test_threshold_from_env() -> None:
    config = load_config(environ={"RAGTAP_THRESHOLD_SDRD": "0.72"})
    assert config.thresholds.sdrd == pytest.approx(0.72)
    assert config.thresholds.sdq == DEFAULT_THRESHOLDS.sdq  # the others untouched
    assert isinstance(config.thresholds.sdrd, float)


def test_thresholds_file_then_env(tmp_path: Path) -> None:
    path = write(tmp_path, "[thresholds]\nsdrd = 0.9\nqa = 0.1\n")
    config = load_config(path, environ={"RAGTAP_THRESHOLD_SDRD": "0.8"})
    assert (config.thresholds.sdrd, config.thresholds.qa) == (pytest.approx(0.8), pytest.approx(0.1))


@pytest.mark.parametrize(
    "text",
    ["[server]\nprot = 1\n", "[thresholds]\nsdrd2 = 0.5\n", "[serve]\nport = 1\n", "[scoring]\nembedder = 'minilm'\nqueue_length = 3\n"],
    ids=["key_typo", "threshold_typo", "section_typo", "one_bad_key_among_good"],
)
def test_unknown_keys_are_errors(tmp_path: Path, text: str) -> None:
    with pytest.raises(ConfigError, match="unknown"):
        load_config(write(tmp_path, text), environ={})


def test_unknown_flag_section_or_key_is_an_error() -> None:
    with pytest.raises(ConfigError):
        load_config(environ={}, flags={"server": {"nope": 1}})
    with pytest.raises(ConfigError):
        load_config(environ={}, flags={"nope": {"port": 1}})


@pytest.mark.parametrize(
    ("text", "env"),
    [
        ("[server]\nport = 'eighty'\n", {}),
        ("", {"RAGTAP_PORT": "eighty"}),
        ("", {"RAGTAP_THRESHOLD_QA": "high"}),
        ("[scoring]\nrefusal_patterns = 3\n", {}),
        ("[server\nport = 1\n", {}),  # not TOML
        ("server = 3\n", {}),  # a section that is not a table
        ("[[recognise.patterns]]\nname = 'x'\nregex = '(?P<context>.*)'\ncolour = 'red'\n", {}),
        ("[[recognise.patterns]]\nname = 'x'\nregex = '(?P<context>.*'\n", {}),  # the regex does not compile
    ],
    ids=["bad_int_file", "bad_int_env", "bad_float_env", "bad_list", "bad_toml", "section_not_table", "pattern_unknown_key", "pattern_bad_regex"],
)
def test_invalid_values_are_config_errors(tmp_path: Path, text: str, env: dict[str, str]) -> None:
    with pytest.raises(ConfigError):
        load_config(write(tmp_path, text), environ=env)


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "absent.toml", environ={})


def test_types_are_coerced(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "[server]\nread_timeout_s = 30\n[scoring]\nrefusal_patterns = ['out of scope']\n[log]\ninteractions_path = ''\n"
        "[[recognise.patterns]]\nname = 'acme'\nregex = '(?s)Knowledge:\\n(?P<context>.*?)\\n=====\\nCustomer asks: (?P<question>.*)'\nroles = ['user']\n",
    )
    config = load_config(path, environ={"RAGTAP_DEBUG_HEADERS": "0", "RAGTAP_INTERACTIONS_LOG": "/tmp/x.jsonl"})
    assert config.server.read_timeout_s == 30.0 and isinstance(config.server.read_timeout_s, float)
    assert config.scoring.refusal_patterns == ("out of scope",)
    assert config.server.debug_headers is False
    assert config.log.interactions_path == "/tmp/x.jsonl"
    (pattern,) = config.recognise.patterns
    assert isinstance(pattern, CustomPattern) and pattern.name == "acme" and tuple(pattern.roles) == ("user",)
    assert load_config(path, environ={}).log.interactions_path is None  # "" means unset


def test_config_is_immutable() -> None:
    config = load_config(environ={})
    with pytest.raises(Exception):
        config.server.port = 1  # type: ignore[misc]


def test_serve_and_demo_reject_a_bad_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from ragtap.cli import main

    bad = write(tmp_path, "[server]\nport = 'x'\n")
    assert main(["serve", "--config", str(bad)]) == 2
    assert "config error" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "env", "says"),
    [
        ("[server]\nhost = 123\n", {}, "server.host: Input should be a valid string"),
        ("", {"RAGTAP_PORT": "-1"}, "server.port: Input should be greater than or equal to 0"),
        ("", {"RAGTAP_PORT": "99999"}, "server.port: Input should be less than or equal to 65535"),
        ("", {"RAGTAP_LOG_LEVEL": "LOUD"}, "log.level: expected one of"),
        ("", {"RAGTAP_EMBEDDER": "bogus"}, "scoring.embedder: expected one of"),
        ("", {"RAGTAP_UPSTREAM": "junk"}, "server.upstream: expected an http(s) base URL"),
        ("", {"RAGTAP_DEBUG_HEADERS": "ture"}, "server.debug_headers: Input should be a valid boolean"),
        ("", {"RAGTAP_QUEUE_SIZE": "0"}, "scoring.queue_size: Input should be greater than or equal to 1"),
        ("", {"RAGTAP_THRESHOLD_QA": "1.5"}, "thresholds.qa: Input should be less than or equal to 1"),
        ("[scoring]\nbatch_max = 0\n", {}, "scoring.batch_max"),
        ("[server]\nmax_body_bytes = 0\n", {}, "server.max_body_bytes"),
        ("[server]\nmax_body_bytes = -1\n", {}, "server.max_body_bytes"),
        ("[server]\nread_timeout_s = 0\n", {}, "server.read_timeout_s: Input should be greater than 0"),
        ("[prometheus]\npath = 'metrics'\n", {}, "prometheus.path: must start with '/'"),
        ("[otel]\nexporter = 'bogus'\n", {}, "otel.exporter: expected one of"),
        ("[inject]\nprompt = 'nope'\n", {}, "inject.prompt: no prompt 'nope'"),
        ("[scoring]\nrefusal_patterns = ['(unclosed']\n", {}, "scoring.refusal_patterns: '(unclosed' is not a valid regex"),
        ("[judge]\nmetrics = ['bogus']\n", {}, "judge.metrics: expected a non-empty subset"),
        ("[claims]\nlexical = 2\n", {}, "claims.lexical"),
        ("", {"RAGTAP_INTERACTIONS_LOG": "/no/such/folder/x.jsonl"}, "log.interactions_path: the folder /no/such/folder does not exist"),
    ],
)
def test_bad_values_are_one_clear_line(tmp_path: Path, text: str, env: dict[str, str], says: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, text), environ=env)
    message = str(caught.value)
    assert says in message and "\n" not in message


def test_a_config_that_is_not_utf8_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_bytes(b"[server]\nhost = '\xff\xfe'\n")
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(path, environ={})


def test_bad_config_through_the_cli_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from ragtap.cli import main

    monkeypatch.setenv("RAGTAP_LOG_LEVEL", "LOUD")
    assert main(["serve"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("ragtap: config error: log.level") and "\n" not in err and "Traceback" not in err
