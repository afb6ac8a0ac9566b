"""LlamaIndex query engine, `refine` response mode (and `compact` beyond the first chunk): the
`CHAT_REFINE_PROMPT` user message::

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


def refine_gate(text: str) -> bool:
    return _QUERY in text and _MORE in text


def llamaindex_refine(text: str) -> RagContext | None:
    q = text.find(_QUERY)
    a = text.find(_ANSWER, q)
    m = text.find(_MORE, a)
    e = text.rfind(_END, m)
    if min(q, a, m, e) < 0:
        return None
    question = text[q + len(_QUERY) : a]
    return make_context(question, split_documents(text[m + len(_MORE) : e]), "llamaindex_refine")
