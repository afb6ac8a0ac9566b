"""Builds ragtap's parts from a `Config`: the one place where settings become objects.

The server, every command, the benchmarks and the tests build the embedder, the scoring policy, the exporters
and the online judge here, so each is built one way.  Exporters are found by name in a registry (like the
embedders in `ragtap.embedding.factory`): a new exporter registers a factory instead of growing an if-chain.

    config = load_config("config.toml")
    embedder = build_embedder(config)            # behind the LRU cache
    policy = build_policy(config)                # thresholds + refusal wording
    built = build_exporters(config)              # built.exporters, built.prometheus
"""

from __future__ import annotations

import logging
import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from ragtap.config import SALT_FILE, Config, ConfigError, WorkerRole, data_dir
from ragtap.pipeline.batch import ScoringPolicy
from ragtap.pipeline.limits import ScoringLimits
from ragtap.privacy import NO_REDACTION, Redactor, install_salt
from ragtap.scoring.refusal import RefusalDetector
from ragtap.verifier.base import ClaimVerifier, VerifierError

log = logging.getLogger("ragtap.wiring")

if TYPE_CHECKING:
    from ragtap.embedding.base import Embedder
    from ragtap.exporters.base import Exporter
    from ragtap.exporters.prometheus import PrometheusExporter
    from ragtap.pipeline.online_judge import OnlineJudge
    from ragtap.store.threaded import ThreadedStore


def build_embedder(config: Config, *, all_cores: bool = False, threads: int | None = None) -> Embedder:
    """The configured embedder.  `all_cores`: offline work (commands, experiments) has no request path to protect,
    so onnxruntime may use every core; the proxy keeps `[scoring] embedder_threads` (one, by default).  `threads`:
    exactly this many (a job of `ragtap score --jobs` gets its share of the cores)."""
    from ragtap.embedding.factory import make_embedder

    scoring = config.scoring
    if scoring.embedder == "openai":
        return make_embedder(
            "openai",
            cache_size=scoring.cache_entries,
            base_url=scoring.openai_base_url or config.server.upstream,
            # A keyless local server still needs some key for the SDK; a real endpoint answers 401 to this one.
            api_key=os.environ.get(scoring.openai_api_key_env) or "no-key-set",
            model=scoring.openai_model,
        )
    if threads is None:
        threads = max(scoring.embedder_threads, os.cpu_count() or 1) if all_cores else scoring.embedder_threads
    return make_embedder(scoring.embedder, cache_size=scoring.cache_entries, intra_op_threads=threads)


def build_policy(config: Config) -> ScoringPolicy:
    """The scoring core's rules: thresholds, claim thresholds, the refusal wording (built-in phrases plus config
    regexes), the passage size and QRD's windows."""
    scoring = config.scoring
    limits = ScoringLimits(scoring.max_documents, scoring.max_document_chars, scoring.max_text_chars, scoring.max_passages)
    return ScoringPolicy(config.thresholds, RefusalDetector.build(scoring.refusal_patterns), config.claims, scoring.passage_words,
                         scoring.claim_level, limits, build_verifier(config), qrd_window_words=scoring.qrd_window_words)


def build_verifier(config: Config) -> ClaimVerifier | None:
    """`[claims.verifier] model`: the user's ONNX cross-encoder (ragtap/verifier/), or None.  A file that cannot be
    used is a ConfigError at start, in one line."""
    settings = config.claims.verifier
    if not settings.model:
        return None
    from ragtap.verifier.onnx_cross_encoder import OnnxCrossEncoder

    try:
        return OnnxCrossEncoder(settings.model, tokenizer=settings.tokenizer, supported_label=settings.supported_label,
                                contradicted_label=settings.contradicted_label, max_tokens=settings.max_tokens)
    except VerifierError as error:
        raise ConfigError(str(error)) from None


def writes_identities(config: Config) -> bool:
    """True when some writer of this config records user and session ids (store, JSONL log, OpenTelemetry)."""
    return config.store.enabled or bool(config.log.interactions_path) or config.otel.enabled


def build_redactor(config: Config) -> Redactor:
    """The one redaction every writer applies (`[privacy]`, ragtap/privacy.py).  Hashed ids need a salt: the
    configured `identity_salt`, else the per-install salt file in the data directory, created the first time a
    writer needs it (shared by every ragtap process of this user on this machine)."""
    settings = config.privacy
    salt: bytes | None = None
    if settings.identity == "hashed":
        if settings.identity_salt:
            salt = settings.identity_salt.encode()
        elif not writes_identities(config):
            salt = secrets.token_hex(32).encode()  # nothing is written: no file needed
        else:
            where = data_dir() / SALT_FILE
            try:
                salt = install_salt(where)
            except OSError as error:  # a read-only home: ragtap still runs; the hashes hold for this run only
                log.warning("cannot keep the identity salt in %s (%s): user and session ids are hashed with a salt of "
                            "this run only (set [privacy] identity_salt or RAGTAP_IDENTITY_SALT)", where,
                            getattr(error, "strerror", None) or error)
                salt = secrets.token_hex(32).encode()
    return Redactor.from_settings(settings, salt)


@dataclass
class BuiltExporters:
    exporters: list[Exporter] = field(default_factory=list)
    prometheus: PrometheusExporter | None = None  # also serves /metrics, and other parts register gauges on it
    store: ThreadedStore | None = None  # the capture store (for the triage page), when [store] turns it on
    redactor: Redactor = NO_REDACTION  # what every writer applies to what it writes ([privacy])
    worker: WorkerRole = field(default_factory=WorkerRole)  # which process of `ragtap serve --workers N` builds them


# A factory returns the exporters its part of the config turns on (none when it is off).
ExporterFactory = Callable[[Config, BuiltExporters], "list[Exporter]"]


def _prometheus(config: Config, built: BuiltExporters) -> list[Exporter]:
    if not config.prometheus.enabled:
        return []
    from ragtap.exporters.prometheus import PrometheusExporter

    built.prometheus = PrometheusExporter(config.prometheus)
    return [built.prometheus]


def _otel(config: Config, built: BuiltExporters) -> list[Exporter]:
    if not config.otel.enabled:
        return []
    from ragtap.exporters.otel import OtelExporter, sdk_disabled

    if sdk_disabled():  # the standard switch wins over the config: no spans, metrics or log events
        log.warning("OTEL_SDK_DISABLED=true: OpenTelemetry export is off although [otel] enabled = true")
        return []

    try:
        otel = OtelExporter(config.otel, redactor=built.redactor)
    except ValueError as error:  # e.g. OTEL_EXPORTER_OTLP_PROTOCOL=http/json: one line, not a traceback
        raise ConfigError(f"otel: {error}") from None
    if built.prometheus is not None:
        built.prometheus.watch_errors("otel", lambda: float(otel.stats.failures))
    if not config.judge.enabled:
        return [otel]
    from ragtap.exporters.judge import OtelJudgeExporter

    return [otel, OtelJudgeExporter(otel.tracer, otel.event_logger)]


def _jsonl(config: Config, built: BuiltExporters) -> list[Exporter]:
    if not config.log.interactions_path:
        return []
    from ragtap.exporters.jsonl import JsonlExporter

    return [JsonlExporter(config.log.interactions_path, redactor=built.redactor)]


def build_capture(config: Config, built: BuiltExporters) -> list[Exporter]:
    """The capture store and its exporter, when `[store]` names a database and the policy is not `none`.

    The database is opened lazily by the store's own threads: one that is down at start-up costs dropped
    (counted) rows, never a failed start."""
    if not config.store.enabled:
        return []
    from ragtap.exporters.store import StoreExporter, watch
    from ragtap.store.factory import open_store

    # Every worker writes to the one store; only worker 0 prunes it, and repairs a corrupt SQLite file (two workers
    # each moving "the corrupt file" aside could move the other's fresh one).
    store = open_store(config.store, built.redactor, maintain=built.worker.leads)
    built.store = store
    if built.prometheus is not None:
        watch(store, built.prometheus.registry, config.store.backend)
    return [StoreExporter(store, config.store, config.thresholds, close_timeout=max(1.0, config.server.shutdown_grace_s / 2))]


# Name -> factory, in build order (Prometheus first: later exporters may register their error counts on it).
EXPORTERS: dict[str, ExporterFactory] = {"prometheus": _prometheus, "otel": _otel, "jsonl": _jsonl, "store": build_capture}


def register_exporter(name: str, factory: ExporterFactory) -> None:
    """Add an exporter that `build_exporters` builds after the built-in ones (its factory decides from the config
    whether it is on)."""
    EXPORTERS[name] = factory


def build_exporters(config: Config, worker: WorkerRole | None = None) -> BuiltExporters:
    built = BuiltExporters(redactor=build_redactor(config), worker=worker or WorkerRole())
    for factory in EXPORTERS.values():
        built.exporters.extend(factory(config, built))
    return built


def build_online_judge(config: Config, embedder: Embedder, exporter: Exporter, built: BuiltExporters) -> OnlineJudge | None:
    """The Ragas judge tier (an exporter that judges flagged interactions in the background), when configured."""
    if not config.judge.enabled:
        return None
    from ragtap.pipeline.online_judge import build_online_judge as build

    registry = built.prometheus.registry if built.prometheus is not None else None
    settings = config.judge
    if built.worker.count > 1:  # the call rate and the daily budget are the deployment's: each worker gets its share
        count = built.worker.count
        settings = replace(settings, calls_per_second=settings.calls_per_second / count,
                                       daily_token_budget=-(-settings.daily_token_budget // count))
    return build(settings, embedder, exporter, upstream=config.server.upstream, registry=registry)
