"""In-slot substitutions: a claim that repeats its evidence sentence but for one word the documents use for another thing.

"Whisk 250 g ricotta, 3 egg whites and 180 ml milk" where the sentence whisks 3 egg yolks (and the next one beats the
egg whites); "a late opening until 21:00 on Tuesdays" where it is on Thursdays (Tuesday an ordinary opening day);
"lab sessions are led by Dr. Raman" where "taught by Dr. Raman, with lab sessions led by Mr. Okafor".  Every word of
such a claim stands in the documents, most of them in its sentence's order, so overlap passes it; the claim mixes two
facts.  conflicts.py calls `substitution_conflicts` with each aligned window.

The claim's content words are laid against each sentence's of the window (stems; function words and titles left
out) and a short replaced span (one or two words each side) is looked for: the words just before it match those just
before the evidence's span and the words just after it those after (or both texts start, or end, there).  All the
claim's other words but one are in that sentence, the evidence's words are nowhere in the claim, and the claim's word
does not stand in the sentence in a place at least as like the claim's ("ranked fifth best super middleweight by
BoxRec, ... seventh best middleweight by The Ring").  A faithful paraphrase replaces words too -- a synonym, an
inflection, "vehicle" for "car" -- so the two words must be ones the documents use for *different* things:

- members of one closed class (weekdays, months but May, seasons, meals, times of day, colours, sides, compass
  points, ordinals), the claim's in the documents; here matching words on one side only are slot enough (two at
  least, in one phrase with the evidence's word, and not beside the claim's word too): "take the blue tablet in the
  morning with [dinner]" / "... with breakfast and the white capsule in the evening with dinner".  Not the two ends
  of a range ("from June 26 to November 16"), nor two the sentence lists for one predicate ("seventh by The Ring and
  eighth by the TBRB");
- two names of the evidence sentence after the same preposition ("taught by Dr. Raman" / "led by Mr. Okafor"): a role
  swapped inside one sentence (names from elsewhere are names.py's); not parts of one longer name ("Gov. Newsom" /
  "Governor Gavin Newsom"), nor two written together ("Mukalla, Yemen");
- two common nouns the window writes in one frame, the same word right before both or right after both, an article
  aside ("egg yolks" / "egg whites", "the search endpoint" / "the upload endpoint", "connect the modem" / "connect
  the router"); never two written side by side ("the January counterterrorism operation": one thing).

And no faithful reading explains it: the evidence's word in brackets (an aside left out), another sentence stating the
claim's word between the claim's own neighbours, the claim about its word's own part of the sentence told in another
order ("the oncology ward is in the north wing" / "the north wing houses the oncology ward, and the south wing ..."),
an item of a list or an ellipsis whose own part the claim keeps ("the coolant level and the brake fluid level when the
engine is cold").  Last, two things of one sentence re-paired (`_repaired`): "the Navigation Room displays the
chronometer, while the Dockside Gallery houses the ship models" told as "the chronometer is displayed in the Dockside
Gallery".
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ragtap.scoring.alignment import EvidenceIndex, Window
from ragtap.scoring.lexical import STOPWORDS, folded, names, undotted_titles
from ragtap.scoring.sentences import STOP_BREAK
from ragtap.scoring.words import MONTHS, WEEKDAYS, stem

_TOKEN = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)  # lexical's word, so stems agree with content_words
_TITLES = frozenset("dr mr mrs ms miss prof professor sir dame".split())  # "Dr. Raman" and "Raman" are one name
_MAX_SPAN = 2  # words replaced, on either side
_ONE_SIDED = 2  # matching words before (or after) the span when only that side matches: closed classes only


def _closed_classes() -> tuple[dict[str, int], frozenset[str]]:
    """Each member's stem to its class's number; and the members as written, plural too (the stem of "evening" is
    "even", of "spring" "spr": the word as written must be a member)."""
    groups = (
        WEEKDAYS,
        [m for m in MONTHS if m != "may"],  # "may" is a modal verb as often
        "spring summer autumn winter".split(),  # not "fall": the verb (and "fell")
        "breakfast lunch dinner supper brunch".split(),
        "morning afternoon evening night midnight noon".split(),
        "red green blue yellow orange white black amber purple grey gray pink brown silver".split(),
        "left right".split(),
        "front back rear".split(),
        "upper lower".split(),
        "north south east west northern southern eastern western".split(),
        "first second third fourth fifth sixth seventh eighth ninth tenth last".split(),
        "top bottom".split(),
        "inner outer".split(),
    )
    table: dict[str, int] = {}
    for number, group in enumerate(groups):
        for word in group:
            table.setdefault(stem(word), number)
    table.pop(stem("gray"), None)  # grey / gray: one colour spelt two ways
    written = frozenset(f"{word}{end}" for group in groups for word in group for end in ("", "s", "es"))
    return table, written


_CLASS_OF, _MEMBERS = _closed_classes()
_SAME_COLOUR = {stem("gray"): stem("grey")}


@dataclass(frozen=True, slots=True)
class _Word:
    stem: str
    shown: str  # as written, lower-cased


@functools.lru_cache(maxsize=16384)
def _words(text: str) -> tuple[_Word, ...]:
    """The content words of `text` in order (content_words' rule: no stopword, digit or one letter), titles left out."""
    out = []
    for token in _TOKEN.findall(folded(undotted_titles(text)).lower()):
        token = token.replace("’", "'")
        if len(token) > 1 and token not in STOPWORDS and not token.isdigit() and token not in _TITLES:
            out.append(_Word(_SAME_COLOUR.get(stem(token), stem(token)), token))
    return tuple(out)


def substitution_conflicts(claim: str, window: Window, index: EvidenceIndex | None = None) -> list[str]:
    """'substituted: C vs E' when the claim puts C, a word the documents use for another thing, in the slot where its
    evidence sentence has E."""
    claim_words = _words(claim)
    if len(claim_words) < 3:
        return []
    claim_stems = [w.stem for w in claim_words]
    claim_set = set(claim_stems)
    documents = [s.text for s in index.sentences] if index is not None else _sentences(window.text)
    for sentence in _sentences(window.text):
        words = _words(sentence)
        stems = [w.stem for w in words]
        for slot in _replaced_spans(claim_stems, stems):
            mine = claim_stems[slot.i : slot.i + slot.length]
            theirs = stems[slot.j : slot.j + slot.evidence_length]
            if set(theirs) & claim_set or set(mine) & set(theirs):
                continue  # the claim names the evidence's word too (or the two spans share one)
            rest = claim_stems[: slot.i] + claim_stems[slot.i + slot.length :]
            if sum(w not in stems for w in rest) > 1:
                continue  # the claim does not follow this sentence closely
            if _own_place(claim_stems, slot, stems) >= slot.strength:
                continue  # the claim's word stands in the sentence in a place at least as like the claim's: "ranked
                # fifth best super middleweight" / "ranked fifth best super middleweight ..., seventh best middleweight"
            kind = _different_things(mine, theirs, claim, sentence, stems, documents, _frames(claim_stems, slot, stems),
                                     _sentences(window.text))
            if kind is None or (slot.one_sided and kind != _CLOSED) \
                    or _told_faithfully(claim_stems, slot, sentence, words, documents, _numbers(claim)):
                continue
            shown_mine = " ".join(w.shown for w in claim_words[slot.i : slot.i + slot.length])
            shown_theirs = " ".join(w.shown for w in words[slot.j : slot.j + slot.evidence_length])
            return [f"substituted: {shown_mine} vs {shown_theirs}"]
        if repaired := _repaired(claim, sentence):
            return [repaired]
    return []


def _told_faithfully(claim: Sequence[str], slot: _Slot, sentence: str, words: Sequence[_Word], documents: Sequence[str],
                     claim_numbers: frozenset[str]) -> bool:
    """What a faithful claim does that also looks like a replaced span (`claim_numbers`: the numbers the claim writes,
    which tell one part of a sentence from another as its words do: "his first title in 2015 and his second in 2019")."""
    stems = [w.stem for w in words]
    mine = list(claim[slot.i : slot.i + slot.length])
    theirs = stems[slot.j : slot.j + slot.evidence_length]
    if _in_brackets(sentence, theirs):
        return True  # "the drain valve (on the bottom of the filter housing)": the claim left an aside out
    if _stated_elsewhere(claim, slot, documents):
        return True  # another sentence writes the claim's word between the claim's own neighbours
    if _own_part_closer(sentence, claim, mine, theirs):
        return True  # "the oncology ward is in the north wing" / "the north wing houses the oncology ward, and the south
        # wing houses the maternity ward": the claim is about its word's own part of the sentence, told in other order
    if _resolved_ellipsis(sentence, [*claim, *claim_numbers], mine, theirs):
        return True  # "check the coolant level and the brake fluid level when ...": the claim took one item of a list
    # A slot held by one side only: the claim is that side and its word, and what follows its word where the sentence
    # writes it, nothing else ("In the south district, bins are emptied on Wednesdays" told around "bins are emptied
    # on Mondays in the north district and on Wednesdays in the south district"); the side is the evidence word's own
    # phrase ("served from June and the winter menu from November"), and does not stand beside the claim's word too
    # ("the winter menu").
    return slot.one_sided and (not _spliced(claim, slot, stems) or not _one_phrase(sentence, stems, slot)
                               or _flanked_too(mine, slot, stems))


# Where a sentence joins two clauses that each say something of their own subject: ", while", "; ", ", and" ...
_CLAUSES = re.compile(r",?\s+(?:while|whereas)\s+|;\s+|,\s+(?:and|but|with)\s+", re.IGNORECASE)
_PAIRED = 2  # content words of the other clause's own (not its name) the claim must repeat


def _repaired(claim: str, sentence: str) -> str | None:
    """Two things of one sentence re-paired: "the Navigation Room displays the chronometer, while the Dockside Gallery
    houses the ship models" told as "the chronometer is displayed in the Dockside Gallery".  The sentence joins two
    clauses, each naming one thing (its name's words its own); the claim, one clause, names the second clause's thing
    and none of the first's, and says of it what only the first clause says (two of its words at least) and nothing
    the second says of it."""
    if _CLAUSES.search(claim):
        return None  # a claim of several clauses is judged as the other checks judge it
    clauses = _CLAUSES.split(undotted_titles(sentence))
    if len(clauses) != 2:
        return None
    sentence_names = names(undotted_titles(sentence))
    claim_stems = {w.stem for w in _words(claim)}
    claim_names = names(claim)
    named = [{w.shown for w in _words(c) if w.shown in sentence_names} for c in clauses]
    said = [{w.stem for w in _words(c) if w.shown not in sentence_names} for c in clauses]
    if not all(named) or named[0] & named[1] or claim_stems - said[0] - said[1] - {stem(w) for w in named[0] | named[1]}:
        return None  # each clause names one thing of its own, and the claim says nothing else
    for first, second in ((0, 1), (1, 0)):
        if claim_names & named[first] or not named[second] <= claim_names:
            continue
        own = (said[first] - said[second]) & claim_stems
        if len(own) >= _PAIRED and not (said[second] - said[first]) & claim_stems:
            shown_first = " ".join(sorted(named[first]))
            return f"substituted: {' '.join(sorted(named[second]))} vs {shown_first}"
    return None


@dataclass(frozen=True, slots=True)
class _Slot:
    """A span of the claim standing where the evidence sentence has another."""

    i: int  # where it starts among the claim's words
    j: int  # where the evidence's span starts among the sentence's
    length: int
    evidence_length: int
    strength: int  # matching words around the two (both texts starting or ending there counts as one)
    one_sided: bool  # only the words on one side match
    before: int  # matching words just before the two


def _replaced_spans(claim: Sequence[str], sentence: Sequence[str]) -> list[_Slot]:
    """Each short span of the claim that stands where the sentence has other words: the words just before both spans
    match (or both start their text), and the words just after both match (or both end their text); or, one-sided,
    `_ONE_SIDED` matching words on one side and spans of one length.  Two-sided ones first.  Only places next to a
    word the two share are tried (a claim word is in a sentence a few times at most)."""
    places: dict[str, list[int]] = {}
    for j, word in enumerate(sentence):
        places.setdefault(word, []).append(j)
    tried: set[tuple[int, int, int, int]] = set()
    for a, word in enumerate(claim):
        for b in places.get(word, ()):
            for length in range(1, _MAX_SPAN + 1):
                for evidence_length in range(1, _MAX_SPAN + 1):
                    tried.add((a + 1, length, b + 1, evidence_length))  # the shared word just before the spans
                    tried.add((a - length, length, b - evidence_length, evidence_length))  # just after them
    out = []
    for i, length, j, evidence_length in sorted(tried):
        if i < 0 or j < 0 or i + length > len(claim) or j + evidence_length > len(sentence):
            continue
        before, after = _matching_before(claim, i, sentence, j), _matching_after(claim, i + length, sentence, j + evidence_length)
        both_start = i == 0 and j == 0
        both_end = i + length == len(claim) and j + evidence_length == len(sentence)
        strength = before + after + both_start + both_end
        if (before > 0 or both_start) and (after > 0 or both_end):
            out.append(_Slot(i, j, length, evidence_length, strength, False, before))
        elif evidence_length == length and max(before, after) >= _ONE_SIDED:
            out.append(_Slot(i, j, length, evidence_length, strength, True, before))
    return sorted(out, key=lambda slot: slot.one_sided)


def _frames(claim: Sequence[str], slot: _Slot, sentence: Sequence[str]) -> list[tuple[str, bool]]:
    """The words the two spans share just before them (False) and just after them (True): "egg" of "egg yolks"."""
    out = []
    if slot.i > 0 and slot.j > 0 and claim[slot.i - 1] == sentence[slot.j - 1]:
        out.append((claim[slot.i - 1], False))
    end, evidence_end = slot.i + slot.length, slot.j + slot.evidence_length
    if end < len(claim) and evidence_end < len(sentence) and claim[end] == sentence[evidence_end]:
        out.append((claim[end], True))
    return out


# What ends a part of a sentence (a phrase, a list's item, a clause); not ":" nor ".": "21:00", "2.4".
_BREAKS = frozenset({",", ";", "and", "or", "nor", "but", "while", "wherea", "then"})
_PHRASE_REACH = 6  # words between a one-sided flank and the evidence's span


def _spliced(claim: Sequence[str], slot: _Slot, stems: Sequence[str]) -> bool:
    """The claim is all of the one side that holds the slot, then its word, then (maybe) what follows that word where
    the sentence writes it: "take the blue tablet in the [evening with dinner]" / "take the blue tablet in the
    morning with breakfast and the white capsule in the evening with dinner" (or the same the other way round)."""
    end = slot.i + slot.length
    if slot.before:
        if slot.before != slot.i:
            return False
        return end == len(claim) or any(_matching_after(claim, end, stems, k + slot.length) == len(claim) - end
                                        for k in _places_of(stems, list(claim[slot.i : end])))
    after = slot.strength
    if end + after != len(claim):
        return False
    return slot.i == 0 or any(_matching_before(claim, slot.i, stems, k) == slot.i
                              for k in _places_of(stems, list(claim[slot.i : end])))


def _flanked_too(span: list[str], slot: _Slot, stems: Sequence[str]) -> bool:
    """The sentence writes the claim's span next to the word that holds a one-sided slot, on the same side."""
    n = len(span)
    for k in range(len(stems) - n + 1):
        if list(stems[k : k + n]) != span:
            continue
        if slot.before and k > 0 and stems[k - 1] == stems[slot.j - 1]:
            return True
        end = slot.j + slot.evidence_length
        if not slot.before and k + n < len(stems) and end < len(stems) and stems[k + n] == stems[end]:
            return True
    return False


def _one_phrase(sentence: str, stems: Sequence[str], slot: _Slot) -> bool:
    """The evidence's span and the matching words on the one side that holds the slot are one phrase: no comma,
    "and", "or" ... between them ("with breakfast" after "in the morning")."""
    tokens = _all_stems(sentence)
    before = slot.before > 0
    span_word = stems[slot.j] if before else stems[slot.j + slot.evidence_length - 1]
    end = slot.j + slot.evidence_length
    if not before and end == len(stems):
        return False
    flank = stems[slot.j - 1] if before else stems[end]
    for k, token in enumerate(tokens):
        if token != span_word:
            continue
        reach = tokens[max(0, k - _PHRASE_REACH) : k][::-1] if before else tokens[k + 1 : k + 1 + _PHRASE_REACH]
        for between in reach:
            if between == flank:
                return True
            if between in _BREAKS:
                break
    return False


def _in_brackets(sentence: str, span: list[str]) -> bool:
    """`span` is written inside brackets in the sentence."""
    depth, inside = 0, []
    for token in _all_stems(sentence):
        depth += token in "([" and len(token) == 1
        depth -= token in ")]" and len(token) == 1 and depth > 0
        inside.append((token, depth > 0))
    n = len(span)
    return any([t for t, _ in inside[k : k + n]] == span and all(b for _, b in inside[k : k + n])
               for k in range(len(inside) - n + 1))


def _stated_elsewhere(claim: Sequence[str], slot: _Slot, documents: Sequence[str]) -> bool:
    """A sentence of the documents writes the claim's span with the claim's own word before it and after it (or
    ending where the claim ends): "rotate the switch upward" stated too, in a manual that says both."""
    span = list(claim[slot.i : slot.i + slot.length])
    end = slot.i + slot.length
    for document in documents:
        stems = [w.stem for w in _words(document)]
        for k in range(len(stems) - slot.length + 1):
            if stems[k : k + slot.length] != span:
                continue
            before = k > 0 and stems[k - 1] == claim[slot.i - 1] if slot.i > 0 else k == 0
            after = stems[k + slot.length] == claim[end] if end < len(claim) and k + slot.length < len(stems) else \
                end == len(claim) and k + slot.length == len(stems)
            if before and after:
                return True
    return False


def _own_place(claim: Sequence[str], slot: _Slot, sentence: Sequence[str]) -> int:
    """How well the claim's span fits where the sentence itself writes it (0 where it does not)."""
    span = list(claim[slot.i : slot.i + slot.length])
    best = 0
    for k in range(len(sentence) - slot.length + 1):
        if list(sentence[k : k + slot.length]) != span:
            continue
        end = k + slot.length
        fit = _matching_before(claim, slot.i, sentence, k) + _matching_after(claim, slot.i + slot.length, sentence, end)
        best = max(best, fit + (slot.i == 0 and k == 0) + (slot.i + slot.length == len(claim) and end == len(sentence)))
    return best


def _sentences(text: str) -> list[str]:
    return STOP_BREAK.split(undotted_titles(text))  # "Dr. Raman" ends no sentence


_ELLIPSIS_GAP = 8  # words between the evidence's span and the claim's, joined by "and", "or" or a comma


def _resolved_ellipsis(sentence: str, claim: Sequence[str], mine: list[str], theirs: list[str]) -> bool:
    """The sentence names the claim's word after the evidence's, in another part joined by "and", "or" or a comma, and
    the claim keeps what that part says of its word beside it (a content word of the part the evidence's part lacks),
    or the part says nothing more: "ranked seventh best middleweight by The Ring and eighth by the TBRB" / "ranked
    eighth best middleweight by the TBRB"; "check the coolant level and the brake fluid level when the engine is
    cold" / "check the brake fluid level when the engine is cold".  Not "breakfast is served in the Garden Room,
    dinner in the Terrace Restaurant" / "dinner is served in the Garden Room": the claim gives its word what the
    sentence says of the other; nor "the blue tablet in the morning ... and the white capsule in the evening with
    dinner" / "the blue tablet in the evening with dinner": the claim drops what its word's part is about."""
    tokens = _all_stems(sentence)
    content = {w.stem for w in _words(sentence)} | _numbers(sentence)
    for p in _places_of(tokens, theirs):
        after_theirs = p + len(theirs)
        for q in _places_of(tokens, mine):
            gap = tokens[after_theirs:q]
            if q < after_theirs or len(gap) > _ELLIPSIS_GAP or not set(gap) & _BREAKS:
                continue
            own = (_part(tokens, q, content) - _part(tokens, p, content)) - set(mine)
            leading = _part(tokens, q, content, before=True) - set(mine)
            if (not own or own & set(claim)) and leading <= set(claim):
                return True
    return False


def _own_part_closer(sentence: str, claim: Sequence[str], mine: list[str], theirs: list[str]) -> bool:
    """The part of the sentence (between commas, "and", "or" ...) where it writes the claim's word holds more of the
    claim's other words than the part where it writes the evidence's."""
    tokens = _all_stems(sentence)
    content = {w.stem for w in _words(sentence)}
    others = set(claim) - set(mine) - set(theirs)

    def best(span: list[str]) -> int:
        return max((len(_part(tokens, k, content) & others) for k in _places_of(tokens, span)), default=-1)

    return best(mine) > best(theirs)


def _numbers(text: str) -> frozenset[str]:
    """The digit runs of `text`, as `_all_stems` writes them ("2019"; "21:00" is "21" and "00")."""
    return frozenset(t for t in _all_stems(text) if t.isdigit())


def _places_of(tokens: Sequence[str], span: list[str]) -> list[int]:
    return [k for k in range(len(tokens) - len(span) + 1) if list(tokens[k : k + len(span)]) == span]


def _part(tokens: Sequence[str], at: int, content: set[str], before: bool = False) -> set[str]:
    """The content words of the part of the sentence around tokens[at], between commas, "and", "or" ... (`before`:
    only those before it, what the part says its word is about: "the white capsule in the evening")."""
    start = next((k + 1 for k in range(at - 1, -1, -1) if tokens[k] in _BREAKS), 0)
    end = at if before else next((k for k in range(at, len(tokens)) if tokens[k] in _BREAKS), len(tokens))
    return {t for t in tokens[start:end] if t in content}


def _between(sentence: str, first: str, second: str) -> str | None:
    """The text between the first whole-word `first` and the next `second` after it."""
    lowered = folded(sentence).lower()
    start = re.search(rf"\b{re.escape(first)}\b", lowered)
    if start is None:
        return None
    end = re.search(rf"\b{re.escape(second)}\b", lowered[start.end() :])
    return None if end is None else lowered[start.end() : start.end() + end.start()]


def _matching_before(claim: Sequence[str], i: int, sentence: Sequence[str], j: int) -> int:
    count = 0
    while i - count > 0 and j - count > 0 and claim[i - count - 1] == sentence[j - count - 1]:
        count += 1
    return count


def _matching_after(claim: Sequence[str], i: int, sentence: Sequence[str], j: int) -> int:
    count = 0
    while i + count < len(claim) and j + count < len(sentence) and claim[i + count] == sentence[j + count]:
        count += 1
    return count


_CLOSED = "closed class"


def _different_things(mine: list[str], theirs: list[str], claim: str, sentence: str, stems: Sequence[str],
                      documents: Sequence[str], frames: list[tuple[str, bool]], window_sentences: Sequence[str]) -> str | None:
    """What shows the documents use the two spans for two things (None: nothing does, a paraphrase may)."""
    if len(mine) == len(theirs) == 1 and mine[0] in _CLASS_OF and _CLASS_OF[mine[0]] == _CLASS_OF.get(theirs[0]) \
            and set(_shown(claim, mine)) <= _MEMBERS and set(_shown(sentence, theirs)) <= _MEMBERS:
        if not any(mine[0] in _document_stems(d) for d in documents):
            return None  # a member the documents lack: the "not found" rules judge it (names and frames are theirs)
        # Not one end of a range ("from June 26 to November 16").
        return None if _adjacent(stems, mine, theirs) else _CLOSED
    # Two names of the evidence sentence, the claim's in the other's place: a role swapped inside one sentence ("taught
    # by Dr. Raman, with lab sessions led by Mr. Okafor" / "lab sessions are led by Dr. Raman").  Names from elsewhere
    # are names.py's.  The two must fill one kind of slot there (the same preposition before each: "by"), be no parts
    # of one longer name ("Gov Newsom" / "Governor Gavin Newsom"), nor written together ("Mukalla, Yemen").
    sentence_names = names(sentence)
    mine_shown, theirs_shown = _shown(claim, mine), _shown(sentence, theirs)
    claim_names = names(claim)
    if mine_shown and theirs_shown and all(w in sentence_names and w in claim_names for w in mine_shown) \
            and all(w in sentence_names for w in theirs_shown) and not set(mine + theirs) & _CALENDAR \
            and _preposition_before(sentence, mine_shown[0]) == _preposition_before(sentence, theirs_shown[0]) is not None \
            and not _one_run(claim, sentence, mine_shown, theirs_shown) \
            and not _written_together(sentence, mine_shown, theirs_shown):
        return "name"
    # Common nouns only: a name told otherwise ("Chris" / "Christopher") is one thing, names are judged above.
    common = not set(mine_shown) & claim_names and not set(theirs_shown) & sentence_names
    together = any(_adjacent([t for t in _all_stems(one) if t not in _ARTICLES], mine, theirs) for one in window_sentences)
    if common and not together and not _restated_in_the_sentence(sentence, mine, theirs, claim) \
            and any(_in_frame(mine, frame, window_sentences) and _in_frame(theirs, frame, window_sentences)
                    for frame in frames):  # not "the January counterterrorism operation": one thing
        return "frame"
    return None


_STATED_REACH = 3  # words after the claim's word that, written the same in the sentence, show it restates that part


def _restated_in_the_sentence(sentence: str, mine: list[str], theirs: list[str], claim: str) -> bool:
    """The sentence itself says the claim's word with the words that follow it in the claim: "the Service, which had
    initiated a case for armed rebellion under Article 279 of the Criminal Code closed the case on 27 June" says the
    Service [closed the case on], so "closed the case on armed rebellion" restates it (a WikiEval answer was taken
    for "initiated" replaced).  "sells rye loaves on Saturdays" against "sourdough loaves on Saturdays and rye loaves
    on Sundays" is not stated so: "rye loaves on Sundays"."""
    claim_stems, sentence_stems = _all_stems(claim), _all_stems(sentence)
    for i in range(len(claim_stems) - len(mine) + 1):
        if list(claim_stems[i : i + len(mine)]) != mine:
            continue
        phrase = list(claim_stems[i : i + len(mine) + _STATED_REACH])
        if len(phrase) == len(mine) + _STATED_REACH and any(list(sentence_stems[j : j + len(phrase)]) == phrase
                                                            for j in range(len(sentence_stems) - len(phrase) + 1)):
            return True
    return False


def _in_frame(span: list[str], frame: tuple[str, bool], documents: Sequence[str]) -> bool:
    """Some sentence writes `span` next to the frame word, nothing between them but an article: right after it ("egg
    yolks", "connect the modem"), or right before it when the flag says so ("upload endpoint")."""
    word, after = frame
    n = len(span)
    for document in documents:
        tokens = [t for t in _all_stems(document) if t not in _ARTICLES]
        for k in range(len(tokens) - n + 1):
            beside = (k + n < len(tokens) and tokens[k + n] == word) if after else (k > 0 and tokens[k - 1] == word)
            if beside and tokens[k : k + n] == span:
                return True
    return False


_ARTICLES = frozenset({"the", "a", "an"})


@functools.lru_cache(maxsize=16384)
def _all_stems(text: str) -> tuple[str, ...]:
    """Every word of `text`, function words too, stemmed as `_words` stems them, and its punctuation marks."""
    return tuple(stem(t.replace("’", "'")) for t in _TOKEN_OR_MARK.findall(folded(undotted_titles(text)).lower()))


_TOKEN_OR_MARK = re.compile(_TOKEN.pattern + r"|[^\w\s]", re.UNICODE)  # a comma or a bracket breaks a phrase


_PREPOSITIONS = frozenset(
    "by in at from to for with of on into onto via under over near after before between against through across within "
    "during about without toward towards".split()
)
_DETERMINERS = frozenset({"a", "an", "the", "his", "her", "its", "their", "our", "my", "your", "this", "that"})


def _preposition_before(sentence: str, word: str) -> str | None:
    """The preposition just before `word`'s first place in `sentence`, passing over the capitalised words of its name,
    titles and determiners ("by Dr. Raman", "in the Dockside Gallery"); None when another word comes first."""
    text = undotted_titles(folded(sentence))
    found = re.search(rf"\b{re.escape(word)}\b", text, re.IGNORECASE)
    if found is None:
        return None
    for before in reversed(re.findall(r"[^\W\d_][\w'’-]*|[^\w\s]", text[: found.start()])):
        lowered = before.lower()
        if before[0].isupper() and lowered not in _PREPOSITIONS or lowered in _DETERMINERS or lowered in _TITLES:
            continue
        return lowered if lowered in _PREPOSITIONS else None
    return None


_NAME_RUN = re.compile(r"[A-Z][\w'’-]*(?:\s+(?:of\s+|the\s+|de\s+)?[A-Z][\w'’-]*)*")


def _one_run(claim: str, sentence: str, mine: list[str], theirs: list[str]) -> bool:
    """The claim's name and the evidence's are parts of runs of capitalised words that share a word: "Governor Gavin
    Newsom" / "Gov. Newsom", "Saudi Defense Ministry" / "Saudi Press Agency" (one name told more fully, or two of one
    family whose shared word the claim keeps)."""
    def run_of(text: str, word: str) -> set[str]:
        for match in _NAME_RUN.finditer(undotted_titles(folded(text))):
            words = {w.lower().rstrip("'’s") for w in match.group(0).split()}
            if word in {w.lower() for w in match.group(0).split()}:
                return words - {word} - _TITLES - {"of", "the", "de"}
        return set()

    theirs_run = run_of(sentence, theirs[0])
    return bool(run_of(claim, mine[0]) & theirs_run) or bool(run_of(sentence, mine[0]) & theirs_run)


_CALENDAR = frozenset(stem(w) for w in (*WEEKDAYS, *MONTHS))


def _adjacent(stems: Sequence[str], mine: list[str], theirs: list[str]) -> bool:
    """The two spans stand next to each other in the sentence (a range, a pair): "Tuesday to Sunday"."""
    places = [k for k, w in enumerate(stems) if w in mine]
    return any(abs(k - m) == 1 for k in places for m, w in enumerate(stems) if w in theirs)


_COORDINATOR = re.compile(r",|&|\b(?:and|or|nor|as well as)\b", re.IGNORECASE)
_TOGETHER = 3  # words between two names written as one thing: "Egyptian television network CBC"
_WITHIN = frozenset({"of", "in", "at", "near", "the", "a", "an"})


def _written_together(sentence: str, mine: list[str], theirs: list[str]) -> bool:
    """The two names stand within `_TOGETHER` words of each other with no function word between them but "of", "in",
    "at" ... (and a comma): one names the other, or a place within it."""
    for first, second in ((mine[-1], theirs[0]), (theirs[-1], mine[0])):
        between = _between(sentence, first, second)
        if between is None:
            continue
        gap = re.findall(r"[^\W_][\w'’-]*", between)
        if len(gap) <= _TOGETHER and all(w in _WITHIN or w not in STOPWORDS for w in gap) and not _COORDINATOR.search(between):
            return True
    return False


def _shown(text: str, stems: list[str]) -> list[str]:
    """The words of `text` written with these stems, lower-cased."""
    return [w.shown for w in _words(text) if w.stem in stems]


@functools.lru_cache(maxsize=16384)
def _document_stems(sentence: str) -> frozenset[str]:
    return frozenset(w.stem for w in _words(sentence))
