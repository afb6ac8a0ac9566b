"""Bounds on what one interaction may cost the scorer.

A single request may carry 30,000 documents or a 5 MB "answer"; embedded in full it would stall scoring for minutes
(every other interaction waits behind it, and a shutdown cannot finish). The proxy forwards such a request
unchanged — the limits apply only to what is scored — and the scored interaction says what was cut.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ragtap.types import Document, Interaction


@dataclass(frozen=True, slots=True)
class ScoringLimits:
    max_documents: int = 64  # the first N documents are scored (retrievers send them best first)
    max_document_chars: int = 20_000  # per document (~3,000 words: 20 passages)
    max_text_chars: int = 20_000  # question, answer, supporting content
    max_passages: int = 256  # per interaction, after the documents are cut into passages


def bound(item: Interaction, limits: ScoringLimits) -> Interaction:
    """`item` itself when it is within the limits, else a copy cut to them with `truncated` naming the cuts.
    Costs O(max_documents): the oversized parts are never walked."""
    cuts: list[str] = []
    documents = item.documents
    if len(documents) > limits.max_documents:
        documents = documents[: limits.max_documents]
        cuts.append("documents")
    if any(len(d.text) > limits.max_document_chars for d in documents):
        documents = tuple(Document(d.text[: limits.max_document_chars], d.id) for d in documents)
        cuts.append("document_chars")
    texts = {}
    for name in ("question", "answer", "supporting"):
        value = getattr(item, name)
        if value is not None and len(value) > limits.max_text_chars:
            texts[name] = value[: limits.max_text_chars]
            cuts.append(f"{name}_chars")
    if not cuts:
        return item
    return dataclasses.replace(item, documents=documents, truncated=(*item.truncated, *cuts), **texts)
