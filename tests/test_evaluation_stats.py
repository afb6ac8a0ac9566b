"""The evaluation maths against values computed by hand on tiny fixtures (ragtap/evaluation/stats.py,
report.py's rules, retrieval metrics, MIRAGE's adaptability metrics)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragtap.evaluation import stats
from ragtap.evaluation.experiments.mirage import adaptability, loose_match
from ragtap.evaluation.report import build_report
from ragtap.evaluation.retrieval import ranking_scores

# Labels (True = poor) and a metric (low = poor).  By hand, over the 3 x 3 positive/negative pairs:
#   pos 0.2 beats 0.5, 0.7, 0.9 -> 3;  pos 0.5 ties 0.5 (1/2), beats 0.7, 0.9 -> 2.5 (twice)
#   U = 8, AUC = 8/9.
Y = [True, True, False, True, False, False]
V = [0.2, 0.5, 0.5, 0.5, 0.7, 0.9]


def test_auc_is_mann_whitney_with_ties_by_hand() -> None:
    assert stats.auc(Y, [-v for v in V]) == pytest.approx(8 / 9)


def test_roc_curve_points_by_hand() -> None:
    roc = stats.roc_curve(Y, [-v for v in V])
    # values ascending = risk descending: 0.2 (1 pos) | 0.5 (2 pos, 1 neg) | 0.7 (1 neg) | 0.9 (1 neg)
    assert roc.fpr.tolist() == pytest.approx([0, 0, 1 / 3, 2 / 3, 1])
    assert roc.tpr.tolist() == pytest.approx([0, 1 / 3, 1, 1, 1])
    assert roc.area() == pytest.approx(8 / 9)


def test_auc_edge_cases() -> None:
    assert stats.auc([True, False], [1.0, 0.0]) == 1.0
    assert stats.auc([True, False], [0.0, 1.0]) == 0.0
    assert stats.auc([True, False, True, False], [0.5] * 4) == 0.5  # all tied
    assert stats.auc([True, True], [0.1, 0.2]) is None  # one class
    with pytest.raises(ValueError):
        stats.auc([True, False], [0.1, float("nan")])


def test_confusion_and_scores_by_hand() -> None:
    c = stats.confusion_below(Y, V, 0.6)  # flags 0.2, 0.5, 0.5, 0.5
    assert (c.tp, c.fp, c.tn, c.fn) == (3, 1, 2, 0)
    assert c.accuracy == pytest.approx(5 / 6)
    assert c.precision == pytest.approx(0.75)
    assert c.recall == 1.0
    assert c.f1 == pytest.approx(2 * 0.75 / 1.75)
    assert c.f2 == pytest.approx(5 * 0.75 / (4 * 0.75 + 1))  # 0.9375
    c = stats.confusion_below(Y, V, 0.5)  # strictly below: only 0.2
    assert (c.tp, c.fp, c.tn, c.fn) == (1, 0, 3, 2)
    assert c.f1 == pytest.approx(0.5)
    assert c.f2 == pytest.approx(5 / 13)
    c = stats.confusion_below(Y, V, 0.1)  # nothing flagged: precision 0 by convention
    assert (c.precision, c.recall, c.f1, c.f2) == (0.0, 0.0, 0.0, 0.0)


def test_random_baseline_matches_the_thesis() -> None:
    rb = stats.random_baseline(0.3324)  # the thesis's SQuAD sample: precision .3324, F1 .3994, F2 .4542
    assert rb["f1"] == pytest.approx(0.3994, abs=1e-4)
    assert rb["f2"] == pytest.approx(0.4542, abs=1e-4)
    assert stats.random_baseline(0.5)["f1"] == pytest.approx(0.5)


def test_best_cut_by_hand() -> None:
    # candidates: none | < 0.35 flags {0.2} | < 0.6 flags the 0.5s too | < 0.8 | all
    f1 = stats.best_cut(Y, V, "f1")
    assert f1.threshold == pytest.approx(0.6)
    assert f1.objective == pytest.approx(6 / 7)
    youden = stats.best_cut(Y, V, "youden")
    assert youden.threshold == pytest.approx(0.6)
    assert youden.objective == pytest.approx(2 / 3)
    # the lowest threshold that reaches recall 0.3 flags only 0.2
    r = stats.best_cut(Y, V, "recall", target_recall=0.3)
    assert r.threshold == pytest.approx(0.35)
    assert r.confusion.recall == pytest.approx(1 / 3)
    r = stats.best_cut(Y, V, "recall", target_recall=1.0)
    assert r.threshold == pytest.approx(0.6)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 6)), min_size=2, max_size=40))
def test_auc_equals_roc_area_and_brute_force(pairs: list[tuple[bool, int]]) -> None:
    y = np.array([p for p, _ in pairs])
    s = np.array([v / 6 for _, v in pairs])
    if y.all() or not y.any():
        assert stats.auc(y, s) is None
        return
    brute = np.mean([1.0 if a > b else 0.5 if a == b else 0.0 for a in s[y] for b in s[~y]])
    assert stats.auc(y, s) == pytest.approx(brute)
    assert stats.roc_curve(y, s).area() == pytest.approx(brute)


def test_stratified_split_keeps_both_classes_and_is_seeded() -> None:
    y = np.array([True] * 30 + [False] * 70)
    train, test = stats.stratified_split(y, 0.3, seed=1)
    assert len(test) == 30 and y[test].sum() == 9
    assert sorted(np.r_[train, test].tolist()) == list(range(100))
    again = stats.stratified_split(y, 0.3, seed=1)
    assert again[1].tolist() == test.tolist()
    assert stats.stratified_split(y, 0.3, seed=2)[1].tolist() != test.tolist()
    # a single member of a class stays in training
    train, test = stats.stratified_split(np.array([True, False, False, False]), 0.5, seed=0)
    assert 0 in train.tolist()


def test_logistic_regression_solves_the_penalised_score_equations() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 2))
    y = (x[:, 0] - 0.5 * x[:, 1] + rng.normal(scale=0.7, size=200)) < 0  # low first feature = poor
    model = stats.fit_logistic(x, y, ("a", "b"), l2=1.0)
    z = model.standardise(x)
    p = model.probability(x)
    # gradient of the penalised log-likelihood is zero at the optimum
    assert np.abs(z.T @ (p - y) + 1.0 * model.weights).max() < 1e-6
    assert abs(np.sum(p - y)) < 1e-6
    assert model.weights[0] < 0 < model.weights[1]
    assert stats.auc(y, p) > 0.8
    # separable data stay finite thanks to the penalty; a missing value is imputed with the mean
    sep = stats.fit_logistic(np.array([[0.1], [0.2], [0.8], [0.9]]), [True, True, False, False], ("m",))
    assert np.all(np.isfinite(sep.weights))
    assert sep.probability(np.array([[np.nan]]))[0] == pytest.approx(1 / (1 + math.exp(-sep.bias)))


# ------------------------------------------------------------------------------- the report's rules

ROWS = [
    (True, {"sdq": 0.3, "sdrd": 0.9, "sda": 0.8, "qrd": 0.5, "qa": 0.9}),
    (True, {"sdq": 0.6, "sdrd": 0.7, "sda": 0.65, "qrd": 0.4, "qa": 0.2}),
    (False, {"sdq": 0.8, "sdrd": 0.9, "sda": 0.85, "qrd": 0.7, "qa": 0.8}),
    (False, {"sdq": 0.75, "sdrd": 0.5, "sda": 0.9, "qrd": 0.9, "qa": 0.7}),
    (False, {"sdq": None, "sdrd": None, "sda": None, "qrd": 0.6, "qa": 0.5}),  # a reply ragtap could not split
]


def test_report_rules_by_hand() -> None:
    report = build_report([r[0] for r in ROWS], [r[1] for r in ROWS], title="fixture", positive_name="poor")
    d = report.as_dict()
    assert (d["n"], d["positives"]) == (5, 2)
    # primary = min(sdq, sdrd, sda): pos .3, .6 vs neg .8, .5 -> 3 of 4 pairs
    assert d["auc"]["primary"] == pytest.approx(0.75)
    assert d["curves"]["primary"]["n"] == 4 and d["curves"]["primary"]["excluded"] == 1
    assert d["auc"]["primary+qa"] == pytest.approx(1.0)  # pos .3, .2 vs neg .8, .5
    assert d["auc"]["primary+qrd"] == pytest.approx(1.0)  # pos .3, .4 vs neg .7, .5
    assert d["auc"]["qrd"] == pytest.approx(1.0)  # 5 rows: pos .5, .4 vs neg .7, .9, .6
    assert d["auc"]["qa"] == pytest.approx(0.5)  # pos .9, .2 vs neg .8, .7, .5: 0 + 3 of 6
    assert d["auc"]["ard"] is None  # no ARD in the data, but the key is there
    row = next(r for r in d["threshold_table"] if r["rule"] == "primary" and r["threshold"] == 0.7)
    # min < .7: .3 (pos), .6 (pos), .5 (neg); .8 (neg) passes
    assert (row["tp"], row["fp"], row["tn"], row["fn"]) == (2, 1, 1, 0)
    assert row["accuracy"] == pytest.approx(0.75)
    assert row["precision"] == pytest.approx(2 / 3)
    assert row["f1"] == pytest.approx(0.8)
    assert row["f2"] == pytest.approx(10 / 11)
    share = d["flag_share"]["qrd"]["0.70"]
    assert share["negatives"] == pytest.approx(1 / 3)  # negatives .7, .9, .6: only .6 is below .70
    assert share["positives"] == pytest.approx(1.0)
    assert d["random_baseline"]["precision"] == pytest.approx(0.4)


def test_ranking_scores_by_hand() -> None:
    r = ranking_scores([False, True, True], total_relevant=2, k=3)
    assert r.precision == pytest.approx(2 / 3)
    assert r.recall == 1.0
    assert r.f1 == pytest.approx(0.8)
    ideal = 1 + 1 / math.log2(3)
    assert r.ndcg == pytest.approx((1 / math.log2(3) + 1 / math.log2(4)) / ideal)
    assert r.hit == 1.0
    top1 = ranking_scores([False, True, True], total_relevant=2, k=1)
    assert (top1.precision, top1.recall, top1.ndcg, top1.hit) == (0.0, 0.0, 0.0, 0.0)
    # more relevant chunks than k: the ideal ranking fills all k places
    assert ranking_scores([True, True], total_relevant=5, k=2).ndcg == pytest.approx(1.0)


def test_mirage_adaptability_by_hand() -> None:
    outcomes = [
        (False, True, False),  # G010 noise vulnerability
        (True, True, False),  # G110 noise vulnerability
        (False, True, True),  # G011 acceptability
        (True, True, True),  # G111 acceptability
        (True, True, True),  # G111
        (False, False, False),  # G000 insensitivity
        (False, False, True),  # G001 insensitivity
        (True, False, True),  # G101 misinterpretation
    ]
    a = adaptability(outcomes)
    assert a["noise_vulnerability"] == pytest.approx(2 / 8)
    assert a["context_acceptability"] == pytest.approx(3 / 8)
    assert a["context_insensitivity"] == pytest.approx(2 / 8)
    assert a["context_misinterpretation"] == pytest.approx(1 / 8)
    assert a["sum"] == pytest.approx(1.0)
    assert a["groups"]["G111"] == 2 and a["groups"]["G100"] == 0
    assert a["accuracy"] == {"base": 4 / 8, "oracle": 5 / 8, "mixed": 5 / 8}


def test_loose_match() -> None:
    assert loose_match("He was a Journalist for the Times.", ["journalist", "journo"])
    assert not loose_match("He wrote plays.", ["journalist"])
    assert not loose_match(None, ["x"])
    assert not loose_match("anything", ["  "])
