"""What claim-level grounding costs: scoring throughput with and without it, measured side by side in one run.

    taskset -c 1 .venv/bin/python bench/claims.py [--data DIR] [--rows N] [--rounds R] [--json]

Interactions: real DelucionQA answers (multi-sentence ChatGPT answers, ~4 claims each, documents of ~180 words),
without supporting content, and the same with a supporting content made of the answer's first two sentences.
Two policies over the same interactions, in alternating rounds so that machine noise hits both alike:

- before: whole-text scores only (`claim_level = false`) and documents embedded whole (no passages): the
  scoring path as it was before issue 12;
- after: the default policy (passages + claims of the answer and of the support).

"cold": a fresh embedding cache per round, so every text is embedded; "cached": the documents are embedded
beforehand (the usual RAG case: the same chunks are retrieved again and again).  One onnxruntime thread, as
the proxy runs its embedder.  Reported: interactions per second (median of the rounds) and after/before.
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ragtap.config import load_config  # noqa: E402
from ragtap.embedding.factory import make_embedder  # noqa: E402
from ragtap.pipeline.batch import ScoringPolicy, assess_batch  # noqa: E402
from ragtap.scoring.sentences import split_sentences  # noqa: E402
from ragtap.types import Document, Interaction  # noqa: E402
from ragtap.wiring import build_policy  # noqa: E402

BATCH = 16  # the proxy's micro-batch


def interactions(data: Path, rows: int) -> list[Interaction]:
    out = []
    with open(data / "delucionqa" / "train.jsonl", encoding="utf-8") as handle:
        for line in list(handle)[:rows]:
            r = json.loads(line)
            docs = tuple(Document(d["text"]) for d in r["documents"])
            support = " ".join(split_sentences(r["answer"])[:2])
            out.append(Interaction(question=r["question"], documents=docs, answer=r["answer"]))
            out.append(Interaction(question=r["question"], documents=docs, answer=r["answer"], supporting=support))
    return out


def rate(items: list[Interaction], policy: ScoringPolicy, cached: bool) -> float:
    embedder = make_embedder("minilm", intra_op_threads=1)
    if cached:  # the documents (and their passages) are known already: embed them outside the timing
        assess_batch([dataclasses.replace(i, answer="warm", supporting=None) for i in items], embedder, dataclasses.replace(policy, claim_level=False))
    started = time.perf_counter()
    for start in range(0, len(items), BATCH):
        assess_batch(items[start : start + BATCH], embedder, policy)
    return len(items) / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=os.environ.get("RAGTAP_DATA", str(Path(__file__).resolve().parents[2] / "shared" / "data")))
    parser.add_argument("--rows", type=int, default=60, help="DelucionQA answers (each scored with and without support)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    items = interactions(Path(args.data), args.rows)
    after = build_policy(load_config(environ={}))
    before = dataclasses.replace(after, claim_level=False, passage_words=10**9)
    results: dict[str, dict[str, list[float]]] = {mode: {"before": [], "after": []} for mode in ("cold", "cached")}
    for _ in range(args.rounds):
        for mode in ("cold", "cached"):
            for name, policy in (("before", before), ("after", after)):
                results[mode][name].append(rate(items, policy, mode == "cached"))
    summary = {
        mode: {"before_per_s": statistics.median(v["before"]), "after_per_s": statistics.median(v["after"]),
               "ratio": statistics.median(v["after"]) / statistics.median(v["before"]), "rounds": v}
        for mode, v in results.items()
    }
    if args.json:
        print(json.dumps({"interactions": len(items), **summary}))
        return
    print(f"{len(items)} interactions (DelucionQA answers, half with a supporting content), {args.rounds} rounds, 1 thread")
    for mode, s in summary.items():
        print(f"{mode:>6}: before {s['before_per_s']:6.1f}/s  after {s['after_per_s']:6.1f}/s  after/before {s['ratio']:.2f}")


if __name__ == "__main__":
    main()
