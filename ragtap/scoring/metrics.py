"""The five relevance scores of the thesis (plus answer-to-documents) from unit-length embeddings."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ragtap.types import Scores


def _cos(a: np.ndarray | None, b: np.ndarray | None) -> float | None:
    # Embedders return L2-normalised rows, so the cosine is the dot product.
    if a is None or b is None:
        return None
    return float(np.dot(a, b))


def _best(vec: np.ndarray | None, docs: np.ndarray, owners: Sequence[int] | None) -> tuple[float | None, int | None]:
    """Best cosine of `vec` over the passage rows, and the document that passage belongs to: with several
    documents (or a long document cut into passages) the best one counts."""
    if vec is None or docs.shape[0] == 0:
        return None, None
    sims = docs @ vec
    index = int(np.argmax(sims))
    return float(sims[index]), index if owners is None else owners[index]


def compute_scores(
    question: np.ndarray,
    documents: np.ndarray,
    supporting: np.ndarray | None,
    answer: np.ndarray | None,
    owners: Sequence[int] | None = None,
) -> Scores:
    """Scores for one interaction.

    `documents` has one row per passage of the retrieved documents (possibly zero rows); `owners[i]` is the
    index of the document passage i was cut from (None: one row per document).  The attributed document is the
    one that best matches the supporting content; without support, the one that best matches the answer.
    """
    sdrd, sd_doc = _best(supporting, documents, owners)
    qrd, _ = _best(question, documents, owners)
    ard, answer_doc = _best(answer, documents, owners)
    return Scores(
        sdq=_cos(supporting, question),
        sdrd=sdrd,
        sda=_cos(supporting, answer),
        qrd=qrd,
        qa=_cos(question, answer),
        ard=ard,
        attributed_document=sd_doc if sd_doc is not None else answer_doc,
    )
