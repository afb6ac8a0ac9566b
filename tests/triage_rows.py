"""Captured interactions for the triage page's tests and benchmark: realistic rows with hostile texts.

Every text a person could write ends up in the page, so the rows carry script tags, attribute-breaking quotes
and non-BMP characters (the claim offsets are Python code points; JavaScript counts UTF-16 units).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ragtap.config import DEFAULT_THRESHOLDS
from ragtap.store.base import CapturedInteraction
from ragtap.types import ClaimOutcome, ClaimSupport, Document, Scores

NOW = 1_790_000_000.0
VERDICT_CYCLE = ("parametric", "grounded", "refusal", "unsupported_answer", "unscored")
HOSTILE = "<script>window.__pwned=1</script>\"'><img src=x onerror=\"window.__pwned=2\">"
TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
SPAN_ID = "b7ad6b7169203331"


def answer_with_claims(prefix: str = "") -> tuple[str, tuple[ClaimSupport, ...]]:
    """An answer of two claims, the second unsupported, with correct code-point offsets."""
    first = f"{prefix}The tower is in Paris 🗼."
    second = f"It was painted gold in 1999 {HOSTILE}."
    answer = f"{first} {second}"
    start = len(first) + 1
    claims = (
        ClaimSupport("answer", first, 0, len(first), ClaimOutcome.SUPPORTED, "lexical", 0.81, 0, 0, 40, 0.8, (), ()),
        ClaimSupport("answer", second, start, start + len(second), ClaimOutcome.NOT_FOUND, "number_missing", 0.33, 0, 0, 40, 0.2, ("1999",), ()),
    )
    assert answer[start:start + len(second)] == second
    return answer, claims


def captured(i: int, **changes: Any) -> CapturedInteraction:
    """Row i: one second older than row i-1; verdict, model, user, session cycle with different periods."""
    answer, claims = answer_with_claims()
    item = CapturedInteraction(
        id=f"row-{i:06d}",
        time=NOW - i,
        question=f"Where is tower {i}? {HOSTILE}",
        documents=(Document("The Eiffel tower is in Paris, built 1889.", "doc-a"), Document(f"Unrelated {HOSTILE} text", "doc-\"b'")),
        supporting="The tower stands in Paris.",
        answer=answer,
        scores=Scores(sdq=0.7, sdrd=0.55, sda=None, qrd=0.4 if i % 3 == 0 else 0.8, qa=0.61, ard=0.3, attributed_document=0),
        thresholds=DEFAULT_THRESHOLDS,
        verdict=VERDICT_CYCLE[i % len(VERDICT_CYCLE)],
        poor_retrieval=i % 3 == 0,
        explanation="SDRD 0.55 fail: the support was not taken from the documents",
        claims=claims,
        latency_ms=12.5,
        model=("gpt-a", "gpt-b")[i % 2],
        prompt_tokens=120,
        answer_tokens=30,
        supporting_tokens=12,
        trace_id=TRACE_ID,
        span_id=SPAN_ID,
        user=f"user-{i % 4}",
        session=f"session-{i % 7}",
        rag_source="explicit",
    )
    return dataclasses.replace(item, **changes)


# ---------------------------------------------------------------------------------------- through the proxy
# A RAG exchange whose texts attack the page, played by the scripted upstream next to the thesis's five: the
# answer's second sentence is the model's own (a year and a name the documents lack), so it is unsupported; its
# third gives another year than the document's sentence about the same event, so it is contradicted.
HOSTILE_QUESTION = f"Where is the Eiffel tower? {HOSTILE}"
HOSTILE_DOCUMENTS = (
    "The Eiffel tower is in Paris, on the Champ de Mars. It was completed in 1889 for the World's Fair.",
    f"Tickets {HOSTILE} are sold online and at the tower.",
)
HOSTILE_SUPPORTED = "The Eiffel tower 🗼 is in Paris, on the Champ de Mars."  # non-BMP: offsets are code points
HOSTILE_UNSUPPORTED = "It was painted gold in 1999 by \"<b>Gustave Moreau</b>\" & 'friends'."
HOSTILE_CONTRADICTED = "It was completed in 1899 for the World's Fair."
HOSTILE_ANSWER = f"{HOSTILE_SUPPORTED} {HOSTILE_UNSUPPORTED} {HOSTILE_CONTRADICTED}"
HOSTILE_SUPPORTING = "The Eiffel tower is in Paris, on the Champ de Mars."
