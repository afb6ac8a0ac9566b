"""What QRD's windows cost: scoring throughput with and without them, measured side by side in one run.

    taskset -c 1 .venv/bin/python bench/qrd_windows.py [--data DIR] [--rows N] [--rounds R] [--json]

QRD compares the question with the passages of the documents and then with windows of 12 words (6 apart) inside
the passage closest to it (pipeline/batch.py): at most one passage's windows per interaction, embedded in a second
call.  Two policies over the same interactions, in alternating rounds so that machine noise hits both alike:
before = `qrd_window_words = 0` (whole passages only, the path before issue 21), after = the default policy.

Two sets of interactions:
- "bench rows": those of bench/scoring.py (a question, 3 documents of ~26 words, a one-sentence answer and
  support): the rows the scoring-capacity target is set on;
- "long documents": real DelucionQA questions and answers with their retrieved documents (~180 words each, so
  the closest passage is a long one), half of them with a two-sentence supporting content.

"cold": a fresh embedding cache per round, every text embedded; "cached": the documents (and QRD's windows of
them) embedded beforehand, the usual RAG case.  One onnxruntime thread, as the proxy runs its embedder.  Rates
are interactions per CPU second of this process (robust to other processes on a shared machine; on a quiet
core they equal wall-clock rates), medians of the rounds.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from claims import interactions as delucionqa_interactions  # noqa: E402
from scoring import Texts  # noqa: E402

from ragtap.config import load_config  # noqa: E402
from ragtap.embedding.factory import make_embedder  # noqa: E402
from ragtap.pipeline.batch import ScoringPolicy, assess_batch  # noqa: E402
from ragtap.types import Interaction  # noqa: E402
from ragtap.wiring import build_policy  # noqa: E402

BATCH = 16  # the proxy's micro-batch


def bench_rows(n: int) -> list[Interaction]:
    texts = Texts(seed=7)
    return [texts.interaction(cached=False) for _ in range(n)]


def rate(items: list[Interaction], policy: ScoringPolicy, cached: bool) -> float:
    embedder = make_embedder("minilm", intra_op_threads=1)
    if cached:  # the documents, their passages and QRD's windows are known already: embed them outside the timing
        assess_batch([dataclasses.replace(i, answer=None, supporting=None) for i in items], embedder, dataclasses.replace(policy, claim_level=False))
    started = time.process_time()
    for start in range(0, len(items), BATCH):
        assess_batch(items[start : start + BATCH], embedder, policy)
    return len(items) / (time.process_time() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=os.environ.get("RAGTAP_DATA", str(Path(__file__).resolve().parents[2] / "shared" / "data")))
    parser.add_argument("--rows", type=int, default=40, help="DelucionQA answers (each with and without support); bench rows: 3x as many")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    sets = {"bench rows": bench_rows(3 * args.rows), "long documents": delucionqa_interactions(Path(args.data), args.rows)}
    after = build_policy(load_config(environ={}))
    before = dataclasses.replace(after, qrd_window_words=0)
    results: dict[str, dict[str, list[float]]] = {f"{s}, {m}": {"before": [], "after": []} for s in sets for m in ("cold", "cached")}
    for _ in range(args.rounds):
        for set_name, items in sets.items():
            for mode in ("cold", "cached"):
                for name, policy in (("before", before), ("after", after)):
                    results[f"{set_name}, {mode}"][name].append(rate(items, policy, mode == "cached"))
    summary = {
        key: {"before_per_cpu_s": statistics.median(v["before"]), "after_per_cpu_s": statistics.median(v["after"]),
              "ratio": statistics.median(v["after"]) / statistics.median(v["before"]), "rounds": v}
        for key, v in results.items()
    }
    if args.json:
        print(json.dumps({"interactions": {k: len(v) for k, v in sets.items()}, "load_average": os.getloadavg()[0], **summary}))
        return
    print(f"{', '.join(f'{len(v)} {k}' for k, v in sets.items())}; {args.rounds} rounds, 1 thread; load average {os.getloadavg()[0]:.1f}")
    for key, s in summary.items():
        print(f"{key:>24}: before {s['before_per_cpu_s']:6.1f}/s  after {s['after_per_cpu_s']:6.1f}/s  after/before {s['ratio']:.2f}  (per CPU second)")


if __name__ == "__main__":
    main()
