"""All where the evidence says only, only where it says all, and a second member for "the only one".

- "Yes, all plans allow file sharing with external users" against "All plans include two-factor authentication, but
  only Plus and Pro allow file sharing": the clause the claim rests on restricts what the claim gives to all (the
  window's other clause saying "all plans" of something else hid it from conflicts.py's universal check);
- "Annual billing saves 20%, but only on the Pro plan" against "saves 20% on every plan": the claim restricts to one
  member what its clause gives to every member of the group the member is named by ("the Pro plan" / "every plan");
- "The Plus and Pro plans have version history" against "Pro ... is the only plan with version history": the claim
  adds a member to what its clause says only one has.

The clause a claim rests on is the window's clause holding most of the claim's content words (polarity.clauses).
"""

from __future__ import annotations

import re

from ragtap.scoring.alignment import Window
from ragtap.scoring.lexical import STOPWORDS, content_words
from ragtap.scoring.polarity import clauses
from ragtap.scoring.words import stem

_ALL = re.compile(r"\b(?:all|every|each|any)\s+(?:of\s+)?(?:the\s+|your\s+|their\s+|its\s+)?([^\W\d_][\w-]*)", re.IGNORECASE)
_ONLY = re.compile(r"\bonly\s+(?:(?:on|in|for|to|at|with|by)\s+)?(?:the\s+)?(?P<what>(?:[A-Z][\w-]*\s+)*[\w-]+(?:\s+and\s+(?:the\s+)?[A-Z][\w-]*)?)")
_NO_GROUP = frozenset(stem(w) for w in "following above below these those other others time times day days".split())  # "all of the following conditions"
_THE_ONLY = re.compile(r"\bthe\s+only\s+([^\W\d_][\w-]*)", re.IGNORECASE)
_MEMBERS = re.compile(r"\b([A-Z][\w-]*)\s*(?:,\s*[A-Z][\w-]*\s*)*,?\s+and\s+(?:the\s+)?([A-Z][\w-]*)")


def _resting_clause(claim: str, window: Window) -> str | None:
    words = set(content_words(claim))
    scored = [(len(words & set(content_words(c))), c) for c in clauses(window.text)]
    best = max(scored, default=(0, None))
    return best[1] if best[0] >= 2 else None


def quantifier_conflicts(claim: str, window: Window) -> list[str]:
    """Why a clause of the claim quantifies otherwise than the evidence clause it rests on (see the module)."""
    parts: list[str] = []
    for part in clauses(claim):
        if parts and part.lstrip().lower().startswith("only"):
            parts[-1] = f"{parts[-1]} {part}"  # "saves 20%, but only on the Pro plan": one restricted statement
        else:
            parts.append(part)
    for part in parts:
        found = _part_conflicts(part, window)
        if found:
            return found
    return []


def _part_conflicts(part: str, window: Window) -> list[str]:
    clause = _resting_clause(part, window)
    if clause is None:
        return []
    said_of_all = {stem(m.group(1).lower()) for m in _ALL.finditer(clause)}
    restricted = _ONLY.search(clause)
    mine = _ONLY.search(part)
    for match in _ALL.finditer(part):
        group = stem(match.group(1).lower())
        if mine is None and group not in STOPWORDS and group not in _NO_GROUP and restricted is not None and group not in said_of_all:
            return [f"quantifier: {match.group(0).lower()} vs only {restricted.group('what').lower()}"]
    if mine is not None and said_of_all and not _ALL.search(part):
        named = {stem(w.lower()) for w in re.findall(r"[^\W\d_][\w-]*", mine.group("what"))}
        group = next((g for g in said_of_all if g in named), None)
        if group is not None:
            return [f"quantifier: only {mine.group('what').lower()} vs every {group}"]
    only_one = _THE_ONLY.search(clause)
    members = _MEMBERS.search(part)
    if only_one is not None and members is not None:
        named_members = [m.lower() for m in members.groups()]
        here = {w.lower() for w in re.findall(r"[A-Z][\w-]*", clause)}
        if sum(m in here for m in named_members) == 1:
            return [f"only: {' and '.join(named_members)} vs the only {only_one.group(1).lower()}"]
    return []
