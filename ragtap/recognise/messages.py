"""Recognise RAG requests to the Anthropic Messages API (`POST /v1/messages`).

Claude has its own places for retrieved text, read first:
- `document` blocks (in any user turn, or inside a `tool_result`): a `text` source (`data`), a `content` source
  (a string, or text blocks joined by newlines), with `title` as the document's id.  A
  `base64`, `url` or `file` source (a PDF, usually) is a document ragtap cannot read: the request is then not
  scored at all (`unreadable_documents`), since scores against the readable part alone would mislead;
- `search_result` blocks (the same places): their text blocks joined, `source` as the id.
The question is the text of the last user turn (its `text` blocks; a turn holding only `tool_result` blocks is
the tool's answer, not the user's).  Without such blocks the request is read as the chat request it amounts to
(`messages_view`) and `recognise` runs on it, so every chat rule applies as is: `system` (a string, or its text
blocks) is a system message; each turn keeps its role and its text; a `tool_result` block becomes a `tool`
message carrying its text (the tool rule reads it).  The explicit `ragtap` field and config patterns win over
everything, as for chat.

Who owns the reply format, in Messages terms (then the context is kept for the scores that need no supporting
content, and `inject` is False): `tools` or `mcp_servers` ("client_tools"), extended thinking (`thinking` enabled or adaptive:
"client_thinking"), a reply format of its own (`output_config.format`: "client_response_format"), and a
prefill (the last turn is the assistant's: "client_prefill", the reply continues the app's text).  With
`citations` enabled on the documents ("client_citations"), Claude marks the spans it relies on: ragtap injects
nothing and reads those spans as the supporting content (`ragtap.split.messages.cited_reply`).
Never raises, never mutates.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragtap.recognise.custom import CustomPattern
from ragtap.recognise.recogniser import Recognition, recognise
from ragtap.recognise.text import make_context
from ragtap.types import Document

DOCUMENT_SOURCE = "anthropic_documents"  # RagContext.source of documents read from document / search_result blocks
_READABLE_SOURCES = frozenset({"text", "content"})
_EXPLICIT = frozenset({"explicit", "custom_pattern", "disabled", "explicit_empty"})


def recognise_messages(body: Any, patterns: Sequence[CustomPattern] = ()) -> Recognition:
    """`recognise` for a decoded Messages request body (see the module docstring)."""
    if not isinstance(body, dict):
        return recognise(body, patterns)
    try:
        return _recognise(body, patterns)
    except Exception:  # noqa: BLE001 - recognition must never break the request path
        return Recognition(None, False, "ragtap" in body, "internal_error")


def _recognise(body: dict[str, Any], patterns: Sequence[CustomPattern]) -> Recognition:
    messages = body.get("messages")
    view = messages_view(body)
    if not isinstance(messages, list):
        view["messages"] = messages  # (the chat rules' own verdict on it: "bad_messages", unless the ragtap field)
        return recognise(view, patterns)
    found = recognise(view, patterns)
    if found.reason not in _EXPLICIT:
        documents, unreadable, citations = document_blocks(messages)
        if unreadable:
            return Recognition(None, False, found.strip_ragtap_field, "unreadable_documents", found.field_problem)
        if documents:
            context = make_context(question_text(messages), documents, DOCUMENT_SOURCE)
            if context is not None:
                reason = "client_citations" if citations else DOCUMENT_SOURCE
                found = Recognition(context, not citations, found.strip_ragtap_field, reason, found.field_problem)
    if found.context is None or not found.inject:
        return found
    client = client_owned_format(body)
    return found if client is None else Recognition(found.context, False, found.strip_ragtap_field, client, found.field_problem)


def client_owned_format(body: dict[str, Any]) -> str | None:
    """Why ragtap must not add its instruction to this Messages request, or None."""
    if body.get("tools") or body.get("mcp_servers"):  # (MCP servers offer tools too: the beta API)
        return "client_tools"
    thinking = body.get("thinking")
    if isinstance(thinking, dict) and thinking.get("type") not in (None, "disabled"):
        return "client_thinking"
    output = body.get("output_config")
    if isinstance(output, dict) and output.get("format") is not None:
        return "client_response_format"
    messages = body.get("messages")
    if isinstance(messages, list) and messages and isinstance(messages[-1], dict) and messages[-1].get("role") == "assistant":
        return "client_prefill"
    return None


def block_text(content: Any) -> str:
    """A content value as text: a string, or its `text` blocks joined by newlines (other blocks ignored)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str))
    return ""


def _only_tool_results(content: Any) -> bool:
    return isinstance(content, list) and bool(content) and all(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)


def question_text(messages: list[Any]) -> str:
    """The text of the last user turn that is not only tool results."""
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user" and not _only_tool_results(message.get("content")):
            return block_text(message.get("content"))
    return ""


def messages_view(body: dict[str, Any]) -> dict[str, Any]:
    """The chat-completions request a Messages request amounts to, for recognition only (never forwarded)."""
    out: list[dict[str, Any]] = []
    system = block_text(body.get("system"))
    if system:
        out.append({"role": "system", "content": system})
    messages = body.get("messages")
    for message in messages if isinstance(messages, list) else ():
        if not isinstance(message, dict) or not isinstance(role := message.get("role"), str):
            continue
        content = message.get("content")
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    out.append({"role": "tool", "content": block_text(block.get("content"))})
            if _only_tool_results(content):
                continue
        out.append({"role": role, "content": block_text(content)})
    view: dict[str, Any] = {"messages": out}
    if "ragtap" in body:
        view["ragtap"] = body["ragtap"]
    return view


def _blocks(messages: list[Any]) -> list[dict[str, Any]]:
    """The document and search_result blocks of the request, in order (the order of Claude's citation indices)."""
    found: list[dict[str, Any]] = []
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else ():
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind in ("document", "search_result"):
                found.append(block)
            elif kind == "tool_result" and isinstance(block.get("content"), list):
                found.extend(b for b in block["content"] if isinstance(b, dict) and b.get("type") in ("document", "search_result"))
    return found


def document_blocks(messages: list[Any]) -> tuple[list[Document], bool, bool]:
    """(the readable documents, whether some document could not be read, whether citations are enabled)."""
    documents: list[Document] = []
    unreadable = citations = False
    for block in _blocks(messages):
        config = block.get("citations")
        citations = citations or (isinstance(config, dict) and config.get("enabled") is True)
        if block["type"] == "search_result":
            text = block_text(block.get("content"))
            source = block.get("source")
            documents.append(Document(text=text, id=source if isinstance(source, str) and source else None))
            continue
        source = block.get("source")
        kind = source.get("type") if isinstance(source, dict) else None
        if kind not in _READABLE_SOURCES:
            unreadable = True
            continue
        text = source.get("data") if kind == "text" else block_text(source.get("content"))
        if not isinstance(text, str):
            unreadable = True
            continue
        title = block.get("title")
        documents.append(Document(text=text, id=title if isinstance(title, str) and title else None))
    return documents, unreadable, citations
