"""OpenTelemetry traces for ragtap, following the GenAI semantic conventions.

One CLIENT span `chat {gen_ai.request.model}` per proxied chat exchange, parented to the app's W3C trace context
(`traceparent`/`tracestate` of the incoming request), so ragtap's span sits inside the app's trace.  Scoring runs
after the response, when that span has ended, so its results go on a short INTERNAL child span `evaluate ragtap`
(same trace, parent = the chat span) as `gen_ai.evaluation.result` span events: one per metric that has a score
(`gen_ai.evaluation.name` = `ragtap.sdrd`, ...; score value; label pass/fail) and one for the verdict
(`ragtap.verdict`, label = the verdict, explanation).  Every event also carries `gen_ai.response.id`, so a backend
can join evaluations to the completion either by parent span or by response id.  See docs/observability.md.

Usage::

    from ragtap.exporters.otel import OtelExporter
    otel = OtelExporter(OtelSettings(enabled=True))     # OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT
    exporters.add(otel)
    prom.watch_errors("otel", lambda: otel.stats.failures)  # failed exports show up in Prometheus
    ...
    exporters.shutdown()                                # flushes the batch processor

Export runs on the SDK's BatchSpanProcessor thread: a slow or dead collector never delays a request, and failed
`export()` calls are counted in `OtelExporter.stats` (an `ExportStats`).
"""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from opentelemetry import trace
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

from ragtap.exchange import ExchangeRecord
from ragtap.exporters.base import Exporter
from ragtap.exporters.semconv import (
    ERROR_TYPE,
    EVALUATION_EVENT,
    GEN_AI_EVALUATION_EXPLANATION,
    GEN_AI_EVALUATION_NAME,
    GEN_AI_EVALUATION_SCORE_LABEL,
    GEN_AI_EVALUATION_SCORE_VALUE,
    GEN_AI_OPERATION_NAME,
    GEN_AI_OUTPUT_MESSAGES,
    GEN_AI_PROVIDER_NAME,
    GEN_AI_REQUEST_MODEL,
    GEN_AI_REQUEST_STREAM,
    GEN_AI_RESPONSE_FINISH_REASONS,
    GEN_AI_RESPONSE_ID,
    GEN_AI_RESPONSE_MODEL,
    GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK,
    GEN_AI_RETRIEVAL_DOCUMENTS,
    GEN_AI_RETRIEVAL_QUERY_TEXT,
    GEN_AI_USAGE_INPUT_TOKENS,
    GEN_AI_USAGE_OUTPUT_TOKENS,
    HTTP_RESPONSE_STATUS_CODE,
    SERVER_ADDRESS,
    SERVER_PORT,
    chat_span,
    keep_chat_span,
)
from ragtap.exporters.settings import OtelSettings
from ragtap.types import METRICS, Assessment, Interaction, Verdict

log = logging.getLogger("ragtap.exporters.otel")

EVALUATE_SPAN_NAME = "evaluate ragtap"

MAX_CAPTURED_DOCUMENTS = 50

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


def build_span_exporter(settings: OtelSettings) -> SpanExporter | None:
    """The span exporter `settings.exporter` names (None for "none")."""
    kind = (settings.exporter or "none").lower()
    if kind == "none":
        return None
    if kind == "console":
        return ConsoleSpanExporter(service_name=settings.service_name, out=sys.stderr)  # keep stdout for CLI output
    if kind == "otlp":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter(endpoint=_traces_endpoint(settings.endpoint),
                                headers=dict(settings.headers) or None,  # None: OTEL_EXPORTER_OTLP_HEADERS
                                timeout=settings.export_timeout)
    raise ValueError(f"unknown OpenTelemetry exporter {settings.exporter!r} (otlp, console or none)")


def _traces_endpoint(endpoint: str | None) -> str | None:
    """A base URL (no path) gets the OTLP/HTTP traces path; None leaves the SDK to read the standard env vars."""
    if not endpoint:
        return None
    if urlsplit(endpoint).path in ("", "/"):
        return endpoint.rstrip("/") + "/v1/traces"
    return endpoint


def _epoch_ns(perf: float | None) -> int | None:
    """Convert a `time.perf_counter()` reading into the epoch nanoseconds spans use."""
    if perf is None:
        return None
    return time.time_ns() - int((time.perf_counter() - perf) * 1e9)


class OtelExporter(Exporter):
    """Spans and evaluation events for ragtap's exchanges.

    `tracer_provider` given (tests, or an app that embeds ragtap): spans go to that provider and ragtap adds no
    processor to it.  Otherwise ragtap builds its own provider (never the global one) with a BatchSpanProcessor
    around the exporter `settings.exporter` names; `span_exporter` replaces that exporter (tests).
    """

    flushes_over_network = True

    def __init__(self, settings: OtelSettings | None = None, tracer_provider: TracerProvider | None = None, *,
                 span_exporter: SpanExporter | None = None, stats: ExportStats | None = None) -> None:
        self.settings = settings or OtelSettings(enabled=True)
        self.stats = stats or ExportStats()
        self._owns_provider = tracer_provider is None
        if tracer_provider is None:
            tracer_provider = TracerProvider(resource=Resource.create({"service.name": self.settings.service_name}))
            inner = span_exporter if span_exporter is not None else build_span_exporter(self.settings)
            if inner is not None:
                tracer_provider.add_span_processor(BatchSpanProcessor(CountingSpanExporter(inner, self.stats)))
        self.tracer_provider = tracer_provider
        try:
            from ragtap import __version__ as version  # type: ignore[attr-defined]
        except Exception:
            version = None
        self.tracer = tracer_provider.get_tracer("ragtap", version)
        self._closed = False

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
        if exchange.input_tokens is not None:
            attrs[GEN_AI_USAGE_INPUT_TOKENS] = int(exchange.input_tokens)
        if exchange.output_tokens is not None:
            attrs[GEN_AI_USAGE_OUTPUT_TOKENS] = int(exchange.output_tokens)
        if exchange.supporting_tokens is not None:
            attrs["ragtap.supporting_tokens"] = int(exchange.supporting_tokens)
        if exchange.status is not None:
            attrs[HTTP_RESPONSE_STATUS_CODE] = int(exchange.status)
        if exchange.stream and exchange.first_token_at is not None:
            attrs[GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK] = max(0.0, exchange.first_token_at - exchange.started_at)
        if exchange.added_seconds is not None:
            attrs["ragtap.added_seconds"] = exchange.added_seconds
        error_type = exchange.error_type
        if error_type is None and exchange.outcome == "upstream_error":
            error_type = str(exchange.status) if exchange.status else "upstream_error"
        if error_type is None and exchange.status is not None and exchange.status >= 400:
            error_type = str(exchange.status)
        if error_type is not None:
            attrs[ERROR_TYPE] = error_type
        span.set_attributes(attrs)
        if error_type is not None:
            span.set_status(Status(StatusCode.ERROR, error_type))
        span.end(end_time=_epoch_ns(exchange.finished_at))

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

        now = time.time_ns()
        start = now - int(max(0.0, seconds or 0.0) * 1e9)
        span = self.tracer.start_span(EVALUATE_SPAN_NAME, context=parent, kind=SpanKind.INTERNAL, start_time=start)
        if not span.is_recording():
            span.end(end_time=now)
            return
        span.set_attributes(self._evaluation_attributes(interaction, assessment, response_id))
        self._evaluation_events(span, assessment, {GEN_AI_RESPONSE_ID: response_id} if response_id else {}, now)
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

    def _evaluation_events(self, span: Any, assessment: Assessment, common: dict[str, Any], now: int) -> None:
        """One `gen_ai.evaluation.result` event per score, then the verdict, the claims and the retrieval."""
        for metric in METRICS:
            value = getattr(assessment.scores, metric, None)
            if value is None:
                continue
            event: dict[str, Any] = {GEN_AI_EVALUATION_NAME: f"ragtap.{metric}",
                                     GEN_AI_EVALUATION_SCORE_VALUE: float(value), **common}
            if metric in assessment.passed:
                event[GEN_AI_EVALUATION_SCORE_LABEL] = "pass" if assessment.passed[metric] else "fail"
            span.add_event(EVALUATION_EVENT, event, timestamp=now)
        verdict_event: dict[str, Any] = {GEN_AI_EVALUATION_NAME: "ragtap.verdict",
                                         GEN_AI_EVALUATION_SCORE_LABEL: _verdict_label(assessment), **common}
        if assessment.explanation:
            verdict_event[GEN_AI_EVALUATION_EXPLANATION] = assessment.explanation
        span.add_event(EVALUATION_EVENT, verdict_event, timestamp=now)
        self._claims_event(span, assessment, common, now)
        if assessment.poor_retrieval is not None:
            span.add_event(EVALUATION_EVENT, {GEN_AI_EVALUATION_NAME: "ragtap.retrieval",
                                              GEN_AI_EVALUATION_SCORE_LABEL:
                                                  "poor" if assessment.poor_retrieval else "ok", **common},
                           timestamp=now)

    def _claims_event(self, span: Any, assessment: Assessment, common: dict[str, Any], now: int) -> None:
        """`ragtap.claims`: the share of the answer's judged claims that the evidence supports, the unsupported
        count, and (only under content capture: claims are answer text) each unsupported claim with its offsets."""
        judged = [c for c in assessment.claims if c.of == "answer" and c.supported is not None]
        if not judged:
            return
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
        span.add_event(EVALUATION_EVENT, event, timestamp=now)

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
        flush = getattr(self.tracer_provider, "force_flush", None)
        return bool(flush(timeout_millis)) if flush else True

    def shutdown(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            if self._owns_provider:
                self.tracer_provider.shutdown()  # flushes the batch processor, then shuts the exporter down
            else:
                self.force_flush()
        except Exception:
            log.warning("OpenTelemetry shutdown failed", exc_info=True)


def _verdict_label(assessment: Assessment) -> str:
    return assessment.verdict.value if isinstance(assessment.verdict, Verdict) else str(assessment.verdict)


def _chat_span_name(model: str | None) -> str:
    return f"chat {model}" if model else "chat"
