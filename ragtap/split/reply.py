"""Splitting a complete (non-streamed) injected reply into the app's answer and the supporting content.

`split_reply` runs the streaming extractor (`ragtap.split.stream`) over the whole text, so a reply gives the
same answer whether it was streamed or not, and the JSON-string decoding rules live in one place.  A
complete reply allows one recovery a stream cannot make: when the reply does not start with our object
(prose or a wrapper object first), the object is looked for inside the text -- the first `{"` that starts an
object with an `answer` wins, and the prose around it is dropped, since by the instruction it is not the
answer.  A stream has already forwarded such text raw by the time the object appears.

The rule throughout: the app never gets a worse answer than the upstream gave.  When nothing can be
recovered the answer is the upstream text unchanged, `recovered=False`, and `unscored_reason` says why
(one of `ragtap.split.stream.REASONS`).
"""

from __future__ import annotations

import re

from ragtap.split.stream import EMPTY, StreamResult, extract
from ragtap.types import SplitReply

# Where an embedded object may start; bounded so a reply full of braces costs O(_MAX_CANDIDATES * n).
_OBJECT_START = re.compile(r'\{\s*"')
_MAX_CANDIDATES = 16


def split_reply(content: str | None, *, truncated: bool = False) -> SplitReply:
    """Split a complete reply; `truncated` is True when the upstream's finish_reason was "length"."""
    if not content:
        return SplitReply(answer="", supporting=None, recovered=False, unscored_reason=EMPTY)
    result = extract(content, truncated=truncated)
    if result.mode == "raw" and result.unscored_reason != EMPTY:
        embedded = _find_embedded(content, truncated)
        if embedded is not None:
            result = embedded
    return result.to_split_reply()


def _find_embedded(content: str, truncated: bool) -> StreamResult | None:
    for n, match in enumerate(_OBJECT_START.finditer(content)):
        if n >= _MAX_CANDIDATES:
            break
        if match.start() == 0:
            continue  # the extractor already read the text from here
        result = extract(content[match.start() :], truncated=truncated)
        if result.mode == "json":
            return result
    return None
