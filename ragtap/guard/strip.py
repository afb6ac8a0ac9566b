"""`strip`: the answer without its unsupported claims (whole sentences or list items), the rest byte for byte.

The claims are named by their character offsets in the answer (`ClaimSupport.start`/`end`, as the scorer cut
them); a claim whose offsets do not hold its text in this answer is left alone (it was cut from another text).
The cutting and joining rules are `ragtap.guard.segments`'.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ragtap.guard.segments import SegmentCutter, splice
from ragtap.types import ClaimSupport


@dataclass(frozen=True, slots=True)
class StripResult:
    text: str
    removed: int  # claims removed
    empty: bool  # no claim is left: there is nothing to deliver


def strip_claims(answer: str, claims: Sequence[ClaimSupport], note: str = "") -> StripResult:
    targets = {(c.start, c.end) for c in claims if c.of == "answer" and answer[c.start : c.end] == c.text}
    cutter = SegmentCutter(max_claim_chars=len(answer) + 1)  # a whole text: cut exactly as the scorer did
    segments = cutter.feed(answer) + cutter.finish()
    text, removed = splice(segments, targets)
    if removed == 0:
        return StripResult(answer, 0, False)
    kept_claims = sum(1 for s in segments if s.claim is not None) - removed
    if kept_claims <= 0:
        return StripResult("", removed, True)
    if note:
        text = text.rstrip() + "\n\n" + note + text[len(text.rstrip()) :]
    return StripResult(text, removed, False)
