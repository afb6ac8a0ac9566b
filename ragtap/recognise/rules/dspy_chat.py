"""DSPy's `ChatAdapter` (the default adapter): every input field is a section of the last user message under a
`[[ ## name ## ]]` marker, e.g. for `dspy.ChainOfThought("context, question -> response")`::

    [[ ## context ## ]]
    [1] «first passage»
    [2] «second passage»

    [[ ## question ## ]]
    What is ...?

    Respond with the corresponding output fields, starting with the field `[[ ## reasoning ## ]]`, ...

A list of strings is written as `[N] «text»` items (a passage with a newline as `«««` ... `»»»`, its lines
indented by four spaces), one string as `«text»` or plain, other lists as JSON.  The field names are the app's:
the context is the first field whose name says context/passages/documents/sources/knowledge/retrieved, the
question the first whose name says question/query; without both it is not this rule.
"""

from __future__ import annotations

import re

from ragtap.recognise.text import make_context, split_documents
from ragtap.types import RagContext

try:  # orjson is a dependency of ragtap; the stdlib fallback keeps this module importable on its own.
    from orjson import loads as _json_loads
except ImportError:  # pragma: no cover
    from json import loads as _json_loads

_MARKER = re.compile(r"^\[\[ ## (\w+) ## \]\][ \t]*$", re.MULTILINE)
_CONTEXT_WORDS = ("context", "passage", "document", "source", "knowledge", "retrieved", "snippet", "evidence")
_QUESTION_WORDS = ("question", "query")
_OUTPUT_REQUIREMENTS = "\n\nRespond with the corresponding output fields"
_ITEM = re.compile(r"^\[\d+\] ", re.MULTILINE)


def dspy_gate(text: str) -> bool:
    """The adapter ends the user message with its output requirements ("... and then ending with the marker for
    `[[ ## completed ## ]]`."): test only the tail, so a long plain chat costs no full scan."""
    return "[[ ## completed ## ]]" in text[-160:]


def _unwrap(item: str) -> str:
    item = item.strip()
    if item.startswith("«««") and item.endswith("»»»"):
        return "\n".join(line[4:] if line.startswith("    ") else line for line in item[3:-3].strip("\n").split("\n"))
    if item.startswith("«") and item.endswith("»"):
        return item[1:-1]
    return item


def _documents(value: str) -> list[str]:
    value = value.strip()
    if _ITEM.match(value):
        return [_unwrap(part) for part in _ITEM.split(value) if part.strip()]
    if value.startswith("["):
        try:
            decoded = _json_loads(value)
        except ValueError:
            decoded = None
        if isinstance(decoded, list) and all(isinstance(x, str) for x in decoded):
            return decoded
    return split_documents(_unwrap(value))


def dspy_chat(text: str) -> RagContext | None:
    markers = list(_MARKER.finditer(text))
    if len(markers) < 2:
        return None
    end = text.find(_OUTPUT_REQUIREMENTS, markers[-1].end())
    sections: dict[str, str] = {}
    for i, marker in enumerate(markers):
        stop = markers[i + 1].start() if i + 1 < len(markers) else (end if end >= 0 else len(text))
        sections.setdefault(marker.group(1).lower(), text[marker.end() : stop])
    context = next((v for k, v in sections.items() if any(w in k for w in _CONTEXT_WORDS)), None)
    question = next((v for k, v in sections.items() if any(w in k for w in _QUESTION_WORDS)), None)
    if context is None or question is None:
        return None
    return make_context(_unwrap(question), _documents(context), "dspy")
