"""What the scoring pipeline asks of a claim verifier: (evidence, claim) pairs in, probabilities out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


class VerifierError(ValueError):
    """The configured verifier cannot be used (a missing file, a model with other inputs): one line, at start."""


@dataclass(frozen=True, slots=True)
class Verification:
    supported: float  # probability that the evidence supports the claim
    contradicted: float | None  # probability that it contradicts it (None: the model has no such label)


class ClaimVerifier(Protocol):
    name: str

    def verify(self, pairs: Sequence[tuple[str, str]]) -> list[Verification]:
        """One Verification per (evidence, claim) pair, in order.  Called on the scoring thread."""
        ...
