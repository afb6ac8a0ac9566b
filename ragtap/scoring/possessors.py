"""A thing given to another owner: "Dunmore's goalkeeper Tom Reid" where the evidence says "Carrow's goalkeeper Tom
Reid"; "Apple's new chief designer" where the article says "Samsung's".

names.py leaves possessors alone (a name before 's describes what the clause is about, it fills no slot), so a name
moved into the possessor's place passed.  Here the possessor is compared where the evidence sentence says whose the
same thing is: the claim's "X's <noun>" against the evidence's "Y's <noun>" (the same noun, followed by the same
word: "goalkeeper Tom Reid"), X another name than Y, and no text of the documents saying "X's <noun>" -- the claim
put the thing in the wrong hands.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ragtap.scoring.lexical import content_words
from ragtap.scoring.words import stem

_OWNED = re.compile(r"\b(?P<owner>[A-Z][\w-]*(?:\s+[A-Z][\w-]*){0,3})['’]s\s+(?P<thing>[a-z][\w-]+)")


# Capitalised words that open a sentence or a phrase, not a name: "Despite Arbroath's desire" is Arbroath's.
_OPENERS = frozenset("despite although after before when while since because unlike like under with without following "
                     "according during unless until once if as at in on for from by of to and but or yet so also meanwhile "
                     "however the a an this that these those his her their its our my your".split())


def _owned(text: str) -> list[tuple[str, str, str | None]]:
    """(owner, thing, what follows the thing: its first content word) of each "X's thing" in `text`."""
    out = []
    for match in _OWNED.finditer(text):
        words = match.group("owner").split()
        while words and words[0].lower() in _OPENERS:
            words = words[1:]
        if words:
            after = next(iter(content_words(text[match.end() : match.end() + 40])), None)
            out.append((" ".join(words).lower(), stem(match.group("thing")), after))
    return out


def owner_swapped(claim: str, window_text: str, documents: Iterable[str]) -> list[str]:
    """Why the claim gives a thing of its evidence to another owner ("name: dunmore's goalkeeper vs carrow's")."""
    mine = _owned(claim)
    if not mine:
        return []
    theirs = _owned(window_text)
    said = {(o, t) for text in documents for o, t, _ in _owned(text)}
    for owner, thing, after in mine:
        if (owner, thing) in said or after is None:
            continue
        # The same thing: the same noun followed by the same word ("goalkeeper [Tom] Reid"); "Arbroath's desire [to
        # keep] Sheerin" is not "Paul's desire [to come] back".
        other = next((o for o, t, a in theirs if t == thing and a == after and o != owner and owner not in o and o not in owner), None)
        if other is not None:
            return [f"name: {owner}'s {thing} vs {other}'s"]
    return []
