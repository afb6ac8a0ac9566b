"""`ragtap experiment delucionqa` end to end through the CLI, on a cut of the real DelucionQA splits (fit on a
train cut under a WikiEval constraint, report on a dev cut), and the fitting arithmetic on hand-made claims."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from ragtap import cli
from ragtap.evaluation.datasets import DatasetError
from ragtap.evaluation.experiments.delucionqa import _ClaimTable, fit_claim_thresholds, load_split, macro_f1
from ragtap.scoring.claims import ClaimThresholds
from ragtap.types import Assessment, ClaimOutcome, ClaimSupport, Scores, Verdict

from conftest import use_embedder

SHARED = Path(os.environ.get("RAGTAP_DATA", str(Path(__file__).resolve().parents[1] / ".." / "shared" / "data")))
needs_data = pytest.mark.skipif(not (SHARED / "delucionqa" / "dev.jsonl").is_file(), reason="shared DelucionQA data not present")


def cut(source: Path, target: Path, n: int) -> Path:
    lines = source.read_text(encoding="utf-8").splitlines()[:n]
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return target


@needs_data
def test_experiment_fits_on_train_and_reports_dev_through_the_cli(tmp_path: Path, embedder, monkeypatch: pytest.MonkeyPatch, capsys) -> None:  # type: ignore[no-untyped-def]
    use_embedder(monkeypatch, embedder)
    train = cut(SHARED / "delucionqa" / "train.jsonl", tmp_path / "train.jsonl", 60)
    dev = cut(SHARED / "delucionqa" / "dev.jsonl", tmp_path / "dev.jsonl", 40)
    wiki = cut(SHARED / "wikieval" / "wikieval.jsonl", tmp_path / "wikieval.jsonl", 12)
    out = tmp_path / "out"
    assert cli.main(["experiment", "delucionqa", str(dev), "--fit", str(train), "--wikieval", str(wiki), "--wikieval-min", "0.5",
                     "--out", str(out), "--quiet"]) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["rows"] == 40 and report["fit"] == str(train)
    assert report["wikieval_agreement"] >= 0.5
    rows = [json.loads(line) for line in (out / "rows.jsonl").read_text().splitlines()]
    assert len(rows) == 40 and all({"hallucinated", "verdict", "claims"} <= set(r) for r in rows)
    # The report's figures are what its own rows say, recomputed here independently (scikit-learn).
    from sklearn.metrics import f1_score, roc_auc_score

    gold = [r["hallucinated"] for r in rows]
    flagged = [r["verdict"] in ("parametric", "unsupported_answer", "refusal") for r in rows]
    assert 0 < sum(gold) < len(gold)  # both classes in the cut, so the figures below mean something
    assert report["verdict"]["macro_f1"] == pytest.approx(f1_score(gold, flagged, average="macro", zero_division=0.0))
    assert report["auroc"]["answer_length"] == pytest.approx(roc_auc_score(gold, [len(r["answer"] or "") for r in rows]))
    assert report["verdicts"] == {v: sum(r["verdict"] == v for r in rows) for v in {r["verdict"] for r in rows}}
    # the gold sentence labels line up with ragtap's claims for most sentences (same splitting of the answers)
    golds = [c["gold"] for r in rows for c in r["claims"]]
    assert sum(g is not None for g in golds) > 0.6 * len(golds)
    assert "ragtap verdict" in capsys.readouterr().out


def test_a_bad_line_is_one_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "q", "answer": "a"}\n')
    with pytest.raises(DatasetError, match=r"bad.jsonl:1: not a DelucionQA line"):
        load_split(bad)


def claim(lexical: float, similarity: float, reason: str = "no_evidence") -> ClaimSupport:
    return ClaimSupport("answer", "x y", 0, 3, ClaimOutcome.NOT_FOUND, reason, similarity, 0, 0, 3, lexical, (), ())


def assessment(*claims: ClaimSupport, verdict: Verdict = Verdict.UNSUPPORTED_ANSWER) -> Assessment:
    return Assessment(Scores(qa=0.5, ard=0.5, qrd=0.5), {}, verdict, False, "", None, claims)


def test_fit_finds_the_cut_that_separates_hand_made_answers() -> None:
    # hallucinated answers have one claim with little lexical support; the others are well supported
    fit = [assessment(claim(0.9, 0.6), claim(0.2, 0.4)), assessment(claim(0.8, 0.5), claim(0.25, 0.3)),
           assessment(claim(0.9, 0.7), claim(0.7, 0.5)), assessment(claim(0.6, 0.5))]
    y = [True, True, False, False]
    thresholds, info = fit_claim_thresholds(y, fit, ClaimThresholds())
    assert info["fit_macro_f1"] == 1.0
    assert list(_ClaimTable.of(fit).flagged(thresholds)) == y
    # a claim flagged by a missing number stays flagged whatever the thresholds
    assert _ClaimTable.of([assessment(claim(1.0, 1.0, "number_missing"))]).flagged(ClaimThresholds(lexical_alone=0.0))[0]


def test_macro_f1_is_the_mean_of_both_classes() -> None:
    y, flagged = [True, True, False, False], [True, False, False, False]
    # positive: P 1, R .5 -> F1 .667; negative: P .667, R 1 -> F1 .8
    assert macro_f1(y, flagged) == pytest.approx((2 / 3 + 0.8) / 2)
    assert np.isclose(macro_f1([True, False], [True, False]), 1.0)


@needs_data
def test_jobs_2_reports_what_jobs_1_reports(tmp_path: Path, embedder, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """The experiment's `--jobs`: 70 rows are two batches, scored by two forked processes, with the same rows and
    figures as one job (fails on the previous code: no --jobs option)."""
    use_embedder(monkeypatch, embedder)
    dev = cut(SHARED / "delucionqa" / "dev.jsonl", tmp_path / "dev.jsonl", 70)
    outputs = {}
    for jobs in (1, 2):
        out = tmp_path / f"out-{jobs}"
        assert cli.main(["experiment", "delucionqa", str(dev), "--out", str(out), "--quiet", "--jobs", str(jobs)]) == 0
        outputs[jobs] = ((out / "rows.jsonl").read_text(), json.loads((out / "report.json").read_text()))
    assert outputs[2][0] == outputs[1][0] and outputs[1][0].count("\n") == 70
    assert outputs[2][1]["verdict"] == outputs[1][1]["verdict"] and outputs[2][1]["auroc"] == outputs[1][1]["auroc"]
