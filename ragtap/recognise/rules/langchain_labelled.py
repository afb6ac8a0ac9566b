"""LangChain `rlm/rag-prompt` and the hand-written `Context:`/`Question:`/`Answer:` layout."""

from __future__ import annotations


from ragtap.recognise.text import find_label, make_context, rfind_label, split_documents
from ragtap.types import RagContext

# --------------------------------------------------------------------------------------------------------------
# LangChain prompts
# --------------------------------------------------------------------------------------------------------------


def langchain_labelled(text: str) -> RagContext | None:
    """LangChain hub `rlm/rag-prompt`, one user message, question BEFORE context::

        "You are an assistant for question-answering tasks. Use the following pieces of retrieved context to "
        "answer the question. If you don't know the answer, just say that you don't know. Use three sentences "
        "maximum and keep the answer concise.\\nQuestion: {question} \\nContext: {context} \\nAnswer:"

    and the common hand-written variant with the context first (`Context: {context}\\nQuestion: {question}\\n
    Answer:`, any preamble).  The labels must start a line and the message must end with an `Answer:` cue line
    (`Helpful Answer:` etc.), which keeps a user who merely writes "Context:" in a chat from matching.

    Question first: the question runs from the first `Question:` to the first `Context:` after it (the question
    is short and user-typed), the context to the final `Answer:`.  Context first: the question starts at the
    *last* `Question:` line, since retrieved documents (FAQs!) may contain `Question:` lines themselves.
    Documents are the context's blank-line separated paragraphs (`format_docs` joins with "\\n\\n").

    The LangGraph agentic-RAG tutorial's `GENERATE_PROMPT` is `rlm/rag-prompt` without the `Answer:` cue line (it
    ends with `Context: {context}`).  Without the cue the exact rlm sentence stands in for it: the message must
    say "Use the following pieces of retrieved context" and put `Question:` before `Context:`; the context runs to
    the end of the message.
    """
    if "Context:" not in text or "Question:" not in text:
        return None
    body = text.rstrip()
    if not body.endswith("Answer:"):
        return _rlm_without_cue(body)
    cue = body.rfind("\n")
    if cue < 0 or len(body) - cue > 32:
        return None
    body = body[:cue]
    q = find_label(body, "Question:")
    c = find_label(body, "Context:")
    if q < 0 or c < 0:
        return None
    if q < c:
        question = body[q + len("Question:") : c]
        context = body[c + len("Context:") :]
    else:
        q = rfind_label(body, "Question:", c)
        context = body[c + len("Context:") : q]
        question = body[q + len("Question:") :]
    return make_context(question, split_documents(context), "langchain")


_RLM_SENTENCE = "Use the following pieces of retrieved context"


def _rlm_without_cue(body: str) -> RagContext | None:
    """`rlm/rag-prompt` ending with its context (LangGraph's agentic-RAG `GENERATE_PROMPT`): question first."""
    if _RLM_SENTENCE not in body:
        return None
    q = find_label(body, "Question:")
    c = find_label(body, "Context:", q) if q >= 0 else -1
    if c < 0:
        return None
    return make_context(body[q + len("Question:") : c], split_documents(body[c + len("Context:") :]), "langchain")
