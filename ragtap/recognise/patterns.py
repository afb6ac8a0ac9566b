"""The built-in rules that recognise a RAG prompt as the frameworks build it, plus the text helpers they share.

Every rule is a small pure function over message *text* (already extracted from the content parts) that returns a
`RagContext` or None.  Each one first runs plain substring tests (`in`, `find`) on the exact wording of its
template, so a request that is not that template costs a few substring scans; the few regexes are precompiled
and only run after their gate passed (and the recogniser puts `may_hold_context` in front of them all).
Slicing is done with `find`/`rfind` anchored on the template's fixed words rather than with one big regex,
which keeps every rule linear in the text and makes the choice explicit when the retrieved documents
themselves contain a template word (see each rule).

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
from collections.abc import Iterable, Sequence
from typing import Any

from ragtap.types import Document, RagContext

try:  # orjson is a dependency of ragtap; the stdlib fallback keeps this module importable on its own.
    from orjson import loads as _json_loads
except ImportError:  # pragma: no cover
    from json import loads as _json_loads

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
    with one or two substring scans and skips every rule (tests/test_recognise.py checks the claim)."""
    return "ontext" in text or "<doc" in text


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


def _find_label(text: str, label: str, start: int = 0) -> int:
    """Index of `label` at the start of a line (at or after `start`), or -1."""
    if text.startswith(label, start):
        return start
    i = text.find("\n" + label, start)
    return -1 if i < 0 else i + 1


def _rfind_label(text: str, label: str, start: int = 0) -> int:
    """Index of the last `label` at the start of a line (at or after `start`), or -1."""
    i = text.rfind("\n" + label, start)
    if i >= 0:
        return i + 1
    return start if text.startswith(label, start) else -1


def _strip_answer_line(text: str) -> str:
    """Drop a trailing `Answer:` / `Helpful Answer:` cue line (templates end with one after the question)."""
    text = text.rstrip()
    if text.endswith("Answer:"):
        nl = text.rfind("\n")
        if nl >= 0 and len(text) - nl <= 32:
            return text[:nl]
    return text


def _is_dash_line(line: str) -> bool:
    line = line.strip()
    return len(line) >= 3 and line.count("-") == len(line)


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
    if open_start <= 0 or open_end < 0 or not _is_dash_line(text[open_start:open_end]):
        return None
    # Closing fence + "Given the ..." line: the last such pair, so neither a document nor a multi-line query
    # that happens to contain "Given the" can end the context early.
    given = text.rfind("\nGiven the ", open_end)
    while given >= 0:
        close_start = text.rfind("\n", 0, given) + 1
        if close_start > open_end and _is_dash_line(text[close_start:given]):
            break
        given = text.rfind("\nGiven the ", open_end, given)
    else:
        return None
    query = text.find("\nQuery:", given)
    if query < 0:
        return None
    context = text[open_end + 1 : close_start]
    question = _strip_answer_line(text[query + len("\nQuery:") :])
    return make_context(question, split_documents(context), "llamaindex_text_qa")


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
    """
    if "Context:" not in text or "Question:" not in text:
        return None
    body = text.rstrip()
    if not body.endswith("Answer:"):
        return None
    cue = body.rfind("\n")
    if cue < 0 or len(body) - cue > 32:
        return None
    body = body[:cue]
    q = _find_label(body, "Question:")
    c = _find_label(body, "Context:")
    if q < 0 or c < 0:
        return None
    if q < c:
        question = body[q + len("Question:") : c]
        context = body[c + len("Context:") :]
    else:
        q = _rfind_label(body, "Question:", c)
        context = body[c + len("Context:") : q]
        question = body[q + len("Question:") :]
    return make_context(question, split_documents(context), "langchain")


_CONTEXT_THEN_QUESTION_INTROS = (
    # langchain.chains.question_answering.stuff_prompt.prompt_template (RetrievalQA / load_qa_chain, "stuff")
    "Use the following pieces of context to answer the question at the end.",
    # The LCEL RAG example of the LangChain docs.
    "Answer the question based only on the following context:",
)


def langchain_context_then_question(text: str) -> RagContext | None:
    """The two classic LangChain prompts with an unlabelled context followed by a `Question:` line.

    `RetrievalQA` / `load_qa_chain` "stuff" prompt (completion-style, one user message)::

        Use the following pieces of context to answer the question at the end. If you don't know the answer,
        just say that you don't know, don't try to make up an answer.

        {context}

        Question: {question}
        Helpful Answer:

    and the LCEL example of the LangChain docs::

        Answer the question based only on the following context:
        {context}

        Question: {question}

    The context starts on the line after the intro sentence and ends at the *last* `Question:` line.
    """
    for intro in _CONTEXT_THEN_QUESTION_INTROS:
        i = text.find(intro)
        if i >= 0:
            break
    else:
        return None
    start = text.find("\n", i + len(intro))
    if start < 0:
        return None
    q = _rfind_label(text, "Question:", start + 1)
    if q < 0:
        return None
    question = _strip_answer_line(text[q + len("Question:") :])
    return make_context(question, split_documents(text[start + 1 : q]), "langchain")


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
    if i >= 0 and _find_label(system_text, "Question:") < 0:
        start = system_text.find("\n\n", i)
        if start < 0:
            return None
        return make_context(question, split_documents(system_text[start:]), "langchain")
    return None


# --------------------------------------------------------------------------------------------------------------
# XML-style blocks
# --------------------------------------------------------------------------------------------------------------

_XML_ATTR = re.compile(r"""(?<![\w:-])(id|index)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>/]+))""")


def has_xml_block(text: str) -> bool:
    """Cheap gate for `xml_blocks`: an opening and a closing wrapper tag are both present."""
    return ("<context" in text and "</context>" in text) or ("<documents" in text and "</documents>" in text)


def _find_open_tag(text: str, name: str, pos: int) -> int:
    """Index of the next `<name>` / `<name attr...>` at or after `pos` (not `<names>`, `<name_x>`), or -1."""
    opening = "<" + name
    after = len(opening)
    while True:
        i = text.find(opening, pos)
        if i < 0:
            return -1
        c = text[i + after : i + after + 1]
        if c == ">" or c.isspace():
            return i
        pos = i + 1


def xml_elements(text: str, names: tuple[str, ...]) -> list[tuple[int, int, str, str]]:
    """The `<name attrs>inner</name>` elements of `text` for any of `names`, in order, as (start, end, attrs,
    inner); an element ends at the first `</name>` after it (no nesting of the same name).

    Written with `str.find` instead of a lazy regex (`<(context)...>(.*?)</\\1>`), which goes quadratic on a
    text with many opening tags and no closing one (minutes for a few hundred KB).  Here every search only moves
    forward: an opening tag without a closing tag after it ends the search for that name, since no later one
    can close either.  Linear in the text for a fixed set of names.
    """
    found: list[tuple[int, int, str, str]] = []
    next_open = dict.fromkeys(names, -1)
    alive = list(names)
    pos = 0
    while alive:
        best: str | None = None
        for name in tuple(alive):
            i = next_open[name]
            if i < pos:
                i = _find_open_tag(text, name, pos)
                if i < 0:
                    alive.remove(name)
                    continue
                next_open[name] = i
            if best is None or i < next_open[best]:
                best = name
        if best is None:
            break
        start = next_open[best]
        tag_end = text.find(">", start)
        if tag_end < 0:  # no ">" after this point: no further tag can be complete
            break
        closing = "</" + best + ">"
        close = text.find(closing, tag_end + 1)
        if close < 0:
            alive.remove(best)
            continue
        end = close + len(closing)
        found.append((start, end, text[start + len(best) + 1 : tag_end], text[tag_end + 1 : close]))
        pos = end
    return found


def _xml_doc_id(attrs: str) -> str | None:
    found: dict[str, str] = {}
    for m in _XML_ATTR.finditer(attrs):
        found.setdefault(m.group(1), next(g for g in m.groups()[1:] if g is not None))
    return found.get("id") or found.get("index") or None


def _xml_documents(inner: str) -> list[Document]:
    docs = []
    for _, _, attrs, body in xml_elements(inner, ("document", "doc")):
        content = xml_elements(body, ("document_content",)) if "<document_content>" in body else []
        docs.append(Document(text=content[0][3] if content else body, id=_xml_doc_id(attrs) if attrs else None))
    if docs:
        return docs
    return [Document(text=t) for t in split_documents(inner)]


def clean_question(text: str) -> str:
    """The question inside user text that also holds instructions: the content of a `<question>`/`<query>` tag,
    else what follows the last `Question:`/`Query:` line label (minus an `Answer:` cue), else the whole text."""
    if "<question" in text or "<query" in text:
        for _, _, _, inner in xml_elements(text, ("question", "query")):
            if inner.strip():
                return inner
    label = max(((i, n) for n in ("Question:", "Query:") if (i := _rfind_label(text, n)) >= 0), default=None)
    if label is not None:
        return _strip_answer_line(text[label[0] + len(label[1]) :])
    return text


def xml_blocks(text: str, question: str | None = None) -> RagContext | None:
    """XML-style context blocks, the layout Anthropic's and many hand-written prompts use::

        <context>            (or <documents>)
        <document id="a1">...</document>      (or <doc ...>; `id=` / `index=` -> Document.id)
        <document index="2"><source>x.pdf</source><document_content>...</document_content></document>
        </context>
        {question}

    A wrapper without inner document tags is split by blank lines.  With `<document_content>` the document text
    is that content (the `<source>` is dropped).  Several wrappers in one message are all read.  Tags are matched
    in lower case only, and closing tags exactly (`</context>`).

    `question` is None when the block is in the user message: the question is then that message's text outside
    the blocks (see `clean_question`).  When the block is in a system message, the caller passes the last user
    message.
    """
    blocks = xml_elements(text, ("context", "documents"))
    documents: list[Document] = []
    for _, _, _, inner in blocks:
        documents.extend(_xml_documents(inner))
    if not documents:
        return None
    if question is None:
        outside, pos = [], 0
        for start, end, _, _ in blocks:
            outside.append(text[pos:start])
            pos = end
        outside.append(text[pos:])
        question = clean_question("\n".join(outside))
    return make_context(question, documents, "xml")


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
