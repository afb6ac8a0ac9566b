"""Splitting a complete (non-streamed) injected reply into the app's answer and the supporting content.

`split_reply` runs the streaming extractor (`ragtap.split.stream`) over the whole text, so a reply is judged by
the same rule whether it was streamed or not, and the JSON-string decoding rules live in one place.  The rule:
only a top-level `answer` string of a top-level JSON object (after optional whitespace and an opening code
fence; after it only whitespace and the closing fence) is the answer.  Anything else -- prose before or after
the object, an `answer` nested inside another value, a non-string answer, a syntax error in the object -- and
the app gets the upstream text unchanged, `recovered=False`, with `unscored_reason` saying why (one of
`ragtap.split.stream.REASONS`).  Where a stream differs it is only because it has already forwarded the answer
when the problem shows (text after the object is then forwarded after the answer); a whole reply can still be
given back unchanged.
"""

from __future__ import annotations

from ragtap.split.stream import EMPTY, INVALID_JSON, TEXT_AFTER_JSON, extract
from ragtap.types import SplitReply


def split_reply(content: str | None, *, truncated: bool = False, lead_in: int = 0) -> SplitReply:
    """Split a complete reply; `truncated` is True when the upstream's finish_reason was "length".  `lead_in`:
    the characters of preamble allowed before the object (an API without a JSON mode); text after the object
    then follows the answer, as a stream forwards it."""
    if not content:
        return SplitReply(answer="", supporting=None, recovered=False, unscored_reason=EMPTY)
    result = extract(content, truncated=truncated, lead_in=lead_in)
    if result.mode == "raw":
        return SplitReply(answer=content, supporting=None, recovered=False, unscored_reason=result.unscored_reason)
    if result.syntax_error:
        return SplitReply(answer=content, supporting=None, recovered=False, unscored_reason=INVALID_JSON)
    if result.unscored_reason == TEXT_AFTER_JSON and not lead_in:
        return SplitReply(answer=content, supporting=None, recovered=False, unscored_reason=result.unscored_reason)
    return result.to_split_reply()
