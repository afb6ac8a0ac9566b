"""LlamaIndex `CitationQueryEngine`: numbered `Source N:` chunks under its citation template, one user message
(`CITATION_QA_TEMPLATE`, and `CITATION_REFINE_TEMPLATE` for further chunks; checked against llama-index-core
0.14.25 by tests/test_frameworks.py)::

    Please provide an answer based solely on the provided sources. ... For example:
    Source 1:
    The sky is red in the evening and blue in the morning.
    ...
    Now it's your turn. Below are several numbered sources of information:
    ------
    Source 1:
    {chunk}

    Source 2:
    {chunk}
    ------
    Query: {query_str}
    Answer:

The template's own example sources come before the "several numbered sources of information" sentence and are not
documents.  The context runs from the first `------` line after that sentence to the last `------` line followed
by `Query:` (a chunk may hold dash lines of its own); each `Source N:` line starts a document (the label dropped).
The template names no "context", so the rule has its own first gate; it reads only the last characters (the
`Answer:` cue), so a plain chat pays no extra scan for it.
"""

from __future__ import annotations

import re

from ragtap.recognise.text import make_context
from ragtap.types import RagContext

_MARK = "several numbered sources of information"
_OPEN = "\n------\n"
_CLOSE = "\n------\nQuery: "
_CUE = "\nAnswer:"
_SOURCE = re.compile(r"^Source \d{1,4}:[ \t]*\n", re.MULTILINE)


def citation_gate(text: str) -> bool:
    """O(1) on any text: the template ends with its `Answer: ` cue (the sentence is looked for only then)."""
    return text[-16:].rstrip().endswith("Answer:")


def llamaindex_citation(text: str) -> RagContext | None:
    mark = text.find(_MARK)
    start = text.find(_OPEN, mark) if mark >= 0 else -1
    end = text.rfind(_CLOSE)
    if start < 0 or end < start:
        return None
    tail = text[end + len(_CLOSE) :]
    cue = tail.rfind(_CUE)
    if cue < 0:
        return None
    context = text[start + len(_OPEN) : end]
    chunks = [chunk.strip() for chunk in _SOURCE.split(context)]
    return make_context(tail[:cue], [chunk for chunk in chunks if chunk], "llamaindex_citation")
