"""A number put in another number's place within one sentence: "no band below 6.5" where the evidence says "an
IELTS score of 6.5, with no band below 6.0"; "end it after 2 months with 6 months' notice" where it says "after 6
months by giving 2 months' notice".

Both values stand in the evidence sentence, so neither is missing, and in a part about the same thing each is
"stated" by its twin.  What gives a number its role is the limit or time word next to it, before it ("below 6.0",
"after 6 months") or after its unit ("2 months before").  A claim's number whose neighbour word is, in the evidence
sentence, the neighbour of exactly one number -- another value of the same kind -- and not of the number's own twin,
has taken that number's place (unless its twin has that neighbour on its other side: "more than 35 hours over
parts of seven days" is said of 35 hours too).

Only the prepositions of limits and times count as neighbours (below, above, after, before, within, until, over,
under), the nearest one within three words before a number or after its unit, in its own part of the sentence
("until they reach 6 months"): content words move freely in a paraphrase ("the excess is £1,000 for subsidence,
against the standard £250"), and "to" and "from" join the ends of ranges and changes.  A neighbour shared by several
of the sentence's numbers says nothing.
"""

from __future__ import annotations

import math
import re

from ragtap.scoring.quantities import Quantity, quantities
from ragtap.scoring.sentences import STOP_BREAK
from ragtap.scoring.words import stem

# Not "to" and "from": they join the two ends of a range or a change ("rounds 1 to 5", "from 10 to 5 minutes").
_ROLE_PREPOSITIONS = frozenset("below above after before within until over under".split())
# For a time of day, "from" and "by" give its role too: a start and a deadline.
_CLOCK_ROLES = frozenset({"from", "by"})
_WORD = re.compile(r"[a-z][a-z'’-]*")
_REACH = 3  # words looked at on each side for the neighbour
_BOUNDARY = re.compile(r"[,;:()]|\b(?:and|or|but|while|whereas|then)\b")


def _role_word(words: list[str], roles: frozenset[str] = frozenset()) -> str | None:
    """The nearest preposition of a limit or a time among `words` (nearest first): "until [they reach] 6 months"."""
    return next((word for word in words if word in _ROLE_PREPOSITIONS or word in roles), None)


def _neighbours(text: str, q: Quantity) -> tuple[str | None, str | None]:
    """(the role word before `q`, the role word after it and its unit), within its own part of the sentence: "£10
    and children £5" gives £10 no neighbour after it."""
    lowered = text.lower()
    before = _WORD.findall(_BOUNDARY.split(lowered[max(0, q.start - 40) : q.start])[-1])[-_REACH:]
    after = _WORD.findall(_BOUNDARY.split(lowered[q.end : q.end + 40])[0])[: _REACH + 1]
    if after and q.slot and stem(after[0].strip("'’")) in (q.slot, stem(q.slot)):
        after = after[1:]  # the unit: "2 months' [notice]"
    roles = _CLOCK_ROLES if q.dimension in ("time_of_day", "clock") else frozenset()  # "check in from 14:00, out by 11:00"
    return _role_word(list(reversed(before)), roles), _role_word(after, roles)


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
                if len(holders) == 1 and holders[0] in others and word not in places[twins[0]]:
                    return [f"number: {q.describe()} {word} vs {found[holders[0]].describe()}"]
    return []
