"""Human labels from the capture store, as calibration data (`ragtap calibrate --from-store`).

A label says whether ragtap's verdict was right and, when not, which verdict is.  Calibration separates
grounded answers from the rest, so each labelled interaction becomes one binary example: positive (poor) when
the verdict a person says is right is anything but `grounded`.  A label that only says "wrong" about a
non-grounded verdict does not say whether the answer was grounded: such rows are skipped (and counted).

Agreement is reported three ways on the same labelled rows: ragtap's recorded verdicts (grounded or not),
the primary rule (flag when SDQ, SDRD or SDA is below its threshold) at the thresholds in force, and the same
rule at the re-derived thresholds (in-sample: the held-out figures of the calibration table are the honest ones).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ragtap.evaluation import stats
from ragtap.evaluation.calibration import CalibrationError, LabelledScores
from ragtap.store.base import CapturedInteraction
from ragtap.types import METRICS, PRIMARY_METRICS, Thresholds, Verdict


def is_poor(row: CapturedInteraction) -> bool | None:
    """True when the labelled truth is not grounded, None when the label does not say."""
    if row.label is None:
        return None
    truth = row.label.corrected_verdict(row.verdict)
    if truth is None:
        # "Wrong" without the right verdict: only a wrong `grounded` is known to be poor.
        return True if row.verdict == Verdict.GROUNDED.value else None
    return truth != Verdict.GROUNDED.value


@dataclass(frozen=True, slots=True)
class StoreLabels:
    data: LabelledScores
    rows: tuple[CapturedInteraction, ...]  # the rows behind data, in order
    skipped: int  # labelled rows whose label does not say grounded or not


def labelled_scores(rows: Sequence[CapturedInteraction]) -> StoreLabels:
    kept: list[CapturedInteraction] = []
    labels: list[bool] = []
    skipped = 0
    for row in rows:
        poor = is_poor(row)
        if poor is None:
            skipped += 1
            continue
        kept.append(row)
        labels.append(poor)
    if not kept:
        raise CalibrationError("the store has no labelled interaction that says whether the answer was grounded; "
                               "label some on the triage page first")
    scores = [{m: v for m, v in r.scores.as_dict().items()} for r in kept]
    return StoreLabels(LabelledScores(np.array(labels, dtype=bool), scores, skipped), tuple(kept), skipped)


def primary_rule_flags(scores: Sequence[Mapping[str, float | None]], thresholds: Mapping[str, float]) -> np.ndarray:
    """Flag when any available primary metric is below its threshold (rows without supporting content: ARD)."""
    flags = []
    for s in scores:
        present = [m for m in PRIMARY_METRICS if s.get(m) is not None and m in thresholds]
        if not present and s.get("ard") is not None and "ard" in thresholds:
            present = ["ard"]
        flags.append(any(float(s[m]) < thresholds[m] for m in present))  # type: ignore[arg-type]
    return np.array(flags, dtype=bool)


@dataclass(frozen=True, slots=True)
class Agreement:
    name: str
    confusion: stats.Confusion

    @property
    def agreement(self) -> float:
        return self.confusion.accuracy


def agreements(labels: StoreLabels, current: Thresholds, derived: Mapping[str, float]) -> list[Agreement]:
    y = labels.data.y
    recorded = np.array([r.verdict != Verdict.GROUNDED.value for r in labels.rows], dtype=bool)
    now = {m: current.of(m) for m in METRICS}
    new = {**now, **derived}
    return [
        Agreement("ragtap's recorded verdicts", stats.confusion(y, recorded)),
        Agreement("primary rule, thresholds in force", stats.confusion(y, primary_rule_flags(labels.data.scores, now))),
        Agreement("primary rule, re-derived (in-sample)", stats.confusion(y, primary_rule_flags(labels.data.scores, new))),
    ]


def verdict_agreement(rows: Sequence[CapturedInteraction]) -> tuple[int, int]:
    """(labels saying the verdict was right, labelled rows): agreement on the exact verdict, all five classes."""
    labelled = [r for r in rows if r.label is not None]
    return sum(1 for r in labelled if r.label is not None and r.label.verdict_right), len(labelled)


def format_agreement(labels: StoreLabels, rows: Sequence[CapturedInteraction], current: Thresholds, derived: Mapping[str, float]) -> str:
    right, total = verdict_agreement(rows)
    lines = [f"labelled in the store: {total}; the exact verdict was right for {right} ({right / max(total, 1):.1%})"]
    if labels.skipped:
        lines.append(f"{labels.skipped} labels say only 'wrong' about a non-grounded verdict: not used (grounded or not is unknown)")
    lines.append(f"grounded vs not, on {labels.data.y.size} labelled interactions ({int(labels.data.y.sum())} not grounded):")
    for a in agreements(labels, current, derived):
        c = a.confusion
        lines.append(f"  {a.name:<40} agreement {a.agreement:6.1%}  precision {c.precision:.3f}  recall {c.recall:.3f}  "
                     f"(tp {c.tp}, fp {c.fp}, tn {c.tn}, fn {c.fn})")
    lines.append("thresholds in force -> re-derived:")
    for metric in METRICS:
        if metric in derived:
            lines.append(f"  {metric:<5} {current.of(metric):.3f} -> {derived[metric]:.3f}")
    return "\n".join(lines)
