"""OpenTelemetry for ragtap, following the GenAI semantic conventions (the version is named in
docs/observability.md): traces, the GenAI client metrics, and evaluation results as events.

Traces: one CLIENT span `chat {gen_ai.request.model}` per proxied chat exchange, parented to the app's W3C trace
context (`traceparent`/`tracestate` of the incoming request), with the request settings, usage, ragtap's own
overhead and, under content capture, the input and output messages.

Metrics (OTel metrics SDK, own MeterProvider): `gen_ai.client.operation.duration`, `gen_ai.client.token.usage`,
`gen_ai.client.operation.time_to_first_chunk` with the conventions' bucket boundaries, plus ragtap's overhead
counters; exported over OTLP beside the Prometheus exporter.

Evaluation: scoring runs after the response, when the chat span has ended (an ended span takes no events).  The
results are emitted twice, both on the chat span's context: as log-based `gen_ai.evaluation.result` events (OTel
logs SDK, trace and span id of the chat span: what the conventions describe), and as span events of a short
INTERNAL child span `evaluate ragtap` (for trace-only backends such as Phoenix, Jaeger or Tempo, which drop
logs).  Every result also carries `gen_ai.response.id`, so a backend can join either way.  docs/observability.md
explains the choice.

Usage::

    from ragtap.exporters.otel import OtelExporter
    otel = OtelExporter(OtelSettings(enabled=True))     # OTLP to OTEL_EXPORTER_OTLP_ENDPOINT (http/protobuf or grpc)
    exporters.add(otel)
    prom.watch_errors("otel", lambda: otel.stats.failures)  # failed exports show up in Prometheus
    ...
    exporters.shutdown()                                # flushes spans, metrics and logs

Export runs on the SDK's batch/periodic threads: a slow or dead collector never delays a request, and failed
`export()` calls are counted in `OtelExporter.stats` (an `ExportStats`).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from opentelemetry import trace
from opentelemetry._logs import LogRecord
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import (
    BatchLogRecordProcessor,
    ConsoleLogRecordExporter,
    LogRecordExporter,
    LogRecordExportResult,
)
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    ConsoleMetricExporter,
    MetricExporter,
    MetricExportResult,
    MetricReader,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from ragtap.exchange import ChatMessage, ExchangeRecord
from ragtap.exporters.base import Exporter
from ragtap.exporters.semconv import (
    DURATION_BUCKETS,
    ERROR_TYPE,
    EVALUATION_EVENT,
    GEN_AI_EVALUATION_EXPLANATION,
    GEN_AI_EVALUATION_NAME,
    GEN_AI_EVALUATION_SCORE_LABEL,
    GEN_AI_EVALUATION_SCORE_VALUE,
    GEN_AI_CONVERSATION_ID,
    GEN_AI_INPUT_MESSAGES,
    GEN_AI_OPERATION_NAME,
    GEN_AI_OUTPUT_MESSAGES,
    GEN_AI_OUTPUT_TYPE,
    GEN_AI_PROVIDER_NAME,
    GEN_AI_REQUEST_CHOICE_COUNT,
    GEN_AI_REQUEST_FREQUENCY_PENALTY,
    GEN_AI_REQUEST_MAX_TOKENS,
    GEN_AI_REQUEST_MODEL,
    GEN_AI_REQUEST_PRESENCE_PENALTY,
    GEN_AI_REQUEST_REASONING_LEVEL,
    GEN_AI_REQUEST_SEED,
    GEN_AI_REQUEST_STOP_SEQUENCES,
    GEN_AI_REQUEST_STREAM,
    GEN_AI_REQUEST_TEMPERATURE,
    GEN_AI_REQUEST_TOP_P,
    GEN_AI_RESPONSE_FINISH_REASONS,
    GEN_AI_RESPONSE_ID,
    GEN_AI_RESPONSE_MODEL,
    GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK,
    GEN_AI_RETRIEVAL_DOCUMENTS,
    GEN_AI_RETRIEVAL_QUERY_TEXT,
    GEN_AI_TOKEN_TYPE,
    GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
    GEN_AI_USAGE_INPUT_TOKENS,
    GEN_AI_USAGE_OUTPUT_TOKENS,
    GEN_AI_USAGE_REASONING_OUTPUT_TOKENS,
    HTTP_RESPONSE_STATUS_CODE,
    METRIC_OPERATION_DURATION,
    METRIC_TIME_TO_FIRST_CHUNK,
    METRIC_TOKEN_USAGE,
    SERVER_ADDRESS,
    SERVER_PORT,
    SESSION_ID,
    TOKEN_BUCKETS,
    USER_ID,
    chat_span,
    keep_chat_span,
)
from ragtap.exporters.settings import OTLP_PROTOCOLS, OtelSettings
from ragtap.types import METRICS, Assessment, Interaction, Verdict

log = logging.getLogger("ragtap.exporters.otel")

EVALUATE_SPAN_NAME = "evaluate ragtap"

MAX_CAPTURED_DOCUMENTS = 50
MAX_CAPTURED_MESSAGES = 100  # the last ones: a long chat history keeps its most recent turns
DEFAULT_SERVICE_NAME = "ragtap"
SIGNALS = ("traces", "metrics", "logs")

_propagator = TraceContextTextMapPropagator()


class ExportStats:
    """Thread-safe counts of what the span exporter did; read by Prometheus (`watch_errors`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.exported_spans = 0
        self.failed_spans = 0
        self.failed_exports = 0  # export() calls that failed or raised

    def record(self, spans: int, ok: bool) -> None:
        with self._lock:
            if ok:
                self.exported_spans += spans
            else:
                self.failed_spans += spans
                self.failed_exports += 1

    @property
    def failures(self) -> int:
        """Failed export() calls so far: `prometheus.watch_errors("otel", lambda: otel.stats.failures)`."""
        return self.failed_exports


class CountingSpanExporter(SpanExporter):
    """Wraps a SpanExporter: counts successes and failures into `ExportStats`; never lets an exception out."""

    def __init__(self, inner: SpanExporter, stats: ExportStats) -> None:
        self.inner = inner
        self.stats = stats

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            result = self.inner.export(spans)
        except Exception:
            log.warning("span export raised", exc_info=True)
            result = SpanExportResult.FAILURE
        self.stats.record(len(spans), result == SpanExportResult.SUCCESS)
        return result

    def shutdown(self) -> None:
        try:
            self.inner.shutdown()
        except Exception:
            log.warning("span exporter shutdown raised", exc_info=True)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        try:
            return bool(self.inner.force_flush(timeout_millis))
        except Exception:
            return False


class CountingMetricExporter(MetricExporter):
    """Wraps a MetricExporter like CountingSpanExporter: failures counted, exceptions kept in."""

    def __init__(self, inner: MetricExporter, stats: ExportStats) -> None:
        super().__init__(preferred_temporality=inner._preferred_temporality,
                         preferred_aggregation=inner._preferred_aggregation)
        self.inner = inner
        self.stats = stats

    def export(self, metrics_data: Any, timeout_millis: float = 10_000, **kwargs: Any) -> MetricExportResult:
        try:
            result = self.inner.export(metrics_data, timeout_millis=timeout_millis, **kwargs)
        except Exception:
            log.warning("metric export raised", exc_info=True)
            result = MetricExportResult.FAILURE
        self.stats.record(0, result == MetricExportResult.SUCCESS)
        return result

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        try:
            return bool(self.inner.force_flush(timeout_millis))
        except Exception:
            return False

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        try:
            self.inner.shutdown(timeout_millis=timeout_millis, **kwargs)
        except Exception:
            log.warning("metric exporter shutdown raised", exc_info=True)


class CountingLogExporter(LogRecordExporter):
    """Wraps a LogRecordExporter like CountingSpanExporter: failures counted, exceptions kept in."""

    def __init__(self, inner: LogRecordExporter, stats: ExportStats) -> None:
        self.inner = inner
        self.stats = stats

    def export(self, batch: Sequence[Any]) -> LogRecordExportResult:
        try:
            result = self.inner.export(batch)
        except Exception:
            log.warning("log export raised", exc_info=True)
            result = LogRecordExportResult.FAILURE
        self.stats.record(0, result == LogRecordExportResult.SUCCESS)
        return result

    def shutdown(self) -> None:
        try:
            self.inner.shutdown()
        except Exception:
            log.warning("log exporter shutdown raised", exc_info=True)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        try:
            return bool(self.inner.force_flush(timeout_millis))
        except Exception:
            return False


def otlp_protocol(settings: OtelSettings, signal: str, environ: Any = None) -> str:
    """The OTLP protocol of one signal: the setting, else OTEL_EXPORTER_OTLP_<SIGNAL>_PROTOCOL, else
    OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf (the specification's default)."""
    env = os.environ if environ is None else environ
    protocol = (settings.protocol or env.get(f"OTEL_EXPORTER_OTLP_{signal.upper()}_PROTOCOL")
                or env.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "http/protobuf").strip().lower()
    if protocol not in OTLP_PROTOCOLS:
        raise ValueError(f"OTLP protocol {protocol!r} for {signal} is not supported by ragtap (grpc or http/protobuf)")
    return protocol


def _signal_endpoint(endpoint: str | None, signal: str, protocol: str) -> str | None:
    """HTTP: a base URL (no path) gets `/v1/<signal>`; gRPC: the URL as is; None leaves the SDK to read the
    standard environment variables (which it resolves per signal itself)."""
    if not endpoint:
        return None
    if protocol == "grpc":
        return endpoint
    if urlsplit(endpoint).path in ("", "/"):
        return endpoint.rstrip("/") + f"/v1/{signal}"
    return endpoint


def _otlp_arguments(settings: OtelSettings, signal: str, protocol: str) -> dict[str, Any]:
    return {"endpoint": _signal_endpoint(settings.endpoint, signal, protocol),
            "headers": dict(settings.headers) or None,  # None: OTEL_EXPORTER_OTLP_(<SIGNAL>_)HEADERS
            "timeout": settings.export_timeout}


def build_span_exporter(settings: OtelSettings) -> SpanExporter | None:
    """The span exporter `settings.exporter` names (None for "none")."""
    kind = (settings.exporter or "none").lower()
    if kind == "none":
        return None
    if kind == "console":
        return ConsoleSpanExporter(service_name=settings.service_name, out=sys.stderr)  # keep stdout for CLI output
    if kind == "otlp":
        protocol = otlp_protocol(settings, "traces")
        if protocol == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter

            return GrpcSpanExporter(**_otlp_arguments(settings, "traces", protocol))
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter(**_otlp_arguments(settings, "traces", protocol))
    raise ValueError(f"unknown OpenTelemetry exporter {settings.exporter!r} (otlp, console or none)")


def build_metric_exporter(settings: OtelSettings) -> MetricExporter | None:
    kind = (settings.exporter or "none").lower()
    if kind == "none":
        return None
    if kind == "console":
        return ConsoleMetricExporter(out=sys.stderr)
    protocol = otlp_protocol(settings, "metrics")
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter as GrpcMetricExporter

        return GrpcMetricExporter(**_otlp_arguments(settings, "metrics", protocol))
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

    return OTLPMetricExporter(**_otlp_arguments(settings, "metrics", protocol))


def build_log_exporter(settings: OtelSettings) -> LogRecordExporter | None:
    kind = (settings.exporter or "none").lower()
    if kind == "none":
        return None
    if kind == "console":
        return ConsoleLogRecordExporter(out=sys.stderr)
    protocol = otlp_protocol(settings, "logs")
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcLogExporter

        return GrpcLogExporter(**_otlp_arguments(settings, "logs", protocol))
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter

    return OTLPLogExporter(**_otlp_arguments(settings, "logs", protocol))


def _traces_endpoint(endpoint: str | None) -> str | None:
    """A base URL (no path) gets the OTLP/HTTP traces path; None leaves the SDK to read the standard env vars."""
    return _signal_endpoint(endpoint, "traces", "http/protobuf")


def build_resource(settings: OtelSettings) -> Resource:
    """service.name: the setting, else OTEL_SERVICE_NAME, else OTEL_RESOURCE_ATTRIBUTES' service.name, else
    "ragtap" (`Resource.create` reads both variables; the SDK's own fallback is "unknown_service")."""
    resource = Resource.create({"service.name": settings.service_name} if settings.service_name else {})
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": DEFAULT_SERVICE_NAME}))
    return resource


def sdk_disabled(environ: Any = None) -> bool:
    """OTEL_SDK_DISABLED=true: the standard switch that turns every OpenTelemetry signal off."""
    env = os.environ if environ is None else environ
    return str(env.get("OTEL_SDK_DISABLED", "")).strip().lower() == "true"


def _epoch_ns(perf: float | None) -> int | None:
    """Convert a `time.perf_counter()` reading into the epoch nanoseconds spans use."""
    if perf is None:
        return None
    return time.time_ns() - int((time.perf_counter() - perf) * 1e9)


class OtelExporter(Exporter):
    """Spans, GenAI metrics and evaluation events for ragtap's exchanges.

    `tracer_provider` given (tests, or an app that embeds ragtap): spans go to that provider and ragtap adds no
    processor to it; metrics and log events then go only to a `meter_provider` / `logger_provider` given with
    it.  Otherwise ragtap builds its own providers (never the global ones) with a BatchSpanProcessor, a
    PeriodicExportingMetricReader and a BatchLogRecordProcessor around the exporters `settings.exporter` and
    `settings.protocol` name; `span_exporter`, `metric_reader` and `log_exporter` replace those (tests).
    """

    flushes_over_network = True

    def __init__(self, settings: OtelSettings | None = None, tracer_provider: TracerProvider | None = None, *,
                 span_exporter: SpanExporter | None = None, stats: ExportStats | None = None,
                 meter_provider: MeterProvider | None = None, metric_reader: MetricReader | None = None,
                 logger_provider: LoggerProvider | None = None, log_exporter: LogRecordExporter | None = None) -> None:
        self.settings = settings or OtelSettings(enabled=True)
        self.wants_messages = bool(self.settings.capture_content)  # gen_ai.input.messages on the chat span
        self.stats = stats or ExportStats()
        embedded = tracer_provider is not None
        self._owned: list[Any] = []  # providers ragtap built: shut down (flushed) at exit
        resource = build_resource(self.settings) if not embedded or metric_reader or log_exporter else None
        if tracer_provider is None:
            tracer_provider = TracerProvider(resource=resource)
            inner = span_exporter if span_exporter is not None else build_span_exporter(self.settings)
            if inner is not None:
                tracer_provider.add_span_processor(BatchSpanProcessor(CountingSpanExporter(inner, self.stats)))
            self._owned.append(tracer_provider)
        self.tracer_provider = tracer_provider
        try:
            from ragtap import __version__ as version  # type: ignore[attr-defined]
        except Exception:
            version = None
        self.tracer = tracer_provider.get_tracer("ragtap", version)
        self.meter_provider = meter_provider or self._build_meter_provider(embedded, metric_reader, resource)
        self.logger_provider = logger_provider or self._build_logger_provider(embedded, log_exporter, resource)
        self._instruments = _Instruments(self.meter_provider.get_meter("ragtap", version)) if self.meter_provider else None
        self.event_logger = self.logger_provider.get_logger("ragtap", version) if self.logger_provider else None
        self._closed = False

    def _build_meter_provider(self, embedded: bool, reader: MetricReader | None, resource: Resource | None) -> MeterProvider | None:
        if not self.settings.metrics or (embedded and reader is None):
            return None
        if reader is None:
            exporter = build_metric_exporter(self.settings)
            if exporter is None:
                return None
            interval = None if self.settings.metrics_interval_s is None else self.settings.metrics_interval_s * 1000
            reader = PeriodicExportingMetricReader(CountingMetricExporter(exporter, self.stats),
                                                   export_interval_millis=interval,  # None: OTEL_METRIC_EXPORT_INTERVAL
                                                   export_timeout_millis=self.settings.export_timeout * 1000)
        # ragtap's own shutdown flushes it within the grace period; no second (atexit) flush against a dead collector
        provider = MeterProvider(metric_readers=[reader], resource=resource, shutdown_on_exit=False)
        self._owned.append(provider)
        return provider

    def _build_logger_provider(self, embedded: bool, exporter: LogRecordExporter | None, resource: Resource | None) -> LoggerProvider | None:
        if not self.settings.logs or (embedded and exporter is None):
            return None
        if exporter is None:
            exporter = build_log_exporter(self.settings)
            if exporter is None:
                return None
        provider = LoggerProvider(resource=resource, shutdown_on_exit=False)
        provider.add_log_record_processor(BatchLogRecordProcessor(CountingLogExporter(exporter, self.stats)))
        self._owned.append(provider)
        return provider

    # ------------------------------------------------------------------------------------------ chat span
    def exchange_started(self, exchange: ExchangeRecord) -> None:
        self._start_chat_span(exchange)

    def _start_chat_span(self, exchange: ExchangeRecord) -> trace.Span:
        carrier = {k.lower(): v for k, v in (exchange.trace_headers or {}).items()}
        parent = _propagator.extract(carrier=carrier)
        attributes: dict[str, Any] = {
            GEN_AI_OPERATION_NAME: "chat",
            GEN_AI_PROVIDER_NAME: self.settings.provider_name,
            GEN_AI_REQUEST_STREAM: bool(exchange.stream),
        }
        if exchange.request_model:
            attributes[GEN_AI_REQUEST_MODEL] = exchange.request_model
        if exchange.upstream_host:
            attributes[SERVER_ADDRESS] = exchange.upstream_host
        if exchange.upstream_port:
            attributes[SERVER_PORT] = int(exchange.upstream_port)
        span = self.tracer.start_span(_chat_span_name(exchange.request_model), context=parent, kind=SpanKind.CLIENT,
                                      attributes=attributes, start_time=_epoch_ns(exchange.started_at))
        keep_chat_span(exchange.extras, span)
        return span

    def exchange_finished(self, exchange: ExchangeRecord) -> None:
        error_type = _error_type(exchange)
        self._record_metrics(exchange, error_type)
        span = chat_span(exchange.extras)
        if span is None:  # exchange_started was not seen (e.g. exporter added late): still record the exchange
            span = self._start_chat_span(exchange)
        if not span.is_recording():
            return
        if exchange.request_model:
            span.update_name(_chat_span_name(exchange.request_model))
            span.set_attribute(GEN_AI_REQUEST_MODEL, exchange.request_model)
        attrs: dict[str, Any] = {
            "ragtap.injected": bool(exchange.injected),
            "ragtap.outcome": exchange.outcome,
        }
        if exchange.rag_source:
            attrs["ragtap.rag_source"] = exchange.rag_source
        if exchange.recognition:
            attrs["ragtap.recognition"] = exchange.recognition
        if exchange.response_model:
            attrs[GEN_AI_RESPONSE_MODEL] = exchange.response_model
        if exchange.response_id:
            attrs[GEN_AI_RESPONSE_ID] = exchange.response_id
        if exchange.finish_reasons:
            attrs[GEN_AI_RESPONSE_FINISH_REASONS] = [str(r) for r in exchange.finish_reasons]
        for key, value in ((GEN_AI_USAGE_INPUT_TOKENS, exchange.input_tokens), (GEN_AI_USAGE_OUTPUT_TOKENS, exchange.output_tokens),
                           (GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS, exchange.cached_input_tokens),
                           (GEN_AI_USAGE_REASONING_OUTPUT_TOKENS, exchange.reasoning_tokens),
                           ("ragtap.supporting_tokens", exchange.supporting_tokens)):
            if value is not None:
                attrs[key] = int(value)
        if exchange.status is not None:
            attrs[HTTP_RESPONSE_STATUS_CODE] = int(exchange.status)
        if exchange.stream and exchange.first_token_at is not None:
            attrs[GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK] = max(0.0, exchange.first_token_at - exchange.started_at)
        if exchange.added_seconds is not None:
            attrs["ragtap.added_seconds"] = exchange.added_seconds
        attrs.update(_request_attributes(exchange))
        attrs.update(_overhead_attributes(exchange))
        if self.settings.capture_content:
            attrs.update(self._message_attributes(exchange))
        if error_type is not None:
            attrs[ERROR_TYPE] = error_type
        span.set_attributes(attrs)
        if error_type is not None:
            span.set_status(Status(StatusCode.ERROR, error_type))
        span.end(end_time=_epoch_ns(exchange.finished_at))

    def _message_attributes(self, exchange: ExchangeRecord) -> dict[str, Any]:
        """`gen_ai.input.messages` (the app's messages) and `gen_ai.output.messages` (the answer the app received)
        in the conventions' JSON shape, each text capped at `content_max_chars`."""
        cap = max(0, int(self.settings.content_max_chars))
        attrs: dict[str, Any] = {}
        if exchange.input_messages:
            messages = exchange.input_messages[-MAX_CAPTURED_MESSAGES:]
            attrs[GEN_AI_INPUT_MESSAGES] = json.dumps([_message_json(m, cap) for m in messages], ensure_ascii=False)
        if exchange.output_text is not None:
            finish = exchange.finish_reasons[0] if exchange.finish_reasons else "stop"
            message = {"role": "assistant", "parts": [{"type": "text", "content": exchange.output_text[:cap]}],
                       "finish_reason": finish}
            attrs[GEN_AI_OUTPUT_MESSAGES] = json.dumps([message], ensure_ascii=False)
        return attrs

    # --------------------------------------------------------------------------------------------- metrics
    def _record_metrics(self, exchange: ExchangeRecord, error_type: str | None) -> None:
        """The GenAI client metrics of one chat exchange, with the attributes the conventions require."""
        if self._instruments is None:
            return
        attrs: dict[str, Any] = {GEN_AI_OPERATION_NAME: "chat", GEN_AI_PROVIDER_NAME: self.settings.provider_name}
        if exchange.request_model:
            attrs[GEN_AI_REQUEST_MODEL] = exchange.request_model
        if exchange.response_model:
            attrs[GEN_AI_RESPONSE_MODEL] = exchange.response_model
        if exchange.upstream_host:
            attrs[SERVER_ADDRESS] = exchange.upstream_host
            if exchange.upstream_port:
                attrs[SERVER_PORT] = int(exchange.upstream_port)
        self._instruments.record(exchange, attrs, error_type)

    # ---------------------------------------------------------------------------------------- evaluation
    def interaction_scored(self, interaction: Interaction, assessment: Assessment, seconds: float) -> None:
        exchange = interaction.exchange
        parent = None
        if exchange is not None:
            span_of_chat = chat_span(exchange.extras)
            if span_of_chat is not None:
                parent = trace.set_span_in_context(span_of_chat)
            elif exchange.trace_headers:
                parent = _propagator.extract(carrier={k.lower(): v for k, v in exchange.trace_headers.items()})
        response_id = exchange.response_id if exchange is not None else None
        common = {GEN_AI_RESPONSE_ID: response_id} if response_id else {}
        now = time.time_ns()
        events = self._evaluation_results(assessment, common)
        if self.event_logger is not None:
            # Log-based events on the chat span's context (its trace and span id): where the conventions put them.
            for attributes in events:
                self.event_logger.emit(LogRecord(timestamp=now, observed_timestamp=now, context=parent,
                                                 event_name=EVALUATION_EVENT, attributes=attributes))
        if not self.settings.evaluation_span:
            return
        start = now - int(max(0.0, seconds or 0.0) * 1e9)
        span = self.tracer.start_span(EVALUATE_SPAN_NAME, context=parent, kind=SpanKind.INTERNAL, start_time=start)
        if not span.is_recording():
            span.end(end_time=now)
            return
        span.set_attributes(self._evaluation_attributes(interaction, assessment, response_id))
        for attributes in events:
            span.add_event(EVALUATION_EVENT, attributes, timestamp=now)
        span.end(end_time=now)

    def _evaluation_attributes(self, interaction: Interaction, assessment: Assessment, response_id: str | None) -> dict[str, Any]:
        """The `evaluate ragtap` span's attributes: the verdict and scores (for backends that do not index events),
        and the content only under capture."""
        exchange = interaction.exchange
        model = interaction.model or (exchange.request_model if exchange is not None else None)
        attrs: dict[str, Any] = {"ragtap.verdict": _verdict_label(assessment)}
        if model:
            attrs[GEN_AI_REQUEST_MODEL] = model
        if response_id:
            attrs[GEN_AI_RESPONSE_ID] = response_id
        if assessment.poor_retrieval is not None:
            attrs["ragtap.poor_retrieval"] = bool(assessment.poor_retrieval)
        if assessment.scores.attributed_document is not None:
            attrs["ragtap.attributed_document"] = int(assessment.scores.attributed_document)
        if exchange is not None and exchange.supporting_tokens is not None:
            attrs["ragtap.supporting_tokens"] = int(exchange.supporting_tokens)
        if interaction.unscored_reason:
            attrs["ragtap.unscored_reason"] = interaction.unscored_reason
        if interaction.id:
            attrs["ragtap.interaction_id"] = interaction.id
        for metric in METRICS:
            value = getattr(assessment.scores, metric, None)
            if value is not None:
                attrs[f"ragtap.score.{metric}"] = float(value)
        if self.settings.capture_content:
            attrs.update(self._content_attributes(interaction, assessment, exchange))
        return attrs

    def _evaluation_results(self, assessment: Assessment, common: dict[str, Any]) -> list[dict[str, Any]]:
        """The attributes of each `gen_ai.evaluation.result`: one per score, then the verdict, the claims and the
        retrieval."""
        results: list[dict[str, Any]] = []
        for metric in METRICS:
            value = getattr(assessment.scores, metric, None)
            if value is None:
                continue
            event: dict[str, Any] = {GEN_AI_EVALUATION_NAME: f"ragtap.{metric}",
                                     GEN_AI_EVALUATION_SCORE_VALUE: float(value), **common}
            if metric in assessment.passed:
                event[GEN_AI_EVALUATION_SCORE_LABEL] = "pass" if assessment.passed[metric] else "fail"
            results.append(event)
        verdict_event: dict[str, Any] = {GEN_AI_EVALUATION_NAME: "ragtap.verdict",
                                         GEN_AI_EVALUATION_SCORE_LABEL: _verdict_label(assessment), **common}
        if assessment.explanation:
            verdict_event[GEN_AI_EVALUATION_EXPLANATION] = assessment.explanation
        results.append(verdict_event)
        claims = self._claims_result(assessment, common)
        if claims is not None:
            results.append(claims)
        if assessment.poor_retrieval is not None:
            results.append({GEN_AI_EVALUATION_NAME: "ragtap.retrieval",
                            GEN_AI_EVALUATION_SCORE_LABEL: "poor" if assessment.poor_retrieval else "ok", **common})
        return results

    def _claims_result(self, assessment: Assessment, common: dict[str, Any]) -> dict[str, Any] | None:
        """`ragtap.claims`: the share of the answer's judged claims that the evidence supports, the unsupported
        count, and (only under content capture: claims are answer text) each unsupported claim with its offsets."""
        judged = [c for c in assessment.claims if c.of == "answer" and c.supported is not None]
        if not judged:
            return None
        unsupported = assessment.unsupported_claims
        event: dict[str, Any] = {
            GEN_AI_EVALUATION_NAME: "ragtap.claims",
            GEN_AI_EVALUATION_SCORE_VALUE: 1.0 - len(unsupported) / len(judged),
            GEN_AI_EVALUATION_SCORE_LABEL: "fail" if unsupported else "pass",
            "ragtap.claims.judged": len(judged),
            "ragtap.claims.unsupported": len(unsupported),
            "ragtap.claims.unsupported_offsets": [f"{c.start}-{c.end}" for c in unsupported],
            **common,
        }
        if self.settings.capture_content:
            cap = max(0, int(self.settings.content_max_chars))
            event["ragtap.claims.unsupported_text"] = json.dumps(
                [{"text": c.text[:cap], "start": c.start, "end": c.end, "reason": c.reason} for c in unsupported], ensure_ascii=False
            )
        return event

    def _content_attributes(self, interaction: Interaction, assessment: Assessment,
                            exchange: ExchangeRecord | None) -> dict[str, Any]:
        cap = max(0, int(self.settings.content_max_chars))

        def capped(text: str | None) -> str:
            return (text or "")[:cap]

        attrs: dict[str, Any] = {GEN_AI_RETRIEVAL_QUERY_TEXT: capped(interaction.question)}
        documents = [{"id": doc.id if doc.id is not None else str(i), "content": capped(doc.text)}
                     for i, doc in enumerate(interaction.documents[:MAX_CAPTURED_DOCUMENTS])]
        attrs[GEN_AI_RETRIEVAL_DOCUMENTS] = json.dumps(documents, ensure_ascii=False)
        if interaction.supporting is not None:
            attrs["ragtap.supporting_content"] = capped(interaction.supporting)
        if interaction.answer is not None:
            finish = exchange.finish_reasons[0] if exchange is not None and exchange.finish_reasons else "stop"
            message = {"role": "assistant", "parts": [{"type": "text", "content": capped(interaction.answer)}],
                       "finish_reason": finish}
            attrs[GEN_AI_OUTPUT_MESSAGES] = json.dumps([message], ensure_ascii=False)
        if assessment.refusal_phrase:
            attrs["ragtap.refusal_phrase"] = capped(assessment.refusal_phrase)
        return attrs

    # ------------------------------------------------------------------------------------------- lifecycle
    def force_flush(self, timeout_millis: int = 30000) -> bool:
        ok = True
        for provider in (self.tracer_provider, self.meter_provider, self.logger_provider):
            flush = getattr(provider, "force_flush", None)
            if flush is not None:
                ok = bool(flush(timeout_millis)) and ok
        return ok

    def shutdown(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            if self.tracer_provider not in self._owned:
                self.tracer_provider.force_flush()
            for provider in self._owned:
                provider.shutdown()  # flushes the batch processor / reader, then shuts the exporter down
        except Exception:
            log.warning("OpenTelemetry shutdown failed", exc_info=True)


class _Instruments:
    """The GenAI client metrics (and ragtap's overhead counters) on one meter, with the conventions' buckets."""

    def __init__(self, meter: Any) -> None:
        self.duration = meter.create_histogram(METRIC_OPERATION_DURATION, unit="s", description="GenAI operation duration.",
                                               explicit_bucket_boundaries_advisory=DURATION_BUCKETS)
        self.tokens = meter.create_histogram(METRIC_TOKEN_USAGE, unit="{token}", description="Number of input and output tokens used.",
                                             explicit_bucket_boundaries_advisory=TOKEN_BUCKETS)
        self.first_chunk = meter.create_histogram(
            METRIC_TIME_TO_FIRST_CHUNK, unit="s", explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
            description="Time to receive the first chunk, from the request to the first chunk of the response stream.")
        self.overhead_tokens = meter.create_counter("ragtap.overhead.tokens", unit="{token}",
                                                    description="Tokens ragtap added: the injected instruction (input), the supporting content (output).")
        self.overhead_cost = meter.create_counter("ragtap.overhead.cost", unit="USD",
                                                  description="What ragtap's own tokens cost, from the [cost] price table.")

    def record(self, exchange: ExchangeRecord, attrs: dict[str, Any], error_type: str | None) -> None:
        if exchange.total_seconds is not None:
            self.duration.record(max(0.0, exchange.total_seconds), {**attrs, ERROR_TYPE: error_type} if error_type else attrs)
        if exchange.stream and exchange.first_token_at is not None:
            self.first_chunk.record(max(0.0, exchange.first_token_at - exchange.started_at), attrs)
        for kind, value in (("input", exchange.input_tokens), ("output", exchange.output_tokens)):
            if value is not None:
                self.tokens.record(int(value), {**attrs, GEN_AI_TOKEN_TYPE: kind})
        overhead = exchange.overhead
        if overhead is not None:
            for kind, value in (("input", overhead.input_tokens), ("output", overhead.output_tokens)):
                if value:
                    self.overhead_tokens.add(value, {**attrs, GEN_AI_TOKEN_TYPE: kind})
            if overhead.cost_usd:
                self.overhead_cost.add(overhead.cost_usd, attrs)


def _error_type(exchange: ExchangeRecord) -> str | None:
    """`error.type`: the proxy's own error, else the HTTP status of an upstream error or a >= 400 reply."""
    error_type = exchange.error_type
    if error_type is None and exchange.outcome == "upstream_error":
        error_type = str(exchange.status) if exchange.status else "upstream_error"
    if error_type is None and exchange.status is not None and exchange.status >= 400:
        error_type = str(exchange.status)
    return error_type


def _request_attributes(exchange: ExchangeRecord) -> dict[str, Any]:
    """The `gen_ai.request.*` settings the app set, `gen_ai.output.type`, and who asked (user, session, conversation)."""
    attrs: dict[str, Any] = {}
    p = exchange.parameters
    if p is not None:
        for key, value in ((GEN_AI_REQUEST_TEMPERATURE, p.temperature), (GEN_AI_REQUEST_TOP_P, p.top_p),
                           (GEN_AI_REQUEST_FREQUENCY_PENALTY, p.frequency_penalty),
                           (GEN_AI_REQUEST_PRESENCE_PENALTY, p.presence_penalty)):
            if value is not None:
                attrs[key] = float(value)
        for key, whole in ((GEN_AI_REQUEST_MAX_TOKENS, p.max_tokens), (GEN_AI_REQUEST_SEED, p.seed)):
            if whole is not None:
                attrs[key] = int(whole)
        if p.choice_count is not None and p.choice_count != 1:  # conditionally required: only when != 1
            attrs[GEN_AI_REQUEST_CHOICE_COUNT] = int(p.choice_count)
        if p.stop_sequences:
            attrs[GEN_AI_REQUEST_STOP_SEQUENCES] = list(p.stop_sequences)
        if p.output_type:
            attrs[GEN_AI_OUTPUT_TYPE] = p.output_type
        if p.reasoning_level:
            attrs[GEN_AI_REQUEST_REASONING_LEVEL] = p.reasoning_level
    if exchange.user:
        attrs[USER_ID] = exchange.user
    if exchange.session:
        attrs[SESSION_ID] = exchange.session
    conversation = exchange.conversation_id or exchange.session
    if conversation:
        attrs[GEN_AI_CONVERSATION_ID] = conversation
    return attrs


def _overhead_attributes(exchange: ExchangeRecord) -> dict[str, Any]:
    overhead = exchange.overhead
    if overhead is None:
        return {}
    attrs: dict[str, Any] = {"ragtap.overhead.input_tokens": overhead.input_tokens,
                             "ragtap.overhead.output_tokens": overhead.output_tokens}
    if overhead.cost_usd is not None:
        attrs["ragtap.overhead.cost_usd"] = overhead.cost_usd
    return attrs


def _message_json(message: ChatMessage, cap: int) -> dict[str, Any]:
    parts = []
    for part in message.parts:
        if part.type == "text":
            parts.append({"type": "text", "content": (part.content or "")[:cap]})
        elif part.type == "tool_call":
            parts.append({"type": "tool_call", "id": part.id, "name": part.name, "arguments": (part.arguments or "")[:cap]})
        else:
            parts.append({"type": "tool_call_response", "id": part.id, "response": (part.content or "")[:cap]})
    return {"role": message.role, "parts": parts}


def _verdict_label(assessment: Assessment) -> str:
    return assessment.verdict.value if isinstance(assessment.verdict, Verdict) else str(assessment.verdict)


def _chat_span_name(model: str | None) -> str:
    return f"chat {model}" if model else "chat"
