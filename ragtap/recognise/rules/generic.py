"""The generic rule: several retrieved passages under a lead-in line, together with a question, in a layout no
template rule names (e.g. LangChain v1's RAG-agent middleware "Use the following context in your response:",
LlamaIndex's `condense_plus_context` "Here are the relevant documents for the context:", hand-written prompts).

Precision comes first (a false positive changes what the model is asked to write), so every condition must hold:
- a lead-in line: at most 160 characters, ending with ":", naming retrieved material (context, documents,
  passages, sources, search results, excerpts, snippets, knowledge base, retrieved ...) and either with a
  retrieval word (following, below, relevant, retrieved, provided, ...) or as a bare heading ("Documents:");
  "Some context:" about the user's own situation has neither and does not count;
- at least two passages after it (blank-line paragraphs, `[N]`/`N.` items, `Source:`/`file_path:` headed
  blocks), each at least 20 characters, and not code (a passage that looks like source code or a JSON object or
  array ends the match);
- a question: in a system message, the last user message; in a user message, its last paragraph.  Either must
  look like one: it ends with "?" or starts with a question word or a `Question:`/`Query:` label.  "Summarise
  this" is an instruction, not a question: not RAG.
Trailing instruction paragraphs after the passages ("Answer using only the context above.") are not passages.
A section after the context that holds an answer to judge ("Answer:", "Response:", "Student answer:" ...) makes
the request an evaluation of that answer (LLM-as-judge, faithfulness graders), not a question to answer: not RAG.
"""

from __future__ import annotations

import re

from ragtap.recognise.text import make_context, split_documents
from ragtap.types import RagContext

_NOUNS = (r"context|contexts|documents?|passages?|sources|search results|excerpts?|snippets?|knowledge base|"
          r"retrieved (?:information|content|text)|reference documents?|chunks|results")
# One lead-in line, matched whole (the line holds no newline).  Only lines ending with ":" can be one, so the
# search first finds those lines (`_COLON_LINE_END`, a scan for ":") and runs this on them alone: running a
# MULTILINE `^...` pattern from every line start cost ~2x more on long system prompts.
_LEAD_IN_LINE = re.compile(
    rf"[^\n]{{0,140}}\b(?:following|below|relevant|retrieved|provided|supplied|given|these|search)\b"
    rf"[^\n]{{0,60}}\b(?:{_NOUNS})\b[^\n]{{0,60}}:[ \t]*"
    rf"|[ \t]*(?:#+[ \t]*)?(?:{_NOUNS})[ \t]*:[ \t]*",
    re.IGNORECASE,
)
_COLON_LINE_END = re.compile(r":[ \t]*$", re.MULTILINE)


def _lead_in(text: str) -> tuple[int, int] | None:
    """(start, end) of the first lead-in line of `text`, or None."""
    for colon in _COLON_LINE_END.finditer(text):
        end = colon.end()
        start = text.rfind("\n", 0, colon.start()) + 1
        if _LEAD_IN_LINE.fullmatch(text, start, end):
            return start, end
    return None


_ITEM = re.compile(r"^[ \t]*(?:\[\d{1,3}\]|\d{1,3}[.)]|(?:document|passage|source|chunk) \d{1,3}:?)[ \t]", re.IGNORECASE | re.MULTILINE)
_QUESTION_WORDS = frozenset(
    "what which who whom whose when where why how is are was were do does did can could should would will may "
    "might has have had am list name explain describe compare".split()
)
_LABELS = ("question:", "query:", "q:", "user question:", "user query:")
_INSTRUCTION_STARTS = (
    "answer", "based on", "use ", "using ", "if ", "instruction", "remember", "do not", "don't", "only ", "please",
    "respond", "cite", "you must", "always", "never", "keep ", "be ", "provide", "given the", "avoid", "include",
    "make sure", "ensure", "when ", "write", "format", "list ", "mention", "prefer", "state ", "quote",
)
# A lead-in about how to treat sources ("Follow these rules when citing sources:") introduces instructions.
_NOT_MATERIAL = re.compile(r"\b(?:rules?|guidelines?|instructions?|steps|policy|policies|format|citing|cite)\b", re.IGNORECASE)
# A question about the pasted text itself (edit it, summarise it) is a task on that text, not RAG.
_TASK_ON_TEXT = re.compile(
    r"\b(?:summari[sz]e|summary|proofread|rewrite|rephrase|paraphrase|translate|shorten|grammar|tl;?dr|edit|"
    r"improve|review|critique|format)\b", re.IGNORECASE)
# A paragraph opening with one of these labels carries an answer to be judged, not retrieved material.
_JUDGED = re.compile(
    r"^(?:generated |student |model |candidate |predicted |proposed |final )?(?:answer|response|output|claim|"
    r"prediction|completion)[ \t]*:", re.IGNORECASE)
_CODE_HINTS = ("def ", "class ", "import ", "function ", "#include", "public static", "const ", "=> {", "};")
_MIN_PASSAGE = 20


# (Plain substring tests: the alternation as one regex tried a match at every position, ~12-20 us on a 1.3 KB chat
# message with a colon; ten `in` scans are a third of that.)
_STEMS = ("ontext", "ocument", "assage", "ource", "esult", "xcerpt", "nippet", "nowledge", "etrieved", "hunk")


def generic_gate(text: str) -> bool:
    """Cheap: a colon (every lead-in line ends with one) and one of the nouns' stems (case-free: no capital)."""
    if ":" not in text:
        return False
    for stem in _STEMS:
        if stem in text:
            return True
    return False


def looks_like_question(text: str) -> str | None:
    """The question in `text` (its label removed), or None when it is not one."""
    text = text.strip()
    if not text or len(text) > 2000:
        return None
    lowered = text.lower()
    for label in _LABELS:
        if lowered.startswith(label):
            return text[len(label) :].strip() or None
    if text.endswith("?"):
        return text
    first = lowered.split(None, 1)[0].strip(",:") if lowered.split() else ""
    return text if first in _QUESTION_WORDS else None


def _is_code(paragraph: str) -> bool:
    """Source code, or a JSON object/array pasted as data ("Which one is valid JSON?" is a task on it)."""
    if (paragraph[:1] == "{" and paragraph[-1:] == "}") or (paragraph[:2] in ('[{', '["') and paragraph[-1:] == "]"):
        return True
    return paragraph.startswith("```") or sum(hint in paragraph for hint in _CODE_HINTS) >= 2


def _passages(region: str) -> list[str]:
    paragraphs = split_documents(region)
    if len(paragraphs) < 2 and len(_ITEM.findall(region)) >= 2:  # items on consecutive lines
        starts = [m.start() for m in _ITEM.finditer(region)]
        paragraphs = [region[a:b].strip() for a, b in zip(starts, [*starts[1:], len(region)], strict=True)]
    # ("When does it open?" starts like "When citing, ..." but is the question, not an instruction.)
    while paragraphs and paragraphs[-1].lower().startswith(_INSTRUCTION_STARTS) and not paragraphs[-1].endswith("?"):
        paragraphs.pop()
    return paragraphs


def generic(text: str, question: str) -> RagContext | None:
    lead = _lead_in(text)
    if lead is None or _NOT_MATERIAL.search(text, lead[0], lead[1]):
        return None
    region = text[lead[1] :]
    in_user_message = text is question
    if in_user_message:
        paragraphs = _passages(region)
        if len(paragraphs) < 3:
            return None
        asked = looks_like_question(paragraphs[-1])
        passages = paragraphs[:-1]
        if asked is None:  # the question may come before the lead-in ("What is X? Use these documents:")
            asked, passages = looks_like_question(text[: lead[0]]), paragraphs
    else:
        asked = looks_like_question(question)
        passages = _passages(region)
    if asked is None or len(passages) < 2 or _TASK_ON_TEXT.search(asked):
        return None
    # Rules, guidelines and steps are instructions, not retrieved facts: judged line by line.
    lines = [line.lower().lstrip("-*0123456789.)[] \t") for p in passages for line in p.split("\n") if line.strip()]
    if sum(line.startswith(_INSTRUCTION_STARTS) for line in lines) * 2 > len(lines):
        return None
    if any(len(p) < _MIN_PASSAGE or _is_code(p) or _JUDGED.match(p) for p in passages):
        return None
    return make_context(asked, passages, "generic")
