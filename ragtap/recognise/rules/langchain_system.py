"""LangChain chat "stuff" / tutorial prompts: the context in the system message."""

from __future__ import annotations

import re

from ragtap.recognise.text import find_label, make_context, split_documents
from ragtap.types import RagContext

_STUFF_CHAT_INTRO = "Use the following pieces of context to answer the user's question."
_RETRIEVED_CONTEXT_INTRO = "Use the following pieces of retrieved context to answer the question."
_DASH_LINE = re.compile(r"\n[ \t]*-{3,}[ \t]*\r?\n")


def langchain_system(system_text: str, question: str) -> RagContext | None:
    """LangChain prompts that put the context in the system message and the bare question in the user message.

    `RetrievalQA` with a chat model (`stuff_prompt.CHAT_PROMPT`, 16 dashes)::

        Use the following pieces of context to answer the user's question.␣
        If you don't know the answer, just say that you don't know, don't try to make up an answer.
        ----------------
        {context}

    and the `create_stuff_documents_chain` / `create_retrieval_chain` example of the LangChain docs::

        You are an assistant for question-answering tasks. Use the following pieces of retrieved context to
        answer the question. If you don't know the answer, say that you don't know. Use three sentences maximum
        and keep the answer concise.

        {context}

    (␣: a trailing space.)  The context runs from the dash line (first form) or the first blank line (second
    form) after the intro to the end of the message.  A system message laid out like `rlm/rag-prompt` (with a
    `Question:` label) is left alone: that prompt is recognised in the user message only.
    """
    i = system_text.find(_STUFF_CHAT_INTRO)
    if i >= 0:
        m = _DASH_LINE.search(system_text, i)
        if m is None:
            return None
        return make_context(question, split_documents(system_text[m.end() :]), "langchain")
    i = system_text.find(_RETRIEVED_CONTEXT_INTRO)
    if i >= 0 and find_label(system_text, "Question:") < 0:
        start = system_text.find("\n\n", i)
        if start < 0:
            return None
        return make_context(question, split_documents(system_text[start:]), "langchain")
    return None
