"""`ragtap experiment guard` end to end through the CLI, on small hand-made files in the three datasets' formats:
a faithful answer (copied from its document) is altered by no action, one with an invented sentence is altered by
strip, block, retry and the stream's sentence check, and annotate alters nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragtap import cli

from conftest import use_embedder

DOC = ("The wheel nuts are tightened to 120 Nm with a torque wrench. Tighten them in a star pattern. "
       "Check the tyre pressure once a month when the tyres are cold.")
FAITHFUL = "The wheel nuts are tightened to 120 Nm with a torque wrench. Tighten them in a star pattern."
INVENTED = FAITHFUL + " The car was designed by Alice Zhang in Paris in 1987."


def _line(i: int, answer: str, hallucinated: bool) -> str:
    return json.dumps({"id": str(i), "question": "How are the wheel nuts tightened?", "documents": [{"id": "d", "text": DOC}],
                       "answer": answer, "hallucinated": hallucinated})


def test_the_guard_experiment_counts_false_alarms_and_catches(tmp_path: Path, embedder, monkeypatch: pytest.MonkeyPatch, capsys) -> None:  # type: ignore[no-untyped-def]
    use_embedder(monkeypatch, embedder)
    for folder, name in (("delucionqa", "dev.jsonl"), ("ragtruth_summary", "ragtruth_summary.jsonl")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / name).write_text(_line(1, FAITHFUL, False) + "\n" + _line(2, INVENTED, True) + "\n", encoding="utf-8")
    (tmp_path / "wikieval").mkdir()
    (tmp_path / "wikieval" / "wikieval.jsonl").write_text(json.dumps({
        "question": "Question: How are the wheel nuts tightened?", "context_v1": json.dumps([DOC]), "answer": "Answer: " + FAITHFUL,
        "ungrounded_answer": "Answer: " + INVENTED, "poor_answer": "Answer: Somehow."}) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    assert cli.main(["experiment", "guard", "--data", str(tmp_path), "--out", str(out), "--quiet"]) == 0
    report = json.loads((out / "report.json").read_text())
    assert set(report["datasets"]) == {"delucionqa_dev", "ragtruth_summary", "wikieval"}
    for name, d in report["datasets"].items():
        assert (d["faithful"], d["hallucinated"]) == (1, 1), name
        assert d["faithful_altered"] == {a: 0.0 for a in ("strip", "block", "retry", "stream_strip", "stream_block", "annotate")}, name
        assert d["hallucinated_altered"] == {"strip": 1.0, "block": 1.0, "retry": 1.0, "stream_strip": 1.0, "stream_block": 1.0,
                                             "annotate": 0.0}, name
    assert "| delucionqa_dev | 1 | faithful (false alarms) | 0.0% |" in (out / "report.md").read_text()
    # Only contradictions as the trigger: the invented sentence (not found, not contradicted) is left alone.
    assert cli.main(["experiment", "guard", "--data", str(tmp_path), "--datasets", "wikieval", "--verdicts", "contradicted",
                     "--out", str(out), "--quiet"]) == 0
    only = json.loads((out / "report.json").read_text())
    assert only["verdicts"] == ["contradicted"] and set(only["datasets"]["wikieval"]["hallucinated_altered"].values()) == {0.0}
    assert cli.main(["experiment", "guard", "--data", str(tmp_path), "--datasets", "nope"]) == 2
    assert "--datasets: expected names among" in capsys.readouterr().err
