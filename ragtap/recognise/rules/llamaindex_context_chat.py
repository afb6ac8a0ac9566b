"""LlamaIndex chat engine, `context` mode: the context in the system message, the bare question last."""

from __future__ import annotations


from ragtap.recognise.text import make_context, split_documents
from ragtap.types import RagContext

# --------------------------------------------------------------------------------------------------------------
# LlamaIndex chat engine, `context` mode (system message + bare question)
# --------------------------------------------------------------------------------------------------------------

_CONTEXT_CHAT_HEADERS = ("Use the context information below to assist the user.", "Context information is below.")
_FENCE_20 = "-" * 20


def llamaindex_context_chat(system_text: str, question: str) -> RagContext | None:
    """LlamaIndex `ContextChatEngine` (chat_mode="context"): the system message is `DEFAULT_CONTEXT_TEMPLATE`
    followed by the engine's own system prompt, if any::

        Use the context information below to assist the user.
        --------------------
        {context_str}
        --------------------
        {system_prompt}

    (20 dashes), then the chat history, then the bare question as the last user message (passed in here).
    Older releases used the header "Context information is below." with the same 20-dash fences; accepted too.

    The context runs to the *last* line of exactly 20 dashes: the retrieved documents (many, arbitrary) are more
    likely to contain such a line than the app's one system prompt after the fence.
    """
    for header in _CONTEXT_CHAT_HEADERS:
        h = system_text.find(header)
        if h >= 0:
            break
    else:
        return None
    open_start = system_text.find("\n", h) + 1
    if open_start <= 0 or not system_text.startswith(_FENCE_20 + "\n", open_start):
        return None
    body_start = open_start + len(_FENCE_20) + 1
    # The closing fence must be a whole line: followed by a newline or the end of the message.
    close = system_text.rfind("\n" + _FENCE_20, body_start - 1)
    while close >= body_start - 1:
        end = close + 1 + len(_FENCE_20)
        if end == len(system_text) or system_text[end] in "\r\n":
            context = system_text[body_start:close]
            return make_context(question, split_documents(context), "llamaindex_context_chat")
        close = system_text.rfind("\n" + _FENCE_20, body_start - 1, close)
    return None
