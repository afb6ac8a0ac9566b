"""An answer cut into segments, one claim each, and put back together without some of them.

The guard removes whole claims (sentences and list items, as `ragtap.scoring.claims.split_claims` cuts them, so
its offsets are the scorer's) from an answer, whole or streamed.  Both go through the same two steps:

- `SegmentCutter` cuts text, fed in pieces, into *segments* that partition it: each segment is one claim with
  the text before it (the whitespace since the previous claim, a list marker).  A claim is complete, and its
  segment handed out, once the text shows where it ends: the next claim has begun, or its line has ended.
  What follows the last claim (a closing newline, stray punctuation) is a last segment with no claim.
- `Splicer` joins the segments that are kept, in order, so that the text around a removed claim stays byte for
  byte and stays tidy:
  * a removed claim takes the whitespace before it along, so no double space or empty line is left behind;
  * when it was the first claim of its line, its line prefix (a list marker, the line break) is carried over to
    the next kept claim of the same line ("- A. B." without A is "- B."), or dropped with the whole line when the
    line has no kept claim left;
  * the text's very first kept claim loses whitespace that only a removal put in front of it;
  * numbered list items after a removed one are renumbered ("1. 2. 3." without 2 is "1. 2."), per indentation
    level, until a line that is not an item (nor blank) ends the list.
Joining the segments of a text with nothing removed gives the text back unchanged.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from ragtap.scoring.claims import Claim, split_claims

# A numbered list item's marker at the start of a line: indentation, number, "." or ")", then the spacing.
_ITEM = re.compile(r"([ \t]*)(\d{1,3})([.)])([ \t]+)$")
# A claim longer than this (a line without any sentence end) is cut here: memory per stream stays bounded.
MAX_CLAIM_CHARS = 2000


@dataclass(frozen=True, slots=True)
class Segment:
    """`text` = `prefix` + the claim's text (+ nothing after it).  `claim` offsets are into the whole answer;
    None for the text after the last claim.  `line_start`: the segment begins a line (text start or a newline)."""

    text: str
    start: int  # offset of `text` in the whole answer
    claim: Claim | None
    line_start: bool

    @property
    def prefix(self) -> str:
        return self.text if self.claim is None else self.text[: self.claim.start - self.start]

    @property
    def new_line(self) -> bool:
        """The segment's claim is the first of its line (the prefix holds a line break, or the text starts here)."""
        return self.line_start or "\n" in self.prefix or "\r" in self.prefix


class SegmentCutter:
    """Feed answer text in pieces; each `feed` returns the segments completed by it, `finish` the rest."""

    def __init__(self, max_claim_chars: int = MAX_CLAIM_CHARS) -> None:
        self.max_claim_chars = max_claim_chars
        self._pending = ""  # text after the last complete segment
        self._base = 0  # offset of `_pending` in the whole answer
        self._line_start = True  # `_pending` begins a line

    def feed(self, text: str) -> list[Segment]:
        self._pending += text
        return self._take(final=False)

    def finish(self) -> list[Segment]:
        segments = self._take(final=True)
        if self._pending:
            segments.append(Segment(self._pending, self._base, None, self._line_start))
            self._advance(len(self._pending))
        return segments

    def _take(self, *, final: bool) -> list[Segment]:
        pending = self._pending
        claims = split_claims(pending)
        out: list[Segment] = []
        cursor = 0
        for index, claim in enumerate(claims):
            complete = final or index + 1 < len(claims) or any(c in pending[claim.end :] for c in "\n\r")
            if not complete:
                if claim.end - cursor > self.max_claim_chars:  # no end in sight: cut it here
                    cut = dataclasses.replace(claim, text=pending[claim.start :], end=len(pending), checked="")
                    out.append(self._segment(pending, cursor, cut))
                    cursor = len(pending)
                break
            out.append(self._segment(pending, cursor, claim))
            cursor = claim.end
        if not claims and len(pending) > self.max_claim_chars:  # no claim at all (no letters): pass it on
            out.append(Segment(pending, self._base, None, self._line_start))
            cursor = len(pending)
        if cursor:
            self._pending = pending[cursor:]
            self._advance_base(pending, cursor)
        return out

    def _segment(self, pending: str, cursor: int, claim: Claim) -> Segment:
        base = self._base
        where = dataclasses.replace(claim, start=base + claim.start, end=base + claim.end)  # (its framing and checked text kept)
        return Segment(pending[cursor : claim.end], base + cursor, where, self._line_start if cursor == 0 else pending[cursor - 1] in "\n\r")

    def _advance_base(self, pending: str, cursor: int) -> None:
        self._line_start = pending[cursor - 1] in "\n\r"
        self._base += cursor

    def _advance(self, length: int) -> None:
        self._line_start = self._pending[-1] in "\n\r"
        self._base += length
        self._pending = ""


class Splicer:
    """Joins segments, in order, each kept or removed; `keep` returns the text to emit for a kept segment."""

    def __init__(self) -> None:
        self.emitted = False  # some text was emitted already
        self.removed = 0  # claims removed so far
        self._carry: str | None = None  # the line prefix of a removed first-of-line claim, for the next claim of its line
        self._shifts: dict[str, int] = {}  # indentation of a numbered list -> items removed from it so far

    def drop(self, segment: Segment) -> None:
        self.removed += 1
        if segment.new_line or self._carry is None:
            self._carry = segment.prefix
        self._track_list(segment, kept=False)

    def keep(self, segment: Segment) -> str:
        prefix, rest = segment.prefix, segment.text[len(segment.prefix) :]
        if self._carry is not None:
            if not segment.new_line:  # the same line as a removed claim: that claim's line prefix comes back
                prefix = self._carry if segment.claim is not None else prefix
                if segment.claim is None:  # trailing text of a line whose claims went: the line is gone
                    prefix = ""
            self._carry = None
        prefix = self._track_list(segment, kept=True, prefix=prefix)
        text = prefix + rest
        if not self.emitted and self.removed:
            text = text.lstrip()  # whitespace that only led up to a removed claim
        if text:
            self.emitted = True
        return text

    def _track_list(self, segment: Segment, *, kept: bool, prefix: str | None = None) -> str:
        """Renumber a kept item after removed ones; note a removed item; a line that is no item ends the lists
        at its indentation and deeper.  Returns the (possibly renumbered) prefix."""
        own = segment.prefix
        prefix = own if prefix is None else prefix
        if not segment.new_line:
            return prefix
        line = re.split(r"[\r\n]", own)[-1]
        item = _ITEM.fullmatch(line) if segment.claim is not None else None
        if item is None:
            if line.strip() or (segment.claim is not None):
                depth = len(line) - len(line.lstrip(" \t"))
                self._shifts = {indent: n for indent, n in self._shifts.items() if len(indent) < depth}
            return prefix
        indent, number = item.group(1), int(item.group(2))
        for deeper in [i for i in self._shifts if len(i) > len(indent)]:
            del self._shifts[deeper]
        shift = self._shifts.get(indent, 0)
        if not kept:
            self._shifts[indent] = shift + 1
            return prefix
        if shift and number - shift >= 1 and prefix.endswith(line):
            renumbered = f"{indent}{number - shift}{item.group(3)}{item.group(4)}"
            return prefix[: len(prefix) - len(line)] + renumbered
        return prefix


def splice(segments: list[Segment], removed: set[tuple[int, int]]) -> tuple[str, int]:
    """The text of `segments` without the claims whose (start, end) is in `removed`; and how many were removed."""
    splicer = Splicer()
    parts = []
    for segment in segments:
        if segment.claim is not None and (segment.claim.start, segment.claim.end) in removed:
            splicer.drop(segment)
        else:
            parts.append(splicer.keep(segment))
    return "".join(parts), splicer.removed
