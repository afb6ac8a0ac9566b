"""ragtap's configuration: typed sections, filled from defaults < config.toml < environment < command-line flags.

Every setting has a default that works with no file at all (the demo runs on them).  Unknown keys in the file
are errors, so a typo does not silently fall back to a default.  Values are converted and checked by pydantic
against each field's type and limits (`_LIMITS`), then names, URLs, regexes and folders are checked (`_check`):
every problem is one line naming the setting, the rule and the value, never a traceback.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import tomllib
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import Field, TypeAdapter, ValidationError

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
    embedder: str = "minilm"  # "minilm" (onnxruntime int8, offline) | "minilm-fp32" (float32 reference) | "openai" (/v1/embeddings)
    embedder_threads: int = 1
    cache_entries: int = 50_000
    openai_base_url: str | None = None  # default: the upstream
    openai_model: str = "text-embedding-3-small"
    openai_api_key_env: str = "OPENAI_API_KEY"  # the name of the variable, never the key itself
    refusal_patterns: tuple[str, ...] = ()  # extra regexes that mark an answer as a refusal
    passage_words: int = DEFAULT_MAX_WORDS  # documents longer than this many words are cut into passages
    claim_level: bool = True  # judge each sentence of the answer and the support (false: whole texts only)
    # What one interaction may cost the scorer (the request itself is forwarded whole): see pipeline/limits.py.
    max_documents: int = 64
    max_document_chars: int = 20_000
    max_text_chars: int = 20_000
    max_passages: int = 256


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


# Limits of numeric settings, checked with the types (pydantic): a value outside them is a config error, not
# a proxy that misbehaves later (an unbounded queue, a 413 on every request, a timeout that fires at once).
def _between(lo: float | None = None, hi: float | None = None, *, above: float | None = None) -> Any:
    return Field(ge=lo, le=hi, gt=above)


_LIMITS: dict[tuple[str, str], Any] = {
    ("server", "port"): _between(0, 65535),  # 0: any free port
    ("server", "connect_timeout_s"): _between(above=0),
    ("server", "read_timeout_s"): _between(above=0),
    ("server", "max_body_bytes"): _between(1),
    ("server", "max_connections"): _between(1),
    ("server", "upstream_keepalive_s"): _between(0),
    ("server", "debug_wait_s"): _between(0),
    ("server", "shutdown_grace_s"): _between(0),
    ("scoring", "queue_size"): _between(1),
    ("scoring", "batch_max"): _between(1),
    ("scoring", "embedder_threads"): _between(1),
    ("scoring", "cache_entries"): _between(0),
    ("scoring", "passage_words"): _between(16),
    **{("scoring", k): _between(1) for k in ("max_documents", "max_document_chars", "max_text_chars", "max_passages")},
    **{("thresholds", m): _between(-1, 1) for m in ("sdq", "sdrd", "sda", "qrd", "qa", "ard")},
    **{("claims", k): _between(0, 1) for k in ("lexical_alone", "lexical", "parametric_share")},
    **{("claims", k): _between(-1, 1) for k in ("similarity", "similarity_with_lexical")},
    ("claims", "min_content_words"): _between(0),
    ("prometheus", "listen_port"): _between(0, 65535),
    ("prometheus", "max_models"): _between(1),
    ("otel", "content_max_chars"): _between(0),
    ("otel", "export_timeout"): _between(above=0),
    ("judge", "sample_rate"): _between(0, 1),
    ("judge", "concurrency"): _between(1),
    ("judge", "questions"): _between(1),
    ("judge", "max_retries"): _between(0),
    ("judge", "timeout_s"): _between(above=0),
    ("judge", "calls_per_second"): _between(above=0),
    ("judge", "burst_calls"): _between(1),
    ("judge", "daily_token_budget"): _between(0),
    ("judge", "max_in_flight"): _between(1),
}


@functools.lru_cache(maxsize=256)
def _adapter(annotation: Any, limit: Any) -> TypeAdapter[Any]:
    return TypeAdapter(annotation if limit is None else Annotated[annotation, limit])


def _one_line(error: ValidationError) -> str:
    first = error.errors()[0]
    return str(first["msg"]).rstrip(".")


def _coerce(value: Any, annotation: Any, where: str, limit: Any = None) -> Any:
    """Convert a TOML or environment value to the field's declared type (pydantic, lax mode: "8787" -> 8787,
    "true"/"0"/"on" -> bool), within the field's limits, or raise ConfigError with one line."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    optional = origin in (typing.Union, types.UnionType) and type(None) in args
    if optional and (value is None or value == ""):
        return None
    inner = next((a for a in args if a is not type(None)), annotation) if optional else annotation
    if typing.get_origin(inner) is tuple and isinstance(value, str):  # env lists: "a,b"
        value = [item.strip() for item in value.split(",") if item.strip()]
    if typing.get_origin(inner) is dict and isinstance(value, dict):
        value = {str(k): str(v) for k, v in value.items()}
    try:
        return _adapter(annotation, limit).validate_python(value)
    except ValidationError as error:
        raise ConfigError(f"{where}: {_one_line(error)} (got {value!r})") from None


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
            changes[key] = builder(value) if builder else _coerce(value, hints[key], f"{name}.{key}", _LIMITS.get((name, key)))
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
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
            raise ConfigError(f"cannot read {path}: {error}") from error
        config = _merge(config, data)
    config = _merge(config, _env_overrides(dict(os.environ if environ is None else environ)))
    if flags:
        config = _merge(config, {k: {kk: vv for kk, vv in v.items() if vv is not None} for k, v in flags.items()})
    _check(config)
    return config


OTEL_EXPORTERS = ("otlp", "console", "none")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def _check(config: Config) -> None:
    """What a type cannot say: names that must exist, URLs, regexes, directories.  One line per problem."""
    from ragtap.embedding.factory import embedder_kinds
    from ragtap.judge.settings import METRIC_NAMES
    from ragtap.prompts import load_prompt

    upstream = urlsplit(config.server.upstream)
    if upstream.scheme not in ("http", "https") or not upstream.hostname:
        raise ConfigError(f"server.upstream: expected an http(s) base URL such as https://api.openai.com/v1 (got {config.server.upstream!r})")
    if config.log.level.upper() not in LOG_LEVELS:
        raise ConfigError(f"log.level: expected one of {', '.join(LOG_LEVELS)} (got {config.log.level!r})")
    if config.scoring.embedder not in embedder_kinds():
        raise ConfigError(f"scoring.embedder: expected one of {', '.join(embedder_kinds())} (got {config.scoring.embedder!r})")
    if config.otel.exporter not in OTEL_EXPORTERS:
        raise ConfigError(f"otel.exporter: expected one of {', '.join(OTEL_EXPORTERS)} (got {config.otel.exporter!r})")
    if not config.prometheus.path.startswith("/"):
        raise ConfigError(f"prometheus.path: must start with '/' (got {config.prometheus.path!r})")
    try:
        load_prompt(config.inject.prompt)
    except (OSError, ValueError) as error:
        raise ConfigError(f"inject.prompt: no prompt {config.inject.prompt!r} in ragtap/prompts ({type(error).__name__})") from None
    for pattern in config.scoring.refusal_patterns:
        try:
            re.compile(pattern)
        except re.error as error:
            raise ConfigError(f"scoring.refusal_patterns: {pattern!r} is not a valid regex ({error})") from None
    unknown = set(config.judge.metrics) - set(METRIC_NAMES)
    if unknown or not config.judge.metrics:
        raise ConfigError(f"judge.metrics: expected a non-empty subset of {', '.join(METRIC_NAMES)} (got {list(config.judge.metrics)!r})")
    if config.log.interactions_path:
        folder = Path(config.log.interactions_path).expanduser().resolve().parent
        if not folder.is_dir():
            raise ConfigError(f"log.interactions_path: the folder {folder} does not exist")

