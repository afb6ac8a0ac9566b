"""Order: two events of the documents told in the other order.

- **within a clause** (`reversed_order`, called by polarity.py for each claim clause and its evidence clause): the same
  order relation with its two events swapped ("update the firmware before backing up" where the manual says to back
  up before updating), however each side words it (before, after, prior to, until, a fronted "Before ..., ...", "A,
  then B").
"""

from __future__ import annotations

import re
from collections.abc import Callable

_DURATION = re.compile(r"\b(?:seconds?|minutes?|hours?|days?|weeks?|months?|years?|decades?|shortly|long|soon|just|moments?)\s+$", re.IGNORECASE)
_ORDER_CUE = re.compile(r"\b(before|after|prior\s+to|followed\s+by|until)\b|(?:,|\band)\s+(then)\b", re.IGNORECASE)
_CONDITION = re.compile(r"\b(?:if|when|whenever|unless)\b", re.IGNORECASE)


def _event_order(clause: str, shared: set[str], words: Callable[[str], set[str]]) -> tuple[set[str], set[str]] | None:
    """(what happens first, what happens later), as the clause's shared words, from the first order word that has
    shared words on both sides: "A before B" and "Before B, A" -> (A, B); "A after B" and "After B, A" -> (B, A);
    "A, then B" and "A and then B" -> (A, B) (not "if A, then B": a condition, no order)."""
    for cue in _ORDER_CUE.finditer(clause):
        if _DURATION.search(clause, 0, cue.start()):
            return None  # "about a week before we met, ...": a date given by another event, not two events in order
        word = (cue.group(1) or cue.group(2)).lower().split()[0]
        head, tail = clause[: cue.start()], clause[cue.end() :]
        if word == "then":
            if _CONDITION.search(head):
                continue
            left, right = head, tail
        elif not words(head) & shared and "," in tail:  # fronted: "Before updating the software, back up"
            inner, _, outer = tail.partition(",")
            left, right = outer, inner  # "Before B, A" reads "A before B"
        else:
            left, right = head, tail
        a, b = words(left) & shared, words(right) & shared
        if a and b:
            return (a, b) if word in ("before", "prior", "followed", "until", "then") else (b, a)
    return None


def reversed_order(claim: str, evidence: str, shared: set[str], words: Callable[[str], set[str]]) -> str | None:
    """The two events of an order relation swapped: "update, then back up" against "back up before updating"
    (however each side words it: before, after, prior to, a fronted "Before ..., ...")."""
    claim_order, evidence_order = _event_order(claim, shared, words), _event_order(evidence, shared, words)
    if claim_order is None or evidence_order is None:
        return None
    (c_first, c_later), (e_first, e_later) = claim_order, evidence_order
    if c_first & e_later and c_later & e_first and not c_first & e_first and not c_later & e_later:
        return "order: the events are reversed"
    return None
