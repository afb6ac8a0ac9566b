"""The result of one guard check, as the checking side (ragtap/pipeline/guard_lane.py) hands it back."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Checked(Generic[T]):
    """A check's result (`value`), or why there is none (`failure`: timeout, overload, scorer_error)."""

    value: T | None
    failure: str | None = None
    seconds: float = 0.0  # how long it was waited for
