"""Recognise RAG requests to the Responses API (`POST /v1/responses`) with the chat-completions rules.

A Responses request is read as the chat request it amounts to (`chat_view`), and `recognise` runs on that, so
every rule (the `ragtap` field, config patterns, framework templates, XML blocks, tool results) applies as is:
- `instructions` (a string) is a system message, first;
- `input` as a string is one user message; as a list, each item in order:
  a message item (`{"role", "content"}`, with or without `"type": "message"`) keeps its role, its content read as
  text (a string, or the `input_text` / `output_text` / `text` parts joined by newlines; images and files are
  ignored); a `function_call_output` is a `tool` message carrying its `output`; a `file_search_call` with
  `results` is a `tool` message carrying the results' texts (as JSON `{"results": [{"text", "id"}]}`, which the
  tool rule reads as documents); a `function_call` is an assistant turn without text; other items (reasoning,
  web search calls, ...) carry nothing to recognise and are skipped.

Hosted file search (`tools: [{"type": "file_search", ...}]`): the documents are retrieved by the upstream while it
answers, so the request carries none.  `offers_file_search` tells the proxy to read them from the reply instead:
`file_search_context` takes the question from the request (its last user message) and the documents from the
reply's `file_search_call` items (`results` is filled only when the app asked for it with
`include: ["file_search_call.results"]`; without it there is nothing to score).

Who owns the reply format, in Responses terms: `text.format` other than `{"type": "text"}` (the client wants
JSON or a schema: "client_response_format"), non-empty `tools` ("client_tools"), and `background: true`
("client_background": the reply is fetched later, by another request ragtap does not split).  Then the context
is still returned (scores that need no supporting content) but `inject` is False.  Never raises, never mutates.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from ragtap.recognise.custom import CustomPattern
from ragtap.recognise.recogniser import Recognition, recognise
from ragtap.recognise.text import make_context
from ragtap.types import Document, RagContext

_TEXT_PART_TYPES = frozenset({"input_text", "output_text", "text"})


def recognise_responses(body: Any, patterns: Sequence[CustomPattern] = ()) -> Recognition:
    """`recognise` for a decoded Responses request body (see the module docstring)."""
    if not isinstance(body, dict):
        return recognise(body, patterns)
    try:
        view = chat_view(body)
    except Exception:  # noqa: BLE001 - recognition must never break the request path
        return Recognition(None, False, "ragtap" in body, "internal_error")
    found = recognise(view, patterns)
    if found.context is None or not found.inject:
        return found
    client = client_owned_format(body)
    return found if client is None else Recognition(found.context, False, found.strip_ragtap_field, client)


def chat_view(body: dict[str, Any]) -> dict[str, Any]:
    """The chat-completions request a Responses request amounts to, for recognition only (never forwarded)."""
    messages: list[dict[str, Any]] = []
    instructions = body.get("instructions")
    if isinstance(instructions, str) and instructions:
        messages.append({"role": "system", "content": instructions})
    items = body.get("input")
    if isinstance(items, str):
        messages.append({"role": "user", "content": items})
    elif isinstance(items, list):
        for item in items:
            message = _message(item)
            if message is not None:
                messages.append(message)
    view: dict[str, Any] = {"messages": messages}
    if "ragtap" in body:
        view["ragtap"] = body["ragtap"]
    return view


def _message(item: Any) -> dict[str, Any] | None:
    if not isinstance(item, dict):
        return None
    kind = item.get("type", "message")
    if kind == "message" and isinstance(role := item.get("role"), str):
        return {"role": role, "content": content_text(item.get("content"))}
    if kind == "function_call_output":
        return {"role": "tool", "content": content_text(item.get("output"))}
    if kind == "file_search_call":
        texts = file_search_texts(item)
        return {"role": "tool", "content": orjson.dumps({"results": texts}).decode()} if texts else None
    if kind == "function_call":
        return {"role": "assistant", "content": ""}
    return None


def content_text(content: Any) -> str:
    """A Responses message content (or function output) as text: a string, or its text parts joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            part["text"]
            for part in content
            if isinstance(part, dict) and part.get("type") in _TEXT_PART_TYPES and isinstance(part.get("text"), str)
        )
    return ""


def file_search_texts(item: dict[str, Any]) -> list[dict[str, str]]:
    """The retrieved texts of a `file_search_call` item (`results` is present when the app asked for it with
    `include: ["file_search_call.results"]`), each with its file id or name when there is one."""
    results = item.get("results")
    texts: list[dict[str, str]] = []
    for result in results if isinstance(results, list) else ():
        if isinstance(result, dict) and isinstance(text := result.get("text"), str) and text.strip():
            doc_id = result.get("file_id") or result.get("filename")
            texts.append({"text": text, "id": doc_id} if isinstance(doc_id, str) and doc_id else {"text": text})
    return texts


def client_owned_format(body: dict[str, Any]) -> str | None:
    """Why the client owns the reply format ("client_response_format", "client_tools", "client_background"), or None."""
    text = body.get("text")
    text_format = text.get("format") if isinstance(text, dict) else None
    if text_format is not None and not (isinstance(text_format, dict) and (not text_format or text_format.get("type") == "text")):
        return "client_response_format"
    if body.get("tools"):
        return "client_tools"
    if body.get("background") is True:
        return "client_background"
    return None


def offers_file_search(body: dict[str, Any]) -> bool:
    tools = body.get("tools")
    return isinstance(tools, list) and any(isinstance(tool, dict) and tool.get("type") == "file_search" for tool in tools)


def file_search_context(body: dict[str, Any], response: dict[str, Any]) -> RagContext | None:
    """The question of a request with hosted file search, and the documents its reply's search returned."""
    try:
        messages = chat_view(body)["messages"]
        question = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
        output = response.get("output")
        documents = [
            Document(text=found["text"], id=found.get("id"))
            for item in (output if isinstance(output, list) else ())
            if isinstance(item, dict) and item.get("type") == "file_search_call"
            for found in file_search_texts(item)
        ]
        return make_context(question, documents, "file_search") if isinstance(question, str) else None
    except Exception:  # noqa: BLE001 - recognition must never break the request path
        return None
