"""Tool-role retrieval results after the last user message (agent-style RAG)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragtap.recognise.text import make_context, message_text, split_documents
from ragtap.types import Document, RagContext

try:  # orjson is a dependency of ragtap; the stdlib fallback keeps this module importable on its own.
    from orjson import loads as _json_loads
except ImportError:  # pragma: no cover
    from json import loads as _json_loads

# --------------------------------------------------------------------------------------------------------------
# Tool-role retrieval results (agent-style RAG)
# --------------------------------------------------------------------------------------------------------------

_DOC_TEXT_KEYS = ("page_content", "text", "content")
_DOC_ID_KEYS = ("id", "url")
_DOC_LIST_KEYS = ("documents", "results", "docs")
_NOT_JSON = object()


def _doc_from_object(obj: dict[Any, Any]) -> Document | None:
    text = next((v for k in _DOC_TEXT_KEYS if isinstance(v := obj.get(k), str)), None)
    if text is None:
        return None
    doc_id = next(
        (str(v) for k in _DOC_ID_KEYS if isinstance(v := obj.get(k), (str, int)) and not isinstance(v, bool)),
        None,
    )
    return Document(text=text, id=doc_id)


def _docs_from_json(value: Any) -> list[Document]:
    """Documents from a decoded JSON tool result: a list of strings / document objects, one document object,
    or an object holding such a list under `documents` / `results` / `docs`.  Anything else (numbers, objects
    without a text field such as `{"temperature": 21}`) is not retrieval and gives no documents."""
    if isinstance(value, str):
        return _docs_from_plain_text(value)
    if isinstance(value, dict):
        doc = _doc_from_object(value)
        if doc is not None:
            return [doc]
        items = next((v for k in _DOC_LIST_KEYS if isinstance(v := value.get(k), list)), None)
        if items is None:
            return []
        value = items
    if isinstance(value, list):
        docs = []
        for item in value:
            if isinstance(item, str):
                docs.append(Document(text=item))
            elif isinstance(item, dict) and (doc := _doc_from_object(item)) is not None:
                docs.append(doc)
        return docs
    return []


def _is_number(text: str) -> bool:
    if len(text) > 64:
        return False
    try:
        float(text)
    except ValueError:
        return False
    return True


def _docs_from_plain_text(text: str) -> list[Document]:
    text = text.strip()
    # LangChain's ToolNode reports a failed tool as "Error: ...": no retrieval happened.
    if not text or text.startswith("Error:"):
        return []
    # A bare number or symbol string ("42", "3.5e2", "-> ok") is a computation, not retrieved text.
    if not any(ch.isalpha() for ch in text) or _is_number(text):
        return []
    return [Document(text=t) for t in split_documents(text)]


def tool_documents(content: Any) -> list[Document]:
    """The retrieved documents in one tool message's content (string or content parts).

    Heuristic for "looks like retrieval": the output is non-empty text with at least one letter that is not a
    LangChain tool error, or JSON holding document-like items (strings, or objects with a `page_content` /
    `text` / `content` string).  JSON that is not document-like (a weather object, a number) gives nothing.
    Plain text is split by `split_documents` (LangChain's `Source: ...\\nContent: ...` blocks stay whole).
    """
    text = message_text(content).strip()
    if not text:
        return []
    if text[0] in "[{\"":
        try:
            value = _json_loads(text)
        except ValueError:  # orjson.JSONDecodeError and json.JSONDecodeError are ValueErrors
            value = _NOT_JSON
        except RecursionError:  # the stdlib fallback on absurdly nested JSON
            value = _NOT_JSON
        if value is not _NOT_JSON:
            return _docs_from_json(value)
    return _docs_from_plain_text(text)


def tool_results(question: str, tool_contents: Sequence[Any]) -> RagContext | None:
    """Agent-style RAG: the last user message, then an assistant message with `tool_calls`, then `tool`
    messages carrying the retrieval results (LangChain v1 agents, OpenAI function calling).  The caller passes
    the contents of the tool messages after the last user message; the documents are all of them together."""
    documents: list[Document] = []
    for content in tool_contents:
        documents.extend(tool_documents(content))
    if not documents:
        return None
    return make_context(question, documents, "tool")
