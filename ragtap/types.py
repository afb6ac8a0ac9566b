"""The typed records that cross module boundaries.

Data flows one way: a request is *recognised* into a `RagContext`, the proxy turns the exchange into an
`Interaction`, and the scoring core turns an interaction into an `Assessment`.  Nothing here does I/O.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragtap.exchange import ExchangeRecord
    from ragtap.judgement import Judgement


@dataclass(frozen=True, slots=True)
class Document:
    """One retrieved document as the app sent it."""

    text: str
    id: str | None = None


@dataclass(frozen=True, slots=True)
class RagContext:
    """What recognition found in a chat request: the question and the retrieved documents.

    `source` names the rule that matched ("explicit", "langchain", "llamaindex_text_qa",
    "llamaindex_context_chat", "xml", "tool", or the name of a pattern from config.toml).
    """

    question: str
    documents: tuple[Document, ...]
    source: str


@dataclass(frozen=True, slots=True)
class SplitReply:
    """An injected reply split into the app's answer and the model's supporting content.

    `supporting` is None when it could not be recovered; `unscored_reason` then says why.
    `answer` is always what the app receives: when nothing could be recovered it is the upstream text unchanged.
    """

    answer: str
    supporting: str | None
    recovered: bool  # True when the JSON object was parsed (possibly after repair)
    unscored_reason: str | None = None


@dataclass(slots=True)
class Interaction:
    """One RAG exchange, ready to be scored (online from the proxy, or offline from a JSONL line)."""

    question: str
    documents: tuple[Document, ...]
    answer: str | None
    supporting: str | None = None
    id: str | None = None
    model: str | None = None
    unscored_reason: str | None = None
    exchange: ExchangeRecord | None = None  # online: the proxy's record of the HTTP exchange
    record: dict[str, Any] | None = None  # offline: the JSONL input line it was read from (kept in the output)
    enqueued_at: float | None = None  # perf_counter() when handed to scoring (time-to-verdict)
    judgement: Judgement | None = None  # the LLM judge tier's result, when it judged this interaction
    truncated: tuple[str, ...] = ()  # what was cut to the scoring limits (pipeline/limits.py), e.g. "documents"


class Verdict(str, enum.Enum):
    GROUNDED = "grounded"
    PARAMETRIC = "parametric"
    REFUSAL = "refusal"
    UNSUPPORTED_ANSWER = "unsupported_answer"
    UNSCORED = "unscored"


METRICS: tuple[str, ...] = ("sdq", "sdrd", "sda", "qrd", "qa", "ard")
PRIMARY_METRICS: tuple[str, ...] = ("sdq", "sdrd", "sda")


@dataclass(frozen=True, slots=True)
class Scores:
    """Cosine relevance scores; None where a text was missing (e.g. no supporting content)."""

    sdq: float | None = None  # supporting content <-> question
    sdrd: float | None = None  # supporting content <-> best retrieved document
    sda: float | None = None  # supporting content <-> answer
    qrd: float | None = None  # question <-> best retrieved document
    qa: float | None = None  # question <-> answer
    ard: float | None = None  # answer <-> best retrieved document
    attributed_document: int | None = None  # index of the document that best matches the support (else the answer)

    def as_dict(self) -> dict[str, float | None]:
        return {name: getattr(self, name) for name in METRICS}


@dataclass(frozen=True, slots=True)
class Thresholds:
    """Per-metric pass thresholds: a score passes when it is >= its threshold."""

    sdq: float
    sdrd: float
    sda: float
    qrd: float
    qa: float
    ard: float

    def of(self, metric: str) -> float:
        return float(getattr(self, metric))


class ClaimOutcome(str, enum.Enum):
    """What the evidence says of one claim."""

    SUPPORTED = "supported"  # the evidence states it
    NOT_FOUND = "not_found"  # the evidence does not state it (added content: invented, or from the model's memory)
    CONTRADICTED = "contradicted"  # the evidence it rests on says otherwise (a flipped negation, another number...)
    NOT_JUDGED = "not_judged"  # too short to assert anything checkable ("Yes.", "Here is how:")

    @classmethod
    def of_supported(cls, supported: bool | None) -> ClaimOutcome:
        """The outcome a yes/no/not-judged decision stands for (no contradiction)."""
        if supported is None:
            return cls.NOT_JUDGED
        return cls.SUPPORTED if supported else cls.NOT_FOUND


@dataclass(frozen=True, slots=True)
class ClaimSupport:
    """One claim and the evidence for it."""

    of: str  # "answer" or "supporting": which text the offsets point into
    text: str
    start: int
    end: int
    outcome: ClaimOutcome
    reason: str  # why: lexical | similar | lexical_and_similar | number_missing | name_missing | no_evidence | too_short | contradicted
    similarity: float | None  # best cosine over the evidence passages
    document: int | None  # index of the document holding the best passage (None: the supporting content)
    passage_start: int | None  # offsets of that passage in its document
    passage_end: int | None
    lexical_precision: float
    missing_numbers: tuple[str, ...]
    missing_names: tuple[str, ...]
    # What the aligned evidence says otherwise, one entry per mismatch (e.g. "negation", "number: 3 year vs 2 year");
    # empty unless the outcome is CONTRADICTED.
    conflicts: tuple[str, ...] = ()
    # The sentence window of the documents the claim was aligned with (document index, character offsets), and the
    # rarity-weighted share of the claim's content words it holds (scoring/alignment.py).
    evidence_document: int | None = None
    evidence_start: int | None = None
    evidence_end: int | None = None
    evidence_share: float | None = None
    verifier_score: float | None = None  # the [claims.verifier] model's probability that the evidence supports it

    @property
    def supported(self) -> bool | None:
        """True / False for a judged claim (False: not found or contradicted), None when it was not judged."""
        if self.outcome is ClaimOutcome.NOT_JUDGED:
            return None
        return self.outcome is ClaimOutcome.SUPPORTED

    @property
    def contradicted(self) -> bool:
        return self.outcome is ClaimOutcome.CONTRADICTED


@dataclass(frozen=True, slots=True)
class Assessment:
    """The scoring core's output for one interaction."""

    scores: Scores
    passed: dict[str, bool]  # metric -> score >= threshold, only for metrics that have a score
    verdict: Verdict
    poor_retrieval: bool | None  # None when there were no documents to judge
    explanation: str
    refusal_phrase: str | None = None  # the wording that marked a refusal, if any
    claims: tuple[ClaimSupport, ...] = ()  # claim by claim, answer then supporting content (scoring/claims.py)

    @property
    def unsupported_claims(self) -> tuple[ClaimSupport, ...]:
        """The answer's claims the evidence does not support (what the triage page highlights)."""
        return tuple(c for c in self.claims if c.of == "answer" and c.supported is False)

    @property
    def contradicted_claims(self) -> tuple[ClaimSupport, ...]:
        """The answer's claims that the evidence they rest on contradicts (a subset of `unsupported_claims`)."""
        return tuple(c for c in self.claims if c.of == "answer" and c.contradicted)
