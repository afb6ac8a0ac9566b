"""Precision and recall of recognition on the labelled corpora, overall and per layout:
- `generated`: bench/recognition_corpus.py (framework layouts rendered from their templates, non-RAG kinds);
- `independent`: bench/recognition_corpus_independent.py (the real frameworks' captured requests, and RAG and
  non-RAG requests written without consulting the generic rule);
- `holdout`: bench/recognition_corpus_holdout.py (written before any recall change was tried on `independent`,
  never used to tune a rule);
- `all`: all three together.

    .venv/bin/python bench/recognition_quality.py            # summary, per-layout reasons, every error
    .venv/bin/python bench/recognition_quality.py --summary  # the three summary lines only
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
# This checkout's ragtap, not whichever one the venv has installed (a shared venv may hold another tree's); an
# explicit PYTHONPATH wins (to measure another tree's ragtap with these bodies, e.g. before/after a change).
if not os.environ.get("PYTHONPATH"):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import recognition_corpus  # noqa: E402
import recognition_corpus_holdout  # noqa: E402
import recognition_corpus_independent  # noqa: E402

from ragtap.recognise import recognise  # noqa: E402

Item = tuple[bool, str, dict[str, Any]]


def corpora() -> dict[str, list[Item]]:
    generated, independent = recognition_corpus.corpus(), recognition_corpus_independent.corpus()
    holdout = recognition_corpus_holdout.corpus()
    return {"generated": generated, "independent": independent, "holdout": holdout,
            "all": [*generated, *independent, *holdout]}


def measure(items: Sequence[Item] | None = None) -> dict[str, object]:
    items = recognition_corpus.corpus() if items is None else items
    tp = fp = fn = 0
    per_layout: dict[str, Counter[str]] = {}
    false_positives: list[str] = []
    false_negatives: list[str] = []
    for label, layout, body in items:
        found = recognise(body)
        predicted = found.context is not None
        per_layout.setdefault(layout, Counter())[found.reason] += 1
        tp += label and predicted
        fp += (not label) and predicted
        fn += label and not predicted
        if predicted and not label:
            false_positives.append(f"{layout}: {found.reason}")
        if label and not predicted:
            false_negatives.append(f"{layout}: {found.reason}")
    return {"rag": sum(1 for i in items if i[0]), "non_rag": sum(1 for i in items if not i[0]), "tp": tp, "fp": fp,
            "fn": fn, "precision": tp / max(tp + fp, 1), "recall": tp / max(tp + fn, 1), "per_layout": per_layout,
            "false_positives": false_positives, "false_negatives": false_negatives}


def summary(name: str, m: dict[str, object]) -> str:
    return (f"{name:<12} {m['rag']:>4} RAG {m['non_rag']:>4} non-RAG  precision {m['precision']:.4f}  recall "
            f"{m['recall']:.4f}  (tp {m['tp']}, fp {m['fp']}, fn {m['fn']})")


def main() -> None:
    results = {name: measure(items) for name, items in corpora().items()}
    for name, m in results.items():
        print(summary(name, m))
    if "--summary" in sys.argv:
        return
    for name in ("generated", "independent", "holdout"):
        m = results[name]
        print(f"\n[{name}]")
        for layout, reasons in m["per_layout"].items():  # type: ignore[union-attr]
            print(f"  {layout:<52} {dict(reasons)}")
        for error in m["false_positives"]:  # type: ignore[union-attr]
            print("  FALSE POSITIVE", error)
        for error in m["false_negatives"]:  # type: ignore[union-attr]
            print("  FALSE NEGATIVE", error)


if __name__ == "__main__":
    main()
