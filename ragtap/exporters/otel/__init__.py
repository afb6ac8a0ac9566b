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

Modules (one concern each):

- `exporter.py`: `OtelExporter` (the hooks; the chat span; owns its providers).
- `attributes.py`: the chat span's attribute builders (request settings, overhead, captured messages), its name,
  `error.type`, the verdict label.
- `evaluation.py`: the `gen_ai.evaluation.result` attributes and the `evaluate ragtap` span's attributes.
- `instruments.py`: the GenAI client metrics and ragtap's overhead counters (`_Instruments`).
- `sdk.py`: OTLP protocol/endpoint per signal, `build_*_exporter`, `build_resource`, `sdk_disabled`.
- `exporters.py`: `ExportStats` and the Counting*Exporter wrappers that count failed exports.
"""

from ragtap.exporters.otel.attributes import MAX_CAPTURED_MESSAGES
from ragtap.exporters.otel.evaluation import EVALUATE_SPAN_NAME, MAX_CAPTURED_DOCUMENTS
from ragtap.exporters.otel.exporter import OtelExporter
from ragtap.exporters.otel.exporters import CountingLogExporter, CountingMetricExporter, CountingSpanExporter, ExportStats
from ragtap.exporters.otel.sdk import (
    DEFAULT_SERVICE_NAME,
    SIGNALS,
    _traces_endpoint,
    build_log_exporter,
    build_metric_exporter,
    build_resource,
    build_span_exporter,
    otlp_protocol,
    sdk_disabled,
)
from ragtap.exporters.semconv import EVALUATION_EVENT  # imported from here by the tests, as before the split

__all__ = [
    "DEFAULT_SERVICE_NAME",
    "EVALUATE_SPAN_NAME",
    "EVALUATION_EVENT",
    "MAX_CAPTURED_DOCUMENTS",
    "MAX_CAPTURED_MESSAGES",
    "SIGNALS",
    "CountingLogExporter",
    "CountingMetricExporter",
    "CountingSpanExporter",
    "ExportStats",
    "OtelExporter",
    "_traces_endpoint",
    "build_log_exporter",
    "build_metric_exporter",
    "build_resource",
    "build_span_exporter",
    "otlp_protocol",
    "sdk_disabled",
]
