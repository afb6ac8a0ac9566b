"""Exceptions: a claim that includes what its evidence excepts, or excepts what its evidence includes.

"Seniors receive a 30% discount on all passes except the season pass" is turned around by "30% off every pass, and
that includes the season pass", and "no byes are available in the last two rounds" by "byes can be used in any
round, including the last two": both share nearly every word with their evidence, and the exception lies in a
word the negation and opposite checks (polarity.py) do not pair.  So:

- what the evidence **excludes**: the words after an exception ("except (for) X", "excluding X", "other than X",
  "apart from X", "but not X", "with the exception of X", "not including X"), the words a negation governs to the
  end of its clause ("no byes are available [in the last two rounds]", "does not cover [flood damage]"), and what
  is said to be excluded ("[the season pass] is excluded / exempt / not included / not covered");
- what the claim **includes**: the words after "including", "includes", "even", "as well as", "plus"; the last item
  of a list ending its clause ("yoga, pilates and the spinning class"), against an exception by name only; and a
  group the claim says all of ("every pass", "all water damage") where the evidence excepts part of that group by
  name (and the claim does not name that part itself: "open every day, but closed on Christmas Day").

A claim that includes X where the evidence excludes X (every word of the claim's X among the excluded words) is
contradicted -- unless the claim itself negates or excepts anything (it may be saying the same: "No, the season
pass is not included").  Conversely, a claim excepting X ("except the season pass") where the evidence includes X
by name ("including the season pass"), or says all of X's group with no exception or negation at all, is
contradicted.  A claim negating what the evidence words as an exception agrees with it ("No, flood damage is not
covered" / "all water damage except damage caused by flooding": `negates_the_exception`, which conflicts.py asks
before it reports polarity's negation).

A condition the evidence sets ("covered, but not if the property has been unoccupied for more than 60 days"), waived
by the claim ("covered regardless of how long the property has been unoccupied"), is contradicted too.

Last, `denied_things`: a thing the evidence says there is none of ("did not receive any government funding"),
affirmed by a claim that may take its other words from another sentence.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ragtap.scoring.alignment import Window
from ragtap.scoring.lexical import content_words
from ragtap.scoring.sentences import STOP_BREAK

_MAX_ITEM = 6  # words an exception or an inclusion names at most

# The end of what an exception or an inclusion names: punctuation, or a word opening another clause.
_ITEM = r"(?P<item>(?:(?!(?:which|who|whose|where|when|because|if|unless|but|while|so|although|though|whereas|and\s+(?:is|are|was|were|can|will|must|may)|that)\b)[^\W_][\w'’-]*\s*){1,%d})" % _MAX_ITEM
_EXCEPT = r"except(?:\s+for|\s+on|\s+in|\s+at|\s+during)?|excluding|other\s+than|apart\s+from|aside\s+from|save\s+for|but\s+not|not\s+including|with\s+the\s+exception\s+of"
_EXCEPTION = re.compile(rf"\b(?:{_EXCEPT})\s+(?:the\s+|a\s+|an\s+)?{_ITEM}", re.IGNORECASE)
_INCLUSION = re.compile(rf"\b(?:including|includes|include|included|even|as\s+well\s+as|plus)\s+(?:the\s+|a\s+|an\s+|on\s+|in\s+|during\s+)?{_ITEM}", re.IGNORECASE)
# An inclusion written after what it includes: "all new members, [students] included", "every day, [weekends] too".
_INCLUDED_AFTER = re.compile(r"(?:,|\band)\s+(?:the\s+|a\s+|an\s+)?(?P<item>(?:[^\W_][\w'’-]*\s+){0,3}?[^\W_][\w'’-]*)\s+(?:included|too|as\s+well)\b",
                             re.IGNORECASE)
# The last item of a list that ends its clause: "day passes, monthly passes and [the season pass]."
_LISTED = re.compile(r"(?:,|\band|\bor)\s+(?:the\s+|a\s+|an\s+|on\s+|in\s+)?(?P<item>(?:[^\W_][\w'’-]*\s+){0,3}[^\W_][\w'’-]*)\s*(?=[.;!?]|$)",
                     re.IGNORECASE)
_SAID_EXCLUDED = re.compile(r"(?P<item>(?:[^\W_][\w'’-]*\s+){1,4}?)(?:is|are)\s+(?:also\s+)?(?:excluded|exempt|not\s+(?:included|covered|eligible))\b",
                            re.IGNORECASE)
# A negation and what it governs, to the end of its clause; not the negations that negate nothing ("not only", "no
# later than", "no matter").
_NEGATED = re.compile(r"\b(?:no|not|never|none|cannot|\w+n['’]t)\b(?!\s+(?:only|just|matter|doubt|more|less|later|earlier|longer\s+than)\b)"
                      r"(?P<item>[^,;:.()]*)", re.IGNORECASE)
_CLAIM_DENIES = re.compile(rf"\b(?:no|not|never|none|nothing|without|cannot|\w+n['’]t|{_EXCEPT}|excluded?|exempt)\b", re.IGNORECASE)
_WITHOUT = re.compile(r"\bwithout\b", re.IGNORECASE)  # "or without notice in an emergency" / "except in an emergency"
_REPLY_NO = re.compile(r"^\s*no\s*[,.!—–-]\s*", re.IGNORECASE)  # "No, ..." answers the question; the rest is the claim
# A group said all of: "all passes", "every water damage claim" (its words up to a function word: "all water damage").
_ALL = re.compile(r"\b(?:all|every|any|each)\s+(?:of\s+the\s+)?(?P<group>[^\W\d_][\w-]*(?:\s+[^\W\d_][\w-]*){0,2})", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class _Item:
    """What an exception, an inclusion or a list names: its content words, and its text for the reason shown."""

    words: frozenset[str]
    shown: str


def _items(pattern: re.Pattern[str], text: str) -> list[_Item]:
    found = (_Item(frozenset(content_words(m.group("item"))), " ".join(m.group("item").split()).lower()) for m in pattern.finditer(text))
    return [item for item in found if item.words]


def exception_conflicts(claim: str, window: Window) -> list[str]:
    """Why the claim includes what `window` excepts, or excepts what it includes (empty when it does neither)."""
    said = _REPLY_NO.sub("", claim)
    regardless = _regardless_of_a_condition(said, window)
    if regardless:
        return regardless
    if _CLAIM_DENIES.search(_without_shared_denials(said, window.text)):
        return _excepted_but_included(said, window)
    included, listed = _items(_INCLUSION, said) + _items(_INCLUDED_AFTER, said), _items(_LISTED, said)
    groups = _groups(said)
    if not included and not groups and not listed:
        return []
    claim_words = set(content_words(said))
    for sentence in STOP_BREAK.split(window.text):
        named = _items(_EXCEPTION, sentence)
        # "including X" against anything the sentence excludes; the last item of a list only against an exception by
        # name ("day passes and the season pass" / "all passes except the season pass")
        excluded = _excluded(sentence)
        also_included = _items(_INCLUSION, sentence)  # "no charge for children under 5 including infants": the same
        for item in included:
            if any(item.words <= words for words in excluded) and not any(item.words <= other.words for other in also_included):
                return [f"exception: {item.shown} is excepted"]
        for item in listed:
            if any(item.words == other.words for other in named):
                return [f"exception: {item.shown} is excepted"]
        for group, shown in groups.items():  # not where the claim names the excepted part itself ("every day, but closed on Christmas Day")
            if any(group in other.words and not (other.words - set(groups)) & claim_words for other in named):
                return [f"exception: {shown}, but for {next(o.shown for o in named if group in o.words)}"]
    return []


def _without_shared_denials(claim: str, evidence: str) -> str:
    """The claim without the "without X" / "no X" it repeats from its evidence ("photography [without flash] is allowed
    everywhere" / "photography [without flash] is permitted ... except in the Navigation Room"): those describe the
    thing, they deny nothing the claim adds."""
    lowered = evidence.lower()
    return _DENIAL_AND_NEXT.sub(lambda m: " " if m.group(0).lower() in lowered else m.group(0), claim)


_DENIAL_AND_NEXT = re.compile(r"\b(?:without|no)\s+[^\W_][\w'’-]*", re.IGNORECASE)  # what describes ("without flash", "no-fee")


# "regardless of how long the property has been unoccupied", "no matter what the weather", "whatever the size"
_REGARDLESS = re.compile(r"\b(?:regardless\s+of|irrespective\s+of|no\s+matter|whatever)\s+(?P<item>[^,;:.()]*)", re.IGNORECASE)
# A condition the evidence puts on what it says: "(but not) if the property has been unoccupied for more than 60 days",
# "unless ...", "(only) if ...", "except when ...", "provided ...", "as long as ..."
_CONDITION = re.compile(r"\b(?:if|unless|only\s+when|except\s+(?:when|where)|provided(?:\s+that)?|as\s+long\s+as)\s+"
                        r"(?P<item>[^,;:.()]*)", re.IGNORECASE)


# A claim that something may be done at any time, against a sentence that allows it only after or once something.
_ANY_TIME = re.compile(r"\b(?:at\s+any\s+time|any\s*time|whenever\s+(?:you|they|he|she)\s+(?:like|likes|want|wants|wish|wishes)|at\s+will)\b",
                       re.IGNORECASE)
_TIME_CONDITION = re.compile(r"\b(?:(?:only\s+)?after|once|not\s+before|no\s+earlier\s+than|only\s+from)\s+(?P<item>[^,;:.()]*)", re.IGNORECASE)


def any_time_against_a_condition(claim: str, window: Window) -> list[str]:
    """"You can cancel at any time by giving 30 days' notice" against "After the minimum term, either membership can
    be cancelled with 30 days' written notice": the claim waives the time the evidence sets.  The sentence must hold
    two of the claim's words besides "at any time", not say "at any time" itself, and its condition must name
    something the claim does not.  Run whatever the window's coverage (conflicts.py): "at any time" is itself words
    the evidence lacks."""
    waived = _ANY_TIME.search(claim)
    if waived is None:
        return []
    claim_words = set(content_words(claim[: waived.start()] + " " + claim[waived.end() :]))
    for sentence in STOP_BREAK.split(window.text):
        if _ANY_TIME.search(sentence) or len(claim_words & set(content_words(sentence))) < 2:
            continue
        for condition in _TIME_CONDITION.finditer(sentence):
            if set(content_words(condition.group("item"))) - claim_words:
                return [f"condition: {waived.group(0).lower()} vs {' '.join(condition.group(0).lower().split())}"]
    return []


def _regardless_of_a_condition(claim: str, window: Window) -> list[str]:
    """The claim waives a condition its evidence sets: "Yes, escape of water is covered regardless of how long the
    property has been unoccupied" against "Escape of water is covered, but not if the property has been unoccupied for
    more than 60 consecutive days".  Most of what the claim says it does not matter (at least two of its words) must
    be what the evidence's condition is about."""
    for match in _REGARDLESS.finditer(claim):
        waived = set(content_words(match.group("item")))
        for condition in _CONDITION.finditer(window.text):
            held = waived & set(content_words(condition.group("item")))
            if len(held) >= 2 and 2 * len(held) >= len(waived):
                return [f"condition: {' '.join(match.group(0).lower().split())} vs {' '.join(condition.group(0).lower().split())}"]
    return []


def negates_the_exception(claim: str, window: Window) -> bool:
    """The claim negates what its evidence excepts: "No, flood damage is not covered" against "covers all water damage
    except damage caused by flooding" -- a negation the evidence words as an exception, which is agreement.  The
    claim must hold a word of the exception that the rest of its sentence lacks ("flood")."""
    said = _REPLY_NO.sub("", claim)
    if not _NEGATED.search(said) and not _WITHOUT.search(said):
        return False
    # Not the words of the claim's own "except ..." (it repeats the exception and negates something else); "but not
    # X" is the negation itself.
    claim_words = set(content_words(_EXCEPTION.sub(lambda m: m.group(0) if "not" in m.group(0).lower().split() else " ", said)))
    for sentence in STOP_BREAK.split(window.text):
        for match in _EXCEPTION.finditer(sentence):
            rest = set(content_words(sentence[: match.start()] + " " + sentence[match.end() :]))
            if (set(content_words(match.group("item"))) - rest) & claim_words:
                return True
    return False


def _groups(text: str) -> dict[str, str]:
    """Each word of a group the text says all of, to how it says it: "water" and "damage" -> "all water damage"."""
    out = {}
    for match in _ALL.finditer(text):
        words, shown = _leading_content(match.group("group"))
        for word in words:
            out[word] = f"{match.group(0)[: match.start('group') - match.start()]}{shown}".lower()
    return out


def _excluded(sentence: str) -> list[frozenset[str]]:
    """The word sets the sentence excludes: after an exception, under a negation, said to be excluded."""
    return [item.words for pattern in (_EXCEPTION, _NEGATED, _SAID_EXCLUDED) for item in _items(pattern, sentence)]


def _excepted_but_included(claim: str, window: Window) -> list[str]:
    """A claim excepting X ("all passes except the season pass") where the evidence includes X by name, or says all
    of X's group with no exception or negation at all."""
    excepted = _items(_EXCEPTION, claim)
    if not excepted or _NEGATED.search(claim.replace("but not", "")):
        return []
    for sentence in STOP_BREAK.split(window.text):
        included = _items(_INCLUSION, sentence)
        plain = not _CLAIM_DENIES.search(sentence)
        groups = _groups(sentence) if plain else {}
        for item in excepted:
            if any(item.words <= other.words for other in included) and not any(item.words <= words for words in _excluded(sentence)):
                return [f"exception: {item.shown} is included"]
            said_of_all = next((groups[w] for w in item.words if w in groups), None)
            if said_of_all:
                return [f"exception: {said_of_all}, {item.shown} included"]
    return []


# "no X", "not ... any X", "never ... any X", "without any X", "none of the X": the evidence says there is no X.
_NONE_OF = re.compile(r"\b(?:no|(?:not|never|n['’]t)\s+(?:[\w'’-]+\s+){0,3}?any|without\s+any|none\s+of\s+(?:the\s+|its\s+|their\s+)?)\s+"
                      r"(?P<thing>(?:[^\W\d_][\w-]*\s+){0,3}[^\W\d_][\w-]*)", re.IGNORECASE)


def denied_things(claim: str, windows: Sequence[Window]) -> tuple[str, ...]:
    """A claim that affirms a thing its evidence says there is none of: "a small share of the income came from
    government funding" against "The Trust did not receive any government funding during the year".  The claim
    may take its other words from another sentence ("income", "share"), so that no window holds most of it and the
    other checks never compare it; here the thing itself is what is compared.  The thing is the run of two or more
    content words after "no" / "not ... any" (a compound: "government funding", "wheelchair access"; one word, "no
    byes", is too often affirmed in other words elsewhere); the claim must hold them side by side, negate nothing,
    and share another word with the denying sentence (the same subject), and no window sentence that holds the
    thing may affirm it."""
    said = _REPLY_NO.sub("", claim)
    if _CLAIM_DENIES.search(said) or _HEDGED.search(said):
        return ()
    claim_words = [w.rstrip("'") for w in content_words(claim)]  # "the Trust's" is the Trust
    sentences = list(dict.fromkeys(s for w in windows for s in STOP_BREAK.split(w.text)))
    for sentence in sentences:
        for match in _NONE_OF.finditer(sentence):
            thing, shown = _leading_content(match.group("thing"))
            if len(thing) < 2 or not _side_by_side(claim_words, thing) or _COMPARED.match(sentence, match.end()):
                continue  # "there has been no Australian player more famous than Benaud": a comparison, not an absence
            others = set(content_words(sentence)) - set(thing) - set(content_words(match.group(0)))
            affirmed = any(set(thing) <= set(content_words(s)) and not any(set(thing) <= set(_leading_content(m.group("thing"))[0])
                                                                           for m in _NONE_OF.finditer(s)) for s in sentences)
            if others & set(claim_words) and not affirmed:
                return (f"negation: no {shown}",)
    return ()


# A claim that hedges or says "hardly any" affirms nothing the denial contradicts ("it is unclear whether they
# suffered an injury", "few job prospects", "denied knowledge of any video footage").
_HEDGED = re.compile(r"\b(?:unclear|uncertain|whether|may|might|could|possibly|potentially|if|few|little|hardly|barely|scarcely|"
                     r"deny|denied|denies|refused?|refuses|failed|fails|lack|lacks|lacked|absent|absence)\b", re.IGNORECASE)
_COMPARED = re.compile(r"[^.;]{0,40}\bthan\b", re.IGNORECASE)


def _leading_content(text: str) -> tuple[list[str], str]:
    """The content words `text` opens with, up to its first function word ("government funding [during] the year"),
    and those words as written."""
    out, shown = [], []
    for token in text.split():
        words = content_words(token)
        if not words:
            break
        out.extend(words)
        shown.append(token)
    return out, " ".join(shown)


def _side_by_side(words: list[str], thing: list[str]) -> bool:
    """The thing's words stand next to each other among the claim's content words, in any order ("funding from the
    government")."""
    n = len(thing)
    return any(sorted(words[i : i + n]) == sorted(thing) for i in range(len(words) - n + 1))
