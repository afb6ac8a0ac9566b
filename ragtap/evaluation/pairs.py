"""A labelled pair set: texts whose score should pass, texts whose score should fail (`ragtap experiment
thresholds` and the QRD pairs it draws from `qrd_pairs.py`)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class PairSet:
    metric: str
    source: str
    passing: list[tuple[str, str]] = field(default_factory=list)  # (a, b): score = cos(a, b)
    failing: list[tuple[str, str]] = field(default_factory=list)
    # precomputed scores (QRD: scored as ragtap scores it, passages and windows)
    pass_scores: list[float] = field(default_factory=list)
    fail_scores: list[float] = field(default_factory=list)
    note: str = ""
    used: bool = True  # False: a diagnostic or a held-out set, reported but not part of the threshold choice
    held_out: bool = False  # drawn apart from the sets the threshold is fitted on: the honest figure
