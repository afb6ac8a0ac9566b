"""Comparisons: "A is taller than B" checked against the values the documents give A and B.

An answer often compares what the documents only measure: "Mount Ilde is taller than Mount Kareth" where one sentence
says Mount Kareth rises to 3,412 metres and another that Mount Ilde is 2,980 metres high.  No sentence states the
comparison, so alignment (alignment.py) finds no window that holds the claim; the check here reads the comparative,
its two sides (the words before it and after "than"), and one value for each side from the evidence: a quantity of
a sentence that names that side and not the other.  The two values must be of one dimension the comparative fits
(taller: a length, heavier: a mass, older: years, cheaper: money; larger, more: any) and the claim must say the
opposite of what they say.  A claim that gives no two sides, or sides the documents give no single value for, is
left to the other rules.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ragtap.scoring.lexical import content_words
from ragtap.scoring.quantities import Quantity, in_base_unit, quantities
from ragtap.scoring.sentences import STOP_BREAK

# comparative -> (+1 when it says the first side has more, -1 when less; the dimensions it can be about, None: any)
_COMPARATIVES: dict[str, tuple[int, frozenset[str] | None]] = {}


def _comparative(sign: int, dimensions: str | None, *words: str) -> None:
    for word in words:
        _COMPARATIVES[word] = (sign, None if dimensions is None else frozenset(dimensions.split()))


_comparative(+1, "length", "taller", "higher", "deeper", "wider", "longer")
_comparative(-1, "length", "shorter", "lower", "shallower", "narrower")
_comparative(+1, "mass", "heavier")
_comparative(-1, "mass", "lighter")
_comparative(+1, "time", "older")
_comparative(-1, "time", "younger")
_comparative(+1, "money_eur money_gbp money_usd", "costlier", "pricier", "dearer")
_comparative(-1, "money_eur money_gbp money_usd", "cheaper")
_comparative(+1, "speed", "faster", "quicker")
_comparative(-1, "speed", "slower")
_comparative(+1, None, "larger", "bigger", "greater", "more")
_comparative(-1, None, "smaller", "less", "fewer")

_CLAIM = re.compile(r"^(?P<first>.+?)\s+(?:is|are|was|were|has|have|had|stands?|rises?|runs?|costs?|weighs?|grows?|became|becomes?)"
                    r"\s+(?:[\w,.]+\s+){0,3}?"
                    r"(?P<word>" + "|".join(_COMPARATIVES) + r")\s+(?:\w+\s+){0,2}?than\s+(?P<second>[^,;.()]+)", re.IGNORECASE)
_THE = frozenset({"mount", "lake", "river", "the"})
_NOT_COMPARED = frozenset({"time_of_day", "multiple", "percent", "temperature"})  # not what "more" or "larger" weighs  # words that name no side on their own ("Mount" in both names)


@dataclass(frozen=True, slots=True)
class _Side:
    words: frozenset[str]
    value: Quantity | None = None


def comparison_conflicts(claim: str, evidence: Sequence[str]) -> tuple[str, ...]:
    """Why the claim's comparison says the opposite of the values `evidence` (texts) gives its two sides."""
    match = _CLAIM.search(claim)
    if match is None:
        return ()
    sign, dimensions = _COMPARATIVES[match.group("word").lower()]
    said_first = frozenset(content_words(match.group("first"))) - _THE
    said_second = frozenset(content_words(match.group("second"))) - _THE
    first, second = said_first - said_second, said_second - said_first  # "Hillcrest school" / "Riverside school"
    if not first or not second:
        return ()
    sentences = list(dict.fromkeys(s for text in evidence for s in STOP_BREAK.split(text)))  # windows overlap
    a, b = _value(first, second, sentences, dimensions), _value(second, first, sentences, dimensions)
    if a is None or b is None or a.dimension != b.dimension or (a.dimension is None and a.slot != b.slot):
        return ()  # "12 stations" and "15 stations" compare; "12 stations" and "15 people" do not
    difference = in_base_unit(a) - in_base_unit(b)
    if difference == 0 or (difference > 0) == (sign > 0):
        return ()
    return (f"comparison: {' '.join(sorted(first))} {a.text} vs {' '.join(sorted(second))} {b.text}",)


def _value(side: frozenset[str], other: frozenset[str], sentences: list[str], dimensions: frozenset[str] | None) -> Quantity | None:
    """The one quantity the evidence gives `side`: in a sentence naming it and not `other`, of a dimension the
    comparative fits; None when there is none or more than one."""
    found = []
    for sentence in sentences:
        words = set(content_words(sentence))
        if side <= words and not other & words:
            found += [q for q in quantities(sentence) if q.slot is not None and not q.is_year and not q.ordinal
                      and q.dimension not in _NOT_COMPARED and (dimensions is None or q.dimension in dimensions)]
    return found[0] if len(found) == 1 else None
