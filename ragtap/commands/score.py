"""`ragtap score FILE.jsonl [--out OUT.jsonl]`: the proxy's scoring core, offline, over logged interactions."""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from typing import IO

import numpy as np
import orjson

from ragtap.commands.common import load_plugins, output_file, positive_int, read_interaction_file
from ragtap.config import load_config
from ragtap.records import output_record
from ragtap.types import METRICS, Interaction


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("score", help="score a JSONL file of interactions offline")
    p.add_argument("file", help="JSONL: question, documents (or retrieved), answer, supporting (optional), id")
    p.add_argument("--out", help="write one scored JSON line per interaction here (default: stdout)")
    p.add_argument("--config", help="config.toml (thresholds, embedder)")
    p.add_argument("--batch", type=positive_int, help="interactions per batch: embedded together, and what one job scores at a time (default 32)")
    p.add_argument("--jobs", type=positive_int, help="processes scoring batches in parallel (default: one per core); "
                   "the output is the same, in the same order")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def summary(verdicts: Counter[str], poor: int, scores: dict[str, list[float]], total: int, seconds: float, jobs: int = 1) -> str:
    lines = [f"scored {total} interactions in {seconds:.1f} s ({total / max(seconds, 1e-9):.0f} per second, {jobs} job{'s' * (jobs > 1)})",
             "verdicts:"]
    for verdict, count in verdicts.most_common():
        lines.append(f"  {verdict:<19} {count:>7}  {count / max(total, 1):6.1%}")
    lines.append(f"  poor_retrieval      {poor:>7}  {poor / max(total, 1):6.1%}")
    lines.append("score quantiles:      n     p10    p25    p50    p75    p90")
    for metric in METRICS:
        values = scores[metric]
        if values:
            q = np.quantile(np.asarray(values), [0.1, 0.25, 0.5, 0.75, 0.9])
            lines.append(f"  {metric.upper():<5} {len(values):>12} " + " ".join(f"{v:6.3f}" for v in q))
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from ragtap.evaluation.jobs import DEFAULT_BATCH, assess_batches, batches_of, default_jobs
    from ragtap.wiring import build_embedder, build_policy

    config = load_config(args.config)
    interactions: list[Interaction] = read_interaction_file(args.file)
    without_documents = sum(1 for interaction in interactions if not interaction.documents)
    if without_documents:
        # Not an error (a log of a proxy that saw non-RAG traffic has such lines), but easy to miss in the summary.
        print(f"ragtap: warning: {without_documents} of {len(interactions)} lines have no documents: they are "
              "`unscored` (every grounding score needs the retrieved documents)", file=sys.stderr)
    policy = build_policy(config)
    batches = batches_of(interactions, args.batch or DEFAULT_BATCH)
    jobs = max(1, min(args.jobs or default_jobs(), len(batches)))  # no more processes than batches
    out: IO[bytes] = output_file(args.out) if args.out else sys.stdout.buffer
    verdicts: Counter[str] = Counter()
    scores: dict[str, list[float]] = {m: [] for m in METRICS}
    poor = 0
    started = time.perf_counter()
    progress = None
    if not args.quiet:
        from tqdm import tqdm

        progress = tqdm(total=len(interactions), unit="interaction", file=sys.stderr)
    try:
        # One job: this process, its embedder on every core (offline: no request path to protect).
        scored = assess_batches(batches, policy, config, jobs=jobs, prepare=load_plugins, embedder=lambda: build_embedder(config, all_cores=True))
        for batch, assessments in zip(batches, scored):
            for interaction, assessment in zip(batch, assessments):
                out.write(orjson.dumps(output_record(interaction, assessment)) + b"\n")
                verdicts[assessment.verdict.value] += 1
                poor += bool(assessment.poor_retrieval)
                for metric, value in assessment.scores.as_dict().items():
                    if value is not None:
                        scores[metric].append(value)
            if progress is not None:
                progress.update(len(batch))
    finally:
        if progress is not None:
            progress.close()
        if args.out:
            out.close()
        else:
            out.flush()
    print(summary(verdicts, poor, scores, len(interactions), time.perf_counter() - started, jobs), file=sys.stderr)
    return 0
