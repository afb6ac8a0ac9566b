"""Precision and recall of recognition on the labelled corpus (bench/recognition_corpus.py), overall and per layout.

    .venv/bin/python bench/recognition_quality.py
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from recognition_corpus import corpus  # noqa: E402

from ragtap.recognise import recognise  # noqa: E402


def measure() -> dict[str, object]:
    items = corpus()
    tp = fp = fn = 0
    per_layout: dict[str, Counter[str]] = {}
    false_positives: list[str] = []
    for label, layout, body in items:
        found = recognise(body)
        predicted = found.context is not None
        per_layout.setdefault(layout, Counter())[found.reason] += 1
        tp += label and predicted
        fp += (not label) and predicted
        fn += label and not predicted
        if predicted and not label:
            false_positives.append(f"{layout}: {found.reason}")
    return {"rag": sum(1 for i in items if i[0]), "non_rag": sum(1 for i in items if not i[0]), "tp": tp, "fp": fp,
            "fn": fn, "precision": tp / max(tp + fp, 1), "recall": tp / max(tp + fn, 1), "per_layout": per_layout,
            "false_positives": false_positives}


def main() -> None:
    m = measure()
    print(f"corpus: {m['rag']} RAG, {m['non_rag']} non-RAG requests")
    print(f"precision {m['precision']:.4f}  recall {m['recall']:.4f}  (tp {m['tp']}, fp {m['fp']}, fn {m['fn']})")
    for layout, reasons in m["per_layout"].items():  # type: ignore[union-attr]
        print(f"  {layout:<36} {dict(reasons)}")
    for fp in m["false_positives"]:  # type: ignore[union-attr]
        print("  FALSE POSITIVE", fp)


if __name__ == "__main__":
    main()
