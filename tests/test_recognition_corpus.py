"""Precision and recall of recognition on the labelled corpus (bench/recognition_corpus.py): precision >= 0.99 is
the bar (a false positive changes what the model is asked to write), and every framework layout is recognised."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from recognition_quality import measure  # noqa: E402

from recognition_corpus import RAG_LAYOUTS  # noqa: E402


def test_precision_and_recall_on_the_labelled_corpus() -> None:
    m = measure()
    assert m["rag"] >= 200 and m["non_rag"] >= 200
    assert m["precision"] >= 0.99, m["false_positives"]
    for layout in RAG_LAYOUTS:
        reasons = m["per_layout"][layout]
        assert not {"no_context", "no_question"} & set(reasons), (layout, reasons)
