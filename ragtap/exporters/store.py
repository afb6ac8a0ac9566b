"""Scored interactions into the capture store, by the capture policy, off the response path.

`interaction_scored` runs on the event loop after the response: it decides by the policy (`none`, `flagged`:
every verdict but grounded plus poor retrieval, `all`), builds the typed row (cheap: no I/O, no regexes) and
offers it to the store's bounded queue, which never waits.  Redaction and the database write happen on the
store's writer thread.  Dropped rows (queue full, write failed) are counted by the store and exposed by
`watch()` as Prometheus metrics.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from ragtap.exchange import ExchangeRecord
from ragtap.exporters.base import Exporter
from ragtap.exporters.semconv import chat_span
from ragtap.store.base import CapturedInteraction
from ragtap.store.settings import StoreSettings
from ragtap.store.threaded import ThreadedStore
from ragtap.types import Assessment, Interaction, Thresholds, Verdict


def should_capture(policy: str, assessment: Assessment) -> bool:
    if policy == "all":
        return True
    if policy == "flagged":
        return assessment.verdict is not Verdict.GROUNDED or assessment.poor_retrieval is True
    return False


def trace_ids(exchange: ExchangeRecord | None) -> tuple[str | None, str | None]:
    """(trace id, span id) in W3C hex: ragtap's own chat span when OTel is on, else the app's `traceparent`."""
    if exchange is None:
        return None, None
    span = chat_span(exchange.extras)
    if span is not None:
        context = span.get_span_context()
        if context.is_valid:
            return format(context.trace_id, "032x"), format(context.span_id, "016x")
    parts = exchange.trace_headers.get("traceparent", "").strip().split("-")
    if len(parts) >= 4 and len(parts[1]) == 32 and len(parts[2]) == 16:
        return parts[1].lower(), parts[2].lower()
    return None, None


def finished_epoch(exchange: ExchangeRecord | None) -> float:
    """The wall-clock time the exchange finished (the record holds perf_counter readings)."""
    now = time.time()
    if exchange is None or exchange.finished_at is None:
        return now
    return now - max(0.0, time.perf_counter() - exchange.finished_at)


def captured_interaction(interaction: Interaction, assessment: Assessment, thresholds: Thresholds) -> CapturedInteraction:
    """The store's row for one scored interaction (content as it is: the store redacts before writing)."""
    exchange = interaction.exchange
    trace_id, span_id = trace_ids(exchange)
    latency = exchange.total_seconds if exchange is not None else None
    output, supporting = (exchange.output_tokens, exchange.supporting_tokens) if exchange is not None else (None, None)
    answer_tokens = output - supporting if output is not None and supporting is not None else output
    guard = exchange.guard if exchange is not None else None
    return CapturedInteraction(
        id=uuid.uuid4().hex,
        time=finished_epoch(exchange),
        question=interaction.question,
        documents=interaction.documents,
        supporting=interaction.supporting,
        answer=interaction.answer,
        scores=assessment.scores,
        thresholds=thresholds,
        verdict=assessment.verdict.value,
        poor_retrieval=assessment.poor_retrieval,
        explanation=assessment.explanation,
        claims=assessment.claims,
        unscored_reason=interaction.unscored_reason,
        latency_ms=None if latency is None else round(latency * 1000.0, 3),
        model=interaction.model,
        prompt_tokens=exchange.input_tokens if exchange is not None else None,
        answer_tokens=max(0, answer_tokens) if answer_tokens is not None else None,
        supporting_tokens=supporting,
        trace_id=trace_id,
        span_id=span_id,
        user=exchange.user if exchange is not None else None,
        session=exchange.session if exchange is not None else None,
        rag_source=exchange.rag_source if exchange is not None else None,
        guard_action=guard.action if guard is not None else None,
        guard_outcome=guard.outcome if guard is not None else None,
        delivered_answer=guard.delivered_answer if guard is not None else None,
    )


class StoreExporter(Exporter):
    # Closing writes what is queued, which can wait on a locked file or an unreachable server: the proxy then
    # runs it in a thread bounded by the grace period, like a network flush.
    flushes_over_network = True

    def __init__(self, store: ThreadedStore, settings: StoreSettings, thresholds: Thresholds, *, close_timeout: float = 5.0) -> None:
        self.store = store
        self.settings = settings
        self.thresholds = thresholds
        self.close_timeout = close_timeout
        self.skipped = 0  # not captured by the policy

    def interaction_scored(self, interaction: Interaction, assessment: Assessment, seconds: float) -> None:
        if not should_capture(self.settings.capture, assessment):
            self.skipped += 1
            return
        self.store.offer(captured_interaction(interaction, assessment, self.thresholds))

    def shutdown(self) -> None:
        self.store.close_sync(self.close_timeout)


def watch(store: ThreadedStore, registry: Any, backend: str) -> None:
    """Expose the store's counters on a Prometheus registry, read at scrape time."""
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

    stats = store.stats

    class _StoreCollector:
        def describe(self) -> list[Any]:
            return []

        def collect(self) -> Any:
            written = CounterMetricFamily("ragtap_store_written", "Interactions written to the capture store.", labels=["backend"])
            written.add_metric([backend], stats.written)
            yield written
            dropped = CounterMetricFamily(
                "ragtap_store_dropped", "Interactions the capture store dropped, by reason: queue_full (the database is "
                "slow or down), write_failed (full disk, lock timeout, lost server), shutdown.", labels=["backend", "reason"])
            with stats.lock:
                reasons = dict(stats.dropped)
            for reason, n in sorted(reasons.items()):
                dropped.add_metric([backend, reason], n)
            yield dropped
            reopened = CounterMetricFamily(
                "ragtap_store_reopened", "Times the capture store's database file went away under ragtap and a new one "
                "was started, by reason: deleted, replaced (another file at its path), corrupt (moved aside).",
                labels=["backend", "reason"])
            with stats.lock:
                reasons = dict(stats.reopened)
            for reason in ("deleted", "replaced", "corrupt"):
                reopened.add_metric([backend, reason], reasons.get(reason, 0))
            yield reopened
            failures = CounterMetricFamily("ragtap_store_write_failures", "Failed capture-store write transactions.", labels=["backend"])
            failures.add_metric([backend], stats.failures)
            yield failures
            depth = GaugeMetricFamily("ragtap_store_queue_depth", "Interactions waiting for the capture store's writer.", labels=["backend"])
            depth.add_metric([backend], store.queue_depth)
            yield depth

    registry.register(_StoreCollector())

