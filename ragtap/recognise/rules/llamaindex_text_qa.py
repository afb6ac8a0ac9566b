"""LlamaIndex query engine: the text-QA template in the last user message."""

from __future__ import annotations


from ragtap.recognise.text import is_dash_line, make_context, split_documents, strip_answer_line
from ragtap.types import RagContext

# --------------------------------------------------------------------------------------------------------------
# LlamaIndex query engine: text-QA template (user message)
# --------------------------------------------------------------------------------------------------------------

_TEXT_QA_HEADERS = ("Context information is below.", "Context information from multiple sources is below.")


def llamaindex_text_qa(text: str) -> RagContext | None:
    """LlamaIndex's text-QA prompt, the user message of a query engine (`CHAT_TEXT_QA_PROMPT`)::

        Context information is below.
        ---------------------
        {context_str}
        ---------------------
        Given the context information and not prior knowledge, answer the query.
        Query: {query_str}
        Answer:

    (21 dashes; "Answer: " ends with a space.)  It comes with LlamaIndex's own system message ("You are an
    expert Q&A system that is trusted around the world. ..."), which is not needed to recognise it.  The
    tree-summarize variant ("Context information from multiple sources is below." ... "Given the information
    from multiple sources and not prior knowledge, answer the query.") has the same shape and is accepted too.
    The refine template is out of scope.

    `context_str` is the nodes joined by a blank line, each node `file_path: ...` + blank line + text when it
    was loaded from a file (split by `split_documents`).  The context ends at the dash line right before the
    *last* "Given the ..." line, so documents may contain dash lines of their own.
    """
    for header in _TEXT_QA_HEADERS:
        h = text.find(header)
        if h >= 0:
            break
    else:
        return None
    # Opening fence: the line right after the header.
    open_start = text.find("\n", h) + 1
    open_end = text.find("\n", open_start)
    if open_start <= 0 or open_end < 0 or not is_dash_line(text[open_start:open_end]):
        return None
    # Closing fence + "Given the ..." line: the last such pair, so neither a document nor a multi-line query
    # that happens to contain "Given the" can end the context early.
    given = text.rfind("\nGiven the ", open_end)
    while given >= 0:
        close_start = text.rfind("\n", 0, given) + 1
        if close_start > open_end and is_dash_line(text[close_start:given]):
            break
        given = text.rfind("\nGiven the ", open_end, given)
    else:
        return None
    query = text.find("\nQuery:", given)
    if query < 0:
        return None
    context = text[open_end + 1 : close_start]
    question = strip_answer_line(text[query + len("\nQuery:") :])
    return make_context(question, split_documents(context), "llamaindex_text_qa")
