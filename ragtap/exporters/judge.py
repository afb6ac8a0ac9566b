"""Exporting judgements: Prometheus metrics and OpenTelemetry evaluation events.

Prometheus (own registry or the PrometheusExporter's, never the global one)::

    metrics = JudgePrometheusMetrics(prometheus_exporter.registry)
    ragtap_judge_score{metric}              histogram of the Ragas scores (0..1, 0.05 buckets)
    ragtap_judge_judgements_total{trigger}  judgements run online: trigger = not_grounded | sampled
    ragtap_judge_null_total{metric}         metrics the judge could not score (malformed reply, failed call, ...)
    ragtap_judge_calls_total{outcome}       judge calls: ok | retried | failed
    ragtap_judge_tokens_total{kind}         judge tokens from `usage`: prompt | completion
    ragtap_judge_skipped_total{reason}      interactions the policy did not judge: sampled_out | rate_limited |
                                            budget_exhausted | busy | no_answer | no_event_loop
    ragtap_judge_budget_remaining_tokens    what is left of today's token budget (UTC day); -1 = unlimited

Every label takes values from a fixed set.

OpenTelemetry: `add_judgement_events(span, judgement, response_id)` adds one `gen_ai.evaluation.result` event per
scored metric, named `ragas.faithfulness`, `ragas.answer_relevance`, `ragas.context_relevance`, with the score,
the judge model, and `gen_ai.response.id` of the judged completion (so a backend joins them to the chat span);
`OtelJudgeExporter(tracer)` does this on a short `evaluate ragas` span parented to the exchange's chat span.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ragtap.exporters.base import Exporter
from ragtap.exporters.semconv import (
    EVALUATION_EVENT,
    GEN_AI_EVALUATION_EXPLANATION,
    GEN_AI_EVALUATION_NAME,
    GEN_AI_EVALUATION_SCORE_LABEL,
    GEN_AI_EVALUATION_SCORE_VALUE,
    GEN_AI_REQUEST_MODEL,
    GEN_AI_RESPONSE_ID,
    SCORE_BUCKETS,
    chat_span,
)
from ragtap.judgement import METRIC_NAMES, Judgement

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

    from ragtap.judgement import Usage
    from ragtap.types import Interaction

SKIP_REASONS: tuple[str, ...] = ("sampled_out", "rate_limited", "budget_exhausted", "busy", "no_answer", "no_event_loop")
TRIGGERS: tuple[str, ...] = ("not_grounded", "sampled")
EVALUATE_SPAN_NAME = "evaluate ragas"


class JudgePrometheusMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=True)
        r = self.registry
        self.score = Histogram("ragtap_judge_score", "Ragas scores from the LLM judge", ["metric"], buckets=SCORE_BUCKETS, registry=r)
        self.judgements = Counter("ragtap_judge_judgements_total", "Interactions judged online, by trigger", ["trigger"], registry=r)
        self.nulls = Counter("ragtap_judge_null_total", "Judge metrics left unscored (malformed reply, failed call)", ["metric"], registry=r)
        self.calls = Counter("ragtap_judge_calls_total", "Judge calls, by outcome", ["outcome"], registry=r)
        self.tokens = Counter("ragtap_judge_tokens_total", "Judge tokens reported in usage", ["kind"], registry=r)
        self.skipped = Counter("ragtap_judge_skipped_total", "Interactions not judged, by reason", ["reason"], registry=r)
        # Several workers (`ragtap serve --workers N`) each hold a share of the budget: what is left is their sum.
        self.budget_remaining = Gauge("ragtap_judge_budget_remaining_tokens", "Judge tokens left today (UTC)", registry=r,
                                      multiprocess_mode="livesum")
        for metric in METRIC_NAMES:  # export zeros from the start, so rate() works before the first event
            self.score.labels(metric)
            self.nulls.labels(metric)
        for trigger in TRIGGERS:
            self.judgements.labels(trigger)
        for outcome in ("ok", "retried", "failed"):
            self.calls.labels(outcome)
        for kind in ("prompt", "completion"):
            self.tokens.labels(kind)
        for reason in SKIP_REASONS:
            self.skipped.labels(reason)

    def record_judgement(self, judgement: Judgement, trigger: str) -> None:
        self.judgements.labels(trigger if trigger in TRIGGERS else "sampled").inc()
        for name, result in judgement.results.items():
            if name not in METRIC_NAMES:
                continue
            if result.score is None:
                self.nulls.labels(name).inc()
            else:
                self.score.labels(name).observe(result.score)
        self.record_usage(judgement.usage)

    def record_usage(self, usage: Usage) -> None:
        self.calls.labels("ok").inc(usage.calls)
        self.calls.labels("retried").inc(usage.retries)
        self.calls.labels("failed").inc(usage.failed)
        self.tokens.labels("prompt").inc(usage.prompt_tokens)
        self.tokens.labels("completion").inc(usage.completion_tokens)

    def record_skip(self, reason: str) -> None:
        self.skipped.labels(reason if reason in SKIP_REASONS else "busy").inc()

    def set_budget_remaining(self, tokens: float) -> None:
        self.budget_remaining.set(tokens)


def judgement_events(judgement: Judgement, response_id: str | None = None) -> list[dict[str, Any]]:
    """The attributes of one `gen_ai.evaluation.result` event per metric (scored or not: a null metric carries
    its reason as the explanation and no score value)."""
    events = []
    for name, result in judgement.results.items():
        event: dict[str, Any] = {GEN_AI_EVALUATION_NAME: f"ragas.{name}", GEN_AI_REQUEST_MODEL: judgement.model}
        if result.score is not None:
            event[GEN_AI_EVALUATION_SCORE_VALUE] = float(result.score)
        else:
            event[GEN_AI_EVALUATION_SCORE_LABEL] = "unscored"
        if result.reason:
            event[GEN_AI_EVALUATION_EXPLANATION] = result.reason
        if response_id:
            event[GEN_AI_RESPONSE_ID] = response_id
        events.append(event)
    return events


def add_judgement_events(span: Any, judgement: Judgement, response_id: str | None = None, timestamp: int | None = None) -> None:
    """Add the judgement's evaluation events to an OpenTelemetry span."""
    for attributes in judgement_events(judgement, response_id):
        span.add_event(EVALUATION_EVENT, attributes, timestamp=timestamp)


def _response_id(interaction: Interaction) -> str | None:
    return interaction.exchange.response_id if interaction.exchange is not None else None


class OtelJudgeExporter(Exporter):
    """Emits each judgement as an INTERNAL span `evaluate ragas` (child of the exchange's chat span when the
    OtelExporter recorded one, else a root span) carrying the `ragas.*` evaluation events, and, given the
    OtelExporter's `event_logger`, the same results as log-based `gen_ai.evaluation.result` events on the chat
    span's context (as the OtelExporter does for ragtap's own scores)."""

    def __init__(self, tracer: Any, event_logger: Any = None) -> None:
        self.tracer = tracer
        self.event_logger = event_logger

    def interaction_judged(self, interaction: Interaction, judgement: Judgement) -> None:
        from opentelemetry import trace
        from opentelemetry.trace import SpanKind

        exchange = interaction.exchange
        span_of_chat = chat_span(exchange.extras) if exchange is not None else None
        parent = trace.set_span_in_context(span_of_chat) if span_of_chat is not None else None
        now = time.time_ns()
        start = now - int(max(0.0, judgement.seconds) * 1e9)
        span = self.tracer.start_span(EVALUATE_SPAN_NAME, context=parent, kind=SpanKind.INTERNAL, start_time=start)
        response_id = _response_id(interaction)
        attributes: dict[str, Any] = {GEN_AI_REQUEST_MODEL: judgement.model, "ragtap.judge.calls": judgement.usage.calls,
                                      "ragtap.judge.tokens": judgement.usage.total_tokens}
        if response_id:
            attributes[GEN_AI_RESPONSE_ID] = response_id
        if interaction.id:
            attributes["ragtap.interaction_id"] = interaction.id
        span.set_attributes(attributes)
        add_judgement_events(span, judgement, response_id, timestamp=now)
        span.end(end_time=now)
        if self.event_logger is not None:
            from opentelemetry._logs import LogRecord

            for event in judgement_events(judgement, response_id):
                self.event_logger.emit(LogRecord(timestamp=now, observed_timestamp=now, context=parent,
                                                 event_name=EVALUATION_EVENT, attributes=event))
