"""The default (int8) MiniLM against the fp32 one: scoring interactions per second on one core, side by side.

    taskset -c 1 .venv/bin/python bench/embedder.py [--rows N] [--rounds R] [--json]

Interactions as in bench/claims.py: real DelucionQA answers (~4 claims each, documents of ~180 words), half of
them with a two-sentence supporting content, scored by `assess_batch` with the default policy (passages and
claims included) in micro-batches of 16, one onnxruntime thread.  "cold": a fresh embedding cache, every text
embedded; "cached": the documents embedded beforehand.  The two embedders alternate within each round, so
machine noise hits both alike; reported are medians over the rounds of interactions per wall second and per
CPU second of this process (the latter barely moves when other processes share the core), and the ratios.
Model build/load time is reported separately and not counted.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from claims import BATCH, interactions  # noqa: E402

from ragtap.config import load_config  # noqa: E402
from ragtap.embedding.base import Embedder  # noqa: E402
from ragtap.embedding.cache import CachedEmbedder  # noqa: E402
from ragtap.embedding.factory import make_embedder  # noqa: E402
from ragtap.evaluation.datasets import resolve_data_dir  # noqa: E402
from ragtap.pipeline.batch import ScoringPolicy, assess_batch  # noqa: E402
from ragtap.types import Interaction  # noqa: E402
from ragtap.wiring import build_policy  # noqa: E402

EMBEDDERS = ("minilm-fp32", "minilm")


def rate(items: list[Interaction], model: Embedder, policy: ScoringPolicy, cached: bool) -> tuple[float, float]:
    """(interactions per wall second, per CPU second), behind a fresh embedding cache, as the proxy runs it."""
    embedder = CachedEmbedder(model)
    if cached:  # the documents (and their passages) are known already: embed them outside the timing
        warm = [dataclasses.replace(i, answer="warm", supporting=None) for i in items]
        assess_batch(warm, embedder, dataclasses.replace(policy, claim_level=False))
    wall, cpu = time.perf_counter(), time.process_time()
    for start in range(0, len(items), BATCH):
        assess_batch(items[start : start + BATCH], embedder, policy)
    return len(items) / (time.perf_counter() - wall), len(items) / (time.process_time() - cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None)
    parser.add_argument("--rows", type=int, default=60, help="DelucionQA answers (each scored with and without support)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    items = interactions(resolve_data_dir(args.data), args.rows)
    policy = build_policy(load_config(environ={}))
    embedders, build_s = {}, {}
    for name in EMBEDDERS:
        started = time.perf_counter()
        embedders[name] = make_embedder(name, intra_op_threads=1).inner
        build_s[name] = time.perf_counter() - started
    runs: dict[str, dict[str, dict[str, list[float]]]] = {m: {n: {"wall": [], "cpu": []} for n in EMBEDDERS} for m in ("cold", "cached")}
    for _ in range(args.rounds):
        for mode in ("cold", "cached"):
            for name in EMBEDDERS:
                wall, cpu = rate(items, embedders[name], policy, mode == "cached")
                runs[mode][name]["wall"].append(wall)
                runs[mode][name]["cpu"].append(cpu)
    summary = {}
    for mode, by_name in runs.items():
        med = {n: {k: statistics.median(v) for k, v in d.items()} for n, d in by_name.items()}
        summary[mode] = {
            "per_s": med,
            "ratio_wall": med["minilm"]["wall"] / med["minilm-fp32"]["wall"],
            "ratio_cpu": med["minilm"]["cpu"] / med["minilm-fp32"]["cpu"],
            "rounds": by_name,
        }
    if args.json:
        print(json.dumps({"interactions": len(items), "load_s": build_s, **summary}))
        return
    print(f"{len(items)} interactions (DelucionQA answers, half with a supporting content), {args.rounds} rounds, 1 onnxruntime thread")
    print("model load: " + ", ".join(f"{n} {s:.1f} s" for n, s in build_s.items()))
    for mode, s in summary.items():
        fp32, fast = s["per_s"]["minilm-fp32"], s["per_s"]["minilm"]
        print(
            f"{mode:>6}: fp32 {fp32['wall']:6.1f}/s ({fp32['cpu']:6.1f}/cpu-s)  int8 {fast['wall']:6.1f}/s ({fast['cpu']:6.1f}/cpu-s)"
            f"  int8/fp32 {s['ratio_wall']:.2f} wall, {s['ratio_cpu']:.2f} cpu"
        )


if __name__ == "__main__":
    main()
