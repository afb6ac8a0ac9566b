"""Assess many interactions with one embedding call: collect the distinct texts, embed them, then score.

Micro-batching matters on a CPU embedder: one call over 40 texts is several times faster than 40 calls, and
retrieved documents recur across interactions, so de-duplicating texts saves work before the cache does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ragtap.scoring.metrics import compute_scores
from ragtap.scoring.refusal import DEFAULT_REFUSAL_DETECTOR, RefusalDetector
from ragtap.scoring.verdict import assess
from ragtap.types import Assessment, Interaction, Thresholds

if TYPE_CHECKING:
    from ragtap.embedding.base import Embedder


@dataclass(frozen=True, slots=True)
class ScoringPolicy:
    thresholds: Thresholds
    refusal: RefusalDetector = DEFAULT_REFUSAL_DETECTOR


class _TextTable:
    """Distinct texts in first-seen order, so each is embedded once per batch."""

    def __init__(self) -> None:
        self.rows: dict[str, int] = {}

    def add(self, text: str | None) -> int | None:
        if text is None:
            return None
        return self.rows.setdefault(text, len(self.rows))


def assess_batch(interactions: Sequence[Interaction], embedder: Embedder, policy: ScoringPolicy) -> list[Assessment]:
    table = _TextTable()
    plan = []
    for item in interactions:
        answer = item.answer if item.answer else None  # an empty answer is not scoreable
        plan.append(
            (
                table.add(item.question),
                [table.add(doc.text) for doc in item.documents],
                table.add(item.supporting if item.supporting else None),
                table.add(answer),
            )
        )
    vectors = embedder.embed(list(table.rows)) if table.rows else np.zeros((0, 1), dtype=np.float32)

    def row(index: int | None) -> np.ndarray | None:
        return None if index is None else vectors[index]

    results = []
    for item, (q, docs, sd, a) in zip(interactions, plan):
        doc_matrix = vectors[docs] if docs else np.zeros((0, vectors.shape[1]), dtype=np.float32)
        scores = compute_scores(row(q), doc_matrix, row(sd), row(a))  # type: ignore[arg-type]
        # Without retrieved documents there is nothing to ground on: SDRD/QRD/ARD cannot exist, so no verdict.
        reason = item.unscored_reason or (None if item.answer else "empty_answer") or (None if item.documents else "no_documents")
        results.append(
            assess(
                scores,
                policy.thresholds,
                item.answer,
                unscored_reason=reason,
                refusal=policy.refusal,
                supporting=item.supporting,
                documents=tuple(doc.text for doc in item.documents),
            )
        )
    return results
