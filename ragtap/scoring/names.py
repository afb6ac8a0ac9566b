"""Names: a claim that names someone or something other than its aligned evidence does (conflicts.py calls it).

A name is what a fluent wrong answer most easily gets wrong while keeping every other word: "Tesla designed the
motor" where the sentence says Bláthy did.  Each check compares the claim with the evidence window it rests on
(alignment.py), never with the documents at large, and needs the evidence's own name in the place of the claim's.
The rules are listed in order in `name_conflicts`; the last, a name taken from elsewhere in the same documents,
reads the documents' other sentences too, only to spare what a faithful summary does (two names of one thing, a
place within another, a sentence that states the claim's name in the same place).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from ragtap.scoring.alignment import EvidenceIndex, Window
from ragtap.scoring.lexical import (
    STOPWORDS,
    DocumentVocabulary,
    content_words,
    name_in,
    name_or_short_form_in,
    names,
    tokens,
    undotted_titles,
    with_long_forms,
)
from ragtap.scoring.sentences import STOP_BREAK
from ragtap.scoring.words import MONTHS, WEEKDAYS, stem


def name_conflicts(claim: str, best: Window, vocabulary: DocumentVocabulary, index: EvidenceIndex | None = None) -> list[str]:
    """A substituted name, in three forms.

    1. A name the documents lack, standing where the evidence names another ("Tesla designed the motor" where the
       sentence says Bláthy designed it).  "Where": a content word next to the claim's name (within `_NEAR` words)
       stands next to the evidence's name too.  The claim's first word counts here, since the evidence's own name is
       there to compare with.  Not a word of a longer name whose other words the documents hold ("Tulsa County").
    2. A subject taken from elsewhere in the documents where the rest of the claim repeats one sentence ("Charles
       Babbage was born in London in 1815" against "Ada Lovelace was born in London in 1815"); not where that sentence
       names its subject by a pronoun ("She worked with Babbage" is about the claim's Lovelace).  Only then: a summary
       joins facts from several sentences, so a name from another sentence is too often right to be a substitution.
    3. A name of the evidence sentence moved into its subject's place (`_moved_into_subject`).
    4. A name the documents hold elsewhere, standing where the evidence sentence names another
       (`_taken_from_elsewhere`)."""
    claim_tokens = tokens(claim)
    candidates = names(claim) | _initial_capitalised(claim)
    claim_words = content_words(claim)
    claim_set = set(claim_words)
    sentences = STOP_BREAK.split(best.text)
    sentence = max(sentences, key=lambda t: len(set(content_words(t)) & claim_set))
    if _repeats_the_rest(claim, sentence, candidates) and not _PRONOUN.search(sentence):
        taken = sorted(n for n in _subjects(claim) & candidates if not name_or_short_form_in(n, tokens(sentence)))
        replaced = sorted(n for n in _subjects(sentence) & names(sentence) if n not in _WHEN and not name_or_short_form_in(n, claim_tokens))
        if taken and replaced:
            return [f"name: {taken[0]} vs {replaced[0]}"]
    window_words, window_names = set(content_words(best.text)), names(best.text)
    for one in sentences:
        moved = _moved_into_subject(claim, one, candidates, window_words, window_names)
        if moved:
            return [moved]
    evidence_names = [n for n in names(best.text)
                      if n not in _WHEN and not name_or_short_form_in(n, claim_tokens) and not _in_named_run(best.text, n, claim_tokens)]
    known = with_long_forms(claim, vocabulary.tokens)
    absent = [n for n in sorted(candidates)
              if n not in _WHEN and not name_or_short_form_in(n, known) and not _in_named_run(claim, n, known)]
    evidence_sentences = [content_words(s) for s in sentences]
    for name in absent:
        around = _neighbours(claim_words, stem(name))
        for other in sorted(evidence_names):
            # Neighbours within one sentence: the last words of one sentence do not stand next to the next one's first.
            if any(around & _neighbours(words, stem(other)) for words in evidence_sentences):
                return [f"name: {name} vs {other}"]
    return _taken_from_elsewhere(claim, best.text, known, [s.text for s in index.sentences] if index is not None else [best.text])


def _moved_into_subject(claim: str, sentence: str, candidates: frozenset[str] | set[str], window_words: set[str],
                        window_names: frozenset[str]) -> str | None:
    """3. A name of the sentence moved into its subject's place: "Bergwijn scored twice in the first half" where the
    sentence says "Kudus scored twice in the first half and Bergwijn added a third".  The claim's words after its
    subject that the sentence holds (two at least; the window holds them all) stand in it before that name
    does (so the name is not a second subject: "Kudus and Bergwijn scored")."""
    taken = _subjects(claim) & candidates
    # A capitalised first word names the subject when a verb follows it ("Kudus scored"), not a preposition ("Found in
    # 2014 by ...", "Founded in ...").
    follows = re.match(r"\s*[^\W\d_][\w\-]+\s+([a-z][\w\-]*)", sentence)
    opener = _initial_capitalised(sentence) if follows and follows.group(1) not in STOPWORDS else set()
    claim_words = set(content_words(claim))
    # Or the window writes it as a name inside a sentence ("... two moons, Phobos and Deimos. Phobos is the larger").
    known = names(sentence) | opener | (_initial_capitalised(sentence) & window_names)
    replaced = {n for n in _subjects(sentence) & known if n not in _WHEN and stem(n) not in claim_words}
    if not taken or not replaced or taken & replaced or _PRONOUN.match(sentence.lstrip()):
        return None
    if any(re.search(rf"\bby\s+(?:[A-Z][\w'’-]*\s+)*{re.escape(n)}\b", sentence, re.IGNORECASE) for n in taken):
        return None  # "a film directed by Christopher Nolan": the passive's agent is the subject the claim names
    taken_stems = {stem(n) for n in taken}
    words = content_words(sentence)
    # The claim's other words: all in the window, and those of this sentence before the moved name and before any
    # other name after the subject (they are the subject's, not those of another clause's subject: "Radja scored ...
    # and Desmarais made it 4-2 before Ling got one back" / "Ling scored to make it 4-3").  A paraphrase may take a
    # word from the sentence before ("Deimos orbits closer to Mars" / "Mars ... has two moons, Phobos and Deimos.
    # Phobos is the larger of the two and orbits closer to the planet, ..., while Deimos ...").
    rest = [w for w in content_words(claim) if w not in taken_stems]
    held = [w for w in rest if w in words]
    subject = {stem(n) for n in replaced}
    named = {stem(n) for n in names(sentence) if stem(n) not in _WHEN} | taken_stems  # "on Wednesdays" names no one
    others = [i for i, w in enumerate(words) if w in named and w not in subject]
    if len(held) < 2 or any(w not in window_words for w in rest) or not any(w in taken_stems for w in words) \
            or any(w in taken_stems for w in words[: len(replaced)]):
        return None
    if max(words.index(w) for w in held) < min(others):
        return f"name: {sorted(taken)[0]} vs {sorted(replaced)[0]}"
    return None


_NEAR = 2  # content words each side
# Days and months are dates, not the names of who or what did something.
_WHEN = frozenset((*WEEKDAYS, *MONTHS))


_REPEATS = 0.85  # share of the claim's other content words the evidence sentence must hold
_PRONOUN = re.compile(r"\b(?:he|she|they|his|her|hers|him|their|them)\b", re.IGNORECASE)


def _subjects(text: str) -> set[str]:
    """The capitalised words opening `text` (its subject, when a name): "Charles Babbage was born ...".  Not a name
    that only describes the subject, after an article and before a common noun ("A NASA astrophysicist has ...",
    "The Sydney native, who ...")."""
    match = re.match(r"\s*((?:[A-Z][\w'’-]*\s+){0,2}[A-Z][\w'’-]*)(\s+[a-z][\w-]*)?", undotted_titles(text))
    if match is None:
        return set()
    words = match.group(1).split()
    if words[0].lower() in ("a", "an", "the") and match.group(2) and match.group(2).strip() not in STOPWORDS:
        return set()
    return {_without_possessive(w.lower()) for w in words}


def _without_possessive(word: str) -> str:
    return word[:-2] if word.endswith(("'s", "’s")) else word.rstrip("'’")


def _repeats_the_rest(claim: str, evidence: str, claim_names: frozenset[str] | set[str]) -> bool:
    """The evidence sentence holds nearly all of the claim but for the claim's names it lacks."""
    held = set(content_words(evidence))
    lacking = {stem(n) for n in claim_names} - held
    rest = [w for w in content_words(claim) if w not in lacking]
    return len(lacking) > 0 and len(rest) >= 2 and sum(w in held for w in rest) >= _REPEATS * len(rest)


def _in_named_run(text: str, name: str, known: frozenset[str]) -> bool:
    """`name` is one capitalised word of a run in `text` whose other words are `known` ("Tulsa County", "Charles
    Babbage"): the same thing, named more or less fully."""
    for match in re.finditer(r"(?:[A-Z][\w'’-]*\s+){0,3}[A-Z][\w'’-]*", text):
        words = [_without_possessive(w.lower()) for w in match.group(0).split()]
        if name in words and len(words) > 1 and any(w != name and name_in(w, known) for w in words):
            return True
    return False


def _neighbours(words: list[str], name: str) -> set[str]:
    """The content words next to `name` (function words skipped: "founded [by the city of] Szentendre")."""
    out: set[str] = set()
    for i, word in enumerate(words):
        if word == name:
            out.update(words[max(0, i - _NEAR) : i] + words[i + 1 : i + 1 + _NEAR])
    return out - {name}


def _initial_capitalised(claim: str) -> set[str]:
    match = re.match(r"\s*([^\W\d_][\w\-]+)", claim)
    if match is None or not match.group(1)[0].isupper():
        return set()
    word = match.group(1).lower()
    return set() if word in _COMMON_OPENERS or stem(word) in _COMMON_OPENERS or not content_words(word) else {word}


# Capitalised first words that are not names even when the documents lack them (imperatives, discourse words).
_COMMON_OPENERS = frozenset(
    """based according overall additionally furthermore moreover however therefore thus hence meanwhile finally first
    second third next then lastly also instead otherwise regardless despite although though while whereas because since
    after before during once when where if unless until whether please note remember make ensure check use press turn
    return keep avoid remove install replace open close set select click tap go visit contact consult refer follow see
    read write try start stop wait let find put take give get add place hold pull push lift lower raise clean wash
    drive park allow today yesterday tomorrow currently recently previously initially eventually ultimately generally
    typically usually often sometimes always never many most some several few each every all both either neither
    another other such similarly likewise specifically notably importantly interestingly unfortunately fortunately
    sure yes okay thousands hundreds millions billions dozens tens several numerous tune stay watch anyone anybody
    everyone everybody someone somebody nobody people""".split()
)


# ----------------------------------------------------------------------------------------------------------------
# 4. A name taken from elsewhere in the documents
# ----------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Run:
    """A name as written: one or several capitalised words ("Calar Alto Observatory", "Mayor Ingrid Solberg")."""

    words: tuple[str, ...]  # lower-cased, possessive dropped, connectors ("of", "de") kept out
    start: int  # character offsets in the text it was found in
    end: int
    possessive: bool  # "Sara Lind's company": the name describes what the clause is about, it fills no slot

    @property
    def core(self) -> tuple[str, ...]:
        """Its words but a leading title ("Mayor", "Goalkeeper", "Dr"): what tells this name from another."""
        return self.words[1:] if len(self.words) > 1 and self.words[0] in _TITLES else self.words

    def shown(self) -> str:
        return " ".join(self.core)


_RUN = re.compile(r"[A-Z][\w'’.-]*[\w'’](?:\s+(?:(?:of|the|de|del|da|van|von|der|du|la|le|&)\s+){0,2}[A-Z][\w'’.-]*[\w'’])*"
                  r"|[A-Z]\w*")
_CLAUSE_BREAK = re.compile(r"[;:,()]|\s[-–—]\s|(?<=[.!?])\s")
# What makes a name not the claim's statement but one it denies or sets apart: "to Venice, not to Trieste".
_SET_APART = re.compile(
    r"\b(?:not|no|never|nor|rather\s+than|instead\s+of|unlike|except|apart\s+from|other\s+than)\s+(?:\w+\s+){0,2}$", re.IGNORECASE
)
# A title or role written capitalised before a name: it does not tell one person or place from another.
_TITLES = frozenset(
    """mr mrs ms miss dr prof professor sir dame lord lady king queen prince princess president chancellor minister
    senator governor mayor councillor judge justice general colonel captain sergeant chief director chairman chair
    coach manager striker goalkeeper defender engineer keeper saint st mount mt lake river cape comet""".split()
)
_SUBJECT_PRONOUN = re.compile(r"\b(?:he|she|they)\b", re.IGNORECASE)  # "She founded it": the claim may name her
_CLAIM_SHARE = 0.66  # share of the clause's other words (and numbers) its evidence sentence must hold


def _taken_from_elsewhere(claim: str, window: str, known: frozenset[str], document_sentences: Sequence[str]) -> list[str]:
    """4. A name the documents hold elsewhere, in the place where the claim's evidence sentence names another:
    "The library was created by Omar Haddad in 2016" where "The library was created by Kira Tanaka in 2016. Its
    documentation is maintained by Omar Haddad."  Judged clause by clause (a claim joining two facts may get one of
    them right).  A summary merges sentences all the time, so every condition must hold:

    - the clause rests on one evidence sentence (it holds most of the clause's other words and numbers), and that
      sentence names a name the clause does not (no word of it but those the two names share: "Kiso Observatory" /
      "Calar Alto Observatory"), while nothing of the claim's name is in that sentence: it is taken from elsewhere
      (the evidence's name is no nickname: "Duke ... The Blue Devils dominated" calls one team by two names); two
      names that may both qualify another noun ("a 55-year-old American citizen" / "a 55-year-old California
      native") fill no slot;
    - the claim's name stands in the slot of the evidence's: the same preposition before them ("by", "at", none),
      and the same content word just before them (a role word may come between: "signed striker Jonas Berg"), or,
      both opening their clause, just after them ("Northwind is led by" / "Eastline is led by"; not "a former
      Aberdeen midfielder" / "Former Dons midfielder");
    - the claim's name is stated, not set apart ("to Venice, not to Trieste") nor a possessor ("Sara Lind's company",
      which describes the clause's subject, it does not replace it), and the evidence sentence names no one by a
      subject pronoun ("She founded the museum with Jonas Berg" is about the claim's name);
    - in a place's slot, the claim's name is a place in the documents too, and not their setting (`_setting`);
    - the documents (`document_sentences`: the alignment index's sentences) never write the two names together,
      as one name or one beside the other ("Tameka Raymond", "Mukalla, Yemen", "Egyptian television network
      CBC": the same thing, or one within the other), nor the claim's name in the same slot in a sentence that
      could be the clause's evidence as well."""
    claim, sentences = undotted_titles(claim), _sentences(window)
    documents = _Sentences(document_sentences)
    for start, end in _clauses(claim):
        clause = claim[start:end]
        own = [r for r in _runs(claim, start, end) if not r.possessive and not _SET_APART.search(claim[start : r.start])]
        if not own:
            continue
        rest = [w for w in content_words(clause) if w not in {stem(x) for r in own for x in r.words}] + _NUMBER.findall(clause)
        if len(rest) < 2:
            continue
        sentence = max(sentences, key=lambda s: sum(w in _held(s) for w in rest))
        evidence_runs = _runs(sentence, 0, len(sentence))
        if not evidence_runs or sum(w in _held(sentence) for w in rest) < _CLAIM_SHARE * len(rest) \
                or _SUBJECT_PRONOUN.search(sentence):
            continue
        sentence_tokens = _name_tokens(sentence)
        # Names the sentence lacks (it would hold the claim's own), the documents hold (else rule 1 judges them).
        own = [r for r in own if not any(name_or_short_form_in(w, sentence_tokens) for w in r.core)
               and all(name_or_short_form_in(w, known) for w in r.core)]
        if not own:
            continue
        clause_tokens = _name_tokens(clause)
        if _SUCCEEDS.search(clause) or _SUCCEEDED_BY.search(clause):
            if succession := _other_successor(claim, start, end, own, sentence, clause_tokens, documents):
                return [succession]
        for name in own:
            slot = _slot(claim, name, start, end)
            for other in evidence_runs:
                distinct = [w for w in other.core if w not in name.words]
                if not distinct or other.possessive or any(w in _WHEN or name_or_short_form_in(w, clause_tokens)
                                                           for w in distinct):
                    continue  # the clause names it too (in any case: "the asteroid" / "Asteroid 316201")
                if _NICKNAME.search(sentence[: other.end]):
                    continue  # "Duke ... The Blue Devils dominated": a nickname may stand for the claim's name
                there = _slot(sentence, other, 0, len(sentence))
                if slot.qualifies and there.qualifies and slot.after != there.after and slot.preposition is None \
                        and not (slot.opens and there.opens):
                    continue  # both may qualify a noun: "a 55-year-old American citizen" / "a 55-year-old California native"
                if _same_slot(slot, there) and not _related(name, other, documents) \
                        and not _stated_elsewhere(name, slot, rest, documents) and not _setting(name, slot, documents):
                    return [f"name: {name.shown()} vs {other.shown()}"]
    return []


# Who took whose place: "X succeeded Y", "succeeding Y", "X replaced Y", "X took over from Y"; "Y was succeeded by X".
_SUCCEEDS = re.compile(r"\b(?:succeed(?:s|ed|ing)?|replac(?:es|ed|ing|e)|t(?:ook|akes|aking|ake)\s+over\s+from)\s+(?=[A-Z])")
_SUCCEEDED_BY = re.compile(r"\b(?:succeeded|replaced)\s+by\s+(?=[A-Z])")


def _successions(text: str, start: int, end: int) -> list[tuple[_Run, _Run]]:
    """(successor, predecessor) pairs of text[start:end]: after "succeeding"/"replaced"... the predecessor, and the
    successor is the clause's first name ("Priya Nair became principal conductor, succeeding Anton Weiss"); after
    "succeeded by" the successor, and the predecessor the nearest name before ("Anton Weiss retired in March and was
    succeeded by Lena Hoff").  Dates are no names here."""
    runs = [r for r in _runs(text, start, end) if not set(r.words) & _WHEN]
    out = []
    for pattern, active in ((_SUCCEEDS, True), (_SUCCEEDED_BY, False)):
        for match in pattern.finditer(text, start, end):
            after = next((r for r in runs if r.start == match.end()), None)
            before = [r for r in runs if r.end <= match.start()]
            if after is None or not before:
                continue
            out.append((before[0], after) if active else (after, before[-1]))
    return out


def _other_successor(claim: str, start: int, end: int, own: list[_Run], sentence: str, clause_tokens: frozenset[str],
                     documents: Iterable[str]) -> str | None:
    """The claim names as someone's successor a name of the documents that the evidence sentence lacks, where that
    sentence names another as the same one's successor: "Priya Nair became principal conductor, succeeding Anton
    Weiss" where "Anton Weiss retired in March and was succeeded by Lena Hoff" (Priya Nair runs the youth
    programme).  A role told in other words has no shared slot; the relation itself is the slot."""
    for successor, predecessor in _successions(claim, start, end):
        if not any(successor.core == r.core for r in own):
            continue  # a name the documents lack (rule 1), or one the sentence holds
        for other, their_predecessor in _successions(sentence, 0, len(sentence)):
            if set(their_predecessor.core) & set(predecessor.core) and not set(other.core) & set(successor.core) \
                    and not any(name_or_short_form_in(w, clause_tokens) for w in other.core) \
                    and not _related(successor, other, documents):
                return f"name: {successor.shown()} vs {other.shown()}"
    return None


@functools.lru_cache(maxsize=16384)
def _sentences(text: str) -> tuple[str, ...]:
    """`text`'s sentences, a title's dot ending none ("Dr. Mei Chen")."""
    return tuple(STOP_BREAK.split(undotted_titles(text)))


class _Sentences:
    """The documents' sentences, cut only when a rule needs them (most claims never get that far)."""

    def __init__(self, texts: Sequence[str]) -> None:
        self._texts = texts

    def __iter__(self) -> Iterator[str]:
        return (part for text in self._texts for part in _sentences(text))


_APPOSED = 3  # words between two names written together ("Egyptian television network CBC")
# Function words that may stand between them: "the Egyptian city of Luxor", "Maidstone in Kent", "Mark Dunn, the boss
# of Kell Foods"; not "from Venice to Trieste", "Mars and Jupiter".
_WITHIN = frozenset({"of", "in", "at", "near", "outside", "the", "a", "an"})


def _related(name: _Run, other: _Run, documents: Iterable[str]) -> bool:
    """One name spells the other's initials ("BB25", "Big Brother 25"), or the documents write the two names together
    somewhere: as one run ("Tameka Raymond"), or with at most a comma and `_APPOSED` words between them, no function
    word but those of `_WITHIN` ("Mukalla, Yemen", "Scott County, Indiana", "the Egyptian city of Luxor", "Mark Dunn,
    the boss of Kell Foods").  Such names are one thing, or one within or at the head of the other: no substitution."""
    if _initials_of(name, other) or _initials_of(other, name):
        return True
    mine = set(name.core) - set(other.core)
    theirs = set(other.core) - set(name.core)
    for sentence in documents:
        runs = _runs(sentence, 0, len(sentence))
        found_mine = [r for r in runs if mine & set(r.words)]
        found_theirs = [r for r in runs if theirs & set(r.words)]
        for a in found_mine:
            for b in found_theirs:
                if a is b:
                    return True
                first, second = (a, b) if a.start < b.start else (b, a)
                gap = re.findall(r"[^\W_][\w'’-]*", sentence[first.end : second.start])  # numbers count as words here
                if len(gap) <= _APPOSED and all(w.lower() in _WITHIN or w.lower() not in STOPWORDS for w in gap):
                    return True
    return False


def _initials_of(short: _Run, long: _Run) -> bool:
    """`short` is one word spelling `long`'s initials, maybe with a number: "BB25" for "Big Brother 25"."""
    initials = "".join(w[0] for w in long.words)
    return len(short.words) == 1 and len(long.words) > 1 and short.words[0].rstrip("0123456789") == initials


def _stated_elsewhere(name: _Run, slot: _Slot, rest: list[str], documents: Iterable[str]) -> bool:
    """Another sentence of the documents that could be the clause's evidence too (it holds as much of the clause's
    other words) writes the claim's name in the claim's slot (a word before or after it shared)."""
    for sentence in documents:
        if sum(w in _held(sentence) for w in rest) < _CLAIM_SHARE * len(rest):
            continue
        for run in _runs(sentence, 0, len(sentence)):
            if set(name.core) & set(run.words):
                there = _slot(sentence, run, 0, len(sentence))
                if slot.before & there.before or (slot.after is not None and slot.after == there.after):
                    return True
    return False


_PLACE = frozenset(
    "in at on near across within throughout around inside outside to from into via towards toward".split()
)
_SETTING = 3  # sentences of the documents naming a place that is the documents' setting


def _setting(name: _Run, slot: _Slot, documents: Iterable[str]) -> bool:
    """A place told wider or otherwise than the evidence's, not a place taken from elsewhere.  In a place's slot
    ("in", "at", "from", "to" ...) the claim's name must be a place in the documents too (a name they write after such
    a word: not "Kent" of "Kent Police", "Indiana" of "Indiana University"), and not where the documents take place
    (named in `_SETTING` sentences or more: "militants in Yemen" / "militants in Mukalla", a part of it)."""
    if slot.preposition not in _PLACE:
        return False
    named, placed = 0, False
    for sentence in documents:
        if any(name_or_short_form_in(w, _name_tokens(sentence)) for w in name.core):
            named += 1
            runs = [run for run in _runs(sentence, 0, len(sentence)) if set(name.core) & set(run.words)]
            placed = placed or any(_slot(sentence, run, 0, len(sentence)).preposition in _PLACE for run in runs)
    return named >= _SETTING or not placed


@functools.lru_cache(maxsize=16384)
def _name_tokens(sentence: str) -> frozenset[str]:
    return tokens(sentence)


_NUMBER = re.compile(r"\d+(?:[.:,]\d+)*")
# "The" and a plural: a team's or a group's nickname ("the Red Lichties", "The Blue Devils"), which may stand for
# another name of the documents.
_NICKNAME = re.compile(r"\b[Tt]he\s+(?:[A-Z][\w'’-]*\s+)*[A-Z][\w'’-]*[^s\W]s$")


@functools.lru_cache(maxsize=4096)
def _held(sentence: str) -> frozenset[str]:
    return frozenset(content_words(sentence)) | frozenset(_NUMBER.findall(sentence))


def _clauses(text: str) -> list[tuple[int, int]]:
    """The clauses of a claim (character spans): parts between semicolons, ", and", ", but", ", while" ...; not
    " and" before a verb ("resigned in June and was replaced by X": the second verb's subject is in the first part)."""
    cuts = [m.span() for m in re.finditer(r"\s*;\s*|,\s+(?:and|but|while|whereas)\s+", text)]
    spans, last = [], 0
    for a, b in cuts:
        spans.append((last, a))
        last = b
    spans.append((last, len(text)))
    return [(a, b) for a, b in spans if b > a]


@functools.lru_cache(maxsize=16384)
def _runs(text: str, start: int, end: int) -> tuple[_Run, ...]:
    """The names written in text[start:end]: runs of capitalised words, a sentence's first word only when the
    run goes on ("Northwind Logistics acquired"; not "Residents of ...").  Leading function words and openers are
    not part of a name ("The Hallberg Museum", "In Vienna")."""
    out = []
    for match in _RUN.finditer(text, start, end):
        written = match.group(0).split()
        first = match.start()
        while len(written) > 1 and (written[0].lower() in STOPWORDS or written[0].lower() in _COMMON_OPENERS):
            first = text.index(written[1], first + len(written[0]))
            written = written[1:]
        words = tuple(_without_possessive(w.lower()) for w in written if w.lower() not in _CONNECTORS)
        if not words or all(w in STOPWORDS or w == "i" or w.startswith(("i'", "i’")) for w in words):
            continue  # "I'm announcing": a pronoun
        at_start = _SENTENCE_START.search(text[:first]) is not None
        if at_start and len(words) == 1 and words[0] not in names(text):
            continue  # a sentence's first word is capitalised anyway
        out.append(_Run(words, first, match.end(), written[-1].endswith(("'s", "’s", "'", "’"))))
    return tuple(out)


_CONNECTORS = frozenset({"of", "the", "de", "del", "da", "van", "von", "der", "du", "la", "le", "&"})
_SENTENCE_START = re.compile(r"(?:^|[.!?:;]\s+|\n)[\s\"'“(]*$")
_DETERMINERS = frozenset({"a", "an", "the", "his", "her", "its", "their", "our", "my", "your", "this", "that", "these", "those"})
_PREPOSITIONS = frozenset(
    "by in at from to for with of on into onto via under over near after before between against through across within "
    "during about without toward towards".split()
)


@dataclass(frozen=True, slots=True)
class _Slot:
    preposition: str | None  # the function word before the name (a role word may come between: "by engineer X")
    before: frozenset[str]  # the content words among the three words before it
    after: str | None  # the content word after it (function words skipped)
    opens: bool  # it opens its clause (after determiners only): the clause's subject
    qualifies: bool  # a content word follows it at once: with no preposition before it and not opening its clause,
    # it may qualify a noun ("a former Aberdeen midfielder") as well as be a verb's object


_WORD = re.compile(r"[^\W\d_][\w'’-]*")
_APPOSITION = re.compile(r"\b[a-z][\w'’-]*,\s*$")
_LEFT = 3  # words before a name that say what it is to the clause: "signed striker [X]", "designed by engineer [X]"


def _slot(text: str, run: _Run, start: int, end: int) -> _Slot:
    """Where a name stands in its clause: its neighbours, up to a comma or a clause's end, and never across
    another name ("by the amateur astronomer Yuki Sato at the [Kiso Observatory]": only "at the")."""
    left = text[start : run.start]
    right = text[run.end : end]
    if _APPOSITION.search(left) and re.match(r"\s*(?:,|$)", right):
        left = left.rstrip()[:-1]  # "Lang's lawyer, Samuel Ortiz, said": an apposition's slot is the noun it names
    left = left[max((m.end() for m in _CLAUSE_BREAK.finditer(left)), default=0) :]
    right = right[: next((m.start() for m in _CLAUSE_BREAK.finditer(right)), len(right))]
    left_words = []
    for word in reversed(_WORD.findall(left)):
        if word[0].isupper() and word.lower() not in STOPWORDS or len(left_words) == _LEFT:
            break
        left_words.append(word.lower())
    preposition = None
    for word in left_words:
        if word in STOPWORDS and word not in _DETERMINERS:
            preposition = word if word in _PREPOSITIONS else None
            break
    before = frozenset(w for word in left_words for w in content_words(word))
    after = next((w for word in _WORD.findall(right) if not word[0].isupper() for w in content_words(word)), None)
    opens = all(w.lower() in _DETERMINERS for w in _WORD.findall(left))
    follows = re.match(r"\s+([a-z][\w'’-]*)", right)
    return _Slot(preposition, before, after, opens, follows is not None and follows.group(1) not in STOPWORDS)


def _same_slot(claim: _Slot, evidence: _Slot) -> bool:
    if claim.preposition != evidence.preposition:
        return False
    if claim.before & evidence.before:
        return True
    return claim.opens and evidence.opens and claim.after is not None and claim.after == evidence.after
