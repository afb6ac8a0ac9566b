"""Bounds: a claim that restates the bound on a number of its evidence wrongly, while its words mostly match.

"More than 3 displays need a licence" and "3 or more displays need a licence" share every word and number, and
differ on the shop with 3 displays; "passengers over 65" and "passengers aged 65 and over" differ on the passenger
of 65.  quantities.py reads "more than 3" as a hedged 3 (it agrees with 3), so the number check never sees a bound.
Here each number with a bound phrase is read as a `Bound`: lower or upper, inclusive or not ("more than", "over",
"above", "exceeding" / "at least", "N or more", "N and over", "N+" / "less than", "under", "below" / "at most", "up
to", "no more than", "N or under", "N or younger").  A claim's bound on the number its evidence bounds is
contradicted when the two bounds differ -- in direction or in whether the number itself is in.  For counts (a whole
number of things, no unit) "more than 3" and "4 or more" are one bound, so an equal bound in other words agrees
(and `restated_bound` tells derived.py the "4" is no missing number).  Years, dates and times of the day are left
to the other checks ("up to 2016" is "until").

A restriction dropped (`dropped_restrictions`): the evidence restricts what it speaks of by a threshold ("arrays
over 4 kW must be notified", "more than two unexcused absences result in failure") and the claim says the same of
the thing at large ("arrays must be notified", "any array must be notified"), with no number for it; or the
evidence names it with a modifier that the documents set against another of its kind ("unexcused absences", where
they also speak of excused ones) and the claim drops that modifier.  A modifier no other sentence contrasts ("the
red brake warning light" / "the brake light") is detail a faithful answer may drop.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ragtap.scoring.alignment import EvidenceIndex, Window
from ragtap.scoring.lexical import STOPWORDS, content_words
from ragtap.scoring.quantities import Quantity, agree, in_base_unit, quantities
from ragtap.scoring.sentences import STOP_BREAK
from ragtap.scoring.words import stem


@dataclass(frozen=True, slots=True)
class Bound:
    """A number with a bound phrase: "more than 3 displays" is (3 displays, lower, exclusive)."""

    quantity: Quantity
    lower: bool  # a lower bound ("at least", "over"); else an upper one ("at most", "under")
    inclusive: bool  # the number itself is in ("at least 3", "3 or more"); not in "more than 3"
    phrase: str  # as written, for the reason shown
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
    **{f"{j} {w}": (True, True) for j in ("or", "and") for w in ("more", "over", "above", "older", "greater", "higher", "longer", "up", "upwards")},
    **{f"{j} {w}": (False, True) for j in ("or", "and") for w in ("less", "fewer", "under", "below", "younger", "lower", "shorter")},
}
_AFTER_PHRASE = re.compile(r"(?:\s*[^\W\d_][\w-]*){0,3}?\s+(" + "|".join(re.escape(p) for p in _AFTER) + r")\b")
# "leading up to", "building up to": a way to a point, not a bound
_A_WAY_UP = re.compile(r"\b(?:\w+ing|lead|leads|led|build|builds|built|work|works|run|runs|count|counts|move|moves|moved|go|goes|went)\s+$")
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
        return Bound(q, lower, inclusive, f"{word} {q.text}", negated)
    if lowered[q.end : q.end + 1] == "+" or q.text.endswith(("-plus", "plus")):
        return Bound(q, True, True, f"{q.text}+")
    after = _AFTER_PHRASE.match(lowered, q.end)
    if after is not None and not re.search(r"[,;.:]", after.group(0)) and not _NUMBER_NEXT.match(lowered, after.end()):
        lower, inclusive = _AFTER[after.group(1)]
        return Bound(q, lower, inclusive, f"{q.text}{after.group(0)}")
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
    if a.negated != b.negated or not _same_slot(a.quantity, b.quantity):
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


def _same_slot(a: Quantity, b: Quantity) -> bool:
    """They count the same thing, or one side does not say what it counts ("over 65" / "65 years and over")."""
    if agree(a, b) is False:
        return True  # comparable, only the values differ
    return agree(a, b) is True or a.slot == b.slot or None in (a.slot, b.slot) or (a.dimension is not None and a.dimension == b.dimension)


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


# ---------------------------------------------------------------------------------------------- restrictions dropped

_TOKEN = re.compile(r"[^\W\d_][\w'’-]*|\d[\d,.]*")
# What may open the clause before the restricted noun ("[All] arrays over 4 kW", "[Only] children under 5") or stand
# between it and its threshold ("passengers [aged] 65 and over", "employees [with] at least 2 years", "bags [weighing]
# more than 23 kg"); a restriction is of the clause's subject, or of what a "for" / "to" names ("free for children
# under 5"), never of a verb's object ("the fund raised over $2 million": a figure, not a kind of thing).
_OPENING = frozenset("the a an all any every each only for to most".split())
_LINK = frozenset("aged with of weighing costing earning measuring rated worth having that who which are is".split())
# Words by which a claim restricts the thing itself, in its own words ("larger arrays", "these orders", "your child").
_RESTRICTING = frozenset(stem(w) for w in "these those such this that your my our their his her its larger bigger smaller heavier lighter "
                         "older younger big large small heavy light certain some qualifying eligible high higher low lower long longer "
                         "senior elderly young many most several few particular specific".split())
_CLAIM_CONDITION = re.compile(r"\b(?:if|when|whenever|unless|provided|depending|depends|only|where|once|as\s+long\s+as)\b", re.IGNORECASE)
_NEGATIONS = re.compile(r"\b(?:not|no|never|none|cannot|n[’']t|without)\b", re.IGNORECASE)
_PREDICATE = 2  # words of the evidence clause outside the restricted thing that the claim must say (what is said of it)


@dataclass(frozen=True, slots=True)
class _Restricted:
    """A thing the evidence restricts by a threshold: its words (stems) and the clause saying something of it."""

    nouns: frozenset[str]
    shown: str
    clause: str
    quantity: Quantity | None = None  # the threshold's number
    modifiers: tuple[str, ...] = ()  # the contrasting modifiers ("unexcused", "excused"): either in the claim restricts it


def dropped_restrictions(claim: str, window: Window, index: EvidenceIndex | None = None) -> list[str]:
    """The evidence says something of a thing restricted by a threshold or a contrasting modifier; the claim says it
    of the thing at large, in the evidence's own words, with no number and no restriction of its own: "Arrays must be
    notified to the network operator" against "Arrays over 4 kW must be notified to the network operator"; "More than
    two absences result in a failing grade" where the sentence says "unexcused absences" and the documents also speak
    of excused ones."""
    if _CLAIM_CONDITION.search(claim):
        return []
    claim_tokens = [t.lower() for t in _TOKEN.findall(claim)]
    claim_stems = [stem(t) for t in claim_tokens]
    claim_words = set(content_words(claim))
    claim_negated = bool(_NEGATIONS.search(claim))
    own = quantities(claim)
    evidence_words = {stem(t.lower()) for t in _TOKEN.findall(window.text)}
    for clause in _clauses(window.text):
        if bool(_NEGATIONS.search(clause)) != claim_negated:
            continue  # a negation on one side: polarity.py's
        for restricted in _thresholds(clause):
            threshold = restricted.quantity
            if threshold is not None and any(q.dimension == threshold.dimension and _same_slot(q, threshold) for q in own):
                continue  # the claim gives the thing a number of its own: bounds_conflicts compares them
            if _said_at_large(restricted.nouns, claim_stems, evidence_words) and _says_the_same(claim_words, restricted):
                return [f"restriction: {restricted.shown}"]
        if index is not None:
            for restricted in _contrasted(clause, index):
                if _said_at_large(restricted.nouns, claim_stems, evidence_words) and _says_the_same(claim_words, restricted) \
                        and not any(stem(w) in claim_stems for w in restricted.modifiers):
                    return [f"restriction: {restricted.shown}"]
    return _dropped_condition(claim, claim_words, claim_negated, window)


_CONDITIONAL = r"(?:only\s+)?(?:if|provided(?:\s+that)?|as\s+long\s+as|unless|on\s+condition\s+that)"
_FRONTED = re.compile(rf"^\s*{_CONDITIONAL}\s+(?P<condition>[^,;]+),\s*(?:then\s+)?(?P<main>[^;]+)$", re.IGNORECASE)
_TRAILING = re.compile(rf"^(?P<main>[^;]+?)\s*,?\s+{_CONDITIONAL}\s+(?P<condition>[^;]+)$", re.IGNORECASE)
# A condition of having or wanting something ("if equipped", "if you wish", "if necessary"): an answer speaks to
# someone who has it; dropping it asserts nothing the reader would act on wrongly.
_OWN_CHOICE = frozenset(stem(w) for w in "equipped equip fitted installed available applicable necessary needed need required desired "
                        "want wish prefer like choose possible any so".split())


_YES = re.compile(r"^\s*yes\b", re.IGNORECASE)  # an unconditional answer to a yes/no question


def _dropped_condition(claim: str, claim_words: set[str], claim_negated: bool, window: Window) -> list[str]:
    """The evidence says something on a condition ("Refunds are given if the item is unused", "Only if the form is
    signed, the deposit is returned") and the claim answers "Yes" with it, with no condition and none of the
    condition's words ("Yes, refunds are given")."""
    if not _YES.match(claim):
        return []  # (a statement without "Yes" restating a conditional sentence's main clause is mostly a hedge or a summary)
    for sentence in STOP_BREAK.split(window.text):
        sentence = sentence.rstrip(" .!?")
        found = _FRONTED.match(sentence) or _TRAILING.match(sentence)
        if found is None or bool(_NEGATIONS.search(found.group("main"))) != claim_negated:
            continue
        main = set(content_words(found.group("main")))
        distinct = set(content_words(found.group("condition"))) - main
        if not distinct or distinct & _OWN_CHOICE or distinct & claim_words:
            continue
        if len(main & claim_words) >= _PREDICATE and len(claim_words - main) <= len(claim_words) // 3:
            return [f"condition dropped: {' '.join(found.group(0)[found.start('condition') - found.start():].split()[:8]).lower()}"]
    return []


_CLAUSE_BREAK = re.compile(r"[;:]\s+|,\s+(?:and|but|or|while|whereas)\s+|\s+(?:but|while|whereas)\s+", re.IGNORECASE)


def _clauses(text: str) -> list[str]:
    return [c for s in STOP_BREAK.split(text) for c in _CLAUSE_BREAK.split(s) if c.strip()]


def _thresholds(clause: str) -> list[_Restricted]:
    """The things of the clause restricted by a threshold: a subject ("Arrays over 4 kW", "Passengers aged 65 and
    over", "More than two unexcused absences") or what "for" / "to" names ("free for children under 5")."""
    lowered = clause.lower()
    out = []
    for bound in bounds(clause):
        if bound.negated:
            continue
        q = bound.quantity
        phrase_start = lowered.rfind(bound.phrase.split()[0], 0, q.start + 1) if not bound.phrase.startswith(q.text) else q.start
        before = [t for t in _TOKEN.findall(lowered[:phrase_start])]
        # "Arrays over 4 kW", "passengers aged 65": the noun before the threshold, opening its clause
        i = len(before) - 1
        while i >= 0 and before[i] in _LINK:
            i -= 1
        if i >= 0 and before[i] not in STOPWORDS and _subject_place(before[:i]):
            out.append(_Restricted(frozenset({stem(before[i])}), f"{before[i]} {bound.describe()}", clause, q))
            continue
        # "More than two unexcused absences result in ...": the thing counted, when the threshold opens the clause
        if _subject_place(before) and q.dimension is None and q.slot:
            after = [t for t in _TOKEN.findall(lowered[q.end :])][:2]
            nouns = [t for t in after if t not in STOPWORDS][:2]
            if nouns:
                out.append(_Restricted(frozenset({stem(nouns[-1])}), f"{bound.describe()} {' '.join(nouns)}" if bound.phrase.startswith(("more", "less", "fewer", "at", "over", "under", "up", "no")) else bound.describe(), clause, q))
    return out


_GIVEN = frozenset("open available offered given limited restricted reserved applies apply granted paid".split())  # "open [to] X", not "to deliver"


def _subject_place(before: list[str]) -> bool:
    """The words before a noun put it where a restriction restricts what the clause speaks of: opening the clause
    ("[All] arrays over 4 kW must ..."), or named by "for" / "to" ("free [for] children under 5", "open [to]
    full-time students"); not a verb's object ("the fund raised over $2 million")."""
    if all(t in _OPENING for t in before):
        return True
    while before and before[-1] in ("the", "a", "an", "all", "any", "every", "each", "only"):
        before = before[:-1]
    return bool(before) and (before[-1] == "for" or (before[-1] == "to" and len(before) > 1 and before[-2] in _GIVEN))


def _said_at_large(nouns: frozenset[str], claim_stems: list[str], evidence_words: set[str]) -> bool:
    """The claim names the thing with no restricting word of its own just before it ("larger arrays", "your
    child"), nor a modifier the evidence lacks ("unjustified absences" for "unexcused absences": the claim's own
    word for the restriction)."""
    for i, word in enumerate(claim_stems):
        if word in nouns:
            before = claim_stems[i - 1] if i else ""
            own_modifier = bool(before) and before not in STOPWORDS and before.isalpha() and before not in evidence_words
            return not (set(claim_stems[max(0, i - 2) : i]) & _RESTRICTING) and not own_modifier
    return False


def _says_the_same(claim_words: set[str], restricted: _Restricted) -> bool:
    """The claim says what the clause says of the thing: `_PREDICATE` of its other words."""
    said = set(content_words(restricted.clause)) - restricted.nouns - set(content_words(restricted.shown))
    return len(said & claim_words) >= _PREDICATE


_THRESHOLD_WORDS = frozenset("more less fewer than at least most over under up to no".split())
_WORD_NUMBER = re.compile(r"(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|fifty|hundred)")


def _contrasted(clause: str, index: EvidenceIndex) -> list[_Restricted]:
    """The things of the clause named with a modifier that the documents set against another of the same kind:
    "unexcused absences" where another sentence speaks of "excused absences" (a negating prefix, or opposites:
    domestic / international, full-time / part-time)."""
    tokens = [t.lower() for t in _TOKEN.findall(clause)]
    out = []
    for at, (modifier, noun) in enumerate(zip(tokens, tokens[1:])):
        if modifier in STOPWORDS or noun in STOPWORDS or not modifier.isalpha() and "-" not in modifier \
                or not (_subject_place(tokens[:at]) or all(t in _OPENING or t in _THRESHOLD_WORDS or t[0].isdigit() or _WORD_NUMBER.fullmatch(t) for t in tokens[:at])):
            continue  # the clause's subject only ("More than two unexcused absences result ..."), as for thresholds
        for sentence in index.sentences:
            if sentence.text.lower().find(noun) < 0:
                continue
            other_tokens = [t.lower() for t in _TOKEN.findall(sentence.text)]
            for other, same in zip(other_tokens, other_tokens[1:]):
                if stem(same) == stem(noun) and other != modifier and _contrasting(modifier, other):
                    out.append(_Restricted(frozenset({stem(noun)}), f"{modifier} {noun}", clause, modifiers=(modifier, other)))
                    break
            else:
                continue
            break
    return out


# Kinds a document sets against each other ("full-time students" / "part-time students"); and any word against itself
# with a negating prefix ("excused" / "unexcused", "refundable" / "non-refundable").  Not colours, months, ordinals:
# "scored twice in the second half" / "scored twice" drops a detail, not a kind.
_KINDS = tuple(frozenset(pair.split("/")) for pair in (
    "full-time/part-time", "domestic/international", "internal/external", "public/private", "permanent/temporary",
    "indoor/outdoor", "new/used", "new/existing", "adult/child", "residential/commercial", "manual/automatic",
    "economy/business", "economy/first", "regular/premium", "standard/premium", "standard/express", "resident/non-resident"))
_PREFIXES = ("un", "non-", "non", "in", "im", "ir", "il", "dis")


def _contrasting(a: str, b: str) -> bool:
    if frozenset((a, b)) in _KINDS:
        return True
    short, long = sorted((a, b), key=len)
    return any(long == prefix + short for prefix in _PREFIXES) and len(short) >= 4
