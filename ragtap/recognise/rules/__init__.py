"""The built-in recognition rules, one per module, in the order the recogniser tries them (`RULES`).

Each rule is a pure function over message *text* (already extracted from the content parts).  It first runs plain
substring tests on the exact wording of its template, so a request that is not that template costs a few
substring scans; slicing is anchored with `find`/`rfind` on the template's fixed words, linear in the text.

`place` says which text a rule reads:
- "user": the last user message (the template and the question are both in it); called as `match(text, text)`;
- "system": each system/developer message, the question being the last user message; `match(text, question)`;
- "tools": the contents of the tool messages after the last user message; `match(contents, question)`.
`gates` are cheap substring tests run before `match` (each result is shared between the rules that list it).
The first rule that yields a question and at least one document wins, so the order is a decision: templates
before the looser XML blocks, and agent tool results last.  A rule's `name` is its metrics label.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ragtap.recognise.rules.dspy_chat import dspy_chat, dspy_gate
from ragtap.recognise.rules.generic import generic, generic_gate
from ragtap.recognise.rules.langchain_context_then_question import langchain_context_then_question
from ragtap.recognise.rules.langchain_labelled import langchain_labelled
from ragtap.recognise.rules.langchain_system import langchain_system
from ragtap.recognise.rules.llamaindex_citation import citation_gate, llamaindex_citation
from ragtap.recognise.rules.llamaindex_context_chat import llamaindex_context_chat
from ragtap.recognise.rules.llamaindex_refine import llamaindex_refine, refine_gate
from ragtap.recognise.rules.llamaindex_text_qa import llamaindex_text_qa
from ragtap.recognise.rules.tool import tool_results
from ragtap.recognise.rules.xml import has_xml_block, xml_blocks
from ragtap.recognise.text import may_hold_context
from ragtap.types import RagContext


@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    place: str  # "user" | "system" | "tools"
    # Cheap substring tests that must all pass before `match` runs, each run at most once per text and shared by
    # the rules that list it; () for the "tools" place (its gate is that tool messages exist).
    gates: tuple[Callable[[str], bool], ...]
    match: Callable[[Any, str], RagContext | None]


RULES: tuple[Rule, ...] = (
    Rule("llamaindex_text_qa", "user", (may_hold_context,), lambda text, _q: llamaindex_text_qa(text)),
    Rule("llamaindex_refine", "user", (may_hold_context, refine_gate), lambda text, _q: llamaindex_refine(text)),
    Rule("llamaindex_citation", "user", (citation_gate,), lambda text, _q: llamaindex_citation(text)),
    Rule("langchain", "user", (may_hold_context,), lambda text, _q: langchain_labelled(text)),
    Rule("langchain", "user", (may_hold_context,), lambda text, _q: langchain_context_then_question(text)),
    Rule("dspy", "user", (dspy_gate,), lambda text, _q: dspy_chat(text)),
    Rule("llamaindex_context_chat", "system", (may_hold_context,), llamaindex_context_chat),
    Rule("langchain", "system", (may_hold_context,), langchain_system),
    Rule("xml", "user", (may_hold_context, has_xml_block), lambda text, _q: xml_blocks(text)),
    Rule("xml", "system", (may_hold_context, has_xml_block), xml_blocks),
    Rule("tool", "tools", (), lambda contents, question: tool_results(question, contents)),
    # Last: only what no named layout claimed (see rules/generic.py for why it is strict).
    Rule("generic", "system", (generic_gate,), generic),
    Rule("generic", "user", (generic_gate,), generic),
)

# The closed set of rule labels (bounded Prometheus label values).
RULE_NAMES: frozenset[str] = frozenset(rule.name for rule in RULES)

__all__ = ["RULES", "RULE_NAMES", "Rule"]
