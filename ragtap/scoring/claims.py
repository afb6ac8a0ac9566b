"""Claim-level grounding: which sentence of an answer (or of its supporting content) the documents do not support.

A whole-text cosine cannot see one invented sentence among four copied ones.  So the text is cut into claims
(its sentences and list items, located by character offsets) and each claim is checked against the evidence on
its own, with two kinds of evidence:

- *semantic*: the best cosine between the claim and any passage of the documents (`passages.py`);
- *lexical*: the share of the claim's content words that stand in the documents, and any number or name in the
  claim that the documents lack (`lexical.py`).

A claim is **supported** when its content words mostly stand in the documents (lexical precision at least
`lexical_alone`), or it closely paraphrases a passage (cosine at least `similarity`), or both kinds of evidence are
there in part (precision at least `lexical` with cosine at least `similarity_with_lexical`).  It is **unsupported**
1. when none of that holds; or
2. when it carries a number the documents lack, while the passage it matches best states numbers (a changed number:
   "95 Nm" where the manual says "120 Nm"); or
3. likewise for a name ("designed by Alice" where the document names Bob).
Rules 2 and 3 need the matched passage to state numbers / names, so that a document that simply never gives
any (or lost its capitals) does not turn every figure into an alarm.

A claim with fewer than `min_content_words` content words ("Yes.", "Here is how:") asserts nothing checkable and
is not judged.  The thresholds are derived on DelucionQA train (docs/thresholds.md, `ragtap experiment delucionqa`).
Pure functions: texts and vectors in, typed results out.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ragtap.scoring.lexical import DocumentVocabulary, LexicalEvidence, lexical_evidence, names, numbers
from ragtap.scoring.passages import Passage
from ragtap.scoring.sentences import sentence_spans
from ragtap.types import ClaimOutcome, ClaimSupport

# A list item's marker is not part of its claim: "- Use jack stands." / "2) Loosen the lug nuts."
_BARE_MARKER = re.compile(r"\(?\d{1,3}[.)]")
_LIST_MARKER = re.compile(r"(?:[-*•▪◦‣–]|\(?\d{1,3}[.)]|\(?[a-zA-Z][.)])\s+")


@dataclass(frozen=True, slots=True)
class ClaimThresholds:
    """Calibrated for all-MiniLM-L6-v2 and the lexical rules on DelucionQA train (docs/thresholds.md)."""

    lexical_alone: float = 0.42  # share of content words found in the documents, enough on its own
    similarity: float = 0.75  # best claim <-> passage cosine, enough on its own
    lexical: float = 0.34  # ...or this share together with
    similarity_with_lexical: float = 0.60  # this cosine
    min_content_words: int = 2  # shorter claims are not judged
    parametric_share: float = 0.5  # without support: more than this share of claims unsupported -> parametric


@dataclass(frozen=True, slots=True)
class Claim:
    text: str
    start: int  # character offsets in the text the claim was cut from
    end: int


def split_claims(text: str) -> list[Claim]:
    """The sentences and list items of `text`, list markers left out of the claim (offsets follow)."""
    claims = []
    for start, end in sentence_spans(text):
        if _BARE_MARKER.fullmatch(text, start, end):
            continue  # "1." cut off from its item by the sentence rule: the item follows as the next span
        marker = _LIST_MARKER.match(text, start, end)
        if marker is not None:
            start = marker.end()
        if start < end:
            claims.append(Claim(text[start:end], start, end))
    return claims


@dataclass(frozen=True, slots=True)
class Evidence:
    """What claims are checked against: passages with their vectors, and the vocabulary of the same texts."""

    passages: tuple[Passage, ...]  # document == -1 marks the supporting content used as evidence
    vectors: np.ndarray  # one L2-normalised row per passage
    vocabulary: DocumentVocabulary

    @classmethod
    def of(cls, passages: Sequence[Passage], vectors: np.ndarray) -> Evidence:
        return cls(tuple(passages), vectors, DocumentVocabulary.of([p.text for p in passages]))


def judge_claim(claim: Claim, vector: np.ndarray, evidence: Evidence, thresholds: ClaimThresholds, of: str = "answer") -> ClaimSupport:
    lexical: LexicalEvidence = lexical_evidence(claim.text, evidence.vocabulary)
    similarity = document = passage_start = passage_end = None
    best: Passage | None = None
    if evidence.vectors.shape[0]:
        sims = evidence.vectors @ vector
        index = int(np.argmax(sims))
        best, similarity = evidence.passages[index], float(sims[index])
        document = None if best.document < 0 else best.document
        passage_start, passage_end = (None, None) if best.document < 0 else (best.start, best.end)

    def result(supported: bool | None, reason: str) -> ClaimSupport:
        return ClaimSupport(
            of, claim.text, claim.start, claim.end, ClaimOutcome.of_supported(supported), reason, similarity, document, passage_start, passage_end,
            lexical.precision, lexical.missing_numbers, lexical.missing_names,
        )

    if lexical.content_words < thresholds.min_content_words:
        return result(None, "too_short")
    if best is not None and lexical.missing_numbers and numbers(best.text):
        return result(False, "number_missing")
    if best is not None and lexical.missing_names and names(best.text):
        return result(False, "name_missing")
    return result(*decide(lexical.precision, similarity, thresholds))


def decide(lexical_precision: float, similarity: float | None, thresholds: ClaimThresholds) -> tuple[bool, str]:
    """The threshold part of the rule (what calibration tunes): (supported, reason)."""
    sim = -1.0 if similarity is None else similarity
    if lexical_precision >= thresholds.lexical_alone:
        return True, "lexical"
    if sim >= thresholds.similarity:
        return True, "similar"
    if lexical_precision >= thresholds.lexical and sim >= thresholds.similarity_with_lexical:
        return True, "lexical_and_similar"
    return False, "no_evidence"


def rejudge(claim: ClaimSupport, thresholds: ClaimThresholds) -> ClaimSupport:
    """The same claim under other thresholds, without embedding again (calibration).  The number and name rules
    and the word count do not depend on the thresholds tuned here."""
    if claim.reason in ("number_missing", "name_missing", "too_short"):
        return claim
    supported, reason = decide(claim.lexical_precision, claim.similarity, thresholds)
    return dataclasses.replace(claim, outcome=ClaimOutcome.of_supported(supported), reason=reason)


def unsupported(claims: Sequence[ClaimSupport], of: str) -> list[ClaimSupport]:
    return [c for c in claims if c.of == of and c.supported is False]


def judged(claims: Sequence[ClaimSupport], of: str) -> list[ClaimSupport]:
    return [c for c in claims if c.of == of and c.supported is not None]
