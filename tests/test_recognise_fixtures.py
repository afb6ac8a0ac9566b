"""The request bodies real frameworks sent (captured by tests/test_frameworks.py into tests/fixtures/frameworks/,
synthetic documents) are recognised by the expected rule, without the frameworks installed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragtap.recognise import recognise

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "frameworks"
# fixture -> the rule of each request it holds (in order)
EXPECTED: dict[str, list[str]] = {
    "langchain_lcel_system": ["langchain"],
    "langchain_lcel_human": ["langchain"],
    "langchain_agent_middleware": ["generic"],
    "langchain_agent_tool": ["no_context", "tool"],  # fixtures keep the messages only, not the offered tools
    "llamaindex_query_compact": ["llamaindex_text_qa"],
    "llamaindex_query_simple_summarize": ["llamaindex_text_qa"],
    "llamaindex_query_tree_summarize": ["llamaindex_text_qa"],
    "llamaindex_query_refine": ["llamaindex_text_qa", "llamaindex_refine"],
    "llamaindex_chat_context": ["llamaindex_context_chat"],
    "llamaindex_chat_condense_plus_context": ["generic"],
    "llamaindex_chat_condense_question": ["llamaindex_text_qa"],
    "llamaindex_chat_best": ["generic"],
    "dspy_chain_of_thought": ["dspy"],
    "haystack_chat_prompt_builder": ["langchain"],
    # retriever-tool turn, grade ("no"), rewrite, retriever-tool turn on the rewritten question, grade, generate
    "langgraph_agentic_rag": ["no_context"] * 5 + ["langchain"],
    "openai_agents_default_api": ["no_context", "tool"],  # the tools offered are not kept: injectable here
    "openai_agents_chat_model": ["no_context", "tool"],
}


def test_every_fixture_has_an_expectation() -> None:
    assert {p.stem for p in FIXTURES.glob("*.json")} <= set(EXPECTED)


@pytest.mark.parametrize(("name", "rules"), sorted(EXPECTED.items()))
def test_captured_framework_body_is_recognised(name: str, rules: list[str]) -> None:
    path = FIXTURES / f"{name}.json"
    if not path.exists():
        pytest.skip(f"{path.name} not captured yet (tests/test_frameworks.py writes it when its framework venv exists)")
    bodies = json.loads(path.read_text())["requests"]
    assert [recognise(body).reason for body in bodies] == rules
    for body in bodies:
        found = recognise(body)
        if found.reason == "no_context":  # an agent's first turn: the tool has not run yet
            continue
        assert found.inject and found.context is not None
        assert "Which port does the billing service listen on?" in found.context.question
        assert any("The billing service" in d.text for d in found.context.documents)
