"""`ragtap experiment ragtruth` / `faithbench` end to end through the CLI, on hand-made labelled answers of two
"generators" in the shared format (spans with offsets into the answer, `meta.generator`), and the arithmetic of
balanced accuracy on its own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragtap import cli
from ragtap.evaluation.datasets import DatasetError
from ragtap.evaluation.experiments.labelled import balanced, load_labelled

from conftest import use_embedder
from test_contradictions import CAR_MANUAL, DATABASE

ANSWERS = [
    # (generator, document, answer, hallucinated span text or None, span label)
    ("model-a", CAR_MANUAL, "Check the tire pressure when the tires are cold. The engine oil capacity is 4.5 liters.", None, None),
    ("model-a", CAR_MANUAL, "The standard warranty covers 8 years.", "8 years", "Evident Conflict"),
    ("model-a", DATABASE, "Storage can be increased at any time but it cannot be decreased.", None, None),
    ("model-b", DATABASE, "Point-in-time recovery is available on the Basic plan.", "is available", "Evident Conflict"),
    ("model-b", DATABASE, "Each instance supports at most 500 concurrent connections. Backups are encrypted with AES-256 keys "
                          "stored in a hardware security module.", "Backups are encrypted", "Evident Baseless Info"),
    ("model-b", CAR_MANUAL, "Do not use the cruise control on icy or snow-covered roads.", None, None),
]


def write(path: Path, label_field: str = "hallucinated") -> Path:
    lines = []
    for n, (generator, document, answer, span, kind) in enumerate(ANSWERS):
        spans = [] if span is None else [{"start": answer.index(span), "end": answer.index(span) + len(span), "text": span, "label_type": kind}]
        lines.append(json.dumps({"id": f"r{n}", "question": "Summarize the document.", "documents": [{"title": "doc", "text": document}],
                                 "answer": answer, label_field: span is not None, "spans": spans, "meta": {"generator": generator}}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_ragtruth_reports_balanced_accuracy_per_generator_through_the_cli(tmp_path: Path, embedder, monkeypatch: pytest.MonkeyPatch, capsys) -> None:  # type: ignore[no-untyped-def]
    use_embedder(monkeypatch, embedder)
    data, out = write(tmp_path / "answers.jsonl"), tmp_path / "out"
    assert cli.main(["experiment", "ragtruth", str(data), "--out", str(out), "--quiet"]) == 0
    report = json.loads((out / "report.json").read_text())
    rows = [json.loads(line) for line in (out / "rows.jsonl").read_text().splitlines()]
    flagged = [r["verdict"] in ("parametric", "unsupported_answer", "refusal") for r in rows]
    # the hand-made answers: every hallucinated one flagged (two contradicted, one with added content), no clean one
    assert flagged == [False, True, False, True, True, False], [(r["verdict"], r["claims"]) for r in rows]
    assert report["pooled"]["balanced_accuracy"] == 1.0 and report["pooled"]["clean_flagged"] == 0.0
    assert set(report["generators"]) == {"model-a", "model-b"} and report["mean_within_generator"] == 1.0
    assert report["recall_by_span_kind"] == {"conflict": {"answers": 2, "flagged": 2}, "added": {"answers": 1, "flagged": 1}}
    claims = report["claims"]
    assert claims["hallucinated_spans"] == 3 and claims["spans_in_a_rejected_claim"] == 3 and claims["spans_in_a_contradicted_claim"] == 2
    assert claims["clean_answers_claims_not_found"] == 0 and claims["clean_answers_claims_contradicted"] == 0
    assert "| **pooled** | 6 | 3 | **1.000** |" in capsys.readouterr().out


def test_faithbench_takes_its_own_label_and_drops_questionable_rows(tmp_path: Path) -> None:
    path = write(tmp_path / "fb.jsonl", label_field="hallucinated_unwanted_only")
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    lines[0]["worst_label"] = "questionable"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    rows = load_labelled(path, "hallucinated_unwanted_only", ("questionable",))
    assert [r.id for r in rows] == ["r1", "r2", "r3", "r4", "r5"] and [r.generator for r in rows][:2] == ["model-a", "model-a"]
    assert rows[0].spans[0].kind == "conflict" and rows[3].spans[0].kind == "added"
    with pytest.raises(DatasetError, match="hallucinated"):  # the default label is absent from FaithBench lines
        load_labelled(path)


def test_balanced_accuracy_does_not_move_with_the_share_of_hallucinated_answers() -> None:
    few = balanced([True] + [False] * 9, [True] + [True] + [False] * 8)  # 1 of 1 caught, 1 of 9 clean flagged
    many = balanced([True] * 9 + [False], [True] * 9 + [False])
    assert few["balanced_accuracy"] == pytest.approx((1.0 + 8 / 9) / 2) and few["precision"] == 0.5
    assert many["balanced_accuracy"] == 1.0
    lone = balanced([False, False], [True, False])  # no hallucinated answer: recall undefined, so is the mean
    assert lone["balanced_accuracy"] != lone["balanced_accuracy"] and lone["clean_flagged"] == 0.5
