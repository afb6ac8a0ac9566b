"""ragtap's configuration: typed sections, filled from defaults < config.toml < environment < command-line flags.

Every setting has a default that works with no file at all (the demo runs on them).  Unknown keys in the file
are errors, so a typo does not silently fall back to a default.  Values are converted and checked by pydantic
against each field's type and limits (`_LIMITS`), then names, URLs, regexes and folders are checked (`_check`):
every problem is one line naming the setting, the rule and the value, never a traceback.
"""

from __future__ import annotations

import dataclasses
import functools
import ipaddress
import os
import re
import tomllib
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import Field, TypeAdapter, ValidationError

from ragtap.cost import CostSettings, prices_from_config
from ragtap.exporters.settings import OTLP_PROTOCOLS, OtelSettings, PrometheusSettings, headers_from_config
from ragtap.guard.settings import ACTIONS as GUARD_ACTIONS, FALLBACKS as GUARD_FALLBACKS, TRIGGERS as GUARD_TRIGGERS, GuardSettings
from ragtap.judge.settings import JudgeSettings
from ragtap.privacy import PrivacySettings, settings_problem
from ragtap.recognise import CustomPattern, patterns_from_config
from ragtap.scoring.claims import ClaimThresholds, VerifierSettings
from ragtap.scoring.passages import DEFAULT_MAX_WORDS, DEFAULT_QRD_WINDOW_WORDS
from ragtap.store.settings import CAPTURE_POLICIES, StoreSettings
from ragtap.triage.settings import TRACE_URL_FIELDS, TriageSettings
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
    # Processes serving the port (`ragtap serve --workers N`): 1 is one process; "auto" one per core.  See
    # ragtap/supervisor/ and docs/scaling.md.
    workers: int | Literal["auto"] = 1
    # Workers each listen with SO_REUSEPORT where the platform balances connections over such sockets (Linux);
    # false, or elsewhere: they share one listening socket opened by the supervisor.
    reuse_port: bool = True

    @property
    def worker_count(self) -> int:
        return usable_cores() if self.workers == "auto" else self.workers


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the platform has one: a container's cpuset)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class WorkerRole:
    """Which process of `ragtap serve --workers N` this is: `index` 0 .. `count` - 1 (a single process is 0 of 1).
    Worker 0 does the chores that must run once per deployment, not once per process (pruning and repairing the
    SQLite capture store, start-up warnings); every worker gets 1/`count` of the online judge's call rate and budget."""

    index: int = 0
    count: int = 1

    @property
    def leads(self) -> bool:
        return self.index == 0


@dataclass(frozen=True)
class ClientSettings:
    """Limits on the apps' connections to ragtap (ragtap/proxy/clients.py): slow or idle clients are closed."""

    header_timeout_s: float = 10.0  # a request's headers must be complete this long after its first byte
    body_timeout_s: float = 60.0  # its body must be complete this long after the headers (else 408)
    idle_timeout_s: float = 60.0  # a connection with no request in progress is closed after this long
    max_connections: int = 1024  # over this, the oldest idle / header-sending connection is closed (at most what the fds allow)


@dataclass(frozen=True)
class ReplySettings:
    """What ragtap keeps in memory of one RAG reply (issue 13 #9); over these it relays without keeping."""

    max_body_bytes: int = 16 * 1024 * 1024  # a non-streamed RAG reply read whole to split it, or one stream event; larger: relayed as is
    max_kept_chars: int = 4_000_000  # text a stream's extractor keeps (answer, supporting content) for scoring


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
    qrd_window_words: int = DEFAULT_QRD_WINDOW_WORDS  # QRD also compares the question with windows this long (0: off)
    claim_level: bool = True  # judge each sentence of the answer and the support (false: whole texts only)
    # What one interaction may cost the scorer (the request itself is forwarded whole): see pipeline/limits.py.
    max_documents: int = 64
    max_document_chars: int = 20_000
    max_text_chars: int = 20_000
    max_passages: int = 256
    # Where the proxy hands interactions to scoring: "memory" (the in-process queue, scored in this process) or
    # "redis://host:port/db" (a Redis stream read by `ragtap worker` processes; see [redis_queue], docs/scaling.md).
    queue: str = "memory"


@dataclass(frozen=True)
class RedisQueueSettings:
    """The Redis Streams hand-off (used when `[scoring] queue` is a redis:// URL)."""

    stream: str = "ragtap:interactions"
    group: str = "ragtap-scorers"
    max_length: int = 100_000  # unscored entries in the stream; beyond it new ones are shed and counted
    handoff_timeout_ms: float = 50.0  # one XADD round trip; slower counts as an outage (fallback to local scoring)
    # The proxy gathers interactions this long before one add: one Redis call (~50 µs of the event loop's CPU in
    # redis-py) then carries many, instead of one per request.  Adds as much to the time to verdict.
    linger_ms: float = 10.0
    outbox_size: int = 10_000  # interactions waiting in the proxy for their XADD (bounded; full -> local fallback)
    reconnect_max_s: float = 5.0  # backoff ceiling while Redis is down
    claim_idle_s: float = 30.0  # a worker claims another's unacknowledged entries idle this long (a dead worker)
    block_ms: int = 1000  # how long one XREADGROUP waits for entries
    # How long an exported interaction id is remembered: longer than any batch can take (a worker that was slow,
    # not dead, finishes after another claimed its entries); each id costs Redis ~165 bytes while remembered
    # (measured: 100,000 keys), e.g. 100 MB at 1,000 interactions/s.
    dedupe_ttl_s: int = 600


# Calibrated for all-MiniLM-L6-v2 on ../shared/data: see docs/thresholds.md for the derivation and the command.
DEFAULT_THRESHOLDS = Thresholds(sdq=0.51, sdrd=0.62, sda=0.62, qrd=0.60, qa=0.54, ard=0.46)


@dataclass(frozen=True)
class RecogniseSettings:
    patterns: tuple[CustomPattern, ...] = ()


@dataclass(frozen=True)
class LogSettings:
    level: str = "WARNING"
    format: str = "text"  # "text" | "json" (one JSON object per line)
    interactions_path: str | None = None  # JSONL of scored interactions, re-scoreable with `ragtap score`


@dataclass(frozen=True)
class Config:
    server: ServerSettings = field(default_factory=ServerSettings)
    clients: ClientSettings = field(default_factory=ClientSettings)
    replies: ReplySettings = field(default_factory=ReplySettings)
    inject: InjectSettings = field(default_factory=InjectSettings)
    scoring: ScoringSettings = field(default_factory=ScoringSettings)
    thresholds: Thresholds = DEFAULT_THRESHOLDS
    claims: ClaimThresholds = field(default_factory=ClaimThresholds)
    recognise: RecogniseSettings = field(default_factory=RecogniseSettings)
    prometheus: PrometheusSettings = field(default_factory=PrometheusSettings)
    otel: OtelSettings = field(default_factory=OtelSettings)
    cost: CostSettings = field(default_factory=CostSettings)
    judge: JudgeSettings = field(default_factory=JudgeSettings)
    log: LogSettings = field(default_factory=LogSettings)
    store: StoreSettings = field(default_factory=StoreSettings)
    triage: TriageSettings = field(default_factory=TriageSettings)
    privacy: PrivacySettings = field(default_factory=PrivacySettings)
    redis_queue: RedisQueueSettings = field(default_factory=RedisQueueSettings)
    guard: GuardSettings = field(default_factory=GuardSettings)


STORE_FILE = "capture.sqlite3"  # the default capture store, in the data directory
SALT_FILE = "identity.salt"  # the per-install salt of hashed user and session ids, in the data directory
# The paths the proxy's own routes live under (ragtap/proxy/app.py): the triage page may not take one of them.
PROXY_ROUTES = ("/v1", "/chat", "/responses", "/healthz")


def data_dir() -> Path:
    """Where ragtap keeps what it writes by default (the capture store, the identity salt): `$XDG_DATA_HOME/ragtap`,
    else `~/.local/share/ragtap` (the XDG base directory rule; a relative XDG_DATA_HOME is ignored).  Read from the
    process's environment, not the config: it belongs to the user ragtap runs as."""
    xdg = os.environ.get("XDG_DATA_HOME", "")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "ragtap"
    return Path(os.path.expanduser("~")) / ".local" / "share" / "ragtap"


# Environment variables -> (section, key).  Thresholds: RAGTAP_THRESHOLD_<METRIC>.
ENV_OVERRIDES: dict[str, tuple[str, str]] = {
    "RAGTAP_UPSTREAM": ("server", "upstream"),
    "RAGTAP_HOST": ("server", "host"),
    "RAGTAP_PORT": ("server", "port"),
    "RAGTAP_WORKERS": ("server", "workers"),
    "RAGTAP_DEBUG_HEADERS": ("server", "debug_headers"),
    "RAGTAP_EMBEDDER": ("scoring", "embedder"),
    "RAGTAP_QUEUE_SIZE": ("scoring", "queue_size"),
    "RAGTAP_SCORING_QUEUE": ("scoring", "queue"),
    "RAGTAP_METRICS_TOKEN": ("prometheus", "token"),
    "RAGTAP_LOG_LEVEL": ("log", "level"),
    "RAGTAP_LOG_FORMAT": ("log", "format"),
    "RAGTAP_INTERACTIONS_LOG": ("log", "interactions_path"),
    "RAGTAP_JUDGE_ENABLED": ("judge", "enabled"),
    "RAGTAP_JUDGE_URL": ("judge", "base_url"),
    "RAGTAP_JUDGE_MODEL": ("judge", "model"),
    "RAGTAP_CAPTURE": ("store", "capture"),
    "RAGTAP_STORE_PATH": ("store", "path"),
    "RAGTAP_STORE_URL": ("store", "url"),
    "RAGTAP_IDENTITY": ("privacy", "identity"),
    "RAGTAP_IDENTITY_SALT": ("privacy", "identity_salt"),
    "RAGTAP_TRIAGE_TOKEN": ("triage", "token"),
    **{f"RAGTAP_THRESHOLD_{m.upper()}": ("thresholds", m) for m in ("sdq", "sdrd", "sda", "qrd", "qa", "ard")},
    # Every [otel] key: RAGTAP_OTEL_ENABLED, RAGTAP_OTEL_PROTOCOL, RAGTAP_OTEL_HEADERS ("k=v,k2=v2"), ...
    **{f"RAGTAP_OTEL_{f.name.upper()}": ("otel", f.name) for f in dataclasses.fields(OtelSettings)},
    "RAGTAP_COST_ENABLED": ("cost", "enabled"),
    "RAGTAP_GUARD": ("guard", "action"),
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
    **{("clients", k): _between(above=0) for k in ("header_timeout_s", "body_timeout_s", "idle_timeout_s")},
    ("clients", "max_connections"): _between(1),
    ("replies", "max_body_bytes"): _between(1),
    ("replies", "max_kept_chars"): _between(1),
    ("scoring", "queue_size"): _between(1),
    ("scoring", "batch_max"): _between(1),
    ("scoring", "embedder_threads"): _between(1),
    ("scoring", "cache_entries"): _between(0),
    ("scoring", "passage_words"): _between(16),
    ("scoring", "qrd_window_words"): _between(0),
    **{("scoring", k): _between(1) for k in ("max_documents", "max_document_chars", "max_text_chars", "max_passages")},
    **{("thresholds", m): _between(-1, 1) for m in ("sdq", "sdrd", "sda", "qrd", "qa", "ard")},
    **{("claims", k): _between(0, 1) for k in ("lexical_alone", "aligned", "lexical", "parametric_share")},
    **{("claims", k): _between(-1, 1) for k in ("similarity", "similarity_with_lexical")},
    ("claims", "min_content_words"): _between(0),
    ("claims.verifier", "threshold"): _between(0, 1),
    ("claims.verifier", "max_tokens"): _between(8),
    ("redis_queue", "max_length"): _between(1),
    ("redis_queue", "handoff_timeout_ms"): _between(above=0),
    ("redis_queue", "outbox_size"): _between(1),
    ("redis_queue", "linger_ms"): _between(0, 1000),
    ("redis_queue", "reconnect_max_s"): _between(above=0),
    ("redis_queue", "claim_idle_s"): _between(above=0),
    ("redis_queue", "block_ms"): _between(1),
    ("redis_queue", "dedupe_ttl_s"): _between(1),
    ("prometheus", "listen_port"): _between(0, 65535),
    ("prometheus", "max_models"): _between(1),
    ("otel", "content_max_chars"): _between(0),
    ("otel", "export_timeout"): _between(above=0),
    ("otel", "metrics_interval_s"): _between(above=0),
    ("judge", "sample_rate"): _between(0, 1),
    ("judge", "concurrency"): _between(1),
    ("judge", "questions"): _between(1),
    ("judge", "max_retries"): _between(0),
    ("judge", "timeout_s"): _between(above=0),
    ("judge", "calls_per_second"): _between(above=0),
    ("judge", "burst_calls"): _between(1),
    ("judge", "daily_token_budget"): _between(0),
    ("judge", "max_in_flight"): _between(1),
    ("store", "max_rows"): _between(1),
    ("store", "max_age_days"): _between(above=0),
    ("store", "prune_every_s"): _between(above=0),
    ("store", "queue_size"): _between(1),
    ("store", "batch_max"): _between(1),
    ("store", "lock_timeout_s"): _between(above=0),
    ("triage", "listen_port"): _between(0, 65535),
    ("triage", "page_size"): _between(1, 500),
    ("triage", "poll_seconds"): _between(0),  # 0 (no live updates) or at least MIN_POLL_SECONDS: _check_triage
    ("triage", "live_lookback_s"): _between(0),
    ("guard", "deadline_ms"): _between(above=0),
    ("guard", "max_in_flight"): _between(1),
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


def _workers(value: Any) -> int | Literal["auto"]:
    if isinstance(value, str) and value.strip().lower() == "auto":
        return "auto"
    try:
        count = int(value)
    except (TypeError, ValueError):
        count = 0
    if isinstance(value, bool) or isinstance(value, float) or count < 1:
        raise ConfigError(f'server.workers: expected a whole number >= 1 or "auto" (got {value!r})')
    return count


def _verifier_settings(value: Any) -> VerifierSettings:
    """`[claims.verifier]`: a table of VerifierSettings' keys, each checked (an unknown key is an error)."""
    if not isinstance(value, dict):
        raise ValueError(f"must be a table ([claims.verifier] model = \"path.onnx\"), got {type(value).__name__}")
    return _apply(VerifierSettings(), value, "claims.verifier")  # type: ignore[no-any-return]


def _store_path(value: Any) -> str:
    """`[store] path`: kept as given, "" included ("" turns the store off; an absent path means the default)."""
    if not isinstance(value, str):
        raise ValueError(f"expected a file path, or \"\" for no store (got {value!r})")
    return os.path.expanduser(value) if value.strip() else ""


# Settings with their own validating constructor (named errors for each malformed entry).
_BUILDERS = {("server", "workers"): _workers, ("recognise", "patterns"): patterns_from_config, ("otel", "headers"): headers_from_config,
             ("cost", "prices"): prices_from_config, ("store", "path"): _store_path, ("claims", "verifier"): _verifier_settings}
# Keys that moved: a config that still has them gets one line saying where they went.
_MOVED = {("store", "redact"): "[privacy] redact", ("store", "redact_replacement"): "[privacy] redact_replacement"}


def _merge(config: Config, overrides: dict[str, dict[str, Any]]) -> Config:
    sections = {f.name for f in dataclasses.fields(config)}
    unknown = set(overrides) - sections
    if unknown:
        raise ConfigError(f"unknown section(s) {', '.join(sorted(unknown))}")
    for (section, key), where in _MOVED.items():
        if isinstance(overrides.get(section), dict) and key in overrides[section]:
            raise ConfigError(f"{section}.{key}: moved to {where} (it applies to everything ragtap writes: the capture "
                              "store, the JSONL log, OpenTelemetry)")
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
    store = config.store
    if store.capture != "none" and store.path is None and not store.url:  # on by default, in the data directory
        config = dataclasses.replace(config, store=dataclasses.replace(store, path=str(data_dir() / STORE_FILE)))
    _check(config)
    return config


def _redacted_url(url: str) -> str:
    """A URL without its password (a redis:// URL may carry one), for error messages and logs."""
    try:
        parts = urlsplit(url)
    except ValueError:  # malformed: hide whatever sits between "//" and "@"
        return re.sub(r"//[^/@]*@", "//***@", url)
    if parts.password is None:
        return url
    return url.replace(f":{parts.password}@", ":***@")


def _is_host_name(value: str) -> bool:
    """A DNS name or an IP address, without a scheme, port, path or user part."""
    try:
        ipaddress.ip_address(value.strip("[]"))
        return True
    except ValueError:
        return bool(re.fullmatch(r"(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?", value))


OTEL_EXPORTERS = ("otlp", "console", "none")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
LOG_FORMATS = ("text", "json")


def _check(config: Config) -> None:
    """What a type cannot say: names that must exist, URLs, regexes, directories.  One line per problem."""
    from ragtap.embedding.factory import embedder_kinds
    from ragtap.judge.settings import METRIC_NAMES
    from ragtap.prompts import load_prompt

    upstream = urlsplit(config.server.upstream)
    if upstream.scheme not in ("http", "https") or not upstream.hostname:
        raise ConfigError(f"server.upstream: expected an http(s) base URL such as https://api.openai.com/v1 (got {config.server.upstream!r})")
    queue = urlsplit(config.scoring.queue)
    if config.scoring.queue != "memory" and (queue.scheme not in ("redis", "rediss", "unix") or not (queue.hostname or queue.path)):
        raise ConfigError(f"scoring.queue: expected \"memory\" or a redis://host:port/db URL (got {_redacted_url(config.scoring.queue)!r})")
    if config.log.level.upper() not in LOG_LEVELS:
        raise ConfigError(f"log.level: expected one of {', '.join(LOG_LEVELS)} (got {config.log.level!r})")
    if config.log.format not in LOG_FORMATS:
        raise ConfigError(f"log.format: expected one of {', '.join(LOG_FORMATS)} (got {config.log.format!r})")
    if config.scoring.embedder not in embedder_kinds():
        raise ConfigError(f"scoring.embedder: expected one of {', '.join(embedder_kinds())} (got {config.scoring.embedder!r})")
    if config.otel.exporter not in OTEL_EXPORTERS:
        raise ConfigError(f"otel.exporter: expected one of {', '.join(OTEL_EXPORTERS)} (got {config.otel.exporter!r})")
    if config.otel.protocol is not None and config.otel.protocol not in OTLP_PROTOCOLS:
        raise ConfigError(f"otel.protocol: expected one of {', '.join(OTLP_PROTOCOLS)} (got {config.otel.protocol!r})")
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
    _check_triage(config)
    _check_guard(config.guard)
    problem = settings_problem(config.privacy)
    if problem is not None:
        raise ConfigError(problem)
    if config.log.interactions_path:
        folder = Path(config.log.interactions_path).expanduser().resolve().parent
        if not folder.is_dir():
            raise ConfigError(f"log.interactions_path: the folder {folder} does not exist")
    _check_store(config.store)


def _check_store(store: StoreSettings) -> None:
    if store.capture not in CAPTURE_POLICIES:
        raise ConfigError(f"store.capture: expected one of {', '.join(CAPTURE_POLICIES)} (got {store.capture!r})")
    if store.path and store.url:
        raise ConfigError("store: set path (SQLite) or url (PostgreSQL), not both")
    if store.url:
        _check_postgres_url(store.url)
    if store.path and store.path != str(data_dir() / STORE_FILE):  # the default folder is created when opened
        folder = Path(store.path).resolve().parent
        if not folder.is_dir():
            raise ConfigError(f"store.path: the folder {folder} does not exist")
    for header in (*store.user_headers, *store.session_headers):
        if not re.fullmatch(r"[A-Za-z0-9!#$%&'*+.^_`|~-]+", header):
            raise ConfigError(f"store.user_headers/session_headers: {header!r} is not a header name")



def _check_guard(guard: GuardSettings) -> None:
    from ragtap.prompts import load_prompt

    if guard.action not in GUARD_ACTIONS:
        raise ConfigError(f"guard.action: expected one of {', '.join(GUARD_ACTIONS)} (got {guard.action!r})")
    unknown = [v for v in guard.verdicts if v not in GUARD_TRIGGERS]
    if unknown or not guard.verdicts:
        raise ConfigError(f"guard.verdicts: expected a non-empty list of {', '.join(GUARD_TRIGGERS)} (got {list(guard.verdicts)!r})")
    if guard.retry_fallback not in GUARD_FALLBACKS:
        raise ConfigError(f"guard.retry_fallback: expected one of {', '.join(GUARD_FALLBACKS)} (got {guard.retry_fallback!r})")
    if not guard.block_message.strip():
        raise ConfigError("guard.block_message: must not be empty (it is what the app receives instead of a blocked answer)")
    try:
        load_prompt(guard.retry_prompt)
    except (OSError, ValueError) as error:
        raise ConfigError(f"guard.retry_prompt: no prompt {guard.retry_prompt!r} in ragtap/prompts ({type(error).__name__})") from None


def _check_postgres_url(url: str) -> None:
    """A `[store] url` that psycopg can take, checked now: a malformed one is one line at start (its password never
    shown), not a traceback when the writer first connects."""
    example = "postgresql://user@host:5432/database"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - parsing the port is the check
    except ValueError as error:
        raise ConfigError(f"store.url: not a URL ({error}): expected {example} (got {_redacted_url(url)!r})") from None
    if parts.scheme not in ("postgresql", "postgres"):
        raise ConfigError(f"store.url: expected a postgresql:// URL such as {example} (got scheme {parts.scheme!r})")
    if not (parts.hostname or parts.path.strip("/") or "host=" in parts.query):
        raise ConfigError(f"store.url: names no host and no database: expected {example} (got {_redacted_url(url)!r})")


MIN_POLL_SECONDS = 0.5  # the page's live updates: faster polling is a load on the store, not fresher news


def _check_triage(config: Config) -> None:
    settings = config.triage
    if not settings.path.startswith("/") or settings.prefix == "/" or any(c in settings.path for c in "{}?#"):
        raise ConfigError(f"triage.path: expected a path such as /triage (got {settings.path!r})")
    prefix = settings.prefix
    taken = list(PROXY_ROUTES) if settings.listen_port is None else []
    if config.prometheus.enabled and config.prometheus.listen_port is None and settings.listen_port is None:
        taken.append("/" + config.prometheus.path.strip("/"))
    for route in taken:
        if prefix == route or prefix.startswith(route + "/") or route.startswith(prefix + "/"):
            raise ConfigError(f"triage.path: {settings.path!r} would take the proxy's route {route} (its requests would "
                              "never reach it): choose another path, such as /triage")
    if 0 < settings.poll_seconds < MIN_POLL_SECONDS:
        raise ConfigError(f"triage.poll_seconds: expected 0 (no live updates) or at least {MIN_POLL_SECONDS:g} "
                          f"(got {settings.poll_seconds!r})")
    for host in settings.allowed_hosts:
        if not _is_host_name(host):
            raise ConfigError(f"triage.allowed_hosts: {host!r} is not a host name or address (no scheme, port or path: "
                              "e.g. triage.example.com or 10.0.0.5)")
    if settings.trace_url:
        url = urlsplit(settings.trace_url)
        if url.scheme not in ("http", "https") or not url.hostname or "{trace_id}" not in settings.trace_url:
            raise ConfigError("triage.trace_url: expected an http(s) URL template with {trace_id}, such as "
                              f"http://127.0.0.1:16686/trace/{{trace_id}} (got {settings.trace_url!r})")
        unknown = set(re.findall(r"{(\w*)}", settings.trace_url)) - set(TRACE_URL_FIELDS)
        if unknown:
            raise ConfigError(f"triage.trace_url: unknown placeholder(s) {', '.join(sorted(unknown))}: expected {{trace_id}} and {{span_id}}")
