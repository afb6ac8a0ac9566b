"""The five thesis examples (seed 004, Figure 3.2), shipped as package data, and a script that plays them."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from ragtap.testing.upstream import ScriptedReply, json_reply, was_injected


@dataclass(frozen=True, slots=True)
class ThesisCase:
    id: str
    question: str
    retrieved: tuple[str, ...]
    supporting: str
    answer: str
    paper_scores: dict[str, float]
    reading: str


@cache
def thesis_cases() -> tuple[ThesisCase, ...]:
    text = resources.files(__package__).joinpath("thesis_examples.jsonl").read_text(encoding="utf-8")
    cases = []
    for line in text.splitlines():
        if line.strip():
            row = json.loads(line)
            cases.append(ThesisCase(row["id"], row["question"], tuple(row["retrieved"]), row["supporting"], row["answer"], row["paper_scores"], row["reading"]))
    return tuple(cases)


def thesis_script(body: dict[str, Any]) -> ScriptedReply:
    """Reply as the thesis's model did: the case whose question is in the request; JSON when injected."""
    text = json.dumps(body.get("messages", []), ensure_ascii=False)
    for case in thesis_cases():
        if json.dumps(case.question, ensure_ascii=False)[1:-1] in text:
            if was_injected(body):
                return ScriptedReply(json_reply(case.answer, case.supporting))
            return ScriptedReply(case.answer)
    return ScriptedReply("I can only play the thesis's five examples.")
