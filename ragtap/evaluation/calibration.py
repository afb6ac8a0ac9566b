"""Choosing thresholds from labelled, scored interactions (`ragtap calibrate`).

Input: JSON lines with a label field (truthy = positive = poor) and ragtap's `scores` object (the
experiments' `scored.jsonl`, the proxy's interaction log, `ragtap score` output).  Lines without scores are
scored here with the configured embedder.  A seeded, stratified held-out split shows whether what was chosen
on the training part generalises.

What is fitted on the training split:
- each metric alone: the threshold t of "flag when metric < t" that maximises F1 or F2, or the lowest one
  that reaches a target recall;
- the primary rule with per-metric thresholds (flag when any of SDQ, SDRD, SDA is below its own threshold --
  how ragtap's verdict uses them), by coordinate ascent from the single-metric thresholds;
- the thesis's rule with one threshold for the three primary metrics (flag when their minimum < t);
- beyond the thesis: a logistic regression over every available score (standardised, L2, Newton's method),
  flagging when P(poor) exceeds a cut chosen the same way.

The written `[thresholds]` table takes SDQ/SDRD/SDA from the per-metric primary rule (or from the single
metrics when the rule could not be fitted) and QRD/QA/ARD from their single-metric fits.  Metrics absent from
the data (e.g. `--no-llm` output has only QRD) are left out, so the config keeps its defaults for them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ragtap.evaluation import stats
from ragtap.evaluation.datasets import DatasetError, read_jsonl
from ragtap.types import METRICS, PRIMARY_METRICS

OBJECTIVES = ("f1", "f2", "recall")
TRUE_WORDS = frozenset({"1", "true", "yes", "y", "t", "poor", "positive", "pos", "bad"})
FALSE_WORDS = frozenset({"0", "false", "no", "n", "f", "", "good", "negative", "neg", "ok"})


class CalibrationError(ValueError):
    pass


# ------------------------------------------------------------------------------------------------ input


def _field(record: Mapping[str, Any], path: str) -> Any:
    value: Any = record
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def parse_label(value: Any, positives: Sequence[str] = (), negatives: Sequence[str] = ()) -> bool | None:
    """True = positive (poor), None = no label.  With `positives`/`negatives` given, the field's value is
    compared as text: in `positives` -> True; with only `negatives` given, anything else is True."""
    if value is None:
        return None
    if positives or negatives:
        text = str(value).lower()
        if positives:
            if text in {p.lower() for p in positives}:
                return True
            if negatives and text not in {n.lower() for n in negatives}:
                raise CalibrationError(f"label value {value!r} is in neither --positive nor --negative")
            return False
        return text not in {n.lower() for n in negatives}
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return value != 0
    if isinstance(value, str):
        word = value.strip().lower()
        if word in TRUE_WORDS:
            return True
        if word in FALSE_WORDS:
            return False
        raise CalibrationError(f"label value {value!r} is not a yes/no value: name the classes with --positive or --negative")
    raise CalibrationError(f"label value {value!r} ({type(value).__name__}) is not a yes/no value")


@dataclass(slots=True)
class LabelledScores:
    y: np.ndarray
    scores: list[dict[str, float | None]]
    unlabelled: int = 0
    scored_here: int = 0
    embedder: str | None = None


def read_labelled(
    path: Path,
    label: str,
    *,
    positives: Sequence[str] = (),
    negatives: Sequence[str] = (),
    scorer: Callable[[list[dict[str, Any]]], list[dict[str, float | None]]] | None = None,
) -> LabelledScores:
    """Read the labelled lines; lines without a `scores` object are handed to `scorer` (all at once)."""
    if not path.is_file():
        raise CalibrationError(f"{path}: file not found")
    labels: list[bool] = []
    scores: list[dict[str, float | None] | None] = []
    unscored: list[tuple[int, dict[str, Any]]] = []
    unlabelled = 0
    embedder = None
    try:
        lines = list(read_jsonl(path))
    except DatasetError as error:
        raise CalibrationError(str(error)) from error
    for where, record in lines:
        if not isinstance(record, dict):
            raise CalibrationError(f"{where}: expected a JSON object")
        try:
            y = parse_label(_field(record, label), positives, negatives)
        except CalibrationError as error:
            raise CalibrationError(f"{where}: {error}") from error
        if y is None:
            unlabelled += 1
            continue
        labels.append(y)
        value = record.get("scores")
        if isinstance(value, dict):
            clean: dict[str, float | None] = {}
            for metric in METRICS:
                v = value.get(metric)
                if v is not None and not isinstance(v, int | float):
                    raise CalibrationError(f"{where}: scores.{metric} must be a number or null")
                clean[metric] = None if v is None else float(v)
            scores.append(clean)
        else:
            scores.append(None)
            unscored.append((len(scores) - 1, record))
    if unscored:
        if scorer is None:
            raise CalibrationError(f"{path}: {len(unscored)} lines have no 'scores' object; score them first with `ragtap score`")
        filled = scorer([r for _, r in unscored])
        for (i, _), s in zip(unscored, filled):
            scores[i] = s
    if not labels:
        raise CalibrationError(f"{path}: no line has a label in field {label!r}")
    return LabelledScores(np.array(labels, dtype=bool), [s or {} for s in scores], unlabelled, len(unscored), embedder)


# --------------------------------------------------------------------------------------------- fitting


@dataclass(slots=True)
class Evaluation:
    """One rule's operating point on the training and held-out parts."""

    name: str
    thresholds: dict[str, float]  # metric -> threshold ("p_poor" for the logistic model)
    train: stats.Confusion
    test: stats.Confusion | None
    train_auc: float | None
    test_auc: float | None
    n_train: int
    n_test: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "thresholds": {k: round(v, 6) for k, v in self.thresholds.items()},
            "n_train": self.n_train,
            "n_test": self.n_test,
            "train": self.train.as_dict(),
            "test": None if self.test is None else self.test.as_dict(),
            "train_auc": self.train_auc,
            "test_auc": self.test_auc,
        }


@dataclass(slots=True)
class CalibrationResult:
    objective: str
    target_recall: float | None
    holdout: float
    seed: int
    n: int
    positives: int
    n_train: int
    n_test: int
    absent: list[str]
    single: dict[str, Evaluation] = field(default_factory=dict)
    rules: dict[str, Evaluation] = field(default_factory=dict)
    logistic: Evaluation | None = None
    logistic_model: stats.LogisticModel | None = None
    thresholds: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def comparison(self) -> dict[str, Any]:
        """Does the logistic model beat the single-threshold rules on the held-out split?"""
        if self.logistic is None or self.logistic.test is None:
            return {"available": False}
        rivals = [*self.single.values(), *self.rules.values()]
        rivals = [r for r in rivals if r.test is not None]
        if not rivals:
            return {"available": False}
        best_f1 = max(rivals, key=lambda r: r.test.f1 if r.test else -1.0)
        with_auc = [r for r in rivals if r.test_auc is not None]
        best_auc = max(with_auc, key=lambda r: r.test_auc or 0.0) if with_auc else None
        lf1 = self.logistic.test.f1
        lauc = self.logistic.test_auc
        return {
            "available": True,
            "logistic_test_f1": lf1,
            "logistic_test_auc": lauc,
            "best_rule_by_test_f1": best_f1.name,
            "best_rule_test_f1": best_f1.test.f1 if best_f1.test else None,
            "best_rule_by_test_auc": best_auc.name if best_auc else None,
            "best_rule_test_auc": best_auc.test_auc if best_auc else None,
            "beats_on_f1": bool(best_f1.test is not None and lf1 > best_f1.test.f1),
            "beats_on_auc": bool(best_auc is not None and lauc is not None and lauc > (best_auc.test_auc or 0.0)),
        }

    def as_dict(self) -> dict[str, Any]:
        return {
            "objective": self.objective,
            "target_recall": self.target_recall,
            "holdout": self.holdout,
            "seed": self.seed,
            "n": self.n,
            "positives": self.positives,
            "n_train": self.n_train,
            "n_test": self.n_test,
            "absent_metrics": self.absent,
            "single": {k: v.as_dict() for k, v in self.single.items()},
            "rules": {k: v.as_dict() for k, v in self.rules.items()},
            "logistic": None if self.logistic is None else {**self.logistic.as_dict(), "model": self.logistic_model.as_dict() if self.logistic_model else None},
            "comparison": self.comparison(),
            "thresholds": self.thresholds,
            "notes": self.notes,
        }


def _values(scores: Sequence[Mapping[str, float | None]], idx: np.ndarray, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """(positions within idx that have the metric, their values)."""
    keep = [j for j, i in enumerate(idx) if scores[i].get(metric) is not None]
    return np.array(keep, dtype=int), np.array([scores[idx[j]][metric] for j in keep], dtype=np.float64)


def _objective(c: stats.Confusion, objective: str, target_recall: float | None) -> float:
    if objective == "f1":
        return c.f1
    if objective == "f2":
        return c.f2
    # recall target: among rules that reach it, the best precision; below it, the closest recall
    assert target_recall is not None
    return 1.0 + c.precision if c.recall >= target_recall - 1e-12 else c.recall - 1.0


def _auc_or_none(y: np.ndarray, risk: np.ndarray) -> float | None:
    return stats.auc(y, risk) if y.size else None


def _fit_or_rule(
    y: np.ndarray, matrix: np.ndarray, start: np.ndarray, objective: str, target_recall: float | None, rounds: int = 8, grid: int = 120
) -> np.ndarray:
    """Per-metric thresholds for "flag when any column < its threshold", by coordinate ascent from `start`."""
    thresholds = start.astype(np.float64).copy()
    candidates = []
    for j in range(matrix.shape[1]):
        column = np.unique(matrix[:, j])
        if column.size > grid:
            column = np.unique(np.quantile(column, np.linspace(0, 1, grid)))
        mids = (column[:-1] + column[1:]) / 2.0 if column.size > 1 else column
        candidates.append(np.r_[column[0] - 1e-6, mids, column[-1] + 1e-6])

    def value(t: np.ndarray) -> float:
        flagged = np.any(matrix < t, axis=1)
        return _objective(stats.confusion(y, flagged), objective, target_recall)

    best = value(thresholds)
    for _ in range(rounds):
        improved = False
        for j in range(matrix.shape[1]):
            trial = thresholds.copy()
            for t in candidates[j]:
                trial[j] = t
                v = value(trial)
                if v > best + 1e-12:
                    best, thresholds[j], improved = v, t, True
                    trial = thresholds.copy()
        if not improved:
            break
    return thresholds


def calibrate(
    data: LabelledScores,
    *,
    objective: str = "f1",
    target_recall: float | None = None,
    holdout: float = 0.3,
    seed: int = 0,
) -> CalibrationResult:
    if objective not in OBJECTIVES:
        raise CalibrationError(f"unknown objective {objective!r}; expected one of {', '.join(OBJECTIVES)}")
    if objective == "recall" and (target_recall is None or not 0 < target_recall <= 1):
        raise CalibrationError("--objective recall needs --target-recall in (0, 1]")
    y = data.y
    if y.all() or not y.any():
        raise CalibrationError(f"the labels have one class only ({int(y.sum())} positive of {y.size}): nothing to separate")
    train, test = stats.stratified_split(y, holdout, seed)
    result = CalibrationResult(objective, target_recall, holdout, seed, int(y.size), int(y.sum()), int(train.size), int(test.size), [])
    minority = int(min(y.sum(), y.size - y.sum()))
    if minority < 20:
        result.notes.append(
            f"only {minority} interactions in the smaller class: these thresholds only separate the examples given "
            "and will not generalise; calibrate on a few hundred labelled interactions"
        )
    if test.size and (y[test].all() or not y[test].any()):
        result.notes.append("the held-out part has one class only: held-out AUCs are undefined; use more data or a larger --holdout")
    cut_kind = "recall" if objective == "recall" else objective
    split = _Split(data, y, train, test, cut_kind, target_recall)
    present = _calibrate_each_metric(result, split)
    if all(m in result.single for m in PRIMARY_METRICS):
        _calibrate_primary_rules(result, split, objective)
    if present:
        _calibrate_logistic(result, split, tuple(present))
    result.thresholds = _chosen_thresholds(result)
    return result


@dataclass(frozen=True)
class _Split:
    """The labelled scores, split into training and held-out rows, and how a cut is chosen."""

    data: LabelledScores
    y: np.ndarray
    train: np.ndarray
    test: np.ndarray
    cut_kind: str
    target_recall: float | None


def _calibrate_each_metric(result: CalibrationResult, split: _Split) -> list[str]:
    """One threshold per metric on the training rows that have it, checked on the held-out rows."""
    data, y, train, test = split.data, split.y, split.train, split.test
    present = []
    for metric in METRICS:
        tr_pos, tr_values = _values(data.scores, train, metric)
        if tr_values.size == 0:
            result.absent.append(metric)
            continue
        ytr = y[train][tr_pos]
        if ytr.all() or not ytr.any():
            result.notes.append(f"{metric}: the training rows that have it are all one class; not calibrated")
            continue
        present.append(metric)
        cut = stats.best_cut(ytr, tr_values, split.cut_kind, target_recall=split.target_recall)
        te_pos, te_values = _values(data.scores, test, metric)
        yte = y[test][te_pos]
        test_conf = stats.confusion_below(yte, te_values, cut.threshold) if te_values.size else None
        result.single[metric] = Evaluation(
            metric, {metric: cut.threshold}, cut.confusion, test_conf, stats.auc(ytr, -tr_values), _auc_or_none(yte, -te_values) if te_values.size else None, int(ytr.size), int(yte.size)
        )
    return present


def _calibrate_primary_rules(result: CalibrationResult, split: _Split, objective: str) -> None:
    """The thesis's rule over the primary metrics: per-metric thresholds fitted jointly, and one shared threshold."""
    data, y, cut_kind, target_recall = split.data, split.y, split.cut_kind, split.target_recall
    primary = list(PRIMARY_METRICS)

    def matrix(idx: np.ndarray, metrics: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        keep = np.array([all(data.scores[i].get(m) is not None for m in metrics) for i in idx], dtype=bool)
        rows = idx[keep]
        return rows, np.array([[data.scores[i][m] for m in metrics] for i in rows], dtype=np.float64).reshape(len(rows), len(metrics))

    rows_tr, m_tr = matrix(split.train, primary)
    rows_te, m_te = matrix(split.test, primary)
    ytr, yte = y[rows_tr], y[rows_te]
    if not (m_tr.size and ytr.any() and not ytr.all()):
        return
    start = np.array([result.single[m].thresholds[m] for m in primary])
    fitted = _fit_or_rule(ytr, m_tr, start, objective, target_recall)
    flag_tr = np.any(m_tr < fitted, axis=1)
    flag_te = np.any(m_te < fitted, axis=1) if m_te.size else np.zeros(0, dtype=bool)
    # the rule's ranking for AUC: the smallest margin below a threshold
    risk_tr = np.max(fitted - m_tr, axis=1)
    risk_te = np.max(fitted - m_te, axis=1) if m_te.size else np.zeros(0)
    result.rules["primary (per-metric thresholds)"] = Evaluation(
        "primary (per-metric thresholds)",
        {m: float(t) for m, t in zip(primary, fitted)},
        stats.confusion(ytr, flag_tr),
        stats.confusion(yte, flag_te) if m_te.size else None,
        stats.auc(ytr, risk_tr),
        _auc_or_none(yte, risk_te) if m_te.size else None,
        int(ytr.size),
        int(yte.size),
    )
    lo_tr, lo_te = m_tr.min(axis=1), (m_te.min(axis=1) if m_te.size else np.zeros(0))
    cut = stats.best_cut(ytr, lo_tr, cut_kind, target_recall=target_recall)
    result.rules["primary (one threshold, thesis)"] = Evaluation(
        "primary (one threshold, thesis)",
        {"min(sdq,sdrd,sda)": cut.threshold},
        cut.confusion,
        stats.confusion_below(yte, lo_te, cut.threshold) if lo_te.size else None,
        stats.auc(ytr, -lo_tr),
        _auc_or_none(yte, -lo_te) if lo_te.size else None,
        int(ytr.size),
        int(yte.size),
    )


def _calibrate_logistic(result: CalibrationResult, split: _Split, features: tuple[str, ...]) -> None:
    """A logistic regression over every calibrated metric, for comparison with the threshold rules."""
    data, y, train, test = split.data, split.y, split.train, split.test
    x = np.array([[np.nan if s.get(m) is None else s[m] for m in features] for s in data.scores], dtype=np.float64)
    model = stats.fit_logistic(x[train], y[train], features)
    p_tr, p_te = model.probability(x[train]), model.probability(x[test])
    cut = stats.best_cut(y[train], -p_tr, split.cut_kind, target_recall=split.target_recall)  # flag when -p < -c, i.e. p > c
    c = -cut.threshold
    result.logistic = Evaluation(
        "logistic regression",
        {"p_poor": c},
        cut.confusion,
        stats.confusion(y[test], p_te > c) if test.size else None,
        stats.auc(y[train], p_tr),
        _auc_or_none(y[test], p_te) if test.size else None,
        int(train.size),
        int(test.size),
    )
    result.logistic_model = model
    if len(features) == 1:
        result.notes.append(f"logistic regression has one feature ({features[0]}): it ranks exactly as that metric does")
    imputed = int(np.isnan(x).sum())
    if imputed:
        result.notes.append(f"logistic regression: {imputed} missing feature values imputed with the training mean")


def _chosen_thresholds(result: CalibrationResult) -> dict[str, float]:
    """The primary rule's jointly fitted thresholds where there are some, else each metric's own."""
    thresholds: dict[str, float] = {}
    rule = result.rules.get("primary (per-metric thresholds)")
    for metric in METRICS:
        if rule is not None and metric in rule.thresholds:
            thresholds[metric] = rule.thresholds[metric]
        elif metric in result.single:
            thresholds[metric] = result.single[metric].thresholds[metric]
    return {m: round(float(t), 3) for m, t in thresholds.items()}


# ------------------------------------------------------------------------------------------------ output


def _f(v: float | None) -> str:
    return "-" if v is None else f"{v:.4f}"


def format_result(result: CalibrationResult) -> str:
    target = f" (target recall {result.target_recall})" if result.objective == "recall" else ""
    lines = [
        f"{result.n} labelled interactions, {result.positives} positive (poor); objective {result.objective}{target}; "
        f"held-out {result.holdout:.0%} (seed {result.seed}): {result.n_train} train / {result.n_test} test",
    ]
    if result.absent:
        lines.append(f"absent from the data (left at their configured defaults): {', '.join(result.absent)}")
    head = f"  {'rule':<34} {'threshold(s)':<40} {'train F1':>8} {'test P':>7} {'test R':>7} {'test F1':>8} {'test F2':>8} {'test AUC':>9}"
    lines += ["", head, "  " + "-" * (len(head) - 2)]
    for ev in [*result.single.values(), *result.rules.values(), *([result.logistic] if result.logistic else [])]:
        ts = ", ".join(f"{k}={v:.3f}" for k, v in ev.thresholds.items())
        t = ev.test
        lines.append(
            f"  {ev.name:<34} {ts:<40} {ev.train.f1:8.4f} {_f(t.precision if t else None):>7} {_f(t.recall if t else None):>7} "
            f"{_f(t.f1 if t else None):>8} {_f(t.f2 if t else None):>8} {_f(ev.test_auc):>9}"
        )
    comparison = result.comparison()
    if comparison.get("available"):
        lines.append("")
        verdict_f1 = "beats" if comparison["beats_on_f1"] else "does not beat"
        lines.append(
            f"logistic regression {verdict_f1} the best single-threshold rule on held-out F1: "
            f"{comparison['logistic_test_f1']:.4f} vs {comparison['best_rule_test_f1']:.4f} ({comparison['best_rule_by_test_f1']})"
        )
        if comparison["best_rule_by_test_auc"] is not None and comparison["logistic_test_auc"] is not None:
            verdict_auc = "beats" if comparison["beats_on_auc"] else "does not beat"
            lines.append(
                f"logistic regression {verdict_auc} it on held-out AUC: {comparison['logistic_test_auc']:.4f} vs "
                f"{comparison['best_rule_test_auc']:.4f} ({comparison['best_rule_by_test_auc']})"
            )
    for note in result.notes:
        lines.append(f"note: {note}")
    lines += ["", "thresholds (flag when score < threshold):", toml_fragment(result, comment=False)]
    return "\n".join(lines)


def toml_fragment(result: CalibrationResult, *, source: str | None = None, comment: bool = True) -> str:
    lines = []
    if comment:
        lines.append(f"# written by ragtap calibrate{' ' + source if source else ''}")
        lines.append(
            f"# objective {result.objective}{'' if result.target_recall is None else f' (target recall {result.target_recall})'}; "
            f"{result.n} interactions ({result.positives} poor); fitted on {result.n_train}, checked on {result.n_test} held out (seed {result.seed})"
        )
        for metric, value in result.thresholds.items():
            ev = result.single.get(metric)
            if ev is not None and ev.test is not None:
                lines.append(f"#   {metric}: held-out F1 {ev.test.f1:.3f}, AUC {_f(ev.test_auc)}")
        if result.absent:
            lines.append(f"# not in the data, so not set here: {', '.join(result.absent)}")
    lines.append("[thresholds]")
    for metric, value in result.thresholds.items():
        lines.append(f"{metric} = {value:.3f}")
    return "\n".join(lines) + "\n"
