"""Numbers in prose, with what they count: "2 years", "78.37 degrees Celsius", "$181,674,817", "16 Sherpas".

A number alone says little: "the warranty lasts 3 years" is wrong where the documents say 2 years for the warranty
and 3 for the battery, although "3" stands in the documents.  So each number is read with its *slot*: a unit ragtap
knows (with its dimension, so that 10 km and 10 miles disagree while 5 mph and 8 km/h agree), else the noun that
follows it ("16 Sherpas": slot "sherpa"), and whether the writer hedged it ("about 78.4", "over $181 million").

Two quantities agree when their values agree after unit conversion, a rounder number being allowed to be the
rounding (or, hedged, the truncation) of a more precise one; `agree` says how they compare.  Number words
("two", "a dozen", "1.5 million") are read as numbers.  A small table of common units, not a units library: the
point is to recognise units in prose (pint parses quantity expressions, not running text), and the few conversions
a model adds on its own ("58 degrees Fahrenheit (15 degrees Celsius)").
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from dataclasses import dataclass

from ragtap.scoring.words import MONTHS, stem

# unit word -> (canonical unit, dimension, factor to the dimension's base unit).  Temperature is affine (below).
_UNITS: dict[str, tuple[str, str, float]] = {}


def _unit(canonical: str, dimension: str, factor: float, *words: str) -> None:
    for word in (canonical, *words):
        _UNITS[word] = (canonical, dimension, factor)


_unit("mm", "length", 0.001, "millimeter", "millimeters", "millimetre", "millimetres")
_unit("cm", "length", 0.01, "centimeter", "centimeters", "centimetre", "centimetres")
_unit("m", "length", 1.0, "meter", "meters", "metre", "metres")
_unit("km", "length", 1000.0, "kilometer", "kilometers", "kilometre", "kilometres", "kms")
_unit("in", "length", 0.0254, "inch", "inches")
_unit("ft", "length", 0.3048, "foot", "feet")
_unit("yd", "length", 0.9144, "yard", "yards")
_unit("mi", "length", 1609.344, "mile", "miles")
_unit("mg", "mass", 1e-6, "milligram", "milligrams")
_unit("g", "mass", 0.001, "gram", "grams")
_unit("kg", "mass", 1.0, "kilogram", "kilograms", "kilo", "kilos")
_unit("lb", "mass", 0.45359237, "lbs", "pound", "pounds")
_unit("oz", "mass", 0.028349523, "ounce", "ounces")
_unit("tonne", "mass", 1000.0, "tonnes", "ton", "tons")
_unit("ml", "volume", 0.001, "milliliter", "milliliters", "millilitre", "millilitres")
_unit("l", "volume", 1.0, "liter", "liters", "litre", "litres")
_unit("gal", "volume", 3.785411784, "gallon", "gallons")
_unit("qt", "volume", 0.946352946, "quart", "quarts")
_unit("mph", "speed", 0.44704, "miles per hour")
_unit("km/h", "speed", 1 / 3.6, "kph", "kmh", "km/hr", "kilometers per hour", "kilometres per hour")
_unit("knot", "speed", 0.514444, "knots")
_unit("psi", "pressure", 6894.757)
_unit("kpa", "pressure", 1000.0)
_unit("bar", "pressure", 100000.0)
_unit("nm", "torque", 1.0, "n·m", "n-m", "newton-meters", "newton meters")
_unit("lb-ft", "torque", 1.3558179, "lb.-ft.", "ft-lb", "ft-lbs", "lb-ft.", "foot-pounds", "pound-feet")
_unit("hp", "power", 745.7, "horsepower")
_unit("kw", "power", 1000.0, "kilowatt", "kilowatts")
_unit("w", "power", 1.0, "watt", "watts")
_unit("second", "time", 1.0, "seconds", "sec", "secs", "s")
_unit("minute", "time", 60.0, "minutes", "min", "mins")
_unit("hour", "time", 3600.0, "hours", "hr", "hrs", "h")
_unit("day", "time", 86400.0, "days")
_unit("week", "time", 604800.0, "weeks")
_unit("month", "time", 2629746.0, "months")
_unit("year", "time", 31556952.0, "years", "yr", "yrs")
_unit("decade", "time", 315569520.0, "decades")
_unit("century", "time", 3155695200.0, "centuries")
_unit("%", "percent", 1.0, "percent", "per cent", "pct")
_unit("am", "time_of_day", 1.0, "a.m")  # "2 AM" and "2 PM" are 12 hours apart (_to_base)
_unit("pm", "time_of_day", 1.0, "p.m")
_unit("times", "multiple", 1.0, "time", "fold", "x")  # "1.5 times the rate", "twice" (below)
_unit("usd", "money_usd", 1.0, "$", "dollar", "dollars", "us$")
_unit("eur", "money_eur", 1.0, "€", "euro", "euros")
_unit("gbp", "money_gbp", 1.0, "£", "sterling")
# Currencies written with their ISO code, before the amount ("CHF 340") or after it ("340 CHF"), or named.
_unit("chf", "money_chf", 1.0, "franc", "francs", "swiss franc", "swiss francs")
_unit("cad", "money_cad", 1.0, "c$", "canadian dollar", "canadian dollars")
_unit("aud", "money_aud", 1.0, "a$", "australian dollar", "australian dollars")
_unit("jpy", "money_jpy", 1.0, "¥", "yen")
_unit("sek", "money_sek", 1.0, "swedish krona", "swedish kronor")
_unit("nok", "money_nok", 1.0, "norwegian krone", "norwegian kroner")
_unit("dkk", "money_dkk", 1.0, "danish krone", "danish kroner")
_unit("inr", "money_inr", 1.0, "₹", "rupee", "rupees")
_unit("degc", "temperature", 1.0, "°c", "celsius", "degrees celsius", "degree celsius", "centigrade", "℃")
_unit("degf", "temperature", 1.0, "°f", "fahrenheit", "degrees fahrenheit", "degree fahrenheit", "℉")

_MULTIPLIERS = {"thousand": 1e3, "k": 1e3, "million": 1e6, "mln": 1e6, "m": 1e6, "billion": 1e9, "bn": 1e9, "b": 1e9, "trillion": 1e12}
_WORD_NUMBERS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
    "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
    "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50,
    "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100, "dozen": 12, "twice": 2, "thrice": 3,
    "double": 2, "triple": 3,
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7, "eighth": 8, "ninth": 9,
    "tenth": 10,
}
_ORDINAL_WORDS = frozenset({"first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth"})
# Hedges: the writer does not claim the exact value.
_HEDGES = (
    "about", "approximately", "approx.", "approx", "around", "roughly", "nearly", "almost", "some", "over", "under",
    "more than", "less than", "fewer than", "greater than", "up to", "circa", "ca.", "estimated", "upwards of",
    "just under", "just over", "close to", "at least", "at most", "below", "above", "exceeding", "~",
)
_HEDGED_HEAD = re.compile(r"(?:^|[^\w])(?:" + "|".join(re.escape(h) for h in _HEDGES) + r")\s*[$€£]?\s*$")
# Units written with symbols the word tokenizer would cut ("km/h", "N·m", "lb-ft", "°C").
_SYMBOL_UNIT = re.compile(r"(km/hr?|kmh|n·m|n-m|lb\.?-ft\.?|ft\.?-lbs?\.?|°\s?[cf]\b|℃|℉|%|[ap]\.m\b\.?)")

_NUMBER = re.compile(
    r"(?P<cur>[$€£]|\b(?:usd|eur|gbp|chf|cad|aud|jpy|sek|nok|dkk|inr)\b)?\s?"
    r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
    r"(?P<ord>st|nd|rd|th)?(?P<dec>s)?"
    r"(?:\s?(?P<mult>thousand|million|billion|trillion|mln|bn|k|m|b)\b)?",
    re.IGNORECASE,
)
_WORD = re.compile(r"[^\W_]+(?:[-'’][^\W_]+)*|[%°$€£℃℉]", re.UNICODE)
_PLUS = re.compile(r"-(?:plus|odd)\b")
_TIME_OF_DAY = re.compile(r"\b\d{1,2}:\d{2}\b")
_HALF_OF_DAY = re.compile(r"\s?([ap])\.?m\b\.?")  # "10:30 a.m.", "2:20 PM" (the text is lower-cased)


@dataclass(frozen=True, slots=True)
class Quantity:
    """One number as the text states it."""

    value: float
    slot: str | None  # canonical unit ("km", "degc", "usd", "year"...), else the stem of the noun that follows
    dimension: str | None  # "length", "time"... when the slot is a known unit
    decimals: int  # digits after the point as written (precision of the statement)
    hedged: bool  # "about", "over", "nearly"...: the value is not claimed exactly
    ordinal: bool  # "3rd", "third"
    text: str  # as written, e.g. "3 years"
    start: int  # character offsets of the number in the text
    end: int
    loose: bool = False  # "first", or "one" that is likely no count (`_loose_one`): never a *missing* number
    compound: bool = False  # hyphenated to the noun it counts ("a 7-round tournament"): states counts of that noun only

    @property
    def year_shaped(self) -> bool:
        """The number itself could be a year, whatever follows it ("2022" of "the 2022 season")."""
        return _year_shaped(self.value, self.decimals, self.ordinal, self.text)

    @property
    def is_year(self) -> bool:
        return self.slot in (None, "year_date") and self.year_shaped

    def describe(self) -> str:
        if self.slot == "clock" or (self.dimension == "time_of_day" and ":" in self.text):  # "10:30", "10:30 am"
            return self.text if self.slot == "clock" else f"{self.text} {self.slot}"
        value = f"{self.value:g}" if self.value < 1e15 else str(self.value)
        return f"{value} {self.slot}" if self.slot and self.slot != "year_date" else value


def _lookup_unit(words: list[str], index: int) -> tuple[str, str, float, int] | None:
    """The unit starting at words[index] (one to three words: "degrees celsius", "miles per hour")."""
    for size in (3, 2, 1):
        phrase = " ".join(words[index : index + size])
        if phrase in _UNITS:
            canonical, dimension, factor = _UNITS[phrase]
            return canonical, dimension, factor, size
    return None


def _decimals(number: str) -> int:
    return len(number.split(".", 1)[1]) if "." in number else 0


@functools.lru_cache(maxsize=16384)
def quantities(text: str) -> tuple[Quantity, ...]:
    """The numbers of `text` with their slots, in order.  Cached by text: documents recur across requests."""
    lowered = text.lower()
    found: list[Quantity] = []
    taken: list[tuple[int, int]] = []
    for match in _TIME_OF_DAY.finditer(lowered):  # "2:20 PM": a clock time, compared as written
        hours, minutes = match.group(0).split(":")
        half = _HALF_OF_DAY.match(lowered, match.end())
        if half is not None:  # "10:30 a.m.": an hour of the day in hours (10.5 am), as "11 a.m." is
            found.append(Quantity(int(hours) + int(minutes) / 60, half.group(1) + "m", "time_of_day", 2, False, False, match.group(0), match.start(), match.end()))
        else:  # "2:20" alone: compared as written, or with either half of the day (`_same_time`)
            found.append(Quantity(int(hours) + int(minutes) / 100, "clock", "clock", 2, False, False, match.group(0), match.start(), match.end()))
        taken.append(match.span())
    for match in _NUMBER.finditer(lowered):
        start, end = match.span("num")
        if any(a <= start < b for a, b in taken):
            continue
        # A number glued to letters is a code, not a quantity ("P215/65R15", "5W-30", "A4"): skip it.
        before = lowered[start - 1] if start else " "
        if before == "-" and start >= 2 and lowered[start - 2].isalpha():
            continue  # the number of a code: "5W-30", "COVID-19", "F-150"
        after_index = match.end("dec") if match.group("dec") else match.end("ord") if match.group("ord") else end
        after = lowered[after_index] if after_index < len(lowered) else " "
        glued = after.isalpha() and not (match.group("mult") or match.group("ord") or match.group("dec"))
        if before.isalpha() or before == "/" or (glued and not _glued_unit(lowered, after_index)):
            continue
        plus = _PLUS.match(lowered, after_index)  # "1,500-plus cadets": at least 1,500 cadets
        compound = None  # "a 7-round tournament": the count of the noun it is hyphenated to
        if plus is None and after in "/-" and after_index + 1 < len(lowered) and lowered[after_index + 1].isalpha() \
                and not _glued_unit(lowered, after_index + 1):
            compound = _COMPOUND_NOUN.match(lowered, after_index) if after == "-" else None
            if compound is None or compound.group(1) in _NOT_A_SLOT:
                continue  # "3/4-inch", "2-for-1": part of a compound word, not a count ("3-year" keeps its unit)
        if plus is not None:
            after_index = plus.end()
        number = match.group("num")
        try:
            value = float(number.replace(",", ""))
        except ValueError:
            continue
        mult = match.group("mult")
        if mult and mult in ("m", "b") and not match.group("cur"):
            mult = None  # "5 m" is metres, "5 b" nothing: only "$5m" / "$5b" are millions / billions
        if mult:
            value *= _MULTIPLIERS[mult]
        cursor = match.end("mult") if match.group("mult") and mult else after_index
        quantity = _with_slot(lowered, value, match.group("cur"), _decimals(number), bool(match.group("ord")), start, cursor)
        found.append(quantity if compound is None else _counting(quantity, compound.group(1)))
        taken.append((start, cursor))
    spans = _SPOKEN_SPANS if "half" in lowered or "quarter" in lowered else ()  # (a cheap test first: most texts have none)
    for pattern, value_of in spans:  # "half an hour", "an hour and a half", "a quarter of an hour"
        for match in pattern.finditer(lowered):
            if any(a <= match.start() < b for a, b in taken) or (unit := _lookup_unit([match.group("unit")], 0)) is None:
                continue
            found.append(Quantity(value_of(match), unit[0], unit[1], 1, False, False, match.group(0), match.start(), match.end()))
            taken.append(match.span())
    for match in _FRACTION.finditer(lowered):  # "about a fifth of the wine": 20% of it
        if any(a <= match.start() < b for a, b in taken):
            continue
        count, part = (match.group(1), match.group(2)) if match.group(2) else ("a", "half")
        value = 100 * (1 if count in ("a", "an", "one") else _WORD_NUMBERS[count]) / _DENOMINATORS[part.rstrip("s")]
        found.append(Quantity(round(value, 1), "%", "percent", 1, True, False, match.group(0), match.start(), match.end(), loose=True))
        taken.append(match.span())
    for match in _NAMED_TIME.finditer(lowered) if "mid" in lowered or "noon" in lowered else ():  # "until midnight", "at noon": times of day
        midnight = match.group(0) == "midnight"
        found.append(Quantity(0.0 if midnight else 12.0, "am" if midnight else "pm", "time_of_day", 0, False, False, match.group(0),
                              match.start(), match.end()))
        taken.append(match.span())
    for match in _IN_EVERY.finditer(lowered):  # "two in five tickets", "1 in 6 children": a share
        if any(a <= match.start() < b for a, b in taken):
            continue
        part, whole = (int(g) if g.isdigit() else _WORD_NUMBERS[g] for g in match.group(1, 2))
        if part and whole and part < whole:
            found.append(Quantity(round(100 * part / whole, 1), "%", "percent", 1, True, False, match.group(0), match.start(), match.end(), loose=True))
            taken.append(match.span())
    for match in AGE_GROUP.finditer(lowered) if "over-" in lowered or "under-" in lowered else ():  # "over-18s only", "under-5s go free": an age bound
        found.append(Quantity(float(match.group(2)), "age", None, 0, False, False, match.group(0), match.start(), match.end()))
        taken.append(match.span())
    found.extend(_word_numbers(lowered, taken))
    found.sort(key=lambda q: q.start)
    return _parts_of_wholes(lowered, _labelled(text, found))


# A bare number after a name or a label noun is that thing's number: "Android 10", "Route 42", "Terminal 2", "version
# 3.2" (so "Android 9" disagrees with it, where two bare numbers said nothing about each other).
_LABEL_BEFORE = re.compile(r"\b([A-Za-z][A-Za-z-]*)\s+$")
_LABEL_NOUNS = frozenset("version release route line bus platform gate terminal room chapter section table figure page "
                         "level grade stage phase zone band tier lane bay floor building exit junction track".split())
_NOT_LABELS = frozenset("a an the in on at by of for to from with about around over under nearly almost only just up "
                        "than and or between aged age all some top after before until since within per each every "
                        "no not than is are was were be been has have had".split()) | frozenset(MONTHS) \
    | frozenset("monday tuesday wednesday thursday friday saturday sunday jan feb mar apr jun jul aug sep sept oct nov dec".split())


def _labelled(text: str, found: list[Quantity]) -> list[Quantity]:
    out = []
    for q in found:
        if q.slot is None and q.dimension is None and not q.ordinal and not q.is_year and not q.loose:
            before = _LABEL_BEFORE.search(text, max(0, q.start - 25), q.start)
            word = before.group(1) if before else ""
            if word and word.lower() not in _NOT_LABELS and (any(c.isupper() for c in word) or word.lower() in _LABEL_NOUNS):
                q = dataclasses.replace(q, slot=f"label_{word.lower()}")
        out.append(q)
    return out


_PART_OF = re.compile(r"\s+(?:out\s+)?of\s+(?:the\s+|all\s+|its\s+|their\s+)?")


def _parts_of_wholes(text: str, found: list[Quantity]) -> tuple[Quantity, ...]:
    """A count of part of a whole counts what the whole counts: in "won 14 of the 40 seats" the 14 are seats (so "11
    of the 40 seats" disagrees with it, where two bare counts would say nothing about each other)."""
    for i, (part, whole) in enumerate(zip(found, found[1:])):
        if part.slot is None and not part.ordinal and whole.slot is not None and whole.dimension is None and not whole.ordinal \
                and _PART_OF.fullmatch(text, part.end, whole.start):
            found[i] = dataclasses.replace(part, slot=whole.slot, loose=whole.loose)
    return tuple(found)


# A share told in words: "a fifth of", "two thirds of", "half of the", "half the"; compared as a percentage, loosely
# (a third is 33.3%: "about 33%" and "a third" agree), and never a missing number ("half the price" may be worked
# out from two prices), as a loose "one".
_FRACTION = re.compile(r"\b(a|an|one|two|three|four)\s+(half|thirds?|quarters?|fifths?|tenths?)(?=\s+of\b)|\bhalf(?=\s+(?:of\s+)?(?:the|its|their|all)\b)")
_DENOMINATORS = {"half": 2, "third": 3, "quarter": 4, "fifth": 5, "tenth": 10}
_SPAN_UNIT = r"(?P<unit>hour|day|week|month|year|minute)s?\b"
# Spans said in words, with their values: "half an hour" (0.5), "an hour and a half" (1.5), "a quarter of an hour".
_SPOKEN_SPANS = (
    (re.compile(rf"\bhalf(?:\s+an?\s+|[- ]){_SPAN_UNIT}"), lambda m: 0.5),  # "half an hour", "every half hour", "a half-day"
    (re.compile(rf"\b(?P<n>an?|one|two|three|four|five|six)\s+{_SPAN_UNIT}\s+and\s+a\s+half\b"), lambda m: _WORD_NUMBERS.get(m.group("n"), 1) + 0.5),
    (re.compile(rf"\ba\s+quarter\s+of\s+an?\s+{_SPAN_UNIT}"), lambda m: 0.25),
)
_NAMED_TIME = re.compile(r"\b(?:midnight|noon|midday)\b")
_IN_EVERY = re.compile(r"\b(one|two|three|four|five|six|seven|eight|nine|\d{1,2})\s+in\s+(?:every\s+)?(two|three|four|five|six|seven|eight|nine|ten|\d{1,3})\b")
AGE_GROUP = re.compile(r"\b(over|under)-(\d{1,3})s\b")  # "over-18s": an age bound (and no code name, lexical.names)


# A count hyphenated to the noun it counts: "a 7-round tournament", "a four-door car" (the noun's first word).
_COMPOUND_NOUN = re.compile(r"-([a-z]{3,})\b")
# Number words that count in such a compound ("seven-round"); not "one-way", "zero-tolerance", "double-check",
# "two-thirds" (a share), nor ordinals ("second-hand").
_COMPOUND_COUNTS = frozenset("two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
                             "seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety".split())


def _counting(quantity: Quantity, noun: str) -> Quantity:
    """A count hyphenated to its noun ("7-round"): it counts that noun; loose, since such compounds are also names of
    kinds ("a two-way radio", "a 4-door car") that a text may use without counting anything the documents count, so
    never a *missing* number; it still disagrees with another count of the same noun ("5-round" / "7-round"), and
    states nothing but a count of that noun (a "26-point lead" is no score of "38-26")."""
    return dataclasses.replace(quantity, slot=stem(noun), dimension=None, loose=True, compound=True)


def _glued_unit(text: str, index: int) -> bool:
    """A unit written right after the digits: "120nm", "5mph", "15°c", "30%".  One letter glued to digits is
    ambiguous ("95H" is a tyre's load index, "5W" an oil grade): not a unit."""
    word = re.match(r"[a-z°%/·]+", text[index:])
    if word is None:
        return False
    unit = word.group(0).rstrip(".")
    return (len(unit) > 1 or unit in "%°") and (unit in _UNITS or _SYMBOL_UNIT.fullmatch(unit) is not None)


# Dimensions share the unit written after the last of them: "220 × 220 × 250 mm", "3 by 4 metres".
_DIMENSION_CHAIN = re.compile(r"\s*(?:×|x|by)\s*\d[\d.,]*(?:\s*(?:×|x|by)\s*\d[\d.,]*)*")


def _with_slot(text: str, value: float, currency: str | None, decimals: int, ordinal: bool, start: int, end: int) -> Quantity:
    chain = _DIMENSION_CHAIN.match(text, end) if not currency else None
    after = chain.end() if chain is not None else end
    rest = _UNIT_STOP.split(text[after : after + 60], maxsplit=1)[0]  # "in 1958 — ten years", "in 1968, ten years": no unit
    words = [m.group(0).rstrip(".") for m in _WORD.finditer(rest)][:4]
    slot = dimension = None
    symbol = _SYMBOL_UNIT.match(rest.lstrip())
    if currency:
        slot, dimension, _ = _UNITS[currency]
    elif symbol is not None:
        unit = symbol.group(1).replace(" ", "").replace(".", "")
        unit = {"km/hr": "km/h", "n-m": "nm", "n·m": "nm", "°c": "degc", "°f": "degf", "lb-ft": "lb-ft"}.get(unit, unit)
        unit = "lb-ft" if unit.startswith("ft-lb") else unit
        slot, dimension, _ = _UNITS[unit]
    elif words:
        if len(words) > 1 and words[0] in ("more", "fewer", "less", "extra", "additional") and words[1].isalpha():
            words = words[1:]  # "3 more hours", "40 more pupils": the unit or the noun after the comparison
        if words[0] in ("degrees", "degree", "°") and len(words) > 1 and words[1] in ("c", "f", "celsius", "fahrenheit", "centigrade"):
            slot, dimension, _ = _UNITS["degrees " + ("celsius" if words[1] in ("c", "celsius", "centigrade") else "fahrenheit")]
        elif (unit := _lookup_unit(words, 0)) is not None and not (words[0] in ("in", "s", "h", "m", "w", "min", "l", "g", "b") and not _tight(text, end)):
            slot, dimension = unit[0], unit[1]
        elif words[0] in ("°",) and len(words) == 1:
            slot, dimension = "degc", "temperature"
        elif words[0].isalpha() and words[0] not in _NOT_A_SLOT:
            # "9 November", not "October 9, November 13": the month must follow the number directly.
            month = _MONTH.fullmatch(words[0])
            if month and rest.lstrip()[: len(words[0])] != words[0]:
                slot = None
            elif month and decimals == 0 and 1 <= value <= 31:
                slot = "day_of_" + words[0][:3]
            else:
                slot = stem(words[0].replace("’", "'"))
    head = text[max(0, start - 24) : start]
    if slot is None or slot in _NOT_A_SLOT:
        month = MONTH_BEFORE.search(head)  # "March 5": a day of that month
        if month is not None and decimals == 0 and 1 <= value <= 31:
            slot = "day_of_" + month.group(1)[:3]
    hedged = _HEDGED_HEAD.search(head) is not None
    shown = text[start:end].strip()
    if slot is None and _year_shaped(value, decimals, ordinal, shown):
        slot = "year_date"
    return Quantity(value, slot, dimension, decimals, hedged, ordinal, shown, start, end)


def _year_shaped(value: float, decimals: int, ordinal: bool, shown: str) -> bool:
    return decimals == 0 and 1000 <= value <= 2100 and not ordinal and "," not in shown  # (a year is never written "1,250")


_UNIT_STOP = re.compile(r"[,;]|\s[-–—]\s|[–—]|^[.!?]\s")  # a unit follows its number directly, in its sentence ("in 2024. Ticket")
_MONTHS = "|".join((*MONTHS, "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec"))
MONTH_BEFORE = re.compile(rf"\b({_MONTHS})\.?\s+$", re.IGNORECASE)  # a text ending in a month: "March 5", "on October 9."
_MONTH = re.compile(_MONTHS)


def _tight(text: str, end: int) -> bool:
    """True when an ambiguous one-letter unit ("5 m", "10 s", "2 h") is written as a unit: glued to the number,
    or followed by a non-letter (not the start of a word such as "in the")."""
    if end < len(text) and text[end].isalpha():
        return True
    tail = text[end:].lstrip()
    return len(tail) < 2 or not tail[1].isalpha()


# Words after a number that do not say what it counts ("5 of the", "3 and", "2 or 3").
_NOT_A_SLOT = frozenset("of out and or to the a an in on at for by with from than as is are was were be have has had per each more less".split())


# Only words that open with a number word can be one (the loop below used to try every word of every text).
_NUMBER_WORD = re.compile(r"(?<![a-z]-)\b(?:a\s+)?((?:" + "|".join(sorted(_WORD_NUMBERS, key=len, reverse=True)) + r")(?:-[a-z]+)?)\b")


def _word_numbers(text: str, taken: list[tuple[int, int]]) -> list[Quantity]:
    """Number words: "two years", "a dozen eggs", "twenty-five", "third".  Digits were read already."""
    out = []
    for match in _NUMBER_WORD.finditer(text):
        word = match.group(1)
        parts = word.split("-")
        compound = None
        if len(parts) == 2 and parts[0] in _WORD_NUMBERS and parts[1] not in _WORD_NUMBERS and _glued_unit(text, match.start(1) + len(parts[0]) + 1):
            word, parts = parts[0], parts[:1]  # "a two-kilometer run": two kilometres, as "a 2-kilometer run"
        elif len(parts) == 2 and parts[0] in _COMPOUND_COUNTS and parts[1] not in _WORD_NUMBERS and _COMPOUND_NOUN.fullmatch("-" + parts[1]) \
                and parts[1] not in _NOT_A_SLOT and parts[1].rstrip("s") not in _DENOMINATORS and not any(a <= match.start() < b for a, b in taken):
            word, compound, parts = parts[0], parts[1], parts[:1]  # "a seven-round tournament", as "a 7-round tournament"
        elif not all(p in _WORD_NUMBERS for p in parts) or any(a <= match.start() < b for a, b in taken):
            continue
        if word in ("second",) and re.match(r"\s+(?:hand|thought|look|opinion|time)", text[match.end():]):
            continue
        if word == "one" and not re.match(r"\s+[a-z]", text[match.end():]):
            continue  # "the one", "one of": a pronoun, not a count
        value = float(sum(_WORD_NUMBERS[p] for p in parts))
        ordinal = parts[-1] in _ORDINAL_WORDS
        end = match.start(1) + len(word)
        mult = re.match(r"\s+(thousand|million|billion|trillion)\b", text[end:])
        if mult:
            value *= _MULTIPLIERS[mult.group(1)]
            end += mult.end()
        if parts[-1] == "hundred" and match.group(0).startswith("a "):
            value = 100.0
        quantity = _with_slot(text, value, None, 0, ordinal, match.start(1), end)
        if word == "first" or (word == "one" and _loose_one(text, match.start(1), quantity)) \
                or (ordinal and quantity.slot is None and _FIRST_BEFORE.search(text, 0, match.start(1))):
            quantity = dataclasses.replace(quantity, loose=True)  # "unit price first and delivery time second": an order
        if word in _MULTIPLES:  # "twice the rate" = 2 times the rate
            quantity = dataclasses.replace(quantity, slot="times", dimension="multiple")
        if compound is not None:
            quantity = _counting(quantity, compound)
        out.append(quantity)
    return out


_MULTIPLES = frozenset({"twice", "thrice", "double", "triple"})
_FIRST_BEFORE = re.compile(r"\bfirst\b")
# "no one", "this one", "the bigger one", "which one": a pronoun after a determiner (and perhaps an adjective).
_ONE_AS_PRONOUN = re.compile(r"\b(?:the|this|that|which|no|any|every|each|some|other|another|such)\s+(?:[a-z]+\s+)?$")


def _loose_one(text: str, start: int, quantity: Quantity) -> bool:
    """"one" written as a word that is likely no count: not before a counted noun ("one of", "the bigger one and"),
    a pronoun ("no one", "which one", "one another"), or opening the text ("One Martian year lasts 687 days": a
    Martian year; "First, rinse ...": a step).  It is never a *missing* number; it still conflicts with another
    count of the same thing ("one dose" / "two doses")."""
    return (quantity.slot is None or quantity.slot == "another" or not text[:start].strip(" \t\"'“‘(")
            or _ONE_AS_PRONOUN.search(text, max(0, start - 30), start) is not None)


# ---------------------------------------------------------------------------------------------- comparison


def unit_scale(slot: str) -> float:
    """How much one of `slot` is in its dimension's base unit (the slope of `_to_base`)."""
    if slot == "degf":
        return 5 / 9
    return _UNITS[slot][2] if slot in _UNITS else 1.0


def _to_base(value: float, slot: str) -> float:
    if slot == "degf":
        return (value - 32) * 5 / 9
    if slot == "pm" and value < 12:
        return value + 12
    return value * _UNITS[slot][2] if slot in _UNITS else value


def in_base_unit(quantity: Quantity) -> float:
    """The quantity's value in its dimension's base unit (metres, kilograms, seconds...), to compare with another."""
    return _to_base(quantity.value, quantity.slot) if quantity.slot else quantity.value


def within_rounding(claim: float, evidence: float, decimals: int, hedged: bool) -> bool:
    """`claim` states `evidence`: equal, or its rounding / truncation at the claim's own precision, or (hedged)
    within 10%."""
    if math.isclose(claim, evidence, rel_tol=1e-9, abs_tol=1e-9):
        return True
    step = 10.0 ** (-decimals)
    if claim == 0:
        return hedged and abs(evidence) < step
    # A rounder claim: "181 million" for 181,674,817, "78.4" for 78.37 (one step of the claim's last digit; a
    # bare "3" states 3, never 2.6: integers below 10 need the exact value).
    magnitude = 10.0 ** max(0, math.floor(math.log10(abs(claim))) - 1) if decimals == 0 and abs(claim) >= 100 and claim % 10 == 0 else step
    if abs(claim - evidence) < magnitude and _rounder(claim, evidence, decimals) and abs(claim - evidence) <= 0.05 * abs(evidence):
        return True  # (within 5%: "2" is no rounding of "1.5", nor "3" of "2.6")
    return hedged and abs(claim - evidence) <= 0.1 * abs(evidence)


def _rounder(claim: float, evidence: float, decimals: int) -> bool:
    """The evidence is stated more precisely than the claim (so the claim may be its rounding)."""
    return evidence != round(evidence, decimals) or (decimals == 0 and claim % 10 == 0 and evidence % 10 != 0)


def agree(claim: Quantity, evidence: Quantity, strict: bool = False) -> bool | None:
    """True: the evidence states the claim's quantity (possibly converted or rounded).  False: they are
    comparable (same slot or dimension) and disagree.  None: not comparable (they count different things).
    `strict`: a quantity with a unit is not stated by the same value counting another thing ("6 days" / "1 in 6
    children"); the lenient default suits the documents at large, where "the first time" is stated by "the first"."""
    if claim.ordinal != evidence.ordinal:
        return None  # "the first sick passenger" is not a count of passengers
    if (claim.compound or evidence.compound) and claim.slot != evidence.slot:
        return None
    if claim.slot == "clock" or evidence.slot == "clock":
        if claim.slot == evidence.slot:
            return math.isclose(claim.value, evidence.value)
        if "time_of_day" in (claim.dimension, evidence.dimension):
            return _same_time(claim, evidence)  # "10:30" against "11 a.m.": either half of the day
        return None
    if claim.dimension == evidence.dimension == "time_of_day":  # "11 a.m." is no rounding of 10:30 a.m.
        return abs(_to_base(claim.value, claim.slot or "") - _to_base(evidence.value, evidence.slot or "")) <= (0.5 if claim.hedged else 1 / 120)
    if claim.slot != evidence.slot and _DATE.match(claim.slot or "") and _DATE.match(evidence.slot or ""):
        return False  # "October 9" against "November 13": days of two months
    if claim.dimension and evidence.dimension:
        if claim.dimension != evidence.dimension:
            return None
        if claim.slot == evidence.slot:
            return within_rounding(claim.value, evidence.value, claim.decimals, claim.hedged)
        if claim.dimension.startswith("money"):
            return False
        # Another unit of the same dimension: a conversion (5 mph = 8 km/h) agrees within rounding, a mere
        # relabelling (10 km -> 10 miles) disagrees.
        # Both in the dimension's base unit (affine units included: °F, PM).  Converted figures are rounded by whoever
        # converts them: one step of the claim's last digit (in base units), or 3%.
        claim_base, evidence_base = _to_base(claim.value, claim.slot or ""), _to_base(evidence.value, evidence.slot or "")
        step = 10.0 ** (-claim.decimals) * unit_scale(claim.slot or "")
        if claim.decimals == 0 and abs(claim.value) < 10:
            step /= 2  # a small whole count of a large unit is rounded to the nearest one: "2 months" is not 5 weeks
        gap = abs(claim_base - evidence_base)
        return gap <= max(step, 0.03 * abs(evidence_base)) or (claim.hedged and gap <= 0.1 * abs(evidence_base))
    if claim.slot and evidence.slot and claim.slot == evidence.slot:
        return within_rounding(claim.value, evidence.value, claim.decimals, claim.hedged)
    if claim.is_year and evidence.is_year:
        return claim.value == evidence.value
    if strict and claim.slot and evidence.slot and claim.slot != evidence.slot and (claim.dimension or evidence.dimension):
        return None  # "within 6 days" is not stated by "1 in 6 children": a unit against another thing counted
    # One side has no slot (or slots differ): the same value still states it; a different value says nothing.
    if within_rounding(claim.value, evidence.value, claim.decimals, claim.hedged) and claim.ordinal == evidence.ordinal:
        return True
    return None


_DATE = re.compile(r"day_of_")


def hour_of_day(quantity: Quantity) -> float:
    """The hour of the day a time states, as a number of hours (a bare "2:20" is taken as written: 2.33)."""
    if quantity.slot == "clock":
        hours = math.floor(quantity.value)
        return hours + round((quantity.value - hours) * 100) / 60
    return _to_base(quantity.value, quantity.slot or "")


def _same_time(claim: Quantity, evidence: Quantity) -> bool:
    """A bare clock time ("10:30") is the same as a time with its half of the day when the hours agree modulo 12."""
    gap = abs(hour_of_day(claim) - hour_of_day(evidence)) % 12
    return min(gap, 12 - gap) <= (0.5 if claim.hedged else 1 / 120)


def stated_in(claim: Quantity, evidence: tuple[Quantity, ...], strict: bool = False) -> bool:
    """The evidence states the claim's quantity: agrees with it, or states the same value as a count where the
    claim has an ordinal or the other way round ("the tenth week" / "week 10")."""
    return any(agree(claim, q, strict) is True or (claim.ordinal != q.ordinal and claim.value == q.value and not _clock(claim) and not _clock(q))
               for q in _comparable(claim, evidence, strict))


def _comparable(claim: Quantity, evidence: tuple[Quantity, ...], strict: bool) -> tuple[Quantity, ...]:
    """`evidence` without its bare numbers when, strictly, it states the claim's kind of quantity with a unit: in
    "books of 10 for £8" the price is £8, and the bare 10 counts something else, so it does not state "£10"."""
    if not strict or claim.dimension is None or not any(q.dimension == claim.dimension for q in evidence):
        return evidence
    return tuple(q for q in evidence if q.slot is not None or q.dimension is not None)


def _clock(quantity: Quantity) -> bool:
    return quantity.dimension in ("time_of_day", "clock")  # "2 AM" is not "the second" anything


def contradicting(claim: Quantity, evidence: tuple[Quantity, ...], strict: bool = False) -> Quantity | None:
    """An evidence quantity that counts the same thing as the claim's and disagrees with it, when none agrees."""
    verdicts = [(agree(claim, q, strict), q) for q in _comparable(claim, evidence, strict)]
    if any(v is True for v, _ in verdicts):
        return None
    return next((q for v, q in verdicts if v is False), None)


def converted_within(claim: Quantity, siblings: tuple[Quantity, ...]) -> bool:
    """The claim's quantity is the text's own conversion of another of its quantities ("58 °F (15 °C)")."""
    return any(
        q is not claim and q.dimension == claim.dimension and q.slot != claim.slot and claim.dimension is not None and agree(claim, q) is True
        for q in siblings
    )


# ---------------------------------------------------------------------------------------------- changes

_FROM_TO = re.compile(r"\bfrom\s+[$€£]?\s*$")  # "from 7.4%": the old value
_TO_FROM = re.compile(r"\b(?:to|until|till)\s+[$€£]?\s*$")  # "to 6.1%": the new value
# What may stand between the two values of a change: the first one's unit, then "to" / "from".
_BETWEEN = re.compile(r"^\s*(?:[^\W\d_]+\.?|%|°\s?[cf])?\s*(to|from)\s+[$€£]?\s*$", re.IGNORECASE)


def changes(text: str) -> list[tuple[Quantity, Quantity]]:
    """The changes `text` states, as (before, after): "from 7.4% to 6.1%" and "to 6.1% from 7.4%" both give
    (7.4%, 6.1%).  Two values of one unit, one right after the other."""
    lowered = text.lower()
    found = quantities(text)
    out = []
    for first, second in zip(found, found[1:]):
        between = _BETWEEN.match(lowered[first.end : second.start])
        if between is None or not (first.slot == second.slot or (first.dimension is not None and first.dimension == second.dimension)):
            continue
        head = lowered[max(0, first.start - 12) : first.start]
        if between.group(1) == "to" and _FROM_TO.search(head):
            out.append((first, second))
        elif between.group(1) == "from" and _TO_FROM.search(head):
            out.append((second, first))
    return out
