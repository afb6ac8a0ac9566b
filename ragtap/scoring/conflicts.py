"""Contradictions: a claim whose aligned evidence (alignment.py) says otherwise.

Word overlap sees content a claim *adds*, never content it *contradicts*: "You can mix this cleaner with bleach"
shares every content word with "Never mix this cleaner with bleach".  So the claim is compared with the evidence it
rests on, mismatch by mismatch:

- **numbers** (quantities.py): a quantity of the claim that the evidence states otherwise, counting the same thing
  ("3 years" where the aligned sentence says "2 years"; "10 miles" for "10 km"; a year moved to another event).
  Rounding, hedges ("about") and unit conversions agree;
- **names** (names.py): a name the documents lack, where the aligned evidence names someone or something the claim does not
  ("Tesla designed the motor" where the sentence says Bláthy did); or a name of the documents swapped in as the
  subject of a sentence the claim otherwise repeats, or into the slot where the sentence names another ("created by
  Omar Haddad" where the sentence says Kira Tanaka, and Omar Haddad keeps the documentation);
- **polarity** (polarity.py): a negation on one side only, a word whose opposite is on the other side (at least /
  at most, first / second, always / never, read-only / write-only...), or an order relation with its two events
  swapped ("update the firmware before backing up" where the manual says to back up before updating);
- **only**: "only X" where the evidence names X with others ("owners and admins"); or the evidence's "only X" with
  "only" dropped and an alternative added ("at the Harlow Road centre or at any bottle bank");
- **substitutions** (substitution.py): the evidence sentence repeated but for one word the documents use for another
  thing ("3 egg whites" where the sentence whisks 3 egg yolks and the next beats the whites; "a late opening on
  Tuesdays" where it is on Thursdays; "led by Dr. Raman" where Dr. Raman teaches and Mr. Okafor leads);
- **exceptions** (exceptions.py): "including X" where the evidence excepts or denies X ("all passes except the
  season pass"), "except X" where it includes X; and a thing the evidence says there is none of ("did not receive
  any government funding"), affirmed by a claim that takes its other words from elsewhere (no coverage needed).

Every check needs a confident alignment (most of the claim's weighted content in the window), so that a claim that
merely touches a sentence is never said to contradict it; a claim the evidence does not state at all is left to the
"not found" rules (claims.py).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ragtap.scoring.alignment import EvidenceIndex, Window
from ragtap.scoring.anchors import values_in_each_others_places
from ragtap.scoring.bounds import bound_conflicts
from ragtap.scoring.derived import derived
from ragtap.scoring.directions import change_against_its_word, offset_turned
from ragtap.scoring.lexical import (
    STOPWORDS,
    DocumentVocabulary,
    content_words,
    undotted_titles,
)
from ragtap.scoring.exceptions import any_time_against_a_condition, denied_things, exception_conflicts, negates_the_exception
from ragtap.scoring.names import name_conflicts
from ragtap.scoring.polarity import polarity_conflicts
from ragtap.scoring.possessors import owner_swapped
from ragtap.scoring.quantifiers import quantifier_conflicts
from ragtap.scoring.quantities import Quantity, agree, changes, contradicting, converted_within, quantities, stated_in
from ragtap.scoring.restrictions import dropped_restrictions
from ragtap.scoring.sentences import STOP_BREAK
from ragtap.scoring.substitution import substitution_conflicts
from ragtap.scoring.words import MONTHS, stem

MIN_COVERAGE = 0.5  # share of the claim's weighted content words the window must hold for any comparison

TIE = 0.1  # windows this close to the best one are as likely the claim's evidence: any of them may agree


def find_conflicts(claim: str, windows: Sequence[Window], vocabulary: DocumentVocabulary,
                   index: EvidenceIndex | None = None) -> tuple[str, ...]:
    """What the claim's aligned evidence says otherwise; empty when it says nothing against the claim.  When several
    windows align about equally well (a manual states both cases: "ready, proceed" and "not ready, do not
    proceed"), the claim gets the benefit of the doubt: it is contradicted only if every one of them disagrees.
    `index`: all the documents' sentences, where a name of the claim is looked up (names.py)."""
    if not windows:
        return ()
    found = _mismatches(claim, windows, vocabulary, index) if _comparable(windows[0]) \
        else tuple(values_in_each_others_places(claim, windows[0].text))  # (run with the window checks otherwise)
    # The numbers tie the claim to its evidence sentence where its words barely do ("turnout" alone, "check in from
    # 11:00; check out by 14:00"): these run whatever the window's coverage.
    return found or denied_things(claim, windows) or change_against_its_word(claim, windows[0]) \
        or tuple(any_time_against_a_condition(claim, windows[0]))


def _comparable(window: Window) -> bool:
    """The window holds enough of the claim for its words to be compared with it."""
    return window.coverage >= MIN_COVERAGE and window.covered >= 2


def _mismatches(claim: str, windows: Sequence[Window], vocabulary: DocumentVocabulary,
                index: EvidenceIndex | None) -> tuple[str, ...]:
    candidates = [w for w in windows if w.coverage >= max(MIN_COVERAGE, windows[0].coverage - TIE)]
    found: tuple[str, ...] = ()
    for rank, window in enumerate(candidates):
        conflicts = _window_conflicts(claim, window, vocabulary, index)
        if not conflicts:
            return ()
        if rank == 0:
            found = conflicts
    return found


def _window_conflicts(claim: str, window: Window, vocabulary: DocumentVocabulary, index: EvidenceIndex | None) -> tuple[str, ...]:
    """Every check of the claim against one window, each saying why the window says otherwise (empty: it does not)."""
    return (
        # numbers: stated otherwise, in another number's place, bounded otherwise, an offset turned
        *_number_conflicts(claim, window),
        *values_in_each_others_places(claim, window.text),
        *bound_conflicts(claim, window),
        *offset_turned(claim, window),
        # names: another in the same slot (names.py), a thing given to another owner, two words trading places
        *name_conflicts(claim, window, vocabulary, index),
        *owner_swapped(claim, window.text, _texts(index, window)),
        *_swapped_words(claim, window),
        # a word or a short phrase replaced by one the documents use for another thing (substitution.py)
        *substitution_conflicts(claim, window, index),
        # polarity: negation, opposites, order (polarity.py, order.py)
        *_polarity_conflicts(claim, window, index),
        # groups and conditions: only / all / every, exceptions, restrictions dropped
        *_exclusive_conflicts(claim, window),
        *_universal_conflicts(claim, window),
        *quantifier_conflicts(claim, window),
        *exception_conflicts(claim, window),
        *dropped_restrictions(claim, window, index),
    )


def _texts(index: EvidenceIndex | None, window: Window) -> list[str]:
    """Every evidence sentence (the window alone when there is no index)."""
    return [window.text] if index is None else [s.text for s in index.sentences]


def _polarity_conflicts(claim: str, window: Window, index: EvidenceIndex | None) -> list[str]:
    """polarity.py's, but a negation the evidence words as an exception ("not covered" / "except ...") agrees."""
    found = polarity_conflicts(claim, window, lossy=index is not None and window.document in index.lossy)
    if "negation" in found and negates_the_exception(claim, window):
        return [c for c in found if c != "negation"]
    return found


# A full stop ends a part only before a capital or a digit: "from 10 a.m. to 6 p.m. on Thursdays" is one part.
# A comma or a stop glued to a capital ("£2,980,815,The Lib Dems") or a dash between spaces ends a part too.
_SEGMENT = re.compile(r"[;,:]\s+(?:(?:and|or|but)\s+)?|(?<=[.!?])\s+(?-i:(?![a-z]))|\s+(?:and|or|but|while|whereas|whichever)\s+"
                      r"|(?-i:[,;:.](?=[A-Z][a-z]))|\s[-–—]\s", re.IGNORECASE)
_LOCAL = 40  # characters each side of a number that say what it is about ("the pension plan after [12 months]")


def _context_of(claim: str, q: Quantity) -> set[str]:
    """The words that say what the claim's quantity counts: those of its own part of the claim (a clause, an item)
    within `_LOCAL` characters of it, or of the whole stretch around it when its part has no other word.  A relative
    clause's part takes in the part before it, where what it is about stands ("half an hour after the other lifts,
    which start at 8:30").  Never the quantity's own words: "two" must not tie the claim's "two bags" (about economy
    class) to another sentence's "two bags" (about business class)."""
    own = set(content_words(q.text))
    start, end = _part_of(claim, q)
    words = set(content_words(_around(claim[start:end], q.start - start, q.end - start))) - own
    return words or set(content_words(_around(claim, q.start, q.end))) - own


def _part_of(claim: str, q: Quantity) -> tuple[int, int]:
    """Where the part of the claim (a clause, an item) holding `q` starts and ends; a relative clause's part starts
    with the part before it ("the reading room, which opens at 10:00")."""
    breaks = [m for m in _SEGMENT.finditer(claim, 0, q.start)]
    start = breaks[-1].end() if breaks else 0
    if breaks and _RELATIVE.match(claim, start):
        start = breaks[-2].end() if len(breaks) > 1 else 0
    return start, next((m.start() for m in _SEGMENT.finditer(claim, q.end)), len(claim))


_RELATIVE = re.compile(r"(?:which|who|whom|whose|where)\b", re.IGNORECASE)


def _around(text: str, start: int, end: int) -> str:
    """`_LOCAL` characters each side of text[start:end], widened to whole words."""
    left, right = max(0, start - _LOCAL), min(len(text), end + _LOCAL)
    while left > 0 and text[left - 1].isalnum():
        left -= 1
    while right < len(text) and text[right].isalnum():
        right += 1
    return text[left:right]


_ONLY = re.compile(r"\bonly\s+(?:the\s+|a\s+|an\s+)?([^\W\d_][\w-]*)", re.IGNORECASE)
_COORDINATION = re.compile(r"([^\W\d_][\w-]*)((?:\s*,\s*[^\W\d_][\w-]*)*\s*,?\s+(?:and|or)\s+(?:the\s+)?[^\W\d_][\w-]*)", re.IGNORECASE)


def _swapped_words(claim: str, window: Window) -> list[str]:
    """Two words of one evidence sentence trading places: "the light blinks orange during the reset and turns solid
    green" told as "blinks green ... turns solid orange"; "Ajax beat PSV" told as "PSV beat Ajax"; "the landlord pays
    for water, the tenant for electricity" with the two parties swapped.  A word's place is the content words just
    before and after it; the claim puts each word in the other's place.  A name of several words is one word here
    ("Councillor Raj Mehta proposed ..., Councillor Dana Whitlock seconded" told the other way round).  Words written
    twice are not compared, and words of one list ("flour and sugar" / "sugar and flour") are not swapped by a
    reordering."""
    claim, shown = _one_word_names(_WON_AGAINST.sub(_as_beat, claim))
    claim_words = content_words(claim)
    if len(claim_words) < 3:
        return []
    claim_places = _places(claim_words)
    for sentence in STOP_BREAK.split(window.text):
        sentence = _one_word_names(_WON_AGAINST.sub(_as_beat, sentence))[0]
        words = content_words(sentence)
        places = _places(words)
        shared = sorted(w for w in places if w in claim_places and places[w] != (None, None) and claim_places[w] != (None, None))
        for i, a in enumerate(shared):
            for b in shared[i + 1 :]:
                if places[a] == places[b] or not _takes(claim_places[a], places[b]) or not _takes(claim_places[b], places[a]):
                    continue
                if abs(words.index(a) - words.index(b)) > 1 and not _listed(sentence, a, b) \
                        and not _compounded(claim, sentence, a, b) and not _role_of(claim, sentence, a, b) \
                        and not _in_the_passive(claim, sentence, a, b):
                    return [f"swapped: {shown.get(a, a)} and {shown.get(b, b)}"]
    return []


_NAME_RUN = re.compile(r"\b[A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*)+")


def _takes(claim_place: tuple[str | None, str | None], place: tuple[str | None, str | None]) -> bool:
    """A claim word's place is another word's place in the evidence: the same neighbours, where the claim's sentence
    ends or starts at the word the evidence may go on ("... beat Dunmore Athletic." / "beat Carrow Town 3-1 on
    Saturday")."""
    return claim_place == place or (any(claim_place) and all(c is None or c == p for c, p in zip(claim_place, place)))


# One wording of a win, so that "Carrow Town won 3-1 against Dunmore" meets "Dunmore beat Carrow Town 3-1" as the two
# teams trading places: "won (3-1) against / over" and "defeated" are "beat".
_WON_AGAINST = re.compile(r"\b(?:won|wins|win)\b(?P<score>\s+\d+\s*[-–]\s*\d+)?\s+(?:against|over)\b|\bdefeat(?:ed|s)?\b", re.IGNORECASE)


def _as_beat(match: re.Match[str]) -> str:
    return f"beat{match.group('score') or ''}"


def _one_word_names(text: str) -> tuple[str, dict[str, str]]:
    """`text` with each name of several capitalised words as one word ("Councillor Raj Mehta" ->
    "CouncillorRajMehta"), so that two names trading places are seen as two words trading places; and each such
    word (as `content_words` writes it) to the name as written, for the reason shown."""
    shown: dict[str, str] = {}

    def joined(match: re.Match[str]) -> str:
        word = "".join(match.group(0).split())
        if written := content_words(word):
            shown[written[0]] = match.group(0).lower()
        return word

    return _NAME_RUN.sub(joined, undotted_titles(text)), shown


def _places(words: list[str]) -> dict[str, tuple[str | None, str | None]]:
    """Each word written once, with the words just before and after it (None at either end): its place."""
    once = {w for w in words if words.count(w) == 1}
    return {w: (words[i - 1] if i else None, words[i + 1] if i + 1 < len(words) else None) for i, w in enumerate(words) if w in once}


_LIST_GAP = re.compile(r",|&|\b(?:and|or)\b", re.IGNORECASE)


def _compounded(claim: str, sentence: str, a: str, b: str) -> bool:
    """One of the words is part of a hyphenated compound on either side: "English-writing authors" says what "authors
    writing in English" says, with the words in another order."""
    for text in (claim, sentence):
        for compound in re.findall(r"[^\W_]+(?:-[^\W_]+)+", text):
            if {a, b} & set(content_words(compound.replace("-", " "))):
                return True
    return False


def _between(text: str, a: str, b: str) -> str | None:
    """What `text` writes between the words `a` and `b` (as `content_words` writes them), in either order."""
    spans = {}
    for match in re.finditer(r"[^\W_]+(?:['’][^\W_]+)?", text):
        word = content_words(match.group(0))
        if word and word[0] in (a, b) and word[0] not in spans:
            spans[word[0]] = match.span()
    if len(spans) < 2:
        return None
    first, second = sorted(spans.values())
    return text[first[1] : second[0]]


_ROLE_OF = re.compile(r"\s*,?\s*(?:(?:the|a|an)\s+)?((?:[\w-]+\s+){1,3})of\s+(?:the\s+)?", re.IGNORECASE)


def _role_of(claim: str, sentence: str, a: str, b: str) -> bool:
    """One side names the two as "X, chief executive of Y", the other as "Y chief executive X": one noun phrase
    written in two orders, not two names trading places ("Mark Dunn, chief executive of Kell Foods, thanked the
    crews" / "Kell Foods chief executive Mark Dunn thanked the crews")."""
    gaps = [_between(claim, a, b), _between(sentence, a, b)]
    if None in gaps:
        return False
    for one, other in (gaps, gaps[::-1]):
        role = _ROLE_OF.fullmatch(one or "")
        if role and set(content_words(role.group(1))) == set(content_words(other or "")) and "," not in (other or ""):
            return True
    return False


_PASSIVE_BY = re.compile(r"\b(?:is|are|was|were|be|been|being|get|gets|got)\s+(?:\w+ly\s+)?\w+(?:ed|en|wn|t)\s+by\b", re.IGNORECASE)


def _in_the_passive(claim: str, sentence: str, a: str, b: str) -> bool:
    """One side says it in the passive, the other not: "The lighthouse was damaged by a storm" / "After storm damage,
    the lighthouse ..." (and "B was sued by A" / "A sued B") put the two in the other order without trading their
    roles.  Both in the passive, or neither, and the other order is a swap ("A sued B" / "B sued A")."""
    gaps = [_between(claim, a, b), _between(sentence, a, b)]
    if None in gaps:
        return False
    return sum(bool(_PASSIVE_BY.search(gap or "")) for gap in gaps) == 1


def _listed(sentence: str, a: str, b: str) -> bool:
    """`a` and `b` are items of one list in `sentence`: what stands between them is a comma, "and"/"or", and at
    most other short items of the list ("salt, pepper and sugar"; not "admins can delete projects and members")."""
    between = _between(sentence, a, b)
    if between is None:
        return False
    items = _LIST_GAP.split(between)
    return len(items) > 1 and all(len(item.split()) <= 2 for item in items)  # ", pepper and": items of one list


def _exclusive_conflicts(claim: str, window: Window) -> list[str]:
    """"Only X" where the evidence names X with others ("owners and admins"): the claim excludes what it keeps."""
    out = []
    claim_words = set(content_words(claim))
    for match in _ONLY.finditer(claim):
        kept = stem(match.group(1).lower())
        for group in _COORDINATION.finditer(window.text):
            members = [stem(w.lower()) for w in re.findall(r"[^\W\d_][\w-]*", group.group(0)) if w.lower() not in ("and", "or", "the")]
            others = [m for m in members if m != kept and m not in claim_words and m not in STOPWORDS]
            if kept in members and others:
                out.append(f"only: {kept} vs {kept} and {others[0]}")
                return out
    return _widened(claim, window)


# "only at the Harlow Road centre", "only by a certified installer": what the evidence restricts something to
_ONLY_TO = re.compile(r"\bonly\s+(?:(?:at|in|to|for|on|by|from|with|through|via)\s+)?(?:the\s+|a\s+|an\s+)?([^\W\d_][\w-]*)", re.IGNORECASE)
# an alternative the claim adds: "the Harlow Road centre [or to any of the 14 bottle] banks"
_ALTERNATIVE = re.compile(r"\s(?:or|as\s+well\s+as)\s+(?:(?:at|in|into|to|for|on|onto|by|from|with|through|via)\s+)?(?:any\s+of\s+)?"
                          r"(?:the\s+|a\s+|an\s+)?(?:\d+\s+)?([^\W\d_][\w-]*)", re.IGNORECASE)
_RESTRICTED = re.compile(r"\b(?:only|just|exclusively|solely)\b", re.IGNORECASE)
_ALTERNATIVE_REACH = 60  # characters after the kept word within which the claim adds its alternative


def _widened(claim: str, window: Window) -> list[str]:
    """The converse of "only X": the evidence restricts something to X ("accepted only at the Harlow Road Recycling
    Centre") and the claim, without "only", offers X or something the sentence does not name ("at the Harlow Road
    Recycling Centre or at any of the 14 bottle banks")."""
    if _RESTRICTED.search(claim):
        return []
    lowered = claim.lower()
    for sentence in STOP_BREAK.split(window.text):
        said = {stem(w) for w in content_words(sentence)}
        for match in _ONLY_TO.finditer(sentence):
            kept = match.group(1).lower()
            at = re.search(rf"\b{re.escape(kept)}\b", lowered)
            if at is None or stem(kept) in STOPWORDS:
                continue
            for alternative in _ALTERNATIVE.finditer(lowered, at.end(), at.end() + _ALTERNATIVE_REACH):
                other = alternative.group(1)
                if stem(other) not in said and other not in STOPWORDS:
                    return [f"only: {kept} vs {kept} or {other}"]
    return []


_ALL = re.compile(r"\b(?:all|every|each)\s+(?:of\s+)?(?:the\s+|your\s+|their\s+|its\s+)?([^\W\d_][\w-]*)", re.IGNORECASE)
# Part of a group: "at least 80% of tutorials", "most of the stations"; or a group narrowed by a number: "children under 12".
_PART_OF = re.compile(r"\b(?:\d+(?:\.\d+)?\s*(?:%|percent|per\s+cent)|most|some|many|half|several|a\s+few|a\s+third|a\s+quarter)"
                      r"\s+of\s+(?:the\s+|your\s+|their\s+|its\s+)?([^\W\d_][\w-]*)", re.IGNORECASE)
_NARROWED = re.compile(r"\b([^\W\d_][\w-]*)\s+(?:under|over|below|above|aged|older\s+than|younger\s+than)\s+\d", re.IGNORECASE)


def _universal_conflicts(claim: str, window: Window) -> list[str]:
    """"All X" where the evidence says only part of X is meant: "you must attend all tutorials" against "at least
    80% of tutorials", "free for all children" against "children under 12 enter free".  Not where the evidence too
    says all of them ("free for all visitors on the first Sunday")."""
    if not _ALL.search(claim):
        return []
    said_of_all = {stem(m.group(1).lower()) for m in _ALL.finditer(window.text)}
    parts = {stem(m.group(1).lower()): m.group(0) for pattern in (_PART_OF, _NARROWED) for m in pattern.finditer(window.text)}
    for match in _ALL.finditer(claim):
        group = stem(match.group(1).lower())
        if group in parts and group not in said_of_all and group not in STOPWORDS:
            return [f"quantifier: {match.group(0).lower()} vs {parts[group].lower()}"]
    return []


def _number_conflicts(claim: str, window: Window) -> list[str]:
    """A quantity of the claim that the evidence states otherwise.  Compared within the part of the sentence about
    the same thing: "pension after 3 months, bonus after 12 months" does not state "pension after 12 months"."""
    own = quantities(claim)
    evidence = quantities(window.text)
    if not own or not evidence:
        return []
    parts = [part for part in _SEGMENT.split(window.text) if part.strip()]
    segments = [(set(content_words(part)), quantities(part)) for part in parts]
    dates = {id(found): _dates(part, found) for part, (_, found) in zip(parts, segments)}
    claim_dates = _dates(claim, own)
    out = [*_reversed_change(claim, window)]
    for q in own:
        if converted_within(q, own) or derived(q, (claim, window.text), cued=True):
            continue  # the claim's own conversion, or a figure it works out ("two nights cost 280 dollars")
        said_of_q = _words_for(claim, q, own)
        # Numbers dated with another year than the claim gives its number are about another time: "3,100 children in
        # 2023" is not stated by "up from 3,100 children in 2022"; where all the parts about it are, the numbers of
        # the claim's year are ("$2.4 million on cycle lanes in 2022 and $3.1 million in 2023": "$2.4 million in 2023").
        years = frozenset() if q.is_year or (q.slot or "").startswith("day_of_") else claim_dates.get(own.index(q), frozenset())
        whole = [(words, kept) for words, found in segments if words and words <= said_of_q and (kept := _of_years(found, years, dates))]
        if any(stated_in(q, found, strict=True) for _, found in whole):
            continue  # a part stating it whose every word the claim says of it ("until 9 p.m. on Thursdays")
        about_any = _parts_about(claim, q, segments)
        about = [kept for found in about_any if (kept := _of_years(found, years, dates))]
        if about_any and not about:
            about = [kept for _, found in segments if (kept := _of_years(found, years, dates, exactly=True))]
        # ... or that states it otherwise with a word the parts holding most of the claim lack: "For PETG, heat the
        # nozzle to 210 °C" against "heat the nozzle to 210 °C for PLA or 240 °C for PETG"
        held = set().union(*(words for words, found in segments if any(found is part for part in about)))
        other = next((o for words, found in whole if words - held and (o := contradicting(q, found, strict=True)) is not None), None)
        if other is None and any(stated_in(q, found, strict=True) for found in about):
            continue  # strict: in the part about the same thing, "within 6 days" is not stated by "1 in 6 children"
        other = other or next((o for found in about if (o := contradicting(q, found, strict=True)) is not None), None)
        if other is None and not stated_in(q, evidence):
            other = contradicting(q, evidence)  # "60,000 miles" where the sentence says "60,000 km", in another part
        if other is not None and (not stated_in(other, own) or _swapped(claim, q, about, other, own, segments)):
            out.append(f"number: {q.describe()} vs {other.describe()}")
    return out


def _dates(text: str, found: tuple[Quantity, ...]) -> dict[int, frozenset[float]]:
    """The years that date each quantity of `text` (by its index in `found`, the text's quantities): the year right
    after it ("41 million euros in 2022", "$2.4 million on cycle lanes in 2022"), else the text's years that date no
    other quantity so ("In the 2022 season the club scored 61 goals").  Years and dates themselves are left out."""
    years = {i for i, f in enumerate(found) if _a_year(text, f)}
    attached = {i: i + 1 for i, f in enumerate(found)
                if i not in years and i + 1 in years and _DATED_BY.fullmatch(text, f.end, found[i + 1].start)}
    free = frozenset(found[y].value for y in years if y not in attached.values())
    return {i: frozenset({found[attached[i]].value}) if i in attached else free for i in range(len(found)) if i not in years}


_DATED_BY = re.compile(r"\s*(?:[^\W\d_]+\s+){0,3}?(?:in|during)\s+(?:the\s+)?", re.IGNORECASE)
_YEAR_BEFORE = re.compile(r"\b(?:in|since|by|from|until|during|of|the)\s+$", re.IGNORECASE)


def _a_year(text: str, q: Quantity) -> bool:
    """A year, also where a noun follows it ("the 2022 season", "in 2023 it scored": no year by its slot)."""
    return q.is_year or (q.year_shaped and q.dimension is None and _YEAR_BEFORE.search(text, 0, q.start) is not None)


def _of_years(found: tuple[Quantity, ...], years: frozenset[float], dates: dict[int, dict[int, frozenset[float]]],
              exactly: bool = False) -> tuple[Quantity, ...]:
    """The quantities of an evidence part not dated with another year than `years` (those the claim dates its
    number with; all of them when it dates it with none).  `exactly`: only those dated with one of `years`."""
    if not years:
        return () if exactly else found
    of = dates[id(found)]
    if exactly:
        return tuple(f for i, f in enumerate(found) if years & of.get(i, frozenset()))
    if all(not dated or years & dated for dated in of.values()):
        return found  # the part itself, when it keeps all (`_swapped` compares parts)
    return tuple(f for i, f in enumerate(found) if i in of and (not of[i] or years & of[i]))  # (not its years)


def _words_for(claim: str, q: Quantity, own: tuple[Quantity, ...]) -> set[str]:
    """The claim's words that may qualify `q`: those around it, and those of the claim not around another of its
    quantities ("On weekends, breakfast goes on until 11 a.m."; not "business class" in "one bag of up to 32 kg,
    business class passengers two bags of up to 23 kg")."""
    others = set().union(*(_context_of(claim, o) for o in own if o is not q))
    return _context_of(claim, q) | (set(content_words(claim)) - others)


def _parts_about(claim: str, q: Quantity, segments: list[tuple[set[str], tuple[Quantity, ...]]]) -> list[tuple[Quantity, ...]]:
    """The quantities of the evidence's parts that say most of what the claim says around `q` (ties kept).  Where
    tied parts disagree (one states `q`, another states it otherwise), first those whose neighbouring parts hold
    more of the claim's other words ("Labour, which came second, spent £1,027,339" rests on the part after "which
    came second"), then those that add fewest words the claim lacks: "check out by 1 p.m." is about "must check
    out by 11 a.m.", not "late check-out until 1 p.m.": the claim dropped the qualifier of the number it took."""
    local = _context_of(claim, q) - _MONTHS  # "March 15": the month is part of the date compared, not what it dates
    # A part naming no period holds the claim's implicitly: in "a first permit costs £45 a year and a second £120",
    # "£120 a year" is not about the first permit for its "year" (but "£25 per day" is about "£5 per day", not
    # "£25 per week").
    periods = local & _PERIODS
    overlap = [len(local & words) + (len(periods) if not words & _PERIODS else 0) for words, _ in segments]
    best = max(overlap, default=0)
    tied = [i for i, n in enumerate(overlap) if n == best and n > 0]
    if len(tied) > 1 and any(stated_in(q, segments[i][1], strict=True) for i in tied) \
            and any(contradicting(q, segments[i][1], strict=True) is not None for i in tied):
        claim_words, words_for_q = set(content_words(claim)), _words_for(claim, q, quantities(claim))
        for rank in (lambda i: len(words_for_q & set().union(*(words for words, _ in segments[max(0, i - 1) : i + 2]))),
                     lambda i: -len(segments[i][0] - claim_words - _MONTHS)):
            top = max(rank(i) for i in tied)
            tied = [i for i in tied if rank(i) == top]
    return [segments[i][1] for i in tied]


def _reversed_change(claim: str, window: Window) -> list[str]:
    """A change told backwards: "improved from 6.1% to 7.4%" where the evidence says it fell to 6.1% from 7.4%."""
    for old, new in changes(claim):
        for evidence_old, evidence_new in changes(window.text):
            if agree(old, evidence_new) is True and agree(new, evidence_old) is True and agree(old, evidence_old) is not True:
                return [f"number: from {old.describe()} to {new.describe()} vs from {evidence_old.describe()} to {evidence_new.describe()}"]
    return []


def _swapped(claim: str, q: Quantity, about_q: list[tuple[Quantity, ...]], other: Quantity, own: tuple[Quantity, ...],
             segments: list[tuple[set[str], tuple[Quantity, ...]]]) -> bool:
    """The claim states `other` too, but the two quantities trade places: each stands where the evidence has the
    other ("bake for 10 minutes, then cool for 35" / "bake for 35 minutes, then cool for 10").  A claim that merely
    states both (in any order, or as its own conversion) is not a swap: each part must be about one thing only.
    `about_q`: `_parts_about(claim, q, segments)`, as the caller found it."""
    if len(about_q) != 1 or not stated_in(other, about_q[0]):
        return False
    for q2 in own:
        if q2 is q or agree(q2, other) is not True:
            continue
        about_q2 = _parts_about(claim, q2, segments)
        if len(about_q2) == 1 and about_q2[0] is not about_q[0] and stated_in(q, about_q2[0]) and not stated_in(q2, about_q2[0]):
            return True
    return False


# A month is part of the date a number is compared as, not what it dates ("March 15").
_MONTHS = frozenset(stem(m) for m in MONTHS)
_PERIODS = frozenset(content_words("year annual month week day daily hour night"))
