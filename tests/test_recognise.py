"""Tests for ragtap.recognise: one fixture per template exactly as the frameworks render it, plus the explicit
field, client-owned formats, malformed bodies and property tests (never raises, never mutates)."""

from __future__ import annotations

import dataclasses

import copy
import json
import string
import tomllib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragtap.recognise import FIELD_PROBLEMS, CustomPattern, Recognition, patterns_from_config, recognise
from ragtap.recognise.text import split_documents
from ragtap.types import Document

from framework_templates import (
    LANGCHAIN_LCEL,
    LANGCHAIN_STUFF,
    LANGCHAIN_STUFF_CHAT_SYSTEM,
    LANGCHAIN_TUTORIAL_SYSTEM,
    LLAMAINDEX_CONTEXT_CHAT,
    LLAMAINDEX_QA_SYSTEM,
    LLAMAINDEX_TEXT_QA,
    RLM_RAG_PROMPT,
)

DOCS = [
    "Task decomposition is a technique for breaking a complex task into smaller and simpler steps.",
    "Chain of thought prompting instructs the model to think step by step.",
    "Tree of Thoughts extends CoT by exploring multiple reasoning possibilities at each step.",
]
QUESTION = "What is Task Decomposition?"


def texts(recognition: Recognition) -> list[str]:
    assert recognition.context is not None
    return [d.text for d in recognition.context.documents]


def langchain_body(content: str, **extra: object) -> dict:
    """ChatOpenAI's request body (langchain-openai 1.x): explicit `stream: false`, no `n`."""
    return {"messages": [{"role": "user", "content": content}], "model": "gpt-4o-mini", "stream": False, **extra}


def llamaindex_node(text: str, file_path: str | None) -> str:
    """TextNode.get_content(MetadataMode.LLM): "{metadata_str}\\n\\n{content}", stripped."""
    return text if file_path is None else f"file_path: {file_path}\n\n{text}".strip()


# ------------------------------------------------------------------------------------------------------------
# LangChain
# ------------------------------------------------------------------------------------------------------------


def test_langchain_rlm_rag_prompt() -> None:
    content = RLM_RAG_PROMPT.format(question=QUESTION, context="\n\n".join(DOCS))
    body = langchain_body(content, temperature=0.7)
    r = recognise(body)
    assert r.context is not None and r.context.source == "langchain"
    assert r.context.question == QUESTION
    assert texts(r) == DOCS
    assert (r.inject, r.reason, r.strip_ragtap_field) == (True, "langchain", False)


def test_langchain_context_first_variant() -> None:
    content = (
        "Use the context to answer.\n\nContext: "
        + "\n\n".join(DOCS)
        + "\n\nQuestion: "
        + QUESTION
        + "\n\nAnswer:"
    )
    r = recognise(langchain_body(content))
    assert r.context is not None and r.context.question == QUESTION and texts(r) == DOCS


def test_langchain_context_first_faq_document_with_question_lines() -> None:
    faq = "Question: Can I resize a volume?\nAnswer: Yes, online."
    content = f"Context: {faq}\n\n{DOCS[0]}\nQuestion: {QUESTION}\nHelpful Answer:"
    r = recognise(langchain_body(content))
    assert r.context is not None and r.context.question == QUESTION
    assert texts(r) == [faq, DOCS[0]]


def test_langchain_stuff_prompt_and_lcel() -> None:
    for template in (LANGCHAIN_STUFF, LANGCHAIN_LCEL):
        r = recognise(langchain_body(template.format(context="\n\n".join(DOCS), question=QUESTION)))
        assert r.context is not None and r.context.source == "langchain", template
        assert r.context.question == QUESTION and texts(r) == DOCS


def test_langchain_system_message_prompts() -> None:
    for template in (LANGCHAIN_STUFF_CHAT_SYSTEM, LANGCHAIN_TUTORIAL_SYSTEM):
        body = {
            "messages": [
                {"role": "system", "content": template.format(context="\n\n".join(DOCS))},
                {"role": "user", "content": QUESTION},
            ],
            "model": "gpt-4o-mini",
            "stream": False,
        }
        r = recognise(body)
        assert r.context is not None and r.context.source == "langchain", template
        assert r.context.question == QUESTION and texts(r) == DOCS and r.inject


# ------------------------------------------------------------------------------------------------------------
# LlamaIndex
# ------------------------------------------------------------------------------------------------------------

PG_NODES = [
    ("What I Worked On\n\nFebruary 2021\n\nBefore college the two main things I worked on were writing and "
     "programming.", "/data/paul_graham/paul_graham_essay.txt"),
    ("I didn't write essays. I wrote what beginning writers were supposed to write then, short stories.",
     "/data/paul_graham/paul_graham_essay.txt"),
    ("The first programs I tried writing were on the IBM 1401 that our school district used.",
     "/data/paul_graham/other.txt"),
]


def llamaindex_query_body(context_str: str, query: str) -> dict:
    return {
        "messages": [
            {"role": "system", "content": LLAMAINDEX_QA_SYSTEM},
            {"role": "user", "content": LLAMAINDEX_TEXT_QA.format(context_str=context_str, query_str=query)},
        ],
        "model": "gpt-4o-mini",
        "stream": False,
        "temperature": 0.1,
    }


def test_llamaindex_text_qa_file_nodes_keep_their_blank_lines() -> None:
    nodes = [llamaindex_node(text, path) for text, path in PG_NODES]
    r = recognise(llamaindex_query_body("\n\n".join(nodes), "What did the author do growing up?"))
    assert r.context is not None and r.context.source == "llamaindex_text_qa"
    assert r.context.question == "What did the author do growing up?"
    assert texts(r) == nodes  # 3 nodes, the first one with two blank lines inside
    assert texts(r)[0].startswith("file_path: /data/paul_graham/paul_graham_essay.txt\n\nWhat I Worked On")
    assert (r.inject, r.reason) == (True, "llamaindex_text_qa")


def test_llamaindex_text_qa_without_metadata_and_with_multi_key_metadata() -> None:
    r = recognise(llamaindex_query_body("\n\n".join(DOCS), QUESTION))
    assert texts(r) == DOCS
    nodes = [f"page_label: {i}\nfile_path: /data/manual.pdf\n\n{d}\n\nSecond paragraph {i}." for i, d in
             enumerate(DOCS, 1)]
    r = recognise(llamaindex_query_body("\n\n".join(nodes), QUESTION))
    assert texts(r) == nodes


def test_llamaindex_text_qa_document_with_dash_lines_and_multiline_query() -> None:
    doc = "Results\n---------------------\nGiven the numbers, revenue grew."
    query = "Summarise the results.\nGiven the data, is growth real?"
    r = recognise(llamaindex_query_body(f"{doc}\n\n{DOCS[0]}", query))
    assert r.context is not None and r.context.question == query
    assert texts(r) == [doc, DOCS[0]]


def test_llamaindex_context_chat_with_history_and_system_prompt() -> None:
    nodes = [llamaindex_node(text, path) for text, path in PG_NODES]
    system_prompt = "You are a chatbot, able to have normal interactions, as well as talk about an essay."
    system = LLAMAINDEX_CONTEXT_CHAT.format(context_str="\n\n".join(nodes)) + system_prompt.strip()
    body = {
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": "Hello!"},
            {"role": "assistant", "content": "Hi! How can I help you with the essay?"},
            {"role": "user", "content": "What did Paul Graham do after RICS?"},
        ],
        "model": "gpt-4o-mini",
        "stream": True,
        "temperature": 0.1,
    }
    r = recognise(body)
    assert r.context is not None and r.context.source == "llamaindex_context_chat"
    assert r.context.question == "What did Paul Graham do after RICS?"
    assert texts(r) == nodes
    assert all(system_prompt not in t for t in texts(r))
    assert r.inject


def test_llamaindex_context_chat_document_with_its_own_fence() -> None:
    doc = "Heading\n" + "-" * 20 + "\nbody text"
    system = LLAMAINDEX_CONTEXT_CHAT.format(context_str=f"{DOCS[0]}\n\n{doc}")  # no system prompt after
    body = {"messages": [{"role": "system", "content": system}, {"role": "user", "content": QUESTION}]}
    assert texts(recognise(body)) == [DOCS[0], doc]


# ------------------------------------------------------------------------------------------------------------
# Explicit `ragtap` field
# ------------------------------------------------------------------------------------------------------------


def chat(content: object = "What is 2+2?", **extra: object) -> dict:
    return {"model": "gpt-4o", "messages": [{"role": "user", "content": content}], **extra}


def test_explicit_string_and_object_documents() -> None:
    body = chat(
        "Where is the Eiffel tower?",
        ragtap={
            "question": "  Where is the Eiffel tower? ",
            "documents": ["The Eiffel Tower is in Paris.", {"id": "doc-7", "text": "Paris is in France.\n"},
                          {"id": 12, "text": "x"}, {"text": "no id"}, "   "],
        },
    )
    r = recognise(body)
    assert r.context is not None and r.context.source == "explicit"
    assert r.context.question == "Where is the Eiffel tower?"
    assert r.context.documents == (
        Document("The Eiffel Tower is in Paris."), Document("Paris is in France.", "doc-7"), Document("x", "12"),
        Document("no id"),
    )
    assert (r.inject, r.strip_ragtap_field, r.reason) == (True, True, "explicit")


def test_explicit_disabled_skips_even_a_template() -> None:
    body = langchain_body(RLM_RAG_PROMPT.format(question=QUESTION, context=DOCS[0]), ragtap={"enabled": False})
    assert recognise(body) == Recognition(None, False, True, "disabled")


def test_explicit_empty_documents() -> None:
    r = recognise(chat(ragtap={"question": "q", "documents": ["  "]}))
    assert r == Recognition(None, False, True, "explicit_empty")


@pytest.mark.parametrize(
    "field",
    [
        None, "yes", 3, [], ["doc"], {"question": "q"}, {"documents": ["d"]}, {"question": 1, "documents": ["d"]},
        {"question": "q", "documents": "d"}, {"question": "q", "documents": [1]},
        {"question": "q", "documents": [{"id": "a"}]}, {"question": "q", "documents": [{"text": "t", "id": []}]},
        {"question": "q", "documents": [{"text": "t", "id": True}]}, {"enabled": "false"}, {"enabled": None},
    ],
)
def test_explicit_wrong_shapes_are_stripped_and_ignored(field: object) -> None:
    r = recognise(chat(ragtap=field))
    assert r.field_problem in FIELD_PROBLEMS  # what is wrong, counted and logged by the proxy (issue 13 #15)
    assert dataclasses.replace(r, field_problem=None) == Recognition(None, False, True, "bad_ragtap_field")
    # ... and the implicit rules still run; the problem is still reported.
    body = langchain_body(RLM_RAG_PROMPT.format(question=QUESTION, context=DOCS[0]), ragtap=field)
    r = recognise(body)
    assert r.context is not None and r.context.source == "langchain" and r.strip_ragtap_field
    assert r.field_problem in FIELD_PROBLEMS


def test_explicit_noop_objects() -> None:
    assert recognise(chat(ragtap={})) == Recognition(None, False, True, "no_context")
    assert recognise(chat(ragtap={"enabled": True})) == Recognition(None, False, True, "no_context")


# ------------------------------------------------------------------------------------------------------------
# XML blocks
# ------------------------------------------------------------------------------------------------------------


def test_xml_anthropic_documents_in_user_message() -> None:
    content = (
        "<documents>\n"
        '<document index="1">\n<source>annual_report_2023.pdf</source>\n'
        "<document_content>\nRevenue grew 12%.\n</document_content>\n</document>\n"
        '<document index="2">\n<source>competitor.xlsx</source>\n'
        "<document_content>\nCompetitor revenue fell.\n</document_content>\n</document>\n"
        "</documents>\n\n"
        "Analyze the annual report.\nQuestion: How did revenue change?"
    )
    r = recognise(chat(content))
    assert r.context is not None and r.context.source == "xml"
    assert r.context.question == "How did revenue change?"
    assert r.context.documents == (Document("Revenue grew 12%.", "1"), Document("Competitor revenue fell.", "2"))


def test_xml_docs_in_system_message_question_is_last_user() -> None:
    system = (
        "Answer from the context only.\n<context>\n<doc id=\"kb-1\">Reset the router by holding the button.</doc>\n"
        "<doc id='kb-2'>The router light blinks red when offline.</doc>\n</context>"
    )
    body = {"messages": [{"role": "system", "content": system}, {"role": "user", "content": "How do I reset it?"}]}
    r = recognise(body)
    assert r.context is not None and r.context.question == "How do I reset it?"
    assert r.context.documents == (
        Document("Reset the router by holding the button.", "kb-1"),
        Document("The router light blinks red when offline.", "kb-2"),
    )


def test_xml_context_without_inner_documents_and_question_tag() -> None:
    content = f"<context>\n{DOCS[0]}\n\n{DOCS[1]}\n</context>\n<question>{QUESTION}</question>"
    r = recognise(chat(content))
    assert r.context is not None and r.context.question == QUESTION and texts(r) == DOCS[:2]


def test_xml_question_is_text_outside_the_block() -> None:
    r = recognise(chat(f"{QUESTION}\n<context><document data-id='x'>{DOCS[0]}</document></context>"))
    assert r.context is not None and r.context.question == QUESTION
    assert r.context.documents == (Document(DOCS[0]),)  # data-id is not an id


def test_xml_block_without_question_is_not_rag() -> None:
    assert recognise(chat(f"<context>{DOCS[0]}</context>")).context is None


# ------------------------------------------------------------------------------------------------------------
# Tool messages (agent-style RAG)
# ------------------------------------------------------------------------------------------------------------

RETRIEVE_TOOL = {
    "type": "function",
    "function": {
        "name": "retrieve_context",
        "description": "Retrieve information to help answer a query.",
        "parameters": {"properties": {"query": {"type": "string"}}, "required": ["query"], "type": "object"},
    },
}


def agent_body(tool_contents: list[object], tools: bool = True, question: str = QUESTION) -> dict:
    """What a LangChain v1 `create_agent` sends on the call after the retrieval tool ran."""
    messages: list[dict] = [
        {"role": "system", "content": "You have access to a tool that retrieves context from a blog post."},
        {"role": "user", "content": question},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": f"call_{i}", "type": "function",
                 "function": {"name": "retrieve_context", "arguments": json.dumps({"query": question})}}
                for i in range(len(tool_contents))
            ],
        },
    ]
    messages += [{"role": "tool", "content": c, "tool_call_id": f"call_{i}"} for i, c in enumerate(tool_contents)]
    body: dict = {"messages": messages, "model": "gpt-4o-mini", "stream": False}
    if tools:
        body["tools"] = [RETRIEVE_TOOL]
    return body


def langchain_serialized(docs: list[str]) -> str:
    """The LangChain agentic-RAG tutorial tool: f"Source: {doc.metadata}\\nContent: {doc.page_content}"."""
    return "\n\n".join(
        f"Source: {{'source': 'https://lilianweng.github.io/posts/2023-06-23-agent/', 'start_index': {i}}}\n"
        f"Content: {d}" for i, d in enumerate(docs)
    )


def test_tool_string_langchain_agent_keeps_multi_paragraph_documents() -> None:
    docs = [DOCS[0] + "\n\nIt is also called task planning.", DOCS[1]]
    r = recognise(agent_body([langchain_serialized(docs)]))
    assert r.context is not None and r.context.source == "tool" and r.context.question == QUESTION
    assert len(texts(r)) == 2 and texts(r)[0].endswith("It is also called task planning.")
    assert (r.inject, r.reason) == (False, "client_tools")  # the agent still offers tools
    r = recognise(agent_body([langchain_serialized(docs)], tools=False))
    assert (r.inject, r.reason) == (True, "tool")


def test_tool_content_parts_and_json_lists() -> None:
    parts = [{"type": "text", "text": DOCS[0]}, {"type": "text", "text": DOCS[1]}]
    assert texts(recognise(agent_body([parts]))) == [DOCS[0] + "\n" + DOCS[1]]
    as_objects = json.dumps([{"page_content": DOCS[0], "metadata": {"source": "a"}, "id": "d1"},
                             {"text": DOCS[1]}, {"irrelevant": 1}])
    r = recognise(agent_body([as_objects, json.dumps([DOCS[2]])]))
    assert r.context is not None
    assert r.context.documents == (Document(DOCS[0], "d1"), Document(DOCS[1]), Document(DOCS[2]))
    search = json.dumps({"query": "x", "results": [{"url": "https://a.example", "content": DOCS[0]}]})
    assert recognise(agent_body([search])).context.documents == (Document(DOCS[0], "https://a.example"),)


@pytest.mark.parametrize("output", ["42", json.dumps({"temperature": 21, "unit": "C"}), "", "  ", "3.5e2",
                                    "Error: ValueError('boom')\n Please fix your mistakes.", [], None, 7])
def test_tool_outputs_that_are_not_retrieval(output: object) -> None:
    assert recognise(agent_body([output])) == Recognition(None, False, False, "no_context")


def test_tool_results_before_the_last_user_message_are_history() -> None:
    body = agent_body([langchain_serialized(DOCS)], tools=False)
    body["messages"] += [{"role": "assistant", "content": "Done."}, {"role": "user", "content": "Thanks!"}]
    assert recognise(body).context is None


# ------------------------------------------------------------------------------------------------------------
# Config patterns
# ------------------------------------------------------------------------------------------------------------


ACME_CONFIG = """
[[recognise.patterns]]
name = "acme_support"                 # becomes RagContext.source
regex = '''Knowledge:\\n(?P<context>.*?)\\n#####\\nCustomer asks: (?P<question>.*)'''
roles = ["user"]                      # optional, default ["user", "system"]
separator = "\\n=====\\n"               # optional, a literal string; default: blank lines
"""


def test_custom_pattern_from_config_is_tried_first() -> None:
    (pattern,) = patterns_from_config(tomllib.loads(ACME_CONFIG)["recognise"]["patterns"])
    content = f"Knowledge:\n{DOCS[0]}\n=====\n{DOCS[1]}\n#####\nCustomer asks: {QUESTION}"
    r = recognise(chat(content), [pattern])
    assert r.context is not None and r.context.source == "acme_support"
    assert r.context.question == QUESTION and texts(r) == DOCS[:2]
    assert (r.inject, r.reason) == (True, "custom_pattern")
    # Tried before the built-ins: a pattern that also matches the rlm prompt wins.
    grab = CustomPattern(name="mine", regex=r"Context: (?P<context>.*?)\nAnswer:(?P<question>)")
    rlm = langchain_body(RLM_RAG_PROMPT.format(question=QUESTION, context=DOCS[0]))
    assert recognise(rlm, [grab]).context.source == "langchain"  # empty question -> pattern does not count
    grab = CustomPattern(name="mine", regex=r"Question: (?P<question>.*?)\nContext: (?P<context>.*?)\nAnswer:")
    assert recognise(rlm, [grab]).context.source == "mine"


def test_custom_pattern_without_question_group_uses_last_user_message() -> None:
    pattern = CustomPattern(name="kb", regex=r"^KB:\n(?P<context>.*)$", roles=("system",))
    body = {"messages": [{"role": "system", "content": f"KB:\n{DOCS[0]}\n\n{DOCS[1]}"},
                         {"role": "user", "content": QUESTION}]}
    r = recognise(body, [pattern])
    assert r.context is not None and r.context.question == QUESTION and texts(r) == DOCS[:2]


@pytest.mark.parametrize(
    "entries",
    [
        "nope", [1], [{"name": "x"}], [{"name": "", "regex": "(?P<context>.)"}], [{"name": "x", "regex": "("}],
        [{"name": "x", "regex": "(?P<question>.)"}], [{"name": "x", "regex": "(?P<context>.)", "roles": "user"}],
        [{"name": "x", "regex": "(?P<context>.)", "separator": ""}],
        [{"name": "x", "regex": "(?P<context>.)", "colour": "red"}],
        [{"name": "x", "regex": "(?P<context>.)"}, {"name": "x", "regex": "(?P<context>.)"}],
    ],
)
def test_bad_pattern_config_fails_at_load(entries: object) -> None:
    with pytest.raises(ValueError):
        patterns_from_config(entries)


def test_custom_pattern_only_reads_last_user_turn() -> None:
    pattern = CustomPattern(name="p", regex=r"DOCS:(?P<context>.*)\nQ:(?P<question>.*)")
    body = {"messages": [{"role": "user", "content": "DOCS: old doc\nQ: old question"},
                         {"role": "assistant", "content": "old answer"},
                         {"role": "user", "content": "follow-up?"}]}
    assert recognise(body, [pattern]).context is None


# ------------------------------------------------------------------------------------------------------------
# Client-owned reply formats
# ------------------------------------------------------------------------------------------------------------

RLM_CONTENT = RLM_RAG_PROMPT.format(question=QUESTION, context="\n\n".join(DOCS))


@pytest.mark.parametrize(
    ("extra", "reason"),
    [
        ({"response_format": {"type": "json_object"}}, "client_response_format"),
        ({"response_format": {"type": "json_schema", "json_schema": {"name": "a", "schema": {}}}},
         "client_response_format"),
        ({"tools": [RETRIEVE_TOOL]}, "client_tools"),
        ({"functions": [RETRIEVE_TOOL["function"]]}, "client_tools"),
        ({"n": 3}, "n_gt_1"),
    ],
)
def test_client_owns_the_format_but_context_is_returned(extra: dict, reason: str) -> None:
    r = recognise(langchain_body(RLM_CONTENT, **extra))
    assert r.context is not None and texts(r) == DOCS
    assert (r.inject, r.reason) == (False, reason)


@pytest.mark.parametrize("extra", [{"response_format": {"type": "text"}}, {"response_format": None}, {"n": 1},
                                   {"tools": []}, {"n": True}])
def test_settings_that_leave_the_format_alone(extra: dict) -> None:
    assert recognise(langchain_body(RLM_CONTENT, **extra)).inject


# ------------------------------------------------------------------------------------------------------------
# Content parts, non-RAG chats, malformed bodies
# ------------------------------------------------------------------------------------------------------------


def test_content_parts_use_the_text_parts() -> None:
    parts = [
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
        {"type": "text", "text": RLM_CONTENT},
    ]
    r = recognise(chat(parts))
    assert r.context is not None and r.context.question == QUESTION and texts(r) == DOCS


@pytest.mark.parametrize(
    "content",
    [
        "What is 2+2?",
        "Can you give me some context on the French Revolution?",
        "In React, when should I use the Context API? What context does useContext read?",
        "Context: I'm a beginner.\nQuestion: how do I learn Python?",  # labels but no Answer: cue
        "Explain the LlamaIndex template 'Context information is below.' to me.",
        "How do I write <context> tags in XML?",
        "Write me a prompt that says: Use the following pieces of context to answer the user's question.",
    ],
)
def test_plain_chats_are_not_rag(content: str) -> None:
    assert recognise(chat(content)) == Recognition(None, False, False, "no_context")


def test_template_in_an_earlier_turn_is_history() -> None:
    body = langchain_body(RLM_CONTENT)
    body["messages"] += [{"role": "assistant", "content": "It is..."}, {"role": "user", "content": "Thanks"}]
    assert recognise(body).context is None


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (None, "bad_body"), ([], "bad_body"), ("x", "bad_body"), (3, "bad_body"),
        ({}, "bad_messages"), ({"messages": "hi"}, "bad_messages"), ({"messages": {"role": "user"}}, "bad_messages"),
        ({"messages": []}, "no_question"), ({"messages": [1, None, "x", []]}, "no_question"),
        ({"messages": [{"role": "user", "content": 5}]}, "no_question"),
        ({"messages": [{"role": ["user"], "content": "x"}, {"role": {"a": 1}}]}, "no_question"),
        ({"messages": [{"role": "user", "content": [1, {"type": "text", "text": 3}, {"type": "text"}]}]},
         "no_question"),
        ({"messages": "hi", "ragtap": 1}, "bad_ragtap_field"),
    ],
)
def test_malformed_bodies(body: object, reason: str) -> None:
    assert recognise(body).reason == reason


@pytest.mark.parametrize(
    "text",
    [
        "<context></context>" + "<context> a " * 20000 + "Question: q",  # was minutes with a lazy regex
        "<context>" + "<document id='1'> x" * 20000 + "</context> q",
        "<context><documents>" * 20000 + "</documents> q",
        "Context information is below.\n-----\n" + "\nGiven the x" * 20000 + "\nQuery: q",
        "Use the context information below to assist the user.\n" + ("-" * 20 + "x\n") * 20000,
        ("\nQuestion: a\nContext: b" * 20000) + "\nAnswer:",
        "Context: " + ("file_path: a:b:c:d:e:f:g:h\n" * 5000) + "\nQuestion: q\nAnswer:",
    ],
)
def test_adversarial_texts_stay_linear(text: str) -> None:
    """Hundreds of KB of template fragments: milliseconds, never a regex blow-up (generous bound for slow CI)."""
    import time

    body = {"messages": [{"role": "system", "content": text}, {"role": "user", "content": text}]}
    started = time.perf_counter()
    recognise(body)
    assert time.perf_counter() - started < 2.0


def test_split_documents() -> None:
    assert split_documents(" a \n\n\n b\r\n\r\nc \n \n") == ["a", "b", "c"]
    assert split_documents("intro\n\nfile_path: /a\n\nx\n\ny\n\nfile_path: /b\n\nz") == [
        "intro", "file_path: /a\n\nx\n\ny", "file_path: /b\n\nz"]


def test_every_template_passes_the_cheap_gate() -> None:
    """`may_hold_context` guards all the template rules: each rule's fixed words must pass it."""
    from importlib import import_module

    lc_cq, lc_sys, li_chat, li_qa = (import_module(f"ragtap.recognise.rules.{name}") for name in (
        "langchain_context_then_question", "langchain_system", "llamaindex_context_chat", "llamaindex_text_qa"))
    from ragtap.recognise.text import may_hold_context

    words = [*li_qa._TEXT_QA_HEADERS, *li_chat._CONTEXT_CHAT_HEADERS, *lc_cq._CONTEXT_THEN_QUESTION_INTROS,
             lc_sys._STUFF_CHAT_INTRO, lc_sys._RETRIEVED_CONTEXT_INTRO, "Context:", "<context>", "<documents>"]
    assert all(may_hold_context(w) for w in words)


# ------------------------------------------------------------------------------------------------------------
# Properties
# ------------------------------------------------------------------------------------------------------------

FRAGMENTS = [
    "Context information is below.", "\n---------------------\n", "\n--------------------\n", "\n----------------\n",
    "Given the context information and not prior knowledge, answer the query.", "\nQuery: ", "\nAnswer: ",
    "Question:", "\nQuestion: ", "Context:", "\nContext: ", "Helpful Answer:", "\n\n", "\n", "<context>",
    "</context>", '<document id="1">', "<document index='2'>", "</document>", "<documents>", "</documents>",
    "<doc>", "</doc>", "<document_content>", "</document_content>", "<question>", "</question>",
    "file_path: /x.txt\n\n", "page_label: 3\n", "Source: {}\nContent: ",
    "Use the context information below to assist the user.",
    "Use the following pieces of context to answer the user's question.",
    "Use the following pieces of retrieved context to answer the question.",
    "Answer the question based only on the following context:",
    "Use the following pieces of context to answer the question at the end.",
    '[{"page_content": "x"}]', '{"results": [{"text": "y", "id": 1}]}', "[", "{", '"', "Error:", "42",
]
json_leaves = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12)
json_values = st.recursive(
    json_leaves,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=16,
)
texty = st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=8), max_size=10).map("".join)
contents = (
    texty
    | st.lists(st.fixed_dictionaries({"type": st.sampled_from(["text", "image_url"]), "text": texty}) | json_values,
               max_size=3)
    | json_values
)
messages = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "system", "developer", "assistant", "tool", "function"]) | json_values},
    optional={"content": contents, "tool_calls": json_values},
) | st.dictionaries(st.text(max_size=8), json_values, max_size=3) | json_values
ragtap_fields = json_values | st.fixed_dictionaries(
    {},
    optional={
        "question": texty | json_values,
        "documents": st.lists(texty | st.fixed_dictionaries({"text": texty}, optional={"id": json_values})
                              | json_values, max_size=3) | json_values,
        "enabled": json_values,
    },
)
bodies = json_values | st.fixed_dictionaries(
    {"messages": st.lists(messages, max_size=6) | json_values},
    optional={"ragtap": ragtap_fields, "tools": json_values, "response_format": json_values, "n": json_values,
              "functions": json_values},
)
fuzz_patterns = st.lists(
    st.builds(CustomPattern, name=st.sampled_from(["p1", "p2"]),
              regex=st.sampled_from([r"Q:(?P<question>.*?)C:(?P<context>.*)", r"(?P<context>Context.*)",
                                     r"(?P<question>x)?(?P<context>\d+)"]),
              roles=st.sampled_from([("user",), ("system", "tool"), ("user", "assistant")]),
              separator=st.sampled_from([None, "\n", "|"])),
    max_size=2,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=bodies, patterns=fuzz_patterns)
def test_never_raises_never_mutates(body: object, patterns: list[CustomPattern]) -> None:
    before = copy.deepcopy(body)
    r = recognise(body, patterns)
    assert body == before
    assert isinstance(r, Recognition) and r.reason != "internal_error"
    assert r.strip_ragtap_field == (isinstance(body, dict) and "ragtap" in body)
    if r.context is None:
        assert not r.inject
    else:
        assert r.context.question and r.context.question == r.context.question.strip()
        assert r.context.documents
        assert all(d.text and d.text == d.text.strip() for d in r.context.documents)


# Texts that cannot collide with the template words: one line each, letters, digits and simple punctuation.
plain = st.text(alphabet=string.ascii_letters + string.digits + " .,?'", min_size=1, max_size=60).map(
    str.strip).filter(bool)


@settings(max_examples=200, deadline=None)
@given(question=plain, docs=st.lists(plain, min_size=1, max_size=6), which=st.sampled_from(
    ["rlm", "text_qa", "context_chat", "stuff", "xml", "explicit"]))
def test_round_trip(question: str, docs: list[str], which: str) -> None:
    context = "\n\n".join(docs)
    if which == "rlm":
        body = langchain_body(RLM_RAG_PROMPT.format(question=question, context=context))
    elif which == "text_qa":
        body = llamaindex_query_body(context, question)
    elif which == "context_chat":
        body = {"messages": [{"role": "system", "content": LLAMAINDEX_CONTEXT_CHAT.format(context_str=context)},
                             {"role": "user", "content": question}]}
    elif which == "stuff":
        body = langchain_body(LANGCHAIN_STUFF.format(context=context, question=question))
    elif which == "xml":
        inner = "".join(f'<document id="{i}">{d}</document>' for i, d in enumerate(docs))
        body = chat(f"<context>{inner}</context>\n{question}")
    else:
        body = chat("hi", ragtap={"question": question, "documents": docs})
    r = recognise(body)
    assert r.context is not None, which
    assert r.context.question == question
    assert texts(r) == docs


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chat=st.lists(messages, min_size=1, max_size=6), fill=st.sampled_from(["", "x" * 40, "<" * 40, "next text: ", "Trip 7. "]))
def test_the_plain_chat_shortcut_decides_as_the_rules(chat: list[object], fill: str) -> None:
    """`_some_rule_may_match` lets a request skip the rules only when they would not match it: with the shortcut
    the rules find what they find without it (the user message's gate results it keeps included)."""
    from ragtap.recognise import recogniser
    from ragtap.recognise.text import message_text

    chat = [{**m, "content": fill + m["content"]} if isinstance(m, dict) and isinstance(m.get("content"), str) else m for m in chat]
    users = [i for i, m in enumerate(chat) if isinstance(m, dict) and m.get("role") == "user"]
    last_user = users[-1] if users else -1
    question = message_text(chat[last_user].get("content")) if last_user >= 0 else ""  # type: ignore[union-attr]
    if not question:
        return
    without = recogniser._match_rules(chat, last_user, question, {})
    kept: dict = {}
    if recogniser._some_rule_may_match(chat, last_user, question, kept):
        assert recogniser._match_rules(chat, last_user, question, kept) == without
    else:
        assert without is None


def test_the_plain_chat_shortcut_keeps_every_rule() -> None:
    """Every built-in rule's first gate is among the shortcut's (a new rule with a new gate is tried too)."""
    from ragtap.recognise import recogniser
    from ragtap.recognise.rules import RULES

    for rule in RULES:
        if rule.place == "user":
            assert rule.gates[0] in recogniser._USER_FIRSTS
        elif rule.place == "system":
            assert rule.gates[0] in recogniser._SYSTEM_FIRSTS
        else:
            assert rule.place == "tools"
