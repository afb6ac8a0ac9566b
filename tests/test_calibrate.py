"""`ragtap calibrate`: thresholds from labelled scores, the held-out check, the logistic model, absent metrics,
labels, and the config fragment it writes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ragtap.config import Config, load_config
from ragtap.evaluation.calibration import CalibrationError, LabelledScores, calibrate, parse_label, read_labelled, toml_fragment

ALL = ("sdq", "sdrd", "sda", "qrd", "qa", "ard")


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def synthetic(n: int = 400, seed: int = 0) -> LabelledScores:
    """Poor interactions have lower SDRD and SDA (SDQ and QA are noise); 10% of rows lack primary scores."""
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.35
    scores = []
    for poor in y:
        s = {
            "sdq": float(rng.normal(0.6, 0.1)),
            "sdrd": float(rng.normal(0.45 if poor else 0.75, 0.1)),
            "sda": float(rng.normal(0.5 if poor else 0.7, 0.1)),
            "qrd": float(rng.normal(0.5 if poor else 0.6, 0.1)),
            "qa": float(rng.normal(0.6, 0.1)),
            "ard": None,
        }
        if rng.random() < 0.1:
            s.update(sdq=None, sdrd=None, sda=None)
        scores.append(s)
    return LabelledScores(y, scores)


def test_thresholds_by_hand_without_holdout() -> None:
    # the fixture of test_evaluation_stats: the F1-best "flag when qrd < t" is t = 0.6
    data = LabelledScores(np.array([True, True, False, True, False, False]), [{"qrd": v} for v in (0.2, 0.5, 0.5, 0.5, 0.7, 0.9)])
    result = calibrate(data, objective="f1", holdout=0.0)
    assert result.thresholds == {"qrd": 0.6}
    assert result.absent == ["sdq", "sdrd", "sda", "qa", "ard"]
    assert result.single["qrd"].train.f1 == pytest.approx(6 / 7)
    fragment = toml_fragment(result)
    assert "[thresholds]\nqrd = 0.600" in fragment
    assert "not in the data, so not set here: sdq, sdrd, sda, qa, ard" in fragment
    # recall target: the lowest threshold that catches every positive is still 0.6; F2 agrees
    assert calibrate(data, objective="recall", target_recall=1.0, holdout=0.0).thresholds == {"qrd": 0.6}
    assert calibrate(data, objective="f2", holdout=0.0).thresholds["qrd"] == pytest.approx(0.6)


def test_calibrate_generalises_on_held_out_and_compares_the_logistic_model() -> None:
    result = calibrate(synthetic(), objective="f1", holdout=0.3, seed=1)
    assert result.n_test == pytest.approx(0.3 * result.n, abs=2)
    assert set(result.thresholds) == {"sdq", "sdrd", "sda", "qrd", "qa"}  # ARD is absent
    assert result.absent == ["ard"]
    # SDRD separates the classes (means .45 / .75): its threshold sits between them and holds up on held-out data
    assert 0.5 < result.single["sdrd"].thresholds["sdrd"] < 0.7
    assert result.single["sdrd"].test is not None and result.single["sdrd"].test.f1 > 0.7
    assert result.single["sdrd"].test_auc > 0.85
    assert result.single["qa"].test_auc < 0.65  # noise
    rule = result.rules["primary (per-metric thresholds)"]
    assert rule.train.f1 >= result.rules["primary (one threshold, thesis)"].train.f1 - 1e-9 or rule.test is not None
    comparison = result.comparison()
    assert comparison["available"] is True
    assert set(comparison) >= {"logistic_test_f1", "logistic_test_auc", "beats_on_f1", "beats_on_auc"}
    assert result.logistic is not None and result.logistic.test_auc > 0.85
    assert result.logistic_model is not None and "ard" not in result.logistic_model.features
    # the primary thresholds written are the jointly fitted ones
    for metric in ("sdq", "sdrd", "sda"):
        assert result.thresholds[metric] == pytest.approx(rule.thresholds[metric], abs=5e-4)
    json.dumps(result.as_dict())  # serialisable


def test_recall_objective_reaches_the_target_on_training() -> None:
    result = calibrate(synthetic(seed=2), objective="recall", target_recall=0.9, holdout=0.3, seed=0)
    for metric, ev in result.single.items():
        assert ev.train.recall >= 0.9, metric
    assert result.rules["primary (per-metric thresholds)"].train.recall >= 0.9


def test_labels() -> None:
    assert parse_label(True) is True and parse_label(0) is False and parse_label(2.5) is True
    assert parse_label("yes") is True and parse_label("No") is False and parse_label(None) is None
    assert parse_label("grounded", negatives=["grounded"]) is False
    assert parse_label("parametric", negatives=["grounded"]) is True
    assert parse_label("bad", positives=["bad"], negatives=["good"]) is True
    with pytest.raises(CalibrationError, match="--positive or --negative"):
        parse_label("maybe")
    with pytest.raises(CalibrationError, match="neither"):
        parse_label("other", positives=["bad"], negatives=["good"])


def test_read_labelled_checks_its_input(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "s.jsonl", [
        {"label": True, "scores": {"qrd": 0.3}},
        {"label": False, "scores": {"qrd": 0.8, "sdq": None}},
        {"scores": {"qrd": 0.5}},  # no label: skipped and counted
        {"meta": {"poor": 1}, "label": "no", "scores": {"qrd": 0.9}},
    ])
    data = read_labelled(path, "label")
    assert data.y.tolist() == [True, False, False] and data.unlabelled == 1
    assert read_labelled(path, "meta.poor").y.tolist() == [True]
    write_jsonl(tmp_path / "u.jsonl", [{"label": True, "question": "q", "documents": ["d"], "answer": "a"}])
    with pytest.raises(CalibrationError, match="no 'scores' object; score them first"):
        read_labelled(tmp_path / "u.jsonl", "label")
    filled = read_labelled(tmp_path / "u.jsonl", "label", scorer=lambda rows: [{"qrd": 0.42} for _ in rows])
    assert filled.scores == [{"qrd": 0.42}] and filled.scored_here == 1
    write_jsonl(tmp_path / "bad.jsonl", [{"label": True, "scores": {"qrd": "high"}}])
    with pytest.raises(CalibrationError, match=r"bad.jsonl:1: scores.qrd must be a number"):
        read_labelled(tmp_path / "bad.jsonl", "label")
    with pytest.raises(CalibrationError, match="one class only"):
        calibrate(LabelledScores(np.array([True, True]), [{"qrd": 0.1}, {"qrd": 0.2}]))


def test_cli_writes_a_fragment_load_config_accepts(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    from ragtap import cli

    data = synthetic(200, seed=3)
    rows = [{"id": i, "poor": bool(p), "scores": s} for i, (p, s) in enumerate(zip(data.y, data.scores))]
    path = write_jsonl(tmp_path / "scored.jsonl", rows)
    out = tmp_path / "thresholds.toml"
    assert cli.main(["calibrate", str(path), "--label", "poor", "--objective", "f2", "--write", str(out), "--json", str(tmp_path / "r.json")]) == 0
    printed = capsys.readouterr().out
    assert "logistic regression" in printed and "held-out" in printed
    config = load_config(out)
    written = json.loads((tmp_path / "r.json").read_text())["thresholds"]
    assert config.thresholds.sdrd == pytest.approx(written["sdrd"])
    assert config.thresholds.ard == Config().thresholds.ard  # absent: the default stays


@pytest.mark.slow
def test_cli_on_the_thesis_examples_scores_them_first(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """The shipped examples carry no scores and a text label: ragtap scores them (MiniLM) and calibrates."""
    from ragtap import cli

    examples = Path(__file__).resolve().parents[1] / "ragtap" / "demo" / "thesis_examples.jsonl"
    out = tmp_path / "t.toml"
    assert cli.main(["calibrate", str(examples), "--label", "reading", "--negative", "grounded", "--write", str(out)]) == 0
    captured = capsys.readouterr()
    assert "scoring 5 lines" in captured.err
    assert "5 labelled interactions, 4 positive" in captured.out
    config = load_config(out)
    assert set(ALL) >= {line.split(" = ")[0] for line in out.read_text().splitlines() if " = " in line}
    assert isinstance(config.thresholds.sdq, float)
