"""Prometheus metrics for ragtap: traffic, latency, tokens, the scoring queue, scores and verdicts.

Usage (the proxy serves the metrics on its own port)::

    from ragtap.exporters.prometheus import PrometheusExporter, add_metrics_route
    prom = PrometheusExporter(PrometheusSettings())
    exporters.add(prom)                                   # an ExporterSet
    prom.watch_errors("hooks", lambda: exporters.errors)  # hook exceptions caught by the ExporterSet
    prom.watch_errors("otel", lambda: otel.stats.failures)  # failed OTLP exports (see otel.ExportStats)
    add_metrics_route(app, prom)                          # GET settings.path, bearer token when configured
    # with settings.listen_port set, ragtap.proxy.server serves the same route on its own listener

Every exporter owns its `CollectorRegistry` (never the process-global one), so several apps and tests coexist.

Several processes, one /metrics (`ragtap serve --workers N`, ragtap/supervisor/): the supervisor points
prometheus_client's multiprocess mode at a directory of its own (`PROMETHEUS_MULTIPROC_DIR`), so every counter and
histogram of every worker lives in a memory-mapped file there, and whichever worker answers a scrape renders the
sum over all of them, dead workers' counts included (a counter never goes back when a worker is replaced).  A gauge
says how it combines (`multiprocess_mode`: the queue depths add up over the live workers).  Collectors that
compute their values at scrape time (the exporter-error callbacks, the capture store's counters) see only their own
process: `_Mirror` copies their values into multiprocess metrics every `MIRROR_EVERY_S` and before each scrape.

Label cardinality is bounded by construction: `route` takes one of `ROUTES` or "other"; `model` takes a value from
the configured list or one of the first `max_models` models seen, everything else is "other" (and "unknown" when
the request named none); `verdict`, `metric`, `kind`, `outcome` and `injected` come from fixed sets; the free
`reason` strings of drops and unscored interactions are reduced to short identifiers and capped too.  No user, key or
free-text value is ever a label.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, values
from prometheus_client.core import CounterMetricFamily
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.openmetrics import exposition as openmetrics

from ragtap.auth import BearerToken
from ragtap.exchange import ExchangeRecord
from ragtap.exporters.base import Exporter
from ragtap.exporters.semconv import SCORE_BUCKETS
from ragtap.exporters.settings import PrometheusSettings
from ragtap.guard.decision import OUTCOMES as GUARD_OUTCOMES
from ragtap.guard.settings import ACTIONS as GUARD_ACTIONS
from ragtap.recognise import FIELD_PROBLEMS, REASONS
from ragtap.types import METRICS, Assessment, Interaction, Verdict

if TYPE_CHECKING:  # aiohttp is only needed by the HTTP helpers
    from aiohttp import web

ROUTES: tuple[str, ...] = (
    "/v1/chat/completions",
    "/v1/completions",
    "/v1/embeddings",
    "/v1/models",
    "/v1/responses",
)
OTHER = "other"
UNKNOWN = "unknown"
OUTCOMES: tuple[str, ...] = ("complete", "incomplete", "upstream_error")
VERDICTS: tuple[str, ...] = tuple(v.value for v in Verdict)
MAX_REASONS = 16  # distinct values of a `reason` label before the rest become "other"

# Cosine similarity lies in [-1, 1]; real embeddings of related texts sit in [0, 1].  0.05 steps (the thesis
# thresholds 0.70-0.85 fall on bucket bounds); anything below 0 lands in the le="0" bucket.
UPSTREAM_BUCKETS: tuple[float, ...] = (0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120, 300)
TTFT_BUCKETS: tuple[float, ...] = (0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60)
ADDED_BUCKETS: tuple[float, ...] = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5)
SCORING_BUCKETS: tuple[float, ...] = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)

_REASON_RE = re.compile(r"[^a-z0-9_]+")
MIRROR_EVERY_S = 1.0


def multiprocess_mode() -> bool:
    """True in a worker of `ragtap serve --workers N`: metric values live in the supervisor's shared directory."""
    return bool(getattr(values.ValueClass, "_multiprocess", False))


class _Registry(CollectorRegistry):
    """A registry that remembers which of its collectors compute their values at scrape time (everything that is
    not one of prometheus_client's metric objects): only those need `_Mirror` in multiprocess mode."""

    def __init__(self) -> None:
        super().__init__(auto_describe=True)
        self.computed: list[Any] = []

    def register(self, collector: Any) -> None:
        super().register(collector)
        if not isinstance(collector, MetricWrapperBase):
            self.computed.append(collector)


class _Mirror:
    """Copies the values of scrape-time collectors into multiprocess metrics of the same names: a counter grows by
    what its source grew since the last copy (so a restarted worker's fresh count adds to its predecessor's), a
    gauge is set and summed over the live workers.  Runs on its own thread every `MIRROR_EVERY_S`, and before
    each scrape; stopped (after a last copy) at shutdown."""

    def __init__(self, collectors: list[Any]) -> None:
        self._collectors = collectors
        self._metrics: dict[str, Any] = {}
        self._copied: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ragtap-metrics-mirror", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(MIRROR_EVERY_S):
            self.copy()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(MIRROR_EVERY_S + 1)
        self.copy()

    def copy(self) -> None:
        with self._lock:
            for collector in list(self._collectors):
                try:
                    families = list(collector.collect())
                except Exception:  # a broken source must not break the others (nor the scrape)
                    continue
                for family in families:
                    if family.type in ("counter", "gauge"):
                        self._copy_family(family)

    def _copy_family(self, family: Any) -> None:
        for sample in family.samples:
            if family.type == "counter" and not sample.name.endswith("_total"):
                continue  # `_created`: a per-process timestamp, meaningless summed
            names = tuple(sorted(sample.labels))
            metric = self._metrics.get(family.name)
            if metric is None:
                if family.type == "counter":
                    metric = Counter(family.name, family.documentation, names, registry=None)
                else:
                    metric = Gauge(family.name, family.documentation, names, registry=None, multiprocess_mode="livesum")
                self._metrics[family.name] = metric
            child = metric.labels(**sample.labels) if names else metric
            if family.type == "gauge":
                child.set(sample.value)
                continue
            key = (family.name, tuple(sorted(sample.labels.items())))
            grown = sample.value - self._copied.get(key, 0.0)
            if grown > 0:
                child.inc(grown)
                self._copied[key] = sample.value


def normalise_route(path: str | None) -> str:
    """Map a request path to one of `ROUTES` or "other" (query strings, trailing slashes and ids dropped)."""
    if not path:
        return OTHER
    path = path.split("?", 1)[0].rstrip("/").lower()
    if not path.startswith("/v1/") and ("/v1" + path) in ROUTES:  # clients whose base URL lacks /v1
        path = "/v1" + path
    if path.startswith("/v1/models/"):
        return "/v1/models"
    return path if path in ROUTES else OTHER


def _status_label(status: int | None) -> str:
    if isinstance(status, int) and 100 <= status <= 599:
        return str(status)
    return "none"


class _BoundedLabel:
    """Hands out label values from an allow-list, or the first `limit` seen; the rest become `OTHER`."""

    def __init__(self, allowed: Iterable[str] = (), limit: int = 20, reserved: Iterable[str] = ()) -> None:
        self._allowed = frozenset(allowed)
        self._limit = max(0, int(limit))
        self._reserved = frozenset(reserved)
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, value: str | None, *, missing: str = UNKNOWN, admit: bool = True) -> str:
        """The label for `value`; `admit=False` reuses a label already handed out but never takes a new slot."""
        if value is None or value == "":
            return missing
        value = str(value)
        if value in self._reserved:
            return value
        if self._allowed:
            return value if value in self._allowed else OTHER
        if value in self._seen:
            return value
        if not admit:
            return OTHER
        with self._lock:
            if value in self._seen:
                return value
            if len(self._seen) < self._limit and len(value) <= 128:
                self._seen.add(value)
                return value
        return OTHER


class PrometheusExporter(Exporter):
    """Exports ragtap's hooks as Prometheus metrics in its own registry.  See the module docstring."""

    def __init__(self, settings: PrometheusSettings | None = None, registry: CollectorRegistry | None = None) -> None:
        self.settings = settings or PrometheusSettings()
        self.registry = registry if registry is not None else _Registry()
        self._model = _BoundedLabel(self.settings.models, self.settings.max_models, reserved=(OTHER, UNKNOWN))
        self._reason = _BoundedLabel((), MAX_REASONS, reserved=(OTHER, UNKNOWN))
        self._error_sources: dict[str, Callable[[], float]] = {}
        self._children: dict[tuple[int, tuple[str, ...]], Any] = {}  # label children the hooks use (see _child)
        r = self.registry

        # --- traffic -------------------------------------------------------------------------------------------
        self.requests = Counter(
            "ragtap_requests_total", "Requests proxied, by normalised route, model and HTTP status returned to the app.",
            ["route", "model", "status"], registry=r)
        self.chat_requests = Counter(
            "ragtap_chat_requests_total",
            "Chat requests by recognition result (kind=rag|not_rag) and whether the supporting-content instruction "
            "was injected.", ["kind", "injected"], registry=r)
        self.recognition = Counter(
            "ragtap_recognition_total",
            "Chat requests by recognition reason: the rule that matched, the client setting that forbids injection, "
            "or why the request is not RAG (no_context, no_question, ...).", ["reason"], registry=r)
        self.passthrough = Counter(
            "ragtap_passthrough_requests_total", "Non-chat /v1/* requests forwarded untouched, by route.",
            ["route"], registry=r)
        self.exchanges = Counter(
            "ragtap_exchanges_total",
            "Chat exchanges by outcome: complete, incomplete (the client went away), upstream_error.",
            ["outcome", "model"], registry=r)

        # --- latency -------------------------------------------------------------------------------------------
        self.upstream_seconds = Histogram(
            "ragtap_upstream_duration_seconds", "Time from sending the request upstream to the end of its response.",
            ["route", "model"], buckets=UPSTREAM_BUCKETS, registry=r)
        self.added_seconds = Histogram(
            "ragtap_added_duration_seconds",
            "ragtap's own share of the wall time of an exchange (total minus the upstream's time).",
            ["route", "model"], buckets=ADDED_BUCKETS, registry=r)
        self.ttft_seconds = Histogram(
            "ragtap_time_to_first_token_seconds",
            "Streams: time from the request's arrival to the first answer text forwarded to the app.",
            ["model"], buckets=TTFT_BUCKETS, registry=r)

        # --- tokens --------------------------------------------------------------------------------------------
        self.tokens = Counter(
            "ragtap_tokens_total",
            "Tokens reported by the upstream, by kind: input, output (includes supporting) and supporting "
            "(the part of the output spent on the supporting content).", ["model", "kind"], registry=r)
        self.overhead_tokens = Counter(
            "ragtap_overhead_tokens_total",
            "Tokens ragtap itself added to exchanges: input = the injected instruction, output = the supporting "
            "content.", ["model", "kind"], registry=r)
        self.overhead_cost = Counter(
            "ragtap_overhead_cost_usd_total",
            "What ragtap's own tokens cost in USD, priced with the [cost] table (models without a price add 0: "
            "see ragtap_overhead_unpriced_total).", ["model"], registry=r)
        self.overhead_unpriced = Counter(
            "ragtap_overhead_unpriced_total",
            "Exchanges whose overhead tokens could not be priced: the model has no entry in the [cost] table (by "
            "exact id or as a dated snapshot of one).", ["model"], registry=r)

        # --- the guard -----------------------------------------------------------------------------------------
        self.guard = Counter(
            "ragtap_guard_total",
            "Answers the guard handled, by action (annotate, strip, block, retry) and outcome: passed, annotated, "
            "stripped, blocked, retried, unlocated (tripped, no sentence to remove), or released unchanged because of "
            "timeout, scorer_error, overload, unscorable; incomplete (the app went away).", ["action", "outcome"], registry=r)

        # --- scoring pipeline ----------------------------------------------------------------------------------
        self.queue_depth_gauge = Gauge(
            "ragtap_scoring_queue_depth", "Interactions waiting in the scoring queue.", registry=r, multiprocess_mode="livesum")
        self.scoring_seconds = Histogram(
            "ragtap_scoring_duration_seconds", "Time to embed and score one interaction.",
            ["model"], buckets=SCORING_BUCKETS, registry=r)
        self.dropped_counter = Counter(
            "ragtap_scoring_dropped_total",
            "Interactions not scored because the queue was full or ragtap was shutting down, by reason.",
            ["reason"], registry=r)
        self.failed_counter = Counter(
            "ragtap_scoring_failed_total", "Interactions whose embedding or scoring raised.", ["model"], registry=r)

        # --- findings ------------------------------------------------------------------------------------------
        self.score = Histogram(
            "ragtap_score",
            "Cosine relevance scores by metric: sdq, sdrd, sda (primary), qrd, qa (auxiliary), ard.",
            ["metric", "model"], buckets=SCORE_BUCKETS, registry=r)
        self.verdicts = Counter(
            "ragtap_verdicts_total",
            "Scored interactions by verdict: grounded, parametric, refusal, unsupported_answer, unscored.",
            ["verdict", "model"], registry=r)
        self.poor_retrieval = Counter(
            "ragtap_poor_retrieval_total", "Interactions whose retrieved documents were judged off-topic.",
            ["model"], registry=r)
        self.retrieval_judged = Counter(
            "ragtap_retrieval_judged_total",
            "Interactions whose retrieval could be judged (had documents): the denominator of the poor-retrieval rate.",
            ["model"], registry=r)
        self.claims_judged = Counter(
            "ragtap_claims_judged_total",
            "Claims (sentences, list items) of answers judged against the documents: the denominator of the "
            "unsupported-claim rate.", ["model"], registry=r)
        self.unsupported_claims = Counter(
            "ragtap_unsupported_claims_total",
            "Claims of answers that neither the documents nor the supporting content support.", ["model"], registry=r)
        self.contradicted_claims = Counter(
            "ragtap_contradicted_claims_total",
            "Claims of answers that the evidence they rest on contradicts (another number, name, negation, order): "
            "a subset of ragtap_unsupported_claims_total.", ["model"], registry=r)
        self.unscored = Counter(
            "ragtap_unscored_total", "Interactions that could not be scored, by reason.", ["reason", "model"],
            registry=r)

        # --- ragtap's own health -------------------------------------------------------------------------------
        self.malformed_ragtap_field = Counter(
            "ragtap_malformed_ragtap_field_total",
            "Chat requests whose `ragtap` field was malformed (stripped, then the implicit rules decided), by what was "
            "wrong: not_an_object, enabled_not_bool, question_not_string, documents_not_list, document_not_text, "
            "document_bad_id.", ["reason"], registry=r)
        self.client_rejections = Counter(
            "ragtap_client_rejections_total",
            "Client connections ragtap closed or requests it refused, by reason: idle_timeout, header_timeout, "
            "body_timeout, connection_limit.", ["reason"], registry=r)
        r.register(_ErrorSourcesCollector(self._error_sources))
        self._mirror = _Mirror(getattr(r, "computed", [])) if multiprocess_mode() else None

    # ------------------------------------------------------------------------------------------------- helpers
    def model_label(self, model: str | None) -> str:
        return self._model(model)

    def _reason_label(self, reason: str | None) -> str:
        if not reason:
            return UNKNOWN
        cleaned = _REASON_RE.sub("_", str(reason).lower()).strip("_")[:40]
        return self._reason(cleaned or UNKNOWN)

    def watch_errors(self, source: str, read: Callable[[], float]) -> None:
        """Expose a monotonically growing error count read at scrape time as `ragtap_exporter_errors_total{exporter}`.

        E.g. `watch_errors("otel", lambda: otel.stats.failures)` or `watch_errors("hooks", lambda: exporters.errors)`.
        """
        self._error_sources[_REASON_RE.sub("_", source.lower())[:40] or UNKNOWN] = read

    def render(self, accept: str | None = None) -> tuple[bytes, str]:
        """The exposition body and its content type (OpenMetrics when the scraper's Accept header asks for it).
        In a worker of several: the sum over every worker, read from the shared directory."""
        registry: CollectorRegistry = self.registry
        if self._mirror is not None:
            from prometheus_client.multiprocess import MultiProcessCollector

            self._mirror.copy()  # this worker's scrape-time values, fresh
            registry = CollectorRegistry()
            MultiProcessCollector(registry)
        if accept and "application/openmetrics-text" in accept:
            return openmetrics.generate_latest(registry), openmetrics.CONTENT_TYPE_LATEST
        return generate_latest(registry), CONTENT_TYPE_LATEST

    def shutdown(self) -> None:
        if self._mirror is not None:
            self._mirror.stop()  # the last counts of this worker, before it exits

    # --------------------------------------------------------------------------------------------------- hooks
    def _child(self, metric: Any, *labels: str) -> Any:
        """`metric.labels(*labels)`, remembered: prometheus_client validates and locks on every `labels()` call
        (~2 us), and the hooks make about ten such calls per exchange.  Bounded: every label here has a closed set
        of values (model names are capped by `max_models`)."""
        key = (id(metric), labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*labels)
        return child

    def _exchange_model(self, exchange: ExchangeRecord) -> str:
        """A model name takes one of the `max_models` label slots only once the upstream has answered it: junk
        names that the upstream rejects (404, 400) or never answers are counted as "other" and cannot use up the
        budget before real traffic arrives."""
        answered = exchange.status is not None and exchange.status < 400
        return self._model(exchange.request_model or exchange.response_model, admit=answered)

    def exchange_finished(self, exchange: ExchangeRecord) -> None:
        route = normalise_route(exchange.route)
        model = self._exchange_model(exchange)
        self._child(self.requests, route, model, _status_label(exchange.status)).inc()
        kind = "rag" if exchange.rag_source else "not_rag"
        self._child(self.chat_requests, kind, "true" if exchange.injected else "false").inc()
        if exchange.recognition is not None:
            self._child(self.recognition, exchange.recognition if exchange.recognition in REASONS else OTHER).inc()
        if exchange.ragtap_field_problem is not None:
            problem = exchange.ragtap_field_problem
            self._child(self.malformed_ragtap_field, problem if problem in FIELD_PROBLEMS else OTHER).inc()
        outcome = exchange.outcome if exchange.outcome in OUTCOMES else OTHER
        self._child(self.exchanges, outcome, model).inc()
        upstream = exchange.upstream_seconds
        if upstream is not None:
            self._child(self.upstream_seconds, route, model).observe(upstream)
        added = exchange.added_seconds
        if added is not None:
            self._child(self.added_seconds, route, model).observe(added)
        if exchange.stream and exchange.first_token_at is not None:
            self._child(self.ttft_seconds, model).observe(max(0.0, exchange.first_token_at - exchange.started_at))
        for kind_, value in (("input", exchange.input_tokens), ("output", exchange.output_tokens)):
            if value:
                self._child(self.tokens, model, kind_).inc(value)
        if exchange.supporting_tokens:  # settled by the proxy before this hook runs
            self._child(self.tokens, model, "supporting").inc(exchange.supporting_tokens)
        overhead = exchange.overhead  # settled by the proxy before this hook runs (ragtap.cost)
        if overhead is not None:
            for kind_, value in (("input", overhead.input_tokens), ("output", overhead.output_tokens)):
                if value:
                    self._child(self.overhead_tokens, model, kind_).inc(value)
            if overhead.cost_usd:
                self._child(self.overhead_cost, model).inc(overhead.cost_usd)
            elif overhead.cost_usd is None and (overhead.input_tokens or overhead.output_tokens):
                self._child(self.overhead_unpriced, model).inc()
        guard = exchange.guard
        if guard is not None:
            self._child(self.guard, guard.action if guard.action in GUARD_ACTIONS else OTHER,
                        guard.outcome if guard.outcome in GUARD_OUTCOMES else OTHER).inc()

    def passthrough_finished(self, exchange: ExchangeRecord) -> None:
        route = normalise_route(exchange.route)
        model = self._exchange_model(exchange)
        self._child(self.requests, route, model, _status_label(exchange.status)).inc()
        self._child(self.passthrough, route).inc()
        upstream = exchange.upstream_seconds
        if upstream is not None:
            self._child(self.upstream_seconds, route, model).observe(upstream)
        added = exchange.added_seconds
        if added is not None:
            self._child(self.added_seconds, route, model).observe(added)
        if exchange.input_tokens:  # embeddings report prompt tokens
            self._child(self.tokens, model, "input").inc(exchange.input_tokens)

    def interaction_scored(self, interaction: Interaction, assessment: Assessment, seconds: float) -> None:
        model = self._model(_interaction_model(interaction))
        if seconds is not None and seconds >= 0:
            self._child(self.scoring_seconds, model).observe(seconds)
        verdict = assessment.verdict.value if isinstance(assessment.verdict, Verdict) else str(assessment.verdict)
        self._child(self.verdicts, verdict if verdict in VERDICTS else OTHER, model).inc()
        if verdict == Verdict.UNSCORED.value:
            self._child(self.unscored, self._reason_label(interaction.unscored_reason), model).inc()
        for metric in METRICS:
            value = getattr(assessment.scores, metric, None)
            if value is not None:
                self._child(self.score, metric, model).observe(float(value))
        judged = sum(1 for c in assessment.claims if c.of == "answer" and c.supported is not None)
        if judged:
            self._child(self.claims_judged, model).inc(judged)
            self._child(self.unsupported_claims, model).inc(len(assessment.unsupported_claims))
            self._child(self.contradicted_claims, model).inc(len(assessment.contradicted_claims))
        if assessment.poor_retrieval is not None:
            self._child(self.retrieval_judged, model).inc()
            if assessment.poor_retrieval:
                self._child(self.poor_retrieval, model).inc()

    def scoring_dropped(self, reason: str) -> None:
        self._child(self.dropped_counter, self._reason_label(reason)).inc()

    def client_rejected(self, reason: str) -> None:
        self._child(self.client_rejections, self._reason_label(reason)).inc()

    def scoring_failed(self, interaction: Interaction, error: BaseException) -> None:
        self._child(self.failed_counter, self._model(_interaction_model(interaction))).inc()

    def queue_depth(self, depth: int) -> None:
        self.queue_depth_gauge.set(depth)


def _interaction_model(interaction: Interaction) -> str | None:
    if interaction.model:
        return interaction.model
    exchange = interaction.exchange
    if exchange is not None:
        return exchange.request_model or exchange.response_model
    return None


class _ErrorSourcesCollector:
    """`ragtap_exporter_errors_total{exporter}`: counts read at scrape time from the registered callbacks."""

    def __init__(self, sources: dict[str, Callable[[], float]]) -> None:
        self._sources = sources

    def describe(self) -> list[Any]:
        return [CounterMetricFamily("ragtap_exporter_errors", "Errors of ragtap's exporters, by exporter.",
                                    labels=["exporter"])]

    def collect(self) -> Iterable[Any]:
        family = CounterMetricFamily("ragtap_exporter_errors", "Errors of ragtap's exporters, by exporter "
                                     "(hooks: exceptions caught by the ExporterSet; otel: failed OTLP exports).",
                                     labels=["exporter"])
        for name, read in list(self._sources.items()):
            try:
                value = float(read())
            except Exception:  # a broken source must not break the scrape
                continue
            family.add_metric([name], value)
        yield family


# ------------------------------------------------------------------------------------------------ HTTP helpers
_DEFAULT = object()


def metrics_handler(exporter: PrometheusExporter, token: Any = _DEFAULT) -> Callable[["web.Request"], Any]:
    """An aiohttp handler serving `exporter.render()`.

    `token` defaults to `exporter.settings.token`; when set, the request must carry `Authorization: Bearer <token>`
    (compared in constant time), else 401 with a `WWW-Authenticate: Bearer` challenge.
    """
    from aiohttp import web

    bearer = BearerToken(exporter.settings.token if token is _DEFAULT else token)

    async def handle_metrics(request: web.Request) -> web.Response:
        if not bearer.allows(request.headers.get("Authorization")):
            return web.Response(status=401, text="unauthorized\n", headers={"WWW-Authenticate": 'Bearer realm="ragtap metrics"'})
        body, content_type = exporter.render(request.headers.get("Accept"))
        # the content type carries version/charset parameters, so it goes in as a raw header
        return web.Response(body=body, headers={"Content-Type": content_type, "Cache-Control": "no-store"})

    return handle_metrics


def add_metrics_route(app: "web.Application", exporter: PrometheusExporter, token: Any = _DEFAULT) -> None:
    """Mount GET `exporter.settings.path` on an aiohttp app (do it before the proxy's catch-all route)."""
    app.router.add_get(exporter.settings.path, metrics_handler(exporter, token))
