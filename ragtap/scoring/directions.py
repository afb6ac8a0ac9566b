"""Which way a change or a time offset goes (conflicts.py's checks).

- **A change told with a word for the other way**: "turnout rose to 61% from 67%" where the evidence says it was
  61%, "down from 67%": both values stated, only the word turned.  The two values tie the claim to its evidence where
  its words barely do ("turnout" alone), so conflicts.py checks this whatever the window's coverage.
- **A time offset told the other way**: "start them 2 days after you enter the area" where the evidence says "2 days
  before entering", counted from the same thing ("10 minutes after baking" and "10 minutes before taking it out" count
  from two things).  Only an offset with its number: "back up before updating" / "update after backing up" say the
  same, which order.py reads.
"""

from __future__ import annotations

import re

from ragtap.scoring.alignment import Window
from ragtap.scoring.lexical import content_words
from ragtap.scoring.quantities import agree, changes, quantities, stated_in

_RISE = re.compile(r"\b(?:ris(?:e|es|en|ing)|rose|increas\w*|gr[eo]w\w*|climb\w*|jump\w*|soar\w*|gain\w*|up)\b")
_FALL = re.compile(r"\b(?:f[ae]ll\w*|drop\w*|declin\w*|decreas\w*|shr[iau]nk\w*|slump\w*|plung\w*|down)\b")
_LEAD_IN = 30  # characters before a change where the word saying which way it went stands ("rose to 61% from 67%")


_OFFSET = re.compile(r"\s*[a-z]+['’]?\s+(before|after|prior\s+to|earlier\s+than|later\s+than|ahead\s+of)\b", re.IGNORECASE)


def offset_turned(claim: str, window: Window) -> list[str]:
    """A time offset told the other way: "start them 2 days after you enter the area" where the evidence says "2 days
    before entering", counted from the same thing.  Only an offset with its number: "back up before updating" /
    "update after backing up" say the same, which order.py reads."""
    stated = [(e, _OFFSET.match(window.text, e.end)) for e in quantities(window.text) if e.dimension == "time"]
    for q in quantities(claim):
        mine = _OFFSET.match(claim, q.end) if q.dimension == "time" else None
        if mine is None:
            continue
        for e, theirs in stated:
            if theirs is not None and agree(q, e) is True and _side(mine.group(1)) != _side(theirs.group(1)) \
                    and _reference(claim, mine.end()) is not None and _reference(claim, mine.end()) == _reference(window.text, theirs.end()):
                return [f"order: {q.describe()} {_side(mine.group(1))} vs {_side(theirs.group(1))}"]
    return []


def _reference(text: str, at: int) -> str | None:
    """What an offset is counted from: the first content word after "before" / "after" ("2 days before [entering]";
    "10 minutes after [baking]" and "10 minutes before [taking] it out" count from two things)."""
    return next(iter(content_words(text[at : at + 40])), None)


def _side(word: str) -> str:
    return "after" if word.lower().startswith(("after", "later")) else "before"


def change_against_its_word(claim: str, window: Window) -> tuple[str, ...]:
    """A change whose two values the evidence states, told with a word for the other way: "turnout rose to 61% from
    67%" against "turnout was 61%, down from 67%".  The two values tie the claim to its evidence where its words
    barely do ("turnout" alone), so this is checked whatever the window's coverage."""
    lowered, stated = claim.lower(), quantities(window.text)
    for old, new in changes(claim):
        if old.value == new.value or not (stated_in(old, stated) and stated_in(new, stated)):
            continue
        lead = lowered[max(0, min(old.start, new.start) - _LEAD_IN) : min(old.start, new.start)]
        said_up, said_down = bool(_RISE.search(lead)), bool(_FALL.search(lead))
        if said_up != said_down and said_up != (new.value > old.value):
            return (f"number: {'a rise' if said_up else 'a fall'} from {old.describe()} to {new.describe()}",)
    return ()
