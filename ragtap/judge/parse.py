"""Robust parsing of a judge's JSON reply.

Judges are asked for a JSON object (and, by default, `response_format: json_object`), but compatible servers and
smaller models still wrap it in code fences, put prose around it, or leave a trailing comma.  `extract_json`
finds the first JSON object (or array) in the text; the metric code then checks its shape and, when the shape is
wrong, reports `None` with a reason instead of guessing a score.
"""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n?(.*?)```", re.DOTALL)
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")


class MalformedReply(ValueError):
    """The judge's reply does not have the shape a metric needs; the message is the reason reported."""


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return json.loads(_TRAILING_COMMA.sub(r"\1", text))


def _scan(text: str) -> Any:
    """The first decodable JSON object or array that starts at a '{' or '[' in `text`."""
    decoder = json.JSONDecoder()
    for opener in ("{", "["):
        position = text.find(opener)
        while position != -1:
            for candidate in (text[position:], _TRAILING_COMMA.sub(r"\1", text[position:])):
                try:
                    value, _ = decoder.raw_decode(candidate)
                except json.JSONDecodeError:
                    continue
                if isinstance(value, dict | list):
                    return value
            position = text.find(opener, position + 1)
    raise ValueError("no JSON object in the reply")


def extract_json(text: str | None) -> Any:
    """The JSON value in a judge reply (whole text, else a fenced block, else the first object/array found).

    Raises MalformedReply when there is none.  Objects are preferred to arrays when the text holds both.
    """
    if text is None or not text.strip():
        raise MalformedReply("empty reply")
    stripped = text.strip()
    try:
        return _loads(stripped)
    except json.JSONDecodeError:
        pass
    for block in _FENCE.findall(stripped):
        try:
            return _loads(block.strip())
        except json.JSONDecodeError:
            continue
    try:
        return _scan(stripped)
    except ValueError:
        raise MalformedReply("no JSON object in the reply") from None


def extract_object(text: str | None) -> dict[str, Any]:
    value = extract_json(text)
    if not isinstance(value, dict):
        raise MalformedReply(f"expected a JSON object, got a JSON {type(value).__name__}")
    return value


def as_flag(value: Any) -> int | None:
    """0/1 from the spellings judges use (0, 1, true, false, "yes", "no", "0", "1"); None for anything else."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int | float) and value in (0, 1):
        return int(value)
    if isinstance(value, str):
        word = value.strip().strip(".").lower()
        if word in ("1", "yes", "true", "y", "supported"):
            return 1
        if word in ("0", "no", "false", "n", "not supported", "unsupported"):
            return 0
    return None


def text_list(value: Any, field: str) -> list[str]:
    """A list of non-empty strings (a single string is a list of one); MalformedReply otherwise."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise MalformedReply(f"'{field}' is not a list")
    items = []
    for item in value:
        if isinstance(item, dict):  # {"statement": "..."} / {"text": "..."} / {"question": "..."}
            item = next((v for v in item.values() if isinstance(v, str)), None)
        if not isinstance(item, str):
            raise MalformedReply(f"'{field}' holds a non-string item")
        if item.strip():
            items.append(item.strip())
    return items
