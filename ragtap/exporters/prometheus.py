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
from bisect import bisect_left
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
MAX_REASON_TEXTS = 1024  # reason texts whose label is remembered
MAX_SERIES_KEYS = 4096  # kinds of exchange whose label children are remembered (the cache starts over beyond)

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
        self._adders: dict[tuple[int, tuple[str, ...]], Callable[[float], None]] = {}  # (see _inc, _observe)
        self._series: dict[tuple[Any, ...], _ExchangeSeries] = {}  # per kind of exchange (see _exchange_series)
        self._reason_labels: dict[str, str] = {}  # reason text -> its label (see _reason_label)
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
        label = self._reason_labels.get(reason)  # a reason's label never changes once given (`_BoundedLabel`)
        if label is None:
            cleaned = _REASON_RE.sub("_", str(reason).lower()).strip("_")[:40]
            label = self._reason(cleaned or UNKNOWN)
            if len(self._reason_labels) < MAX_REASON_TEXTS:  # the texts are free (an unscored reason, a drop's)
                self._reason_labels[reason] = label
        return label

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

    def _exchange_series(self, exchange: ExchangeRecord, model: str) -> _ExchangeSeries:
        """The children an exchange of this kind (route, model label, status, recognition, outcome) increments,
        looked up once per kind instead of once per exchange: the labels of most exchanges repeat."""
        key = (exchange.route, model, exchange.status, bool(exchange.rag_source), exchange.injected, exchange.recognition,
               exchange.ragtap_field_problem, exchange.outcome)
        series = self._series.get(key)
        if series is not None:
            return series
        route = normalise_route(exchange.route)
        counts = [self._child(self.requests, route, model, _status_label(exchange.status)),
                  self._child(self.chat_requests, "rag" if exchange.rag_source else "not_rag", "true" if exchange.injected else "false")]
        if exchange.recognition is not None:
            counts.append(self._child(self.recognition, exchange.recognition if exchange.recognition in REASONS else OTHER))
        if exchange.ragtap_field_problem is not None:
            problem = exchange.ragtap_field_problem
            counts.append(self._child(self.malformed_ragtap_field, problem if problem in FIELD_PROBLEMS else OTHER))
        counts.append(self._child(self.exchanges, exchange.outcome if exchange.outcome in OUTCOMES else OTHER, model))
        return self._remember(key, _ExchangeSeries(tuple(_adder(child) for child in counts), route, model))

    def _passthrough_series(self, exchange: ExchangeRecord, model: str) -> _ExchangeSeries:
        key = (exchange.route, model, exchange.status)
        series = self._series.get(key)
        if series is not None:
            return series
        route = normalise_route(exchange.route)
        counts = (self._child(self.requests, route, model, _status_label(exchange.status)), self._child(self.passthrough, route))
        return self._remember(key, _ExchangeSeries(tuple(_adder(child) for child in counts), route, model))

    def _remember(self, key: tuple[Any, ...], series: _ExchangeSeries) -> _ExchangeSeries:
        if len(self._series) >= MAX_SERIES_KEYS:  # routes of passthrough requests are the app's paths: unbounded
            self._series.clear()
        self._series[key] = series
        return series

    def exchange_finished(self, exchange: ExchangeRecord) -> None:
        model = self._exchange_model(exchange)
        series = self._exchange_series(exchange, model)
        for add in series.counts:
            add(1)
        self._observe_times(exchange, series)
        if exchange.stream and exchange.first_token_at is not None:
            self._observe(self.ttft_seconds, model)(max(0.0, exchange.first_token_at - exchange.started_at))
        if exchange.input_tokens:
            self._inc(self.tokens, model, "input")(exchange.input_tokens)
        if exchange.output_tokens:
            self._inc(self.tokens, model, "output")(exchange.output_tokens)
        if exchange.supporting_tokens:  # settled by the proxy before this hook runs
            self._inc(self.tokens, model, "supporting")(exchange.supporting_tokens)
        overhead = exchange.overhead  # settled by the proxy before this hook runs (ragtap.cost)
        if overhead is not None:
            if overhead.input_tokens:
                self._inc(self.overhead_tokens, model, "input")(overhead.input_tokens)
            if overhead.output_tokens:
                self._inc(self.overhead_tokens, model, "output")(overhead.output_tokens)
            if overhead.cost_usd:
                self._inc(self.overhead_cost, model)(overhead.cost_usd)
            elif overhead.cost_usd is None and (overhead.input_tokens or overhead.output_tokens):
                self._inc(self.overhead_unpriced, model)(1)
        guard = exchange.guard
        if guard is not None:
            self._inc(self.guard, guard.action if guard.action in GUARD_ACTIONS else OTHER,
                      guard.outcome if guard.outcome in GUARD_OUTCOMES else OTHER)(1)

    def passthrough_finished(self, exchange: ExchangeRecord) -> None:
        model = self._exchange_model(exchange)
        series = self._passthrough_series(exchange, model)
        for add in series.counts:
            add(1)
        self._observe_times(exchange, series)
        if exchange.input_tokens:  # embeddings report prompt tokens
            self._inc(self.tokens, series.model, "input")(exchange.input_tokens)

    def _observe_times(self, exchange: ExchangeRecord, series: _ExchangeSeries) -> None:
        """The upstream's time and ragtap's own (`ExchangeRecord.upstream_seconds` / `added_seconds`, inlined)."""
        finished, sent, done = exchange.finished_at, exchange.upstream_sent_at, exchange.upstream_done_at
        upstream = done - sent if sent is not None and done is not None else None
        if upstream is not None:
            self._observe(self.upstream_seconds, series.route, series.model)(upstream)
            if finished is not None:
                self._observe(self.added_seconds, series.route, series.model)(max(0.0, finished - exchange.started_at - upstream))

    def _inc(self, metric: Any, *labels: str) -> Callable[[float], None]:
        """The `_adder` of `metric.labels(*labels)`, remembered (bounded as `_child`)."""
        key = (id(metric), labels)
        add = self._adders.get(key)
        if add is None:
            add = self._adders[key] = _adder(self._child(metric, *labels))
        return add

    def _observe(self, metric: Any, *labels: str) -> Callable[[float], None]:
        """The `_observer` of `metric.labels(*labels)`, remembered (bounded as `_child`)."""
        key = (id(metric), labels)
        observe = self._adders.get(key)
        if observe is None:
            observe = self._adders[key] = _observer(self._child(metric, *labels))
        return observe

    def interaction_scored(self, interaction: Interaction, assessment: Assessment, seconds: float) -> None:
        model = self._model(_interaction_model(interaction))
        if seconds is not None and seconds >= 0:
            self._observe(self.scoring_seconds, model)(seconds)
        verdict = assessment.verdict.value if isinstance(assessment.verdict, Verdict) else str(assessment.verdict)
        self._inc(self.verdicts, verdict if verdict in VERDICTS else OTHER, model)(1)
        if verdict == Verdict.UNSCORED.value:
            self._inc(self.unscored, self._reason_label(interaction.unscored_reason), model)(1)
        scores = assessment.scores
        for metric in METRICS:
            value = getattr(scores, metric, None)
            if value is not None:
                self._observe(self.score, metric, model)(float(value))
        judged = sum(1 for c in assessment.claims if c.of == "answer" and c.supported is not None)
        if judged:
            self._inc(self.claims_judged, model)(judged)
            self._inc(self.unsupported_claims, model)(len(assessment.unsupported_claims))
            self._inc(self.contradicted_claims, model)(len(assessment.contradicted_claims))
        if assessment.poor_retrieval is not None:
            self._inc(self.retrieval_judged, model)(1)
            if assessment.poor_retrieval:
                self._inc(self.poor_retrieval, model)(1)

    def scoring_dropped(self, reason: str) -> None:
        self._inc(self.dropped_counter, self._reason_label(reason))(1)

    def client_rejected(self, reason: str) -> None:
        self._inc(self.client_rejections, self._reason_label(reason))(1)

    def scoring_failed(self, interaction: Interaction, error: BaseException) -> None:
        self._inc(self.failed_counter, self._model(_interaction_model(interaction)))(1)

    def queue_depth(self, depth: int) -> None:
        self.queue_depth_gauge.set(depth)


def _adder(child: Any) -> Callable[[float], None]:
    """`child.inc` without prometheus_client's per-call checks (observability, sign, exemplar): the add of its value
    (a lock and a float, or the multiprocess file's slot).  Only for amounts >= 0 and no exemplar; a child without
    the expected inner value keeps its public `inc`.  tests/test_prometheus_exporter.py checks both give the same
    exposition."""
    value = getattr(child, "_value", None)
    add = getattr(value, "inc", None)
    return add if callable(add) else child.inc


class _BucketObserver:
    """`Histogram.observe` without the per-call checks: the sum, then the first bucket whose bound holds the value
    (found by bisection over the sorted bounds instead of a loop)."""

    __slots__ = ("_add_sum", "_bounds", "_buckets")

    def __init__(self, add_sum: Callable[[float], None], bounds: list[float], buckets: list[Callable[[float], None]]) -> None:
        self._add_sum = add_sum
        self._bounds = bounds
        self._buckets = buckets

    def __call__(self, amount: float) -> None:
        self._add_sum(amount)
        bounds = self._bounds
        index = bisect_left(bounds, amount)
        if index < len(bounds) and amount <= bounds[index]:  # (NaN is in no bucket, as with `observe`)
            self._buckets[index](1)


def _observer(child: Any) -> Callable[[float], None]:
    """`child.observe`, made cheaper as `_adder` makes `inc` (a histogram child without the expected inner values
    keeps its public `observe`)."""
    try:
        add_sum = child._sum.inc
        bounds = list(child._upper_bounds)
        buckets = [bucket.inc for bucket in child._buckets]
    except AttributeError:
        return child.observe
    if len(bounds) != len(buckets) or bounds != sorted(bounds):
        return child.observe
    return _BucketObserver(add_sum, bounds, buckets)


class _ExchangeSeries:
    """What one kind of exchange increments by one (`counts`), and its labels for the rest."""

    __slots__ = ("counts", "model", "route")

    def __init__(self, counts: tuple[Callable[[float], None], ...], route: str, model: str) -> None:
        self.counts = counts
        self.route = route
        self.model = model


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
