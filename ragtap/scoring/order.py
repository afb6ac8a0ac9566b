"""Order: two events of the documents told in the other order.

- **within a clause** (`reversed_order`, called by polarity.py for each claim clause and its evidence clause): the same
  order relation with its two events swapped ("update the firmware before backing up" where the manual says to back
  up before updating), however each side words it (before, after, prior to, until, a fronted "Before ..., ...", "A,
  then B", "first by A, then by B");
- **across sentences** (`sequence_conflicts`, over the claims of a whole answer): steps told in the reverse of the
  documents' sequence ("First, load the filament. Then level the bed." where the manual levels the bed first), where
  both sides say the order explicitly.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ragtap.scoring.alignment import EvidenceIndex, EvidenceSentence
from ragtap.scoring.lexical import content_words
from ragtap.types import ClaimOutcome, ClaimSupport

_DURATION = re.compile(r"\b(?:seconds?|minutes?|hours?|days?|weeks?|months?|years?|decades?|shortly|long|soon|just|moments?)\s+$", re.IGNORECASE)
_ORDER_CUE = re.compile(r"\b(before|after|prior\s+to|followed\s+by|until)\b|(,|\band)?\s+(then)\b", re.IGNORECASE)
_FIRST = re.compile(r"\bfirst(?:ly)?\b", re.IGNORECASE)
# What may stand before a fronted "Before ..., ..." (nothing but a linking word: "... there before moving to Texas, and
# later to San Francisco" is no fronted clause).
_OPENS = re.compile(r"\W*(?:(?:and|but|so|then|first|next)\W+)?", re.IGNORECASE)
_A_TIME = re.compile(r"\s*(?:about\s+|around\s+|roughly\s+|approximately\s+|at\s+least\s+|at\s+most\s+|just\s+)?"
                     r"(?:\d|(?:a|an|one|two|three|four|five|six|seven|eight|nine|ten|twelve|a\s+few|several)\s+"
                     r"(?:seconds?|minutes?|hours?|days?|weeks?|months?|years?)\b|(?:noon|midnight|dark|dawn|dusk)\b)", re.IGNORECASE)
_CONDITION = re.compile(r"\b(?:if|when|whenever|unless)\b", re.IGNORECASE)


def _event_order(clause: str, shared: set[str], words: Callable[[str], set[str]]) -> tuple[set[str], set[str]] | None:
    """(what happens first, what happens later), as the clause's shared words, from the first order word that has
    shared words on both sides: "A before B" and "Before B, A" -> (A, B); "A after B" and "After B, A" -> (B, A);
    "A, then B", "A and then B" and "first A, then B" -> (A, B) (not "if A, then B": a condition, no order); after
    "first", A is what follows it ("ties are broken first by [points], then by [wins]": the words before "first" are
    what both events share)."""
    for cue in _ORDER_CUE.finditer(clause):
        if _DURATION.search(clause, 0, cue.start()):
            return None  # "about a week before we met, ...": a date given by another event, not two events in order
        word = (cue.group(1) or cue.group(3)).lower().split()[0]
        head, tail = clause[: cue.start()], clause[cue.end() :]
        if word != "then" and _A_TIME.match(tail):
            continue  # "the bonus scheme starts after 12 months": a time, not another event
        if word == "then":
            first = [*_FIRST.finditer(head)]
            if _CONDITION.search(head) or not (first or cue.group(2)):
                continue  # a bare "then" orders nothing without a "first" before it ("since then", "by then")
            after_first = head[first[-1].end() :] if first else ""
            left, right = after_first if words(after_first) & shared else head, tail
        elif _OPENS.fullmatch(head) and "," in tail:  # fronted: "Before updating the software, back up"
            inner, _, outer = tail.partition(",")
            left, right = outer, inner  # "Before B, A" reads "A before B"
        else:
            left, right = head, tail
        a, b = words(left) & shared, words(right) & shared
        if a and b:
            return (a, b) if word in ("before", "prior", "followed", "until", "then") else (b, a)
    return None


def reversed_order(claim: str, evidence: str, shared: set[str], words: Callable[[str], set[str]]) -> str | None:
    """The two events of an order relation swapped: "update, then back up" against "back up before updating"
    (however each side words it: before, after, prior to, a fronted "Before ..., ...")."""
    claim_order, evidence_order = _event_order(claim, shared, words), _event_order(evidence, shared, words)
    if claim_order is None or evidence_order is None:
        return None
    return "order: the events are reversed" if _reversed(claim_order, evidence_order) else None


def _reversed(claim: tuple[set[str], set[str]], evidence: tuple[set[str], set[str]]) -> bool:
    """The claim's (first, later) events are the evidence's (later, first), as words.  A word on both sides of one
    order is what the two events share, not either event ("Before updating the [router] firmware, back up the
    [router] settings"); so is a word both first events hold, the subject the order comes after ("[Entries are
    sorted] by surname, then by age"): the first events may share words, the later ones may not."""
    (c_first, c_later), (e_first, e_later) = _distinct(*claim), _distinct(*evidence)
    return bool(c_first & e_later and c_later & e_first and not c_later & e_later)


def _distinct(first: set[str], later: set[str]) -> tuple[set[str], set[str]]:
    return first - later, later - first


# ---------------------------------------------------------------------------------------------- steps across sentences
# An answer's steps told in the reverse of the documents' sequence ("First, load the filament. Then level the bed."
# where the manual says to level the bed, and only then load the filament).  Claims are judged one by one, and each
# of these is in the documents; only the order is wrong.  Both sides must say the order explicitly: answers reorder
# facts freely, so an answer's order counts only where its sentence says "then", "next", "after that", "finally"...
# (or one claim says "A before B" / "after A, B"), and the documents' only where they mark a sequence (a step opening
# with "Next", "Then", "Only then", "After that", "Finally", "Step 2", a numbered item; or the earlier step opening
# with "First").

# A claim (or a document's sentence) that opens with one of these says it comes after the one before it; not a fronted
# "After X, ..." or "Before X, ...": those order the sentence's own two events, not it after the sentence before.
_NEXT_STEP = re.compile(
    r"^\W*(?:(?:and\s+|only\s+)?then(?!\s+again)|next|after\s+(?:that|this|which|doing\s+so)|afterwards?|subsequently|following\s+(?:that|this)"
    r"|finally|lastly|once\s+(?:that|this|done|finished|complete)|second(?:ly)?|third(?:ly)?|fourth(?:ly)?|fifth(?:ly)?)\b",
    re.IGNORECASE)
# Where a claim goes on to its next step: "..., then ...", "... and then ...", "...; finally ...", "..., and after that ...".
_STEP_BREAK = re.compile(r"(?:[,;]\s+(?:and\s+)?|\s+and\s+)(?=(?:then|finally|lastly|next|afterwards|after\s+that)\b)", re.IGNORECASE)
# A document's sentence that opens with one of these comes first.
_FIRST_STEP = re.compile(r"^\W*(?:first(?:ly)?|to\s+(?:begin|start)|start\s+by|begin\s+by)\b", re.IGNORECASE)
# A numbered step: "Step 2: Drain the beans", "2. Drain the beans", "2) Drain" (at the start of its line).
_NUMBERED = re.compile(r"\s*(?:step\s*(\d{1,2})\b|(\d{1,2})[.)]\s)", re.IGNORECASE)
_MARKER_ONLY = re.compile(r"\s*(?:step\s*)?\d{1,2}[.):]?\s*", re.IGNORECASE)
# Words of sequence itself: they say where a step stands, not what it is.
_SEQUENCE_WORDS = frozenset(content_words("first firstly then next afterwards finally lastly subsequently second secondly third step"))
MIN_STEP_COVERAGE = 0.6  # weighted share of a step's content words its document sentence must hold
AMBIGUOUS = 0.1  # another sentence holding a step about as well: the step's place is not known


@dataclass(frozen=True, slots=True)
class _Step:
    """Where one step of the answer stands in the documents."""

    sentence: int  # index into the evidence index's sentences
    document: int
    words: frozenset[str]


def sequence_conflicts(texts: Sequence[str], judged: Sequence[ClaimSupport], index: EvidenceIndex,
                       documents: Sequence[str]) -> list[ClaimSupport]:
    """The answer's claims (`judged`, `texts` the text each was checked as), with a supported claim whose order word
    puts one of its steps after a step the documents mark as later made contradicted.  The answer's steps are its
    claims, cut where a claim goes on with "then", "and finally"... ("Then back up your data, and finally ship the
    phone"); a step follows the step before when it opens with such a word.  A claim ordering two events itself ("load
    the filament before you level the bed") is compared too, where the two stand in two sentences of the documents."""
    out = list(judged)
    previous: set[str] | None = None  # the words of the answer's step before
    for i, (text, claim) in enumerate(zip(texts, judged)):
        if claim.outcome is ClaimOutcome.NOT_JUDGED:
            continue
        pairs: list[tuple[set[str], set[str]]] = []
        pieces = _STEP_BREAK.split(text)
        for n, piece in enumerate(pieces):
            words = _words(piece)
            follows = not _CONDITION.search(pieces[n - 1]) if n else _NEXT_STEP.match(piece)  # not "if A, then B"
            if previous is not None and follows:
                pairs.append((previous, words))
            previous = words
        events = _event_order(text, _words(text), _words)
        if events is not None:
            pairs.append(events)
        if claim.outcome is not ClaimOutcome.SUPPORTED:
            continue
        for earlier, later in pairs:
            why = _against_documents(earlier, later, index, documents)
            if why:
                out[i] = dataclasses.replace(claim, outcome=ClaimOutcome.CONTRADICTED, reason="contradicted", conflicts=(why,))
                break
    return out


def _words(text: str) -> set[str]:
    return set(content_words(text)) - _SEQUENCE_WORDS


def _against_documents(earlier: set[str], later: set[str], index: EvidenceIndex, documents: Sequence[str]) -> str | None:
    """Why the documents do the step of words `later` before the step of words `earlier` (None when they do not
    say so, or not explicitly)."""
    first, then = _step(earlier, index), _step(later, index)
    if first is None or then is None or first.document != then.document:
        return None
    if first.sentence == then.sentence:
        # One sentence of the documents holds both: its own order words decide ("A, then B", "B after A").
        said = _event_order(index.sentences[first.sentence].text, set(first.words | then.words), _words)
        if said is not None and _reversed((set(first.words), set(then.words)), said):
            return "order: the documents do these the other way round"
        return None
    if then.sentence > first.sentence:
        return None  # the documents' order, or none
    before, after = index.sentences[then.sentence], index.sentences[first.sentence]
    document = documents[before.document] if 0 <= before.document < len(documents) else ""
    numbered = _step_number(document, before), _step_number(document, after)
    if _NEXT_STEP.match(after.text) or _FIRST_STEP.match(before.text) \
            or (numbered[0] is not None and numbered[1] is not None and numbered[0] < numbered[1]):
        return f'order: the documents do "{_shown(before.text)}" before "{_shown(after.text)}"'
    return None


def _step(words: set[str], index: EvidenceIndex) -> _Step | None:
    """The one sentence of the documents that holds the step of `words` (None when none holds most of it, or when
    another holds it about as well)."""
    if len(words) < 2:
        return None
    windows = index.align(sorted(words), limit=4)
    if not windows or windows[0].coverage < MIN_STEP_COVERAGE or windows[0].covered < 2:
        return None
    best = windows[0]
    if any(w.coverage >= best.coverage - AMBIGUOUS for w in windows[1:] if not set(w.sentences) & set(best.sentences)):
        return None
    # Of a window of two sentences ("level the bed using the calibration menu; this takes about 8 minutes"), the one
    # holding most of the step.
    sentence = max(best.sentences, key=lambda i: (len(words & index.sentences[i].words), -i))
    return _Step(sentence, best.document, frozenset(words & index.sentences[sentence].words))


def _step_number(document: str, sentence: EvidenceSentence) -> int | None:
    """The number of the list item or step the sentence opens ("Step 2: ...", "2. ..."), if any.  The alignment's
    sentences may have cut "2." off its item: what stands between the line's start and the sentence counts when it
    is such a marker."""
    lead = document[document.rfind("\n", 0, sentence.start) + 1 : sentence.start]
    match = _NUMBERED.match((lead if _MARKER_ONLY.fullmatch(lead) else "") + sentence.text)
    return None if match is None else int(match.group(1) or match.group(2))


def _shown(sentence: str, limit: int = 60) -> str:
    return sentence if len(sentence) <= limit else sentence[: limit - 3].rstrip() + "..."
