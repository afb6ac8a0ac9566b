"""XML-style `<context>` / `<documents>` blocks."""

from __future__ import annotations

import re

from ragtap.recognise.text import make_context, rfind_label, split_documents, strip_answer_line
from ragtap.types import Document, RagContext

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
    label = max(((i, n) for n in ("Question:", "Query:") if (i := rfind_label(text, n)) >= 0), default=None)
    if label is not None:
        return strip_answer_line(text[label[0] + len(label[1]) :])
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
