"""`OtelExporter`: the exporter hooks (`exchange_started`, `exchange_finished`, `interaction_scored`) that turn
ragtap's exchanges into the chat span, the GenAI metrics and the evaluation results, and the providers it owns
(built here unless the caller passes its own).  The package docstring (`ragtap.exporters.otel`) has the overview."""

from __future__ import annotations

import logging
import time
from typing import Any

from opentelemetry import trace
from opentelemetry._logs import LogRecord
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor, LogRecordExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricReader, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from ragtap.exchange import ExchangeRecord
from ragtap.exporters.base import Exporter
from ragtap.exporters.otel.attributes import (
    _chat_span_name,
    _error_type,
    _message_attributes,
    _guard_attributes,
    _overhead_attributes,
    _request_attributes,
)
from ragtap.exporters.otel.evaluation import EVALUATE_SPAN_NAME, _evaluation_attributes, _evaluation_results
from ragtap.exporters.otel.exporters import (
    CountingLogExporter,
    CountingMetricExporter,
    CountingSpanExporter,
    ExportStats,
)
from ragtap.exporters.otel.instruments import _Instruments
from ragtap.exporters.otel.sdk import build_log_exporter, build_metric_exporter, build_resource, build_span_exporter
from ragtap.exporters.semconv import (
    ERROR_TYPE,
    EVALUATION_EVENT,
    GEN_AI_OPERATION_NAME,
    GEN_AI_PROVIDER_NAME,
    GEN_AI_REQUEST_MODEL,
    GEN_AI_REQUEST_STREAM,
    GEN_AI_RESPONSE_FINISH_REASONS,
    GEN_AI_RESPONSE_ID,
    GEN_AI_RESPONSE_MODEL,
    GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK,
    GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS,
    GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
    GEN_AI_USAGE_INPUT_TOKENS,
    GEN_AI_USAGE_OUTPUT_TOKENS,
    GEN_AI_USAGE_REASONING_OUTPUT_TOKENS,
    HTTP_RESPONSE_STATUS_CODE,
    SERVER_ADDRESS,
    SERVER_PORT,
    chat_span,
    keep_chat_span,
)
from ragtap.exporters.settings import OtelSettings
from ragtap.privacy import NO_REDACTION, Redactor
from ragtap.types import Assessment, Interaction

# One logger name for the whole package (the name the single-file module had), so log filters keep working.
log = logging.getLogger("ragtap.exporters.otel")

_propagator = TraceContextTextMapPropagator()


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
                 logger_provider: LoggerProvider | None = None, log_exporter: LogRecordExporter | None = None,
                 redactor: Redactor = NO_REDACTION) -> None:
        self.settings = settings or OtelSettings(enabled=True)
        self.redactor = redactor  # user / session ids and captured content, as [privacy] says
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
            GEN_AI_PROVIDER_NAME: exchange.provider or self.settings.provider_name,
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
                           (GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS, exchange.cache_creation_input_tokens),
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
        attrs.update(_request_attributes(exchange, self.redactor))
        attrs.update(_overhead_attributes(exchange))
        attrs.update(_guard_attributes(exchange))
        if self.settings.capture_content:
            attrs.update(_message_attributes(self.settings, exchange, self.redactor))
        if error_type is not None:
            attrs[ERROR_TYPE] = error_type
        span.set_attributes(attrs)
        if error_type is not None:
            span.set_status(Status(StatusCode.ERROR, error_type))
        span.end(end_time=_epoch_ns(exchange.finished_at))

    # --------------------------------------------------------------------------------------------- metrics
    def _record_metrics(self, exchange: ExchangeRecord, error_type: str | None) -> None:
        """The GenAI client metrics of one chat exchange, with the attributes the conventions require."""
        if self._instruments is None:
            return
        attrs: dict[str, Any] = {GEN_AI_OPERATION_NAME: "chat", GEN_AI_PROVIDER_NAME: exchange.provider or self.settings.provider_name}
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
        events = _evaluation_results(self.settings, assessment, common, self.redactor)
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
        span.set_attributes(_evaluation_attributes(self.settings, interaction, assessment, response_id, self.redactor))
        for attributes in events:
            span.add_event(EVALUATION_EVENT, attributes, timestamp=now)
        span.end(end_time=now)

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
