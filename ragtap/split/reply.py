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

import orjson

from ragtap.split.stream import DEFAULT_MAX_CHARS, EMPTY, INVALID_JSON, TEXT_AFTER_JSON, extract
from ragtap.types import SplitReply

_JSON_SPACE = " \t\n\r"
_KEYS = {"answer", "supporting_content"}


def _as_instructed(content: str) -> SplitReply | None:
    """The reply exactly as the instruction asks for it, split by orjson in C: `{"answer": "...",
    "supporting_content": "..."}`, both strings, nothing else, each key once, the answer not blank and not
    starting with whitespace, strict JSON (no fence, no trailing comma, no lone surrogate, no lenient escape).
    The extractor reaches the same split for such a reply (tests/test_split_reply.py checks it on generated ones)
    at ~10x the cost, being a per-character state machine in Python; anything else is left to it (None)."""
    if len(content) > DEFAULT_MAX_CHARS or content.count('"answer"') != 1 or content.count('"supporting_content"') != 1:
        return None  # (a key written twice: the extractor takes the first, orjson the last)
    text = content.strip(_JSON_SPACE)
    if not (text.startswith("{") and text.endswith("}")):
        return None
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(value, dict) or value.keys() != _KEYS:
        return None
    answer, supporting = value["answer"], value["supporting_content"]
    if not isinstance(answer, str) or not isinstance(supporting, str) or not answer.strip() or answer[0].isspace():
        return None
    return SplitReply(answer=answer, supporting=supporting, recovered=True, unscored_reason=None)


def split_reply(content: str | None, *, truncated: bool = False, lead_in: int = 0) -> SplitReply:
    """Split a complete reply; `truncated` is True when the upstream's finish_reason was "length".  `lead_in`:
    the characters of preamble allowed before the object (an API without a JSON mode); text after the object
    then follows the answer, as a stream forwards it."""
    if not content:
        return SplitReply(answer="", supporting=None, recovered=False, unscored_reason=EMPTY)
    if not truncated and not lead_in:
        fast = _as_instructed(content)
        if fast is not None:
            return fast
    return split_by_extractor(content, truncated=truncated, lead_in=lead_in)


def split_by_extractor(content: str, *, truncated: bool = False, lead_in: int = 0) -> SplitReply:
    """`split_reply` without its fast path: the extractor over the whole text (the rule itself)."""
    result = extract(content, truncated=truncated, lead_in=lead_in)
    if result.mode == "raw":
        return SplitReply(answer=content, supporting=None, recovered=False, unscored_reason=result.unscored_reason)
    if result.syntax_error:
        return SplitReply(answer=content, supporting=None, recovered=False, unscored_reason=INVALID_JSON)
    if result.unscored_reason == TEXT_AFTER_JSON and not lead_in:
        return SplitReply(answer=content, supporting=None, recovered=False, unscored_reason=result.unscored_reason)
    return result.to_split_reply()
