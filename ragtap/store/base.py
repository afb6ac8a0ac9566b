"""The capture store's typed interface: what one captured interaction holds, a human label, a query, a page.

The store keeps the interactions worth a human look (by default every non-grounded verdict and poor
retrieval) so that the triage page can list, filter and open them and a person can say whether the verdict was
right.  Two backends implement `CaptureStore` with one schema: SQLite (embedded, the default) and PostgreSQL
(several ragtap replicas sharing one store).  Both do their I/O in threads of their own, never on the event loop.

Times are Unix epoch seconds (UTC).  Paging is keyset paging, newest first: a `Page` carries an opaque
`next_cursor` (the (time, id) of its last row) that the next `StoreQuery` passes back; this stays fast however
deep the page, where OFFSET would scan every skipped row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from ragtap.types import METRICS, ClaimSupport, Document, Scores, Thresholds, Verdict

VERDICTS: tuple[str, ...] = tuple(v.value for v in Verdict)
MAX_PAGE_SIZE = 500  # one page never holds more rows than this, whatever the caller asks
MAX_NOTE_CHARS = 2000


class StoreError(Exception):
    """The store could not do what was asked (the message says why in one line)."""


class UnknownInteraction(StoreError):
    """A label or a lookup named an interaction the store does not hold."""


class InvalidLabel(StoreError, ValueError):
    """A label whose values make no sense (unknown verdict, a 'right' label naming another verdict, ...)."""


@dataclass(frozen=True, slots=True)
class Label:
    """A person's judgement of one captured interaction's verdict.

    `verdict_right` True: ragtap's verdict stands (`right_verdict` is then None or that same verdict).
    False: `right_verdict` names the verdict the person thinks is right (one of VERDICTS), or None when they
    only know it is wrong.  The latest label of an interaction is the one that counts.
    """

    interaction_id: str
    verdict_right: bool
    right_verdict: str | None = None
    note: str = ""
    time: float = 0.0  # set by the store when 0

    def check(self, captured_verdict: str | None = None) -> None:
        """Raise InvalidLabel with one line when the values do not fit together."""
        if not self.interaction_id:
            raise InvalidLabel("a label needs the interaction id")
        if self.right_verdict is not None and self.right_verdict not in VERDICTS:
            raise InvalidLabel(f"right_verdict must be one of {', '.join(VERDICTS)} (got {self.right_verdict!r})")
        if len(self.note) > MAX_NOTE_CHARS:
            raise InvalidLabel(f"note is longer than {MAX_NOTE_CHARS} characters")
        if "\x00" in self.note or "\x00" in self.interaction_id:
            raise InvalidLabel("a label's note and interaction id cannot contain a NUL character")
        if captured_verdict is not None and self.right_verdict is not None:
            if self.verdict_right and self.right_verdict != captured_verdict:
                raise InvalidLabel(f"verdict_right is true but right_verdict {self.right_verdict!r} is not the verdict {captured_verdict!r}")
            if not self.verdict_right and self.right_verdict == captured_verdict:
                raise InvalidLabel(f"verdict_right is false but right_verdict repeats the verdict {captured_verdict!r}")

    def corrected_verdict(self, captured_verdict: str) -> str | None:
        """The verdict a person says is right: the captured one when it stands, else `right_verdict`."""
        return captured_verdict if self.verdict_right else self.right_verdict


@dataclass(frozen=True, slots=True)
class CapturedInteraction:
    """One scored RAG exchange as the store keeps it (content already redacted by the capture policy)."""

    id: str
    time: float  # when the exchange finished (epoch seconds)
    question: str
    documents: tuple[Document, ...]
    supporting: str | None
    answer: str | None
    scores: Scores  # each metric None when it could not be computed; attributed_document: the best document
    thresholds: Thresholds  # the thresholds in force when it was scored
    verdict: str  # a Verdict value
    poor_retrieval: bool | None
    explanation: str  # the rule that decided the verdict, in words (scoring/verdict.py)
    claims: tuple[ClaimSupport, ...] = ()  # claim by claim: offsets, supported or not, best document
    unscored_reason: str | None = None
    latency_ms: float | None = None  # the app's wait, request in to last byte out
    model: str | None = None
    prompt_tokens: int | None = None
    answer_tokens: int | None = None  # completion tokens minus those spent on the supporting content
    supporting_tokens: int | None = None
    trace_id: str | None = None  # W3C ids (hex) linking to the trace of this exchange
    span_id: str | None = None
    user: str | None = None
    session: str | None = None
    rag_source: str | None = None  # the recognition rule that matched
    label: Label | None = None  # the latest human label, when the store read it back with one
    # The guard (ragtap/guard/), when it handled this answer: its action, its outcome, and what the app received
    # instead of `answer` when it changed it (None: the app received `answer`).
    guard_action: str | None = None
    guard_outcome: str | None = None
    delivered_answer: str | None = None

    @property
    def unsupported_claims(self) -> tuple[ClaimSupport, ...]:
        """The answer's claims the evidence does not support (what the triage page highlights)."""
        return tuple(c for c in self.claims if c.of == "answer" and c.supported is False)

    def passed(self) -> dict[str, bool]:
        """Each score against its threshold (the red and green cells); metrics without a score are absent."""
        values = self.scores.as_dict()
        return {m: v >= self.thresholds.of(m) for m in METRICS if (v := values[m]) is not None}


@dataclass(frozen=True, slots=True)
class StoreQuery:
    """Filters (all optional, combined with AND) and one page of keyset paging, newest first.

    `text` matches the question, the answer, the supporting content and the documents (full-text search where
    the backend has it: SQLite FTS5 / PostgreSQL tsvector, words in any order; else a substring).  `since`
    is inclusive, `until` exclusive.  `cursor` is the `next_cursor` of the previous page.
    """

    verdicts: tuple[str, ...] = ()
    poor_retrieval: bool | None = None
    model: str | None = None
    since: float | None = None
    until: float | None = None
    user: str | None = None
    session: str | None = None
    text: str | None = None
    labelled: bool | None = None  # True: only labelled interactions, False: only unlabelled ones
    cursor: str | None = None
    limit: int = 50

    def check(self) -> None:
        unknown = [v for v in self.verdicts if v not in VERDICTS]
        if unknown:
            raise StoreError(f"unknown verdict(s) {', '.join(map(repr, unknown))}: expected {', '.join(VERDICTS)}")
        if not 1 <= self.limit <= MAX_PAGE_SIZE:
            raise StoreError(f"page size must be between 1 and {MAX_PAGE_SIZE} (got {self.limit})")
        if self.cursor is not None:
            decode_cursor(self.cursor)
        texts = (self.model, self.user, self.session, self.text, self.cursor)
        if any(t is not None and "\x00" in t for t in texts):
            raise StoreError("a filter cannot contain a NUL character")


@dataclass(frozen=True, slots=True)
class Page:
    """One page of a query, newest first; `next_cursor` None when there is nothing older."""

    items: tuple[CapturedInteraction, ...]
    next_cursor: str | None


def encode_cursor(time: float, interaction_id: str) -> str:
    return f"{time!r}_{interaction_id}"


def decode_cursor(cursor: str) -> tuple[float, str]:
    head, sep, tail = cursor.partition("_")
    try:
        if not sep or not tail:
            raise ValueError
        return float(head), tail
    except ValueError:
        raise StoreError(f"not a page cursor: {cursor[:80]!r}") from None


class CaptureStore(Protocol):
    """What the exporter, the triage page and the commands use.  Every method is a coroutine whose I/O runs in a
    thread of the store's own (never on the event loop); `add_many` is for bulk loads and tests, the proxy hands
    rows to `offer()`, which queues them for the store's writer thread and never waits."""

    def offer(self, item: CapturedInteraction) -> bool:
        """Queue one interaction for the writer thread; False (and counted as dropped) when the queue is full."""
        ...

    async def add_many(self, items: Sequence[CapturedInteraction]) -> int:
        """Write these now (in the store's thread); returns how many were written."""
        ...

    async def query(self, query: StoreQuery) -> Page: ...

    async def get(self, interaction_id: str) -> CapturedInteraction | None:
        """One interaction with its latest label, or None."""
        ...

    async def add_label(self, label: Label) -> Label:
        """Store a label (UnknownInteraction, InvalidLabel); returns it with its time set."""
        ...

    async def labelled(self, limit: int = 100_000) -> list[CapturedInteraction]:
        """Interactions that have a label (each with its latest), newest first."""
        ...

    async def count(self, query: StoreQuery | None = None) -> int:
        """How many interactions match the query's filters (paging ignored)."""
        ...

    async def flush(self, timeout: float = 10.0) -> bool:
        """Wait (bounded) until every offered row was written or dropped; True when it got there."""
        ...

    async def close(self) -> None:
        """Write what is queued (bounded by a timeout), stop the threads, close the connections."""
        ...

