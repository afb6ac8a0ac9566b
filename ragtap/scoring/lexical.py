"""Lexical evidence for a claim: which of its words, numbers and names the retrieved documents contain.

Cosine similarity cannot see that "tighten to 120 Nm" and "tighten to 95 Nm" disagree, nor that on-topic advice
the model added itself ("use jack stands") is not in the documents: both embed close to the text they imitate.
Words can.  A claim whose content words mostly stand in the documents is likely taken from them; a number or a
name that appears in the claim and nowhere in the documents is strong evidence that the model supplied it.

Matching is deliberately forgiving (lower case, a light suffix-stripping stem, numbers compared as quantities:
rounding and unit conversions agree, see quantities.py) because documents are often lower-cased, OCR'd or chunked
mid-word.  Names are matched as whole words.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from ragtap.scoring.quantities import AGE_GROUP, Quantity, converted_within, quantities, stated_in
from ragtap.scoring.words import stem

# Function words, and the words every answer uses to frame itself ("you", "should", "make sure"): they say
# nothing about where the claim's content came from.
STOPWORDS: frozenset[str] = frozenset(
    """a an the of and or but if in on at to for by with from into onto over under about above below between
    is are was were be been being am do does did doing have has had having will would shall should can could
    may might must need needs it its it's this that these those there their they them he she his her him we our
    us you your yours i me my what who whom whose when where which how why as than then so such also not no nor
    yes only just very too more most less least any some all each every both either neither other another same
    one ones here up down out off again further once own s t don't doesn't isn't aren't can't won't
    make makes made sure ensure please note like well way ways use used using get gets got may always never
    able before after while during until via per""".split()
)
_TOKEN = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)
# A name: a capitalised word inside a sentence (not its first word, nor the first after a colon), an acronym, or a
# model code.  Letters are any script's ("Bláthy", "Zürich").
_NAME_TOKEN = re.compile(r"(?<![\w\-])[^\W_][\w\-]*", re.UNICODE)  # whole words: "4C" is one, not "C" in it
_SENTENCE_START = re.compile(r"(?:^|[.!?:\n]|^\s*(?:[-*•]|\d{1,3}[.)]))[\s\"'“‘(\[]*$")
# Capitalised words that open clauses or titles: never names.
_NOT_NAMES = frozenset(
    """i i'm i've i'd i'll a an the this that these those it its he she they we you there here however also but and or
    so then if when while after before although though because since as in on at for with from by to of overall
    finally first second third next lastly additionally furthermore moreover meanwhile yes no not spring summer autumn
    winter""".split()
)


def content_words(text: str) -> list[str]:
    """The claim's content words, lower-cased and stemmed, in order (stopwords and 1-letter tokens dropped)."""
    return list(_content_words(text))


@functools.lru_cache(maxsize=16384)
def _content_words(text: str) -> tuple[str, ...]:
    # Cached: a claim's words are read by several checks, and document sentences recur across requests.
    words = []
    for token in _TOKEN.findall(folded(text).lower()):
        token = token.replace("’", "'")
        if len(token) > 1 and token not in STOPWORDS and not token.isdigit():
            words.append(stem(token))
    return tuple(words)


def folded(text: str) -> str:
    """`text` without accents and in one Unicode form: "Angoulême" written with a combining circumflex, with a
    precomposed one or without one is one word to the lexical checks."""
    if text.isascii():
        return text
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


_DOTTED = re.compile(r"\b((?:[A-Za-z]\.){2,})(-?)")
# The few names written several ways in the same text ("U.S.", "US", "United States").
_ALIASES: tuple[frozenset[str], ...] = (
    frozenset({"us", "usa", "united states", "america", "american", "americans"}),
    frozenset({"uk", "united kingdom", "britain", "british", "great britain"}),
    frozenset({"eu", "european union"}),
    frozenset({"un", "united nations"}),
    frozenset({"uae", "united arab emirates"}),
    frozenset({"tv", "television"}),
    # Titles: "Chief Executive Laura Benning" is the "CEO" an answer names (the long form often drops "Officer").
    frozenset({"ceo", "chief executive"}),
    frozenset({"cfo", "chief financial officer", "finance chief"}),
)


_CAPITALISED_RUN = re.compile(r"(?:[A-Z][\w'’-]*(?:\s+(?:of|and|for|the|de|du|von|van)\b)?\s+){1,6}[A-Z][\w'’-]*")


def _initialisms(text: str) -> set[str]:
    """The initials of each run of capitalised words ("International Space Station" -> "iss", "New York" -> "ny",
    "Department of Justice" -> "dj" and "doj"), so that an acronym a text introduces matches its long form."""
    out: set[str] = set()
    for match in _CAPITALISED_RUN.finditer(text):
        words = match.group(0).split()
        capitals = [w for w in words if w[0].isupper()]
        for run in (capitals, words):
            for first in range(len(run)):
                for last in range(first + 2, len(run) + 1):
                    out.add("".join(w if w.isupper() else w[0] for w in run[first:last]).lower())  # "US Citizenship and Immigration Services" -> "uscis"
    return out


def _undotted(text: str) -> str:
    """"U.S." -> "US", "e.g." stays a word: dotted acronyms as one token ("U.S.-led" -> "US-led")."""
    return _DOTTED.sub(lambda m: m.group(1).replace(".", "") + (m.group(2) or " "), text)


def tokens(text: str) -> frozenset[str]:
    """Every word of `text` lower-cased, whole (names are matched as whole words: "Ram" is not in "frame"), and
    stemmed; hyphenated words also by their parts; possessives without their 's; the aliases of the few names
    written several ways ("U.S." = "United States")."""
    text = folded(text)
    lowered = _undotted(text).lower()
    out: set[str] = set()
    for token in _NAME_TOKEN.findall(lowered):
        token = _bare(token)
        out.update((token, stem(token)))
        if "-" in token:
            out.update(p for part in token.split("-") if part for p in (part, stem(part)))
    out.update(_initialisms(_undotted(text)))
    for group in _ALIASES:
        if any((name in out) if " " not in name else (f" {name} " in f" {lowered} ") for name in group):
            out.update(w for name in group for w in name.split())
            out.update(name for name in group if " " not in name)
    return frozenset(out)


def _bare(token: str) -> str:
    """Without hyphens at the ends, a possessive 's, or the plural s of an acronym ("IDs", "CEOs")."""
    token = token.strip("-")
    if token.endswith(("'s", "’s")):
        return token[:-2]
    if len(token) > 2 and token.endswith("s") and token[:-1].isupper():
        return token[:-1]
    return token


@functools.lru_cache(maxsize=16384)
def names(text: str) -> frozenset[str]:
    """Proper names and codes (lower-cased, whole words): capitalised words inside a sentence, acronyms, model
    codes ("4C", "P215").  A sentence's first word is capitalised anyway: not a name here."""
    found: set[str] = set()
    text = _TITLE_LINE.sub(_acronyms_only, _undotted(undotted_titles(folded(text))))
    for match in _NAME_TOKEN.finditer(text):
        word = match.group(0)
        if word.islower() or word.isdigit():
            continue  # most words: no capital, no name (checked first: this runs for every word of every claim)
        word = _bare(word)
        letters = [c for c in word if c.isalpha()]
        if len(word) < 2 or not letters or word.lower() in _NOT_NAMES or not any(c.isupper() for c in letters):
            continue  # one letter is a unit, an initial or a label ("4.5 L", "25 °C", "option B"), never a name
        code = any(c.isdigit() for c in word) and not AGE_GROUP.fullmatch(word.lower())  # "Over-60s" is no code
        acronym = len(letters) >= 2 and all(c.isupper() for c in letters)
        if not acronym and not code and word.lower() in _FUNCTION_WORDS:
            continue  # a capitalised function word in a title or a name ("Find Your Park") names nothing itself
        if code or acronym or (word[0].isupper() and _SENTENCE_START.search(text, max(0, match.start() - 12), match.start()) is None):
            found.add(word.lower())
    return frozenset(found)


_HONORIFIC = re.compile(r"\b(Dr|Mr|Mrs|Ms|Prof|Rev|Gen|Col|Capt|Sgt|Lt|Gov|Sen|Rep|St|Mt)\.(?=\s+[A-Z])")


def undotted_titles(text: str) -> str:
    """"Dr. Amara Osei" -> "Dr Amara Osei": the title's dot ends no sentence, so "Amara" is a name inside one."""
    return _HONORIFIC.sub(r"\1", text)


_FUNCTION_WORDS = STOPWORDS - {"may"}  # "May" is a month as often as a modal verb
# A headline in Title Case capitalises every word: only its acronyms are names.
_TITLE_LINE = re.compile(r"^(?:[^\S\n]*[A-Z0-9][\w'’\-.,:]*[^\S\n]+(?:(?:a|an|the|of|to|in|on|for|and|or|at|by|from|with)[^\S\n]+)?){3,}[A-Z0-9][\w'’\-.,:?!]*[^\S\n]*$", re.MULTILINE)


def _acronyms_only(match: re.Match[str]) -> str:
    return " ".join(w if sum(c.isupper() for c in w) >= 2 else w.lower() for w in match.group(0).split(" "))


@dataclass(frozen=True, slots=True)
class DocumentVocabulary:
    """What the lexical checks need from the evidence texts, built once per interaction."""

    words: frozenset[str]  # content words, stemmed
    tokens: frozenset[str]  # every word, whole, lower-cased (for names)
    quantities: tuple[Quantity, ...]
    writes_names: bool  # the texts capitalise names (a lower-cased document gives no name to compare with)

    @classmethod
    def of(cls, texts: Sequence[str]) -> DocumentVocabulary:
        parts = [_vocabulary_of_text(text) for text in texts]
        if len(parts) == 1:
            return parts[0]
        return cls(
            frozenset().union(*(p.words for p in parts)),
            frozenset().union(*(p.tokens for p in parts)),
            tuple(q for p in parts for q in p.quantities),
            any(p.writes_names for p in parts),
        )


@functools.lru_cache(maxsize=4096)
def _vocabulary_of_text(text: str) -> DocumentVocabulary:
    # Retrieved documents recur across requests (the same manual page answers many questions): cache by text.
    return DocumentVocabulary(frozenset(content_words(text)), tokens(text), quantities(text), bool(names(text)))


@dataclass(frozen=True, slots=True)
class LexicalEvidence:
    """How much of a claim the documents contain, word for word."""

    content_words: int  # the claim's content words
    precision: float  # share of them found in the documents (1.0 for a claim with none)
    missing_numbers: tuple[str, ...]  # quantities of the claim that no document states (nor the claim converts)
    missing_names: tuple[str, ...]  # names/codes in the claim that no document contains as a word


def name_in(name: str, vocabulary_tokens: frozenset[str]) -> bool:
    """The name stands in the vocabulary as a word (or its stem: "Pacer" / "Pacers"), or all its hyphenated parts do."""
    if name in vocabulary_tokens or stem(name) in vocabulary_tokens:
        return True
    parts = [p for p in re.split(r"[-.]", name) if p]
    return len(parts) > 1 and all(p in vocabulary_tokens or stem(p) in vocabulary_tokens for p in parts)


# How a name's other forms end: Yemen/Yemeni, Russia/Russian, Christian/Christianity, Japan/Japanese, Texas/Texan.
_DERIVED = frozenset({"n", "an", "ian", "i", "ese", "ish", "ity", "s", "es", "ns", "ers", "er"})
# Short forms written before names ("Rep. Anthony", "Oct. 4"): the dot is gone from the tokens.
_SHORT_FORMS = {
    "rep": "representative", "sen": "senator", "gov": "governor", "gen": "general", "pres": "president", "prof": "professor",
    "dr": "doctor", "mt": "mount", "ft": "fort", "st": "saint", "jan": "january", "feb": "february", "mar": "march",
    "apr": "april", "jun": "june", "jul": "july", "aug": "august", "sep": "september", "sept": "september", "oct": "october",
    "nov": "november", "dec": "december", "mon": "monday", "tue": "tuesday", "tues": "tuesday", "wed": "wednesday",
    "thu": "thursday", "thur": "thursday", "thurs": "thursday", "fri": "friday", "sat": "saturday", "sun": "sunday",
}


def _other_form(a: str, b: str) -> bool:
    """`a` and `b` are forms of one name: a derived form ("Yemeni"), a short form ("Oct"), another spelling
    ("Organisation", "Leetch": one letter apart in a word of five or more), never another word that merely starts
    alike ("Audi" is not "audio")."""
    if _SHORT_FORMS.get(a) == b or _SHORT_FORMS.get(b) == a:
        return True
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    if len(short) < 4:
        return False
    if len(short) >= 5 and len(long) - len(short) <= 1 and a[0] == b[0] and _one_edit(short, long):
        return True
    if long.startswith(short) and long[len(short):] in _DERIVED:
        return True
    return long[: len(short) - 1] == short[:-1] and long[len(short) - 1 :] in _DERIVED  # Texas / Texan


def _one_edit(short: str, long: str) -> bool:
    """One substitution (same length) or one insertion (one longer) turns `short` into `long`."""
    if len(short) == len(long):
        return sum(x != y for x, y in zip(short, long)) == 1
    i = next((k for k, (x, y) in enumerate(zip(short, long)) if x != y), len(short))
    return short[i:] == long[i + 1 :]


def name_or_short_form_in(name: str, vocabulary_tokens: frozenset[str]) -> bool:
    """`name_in`, or another form of a word there ("Yemeni" / "Yemen", "Oct" / "October", "Texan" / "Texas")."""
    return name_in(name, vocabulary_tokens) or any(_other_form(name, token) for token in vocabulary_tokens)


def lexical_evidence(claim: str, vocabulary: DocumentVocabulary, premise: DocumentVocabulary | None = None) -> LexicalEvidence:
    """`premise`: the question's vocabulary.  A number or a name the user stated is not one the model invented
    ("What does Button 1 do?" -> "Button 1 places the ignition in ACC"), though it does not support the claim."""
    words = content_words(claim)
    found = sum(1 for word in words if word in vocabulary.words)
    own = quantities(claim)
    stated = vocabulary.quantities + (premise.quantities if premise is not None else ())
    known = with_long_forms(claim, vocabulary.tokens | (premise.tokens if premise is not None else frozenset()))
    missing_numbers = tuple(sorted({q.describe() for q in own
                                   if not q.loose and not stated_in(q, stated) and not converted_within(q, own)}))
    missing_names = tuple(sorted(n for n in names(claim) if not name_or_short_form_in(n, known)))
    return LexicalEvidence(len(words), found / len(words) if words else 1.0, missing_numbers, missing_names)


_INTRODUCED_ACRONYM = re.compile(r"\(([A-Z][A-Za-z]{1,9})\)")
_CONNECTORS = frozenset({"of", "and", "for", "the", "on", "in", "de", "&"})


def with_long_forms(claim: str, known: frozenset[str]) -> frozenset[str]:
    """`known`, plus the words of each long form the claim introduces for an acronym the documents use: "the
    Centers for Disease Control and Prevention (CDC)" where the documents only write "CDC".  The acronym's letters
    must spell, in order, initials of the capitalised run before it (from its first word)."""
    if "(" not in claim:
        return known
    added: set[str] = set()
    for match in _INTRODUCED_ACRONYM.finditer(claim):
        acronym = match.group(1).lower()
        if acronym not in known:
            continue
        run: list[str] = []
        for word in reversed(claim[: match.start()].split()[-12:]):
            if not (word[:1].isupper() or word.lower() in _CONNECTORS):
                break
            run.insert(0, word)
        words = [w.lower().strip("'’,") for w in run]
        for first in range(len(words)):  # the longest run that spells it ("Monday the Centers for ..." -> "Centers ...")
            if words[first] not in _CONNECTORS and _spells(acronym, words[first:]):
                added.update(_bare(w) for w in words[first:] if w not in _CONNECTORS)
                break
    return known | added if added else known


def _spells(acronym: str, words: list[str]) -> bool:
    """`acronym` is the first word's initial (or the first word itself, "US Citizenship ...") followed by the
    initials of later words, in order, any word skippable."""
    head = words[0]
    rest = acronym[len(head):] if acronym.startswith(head) and len(head) > 1 else acronym[1:] if acronym[0] == head[0] else None
    if rest is None:
        return False
    letters = iter(w[0] for w in words[1:])
    return all(any(letter == initial for initial in letters) for letter in rest)
