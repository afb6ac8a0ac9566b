"""Derived numbers: a figure the claim works out from the numbers of its evidence, itself or the question, rather
than states (quantities.py reads the numbers; claims.py and conflicts.py ask `derived` before calling a number missing
or changed).

A sum or a difference ("15 + 30 minutes: 45 minutes in all"), a value times a count that a text distributes ("two
midterms at 20% each: 40%") or a span of the unit it is given per ("£6,000 a year for three years"), a multiple the
claim states ("double the weekday price"), a ratio ("twice"), a relative change ("from 3,100 to 4,200, a 35% rise"),
the hours between two times, a time and a span the claim states, the days between two dates, the years between two years or a year and a span,
the year a sentence names as "the following year".  Tight on purpose: the same unit,
rounding at the claim's own precision (or its hedge), so that an invented number is still one the evidence does not
give.
"""

from __future__ import annotations

import math
import re

from ragtap.scoring.bounds import restated_bound
from ragtap.scoring.quantities import Quantity, changes, hour_of_day, quantities, unit_scale, within_rounding
from ragtap.scoring.sentences import STOP_BREAK

_DISTRIBUTIVE = re.compile(r"\b(?:each|apiece|a piece|per|every|both)\b", re.IGNORECASE)
_PER_UNIT = re.compile(r"\b(?:a|an|per|each|every)\s+(hour|day|week|month|year)\b")  # "£6,000 a year": what a span counts
_COUNT_LIMIT = 12  # "two midterms at 20% each": a count small enough to multiply a value by


def derived(claim: Quantity, texts: tuple[str, ...], cued: bool = False) -> bool:
    """The claim's quantity is worked out from the quantities of `texts` (texts[0] the claim, then its aligned
    evidence) rather than stated: a sum or a difference of two values counting the same thing ("15 + 30 minutes:
    45 minutes in all", 7.4% to 6.1%: "1.3 points lower"), a value times a small count where a text distributes it
    ("two midterms at 20% each: 40%"), a ratio of two values of the same unit ("$27,700 is twice $13,850"), the
    hours between two times of the day or the years between two years.  Tight on purpose: same unit only, rounding
    at the claim's own precision (or its hedge), so that an invented number is still one the evidence does not give.
    `cued`: sums, differences and products only where the claim says it works a figure out ("in total", "more
    than", "each") or multiplies by a count of its own ("two nights cost 280 dollars"): a claim that merely states
    "5 years" for a warranty of 3 (and a battery of 2) is a changed number, not a sum."""
    own = [q for q in quantities(texts[0]) if q != claim and not q.ordinal]
    # Each evidence sentence once: the aligned windows and the closest passage overlap, and a value read twice from
    # one sentence is no second addend.
    sentences = dict.fromkeys(s.strip() for text in texts[1:] for s in STOP_BREAK.split(text) if s.strip())
    others = own + [q for sentence in sentences for q in quantities(sentence) if not q.ordinal]
    if claim.ordinal or not others:
        return False
    if restated_bound(claim, texts):  # "4 or more displays" for "more than 3 displays" (bounds.py)
        return True
    if claim.slot == "%" and _CHANGE_WORD.search(texts[0]):  # "from 3,100 to 4,200, a 35% increase": a relative change
        return any(within_rounding(claim.value, change, claim.decimals, claim.hedged) for change in _relative_changes(others, texts))
    if claim.dimension in ("time_of_day", "clock"):  # "at 20:30, half an hour before the pool closes at 21:00"
        return _time_from_offset(claim, own, others)
    if claim.dimension == "multiple":  # "twice", "three times": a ratio
        return any(within_rounding(claim.value, ratio, claim.decimals, claim.hedged) for ratio in _ratios(others))
    if claim.dimension == "time":  # the time between two times of the day, or two years
        hours = claim.value * unit_scale(claim.slot or "") / 3600
        if any(within_rounding(hours, gap, claim.decimals, claim.hedged) for gap in _gaps(texts)):
            return True
        if claim.slot in ("day", "week") and _days_between_dates(claim, texts):
            return True
        if claim.slot == "year":
            years = [q.value for q in others if q.is_year]
            return any(within_rounding(claim.value, abs(a - b), 0, claim.hedged) for a in years for b in years if a != b)
    if claim.slot == "year_date":  # "founded in 1958, ten years before the 1968 recognition": a year and a span of years
        spans = [q.value for text in texts[1:] for q in quantities(text) if q.slot == "year" and q.dimension == "time"]  # the evidence's
        return any(within_rounding(claim.value, year + sign * span, 0, False) for year in (q.value for q in others if q.is_year)
                   for span in spans for sign in (1, -1)) or _next_or_previous_year(claim, texts[1:])
    if claim.year_shaped and claim.dimension is None and _next_or_previous_year(claim, texts[1:]):  # "in 1948 using stone"
        return True
    # What the claim's value counts: its unit, or for a bare count ("the remaining 6") what the claim's other values
    # count ("with 20 panels you need a second string for the remaining 6", the documents allowing 14 a string).
    kinds = {_family(claim)} if _family(claim) is not None else set()
    if not kinds and claim.slot is None and claim.decimals == 0:
        kinds = {kind for q in own if (kind := _family(q)) is not None}
    return any(_derived_as(claim, kind, own, others, texts, cued) for kind in kinds)


# A year the evidence names by its neighbour: "In 1947 floodwaters damaged the arch, which was rebuilt the following
# year" dates the rebuilding 1948 (and "the previous year" one before), within the sentence only.
_NEXT_YEAR = re.compile(r"\b(?:the\s+(?:following|next|subsequent)\s+year|a\s+year\s+later|the\s+year\s+after)\b", re.IGNORECASE)
_PREVIOUS_YEAR = re.compile(r"\b(?:the\s+(?:previous|preceding|prior)\s+year|a\s+year\s+(?:earlier|before)|the\s+year\s+before)\b", re.IGNORECASE)


def _next_or_previous_year(claim: Quantity, evidence: tuple[str, ...]) -> bool:
    """The claim's year is the one after (or before) a year of an evidence sentence that says "the following year"
    (or "the previous year") after it."""
    for sentence in (s for text in evidence for s in STOP_BREAK.split(text)):
        for pattern, step in ((_NEXT_YEAR, 1), (_PREVIOUS_YEAR, -1)):
            said = pattern.search(sentence)
            if said and any(q.year_shaped and q.end <= said.start() and q.value + step == claim.value for q in quantities(sentence)):
                return True
    return False


def _time_from_offset(claim: Quantity, own: list[Quantity], others: list[Quantity]) -> bool:
    """A time of day worked out as another time plus or minus a span the claim itself states ("closes 7 hours after
    the 08:30 start, so at 15:30"): only the claim's own spans, so that a wrong time is not excused by some span
    somewhere in the documents."""
    spans = [q.value * unit_scale(q.slot or "") / 3600 for q in own if q.dimension == "time"]
    times = [hour_of_day(q) for q in others if q.dimension in ("time_of_day", "clock")]
    target = hour_of_day(claim)
    if any(abs(t % 24 - target % 24) < 1 / 120 for t in times):
        return False  # a time the texts state is compared as stated ("opens at 9:30, half an hour before ... 10:00": swapped?)
    return any(abs((t + sign * span) % 24 - target % 24) < 1 / 120 for t in times for span in spans for sign in (1, -1))


_MONTH_STARTS = dict(zip("jan feb mar apr may jun jul aug sep oct nov dec".split(), (0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334)))


def _days_between_dates(claim: Quantity, texts: tuple[str, ...]) -> bool:
    """The days between two dates of the texts ("detected on 3 February ... notified on 5 February": "two days after"),
    in a year without 29 February, at the claim's precision."""
    days = claim.value * unit_scale(claim.slot or "") / 86400
    dates = {_MONTH_STARTS[month] + q.value for text in texts for q in quantities(text)
             if (q.slot or "").startswith("day_of_") and (month := q.slot[len("day_of_"):]) in _MONTH_STARTS}
    return any(within_rounding(days, abs(a - b), claim.decimals, claim.hedged) for a in dates for b in dates if a != b)


def _derived_as(claim: Quantity, kind: str, own: list[Quantity], others: list[Quantity], texts: tuple[str, ...], cued: bool) -> bool:
    # A value the claim restates from its evidence is one addend, not two: "€15 with a Youth Card" in the claim and in
    # the evidence do not make 30.
    stated = [q.value for q in others[len(own):] if _family(q) == kind]
    family = stated + [q.value for q in own if _family(q) == kind and not any(math.isclose(q.value, v) for v in stated)]
    candidates: list[float] = []
    if not cued or _WORKED_OUT.search(texts[0]):
        candidates += [a + b for i, a in enumerate(family) for b in family[i + 1 :]] + [abs(a - b) for a in family for b in family]
        if len(family) > 2:
            candidates.append(sum(family))
    # A count multiplies a value only where a text distributes it ("20% each", "$30 per night", "both"); a span of
    # time counts where a value is given per that unit ("£6,000 a year ... over three years": £18,000).
    per = {unit for text in texts for unit in _PER_UNIT.findall(text.lower())}
    if per or any(_DISTRIBUTIVE.search(text) for text in texts):
        counts = [q.value for q in (own if cued and not _WORKED_OUT.search(texts[0]) else others)
                  if (q.dimension is None or q.slot in per) and _family(q) != kind and not q.is_year and not q.hedged
                  and q.decimals == 0 and 2 <= q.value <= _COUNT_LIMIT]
        candidates += [n * v for n in counts for v in family]
    # A multiple the claim itself states times a value: "e-bikes are double the rate, so the first hour is €8" (€4).
    candidates += [m.value * v for m in own if m.dimension == "multiple" for v in family]
    return any(within_rounding(claim.value, value, claim.decimals, claim.hedged) for value in candidates if value > 0)


# Words by which a claim says it works a figure out.
_WORKED_OUT = re.compile(
    r"\b(?:total|together|combined|in all|altogether|sum|plus|minus|difference|more|less|fewer|longer|shorter|higher|"
    r"lower|earlier|later|bigger|smaller|larger|greater|extra|additional|apart|each|apiece|per|every|both|remaining|rest"
    r"|[a-z]{3,}er\s+than)\b",  # "deeper than Lake Vorn, by 28 metres"
    re.IGNORECASE)


_CHANGE_WORD = re.compile(r"\b(?:(?:increas|decreas|ris|grow|fall|drop|declin|jump|gain)\w*|rose|grew|fell|cut|up|down|more|less|fewer|higher|lower)\b",
                          re.IGNORECASE)


def _relative_changes(quantities_: list[Quantity], texts: tuple[str, ...]) -> list[float]:
    """The change from each value to each other one counting the same thing, in % of the first (not percentages,
    years, times of the day or dates: "3,100 children to 4,200" is a 35.5% rise).  Where a text tells the change
    ("from 40 to 50 euros"), only from its first value: that is a 25% rise, never a 20% one."""
    values = [q for q in quantities_ if q.value > 0 and q.slot != "%" and not q.is_year and q.dimension not in ("time_of_day", "percent")
              and (q.slot is None or _family(q) is not None)]
    told = {(before.value, after.value) for text in texts for before, after in changes(text)}
    return [abs(b.value - a.value) / a.value * 100 for a in values for b in values
            if a is not b and a.value != b.value and (a.slot == b.slot or a.slot is None or b.slot is None) and (b.value, a.value) not in told]


def _ratios(quantities_: list[Quantity]) -> list[float]:
    """Each larger value over each smaller one of the same unit (not times of the day, dates or other ratios)."""
    values = [(_family(q), q.value) for q in quantities_ if _family(q) is not None and q.value > 0]
    return [big / small for unit, big in values for other, small in values if unit == other and big > small]


def _family(quantity: Quantity) -> str | None:
    """What a value must count to be added to, taken from or divided by another: the same unit ("%" and
    "points" together), or the same counted noun; None for what is not summed (times of the day, dates, years,
    ratios, temperatures)."""
    slot = quantity.slot
    if slot is None or slot in ("clock", "year_date", "degc", "degf") or slot.startswith("day_of_"):
        return None
    if quantity.dimension in ("time_of_day", "multiple"):
        return None
    return "%" if slot in ("point", "percentag") else slot


def _gaps(texts: tuple[str, ...]) -> list[float]:
    """The hours between times of the day: two that follow each other in one text ("open from 8 a.m. to 10 p.m."),
    or one of the claim's (texts[0]) and one of the evidence ("1 p.m. is 3 hours before check-in at 4 p.m.").  A bare
    clock time ("6:30") may be in either half of the day."""
    times = [[(hour_of_day(q), q.slot == "clock") for q in quantities(text) if q.dimension in ("time_of_day", "clock")] for text in texts]
    pairs = [pair for found in times for pair in zip(found, found[1:])]
    pairs += [(a, b) for a in times[0] for found in times[1:] for b in found]
    out = []
    for (a, a_bare), (b, b_bare) in pairs:
        gap = abs(a - b) % 24
        out.extend((gap % 12, 12 - gap % 12) if a_bare or b_bare else (gap,))
    return [gap for gap in out if gap > 0]
