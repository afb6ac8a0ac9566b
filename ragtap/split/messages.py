"""Splitting a complete reply of the Anthropic Messages API (`{"type": "message", "content": [blocks], ...}`).

An injected reply: the split text is the first `text` block.  Claude has no JSON mode, so the one answer rule
(`ragtap.split.stream`) runs with a lead-in allowance (`LEAD_IN_CHARS`): a short preamble before the object ("Here
is the JSON:") is dropped, a code fence is fine, and text after the object follows the answer (as a stream
forwards it: the app loses nothing the model wrote but the JSON scaffolding and the supporting content).  A
reply that is not such an object reaches the app unchanged.

A reply written with citations (not injected): the answer is every text block joined, as the SDKs show it; the
supporting content is the spans Claude cited (`cited_text`), in order, each once (verbatim document text: the
scorer's attributed document is then the cited one).
"""

from __future__ import annotations

from typing import Any

from ragtap.split.reply import split_reply
from ragtap.types import SplitReply

# How much text before the JSON object a Messages reply may have and still be split (a preamble such as "Here is
# the JSON you asked for:"); beyond, the reply is the model's own prose and reaches the app unchanged.  In a
# stream this much text is held back before the first answer text (about 40 tokens).
LEAD_IN_CHARS = 160
NO_CITATIONS = "no_citations"  # a reply to documents with citations enabled that cited nothing


def first_text_block(message: dict[str, Any]) -> dict[str, Any] | None:
    content = message.get("content")
    for block in content if isinstance(content, list) else ():
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
            return block
    return None


def was_truncated(message: dict[str, Any]) -> bool:
    """The Messages form of finish_reason "length"."""
    return message.get("stop_reason") == "max_tokens"


def split_message(message: dict[str, Any]) -> SplitReply | None:
    """Split an injected reply in place (its first text block); None when it has no text block (a refusal, ...)."""
    block = first_text_block(message)
    if block is None:
        return None
    split = split_reply(block["text"], truncated=was_truncated(message), lead_in=LEAD_IN_CHARS)
    block["text"] = split.answer
    return split


def reply_text(message: dict[str, Any]) -> str | None:
    """Every text block joined (what an SDK shows as the reply's text), or None without one."""
    content = message.get("content")
    texts = [b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)] \
        if isinstance(content, list) else []
    return "".join(texts) if texts else None


class CitedSpans:
    """The spans a reply cited, in order, each once (a span cited twice, from one document, counts once)."""

    __slots__ = ("seen", "texts")

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.seen: set[tuple[Any, str]] = set()

    def add(self, citation: Any) -> None:
        if not isinstance(citation, dict) or not isinstance(text := citation.get("cited_text"), str) or not text.strip():
            return
        where = citation.get("document_index", citation.get("search_result_index", citation.get("url")))
        if (where, text) in self.seen:
            return
        self.seen.add((where, text))
        self.texts.append(text.strip())

    @property
    def supporting(self) -> str | None:
        return "\n".join(self.texts) if self.texts else None


def cited_reply(message: dict[str, Any]) -> tuple[str | None, CitedSpans]:
    """The answer (every text block joined) and the spans cited in a reply written with citations."""
    spans = CitedSpans()
    content = message.get("content")
    for block in content if isinstance(content, list) else ():
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("citations"), list):
            for citation in block["citations"]:
                spans.add(citation)
    return reply_text(message), spans
