"""What the OpenTelemetry exporter costs per exchange, by signal, measured side by side in one run.

    taskset -c 1 .venv/bin/python bench/otel_hooks.py [--exchanges N] [--rounds R] [--json]

The hooks run on the event loop after the response has been handed to aiohttp (`loop.call_soon`), so they are
CPU, not the app's latency.  Four set-ups over the same exchange records, in alternating rounds so that machine
noise hits them alike; every exporter is real (SDK providers and processors) with in-memory exporters/readers, so
no network time is counted:

- spans: the chat span (start + finish) and the `evaluate ragtap` span, metrics and log events off;
- +metrics: the same plus the GenAI client metrics and the overhead counters;
- +logs: the same plus the log-based `gen_ai.evaluation.result` events;
- logs only: metrics and log events, no `evaluate ragtap` span.

Reported: microseconds of CPU per exchange (process time, median of the rounds) and the ratio to "spans".
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter  # noqa: E402
from opentelemetry.sdk.metrics.export import InMemoryMetricReader  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import BatchSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402
from test_otel_exporter import make_assessment, make_exchange, make_interaction  # noqa: E402

from ragtap.exchange import Overhead  # noqa: E402
from ragtap.exporters.otel import OtelExporter  # noqa: E402
from ragtap.exporters.settings import OtelSettings  # noqa: E402

SETUPS: dict[str, dict[str, Any]] = {
    "spans": dict(metrics=False, logs=False, evaluation_span=True),
    "+metrics": dict(metrics=True, logs=False, evaluation_span=True),
    "+logs": dict(metrics=True, logs=True, evaluation_span=True),
    "logs only": dict(metrics=True, logs=True, evaluation_span=False),
}


def build(options: dict[str, Any]) -> OtelExporter:
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(InMemorySpanExporter(), max_queue_size=100_000))
    return OtelExporter(OtelSettings(enabled=True, **options), tracer_provider=provider,
                        metric_reader=InMemoryMetricReader() if options["metrics"] else None,
                        log_exporter=InMemoryLogRecordExporter() if options["logs"] else None)


def one_round(otel: OtelExporter, exchanges: int) -> float:
    """CPU microseconds per exchange: start + finish of the chat span, then the evaluation."""
    assessment = make_assessment()
    records = [make_exchange(overhead=Overhead("gpt-4o", 115, 40, 0.0007)) for _ in range(exchanges)]
    interactions = [make_interaction(r) for r in records]
    started = time.process_time()
    for record, interaction in zip(records, interactions):
        otel.exchange_started(record)
        otel.exchange_finished(record)
        otel.interaction_scored(interaction, assessment, 0.01)
    return (time.process_time() - started) / exchanges * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exchanges", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    exporters = {name: build(options) for name, options in SETUPS.items()}
    for otel in exporters.values():  # warm-up: imports, first instrument look-ups
        one_round(otel, 100)
    samples: dict[str, list[float]] = {name: [] for name in SETUPS}
    for _ in range(args.rounds):
        for name, otel in exporters.items():
            samples[name].append(one_round(otel, args.exchanges))
            otel.force_flush()
    for otel in exporters.values():
        otel.shutdown()
    median = {name: statistics.median(values) for name, values in samples.items()}
    if args.json:
        print(json.dumps({"us_per_exchange": median, "samples": samples}, indent=2))
        return
    print(f"{'set-up':<10} {'us/exchange':>12} {'vs spans':>9}   (median of {args.rounds} rounds x {args.exchanges})")
    for name, value in median.items():
        print(f"{name:<10} {value:>12.1f} {value / median['spans']:>8.2f}x")


if __name__ == "__main__":
    main()
