"""The export-side wrappers: `ExportStats` counts what the SDK's exporters did, and the Counting*Exporter classes
wrap the span, metric and log exporters so that a failed or raising `export()` is counted (and read by Prometheus
through `watch_errors`) instead of escaping into the SDK's batch/periodic threads."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any

from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult
from opentelemetry.sdk.metrics.export import MetricExporter, MetricExportResult
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

# One logger name for the whole package (the name the single-file module had), so log filters keep working.
log = logging.getLogger("ragtap.exporters.otel")


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
