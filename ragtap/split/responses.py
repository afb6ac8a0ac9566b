"""Splitting an injected reply of the Responses API (a `response` object), in place.

The text ragtap splits is the first `output_text` part of the first `message` item of `output` (reasoning,
file search and other items before it are left alone; so are later parts and items).  After the split:
- that part's `text` is the answer, as `split_reply` recovers it (unchanged when it cannot be recovered);
- `output_text`, when the object carries that convenience field, is rebuilt from the output's text parts;
- the request settings the object echoes are put back as the app sent them (`restore_echo`): `instructions`
  (ragtap added its instruction there) and `text.format` (ragtap asked for `json_object`).
ids, status, usage and incomplete details are never touched.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ragtap.split.reply import split_reply
from ragtap.split.stream import extract
from ragtap.types import SplitReply

TEXT_FORMAT_DEFAULT: dict[str, Any] = {"type": "text"}


@dataclass(frozen=True, slots=True)
class ClientEcho:
    """What the app sent for the settings a response object echoes, so the echo shows them, not ragtap's."""

    instructions: Any  # the request's `instructions` (None when absent)
    text_format: Any  # the request's `text.format` (None when absent: the upstream echoes {"type": "text"})


@dataclass(frozen=True, slots=True)
class TextPart:
    """Where the split text lives: output item `output_index`, its content part `content_index`."""

    output_index: int
    content_index: int
    part: dict[str, Any]


def first_text_part(response: dict[str, Any]) -> TextPart | None:
    """The first `output_text` part of the first `message` item, or None (a function call, a refusal, ...)."""
    output = response.get("output")
    for i, item in enumerate(output if isinstance(output, list) else ()):
        if not isinstance(item, dict) or item.get("type") != "message":
            continue
        content = item.get("content")
        for j, part in enumerate(content if isinstance(content, list) else ()):
            if isinstance(part, dict) and part.get("type") == "output_text" and isinstance(part.get("text"), str):
                return TextPart(i, j, part)
        return None
    return None


def was_truncated(response: dict[str, Any]) -> bool:
    """True when the upstream stopped at the output-token limit (the Responses form of finish_reason "length")."""
    details = response.get("incomplete_details")
    return response.get("status") == "incomplete" and isinstance(details, dict) and details.get("reason") == "max_output_tokens"


def output_text(response: dict[str, Any]) -> str:
    """The `output_text` convenience as the SDKs compute it: every output_text part of every message, joined."""
    texts: list[str] = []
    output = response.get("output")
    for item in output if isinstance(output, list) else ():
        if isinstance(item, dict) and item.get("type") == "message" and isinstance(item.get("content"), list):
            texts.extend(
                p["text"] for p in item["content"] if isinstance(p, dict) and p.get("type") == "output_text" and isinstance(p.get("text"), str)
            )
    return "".join(texts)


def restore_echo(response: dict[str, Any], echo: ClientEcho) -> None:
    """Put the app's own `instructions` and `text.format` back into a response object that echoes them."""
    if "instructions" in response:
        response["instructions"] = echo.instructions
    text = response.get("text")
    if isinstance(text, dict) and "format" in text:
        text["format"] = echo.text_format if echo.text_format is not None else dict(TEXT_FORMAT_DEFAULT)


def set_answer(response: dict[str, Any], where: TextPart, answer: str) -> None:
    where.part["text"] = answer
    if isinstance(response.get("output_text"), str):
        response["output_text"] = output_text(response)


def split_response(response: dict[str, Any], echo: ClientEcho, *, embedded: bool = True) -> SplitReply | None:
    """Split a complete response object in place; None (and nothing changed but the echo) without a text part.

    `embedded=False`: the stream extractor's reading (a reply that starts with the object; text after it is
    kept after the answer), for replies the model was not asked to write in JSON, and only for an object with
    ragtap's keys alone (`only_ours`: a user who asked for JSON of their own gets it as the model wrote it).
    Neither reading ever takes an object found inside prose (the one answer rule, ragtap.split.stream)."""
    restore_echo(response, echo)
    where = first_text_part(response)
    if where is None:
        return None
    truncated = was_truncated(response)
    text = where.part["text"]
    split = split_reply(text, truncated=truncated) if embedded or not text else extract(text, truncated=truncated, only_ours=True).to_split_reply()
    set_answer(response, where, split.answer)
    return split
