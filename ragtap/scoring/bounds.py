"""Bounds: a claim that restates the bound on a number of its evidence wrongly, while its words mostly match.

"More than 3 displays need a licence" and "3 or more displays need a licence" share every word and number, and
differ on the shop with 3 displays; "passengers over 65" and "passengers aged 65 and over" differ on the passenger
of 65.  quantities.py reads "more than 3" as a hedged 3 (it agrees with 3), so the number check never sees a bound.
Here each number with a bound phrase is read as a `Bound`: lower or upper, inclusive or not ("more than", "over",
"above", "exceeding" / "at least", "N or more", "N and over", "N+" / "less than", "under", "below" / "at most", "up
to", "no more than", "N or under", "N or younger").  A claim's bound on the number its evidence bounds the same way
is contradicted when the two differ in whether the number itself is in.  For counts (a whole number of things, no
unit) "more than 3" and "4 or more" are one bound, so an equal bound in other words agrees (and `restated_bound`
tells derived.py the "4" is no missing number).  A bound the other way ("no more than 30 minutes late" / "more than
30 minutes late") is mostly the complement, told with a negation elsewhere: polarity.py's.  Years, dates and times
of the day are left to the other checks ("up to 2016" is "until").

What a claim drops of a restriction (a threshold on what a sentence speaks of, a condition) is restrictions.py's.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ragtap.scoring.alignment import Window
from ragtap.scoring.lexical import content_words
from ragtap.scoring.quantities import Quantity, agree, in_base_unit, quantities


@dataclass(frozen=True, slots=True)
class Bound:
    """A number with a bound phrase: "more than 3 displays" is (3 displays, lower, exclusive)."""

    quantity: Quantity
    lower: bool  # a lower bound ("at least", "over"); else an upper one ("at most", "under")
    inclusive: bool  # the number itself is in ("at least 3", "3 or more"); not in "more than 3"
    phrase: str  # as written, for the reason shown
    start: int  # where the phrase starts in the text ("[more than] 3", "[3] or more")
    negated: bool = False  # a negation governs it ("must not take more than 2", "avoid spinning above 30"): compared only with another

    def closed(self) -> tuple[bool, float, bool]:
        """(lower, value, inclusive) with a whole count's exclusive bound made the next count's inclusive one ("more
        than 3 displays" = "4 or more displays"); a measure's stays exclusive ("more than 2 years")."""
        value = self.quantity.value
        if not self.inclusive and _whole(self.quantity):
            return self.lower, value + (1 if self.lower else -1), True
        return self.lower, value, self.inclusive

    def describe(self) -> str:
        return " ".join(self.phrase.split())


# Bound phrases before the number ("more than 3", "at least $50", "aged under 5"), as (lower, inclusive).
_BEFORE = {
    "more than": (True, False), "greater than": (True, False), "over": (True, False), "above": (True, False),
    "exceeding": (True, False), "in excess of": (True, False), "older than": (True, False), "longer than": (True, False),
    "at least": (True, True), "no less than": (True, True), "no fewer than": (True, True), "not less than": (True, True),
    "not fewer than": (True, True), "a minimum of": (True, True), "minimum of": (True, True), "minimum": (True, True),
    "less than": (False, False), "fewer than": (False, False), "under": (False, False), "below": (False, False),
    "younger than": (False, False), "shorter than": (False, False),
    "at most": (False, True), "up to": (False, True), "no more than": (False, True), "not more than": (False, True),
    "never more than": (False, True), "a maximum of": (False, True), "maximum of": (False, True), "maximum": (False, True),
    "not exceeding": (False, True), "no older than": (False, True),
}
_BEFORE_PHRASE = re.compile(r"\b(" + "|".join(sorted((re.escape(p) for p in _BEFORE), key=len, reverse=True)) + r")\s+(?:the\s+age\s+of\s+)?[$€£]?\s*$")
# Bound phrases after the number and what it counts ("3 displays or more", "65 and over", "18 years or older", "18+").
_AFTER = {
    **{f"or {w}": (True, True) for w in ("more", "over", "above", "older", "greater", "higher", "longer")},
    **{f"and {w}": (True, True) for w in ("over", "above", "older", "up", "upwards")},
    **{f"or {w}": (False, True) for w in ("less", "fewer", "under", "below", "younger", "lower", "shorter")},
    **{f"and {w}": (False, True) for w in ("under", "below", "younger")},
}  # (not "and more", "and less": "5 restaurants and more shops" adds, it does not bound)
_AFTER_PHRASE = re.compile(r"(?:\s*[^\W\d_][\w-]*){0,3}?\s+(" + "|".join(re.escape(p) for p in _AFTER) + r")\b")
# "leading up to", "building up to": a way to a point, not a bound
_A_WAY_UP = re.compile(r"\b(?:lead|leads|leading|led|build|builds|building|built|work|works|working|run|runs|running|count|counts|counting|"
                       r"move|moves|moving|moved|go|goes|going|went|add|adds|adding|ramp|ramping|gear|gearing|live|living|lived)\s+$")
_JUST = re.compile(r"\b(?:just|slightly|a\s+little|well)\s+$")  # "just over 1,000": a rounding, its edge no matter


# A negation shortly before a bound phrase turns it ("do not spin the wheels for more than 30 seconds": at most 30), and
# it may govern a verb whose object holds the bound ("do not use fuel containing more than 15% ethanol"): such a bound is
# compared only with another negated one, never read as its converse.
_NEGATED = re.compile(r"\b(?:not|never|n[’']t|cannot|avoid|avoiding)\b[^.;:!?,]{0,80}$")


_BEFOREHAND = re.compile(r"(?:\s*[^\W\d_][\w'’-]*)?\s+(?:before|prior|in\s+advance|ahead|earlier|ago|beforehand)\b")
_NUMBER_NEXT = re.compile(r"\s*[$€£]?\s*\d")  # "$3.2 million a day and over [$1 billion]": the next number's bound


def bounds(text: str) -> tuple[Bound, ...]:
    """The bounded numbers of `text`, in order.  Not years, dates, times of the day or ordinals; not "over" a span
    of time ("paid over 12 months" spreads, it does not bound)."""
    lowered = text.lower()
    out = []
    for q in quantities(text):
        if q.is_year or q.ordinal or q.dimension in ("time_of_day", "clock") or (q.slot or "").startswith("day_of_") or q.slot == "clock":
            continue
        found = _bound_of(lowered, q)
        if found is not None:
            out.append(found)
    return tuple(out)


def _bound_of(lowered: str, q: Quantity) -> Bound | None:
    if q.dimension == "time" and _BEFOREHAND.match(lowered, q.end):
        return None  # "up to 24 hours before the visit" is "at least 24 hours ahead": the bound is read backwards
    head = lowered[max(0, q.start - 40) : q.start]
    before = _BEFORE_PHRASE.search(head)
    if before is not None:
        word = before.group(1)
        if word == "over" and q.dimension == "time":
            return None
        if _JUST.search(head, 0, before.start()) or (word == "up to" and _A_WAY_UP.search(head, 0, before.start())):
            return None
        lower, inclusive = _BEFORE[word]
        start = q.start - len(head) + before.start()  # where the phrase starts in the text
        negated = _NEGATED.search(lowered, max(0, start - 100), start) is not None and not word.startswith(("not ", "no ", "never "))
        return Bound(q, lower, inclusive, f"{word} {q.text}", start, negated)
    if lowered[q.end : q.end + 1] == "+" or q.text.endswith(("-plus", "plus")):
        return Bound(q, True, True, f"{q.text}+", q.start)
    after = _AFTER_PHRASE.match(lowered, q.end)
    if after is not None and not re.search(r"[,;.:]", after.group(0)) and not _NUMBER_NEXT.match(lowered, after.end()):
        lower, inclusive = _AFTER[after.group(1)]
        return Bound(q, lower, inclusive, f"{q.text}{after.group(0)}", q.start)
    return None


def _whole(q: Quantity) -> bool:
    """A whole number of things (no unit of measure): "3 displays", "two absences", "700,000 times"."""
    return q.dimension in (None, "multiple") and q.decimals == 0 and q.slot != "%" and float(q.value).is_integer()


_ROUGH = 1000  # a count of thousands is an estimate ("over 150,000 people" / "at least 150,000"): the one at the edge is no matter


def _same(a: Bound, b: Bound) -> bool:
    """The two bounds say the same: the same direction, and the same edge ("4 or more" / "more than 3" for whole
    counts; any edge for thousands)."""
    if a.lower != b.lower:
        return False
    if a.inclusive == b.inclusive or (_whole(a.quantity) and _whole(b.quantity) and min(a.quantity.value, b.quantity.value) >= _ROUGH):
        return True
    return _whole(a.quantity) and _whole(b.quantity) and a.closed() == b.closed()


def _same_number(a: Bound, b: Bound) -> bool:
    """The two bounds are on the same number of the same thing: the value as written, or the one bound the other's
    words restate ("4 or more" / "more than 3")."""
    if a.negated != b.negated or not same_slot(a.quantity, b.quantity):
        return False
    if math.isclose(*_values(a.quantity, b.quantity)):
        return True
    return _whole(a.quantity) and _whole(b.quantity) and a.lower == b.lower and a.closed() == b.closed()


def _values(a: Quantity, b: Quantity) -> tuple[float, float]:
    """The two values to compare: in their dimension's base unit when both have it ("2 years" / "24 months"), else as
    written ("older than 8" / "at least 8 years old")."""
    if a.dimension is not None and a.dimension == b.dimension:
        return in_base_unit(a), in_base_unit(b)
    return a.value, b.value


def same_slot(a: Quantity, b: Quantity) -> bool:
    """They count the same thing (comparable, whatever their values), or one side does not say what it counts
    ("over 65" / "65 years and over")."""
    return agree(a, b) is not None or a.slot == b.slot or None in (a.slot, b.slot) or (a.dimension is not None and a.dimension == b.dimension)


def restated_bound(claim: Quantity, texts: tuple[str, ...]) -> bool:
    """The claim's number restates a bound of the evidence with the next count: "4 or more displays" for "more than
    3 displays" (texts[0] the claim, then its evidence): no missing number, no changed one."""
    mine = next((b for b in bounds(texts[0]) if b.quantity.start == claim.start and b.quantity.value == claim.value), None)
    if mine is None:
        return False
    # only the next count's bound: a value the evidence writes as such is compared by the number check as usual (a
    # claim giving economy's "up to 23 kg" to business class still meets business class's "up to 32 kg")
    return any(_same_number(mine, b) and _same(mine, b) and mine.quantity.value != b.quantity.value for text in texts[1:] for b in bounds(text))


def bound_conflicts(claim: str, window: Window) -> list[str]:
    """A bound of the claim on a number its evidence bounds the same way with another edge: "3 or more displays"
    where the sentence says "more than 3 displays", "over 65" where it says "65 and over", "fewer than 4 tablets" for
    "up to 4 tablets".  Not a bound the other way: "if you are no more than 30 minutes late, there is no charge" tells
    "more than 30 minutes late costs a day" from the other side, with a negation elsewhere in the sentence.
    Where the evidence bounds that number in several places, the claim must disagree with those about the same
    thing as the claim's (most words in common around the number), and agree with none."""
    evidence = bounds(window.text)
    if not evidence:
        return []
    out = []
    for mine in bounds(claim):
        paired = [b for b in evidence if _same_number(mine, b)]
        if not paired or any(_same(mine, b) for b in paired) or all(b.lower != mine.lower for b in paired):
            continue  # (a bound the other way is mostly the complement told with a negation elsewhere: polarity.py's)
        around = _around(claim, mine.quantity)
        overlap = [len(around & _around(window.text, b.quantity)) for b in paired]
        if max(overlap) > 0:
            out.append(f"bound: {mine.describe()} vs {paired[overlap.index(max(overlap))].describe()}")
    return out


_CLAUSE = re.compile(r"[;:,]\s+|\s+(?:and|but|while|whereas)\s+(?![\d])", re.IGNORECASE)
_REACH = 50  # characters each side of a number whose words say what it is about


def _around(text: str, q: Quantity) -> set[str]:
    """The content words near a number, in its clause (not the number's own words)."""
    left = max((m.end() for m in _CLAUSE.finditer(text, 0, q.start)), default=0)
    right = next((m.start() for m in _CLAUSE.finditer(text, q.end)), len(text))
    words = set(content_words(text[max(left, q.start - _REACH) : min(right, q.end + _REACH)]))
    return words - set(content_words(q.text))
