"""Scoring throughput and time to verdict: `ragtap.pipeline.queue.ScoringQueue` driven directly.

    taskset -c 1 .venv/bin/python bench/scoring.py [--quick] [--json]

The queue is the one the proxy builds (default embedder: all-MiniLM-L6-v2 via onnxruntime, 1 intra-op thread,
behind the LRU cache; default policy and thresholds; queue size 1000, micro-batches of up to 16), run on one
core as the proxy is in the benchmark.  Every interaction has a question, 3 short retrieved documents, an answer
and a supporting content.  "cold": every text is new, so all 6 texts are embedded; "cached": the documents
come from a pool embedded beforehand, with QRD's windows of them (the usual RAG case: the same chunks are
retrieved again and again), so only the question, the answer and the supporting content are embedded.

Figures: capacity (interactions submitted at once, scored per second until the last verdict), time from
submit to verdict (p50/p95/p99) at fixed arrival rates, and the event loop's lag while the queue scores at
capacity (a 1 ms ticker: how late it wakes up), which shows whether scoring holds up the request path.

The ticker is the measuring instrument, not part of scoring, and it is not free: a 1 ms asyncio sleep loop
takes ~4% of a core by itself, and waking 1,000 times a second beside the scoring thread cost ~10% of the
measured capacity (2026-12-02: 47.9 vs 52.6 cold per CPU-second, same checkout, alternated).  So capacity is
measured in a run of its own without the ticker, and the loop's lag in a second run at the same load with it;
that second run's capacity is reported too (`with_lag_probe`), as the figure earlier rounds recorded.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_embedder import sentence

from ragtap.config import Config
from ragtap.embedding.base import embed_windows
from ragtap.embedding.cache import CachedEmbedder
from ragtap.embedding.factory import make_embedder
from ragtap.exporters.base import Exporter
from ragtap.pipeline.queue import ScoringQueue
from ragtap.scoring.passages import question_windows, split_passages
from ragtap.types import Document, Interaction
from ragtap.wiring import build_policy


class Collector(Exporter):
    """Keeps the time from submit to verdict of every scored interaction."""

    def __init__(self) -> None:
        self.seconds: list[float] = []
        self.done_at: list[float] = []
        self.dropped = 0
        self.failed = 0

    def interaction_scored(self, interaction, assessment, seconds) -> None:  # type: ignore[no-untyped-def]
        self.seconds.append(seconds)
        self.done_at.append(time.perf_counter())

    def scoring_dropped(self, reason: str) -> None:
        self.dropped += 1

    def scoring_failed(self, interaction, error) -> None:  # type: ignore[no-untyped-def]
        self.failed += 1


class Texts:
    def __init__(self, seed: int = 1, pool: int = 60) -> None:
        self.rng = random.Random(seed)
        self.pool = [self.document() for _ in range(pool)]

    def document(self) -> str:
        return " ".join(sentence(self.rng, self.rng.randint(10, 16)) for _ in range(2))  # ~30 words, ~40 tokens

    def interaction(self, cached: bool) -> Interaction:
        rng = self.rng
        docs = rng.sample(self.pool, 3) if cached else [self.document() for _ in range(3)]
        return Interaction(
            question=sentence(rng, rng.randint(8, 14)).rstrip(".") + "?",
            documents=tuple(Document(text=d) for d in docs),
            answer=sentence(rng, rng.randint(18, 30)),
            supporting=sentence(rng, rng.randint(14, 24)),
            model="bench",
        )


def embedder_misses(queue: ScoringQueue) -> int:
    """Texts the model embedded so far (cache misses)."""
    return int(getattr(queue.embedder, "misses", 0))


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


async def _wait_scored(collector: Collector, count: int, timeout: float) -> None:
    deadline = time.perf_counter() + timeout
    while len(collector.seconds) + collector.dropped + collector.failed < count and time.perf_counter() < deadline:
        await asyncio.sleep(0.005)


class Phases:
    """A fresh ScoringQueue per phase (same embedder, so the cache carries over), so no phase inherits the
    backlog of the one before."""

    def __init__(self, embedder: CachedEmbedder, config: Config) -> None:
        self.embedder = embedder
        self.config = config
        self.policy = build_policy(config)

    def open(self) -> tuple[ScoringQueue, Collector]:
        collector = Collector()
        scoring = self.config.scoring
        queue = ScoringQueue(self.embedder, self.policy, collector, maxsize=scoring.queue_size, batch_max=scoring.batch_max)
        queue.start()
        return queue, collector

    @staticmethod
    async def close(queue: ScoringQueue) -> None:
        await queue.stop(drain_timeout=0)  # drops what is left
        await asyncio.to_thread(queue._executor.shutdown, True)  # and waits for the batch in flight


async def capacity(phases: Phases, texts: Texts, n: int, cached: bool, timeout: float) -> dict[str, object]:
    """Scoring capacity from a run without the lag probe; the event loop's lag from a second run with it (the
    second run's own capacity is kept under `with_lag_probe`).  Each run scores n new interactions."""
    plain = await _capacity_run(phases, texts, n, cached, timeout, probe=False)
    probed = await _capacity_run(phases, texts, n, cached, timeout, probe=True)
    lag_keys = ("loop_lag_p50_ms", "loop_lag_p99_ms", "loop_lag_max_ms")
    return {
        **plain,
        **{key: probed[key] for key in lag_keys},
        "with_lag_probe": {key: value for key, value in probed.items() if key not in lag_keys},
    }


async def _capacity_run(phases: Phases, texts: Texts, n: int, cached: bool, timeout: float, probe: bool) -> dict[str, float]:
    """Submit n interactions at once; scored per second until the last verdict, and (with `probe`) the loop's lag
    meanwhile."""
    queue, collector = phases.open()
    misses_before = embedder_misses(queue)
    lags: list[float] = []
    stop = False

    async def ticker() -> None:
        while not stop:
            start = time.perf_counter()
            await asyncio.sleep(0.001)
            lags.append(time.perf_counter() - start - 0.001)

    tick = asyncio.get_running_loop().create_task(ticker()) if probe else None
    items = [texts.interaction(cached) for _ in range(n)]
    start, cpu_start = time.perf_counter(), time.process_time()
    for item in items:
        queue.submit(item)
    await _wait_scored(collector, n, timeout=timeout)
    cpu = time.process_time() - cpu_start  # all threads of this process: the embedding thread, mostly
    stop = True
    if tick is not None:
        await tick
    elapsed = (max(collector.done_at) if collector.done_at else time.perf_counter()) - start
    scored = len(collector.seconds)
    await phases.close(queue)
    return {
        "interactions": n,
        "scored": scored,
        "scored_per_s": scored / elapsed,
        # What a core of its own would give: robust to other processes competing for the core.
        "scored_per_cpu_s": scored / cpu if cpu > 0 else float("nan"),
        "texts_per_interaction": (embedder_misses(queue) - misses_before) / max(1, scored),
        **(_lag_figures(lags) if probe else {}),
    }


def _lag_figures(lags: list[float]) -> dict[str, float]:
    return {
        "loop_lag_p50_ms": percentile(lags, 50) * 1e3,
        "loop_lag_p99_ms": percentile(lags, 99) * 1e3,
        "loop_lag_max_ms": max(lags) * 1e3 if lags else float("nan"),
    }


async def at_rate(phases: Phases, texts: Texts, rate: float, seconds: float, cached: bool, grace: float) -> dict[str, float]:
    """Open-loop arrivals at `rate` per second for `seconds`; time from submit to verdict.  Interactions without
    a verdict `grace` seconds after the last arrival count as infinitely late in the percentiles."""
    queue, collector = phases.open()
    n = max(1, int(rate * seconds))
    items = [texts.interaction(cached) for _ in range(n)]
    start = time.perf_counter()
    for i, item in enumerate(items):
        delay = start + i / rate - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        queue.submit(item)
    await _wait_scored(collector, n, timeout=grace)
    elapsed = (max(collector.done_at) if collector.done_at else time.perf_counter()) - start
    late = n - len(collector.seconds) - collector.dropped
    s = collector.seconds + [float("inf")] * late
    await phases.close(queue)
    return {
        "offered_per_s": rate,
        "interactions": n,
        "scored_per_s": len(collector.seconds) / elapsed,
        "dropped": collector.dropped,
        "unfinished": late,
        "verdict_p50_ms": percentile(s, 50) * 1e3,
        "verdict_p95_ms": percentile(s, 95) * 1e3,
        "verdict_p99_ms": percentile(s, 99) * 1e3,
    }


async def run(quick: bool, qrd_window_words: int | None = None) -> dict[str, object]:
    config = Config()
    if qrd_window_words is not None:  # QRD's windows (issue 21): 0 measures the path without them
        config = dataclasses.replace(config, scoring=dataclasses.replace(config.scoring, qrd_window_words=qrd_window_words))
    scoring = config.scoring
    started = time.perf_counter()
    embedder = make_embedder(scoring.embedder, cache_size=scoring.cache_entries, intra_op_threads=scoring.embedder_threads)
    build_s = time.perf_counter() - started
    phases = Phases(embedder, config)
    texts = Texts()

    # Warm-up: first calls load the tokenizers and plan the graph; then embed the document pool (cache hits later).
    queue, collector = phases.open()
    for _ in range(16):
        queue.submit(texts.interaction(False))
    await _wait_scored(collector, 16, timeout=120)
    await phases.close(queue)
    embedder.embed(texts.pool)
    # ...and QRD's windows of them (issue 21): in the steady state a recurring document's windows are cached too.
    windows = [w.text for d in texts.pool for p in split_passages(d) for w in question_windows(p, scoring.qrd_window_words)]
    if windows:
        embed_windows(embedder, windows)  # as assess_batch embeds them (cached apart from plain texts)

    n = 100 if quick else 300
    seconds = 3.0 if quick else 6.0
    grace = 6.0 if quick else 10.0
    out: dict[str, object] = {"embedder": embedder.name, "model_build_s": build_s, "batch_max": scoring.batch_max}
    cold = await capacity(phases, texts, n, cached=False, timeout=60 if quick else 120)
    cached = await capacity(phases, texts, n, cached=True, timeout=60 if quick else 120)
    out["capacity_cold"], out["capacity_cached"] = cold, cached
    # The target rates, and rates below the capacity measured here (what the time to verdict is when scoring
    # keeps up on this machine).
    rates: list[tuple[str, float, bool]] = [("cold", 20.0, False), ("cached", 40.0, True)]
    if not quick:
        rates += [("cold", 25.0, False), ("cached", 50.0, True)]
    rates += [("cold", round(0.8 * cold["scored_per_s"], 1), False), ("cached", round(0.8 * cached["scored_per_s"], 1), True)]
    rows = []
    for label, rate, is_cached in sorted(rates, key=lambda r: (r[0], r[1])):
        if rate > 0:
            rows.append({"cache": label, **(await at_rate(phases, texts, rate, seconds, is_cached, grace))})
    out["at_rate"] = rows
    out["cache_hits"] = embedder.hits
    out["cache_misses"] = embedder.misses
    sample = texts.interaction(False)
    tokenizer = embedder.inner._tokenizer  # type: ignore[attr-defined]  # only to report the texts' sizes
    out["tokens"] = {
        "question": len(tokenizer.encode(sample.question).ids),
        "document": len(tokenizer.encode(sample.documents[0].text).ids),
        "answer": len(tokenizer.encode(sample.answer).ids),
        "supporting": len(tokenizer.encode(sample.supporting or "").ids),
    }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", action="store_true", help="print one JSON object (for bench/run.py)")
    parser.add_argument("--qrd-window-words", type=int, default=None, help="[scoring] qrd_window_words (default: the config's; 0: no windows)")
    args = parser.parse_args()
    try:
        import uvloop

        result = uvloop.run(run(args.quick, args.qrd_window_words))
    except ImportError:
        result = asyncio.run(run(args.quick, args.qrd_window_words))
    result["load_average"] = os.getloadavg()[0]
    if args.json:
        print(json.dumps(result))
        return
    for key, value in result.items():
        if isinstance(value, list):
            for row in value:
                print(f"{key}: " + ", ".join(f"{k}={v:.1f}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()))
        elif isinstance(value, dict):
            print(f"{key}: " + ", ".join(f"{k}={v:.1f}" if isinstance(v, float) else f"{k}={v}" for k, v in value.items()))
        else:
            print(f"{key}: {value}")


if __name__ == "__main__":
    main()
