"""The five relevance scores of the thesis (plus answer-to-documents) from unit-length embeddings.

QRD looks twice: at the passages of the documents, then at short windows of words inside the passage closest to
the question (`passages.question_windows`), and keeps the best cosine.  A question asks about one detail of a
paragraph; against the whole 150-word paragraph its cosine is diluted by everything else the paragraph says, so
the paragraph-level score failed half of SQuAD's questions against their own paragraph.  Only the closest
passage is windowed: it bounds the cost (one passage's windows, however many documents) and gives an unrelated
document fewer chances to score high by luck (docs/thresholds.md).
"""

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


def closest_passage(question: np.ndarray | None, documents: np.ndarray) -> int | None:
    """The row of the passage closest to the question: the one QRD looks into (`question_windows`)."""
    if question is None or documents.shape[0] == 0:
        return None
    return int(np.argmax(documents @ question))


def compute_scores(
    question: np.ndarray,
    documents: np.ndarray,
    supporting: np.ndarray | None,
    answer: np.ndarray | None,
    owners: Sequence[int] | None = None,
    question_windows: np.ndarray | None = None,
) -> Scores:
    """Scores for one interaction.

    `documents` has one row per passage of the retrieved documents (possibly zero rows); `owners[i]` is the
    index of the document passage i was cut from (None: one row per document).  The attributed document is the
    one that best matches the supporting content; without support, the one that best matches the answer.
    `question_windows` are the vectors of the windows of the passage closest to the question (none: QRD on
    whole passages only).
    """
    sdrd, sd_doc = _best(supporting, documents, owners)
    qrd, _ = _best(question, documents, owners)
    if qrd is not None and question_windows is not None and question_windows.shape[0]:
        qrd = max(qrd, float(np.max(question_windows @ question)))
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
