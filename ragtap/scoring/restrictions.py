"""Restrictions dropped: a claim that says of a thing at large what its evidence says of part of it.

"Arrays over 4 kW must be notified to the network operator" is turned into "Arrays must be notified to the network
operator" (or "Any array must be ..."), "More than two unexcused absences result in a failing grade" into "More than
two absences result in ...", and "Pets are allowed only if the landlord agrees in writing" into "Yes, pets are
allowed": every word of the claim stands in its evidence sentence, and nothing of what the claim lacks is a
negation, a number or a name the other checks compare.  A faithful answer drops detail all the time ("the red brake
warning light" -> "the brake light"), so only three shapes count as a restriction:

- a **threshold** on what the clause speaks of: its subject ("[Arrays] over 4 kW must ...", "[Passengers] aged 65
  and over travel free", "More than two unexcused [absences] result ...") or what "for" / "open to" names ("free for
  [children] under 5"); never a verb's object ("the fund raised over $2 million" states a figure, not a kind);
- a **modifier the documents set against another of its kind** on that subject: "unexcused absences" where another
  sentence speaks of "excused absences" (a negating prefix), "full-time residents" / "part-time residents" (a short
  table of kinds).  A modifier no other sentence contrasts is detail;
- a **condition** the claim drops whole when it answers "Yes" ("Yes, pets are allowed" / "only if the landlord
  agrees in writing"); not conditions of having or wanting ("if equipped", "if you wish").  A statement that merely
  restates the main clause of an "if" sentence is mostly a summary or a hedge ("The implant could benefit ..." /
  "If successful, the implant holds promise for ..."): on the development data such claims were faithful.

The claim must name the thing with no number for it, no restricting word of its own ("larger arrays", "your
child", "young children", or a modifier the evidence lacks: "unjustified absences" is its word for "unexcused"),
no condition ("if", "when", "only"), and say what the clause says of it (two of the clause's other words); a
negation on one side only is polarity.py's.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from ragtap.scoring.alignment import EvidenceIndex, Window
from ragtap.scoring.bounds import bounds, same_slot
from ragtap.scoring.lexical import STOPWORDS, content_words
from ragtap.scoring.quantities import Quantity, quantities
from ragtap.scoring.sentences import STOP_BREAK
from ragtap.scoring.words import stem

_TOKEN = re.compile(r"[^\W\d_][\w'’-]*|\d[\d,.]*")
# What may open the clause before the restricted noun ("[All] arrays over 4 kW", "[Only] children under 5").
_OPENING = frozenset("the a an all any every each only for to most".split())
# What may stand between the noun and its threshold ("passengers [aged] 65 and over", "employees [with] at least 2
# years", "bags [weighing] more than 23 kg").
_LINK = frozenset("aged with of weighing costing earning measuring rated worth having that who which are is".split())
# "open [to] X", "available [to] X": a "to" that names who something is for, not "to deliver"
_GIVEN = frozenset("open available offered given limited restricted reserved applies apply granted paid".split())
_DETERMINERS = frozenset("the a an all any every each only".split())
# Words of a threshold opening a clause before the modifier ("[More than two] unexcused absences")
_THRESHOLD_WORDS = frozenset("more less fewer than at least most over under up to no".split())
_WORD_NUMBER = re.compile(r"(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|fifty|hundred)")
# Words by which a claim restricts the thing itself, in its own words ("larger arrays", "these orders", "your child").
_RESTRICTING = frozenset(stem(w) for w in "these those such this that your my our their his her its larger bigger smaller heavier lighter "
                         "older younger big large small heavy light certain some qualifying eligible high higher low lower long longer "
                         "senior elderly young many most several few particular specific".split())
_CLAIM_CONDITION = re.compile(r"\b(?:if|when|whenever|unless|provided|depending|depends|only|where|once|as\s+long\s+as)\b(?P<condition>[^,;:.]*)",
                              re.IGNORECASE)
_NEGATIONS = re.compile(r"\b(?:not|no|never|none|cannot|n[’']t|without)\b", re.IGNORECASE)
_PREDICATE = 2  # words of the evidence clause outside the restricted thing that the claim must say (what is said of it)


@dataclass(frozen=True, slots=True)
class _Restricted:
    """A thing the evidence restricts: its noun (stem), the restriction as the reason shows it, and the clause that
    says something of it."""

    noun: str
    shown: str
    clause: str
    threshold: Quantity | None = None  # the threshold's number
    modifiers: tuple[str, ...] = ()  # the contrasting modifiers ("unexcused", "excused"): either in the claim restricts it


@dataclass(frozen=True, slots=True)
class _Claim:
    """What the checks read of the claim."""

    stems: list[str]  # its words, stemmed, in order (stopwords kept: "your", "these")
    words: set[str]  # its content words
    negated: bool
    numbers: tuple[Quantity, ...]

    @classmethod
    def of(cls, claim: str) -> _Claim:
        return cls([stem(t.lower()) for t in _TOKEN.findall(claim)], set(content_words(claim)), bool(_NEGATIONS.search(claim)), quantities(claim))


def dropped_restrictions(claim: str, window: Window, index: EvidenceIndex | None = None) -> list[str]:
    """Why the claim says of a thing at large what `window` says of part of it (empty when it does not).  `index`:
    all the documents' sentences, where a contrasting modifier is looked up."""
    if _own_condition(claim, window.text):
        return []
    said = _Claim.of(claim)
    kinds = _kinds_by_noun(tuple(s.text for s in index.sentences)) if index is not None else {}
    contrasted_here = {w for w in said.stems if w in kinds}  # nouns the claim names that the documents name in two kinds
    evidence_words: set[str] | None = None
    for clause in _clauses(window.text):
        if bool(_NEGATIONS.search(clause)) != said.negated:
            continue  # a negation on one side: polarity.py's
        for restricted in (*_thresholds(clause), *(_contrasted(clause, contrasted_here, kinds) if contrasted_here else ())):
            threshold = restricted.threshold
            if threshold is not None and any(q.dimension == threshold.dimension and same_slot(q, threshold) for q in said.numbers):
                continue  # the claim gives the thing a number of its own (bounds.py compares them)
            if any(stem(m) in said.stems for m in restricted.modifiers) or restricted.noun not in said.stems:
                continue
            if evidence_words is None:
                evidence_words = {stem(t.lower()) for t in _TOKEN.findall(window.text)}
            if _said_at_large(restricted.noun, said.stems, evidence_words) and _says_the_same(said.words, restricted):
                return [f"restriction: {restricted.shown}"]
    return _dropped_condition(claim, said, window)


def _own_condition(claim: str, evidence: str) -> bool:
    """The claim sets a condition of its own ("Arrays must be notified if they are large"): it may restrict the thing
    in its own words.  Not one it copies from the evidence ("Children eat free on Sundays when accompanied by a
    paying adult" / "Children under 10 eat free on Sundays when accompanied by a paying adult"): that restricts
    nothing the evidence does not."""
    said = set(content_words(evidence))
    return any(not set(content_words(m.group("condition"))) <= said or not m.group("condition").strip() for m in _CLAIM_CONDITION.finditer(claim))


_CLAUSE_BREAK = re.compile(r"[;:]\s+|,\s+(?:and|but|or|while|whereas)\s+|\s+(?:but|while|whereas)\s+", re.IGNORECASE)


def _clauses(text: str) -> list[str]:
    return [c for s in STOP_BREAK.split(text) for c in _CLAUSE_BREAK.split(s) if c.strip()]


@functools.lru_cache(maxsize=4096)
def _thresholds(clause: str) -> tuple[_Restricted, ...]:
    """The things of the clause restricted by a threshold: its subject ("Arrays over 4 kW", "Passengers aged 65 and
    over", "More than two unexcused absences") or what "for" / "open to" names ("free for children under 5")."""
    lowered = clause.lower()
    out = []
    for bound in bounds(clause):
        if bound.negated:
            continue
        q = bound.quantity
        before = _TOKEN.findall(lowered[: bound.start])
        i = len(before) - 1  # "Arrays over 4 kW", "passengers aged 65": the noun before the threshold
        while i >= 0 and before[i] in _LINK:
            i -= 1
        if i >= 0 and before[i] not in STOPWORDS and _subject_place(before[:i]):
            out.append(_Restricted(stem(before[i]), f"{before[i]} {bound.describe()}", clause, q))
        elif _subject_place(before) and q.dimension is None and q.slot:
            # "More than two unexcused absences result in ...": the thing counted, when the threshold opens the clause
            nouns = [t for t in _TOKEN.findall(lowered[q.end :])[:2] if t not in STOPWORDS]
            if nouns:
                shown = bound.describe() if bound.start == q.start else f"{bound.describe()} {' '.join(nouns)}"
                out.append(_Restricted(stem(nouns[-1]), shown, clause, q))
    return tuple(out)


def _subject_place(before: list[str]) -> bool:
    """The words before a noun put it where a restriction restricts what the clause speaks of: opening the clause
    ("[All] arrays over 4 kW must ..."), or named by "for" / "open to" ("free [for] children under 5", "open [to]
    full-time students"); not a verb's object ("the fund raised over $2 million")."""
    if all(t in _OPENING for t in before):
        return True
    while before and before[-1] in _DETERMINERS:
        before = before[:-1]
    return bool(before) and (before[-1] == "for" or (before[-1] == "to" and len(before) > 1 and before[-2] in _GIVEN))


# Kinds a document sets against each other ("full-time students" / "part-time students"); and any word against itself
# with a negating prefix ("excused" / "unexcused", "refundable" / "non-refundable").  Not colours, months, ordinals:
# "scored twice in the second half" / "scored twice" drops a detail, not a kind.
_KINDS = frozenset(frozenset(pair.split("/")) for pair in (
    "full-time/part-time", "domestic/international", "internal/external", "public/private", "permanent/temporary",
    "indoor/outdoor", "new/used", "new/existing", "adult/child", "residential/commercial", "manual/automatic",
    "economy/business", "economy/first", "regular/premium", "standard/premium", "standard/express", "resident/non-resident"))
_PREFIXES = ("un", "non-", "non", "in", "im", "ir", "il", "dis")
_PREFIX_STARTS = frozenset(p[:2] for p in _PREFIXES)
_KIND_WORDS = frozenset().union(*_KINDS)


def _contrasted(clause: str, nouns: set[str], kinds: dict[str, tuple[tuple[str, str], ...]]) -> list[_Restricted]:
    """The things of the clause among `nouns` (those the claim names) that the clause names with a modifier the
    documents set against another of the same kind: "unexcused absences" where another sentence speaks of "excused
    absences".  Only the clause's subject (after a threshold perhaps: "More than two unexcused absences ...") or what
    "for" / "open to" names, as for thresholds.  `kinds`: `_kinds_by_noun` of the documents."""
    tokens = [t.lower() for t in _TOKEN.findall(clause)]
    out = []
    for at, (modifier, noun) in enumerate(zip(tokens, tokens[1:])):
        head = stem(noun)
        if head not in nouns:
            continue
        other = next((b for a, b in kinds[head] if a == modifier), None)
        opening = tokens[:at]
        if other is not None and (_subject_place(opening) or all(t in _OPENING or t in _THRESHOLD_WORDS or t[0].isdigit()
                                                                  or _WORD_NUMBER.fullmatch(t) for t in opening)):
            out.append(_Restricted(head, f"{modifier} {noun}", clause, modifiers=(modifier, other)))
    return out


@functools.lru_cache(maxsize=256)
def _kinds_by_noun(sentences: tuple[str, ...]) -> dict[str, tuple[tuple[str, str], ...]]:
    """Each noun (stem) the documents write after two contrasting modifiers, to those pairs, both ways: "absenc" ->
    (("unexcused", "excused"), ("excused", "unexcused")).  Cached by the documents' sentences: documents recur
    across requests."""
    text = " | ".join(sentences).lower()  # (a noun is never taken from the next sentence)
    vocabulary = set(_TOKEN.findall(text))
    # first the words that have a contrasting word among the documents' (few do), then the nouns written after them
    negated = {(w, w[len(p) :]) for w in vocabulary if w[:2] in _PREFIX_STARTS for p in _PREFIXES
               if w.startswith(p) and len(w) - len(p) >= 4 and w[len(p) :] in vocabulary}
    candidates = {w for pair in negated for w in pair} | (vocabulary & _KIND_WORDS)
    written: dict[str, set[str]] = {}
    for modifier in candidates:
        if modifier not in STOPWORDS:
            for match in re.finditer(rf"(?<![\w'’-]){re.escape(modifier)}\s+([^\W\d_][\w'’-]*)", text):
                if match.group(1) not in STOPWORDS:
                    written.setdefault(stem(match.group(1)), set()).add(modifier)
    kinds = {}
    for noun, modifiers in written.items():
        pairs = tuple((a, b) for a in sorted(modifiers) for b in sorted(modifiers) if a != b and _contrasting(a, b))
        if pairs:
            kinds[noun] = pairs
    return kinds


def _contrasting(a: str, b: str) -> bool:
    """Two kinds of one thing: from the table, or a word and its negation by prefix ("excused" / "unexcused")."""
    if frozenset((a, b)) in _KINDS:
        return True
    short, long = sorted((a, b), key=len)
    return len(short) >= 4 and any(long == prefix + short for prefix in _PREFIXES)


def _said_at_large(noun: str, claim_stems: list[str], evidence_words: set[str]) -> bool:
    """The claim names the thing with no restricting word of its own just before it ("larger arrays", "your
    child"), nor a modifier the evidence lacks ("unjustified absences" for "unexcused absences": the claim's own
    word for the restriction)."""
    if noun not in claim_stems:
        return False
    at = claim_stems.index(noun)
    before = claim_stems[at - 1] if at else ""
    own_modifier = bool(before) and before not in STOPWORDS and before.isalpha() and before not in evidence_words
    return not (set(claim_stems[max(0, at - 2) : at]) & _RESTRICTING) and not own_modifier


def _says_the_same(claim_words: set[str], restricted: _Restricted) -> bool:
    """The claim says what the clause says of the thing: `_PREDICATE` of its other words."""
    said = set(content_words(restricted.clause)) - {restricted.noun} - set(content_words(restricted.shown))
    return len(said & claim_words) >= _PREDICATE


# "provided" only as a conjunction ("provided that", "provided you ..."), not "the provided # 40 torx driver"
_CONDITIONAL = (r"(?:only\s+)?(?:if|(?<!the\s)(?<!a\s)(?:provided|providing)(?:\s+that|(?=\s+(?:you|it|they|he|she|we|the|your|all|both|there)\b))"
                r"|as\s+long\s+as|unless|on\s+condition\s+that)")
_FRONTED = re.compile(rf"^\s*{_CONDITIONAL}\s+(?P<condition>[^,;]+),\s*(?:then\s+)?(?P<main>[^;]+)$", re.IGNORECASE)
_TRAILING = re.compile(rf"^(?P<main>[^;]+?)\s*,?\s+{_CONDITIONAL}\s+(?P<condition>[^;]+)$", re.IGNORECASE)
# A condition of having or wanting something ("if equipped", "if you wish", "if necessary"): an answer speaks to
# someone who has it; dropping it asserts nothing the reader would act on wrongly.
_OWN_CHOICE = frozenset(stem(w) for w in "equipped equip fitted installed available applicable necessary needed need required desired "
                        "want wish prefer like choose possible any so".split())
_YES = re.compile(r"^\s*yes\b", re.IGNORECASE)  # an unconditional answer to a yes/no question


def _dropped_condition(claim: str, said: _Claim, window: Window) -> list[str]:
    """The evidence says something on a condition ("Refunds are given if the item is unused", "Only if the form is
    signed, the deposit is returned") and the claim answers "Yes" with it, with none of the words of the condition,
    or of one of its parts joined by "and" ("Yes, refunds are given for items returned within 30 days" / "if the
    item is unused and returned within 30 days"; the part's subject, "the item", may stand in the claim); most of
    the claim's words are the sentence's."""
    if not _YES.match(claim):
        return []
    for sentence in STOP_BREAK.split(window.text):
        found = _FRONTED.match(sentence.rstrip(" .!?")) or _TRAILING.match(sentence.rstrip(" .!?"))
        if found is None or bool(_NEGATIONS.search(found.group("main"))) != said.negated:
            continue
        main = set(content_words(found.group("main")))
        condition = set(content_words(found.group("condition")))
        if len(main & said.words) < _PREDICATE or len(said.words - main - condition) > len(said.words) // 3:
            continue
        for part in _PARTS.split(found.group("condition")):
            distinct = set(content_words(_SUBJECT.sub("", part))) - main
            if distinct and not distinct & _OWN_CHOICE and not distinct & said.words:
                return [f"condition dropped: {' '.join(part.lower().split()[:8])}"]
    return []


_PARTS = re.compile(r"\s*,?\s+and\s+|\s*,\s*", re.IGNORECASE)  # "the item is unused and returned within 30 days"
_SUBJECT = re.compile(r"^\s*(?:(?:the|a|an|your|its|their|his|her)\s+)?[^\W\d_][\w'’-]*\s+(?=(?:is|are|was|were|has|have|had|remains?|stays?)\b)",
                      re.IGNORECASE)  # "[the item] is unused": what the part is about, which the claim may name
