"""A short reply to a yes/no question: "No, they don't." says, with its question, "motorcycles do not need a permit".

Alone, "Yes." or "No, they don't." has no content word to judge (claims below `min_content_words` are not judged),
so the verdict fell to the whole-answer similarity rule, which a reply of three words never passes: faithful short
replies were flagged `parametric`, and a flipped one was flagged for the same wrong reason.  Read with its question,
a reply states the question's proposition, affirmed or denied, and that is compared with the evidence the question's
words align with, as any claim is:

- the question must be a plain yes/no question (it opens with an auxiliary: "Do", "Is", "Can", "Should" ...), with
  no negation of its own ("Isn't it free?": what "No" answers is ambiguous) and no alternative ("... or ...?");
- the reply must open with "Yes" or "No" (a "No" and the reply's own "don't" are one denial);
- the evidence window must hold every content word of the question: a "Yes" to a question about something the
  documents never mention is not judged by them (it stays with the whole-answer rule);
- a negation on one side only, an opposite or a denied permission makes the reply **contradicted** (polarity.py);
  otherwise it is **supported** when one clause of the window holds all it says, the reply's own words beyond the
  Yes/No too ("Yes, on both days"): "Workshops are included in every ticket, but the gala dinner costs 60 euros
  extra" answers "Is the gala dinner included?" in neither clause.
"""

from __future__ import annotations

import dataclasses
import re

from ragtap.scoring.alignment import EvidenceIndex, Window
from ragtap.scoring.lexical import content_words
from ragtap.scoring.polarity import clauses, polarity_conflicts
from ragtap.types import ClaimOutcome, ClaimSupport

_YES_NO_QUESTION = re.compile(
    r"^\s*(?:do|does|did|is|are|was|were|can|could|will|would|should|shall|may|might|must|has|have|had)\s+(?P<rest>[^?]+?)\s*\?\s*$",
    re.IGNORECASE,
)
_NEGATED_OR_ALTERNATIVE = re.compile(r"n[’']t\b|\b(?:not|never|no|or|either|whether)\b", re.IGNORECASE)
_REPLY = re.compile(r"^\s*(?P<word>yes|yeah|yep|correct|no|nope)\b[\s,.!:;—–-]*(?P<rest>.*?)\s*[.!]?\s*$", re.IGNORECASE | re.DOTALL)
_DENIAL = re.compile(r"\b(?:do|does|did|is|are|was|were|can|could|will|would|should|has|have|had|must)n[’']t\b|\b(?:not|cannot|can't|won't)\b",
                     re.IGNORECASE)
_NEGATIVE = frozenset({"no", "nope"})


def statement(question: str, reply: str) -> str | None:
    """What the reply says with its question ("not do motorcycles need a permit"), or None when it is no plain
    yes/no reply to a plain yes/no question."""
    asked, answered = _YES_NO_QUESTION.match(question or ""), _REPLY.match(reply or "")
    if asked is None or answered is None or _NEGATED_OR_ALTERNATIVE.search(asked.group(0)):
        return None
    rest, negative = answered.group("rest"), answered.group("word").lower() in _NEGATIVE
    if _DENIAL.search(rest):
        if not negative:
            return None  # "Yes, they don't": no plain affirmation
        rest = _DENIAL.sub(" ", rest)  # "No" and "don't" are one denial
    rest = " ".join(rest.split()) if content_words(rest) else ""  # "they do", "it is": the question says it all
    return f"{'not ' if negative else ''}{asked.group(0).rstrip(' ?')} {rest}".strip()


def judge_reply(answer: str, question: str, index: EvidenceIndex) -> ClaimSupport | None:
    """The reply judged with its question: a supported or contradicted claim spanning the whole answer, or None
    (no yes/no reply, or the documents do not hold the question's words in one place)."""
    said = statement(question, answer)
    if said is None:
        return None
    words = list(dict.fromkeys(content_words(said)))
    window = _holding_the_question(index, words, question)
    if window is None:
        return None
    conflicts = tuple(polarity_conflicts(said, window, lossy=window.document in index.lossy))
    if conflicts:
        outcome, reason = ClaimOutcome.CONTRADICTED, "contradicted"
    else:
        # Support asks more than the window: one clause holding all the reply says.  In "Workshops are included in
        # every ticket, but the gala dinner costs 60 euros extra", "Is the gala dinner included?" is answered by
        # neither clause.
        if not any(set(words) <= set(content_words(clause)) for clause in clauses(window.text)):
            return None
        outcome, reason = ClaimOutcome.SUPPORTED, "lexical"
    held = {x for i in window.sentences for x in index.sentences[i].words}
    text = answer.strip()
    start = len(answer) - len(answer.lstrip())
    precision = sum(w in held for w in words) / len(words)
    return ClaimSupport("answer", text, start, start + len(text), outcome, reason, None, None, None, None, precision, (), (),
                        conflicts, window.document, window.start, window.end, window.coverage)


# A reply that qualifies its Yes/No ("Yes, on bank holiday Mondays only", "No, unless ...") says more than the
# question's proposition: it is judged as its own claim, not read as a plain yes or no.
_QUALIFIED = re.compile(r"\b(?:only|if|when|whenever|except|unless|but|provided|as\s+long\s+as|until|after|before|depend\w*|sometimes|usually|mostly)\b",
                        re.IGNORECASE)


def answered_against(question: str, first: ClaimSupport, index: EvidenceIndex) -> ClaimSupport:
    """The answer's first claim, contradicted when it opens with a plain Yes or No that turns around what the evidence
    says of the question: "Yes, it can be combined with ibuprofen." to "Can I take it with ibuprofen?" where the
    leaflet says it "should not be taken with ... ibuprofen" (the claim's own words, "combined", barely align).  Only
    ever a contradiction: support still comes from the claim's own words."""
    asked, answered = _YES_NO_QUESTION.match(question or ""), _REPLY.match(first.text or "")
    if first.outcome is not ClaimOutcome.SUPPORTED or asked is None or answered is None \
            or _NEGATED_OR_ALTERNATIVE.search(asked.group(0)) or _QUALIFIED.search(answered.group("rest")):
        return first
    core = statement(question, answered.group("word"))  # the plain yes or no, whatever words follow it
    window = _holding_the_question(index, list(dict.fromkeys(content_words(core or ""))), question)
    if window is None:
        return first
    conflicts = tuple(polarity_conflicts(core, window, lossy=window.document in index.lossy))
    if not conflicts:
        return first
    return dataclasses.replace(first, outcome=ClaimOutcome.CONTRADICTED, reason="contradicted", conflicts=tuple(f"reply: {c}" for c in conflicts),
                               evidence_document=window.document, evidence_start=window.start, evidence_end=window.end)


def _holding_the_question(index: EvidenceIndex, words: list[str], question: str) -> Window | None:
    """The best window for `words` whose sentences hold every content word of the question (None: no window does,
    the documents do not answer it in one place)."""
    asked = set(content_words(question))
    if not asked:
        return None
    return next((w for w in index.align(words) if asked <= {x for i in w.sentences for x in index.sentences[i].words}), None)
