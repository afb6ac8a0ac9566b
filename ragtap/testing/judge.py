"""Scripted judges for `ragtap.testing.upstream.ScriptedUpstream`: they recognise each Ragas prompt by its
(paper) wording and answer it, so the judge runs over real HTTP with no LLM.

    async with ScriptedUpstream(generic_ragas_script()) as upstream:
        client = JudgeClient(JudgeEndpoint(base_url=upstream.base_url))

`generic_ragas_script` answers any sample with well-formed replies (one statement per answer sentence, all
supported; n copies of "Is it true that <first answer sentence>?", committal; the context's first
sentence extracted).  `fixture_script` answers from hand-written replies, chosen by a substring of the prompt.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragtap.scoring.sentences import split_sentences
from ragtap.testing.upstream import ScriptedReply

STATEMENTS = "statements"
VERIFY = "verify"
QUESTIONS = "questions"
EXTRACT = "extract"

# The paper's wording that opens each prompt (ragtap/prompts/ragas_*.toml).
PROMPT_MARKERS: dict[str, str] = {
    STATEMENTS: "create one or more statements from each sentence",
    VERIFY: "determine whether they are supported by the information present in the context",
    QUESTIONS: "Generate a question for the given answer",
    EXTRACT: "extract relevant sentences from the provided context",
}


def prompt_kind(body: dict[str, Any]) -> str | None:
    """Which Ragas prompt a chat request carries (by its system message), or None."""
    for message in body.get("messages", []):
        if message.get("role") == "system":
            for kind, marker in PROMPT_MARKERS.items():
                if marker in str(message.get("content", "")):
                    return kind
    return None


def user_text(body: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content", "")) for m in body.get("messages", []) if m.get("role") == "user")


def _section(text: str, label: str, next_labels: Sequence[str] = ()) -> str:
    """The text after `label:` up to the next of `next_labels` (prompt templates put one field per label)."""
    start = text.find(f"{label}:")
    if start == -1:
        return ""
    start += len(label) + 1
    end = len(text)
    for nxt in next_labels:
        position = text.find(f"\n{nxt}", start)
        if position != -1:
            end = min(end, position)
    return text[start:end].strip()


_STATEMENT_LINE = re.compile(r"^statement \d+: (.*)$", re.MULTILINE)


def generic_ragas_script(prompt_tokens: int = 100, completion_tokens: int | None = None) -> Callable[[dict[str, Any]], ScriptedReply]:
    """Well-formed replies for any sample (every call costs `prompt_tokens` + `completion_tokens`)."""

    def reply(content: Any) -> ScriptedReply:
        return ScriptedReply(json.dumps(content), prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)

    def script(body: dict[str, Any]) -> ScriptedReply:
        kind = prompt_kind(body)
        text = user_text(body)
        if kind == STATEMENTS:
            answer = _section(text, "answer")
            return reply({"statements": split_sentences(answer) or [answer]})
        if kind == VERIFY:
            statements = _STATEMENT_LINE.findall(text)
            return reply({"verdicts": [{"statement": s, "reason": "stated in the context", "verdict": "Yes"} for s in statements]})
        if kind == QUESTIONS:
            n = int(m.group(1)) if (m := re.search(r"Write (\d+) such questions", str(body["messages"][0]["content"]))) else 3
            answer = _section(text, "answer")
            first = (split_sentences(answer) or [answer])[0].rstrip(".!?")
            return reply({"questions": [f"Is it true that {first}?"] * n, "noncommittal": 0})
        if kind == EXTRACT:
            context = _section(text, "context")
            sentences = split_sentences(context)
            return reply({"sentences": sentences[:1]} if sentences else {"sentences": "Insufficient Information"})
        return ScriptedReply("not a judge prompt", prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)

    return script


@dataclass
class Fixture:
    """Hand-written judge replies for one sample: `match` substrings pick it (any one found in the user
    message); `replies` maps a prompt kind to the raw reply text (or a JSON-able value)."""

    match: Sequence[str]
    replies: dict[str, Any]
    status: dict[str, list[int]] = field(default_factory=dict)  # kind -> statuses to answer first (e.g. [429, 500])


def fixture_script(fixtures: Sequence[Fixture], prompt_tokens: int = 100) -> Callable[[dict[str, Any]], ScriptedReply]:
    def script(body: dict[str, Any]) -> ScriptedReply:
        kind = prompt_kind(body)
        text = user_text(body)
        for fixture in fixtures:
            if any(m in text for m in fixture.match):
                statuses = fixture.status.get(kind or "", [])
                if statuses:
                    return ScriptedReply(status=statuses.pop(0))
                content = fixture.replies.get(kind or "")
                if content is None:
                    return ScriptedReply("no scripted reply", prompt_tokens=prompt_tokens)
                return ScriptedReply(content if isinstance(content, str) else json.dumps(content), prompt_tokens=prompt_tokens)
        return ScriptedReply("no fixture matches", prompt_tokens=prompt_tokens)

    return script
