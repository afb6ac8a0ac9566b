"""The text helpers every recognition rule shares (the rules themselves are in `ragtap/recognise/rules/`).

How documents are split from a context string (`split_documents`):
- Frameworks join documents with a blank line and add no delimiter, so a blank line is the only boundary there
  is.  A document whose own text has blank lines therefore comes out as several documents; there is no way to
  tell, and for scoring (the best-matching document wins) a few smaller documents are a mild loss.
- Exception, when the context carries per-document headers: LlamaIndex nodes loaded from files start with a
  metadata paragraph holding a `file_path: ...` line (then a blank line, then the text), and the LangChain agent
  retrieval tool writes `Source: {metadata}\\nContent: ...` per document.  When any paragraph is such a header,
  each header starts a new document and the paragraphs after it (until the next header) are joined back into
  it, so a node's own blank lines no longer split it.  Paragraphs before the first header stay one document
  each.  The cost: a node *without* a header that follows a node with one is merged into that node.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from ragtap.types import Document, RagContext

# --------------------------------------------------------------------------------------------------------------
# Shared helpers
# --------------------------------------------------------------------------------------------------------------


def message_text(content: Any) -> str:
    """The text of a message's `content`: a string as is, the `text` parts of a content-part list joined by a
    newline (images, audio and malformed parts are ignored), anything else (None, numbers, dicts) as ""."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [
            part["text"]
            for part in content
            if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str)
        ]
        return "\n".join(texts)
    return ""


def may_hold_context(text: str) -> bool:
    """One cheap gate in front of all the template rules: each one's fixed words contain "ontext" ("Context
    information", "Context:", "pieces of context", "<context>") or "<doc" ("<documents>").  A plain chat fails it
    with two memchr scans and skips every rule (tests/test_recognise.py checks the claim): a word's rarest letter
    is looked for first ("x", "<": one character is a memchr), the word itself only in a text that has it (a short
    word of common letters is compared at almost every position: ~8,000 instructions on a 1.3 KB chat message)."""
    return ("x" in text and "ontext" in text) or ("<" in text and "<doc" in text)


# One or more blank lines (tolerating spaces, tabs and CRLF on the "empty" line).
_BLANK_LINES = re.compile(r"\n[ \t\r]*\n\s*")
# A LlamaIndex metadata paragraph: only `key: value` lines, one of them `file_path: ...`.
_FILE_PATH_META = re.compile(
    r"(?:[A-Za-z_][\w .-]{0,63}:[^\n]*\n)*file_path:[^\n]*(?:\n[A-Za-z_][\w .-]{0,63}:[^\n]*)*"
)


def _is_node_header(paragraph: str) -> bool:
    """True for a paragraph that starts a document: a LlamaIndex `file_path:` metadata block, or a LangChain
    agent `Source: ...\\nContent: ...` block."""
    if paragraph.startswith("Source:"):
        return "\nContent:" in paragraph
    if "file_path:" not in paragraph:
        return False
    return paragraph.startswith("file_path:") or _FILE_PATH_META.fullmatch(paragraph) is not None


def split_documents(context: str) -> list[str]:
    """Split a context string into document texts (stripped, non-empty); see the module docstring."""
    paragraphs = [p.strip() for p in _BLANK_LINES.split(context)]
    paragraphs = [p for p in paragraphs if p]
    if ("file_path:" not in context and "Source:" not in context) or not any(map(_is_node_header, paragraphs)):
        return paragraphs
    documents: list[str] = []
    current: str | None = None
    for paragraph in paragraphs:
        if _is_node_header(paragraph):
            if current is not None:
                documents.append(current)
            current = paragraph
        elif current is None:
            documents.append(paragraph)
        else:
            current = current + "\n\n" + paragraph
    if current is not None:
        documents.append(current)
    return documents


def make_context(question: str, documents: Iterable[Document | str], source: str) -> RagContext | None:
    """Build a `RagContext` with the question and documents stripped and empty documents dropped; None when no
    question or no document is left (not RAG)."""
    question = question.strip()
    if not question:
        return None
    docs: list[Document] = []
    for doc in documents:
        if isinstance(doc, str):
            text, doc_id = doc.strip(), None
        else:
            text, doc_id = doc.text.strip(), doc.id
        if text:
            docs.append(Document(text=text, id=doc_id))
    if not docs:
        return None
    return RagContext(question=question, documents=tuple(docs), source=source)


def find_label(text: str, label: str, start: int = 0) -> int:
    """Index of `label` at the start of a line (at or after `start`), or -1."""
    if text.startswith(label, start):
        return start
    i = text.find("\n" + label, start)
    return -1 if i < 0 else i + 1


def rfind_label(text: str, label: str, start: int = 0) -> int:
    """Index of the last `label` at the start of a line (at or after `start`), or -1."""
    i = text.rfind("\n" + label, start)
    if i >= 0:
        return i + 1
    return start if text.startswith(label, start) else -1


def strip_answer_line(text: str) -> str:
    """Drop a trailing `Answer:` / `Helpful Answer:` cue line (templates end with one after the question)."""
    text = text.rstrip()
    if text.endswith("Answer:"):
        nl = text.rfind("\n")
        if nl >= 0 and len(text) - nl <= 32:
            return text[:nl]
    return text


def is_dash_line(line: str) -> bool:
    line = line.strip()
    return len(line) >= 3 and line.count("-") == len(line)
