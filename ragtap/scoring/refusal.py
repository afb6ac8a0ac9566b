"""Lexical refusal detection.

Cosine scores alone miss refusals: thesis example 5 ("No, the retrieved document does not provide info about
NLB ...") scores a high QA because a refusal repeats the question's words.  A refusal is a statement about the
*documents* or the model's knowledge, so the patterns below look for that, not for any negation: "No, the nitro
hypervisor does not change the APIs" must stay an answer.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ragtap.scoring.lexical import content_words

_NOUN = r"(?:documents?|context|passages?|texts?|sources?|information|excerpts?|snippets?|content)"
_SOURCE = rf"(?:retrieved |provided |given |supplied |above |available )?{_NOUN}"
# A refusal talks about *the* documents: "the context does not mention", not "context switching does not".
_THE_SOURCE = rf"(?:the|this|these|those|such|any|provided|retrieved|given|supplied|available)\s+{_SOURCE}"
_NEG = r"(?:does not|doesn't|do not|don't|did not|didn't|is not|isn't|are not|aren't|cannot|can't|fails? to)"
_VERB = r"(?:contain|provide|include|mention|specify|say|state|cover|address|discuss|have|give|offer|describe|answer|tell)"

BUILTIN_REFUSAL_PATTERNS: tuple[str, ...] = (
    # "the retrieved document does not provide info about ..."
    rf"\b{_THE_SOURCE}\b[^.?!]{{0,80}}?\b{_NEG}\s+(?:\w+\s+)?{_VERB}",
    # "No information available in the retrieved document." / "there is no relevant information about ..."
    r"\bno (?:relevant |specific |such |further |additional )?(?:information|info|details?|mention|data)\b[^.?!]{0,60}?"
    r"\b(?:available|provided|given|found|about|on|regarding|in the|to answer)\b",
    # "not mentioned in the context", "not specified in the provided documents"
    rf"\bnot (?:mentioned|specified|provided|stated|covered|available|found|included|addressed|given)\b[^.?!]{{0,30}}?\b(?:in|by) (?:the )?{_SOURCE}",
    # passive hedges that point at missing information ("the launch time has not been specified"): on WikiEval
    # they mark 4 more of the incomplete answers and none of the 50 grounded ones (docs/judge.md).  Not "are not
    # provided" without "been": that is how documents say what a service leaves out ("gloves are not provided").
    r"\b(?:has|have|had) not been (?:provided|specified|mentioned|stated|disclosed)\b",
    r"\b(?:is|are|was|were) not (?:been )?(?:specified|mentioned|stated|disclosed)\b",
    r"\bcannot be determined\b",
    # the model's own admissions of not knowing
    r"\bI (?:do not|don't) (?:know|have (?:enough |sufficient |any )?(?:information|context|data))\b",
    r"\bI(?:'m| am) (?:not (?:sure|able)|unable)\b",
    r"\b(?:cannot|can't|can not|unable to|not possible to) (?:answer|determine|tell|say|find|provide an answer)\b",
)


@dataclass(frozen=True, slots=True)
class RefusalDetector:
    """Finds refusal wording in an answer; `extra_patterns` come from config.toml."""

    patterns: tuple[re.Pattern[str], ...]

    @classmethod
    def build(cls, extra_patterns: Iterable[str] = ()) -> RefusalDetector:
        sources = (*BUILTIN_REFUSAL_PATTERNS, *extra_patterns)
        return cls(tuple(re.compile(p, re.IGNORECASE) for p in sources))

    def find(self, answer: str) -> str | None:
        """The refusal phrase found in the answer, or None."""
        for pattern in self.patterns:
            match = pattern.search(answer)
            if match:
                return match.group(0)
        return None


DEFAULT_REFUSAL_DETECTOR = RefusalDetector.build()


# Deferrals and hedges: the answer sends the user elsewhere ("refer to your owner's manual", "contact your
# dealer") or says it depends, instead of answering.  One such sentence after a real answer is advice; an answer
# made only of them answers nothing, which the verdict treats as a refusal (scoring/verdict.py).
_ELSEWHERE = r"(?:(?:owner'?s?|user'?s?|vehicle'?s?|service|product)\s+)*(?:manual|handbook|guide|documentation|docs|website|support|dealer(?:ship)?|manufacturer|mechanic|technician|professional|expert|specialist|provider|carrier|administrator)"
DEFERRAL_PATTERNS: tuple[str, ...] = (
    rf"\b(?:refer to|consult(?: with)?|check(?: with)?|see|contact|reach out to|ask|visit|look (?:at|in))\s+(?:the|your|a|an|our|their|its|local|authorized|certified|qualified|reputable)?\s*(?:\w+\s+){{0,3}}?{_ELSEWHERE}\b",
    r"\b(?:it|this|that|the answer)\s+(?:really\s+)?(?:depends|varies|will vary|may vary|can vary)\b",
    r"\b(?:may|might|can|will) vary (?:depending on|by|from)\b",
    r"\bI(?:'m| am) (?:sorry|afraid)\b",
    r"\b(?:as an AI|I do not have access|I don't have access)\b",
)
_DEFERRAL = tuple(re.compile(p, re.IGNORECASE) for p in DEFERRAL_PATTERNS)


_LEAD_WORDS = 3  # content words a sentence may say before its deferral and still be one ("For the exact torque, refer to ...")


def is_deferral(sentence: str) -> bool:
    """True when the sentence defers (elsewhere, "it depends") rather than states something: the deferral leads it.
    "You can ask for a late check-out until 1 p.m. for 25 euros, though it depends on availability" answers first."""
    for pattern in _DEFERRAL:
        match = pattern.search(sentence)
        if match and len(content_words(sentence[: match.start()])) <= _LEAD_WORDS:
            return True
    return False
