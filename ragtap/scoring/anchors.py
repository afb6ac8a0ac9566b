"""A number put in another number's place within one sentence: "no band below 6.5" where the evidence says "an
IELTS score of 6.5, with no band below 6.0"; "end it after 2 months with 6 months' notice" where it says "after 6
months by giving 2 months' notice".

Both values stand in the evidence sentence, so neither is missing, and in a part about the same thing each is
"stated" by its twin.  What gives a number its role is the word right next to it: the word before it ("below",
"after") or the first word after its unit ("notice").  A claim's number whose neighbour word is, in the evidence
sentence, the neighbour of exactly one number -- another value of the same kind -- and not of the number's own twin,
has taken that number's place.

Only words that tell a role count as neighbours: content words and the prepositions of limits and times (below,
above, after, before, within, until, by, from, to, over, under).  A neighbour shared by several of the sentence's
numbers ("for 10 minutes, then cool for 35") says nothing.
"""

from __future__ import annotations

import math
import re

from ragtap.scoring.lexical import STOPWORDS
from ragtap.scoring.quantities import Quantity, quantities
from ragtap.scoring.sentences import STOP_BREAK
from ragtap.scoring.words import stem

_ROLE_PREPOSITIONS = frozenset("below above after before within until by from to over under".split())
_WORD = re.compile(r"[a-z][a-z'’-]*")
_REACH = 3  # words looked at on each side for the neighbour
_BOUNDARY = re.compile(r"[,;:()]|\b(?:and|or|but|while|whereas|then)\b")


def _role_word(words: list[str]) -> str | None:
    for word in words:
        if word in _ROLE_PREPOSITIONS or (word not in STOPWORDS and len(word) > 1):
            return stem(word.strip("'’"))
    return None


def _neighbours(text: str, q: Quantity) -> tuple[str | None, str | None]:
    """(the role word before `q`, the role word after it and its unit), within its own part of the sentence: "£10
    and children £5" gives £10 no neighbour after it."""
    lowered = text.lower()
    before = _WORD.findall(_BOUNDARY.split(lowered[max(0, q.start - 40) : q.start])[-1])[-_REACH:]
    after = _WORD.findall(_BOUNDARY.split(lowered[q.end : q.end + 40])[0])[: _REACH + 1]
    if after and q.slot and stem(after[0].strip("'’")) in (q.slot, stem(q.slot)):
        after = after[1:]  # the unit: "2 months' [notice]"
    return _role_word(list(reversed(before))), _role_word(after)


def _same_kind(claim: Quantity, evidence: Quantity) -> bool:
    """Two numbers that could stand in each other's place: the same unit or noun counted, or both bare ("6.0" / "6.5"
    of a score), never a year against a count."""
    if claim.ordinal != evidence.ordinal or claim.is_year != evidence.is_year:
        return False
    return claim.slot == evidence.slot or (claim.dimension is not None and claim.dimension == evidence.dimension)


def values_in_each_others_places(claim: str, evidence: str) -> list[str]:
    """Why a number of the claim stands in another's place in one evidence sentence ("number: 6.5 below vs 6.0").
    A number the evidence also states with the same neighbour anywhere (another sentence about another person's
    "24 months in prison") is in its place."""
    own = [q for q in quantities(claim) if not q.is_year]  # years are dated and compared by conflicts.py
    if not own:
        return []
    sentences = []
    for sentence in STOP_BREAK.split(evidence):
        found = quantities(sentence)
        sentences.append((found, [_neighbours(sentence, e) for e in found]))
    for q in own:
        mine = _neighbours(claim, q)
        if any(_same_kind(q, e) and math.isclose(e.value, q.value) and any(a is not None and a == b for a, b in zip(place, mine))
               for found, places in sentences for e, place in zip(found, places)):
            continue
        for found, places in sentences:
            kind = [i for i, e in enumerate(found) if _same_kind(q, e)]
            twins = [i for i in kind if math.isclose(found[i].value, q.value)]
            others = [i for i in kind if i not in twins]
            if len(twins) != 1 or not others:
                continue
            for side in (0, 1):
                word = mine[side]
                holders = [i for i, place in enumerate(places) if word is not None and place[side] == word]
                if len(holders) == 1 and holders[0] in others:
                    return [f"number: {q.describe()} {word} vs {found[holders[0]].describe()}"]
    return []
