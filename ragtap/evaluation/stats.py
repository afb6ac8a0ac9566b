"""The evaluation maths: ROC/AUC, logistic regression and stratified splits from scikit-learn (the `eval`
extra); confusion counts, F-scores and threshold selection (vectorised over every cut at once) here.

Conventions used throughout:
- `y` is a boolean array, True = the positive class = "poor" (unanswerable question, unfaithful answer, ...).
- A *risk* is "higher = more likely positive" (what ROC analysis ranks by).  A ragtap metric is the other
  way round -- a low cosine is bad -- so a metric's risk is its negation, and the rule "flag when value < t"
  is the risk rule "flag when risk > -t".  Functions named `*_below` take metric values and thresholds
  directly, so callers never have to flip signs by hand.
- Undefined ratios follow scikit-learn's zero_division=0: precision with nothing flagged is 0, and an F-score
  with precision and recall both 0 is 0.  AUC with only one class present is None.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np


def _arrays(y: Sequence[bool] | np.ndarray, s: Sequence[float] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    y = np.asarray(y, dtype=bool)
    s = np.asarray(s, dtype=np.float64)
    if y.shape != s.shape or y.ndim != 1:
        raise ValueError(f"labels and scores must be 1-D and the same length (got {y.shape} and {s.shape})")
    if not np.all(np.isfinite(s)):
        raise ValueError("scores must be finite (drop missing values before calling)")
    return y, s


# ------------------------------------------------------------------------------------------------ ranking


def auc(y: Sequence[bool] | np.ndarray, risk: Sequence[float] | np.ndarray) -> float | None:
    """Area under the ROC curve: the probability that a random positive has a higher risk than a random
    negative, ties counting one half.  None when a class is absent."""
    y, risk = _arrays(y, risk)
    if y.all() or not y.any():
        return None
    return float(_metrics().roc_auc_score(y, risk))


@dataclass(frozen=True, slots=True)
class RocCurve:
    fpr: np.ndarray  # starts at 0, ends at 1
    tpr: np.ndarray
    thresholds: np.ndarray  # risk cut-points: a point flags risk >= threshold; the first is +inf (flag nothing)

    def area(self) -> float:
        """Trapezoidal area; equals `auc()` because tied risks form one diagonal step."""
        return float(np.sum(np.diff(self.fpr) * (self.tpr[1:] + self.tpr[:-1]) / 2.0))


def roc_curve(y: Sequence[bool] | np.ndarray, risk: Sequence[float] | np.ndarray) -> RocCurve:
    """One point per distinct risk value (ties move TPR and FPR together), plus the (0, 0) start."""
    y, risk = _arrays(y, risk)
    if y.all() or not y.any():
        raise ValueError("a ROC curve needs both classes")
    fpr, tpr, thresholds = _metrics().roc_curve(y, risk, drop_intermediate=False)
    return RocCurve(fpr=fpr, tpr=tpr, thresholds=thresholds)


def _metrics():  # type: ignore[no-untyped-def]
    from ragtap.evaluation.extras import require

    return require("sklearn.metrics")


# ------------------------------------------------------------------------------------ confusion and scores


@dataclass(frozen=True, slots=True)
class Confusion:
    tp: int
    fp: int
    tn: int
    fn: int

    @property
    def n(self) -> int:
        return self.tp + self.fp + self.tn + self.fn

    @property
    def accuracy(self) -> float:
        return (self.tp + self.tn) / self.n if self.n else 0.0

    @property
    def precision(self) -> float:
        flagged = self.tp + self.fp
        return self.tp / flagged if flagged else 0.0

    @property
    def recall(self) -> float:
        positives = self.tp + self.fn
        return self.tp / positives if positives else 0.0

    @property
    def fpr(self) -> float:
        """The share of negatives flagged."""
        negatives = self.fp + self.tn
        return self.fp / negatives if negatives else 0.0

    def fbeta(self, beta: float) -> float:
        return fbeta(self.precision, self.recall, beta)

    @property
    def f1(self) -> float:
        return self.fbeta(1.0)

    @property
    def f2(self) -> float:
        return self.fbeta(2.0)

    def as_dict(self) -> dict[str, float | int]:
        return {
            **asdict(self),
            "accuracy": self.accuracy,
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "f2": self.f2,
        }


def fbeta(precision: float, recall: float, beta: float) -> float:
    b2 = beta * beta
    denominator = b2 * precision + recall
    return (1 + b2) * precision * recall / denominator if denominator > 0 else 0.0


def confusion(y: Sequence[bool] | np.ndarray, flagged: Sequence[bool] | np.ndarray) -> Confusion:
    y = np.asarray(y, dtype=bool)
    flagged = np.asarray(flagged, dtype=bool)
    if y.shape != flagged.shape:
        raise ValueError("labels and predictions must have the same length")
    return Confusion(
        tp=int(np.sum(flagged & y)),
        fp=int(np.sum(flagged & ~y)),
        tn=int(np.sum(~flagged & ~y)),
        fn=int(np.sum(~flagged & y)),
    )


def confusion_below(y: Sequence[bool] | np.ndarray, values: Sequence[float] | np.ndarray, threshold: float) -> Confusion:
    """The rule "flag as poor when value < threshold" (ragtap's: a score passes when >= its threshold)."""
    return confusion(y, np.asarray(values, dtype=np.float64) < threshold)


def random_baseline(prevalence: float) -> dict[str, float]:
    """Labelling at random with probability 1/2: precision = prevalence, recall = 1/2 (in expectation)."""
    p = float(prevalence)
    return {
        "accuracy": 0.5,
        "precision": p,
        "recall": 0.5,
        "f1": fbeta(p, 0.5, 1.0),
        "f2": fbeta(p, 0.5, 2.0),
    }


# ------------------------------------------------------------------------------------ threshold selection


@dataclass(frozen=True, slots=True)
class Cut:
    """An operating point of "flag when value < threshold" chosen on some data."""

    threshold: float
    confusion: Confusion
    objective: float  # the value of the selection objective at this point


def _cut_table(y: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every distinct way to flag "value < t": thresholds (ascending) and the tp/fp counts each flags.

    Candidate thresholds are the midpoints between consecutive distinct values, plus one below the minimum
    (flag nothing) and one above the maximum (flag everything).
    """
    distinct = np.unique(values)
    below = np.r_[distinct[0] - 1e-6, (distinct[:-1] + distinct[1:]) / 2.0, distinct[-1] + 1e-6]
    order = np.argsort(values, kind="mergesort")
    sorted_values, sorted_y = values[order], y[order]
    # number of values < t for each candidate t
    flagged = np.searchsorted(sorted_values, below, side="left")
    cum_pos = np.r_[0, np.cumsum(sorted_y)]
    tp = cum_pos[flagged]
    fp = flagged - tp
    return below, tp, fp


def _objective_values(kind: str, tp: np.ndarray, fp: np.ndarray, p: int, n: int) -> np.ndarray:
    fn = p - tp
    if kind in ("f1", "f2"):
        b2 = 1.0 if kind == "f1" else 4.0
        denominator = (1 + b2) * tp + b2 * fn + fp
        return np.where(denominator > 0, (1 + b2) * tp / np.maximum(denominator, 1), 0.0)
    if kind == "youden":
        return tp / max(p, 1) - fp / max(n, 1)
    if kind == "accuracy":
        return (tp + (n - fp)) / max(p + n, 1)
    raise ValueError(f"unknown objective {kind!r}")


def best_cut(
    y: Sequence[bool] | np.ndarray,
    values: Sequence[float] | np.ndarray,
    objective: str = "f1",
    *,
    target_recall: float | None = None,
) -> Cut:
    """The threshold for "flag when value < t" that maximises `objective` ("f1", "f2", "youden", "accuracy")
    on these data; or, with objective "recall", the lowest threshold whose recall reaches `target_recall`
    (the fewest flags, hence the best precision, among those that catch enough positives).

    Ties between equally good thresholds go to the lowest one (the most conservative alarm)."""
    y, values = _arrays(y, values)
    if values.size == 0:
        raise ValueError("no values to choose a threshold from")
    p = int(y.sum())
    n = int(y.size - p)
    thresholds, tp, fp = _cut_table(y, values)
    if objective == "recall":
        if target_recall is None:
            raise ValueError("objective 'recall' needs target_recall")
        recall = tp / max(p, 1)
        ok = np.nonzero(recall >= target_recall - 1e-12)[0]
        index = int(ok[0]) if ok.size else len(thresholds) - 1
        score = float(recall[index])
    else:
        scores = _objective_values(objective, tp, fp, p, n)
        index = int(np.argmax(scores))
        score = float(scores[index])
    t = float(thresholds[index])
    c = Confusion(int(tp[index]), int(fp[index]), int(n - fp[index]), int(p - tp[index]))
    return Cut(t, c, score)


def sweep_below(y: Sequence[bool] | np.ndarray, values: Sequence[float] | np.ndarray, thresholds: Sequence[float]) -> list[Confusion]:
    y, values = _arrays(y, values)
    return [confusion_below(y, values, float(t)) for t in thresholds]


# ---------------------------------------------------------------------------------- logistic regression


@dataclass(frozen=True, slots=True)
class LogisticModel:
    """P(poor) = sigmoid(bias + sum_i weight_i * (x_i - mean_i) / std_i); missing features are imputed with
    the training mean (a standardised 0)."""

    features: tuple[str, ...]
    mean: np.ndarray
    std: np.ndarray
    weights: np.ndarray  # (len(features),)
    bias: float
    iterations: int

    def standardise(self, x: np.ndarray) -> np.ndarray:
        z = (np.asarray(x, dtype=np.float64) - self.mean) / self.std
        return np.where(np.isnan(z), 0.0, z)

    def logit(self, x: np.ndarray) -> np.ndarray:
        return self.standardise(x) @ self.weights + self.bias

    def probability(self, x: np.ndarray) -> np.ndarray:
        return 1.0 / (1.0 + np.exp(-self.logit(x)))

    def as_dict(self) -> dict[str, object]:
        return {
            "features": list(self.features),
            "mean": [float(v) for v in self.mean],
            "std": [float(v) for v in self.std],
            "weights": [float(v) for v in self.weights],
            "bias": float(self.bias),
            "iterations": self.iterations,
        }


def fit_logistic(
    x: np.ndarray,
    y: Sequence[bool] | np.ndarray,
    features: Sequence[str],
    *,
    l2: float = 1.0,
    max_iter: int = 100,
    tol: float = 1e-10,
) -> LogisticModel:
    """L2-penalised logistic regression (scikit-learn; the bias is not penalised) on standardised
    features, missing values imputed with the training mean.  `x` is (n, d) with NaN where a feature is missing.
    The penalty (`l2` = 1/C) keeps the fit finite on separable data (tiny calibration sets often are)."""
    from ragtap.evaluation.extras import require

    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=bool)
    if x.ndim != 2 or x.shape[0] != y.shape[0] or x.shape[1] != len(features):
        raise ValueError("x must be (n, len(features)) and match y")
    with np.errstate(invalid="ignore"):
        mean = np.nanmean(x, axis=0) if x.size else np.zeros(x.shape[1])
        std = np.nanstd(x, axis=0) if x.size else np.ones(x.shape[1])
    mean = np.where(np.isnan(mean), 0.0, mean)
    std = np.where(~np.isfinite(std) | (std < 1e-12), 1.0, std)
    z = np.where(np.isnan((x - mean) / std), 0.0, (x - mean) / std)
    if y.all() or not y.any():  # one class: no slope to learn; the bias is the (clipped) prevalence
        prevalence = float(np.clip(y.mean() if y.size else 0.5, 1e-6, 1 - 1e-6))
        return LogisticModel(tuple(features), mean, std, np.zeros(len(features)), float(np.log(prevalence / (1 - prevalence))), 0)
    # newton-cholesky: exact Newton steps, so the penalised score equations are met to `tol` (lbfgs stops earlier)
    model = require("sklearn.linear_model").LogisticRegression(C=1.0 / max(l2, 1e-12), solver="newton-cholesky", max_iter=max_iter, tol=tol)
    model.fit(z, y)
    return LogisticModel(tuple(features), mean, std, model.coef_[0].copy(), float(model.intercept_[0]), int(model.n_iter_[0]))


# ------------------------------------------------------------------------------------------- splitting


def stratified_split(y: Sequence[bool] | np.ndarray, holdout: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices (train, test), each class split separately so both halves keep the prevalence.  A class with a
    single member stays in training."""
    y = np.asarray(y, dtype=bool)
    if not 0.0 <= holdout < 1.0:
        raise ValueError("the held-out share must be in [0, 1)")
    rng = np.random.default_rng(seed)
    train: list[int] = []
    test: list[int] = []
    for cls in (True, False):
        members = np.nonzero(y == cls)[0]
        members = members[rng.permutation(members.size)]
        k = int(round(holdout * members.size))
        if members.size - k < 1:
            k = members.size - 1
        k = max(k, 0)
        test.extend(members[:k].tolist())
        train.extend(members[k:].tolist())
    return np.array(sorted(train), dtype=int), np.array(sorted(test), dtype=int)
