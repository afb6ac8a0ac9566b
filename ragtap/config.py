"""ragtap's configuration: typed sections, filled from defaults < config.toml < environment < command-line flags.

Every setting has a default that works with no file at all (the demo runs on them).  Unknown keys in the file
are errors, so a typo does not silently fall back to a default.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragtap.exporters.settings import OtelSettings, PrometheusSettings
from ragtap.judge.settings import JudgeSettings
from ragtap.recognise import CustomPattern, patterns_from_config
from ragtap.scoring.claims import ClaimThresholds
from ragtap.scoring.passages import DEFAULT_MAX_WORDS
from ragtap.types import Thresholds


class ConfigError(ValueError):
    pass


@dataclass(frozen=True)
class ServerSettings:
    host: str = "127.0.0.1"  # loopback by default: exposing ragtap is a deliberate choice
    port: int = 8787
    upstream: str = "https://api.openai.com/v1"  # the upstream's OpenAI base URL
    connect_timeout_s: float = 10.0
    read_timeout_s: float = 600.0  # between bytes of the upstream's reply (long generations stream slowly)
    max_body_bytes: int = 8 * 1024 * 1024
    max_connections: int = 256  # pooled keep-alive connections to the upstream
    # An idle pooled connection is not reused after this long: keep it below the upstream's own keep-alive
    # timeout (5 s for uvicorn, i.e. vLLM and LiteLLM, for Node and for llama.cpp's server), or a request can
    # go out on a connection the upstream is closing at that moment and fail with 502.
    upstream_keepalive_s: float = 4.0
    debug_headers: bool = False  # x-ragtap-* headers on every RAG response (waits for scoring!)
    debug_wait_s: float = 5.0  # how long a debug response waits for its scores
    shutdown_grace_s: float = 15.0


@dataclass(frozen=True)
class InjectSettings:
    enabled: bool = True
    prompt: str = "supporting_content"  # file name in ragtap/prompts/
    json_response_format: bool = True  # ask for response_format json_object (turn off for upstreams without it)
    stream_usage: bool = True  # ask the upstream for a usage chunk in streams (stripped unless the app asked)


@dataclass(frozen=True)
class ScoringSettings:
    enabled: bool = True
    queue_size: int = 1000
    batch_max: int = 16
    embedder: str = "minilm"  # "minilm" (onnxruntime, offline) | "openai" (/v1/embeddings)
    embedder_threads: int = 1
    cache_entries: int = 50_000
    openai_base_url: str | None = None  # default: the upstream
    openai_model: str = "text-embedding-3-small"
    openai_api_key_env: str = "OPENAI_API_KEY"  # the name of the variable, never the key itself
    refusal_patterns: tuple[str, ...] = ()  # extra regexes that mark an answer as a refusal
    passage_words: int = DEFAULT_MAX_WORDS  # documents longer than this many words are cut into passages
    claim_level: bool = True  # judge each sentence of the answer and the support (false: whole texts only)


# Calibrated for all-MiniLM-L6-v2 on ../shared/data: see docs/thresholds.md for the derivation and the command.
DEFAULT_THRESHOLDS = Thresholds(sdq=0.51, sdrd=0.62, sda=0.62, qrd=0.61, qa=0.54, ard=0.46)


@dataclass(frozen=True)
class RecogniseSettings:
    patterns: tuple[CustomPattern, ...] = ()


@dataclass(frozen=True)
class LogSettings:
    level: str = "WARNING"
    interactions_path: str | None = None  # JSONL of scored interactions, re-scoreable with `ragtap score`


@dataclass(frozen=True)
class Config:
    server: ServerSettings = field(default_factory=ServerSettings)
    inject: InjectSettings = field(default_factory=InjectSettings)
    scoring: ScoringSettings = field(default_factory=ScoringSettings)
    thresholds: Thresholds = DEFAULT_THRESHOLDS
    claims: ClaimThresholds = field(default_factory=ClaimThresholds)
    recognise: RecogniseSettings = field(default_factory=RecogniseSettings)
    prometheus: PrometheusSettings = field(default_factory=PrometheusSettings)
    otel: OtelSettings = field(default_factory=OtelSettings)
    judge: JudgeSettings = field(default_factory=JudgeSettings)
    log: LogSettings = field(default_factory=LogSettings)


# Environment variables -> (section, key).  Thresholds: RAGTAP_THRESHOLD_<METRIC>.
ENV_OVERRIDES: dict[str, tuple[str, str]] = {
    "RAGTAP_UPSTREAM": ("server", "upstream"),
    "RAGTAP_HOST": ("server", "host"),
    "RAGTAP_PORT": ("server", "port"),
    "RAGTAP_DEBUG_HEADERS": ("server", "debug_headers"),
    "RAGTAP_EMBEDDER": ("scoring", "embedder"),
    "RAGTAP_QUEUE_SIZE": ("scoring", "queue_size"),
    "RAGTAP_METRICS_TOKEN": ("prometheus", "token"),
    "RAGTAP_LOG_LEVEL": ("log", "level"),
    "RAGTAP_INTERACTIONS_LOG": ("log", "interactions_path"),
    "RAGTAP_JUDGE_ENABLED": ("judge", "enabled"),
    "RAGTAP_JUDGE_URL": ("judge", "base_url"),
    "RAGTAP_JUDGE_MODEL": ("judge", "model"),
    **{f"RAGTAP_THRESHOLD_{m.upper()}": ("thresholds", m) for m in ("sdq", "sdrd", "sda", "qrd", "qa", "ard")},
}


def _coerce(value: Any, annotation: Any, where: str) -> Any:
    """Convert a TOML or environment value to the field's declared type, or raise ConfigError."""
    hint = annotation
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if value is None or value == "":
            return None
        hint, origin = args[0], typing.get_origin(args[0])
    if dataclasses.is_dataclass(hint) and isinstance(value, dict):
        try:
            return hint(**value)
        except (TypeError, ValueError) as error:
            raise ConfigError(f"{where}: {error}") from error
    if origin is tuple:
        (item_type, *_) = typing.get_args(hint)
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, list | tuple):
            raise ConfigError(f"{where}: expected a list")
        return tuple(_coerce(v, item_type, where) for v in items)
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected a table")
        return {str(k): str(v) for k, v in value.items()}
    if hint is bool:
        if isinstance(value, str):
            return value.strip().lower() in ("1", "true", "yes", "on")
        return bool(value)
    try:
        return hint(value)
    except (TypeError, ValueError) as error:
        raise ConfigError(f"{where}: {value!r} is not a valid {getattr(hint, '__name__', hint)}") from error


def _apply(section: Any, values: dict[str, Any], name: str) -> Any:
    if not isinstance(values, dict):
        raise ConfigError(f"[{name}] must be a table, got {type(values).__name__}")
    hints = typing.get_type_hints(type(section))
    known = {f.name for f in dataclasses.fields(section)}
    unknown = set(values) - known
    if unknown:
        raise ConfigError(f"[{name}]: unknown key(s) {', '.join(sorted(unknown))}")
    changes = {}
    for key, value in values.items():
        builder = _BUILDERS.get((name, key))
        try:
            changes[key] = builder(value) if builder else _coerce(value, hints[key], f"{name}.{key}")
        except ValueError as error:  # ConfigError is a ValueError too
            raise error if isinstance(error, ConfigError) else ConfigError(f"{name}.{key}: {error}") from error
    return dataclasses.replace(section, **changes)


# Settings with their own validating constructor (named errors for each malformed entry).
_BUILDERS = {("recognise", "patterns"): patterns_from_config}


def _merge(config: Config, overrides: dict[str, dict[str, Any]]) -> Config:
    sections = {f.name for f in dataclasses.fields(config)}
    unknown = set(overrides) - sections
    if unknown:
        raise ConfigError(f"unknown section(s) {', '.join(sorted(unknown))}")
    changes = {name: _apply(getattr(config, name), values, name) for name, values in overrides.items() if values}
    return dataclasses.replace(config, **changes)


def _env_overrides(environ: dict[str, str]) -> dict[str, dict[str, Any]]:
    overrides: dict[str, dict[str, Any]] = {}
    for variable, (section, key) in ENV_OVERRIDES.items():
        if variable in environ:
            overrides.setdefault(section, {})[key] = environ[variable]
    return overrides


def load_config(
    path: str | os.PathLike[str] | None = None,
    *,
    flags: dict[str, dict[str, Any]] | None = None,
    environ: dict[str, str] | None = None,
) -> Config:
    """Defaults, then the TOML file (if any), then RAGTAP_* variables, then the command-line flags."""
    config = Config()
    if path is not None:
        try:
            data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as error:
            raise ConfigError(f"cannot read {path}: {error}") from error
        config = _merge(config, data)
    config = _merge(config, _env_overrides(dict(os.environ if environ is None else environ)))
    if flags:
        config = _merge(config, {k: {kk: vv for kk, vv in v.items() if vv is not None} for k, v in flags.items()})
    return config
