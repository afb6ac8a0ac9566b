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
    "llamaindex_query_citation": ["llamaindex_citation"],
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


CITATION_EXAMPLE = (
    "Please provide an answer based solely on the provided sources. When referencing information from a source, "
    "cite the appropriate source(s) using their corresponding numbers. Every answer should include at least one "
    "source citation. Only cite a source when you are explicitly referencing it. If none of the sources are "
    "helpful, you should indicate that. For example:\nSource 1:\nThe sky is red in the evening and blue in the "
    "morning.\nSource 2:\nWater is wet when the sky is red.\nQuery: When is water wet?\nAnswer: Water will be wet "
    "when the sky is red [2], which occurs in the evening [1].\nNow it's your turn. ")


def test_llamaindex_citation_refine_template() -> None:
    """CITATION_REFINE_TEMPLATE (llama-index-core 0.14.25), sent for chunks beyond the first compact call: the
    sources are the documents (not the template's example), a chunk's own dash line stays in it."""
    text = (CITATION_EXAMPLE + "We have provided an existing answer: Port 8443 [1].Below are several numbered "
            "sources of information. Use them to refine the existing answer. If the provided sources are not helpful, "
            "you will repeat the existing answer.\nBegin refining!\n------\nSource 3:\nThe billing service moved to "
            "port 9443 in May.\n------\nchangelog footer\n\nSource 4:\nThe old port 8443 stays open until June."
            "\n------\nQuery: Which port does the billing service listen on?\nAnswer: ")
    found = recognise({"messages": [{"role": "user", "content": text}]})
    assert found.reason == "llamaindex_citation"
    assert found.context is not None and found.context.question == "Which port does the billing service listen on?"
    assert [d.text for d in found.context.documents] == [
        "The billing service moved to port 9443 in May.\n------\nchangelog footer",
        "The old port 8443 stays open until June.",
    ]


def test_llamaindex_citation_needs_its_fenced_sources() -> None:
    """The template's wording alone (a user quoting it, or the example without sources) is not RAG."""
    for text in (CITATION_EXAMPLE + "Below are several numbered sources of information: none today.",
                 "What does 'several numbered sources of information' mean in a citation prompt?"):
        assert recognise({"messages": [{"role": "user", "content": text}]}).reason == "no_context"
