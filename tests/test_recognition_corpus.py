"""Precision and recall of recognition on the labelled corpora (bench/recognition_corpus.py, generated with the
rules; bench/recognition_corpus_independent.py, written without consulting the generic rule and the real
frameworks' captured requests): precision >= 0.99 is the bar on each (a false positive changes what the model is
asked to write), every generated framework layout and every captured framework RAG request is recognised."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from recognition_quality import corpora, measure  # noqa: E402

from recognition_corpus import RAG_LAYOUTS  # noqa: E402
from recognition_corpus_independent import captured, written_non_rag, written_rag  # noqa: E402

from ragtap.recognise import recognise  # noqa: E402


def test_precision_and_recall_on_the_labelled_corpus() -> None:
    m = measure()
    assert m["rag"] >= 200 and m["non_rag"] >= 200
    assert m["precision"] >= 0.99, m["false_positives"]
    for layout in RAG_LAYOUTS:
        reasons = m["per_layout"][layout]
        assert not {"no_context", "no_question"} & set(reasons), (layout, reasons)


def test_precision_on_the_independent_corpus() -> None:
    assert len(written_rag()) >= 40 and len(written_non_rag()) >= 40
    for name, items in corpora().items():
        m = measure(items)
        assert m["precision"] >= 0.99, (name, m["false_positives"])


def test_every_captured_framework_request_is_labelled_and_recognised_as_labelled() -> None:
    """What the real frameworks sent: the answering calls are recognised, the tool-choosing, grading and
    rewriting calls are not (skipped until the fixtures exist)."""
    items = captured()
    if not items:
        import pytest
        pytest.skip("no framework fixtures captured yet")
    wrong = [(kind, recognise(body).reason) for label, kind, body in items if (recognise(body).context is not None) != label]
    assert not wrong


def test_an_answer_to_judge_under_the_context_is_not_rag() -> None:
    """LLM-as-judge / faithfulness prompts carry a context and a yes/no question about a given answer: not a RAG
    answer (failed on the previous generic rule: recognised, 3 "passages" including the judged answer)."""
    body = {"messages": [{"role": "user", "content": (
        "You will judge whether an answer is faithful to its context.\n\nContext:\nThe museum opens at 10:00 on "
        "weekdays.\n\nIt is closed on Mondays, including public holidays.\n\nAnswer:\nThe museum opens at 9:00 every "
        "day.\n\nIs every claim in the answer supported by the context? Reply yes or no.")}]}
    assert recognise(body).reason == "no_context"
    context = "\n\nContext:\nThe museum opens at 10:00 on weekdays.\n\nIt is closed on Mondays, including public holidays."
    rag = {"messages": [{"role": "user", "content": "Use the following context:" + context + "\n\nWhen does it open?"}]}
    assert recognise(rag).reason == "generic"  # the same context with a question and no answer to judge


def test_json_pasted_as_data_is_not_passages() -> None:
    """'Given the following documents: {json} {json} Which one is valid JSON?' is a task on pasted data (the held-out
    corpus's one false positive; failed on the previous generic rule).  Prose passages under the same lead-in are."""
    objects = '{"name": "Ana", "age": 31,}\n\n{"name": "Ana", "age": 31}'
    body = {"messages": [{"role": "user", "content": f"Given the following documents:\n\n{objects}\n\nWhich one is valid JSON?"}]}
    assert recognise(body).reason == "no_context"
    prose = "Ana joined the company in 2019 as an analyst.\n\nAna has led the data team since 2023."
    rag = {"messages": [{"role": "user", "content": f"Given the following documents:\n\n{prose}\n\nWhen did Ana join?"}]}
    assert recognise(rag).reason == "generic"
