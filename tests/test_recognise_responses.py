"""Recognition of Responses API requests: the chat rules over the chat request a Responses request amounts to."""

from __future__ import annotations

import json

from ragtap.recognise import REASONS, recognise_responses
from ragtap.recognise.responses import chat_view

from conftest import DOCUMENTS, QUESTION

LANGCHAIN = (
    "You are an assistant for question-answering tasks. Use the following pieces of retrieved context to answer the question. "
    "If you don't know the answer, say that you don't know.\n\n" + "\n\n".join(DOCUMENTS)
)


def test_instructions_and_string_input_read_as_system_and_user() -> None:
    assert chat_view({"instructions": "Sys", "input": "Hi"}) == {"messages": [{"role": "system", "content": "Sys"}, {"role": "user", "content": "Hi"}]}
    found = recognise_responses({"model": "m", "instructions": LANGCHAIN, "input": QUESTION})
    assert found.context is not None and found.inject and found.reason == "langchain"
    assert found.context.question == QUESTION and [d.text for d in found.context.documents] == DOCUMENTS


def test_input_items_with_content_parts_and_developer_role() -> None:
    body = {"input": [
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": LANGCHAIN}]},
        {"role": "user", "content": [{"type": "input_image", "image_url": "x"}, {"type": "input_text", "text": QUESTION}]},
    ]}
    found = recognise_responses(body)
    assert found.inject and found.context is not None and found.context.question == QUESTION


def test_file_search_results_in_input_are_documents() -> None:
    body = {"input": [
        {"role": "user", "content": QUESTION},
        {"type": "file_search_call", "id": "fs_1", "status": "completed", "queries": [QUESTION],
         "results": [{"file_id": "file-1", "filename": "ec2.md", "score": 0.9, "text": DOCUMENTS[0]}, {"file_id": "file-2", "text": "  "}]},
    ]}
    found = recognise_responses(body)
    assert found.context is not None and found.reason == "tool"
    assert [(d.text, d.id) for d in found.context.documents] == [(DOCUMENTS[0], "file-1")]


def test_file_search_without_results_is_not_rag() -> None:
    body = {"input": [{"role": "user", "content": QUESTION}, {"type": "file_search_call", "id": "fs_1", "status": "completed", "queries": []}]}
    assert recognise_responses(body).context is None


def test_function_call_output_after_the_question() -> None:
    body = {"input": [
        {"role": "user", "content": QUESTION},
        {"type": "function_call", "call_id": "c", "name": "retrieve", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c", "output": json.dumps({"documents": DOCUMENTS})},
    ]}
    found = recognise_responses(body)
    assert found.context is not None and found.inject and found.reason == "tool"


def test_client_settings_forbid_injection_but_keep_the_context() -> None:
    base = {"instructions": LANGCHAIN, "input": QUESTION}
    cases = [
        ({"text": {"format": {"type": "json_object"}}}, "client_response_format"),
        ({"tools": [{"type": "file_search", "vector_store_ids": ["vs_1"]}]}, "client_tools"),
        ({"background": True}, "client_background"),
    ]
    for extra, reason in cases:
        found = recognise_responses({**base, **extra})
        assert found.context is not None and not found.inject and found.reason == reason and reason in REASONS
    assert recognise_responses({**base, "text": {"format": {"type": "text"}, "verbosity": "low"}}).inject


def test_ragtap_field_and_bad_bodies() -> None:
    explicit = {"input": "anything", "ragtap": {"question": QUESTION, "documents": DOCUMENTS}}
    found = recognise_responses(explicit)
    assert found.reason == "explicit" and found.strip_ragtap_field
    assert recognise_responses({"input": "x", "ragtap": {"enabled": False}}).reason == "disabled"
    for body in (None, [], "x", {"input": 42}, {"input": [None, 3, {"type": "message"}]}, {"instructions": ["x"]}):
        found = recognise_responses(body)
        assert found.context is None and found.reason in REASONS
    body = {"instructions": LANGCHAIN, "input": QUESTION}
    snapshot = json.dumps(body)
    recognise_responses(body)
    assert json.dumps(body) == snapshot  # never mutated
