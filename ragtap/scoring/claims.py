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

A claim opening with a pronoun ("It is longer than the Kessel Bridge") carries the subject of the claim before it
(`Claim.subject`, subjects.py): alignment and the contradiction checks read the claim with it, support does not.

A claim with fewer than `min_content_words` content words ("Yes.", "Here is how:") asserts nothing checkable and
is not judged.  The thresholds are derived on DelucionQA train (docs/thresholds.md, `ragtap experiment delucionqa`).
Pure functions: texts and vectors in, typed results out.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ragtap.scoring.alignment import EvidenceIndex, Window
from ragtap.scoring.comparisons import comparison_conflicts
from ragtap.scoring.conflicts import find_conflicts
from ragtap.scoring.derived import derived
from ragtap.scoring.framing import framing_cut, whole_sentence_framing
from ragtap.scoring.lexical import DocumentVocabulary, LexicalEvidence, content_words, lexical_evidence, names
from ragtap.scoring.passages import Passage
from ragtap.scoring.quantities import MONTH_BEFORE, quantities, stated_in
from ragtap.scoring.sentences import sentence_spans
from ragtap.scoring.subjects import Subject, leading_noun_phrase, opening_pronoun
from ragtap.types import ClaimOutcome, ClaimSupport

_COMPARED = 3  # windows a comparison's two values are looked for in (each side may have its own sentence)

# A list item's marker is not part of its claim: "- Use jack stands." / "2) Loosen the lug nuts."
_BARE_MARKER = re.compile(r"\(?\d{1,3}[.)]")
_LIST_MARKER = re.compile(r"(?:[-*•▪◦‣–]|\(?\d{1,3}[.)]|\(?[a-zA-Z][.)])\s+")


@dataclass(frozen=True, slots=True)
class VerifierSettings:
    """`[claims.verifier]`: a stronger claim verifier the user brings (ragtap/verifier/): an ONNX cross-encoder."""

    model: str = ""  # path of the .onnx file; "" = no verifier (the lexical and contradiction checks decide alone)
    tokenizer: str = ""  # its Hugging Face tokenizer.json ("" = tokenizer.json beside the model)
    supported_label: int = 1  # the logits column of "supported" / "entailment"
    contradicted_label: int = -1  # the column of "contradiction", if the model has one
    threshold: float = 0.5  # probability at which the verifier's call stands
    max_tokens: int = 512  # the pair is truncated to this many tokens


@dataclass(frozen=True, slots=True)
class ClaimThresholds:
    """Calibrated for all-MiniLM-L6-v2 and the lexical rules on DelucionQA train (docs/thresholds.md)."""

    lexical_alone: float = 0.38  # share of content words found in the documents, enough on its own...
    aligned: float = 0.25  # ...when the aligned sentence window holds at least this (weighted) share of them
    similarity: float = 0.75  # best claim <-> passage cosine, enough on its own
    lexical: float = 0.38  # ...or this share together with
    similarity_with_lexical: float = 0.60  # this cosine
    min_content_words: int = 2  # shorter claims are not judged
    parametric_share: float = 0.5  # without support: more than this share of claims unsupported -> parametric
    verifier: VerifierSettings = field(default_factory=VerifierSettings)


@dataclass(frozen=True, slots=True)
class Claim:
    text: str
    start: int  # character offsets in the text the claim was cut from
    end: int
    checked: str = ""  # what is checked: the text without its framing (framing.py); "" for the text itself
    not_judged: str | None = None  # why the claim asserts nothing checkable: "framing" (about the answer or the
    # documents, framing.py) or "refusal" (the sentence declines: refusal wording)
    subject: Subject | None = None  # what its opening pronoun stands for (subjects.py): "It" after "The tower is ..."

    @property
    def checked_text(self) -> str:
        return self.checked or self.text

    @property
    def resolved_text(self) -> str:
        """What alignment and the contradiction checks read: the checked text with the subject in its pronoun's place."""
        return self.checked_text if self.subject is None else self.subject.resolved(self.checked_text)


_TRAILING_MARKER = re.compile(r"\s+\(?\d{1,3}[.)]$")


def split_claims(text: str) -> list[Claim]:
    """The sentences and list items of `text`, list markers and framing prefixes left out of the claim (offsets
    follow what is left)."""
    claims = []
    for start, end in sentence_spans(text):
        if _BARE_MARKER.fullmatch(text, start, end):
            continue  # "1." cut off from its item by the sentence rule: the item follows as the next span
        marker = _LIST_MARKER.match(text, start, end)
        if marker is not None:
            start = marker.end()
        trailing = _TRAILING_MARKER.search(text, start, end)  # "follow these steps: 1." (the item's number)
        # ...when an item follows, and not the day of a date ("on October 9.")
        if trailing is not None and text[end:].strip() and not MONTH_BEFORE.search(text, start, trailing.start() + 1):
            end = trailing.start()
        if start < end:
            claims.append(_framed(text, start, end))
    return _with_subjects(text, claims)


def _with_subjects(text: str, claims: list[Claim]) -> list[Claim]:
    """Each claim opening with a pronoun given the subject of the judged claim just before it (subjects.py); a
    pronoun claim after another takes that one's subject."""
    out: list[Claim] = []
    for claim in claims:
        before = out[-1] if out else None
        pronoun = None if before is None or before.not_judged or claim.not_judged else opening_pronoun(claim.checked_text)
        subject = None if pronoun is None or before is None else before.subject or _leading_subject(text, before)
        if subject is not None and pronoun is not None:
            claim = dataclasses.replace(claim, subject=dataclasses.replace(subject, pronoun=pronoun[0], at=pronoun[1]))
        out.append(claim)
    return out


def _leading_subject(text: str, claim: Claim) -> Subject | None:
    """The claim's leading noun phrase as a subject (its pronoun filled in by the claim that takes it)."""
    offset = claim.start + claim.text.find(claim.checked_text)  # -1: framing cut from its middle, no offsets to give
    span = leading_noun_phrase(claim.checked_text)
    if span is None or offset < claim.start:
        return None
    return Subject(text[offset + span[0] : offset + span[1]], offset + span[0], offset + span[1], "", 0)


def _framed(text: str, start: int, end: int) -> Claim:
    piece = text[start:end]
    if whole_sentence_framing(piece):
        return Claim(piece, start, end, not_judged="framing")
    cuts = framing_cut(piece)
    if not cuts:
        return Claim(piece, start, end)
    if cuts[0][0] == 0:  # a prefix: the claim starts after it
        start += cuts[0][1]
        piece, cuts = text[start:end], [(a - cuts[0][1], b - cuts[0][1]) for a, b in cuts[1:]]
    kept, last = [], 0
    for a, b in cuts:
        kept.append(piece[last:a])
        last = b
    kept.append(piece[last:])
    checked = " ".join(part.strip() for part in kept if part.strip())
    return Claim(piece, start, end, checked if checked != piece else "")


@dataclass(frozen=True, slots=True)
class Evidence:
    """What claims are checked against: passages with their vectors, the vocabulary of the same texts, and the
    documents' sentences for alignment (alignment.py)."""

    passages: tuple[Passage, ...]  # document == -1 marks the supporting content used as evidence
    vectors: np.ndarray  # one L2-normalised row per passage
    vocabulary: DocumentVocabulary
    index: EvidenceIndex
    premise: DocumentVocabulary | None = None  # the question's: numbers and names the user stated (lexical.py)
    question: str = ""  # its text: a figure may be worked out from the user's numbers ("we have 8 bags" -> "pay for 3")

    @classmethod
    def of(cls, passages: Sequence[Passage], vectors: np.ndarray, documents: Sequence[str], question: str | None = None,
           index: EvidenceIndex | None = None) -> Evidence:
        """`index`: the documents' sentence index when it was built already (it depends on the documents only)."""
        return cls(tuple(passages), vectors, DocumentVocabulary.of([p.text for p in passages]),
                   index if index is not None else EvidenceIndex(list(enumerate(documents))),
                   None if not question else DocumentVocabulary.of([question]), question or "")


def judge_claim(claim: Claim, vector: np.ndarray | None, evidence: Evidence, thresholds: ClaimThresholds, of: str = "answer") -> ClaimSupport:
    """`vector`: the claim's embedding (None for a claim that is not judged: nothing was embedded for it)."""
    checked = claim.checked_text
    lexical: LexicalEvidence = lexical_evidence(checked, evidence.vocabulary, evidence.premise)
    similarity = document = passage_start = passage_end = None
    best: Passage | None = None
    if evidence.vectors.shape[0] and vector is not None:
        sims = evidence.vectors @ vector
        index = int(np.argmax(sims))
        best, similarity = evidence.passages[index], float(sims[index])
        document = None if best.document < 0 else best.document
        passage_start, passage_end = (None, None) if best.document < 0 else (best.start, best.end)
    # The pronoun's subject counts for alignment and the checks, not for support: how much of the claim's own words
    # the evidence holds (its lexical precision, and the coverage of the window its own words align with).
    resolved = _resolved(claim, evidence.index)
    words = content_words(checked)
    subject_words = [w for w in content_words(resolved) if w not in words] if resolved != checked else []
    own, windows = ([], []) if claim.not_judged is not None else evidence.index.align_with_subject(words, subject_words)  # own: as written
    aligned = windows[0] if windows else None
    own_coverage = own[0].coverage if own else 0.0
    if lexical.missing_numbers:
        lexical = _without_derived(checked, lexical, windows, best, evidence.question)

    def result(outcome: ClaimOutcome, reason: str, conflicts: tuple[str, ...] = ()) -> ClaimSupport:
        return ClaimSupport(
            of, claim.text, claim.start, claim.end, outcome, reason, similarity, document, passage_start, passage_end,
            lexical.precision, lexical.missing_numbers, lexical.missing_names, conflicts,
            None if aligned is None else aligned.document, None if aligned is None else aligned.start, None if aligned is None else aligned.end,
            None if claim.not_judged is not None else own_coverage,
        )

    if claim.not_judged is not None:
        return result(ClaimOutcome.NOT_JUDGED, claim.not_judged)
    # "It was built in 1869." asserts something checkable of its subject: counted with the subject's words.
    if lexical.content_words < thresholds.min_content_words and (resolved == checked or len(content_words(resolved)) < thresholds.min_content_words):
        return result(ClaimOutcome.NOT_JUDGED, "too_short")
    # A pronoun claim is checked as written and as read with its subject: the subject's words may tie the claim to the
    # sentence that introduced the subject, which says nothing against it.
    conflicts = (find_conflicts(resolved, windows, evidence.vocabulary, evidence.index) or comparison_conflicts(resolved, [w.text for w in windows[:_COMPARED]])
                 or (find_conflicts(checked, own, evidence.vocabulary, evidence.index) if subject_words else ()))
    if conflicts:
        return result(ClaimOutcome.CONTRADICTED, "contradicted", conflicts)
    states_numbers = any(quantities(w.text) for w in windows[:1]) or (best is not None and bool(quantities(best.text)))
    if lexical.missing_numbers and states_numbers:
        return result(ClaimOutcome.NOT_FOUND, "number_missing")
    # A missing name counts where the documents write names at all (a lower-cased or OCR'd document lost them).
    if lexical.missing_names and evidence.vocabulary.writes_names:
        return result(ClaimOutcome.NOT_FOUND, "name_missing")
    supported, reason = decide(lexical.precision, similarity, thresholds, own_coverage)
    return result(ClaimOutcome.of_supported(supported), reason)


def _resolved(claim: Claim, index: EvidenceIndex) -> str:
    """The claim as alignment and the checks read it: with its pronoun's subject, when the documents name that subject
    (a subject they never name, "The author" of a first-person text, would only pull the claim away from its evidence)."""
    if claim.subject is None or not any(index.holds(w) for w in content_words(claim.subject.text)):
        return claim.checked_text
    return claim.resolved_text


def _without_derived(claim: str, lexical: LexicalEvidence, windows: Sequence[Window], best: Passage | None, question: str = "") -> LexicalEvidence:
    """The claim's missing numbers but those it works out from its aligned evidence, itself and the question ("two
    midterms at 20% each ... together 40%"; "$27,700, twice the $13,850"; "8 bags, the first 5 free: you pay for 3"):
    a sum, a difference, a ratio is no invented figure."""
    texts = (claim, *(w.text for w in windows), *(() if best is None else (best.text,)), *((question,) if question else ()))
    worked_out = {q.describe() for q in quantities(claim) if q.describe() in lexical.missing_numbers and derived(q, texts)}
    if not worked_out:
        return lexical
    return dataclasses.replace(lexical, missing_numbers=tuple(n for n in lexical.missing_numbers if n not in worked_out))


def judge_short_answer(answer: str, question: str, evidence: Evidence) -> ClaimSupport | None:
    """A one-word answer ("2019.", "Bob.") asserts nothing on its own, but together with its question it does:
    aligned by the question's words, the evidence may state another number or name for the same thing.  A
    contradicted claim spanning the whole answer, or None."""
    text = f"{question.strip()} {answer.strip()}"
    if not quantities(answer) and not names(answer) and not _capitalised(answer):
        return None
    windows = evidence.index.align(content_words(question))
    stated = quantities(windows[0].text) if windows else ()
    unheld = windows and not set(content_words(question)) <= set(content_words(windows[0].text))
    if unheld and quantities(answer) and all(stated_in(q, stated, strict=True) for q in quantities(answer)):
        # Every figure is one the question's sentence offers, and the question asks with a word the sentence does not
        # have ("From 8:00 to 18:00" for a Saturday, where it gives weekday and weekend hours): which part it means,
        # its words cannot tell.  ("2019." for "When did the bridge open?" against "The bridge opened in 2017 and the
        # tunnel in 2019" is still contradicted: the sentence has every word of the question.)
        return None
    conflicts = tuple(c for c in find_conflicts(text, windows, evidence.vocabulary) if not c.startswith(("negation", "opposite", "order")))
    own = {q.describe() for q in quantities(question)}
    conflicts = tuple(c for c in conflicts if not any(c.startswith(f"number: {q} vs") for q in own))
    if not conflicts:
        return None
    lexical = lexical_evidence(answer, evidence.vocabulary)
    start = len(answer) - len(answer.lstrip())
    aligned = windows[0]
    return ClaimSupport(
        "answer", answer.strip(), start, start + len(answer.strip()), ClaimOutcome.CONTRADICTED, "contradicted", None, None, None, None,
        lexical.precision, lexical.missing_numbers, lexical.missing_names, conflicts, aligned.document, aligned.start, aligned.end,
    )


def _capitalised(text: str) -> bool:
    return any(word[:1].isupper() for word in text.split())


def decide(lexical_precision: float, similarity: float | None, thresholds: ClaimThresholds, aligned: float = 1.0) -> tuple[bool, str]:
    """The threshold part of the rule (what calibration tunes): (supported, reason).  `aligned`: the weighted share
    of the claim's words that its aligned sentence window holds (words scattered over the documents are weaker
    evidence than words standing together in one place)."""
    sim = -1.0 if similarity is None else similarity
    if lexical_precision >= thresholds.lexical_alone and aligned >= thresholds.aligned:
        return True, "lexical"
    if sim >= thresholds.similarity:
        return True, "similar"
    if lexical_precision >= thresholds.lexical and sim >= thresholds.similarity_with_lexical:
        return True, "lexical_and_similar"
    return False, "no_evidence"


def verified(claim: ClaimSupport, supported: float, contradicted: float | None, threshold: float) -> ClaimSupport:
    """The claim as the verifier calls it (its probabilities against `threshold`).  Only claims the lexical rules
    decided are handed to the verifier: a contradiction, a missing number or a missing name found explicitly stands."""
    if contradicted is not None and contradicted >= threshold and contradicted > supported:
        return dataclasses.replace(claim, outcome=ClaimOutcome.CONTRADICTED, reason="verifier", verifier_score=supported,
                                   conflicts=(f"verifier: contradiction ({contradicted:.2f})",))
    outcome = ClaimOutcome.SUPPORTED if supported >= threshold else ClaimOutcome.NOT_FOUND
    return dataclasses.replace(claim, outcome=outcome, reason="verifier", verifier_score=supported)


def rejudge(claim: ClaimSupport, thresholds: ClaimThresholds) -> ClaimSupport:
    """The same claim under other thresholds, without embedding again (calibration).  The number and name rules
    and the word count do not depend on the thresholds tuned here."""
    if claim.reason in ("number_missing", "name_missing", "too_short", "framing", "contradicted", "refusal", "verifier"):
        return claim
    aligned = 1.0 if claim.evidence_share is None else claim.evidence_share
    supported, reason = decide(claim.lexical_precision, claim.similarity, thresholds, aligned)
    return dataclasses.replace(claim, outcome=ClaimOutcome.of_supported(supported), reason=reason)


def unsupported(claims: Sequence[ClaimSupport], of: str) -> list[ClaimSupport]:
    return [c for c in claims if c.of == of and c.supported is False]


def judged(claims: Sequence[ClaimSupport], of: str) -> list[ClaimSupport]:
    return [c for c in claims if c.of == of and c.supported is not None]
