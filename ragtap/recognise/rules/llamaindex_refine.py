"""LlamaIndex query engine, `refine` response mode (and `compact`/`refine` beyond the first chunk): the refine
prompt sent after the first text-QA call.  For chat models (what an OpenAI-compatible app sends) it is
`CHAT_REFINE_PROMPT`, one user message (checked against llama-index-core 0.14.25 by tests/test_frameworks.py)::

    You are an expert Q&A system that strictly operates in two modes when refining existing answers:
    ...
    New Context: {context_msg}
    Query: {query_str}
    Original Answer: {existing_answer}
    New Answer:

The context runs to the last `Query:` line before the last `Original Answer:` line (the chunk may hold `Query:`
lines itself; the existing answer is the model's own earlier text).  The completion-model template is also
accepted::

    The original query is as follows: {query_str}
    We have provided an existing answer: {existing_answer}
    We have the opportunity to refine the existing answer (only if needed) with some more context below.
    ------------
    {context_msg}
    ------------
    Given the new context, refine the original answer to better answer the query. ...

The context runs from the fence after the "opportunity to refine" line to the last fence before "Given the new
context", so documents may hold dash lines of their own.
"""

from __future__ import annotations

from ragtap.recognise.text import make_context, split_documents
from ragtap.types import RagContext

_QUERY = "The original query is as follows: "
_ANSWER = "\nWe have provided an existing answer: "
_MORE = "with some more context below.\n------------\n"
_END = "\n------------\nGiven the new context, refine the original answer"


_CHAT_CONTEXT = "New Context: "
_CHAT_QUERY = "\nQuery: "
_CHAT_ORIGINAL = "\nOriginal Answer: "


def refine_gate(text: str) -> bool:
    return _CHAT_CONTEXT in text or (_QUERY in text and _MORE in text)


def _chat_refine(text: str) -> RagContext | None:
    c = text.find(_CHAT_CONTEXT)
    o = text.rfind(_CHAT_ORIGINAL, c)
    q = text.rfind(_CHAT_QUERY, c, o) if o >= 0 else -1
    if c < 0 or o < 0 or q < 0 or not text.rstrip().endswith("New Answer:"):
        return None
    if c > 0 and text[c - 1] != "\n":
        return None
    context = text[c + len(_CHAT_CONTEXT) : q]
    return make_context(text[q + len(_CHAT_QUERY) : o], split_documents(context), "llamaindex_refine")


def llamaindex_refine(text: str) -> RagContext | None:
    if _CHAT_CONTEXT in text:
        return _chat_refine(text)
    q = text.find(_QUERY)
    a = text.find(_ANSWER, q)
    m = text.find(_MORE, a)
    e = text.rfind(_END, m)
    if min(q, a, m, e) < 0:
        return None
    question = text[q + len(_QUERY) : a]
    return make_context(question, split_documents(text[m + len(_MORE) : e]), "llamaindex_refine")
