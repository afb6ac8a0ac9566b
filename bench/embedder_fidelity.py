"""Fidelity of the default (int8) MiniLM to the fp32 reference on the shared data: mean cosine of every text the
scoring pipeline embeds, and verdict agreement of the whole pipeline (the default scoring policy).

    .venv/bin/python bench/embedder_fidelity.py [--data DIR] [--squad N] [--json]

Gates (issue 16): mean cosine >= 0.99 and verdict agreement >= 99%.  Speed plays no part here, so
onnxruntime may use every core.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ragtap.config import load_config  # noqa: E402
from ragtap.embedding.factory import make_embedder  # noqa: E402
from ragtap.evaluation.datasets import resolve_data_dir  # noqa: E402
from ragtap.evaluation.fidelity import compare, report_json, shared_interactions  # noqa: E402
from ragtap.wiring import build_policy  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None, help="the shared data directory (default: RAGTAP_DATA or ../shared/data)")
    parser.add_argument("--squad", type=int, default=150, help="SQuAD 2.0 dev questions")
    parser.add_argument("--candidate", default="minilm")
    parser.add_argument("--reference", default="minilm-fp32")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    threads = os.cpu_count() or 1
    policy = build_policy(load_config(environ={}))
    labelled = shared_interactions(resolve_data_dir(args.data), squad=args.squad)
    report = compare(make_embedder(args.reference, intra_op_threads=threads), make_embedder(args.candidate, intra_op_threads=threads), labelled, policy)
    if args.json:
        print(report_json(report))
        return
    print(f"{report.interactions} interactions, {report.texts} distinct texts; {args.candidate} vs {args.reference}")
    print(f"cosine: mean {report.mean_cosine:.4f}, 1st percentile {report.p1_cosine:.4f}, min {report.min_cosine:.4f}")
    print(f"verdict agreement: {report.verdict_agreement:.2%}")
    for source, (agree, total) in report.by_source.items():
        print(f"  {source:>10}: {agree}/{total}")
    for d in report.disagreements:
        print(f"  differs ({d.source}): {d.reference} -> {d.candidate}: {d.question[:90]}")


if __name__ == "__main__":
    main()
