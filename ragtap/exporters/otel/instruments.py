"""The GenAI client metrics (`gen_ai.client.operation.duration`, `gen_ai.client.token.usage`,
`gen_ai.client.operation.time_to_first_chunk`, with the conventions' bucket boundaries) and ragtap's overhead
counters, recorded once per chat exchange."""

from __future__ import annotations

from typing import Any

from ragtap.exchange import ExchangeRecord
from ragtap.exporters.semconv import (
    DURATION_BUCKETS,
    ERROR_TYPE,
    GEN_AI_TOKEN_TYPE,
    METRIC_OPERATION_DURATION,
    METRIC_TIME_TO_FIRST_CHUNK,
    METRIC_TOKEN_USAGE,
    TOKEN_BUCKETS,
)


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
