"""Recognition of Anthropic Messages requests (ragtap/recognise/messages.py) and the split's lead-in allowance
(ragtap/split/stream.py), as pure functions: the places Claude keeps retrieved text, the settings that forbid
injection, and what a preamble may be.  New with issue 25 (no Messages recogniser or lead-in existed before)."""

from __future__ import annotations

import pytest

from ragtap.recognise import REASONS, recognise_messages
from ragtap.recognise.messages import messages_view
from ragtap.split.messages import LEAD_IN_CHARS
from ragtap.split.reply import split_reply
from ragtap.split.stream import AnswerStreamExtractor

Q = "Which port does the billing service use?"
DOC = "The billing service listens on port 8443."


def text_doc(text: str = DOC, **extra: object) -> dict[str, object]:
    return {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": text}, **extra}


def user(*blocks: object) -> dict[str, object]:
    return {"role": "user", "content": list(blocks)}


def body(*messages: dict[str, object], **extra: object) -> dict[str, object]:
    return {"model": "claude-haiku-4-5", "max_tokens": 100, "messages": list(messages), **extra}


def test_document_blocks_anywhere_in_the_turns_and_in_tool_results_are_the_documents() -> None:
    search = {"type": "search_result", "source": "kb://1", "title": "KB", "content": [{"type": "text", "text": "Port 8443 is TLS."}]}
    request = body(
        user(text_doc(title="billing.md"), {"type": "text", "text": "Earlier question?"}),
        {"role": "assistant", "content": "Earlier answer."},
        user({"type": "tool_result", "tool_use_id": "t1", "content": [search]}, {"type": "text", "text": Q}),
    )
    found = recognise_messages(request)
    assert (found.reason, found.inject) == ("anthropic_documents", True)
    assert found.context is not None and found.context.question == Q
    assert [(d.text, d.id) for d in found.context.documents] == [(DOC, "billing.md"), ("Port 8443 is TLS.", "kb://1")]


def test_a_turn_of_tool_results_only_is_not_the_question() -> None:
    request = body(user({"type": "text", "text": Q}), {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "s", "input": {}}]},
                   user({"type": "tool_result", "tool_use_id": "t1", "content": [text_doc()]}))
    found = recognise_messages(request)
    assert found.context is not None and found.context.question == Q
    view = messages_view(request)
    assert [m["role"] for m in view["messages"]] == ["user", "assistant", "tool"]


@pytest.mark.parametrize("source", [
    {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="},
    {"type": "url", "url": "https://example.com/a.pdf"},
    {"type": "file", "file_id": "file_1"},
])
def test_a_document_ragtap_cannot_read_means_not_scored_and_says_why(source: dict[str, object]) -> None:
    found = recognise_messages(body(user(text_doc(), {"type": "document", "source": source}, {"type": "text", "text": Q})))
    assert (found.context, found.inject, found.reason) == (None, False, "unreadable_documents")


@pytest.mark.parametrize(("extra", "reason"), [
    ({"tools": [{"name": "x", "input_schema": {"type": "object"}}]}, "client_tools"),
    ({"thinking": {"type": "enabled", "budget_tokens": 2048}}, "client_thinking"),
    ({"thinking": {"type": "adaptive"}}, "client_thinking"),
    ({"output_config": {"format": {"type": "json_schema", "schema": {"type": "object"}}}}, "client_response_format"),
])
def test_client_settings_keep_the_context_but_forbid_injection(extra: dict[str, object], reason: str) -> None:
    found = recognise_messages(body(user(text_doc(), {"type": "text", "text": Q}), **extra))
    assert (found.inject, found.reason) == (False, reason) and found.context is not None


def test_thinking_disabled_still_injects_and_a_prefill_does_not() -> None:
    assert recognise_messages(body(user(text_doc(), {"type": "text", "text": Q}), thinking={"type": "disabled"})).inject
    prefilled = recognise_messages(body(user(text_doc(), {"type": "text", "text": Q}), {"role": "assistant", "content": "The port is"}))
    assert (prefilled.inject, prefilled.reason) == (False, "client_prefill")


def test_citations_enabled_means_no_injection() -> None:
    found = recognise_messages(body(user(text_doc(citations={"enabled": True}), {"type": "text", "text": Q})))
    assert (found.inject, found.reason) == (False, "client_citations") and found.context is not None


def test_the_chat_rules_read_system_blocks_and_the_explicit_field_wins() -> None:
    system = [{"type": "text", "text": "Use the following pieces of retrieved context to answer the question.\n\n" + DOC}]
    found = recognise_messages(body({"role": "user", "content": Q}, system=system))
    assert found.reason == "langchain" and found.context is not None and found.context.documents[0].text == DOC
    explicit = recognise_messages(body(user(text_doc("other"), {"type": "text", "text": Q}), ragtap={"question": Q, "documents": ["given"]}))
    assert (explicit.reason, explicit.strip_ragtap_field, [d.text for d in explicit.context.documents]) == ("explicit", True, ["given"])  # type: ignore[union-attr]


@pytest.mark.parametrize("request_body", [None, [], {"messages": "nope"}, {"messages": [1, {"role": 3}]}, body(user({"type": "document"}))])
def test_whatever_the_client_sends_recognition_gives_a_known_reason(request_body: object) -> None:
    found = recognise_messages(request_body)
    assert found.reason in REASONS and found.context is None


# --- the lead-in allowance ---------------------------------------------------------------------------------------

JSON = '{"answer": "Port 8443.", "supporting_content": "listens on port 8443"}'


@pytest.mark.parametrize("text", [
    "Here is the JSON:\n" + JSON,
    "Sure! Here's my reply in the `json` format you asked for:\n\n```json\n" + JSON + "\n```",
    "```\n" + JSON + "\n```",
])
def test_a_preamble_within_the_allowance_is_dropped(text: str) -> None:
    split = split_reply(text, lead_in=LEAD_IN_CHARS)
    assert (split.answer, split.supporting, split.unscored_reason) == ("Port 8443.", "listens on port 8443", None)
    extractor = AnswerStreamExtractor(lead_in=LEAD_IN_CHARS)
    streamed = "".join(extractor.feed(c) for c in text)  # one character at a time
    assert streamed + extractor.finish().remainder == "Port 8443."


def test_a_longer_preamble_is_the_models_own_prose_and_only_an_api_without_json_mode_allows_one() -> None:
    long = "x" * (LEAD_IN_CHARS + 1) + JSON
    assert split_reply(long, lead_in=LEAD_IN_CHARS).answer == long
    extractor = AnswerStreamExtractor(lead_in=LEAD_IN_CHARS)
    first = extractor.feed("x" * LEAD_IN_CHARS)
    assert first == ""  # held while it may still be a preamble
    assert extractor.feed("x") == "x" * (LEAD_IN_CHARS + 1)  # then forwarded from the start, unchanged
    assert split_reply("Here is the JSON:\n" + JSON).unscored_reason == "not_json"  # chat: no allowance


def test_text_after_the_object_follows_the_answer_after_a_blank_line() -> None:
    split = split_reply("```json\n" + JSON + "\n```\nHope this helps!", lead_in=LEAD_IN_CHARS)
    assert (split.answer, split.unscored_reason) == ("Port 8443.\n\nHope this helps!", "text_after_json")
