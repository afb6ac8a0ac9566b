"""What a claim's opening pronoun stands for: "It is shorter than the Gull Rock light" after "Carrick Point's tower is
34 metres tall" is a claim about the tower.

Alone, "It" names nothing: alignment weighs the claim by its other words only (so a short pronoun claim rarely
reaches the coverage the contradiction checks need), and a comparison has no first side to find a value for.  So a
claim opening with a personal pronoun (It, They, He, She) or a demonstrative standing for a noun phrase ("This is",
"That was", "These are") takes the subject of the claim before it -- its leading noun phrase, up to its first verb
-- for alignment and for the contradiction checks (claims.py).  The claim's own words still decide its lexical
precision: the subject adds no evidence of its own.

A deliberately small rule, not a parser: the subject is the words before the earlier claim's first verb (an
auxiliary, a modal, a verb ending in -s or -ed after a noun, an irregular past, a common verb), at most `_MAX_WORDS` of them, with at
least one content word, and not an adverbial opening ("In 2019, ...") or an expletive ("It is important to ...",
"It takes three days to ..."), which stands for nothing.  A pronoun claim after another takes that one's subject.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragtap.scoring.lexical import STOPWORDS, content_words
from ragtap.scoring.words import IRREGULAR_PAST

_MAX_WORDS = 6  # a subject longer than this is a clause, not a noun phrase

_AUXILIARIES = frozenset(
    "is are was were be been has have had will would can could may might must should shall does do did isn't aren't "
    "wasn't weren't hasn't haven't hadn't won't can't couldn't doesn't don't didn't".split()
)
# Words that open no subject: an adverbial or a clause before the subject ("In 2019, the tower ..."), a pronoun, a
# reply ("Yes, ..."), "There is".
_NO_SUBJECT = frozenset(
    "in on at for from after before during since by with when if although though because as while once until unless "
    "to into under over about there here it they he she this that these those we you i yes no so then also however "
    "additionally furthermore moreover overall first second finally prior according based despite following given "
    "due thanks".split()
)
# Verbs a plural subject takes without an ending ("Seniors over 70 get ...", "Members receive ...").
_PLAIN_VERBS = frozenset(
    "get receive pay need take offer include cost run open close require allow provide give keep stay remain become go "
    "come live work play hold contain serve operate start begin end last apply cover".split()
)
_DETERMINERS = frozenset("the a an its their his her our your this that these those each every some any all both".split())
_REPLY = re.compile(r"(?:(?:yes|no|sure|indeed|actually|and|but|so|also)\b[,.!—–-]*\s+)+", re.IGNORECASE)
_WORD = re.compile(r"[^\W_][\w'’-]*")
# The pronoun and, for a demonstrative, the verb after it that shows it stands for a noun phrase ("This is" / "This
# pass costs": a determiner).  "It's" and "they're" are the pronoun and a verb.
_PRONOUN = re.compile(r"(?:It|They|He|She)(?=['’]s\b|['’]re\b|\s)|(?:This|That|These|Those)(?=['’]s\b|\s+(?:is|was|are|were|has|have|had)\b)"
                      r"|(?:Its|Their|His|Her)(?=\s)")
_CONTRACTED = {"'s": " is", "’s": " is", "'re": " are", "’re": " are"}
_POSSESSIVE = frozenset({"Its", "Their", "His", "Her"})  # "Its main telescope ..." = "The observatory's main telescope ..."
# "It" that stands for nothing: "It is important to ...", "It is not clear whether ...", "It takes 3 days to ...",
# "It depends on ...".
_EXPLETIVE = re.compile(r"It(?:['’]s)?\s+(?:(?:[\w'’-]+\s+){0,4}?(?:to|that|whether|if|how)\b|(?:depends|seems|appears|looks|remains|"
                        r"is\s+(?:said|thought|believed|likely|unlikely|possible|unclear|clear)\b))")


@dataclass(frozen=True, slots=True)
class Subject:
    """The noun phrase a claim's opening pronoun stands for, and where each stands."""

    text: str  # the noun phrase, as the earlier claim writes it ("Carrick Point's tower")
    start: int  # its character offsets in the text the claims were cut from
    end: int
    pronoun: str  # the claim's pronoun as written ("It", "They're")
    at: int  # where the pronoun starts in the claim's checked text (after a "Yes," or "And")

    def resolved(self, checked: str) -> str:
        """The claim's checked text with the subject in the pronoun's place: what alignment and the checks read."""
        rest = checked[self.at + len(self.pronoun) :]
        if self.pronoun in _POSSESSIVE:
            verb = "'" if self.text.endswith("s") else "'s"
        else:
            verb = next((v for c, v in _CONTRACTED.items() if self.pronoun.endswith(c)), "")
        return f"{checked[: self.at]}{self.text}{verb}{rest}"


def opening_pronoun(checked: str) -> tuple[str, int] | None:
    """(the pronoun a claim opens with, where it starts) when it stands for an earlier noun phrase, else None."""
    reply = _REPLY.match(checked)
    at = reply.end() if reply else len(checked) - len(checked.lstrip())
    match = _PRONOUN.match(checked, at)
    if match is None or _EXPLETIVE.match(checked, at):
        return None
    pronoun = match.group(0)
    tail = checked[match.end() : match.end() + 3]
    for contraction in ("'s", "’s", "'re", "’re"):
        if tail.startswith(contraction):
            pronoun += contraction
    return pronoun, at


def leading_noun_phrase(text: str) -> tuple[int, int] | None:
    """(start, end) in `text` of its subject: the words before its first verb, when they make a noun phrase of at
    most `_MAX_WORDS` words with a content word; or the words before its first comma when they are a name or an
    article and nouns ("The festival, which began in 1990, ..."; not "Prior to her election, ..."); None when the
    text opens otherwise.  A label before a colon is not part of it ("Summary: Rupert Murdoch is ...")."""
    reply = _REPLY.match(text)
    start = reply.end() if reply else 0
    label = text.find(":", start, start + 40)
    start = label + 1 if label >= 0 else start
    words = list(_WORD.finditer(text, start))
    if not words or words[0].group(0).lower() in _NO_SUBJECT:
        return None
    end = None
    for i, word in enumerate(words[: _MAX_WORDS + 1]):
        after = words[i + 1].group(0).lower() if i + 1 < len(words) else ""
        if i and _is_verb(word.group(0), words[i - 1].group(0), after):
            end = words[i - 1].end()
            break
        if text.startswith(",", word.end()):
            plain = all(w.group(0).lower() not in STOPWORDS or (j == 0 and w.group(0).lower() in _DETERMINERS) for j, w in enumerate(words[: i + 1]))
            end = word.end() if i < _MAX_WORDS and plain else None
            break
    if end is None or not content_words(text[words[0].start() : end]) or any(c in text[words[0].start() : end] for c in "()\"“”[]"):
        return None  # a bracket or a quote: a title or an aside, no plain noun phrase
    return words[0].start(), end


def _is_verb(word: str, before: str, after: str) -> bool:
    lower = word.lower()
    if lower in _AUXILIARIES or lower in IRREGULAR_PAST or (lower in _PLAIN_VERBS and before.lower() not in _DETERMINERS):
        return True
    if not word.islower() or lower in STOPWORDS or before.lower() in _DETERMINERS or after in _AUXILIARIES:
        return False  # a name, a function word, or a noun: after its article ("the lights"), before a verb ("tablets are")
    return len(lower) > 3 and (lower.endswith("ed") or (lower.endswith("s") and not lower.endswith(("ss", "us", "is"))))
