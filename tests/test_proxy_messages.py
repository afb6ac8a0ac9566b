"""The Anthropic Messages API (`POST /v1/messages`) through ragtap, with the official anthropic SDK over real HTTP.

Each test sends the same request through ragtap and directly to the scripted upstream (which replies in plain
text when ragtap's instruction is absent, in JSON when it is present, as Claude asked for JSON would), and checks
that the app sees through ragtap what it sees directly: the same text, the same blocks, the same events in the
same order, the upstream's ids, usage and stop reason; byte for byte where ragtap does not rewrite.  Recognition
reads documents from the system prompt (a framework's template), `document` / `search_result` blocks, the
explicit `ragtap` field; with citations on, nothing is injected and the cited spans are the supporting content.
(All of it is new: before, /v1/messages went through the passthrough untouched.)
"""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import anthropic
import pytest

from ragtap.testing.upstream import ScriptedReply, json_reply, was_injected
from ragtap.types import Verdict

from conftest import ANSWER, DOCUMENTS, QUESTION, SUPPORTING, explicit, fixed, sse_events

MODEL = "claude-haiku-4-5-20251001"
LANGCHAIN_SYSTEM = (
    "You are an assistant for question-answering tasks. Use the following pieces of retrieved context to answer the question. "
    "If you don't know the answer, say that you don't know.\n\n" + "\n\n".join(DOCUMENTS)
)
DOCUMENT_BLOCK = {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": DOCUMENTS[0]}, "title": "nitro.md"}


def answering(plain: str = ANSWER, supporting: str = SUPPORTING, **reply: Any):  # type: ignore[no-untyped-def]
    """A model that follows the instruction when it is there, and answers `plain` the same either way."""

    def script(body: dict[str, Any]) -> ScriptedReply:
        return ScriptedReply(json_reply(plain, supporting) if was_injected(body) else plain, **reply)

    return script


def client(base_url: str) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(base_url=base_url, api_key="sk-ant-test", max_retries=0, timeout=60.0)


def via(proxy) -> anthropic.AsyncAnthropic:  # type: ignore[no-untyped-def]
    return client(proxy.url)  # the SDK adds /v1/messages, as with ANTHROPIC_BASE_URL=http://ragtap:8787


def direct(proxy) -> anthropic.AsyncAnthropic:  # type: ignore[no-untyped-def]
    return client(proxy.upstream.base_url.removesuffix("/v1"))


def ask(**extra: Any) -> dict[str, Any]:
    return {"model": MODEL, "max_tokens": 512, "system": LANGCHAIN_SYSTEM, "messages": [{"role": "user", "content": QUESTION}], **extra}


def with_documents(*blocks: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"model": MODEL, "max_tokens": 512, "messages": [{"role": "user", "content": [*blocks, {"type": "text", "text": QUESTION}]}], **extra}


async def raw(sdk: anthropic.AsyncAnthropic, **request: Any) -> bytes:
    async with sdk.messages.with_streaming_response.create(**request) as response:
        return await response.read()


def _text(events: list[dict[str, Any]]) -> str:
    return "".join(e["delta"]["text"] for e in events if e["type"] == "content_block_delta" and e["delta"]["type"] == "text_delta")


def _without_text(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events but their text deltas, ids and output token counts blanked (one upstream, two requests: the
    injected reply is longer, and its usage is the upstream's real count)."""
    out = []
    for event in events:
        if event["type"] == "content_block_delta" and event["delta"]["type"] == "text_delta":
            continue
        text = json.dumps(event, sort_keys=True)
        event = json.loads(text.replace(event.get("message", {}).get("id", "\0"), "msg_X"))
        if event["type"] == "message_delta":
            event["usage"]["output_tokens"] = "X"
        out.append(event)
    return out


# --- not RAG: bytes unchanged -----------------------------------------------------------------------------------


async def test_plain_request_and_reply_unchanged(start_proxy) -> None:
    proxy = await start_proxy(fixed("Hello there."))
    request = {"model": MODEL, "max_tokens": 64, "messages": [{"role": "user", "content": "Say hello."}]}
    async with via(proxy) as sdk:
        assert await raw(sdk, **request) == proxy.upstream.sent[-1]
        assert await raw(sdk, **request, stream=True) == proxy.upstream.sent[-1]
    exchange = await proxy.collector.exchange(2)
    assert (exchange.route, exchange.recognition, exchange.injected, exchange.provider) == ("/v1/messages", "no_context", False, "anthropic")
    assert proxy.collector.scored == []


# --- RAG, injected ----------------------------------------------------------------------------------------------


async def test_documents_in_the_system_prompt_are_injected_and_the_app_sees_the_plain_answer(start_proxy) -> None:
    proxy = await start_proxy(answering())
    async with via(proxy) as sdk, direct(proxy) as alone_sdk:
        through = await sdk.messages.create(**ask())
        sent = proxy.upstream_body()
        upstream_reply = json.loads(proxy.upstream.sent[-1])
        alone = await alone_sdk.messages.create(**ask())
    assert sent["system"].startswith(LANGCHAIN_SYSTEM + "\n\n") and "supporting_content" in sent["system"]
    assert through.content[0].text == alone.content[0].text == ANSWER
    assert [b.type for b in through.content] == ["text"]
    assert (through.id, through.stop_reason, through.model) == (upstream_reply["id"], "end_turn", MODEL)
    assert through.usage.model_dump(exclude_none=True) == upstream_reply["usage"]

    interaction, assessment = await proxy.collector.assessment()
    assert (interaction.question, [d.text for d in interaction.documents]) == (QUESTION, DOCUMENTS)
    assert (interaction.answer, interaction.supporting, interaction.id) == (ANSWER, SUPPORTING, through.id)
    assert assessment.verdict == Verdict.GROUNDED
    exchange = await proxy.collector.exchange()
    assert (exchange.recognition, exchange.injected, exchange.provider) == ("langchain", True, "anthropic")
    assert (exchange.input_tokens, exchange.output_tokens, exchange.finish_reasons) == (100, upstream_reply["usage"]["output_tokens"], ("end_turn",))
    assert exchange.overhead is not None and exchange.overhead.cost_usd is not None  # Claude has a price in [cost]


async def test_system_blocks_keep_their_cache_breakpoint_and_get_one_more_block(start_proxy) -> None:
    proxy = await start_proxy(answering())
    system = [{"type": "text", "text": LANGCHAIN_SYSTEM, "cache_control": {"type": "ephemeral"}}]
    async with via(proxy) as sdk:
        message = await sdk.messages.create(**ask(system=system))
    sent = proxy.upstream_body()["system"]
    assert sent[0] == system[0] and len(sent) == 2 and "supporting_content" in sent[1]["text"]
    assert message.content[0].text == ANSWER


async def test_injected_stream_is_what_the_app_sees_directly(start_proxy) -> None:
    proxy = await start_proxy(answering(piece_chars=3, cache_read_tokens=40, cache_creation_tokens=7))
    async with via(proxy) as sdk, direct(proxy) as alone_sdk:
        async with sdk.messages.stream(**ask()) as stream:
            texts = [text async for text in stream.text_stream]
            final = await stream.get_final_message()
        assert "".join(texts) == ANSWER and final.content[0].text == ANSWER and final.stop_reason == "end_turn"

        through_raw = await raw(sdk, **ask(), stream=True)
        upstream_raw = proxy.upstream.sent[-1]
        alone = sse_events(await raw(alone_sdk, **ask(), stream=True))
    assert b"supporting" not in through_raw
    through = sse_events(through_raw)
    for block in (b for b in through_raw.split(b"\n\n") if b):  # every event keeps its `event:` line
        event_line, data_line = block.split(b"\n")
        assert event_line == b"event: " + json.loads(data_line[6:])["type"].encode()
    kinds = [e["type"] for e in through]
    assert kinds[:3] == ["message_start", "content_block_start", "ping"] and kinds[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    assert _text(through) == _text(alone) == ANSWER
    assert _without_text(through) == _without_text(alone)
    upstream_events = sse_events(upstream_raw)
    assert through[0] == upstream_events[0] and through[-2] == upstream_events[-2]  # message_start / message_delta: usage, stop_reason

    for n in (1, 2):
        interaction, assessment = await proxy.collector.assessment(n)
        assert (interaction.answer, interaction.supporting, interaction.unscored_reason) == (ANSWER, SUPPORTING, None)
    exchange = await proxy.collector.exchange(2)
    assert (exchange.input_tokens, exchange.cached_input_tokens, exchange.cache_creation_input_tokens) == (147, 40, 7)
    assert exchange.first_token_at is not None


async def test_document_blocks_are_the_documents(start_proxy) -> None:
    proxy = await start_proxy(answering())
    content_source = {"type": "document", "source": {"type": "content", "content": [{"type": "text", "text": "Nitro is AWS's hypervisor."}]}}
    search = {"type": "search_result", "source": "https://kb/ec2", "title": "EC2", "content": [{"type": "text", "text": "EC2 APIs are stable."}]}
    async with via(proxy) as sdk:
        message = await sdk.messages.create(**with_documents(DOCUMENT_BLOCK, content_source, search))
    assert message.content[0].text == ANSWER
    assert "supporting_content" in proxy.upstream_body()["system"]
    interaction, _ = await proxy.collector.assessment()
    assert interaction.question == QUESTION
    assert [(d.text, d.id) for d in interaction.documents] == [(DOCUMENTS[0], "nitro.md"), ("Nitro is AWS's hypervisor.", None),
                                                                ("EC2 APIs are stable.", "https://kb/ec2")]
    assert (await proxy.collector.exchange()).recognition == "anthropic_documents"


async def test_a_pdf_document_is_not_read_and_the_reason_says_so(start_proxy) -> None:
    proxy = await start_proxy(answering())
    pdf = {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0xLjQK"}}
    request = with_documents(DOCUMENT_BLOCK, pdf)
    async with via(proxy) as sdk:
        body = await raw(sdk, **request)
    assert body == proxy.upstream.sent[-1]
    assert "system" not in proxy.upstream_body()
    exchange = await proxy.collector.exchange()
    assert (exchange.recognition, exchange.injected) == ("unreadable_documents", False)
    assert proxy.collector.scored == []


async def test_the_explicit_ragtap_field_is_stripped_and_decides(start_proxy) -> None:
    proxy = await start_proxy(answering())
    async with via(proxy) as sdk:
        message = await sdk.messages.create(model=MODEL, max_tokens=64, messages=[{"role": "user", "content": QUESTION}], extra_body=explicit())
    assert message.content[0].text == ANSWER and "ragtap" not in proxy.upstream_body()
    interaction, _ = await proxy.collector.assessment()
    assert [d.text for d in interaction.documents] == DOCUMENTS
    assert (await proxy.collector.exchange()).recognition == "explicit"


@pytest.mark.parametrize(("extra", "reason"), [
    ({"tools": [{"name": "lookup", "description": "find", "input_schema": {"type": "object", "properties": {}}}]}, "client_tools"),
    ({"thinking": {"type": "enabled", "budget_tokens": 1024}}, "client_thinking"),
    ({"messages": [{"role": "user", "content": QUESTION}, {"role": "assistant", "content": "The answer is"}]}, "client_prefill"),
])
async def test_tools_thinking_and_prefill_get_no_instruction_and_are_scored_from_a_copy(start_proxy, extra: dict[str, Any], reason: str) -> None:
    proxy = await start_proxy(answering())
    async with via(proxy) as sdk:
        body = await raw(sdk, **ask(**extra))
    assert body == proxy.upstream.sent[-1]
    assert proxy.upstream_body()["system"] == LANGCHAIN_SYSTEM
    interaction, _ = await proxy.collector.assessment()
    assert (interaction.answer, interaction.supporting) == (ANSWER, None)
    assert (await proxy.collector.exchange()).recognition == reason


# --- citations: the cited spans are the supporting content --------------------------------------------------------

CITED = [
    {"type": "text", "text": "According to the documentation, "},
    {"type": "text", "text": "the APIs stay the same", "citations": [{
        "type": "char_location", "cited_text": DOCUMENTS[0], "document_index": 0, "document_title": "nitro.md",
        "start_char_index": 0, "end_char_index": len(DOCUMENTS[0])}]},
    {"type": "text", "text": "."},
]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_with_citations_nothing_is_injected_and_the_cited_spans_are_the_support(start_proxy, stream: bool) -> None:
    proxy = await start_proxy(fixed(ScriptedReply("", blocks=CITED, piece_chars=5)))
    cited = {**DOCUMENT_BLOCK, "citations": {"enabled": True}}
    async with via(proxy) as sdk:
        body = await raw(sdk, **with_documents(cited), **({"stream": True} if stream else {}))
        if not stream:
            message = await sdk.messages.create(**with_documents(cited))
            assert [b.citations[0].cited_text for b in message.content if b.citations] == [DOCUMENTS[0]]
    assert body == proxy.upstream.sent[0]  # unchanged, byte for byte
    assert "system" not in proxy.upstream.requests[0].body
    interaction, assessment = await proxy.collector.assessment()
    assert interaction.answer == "According to the documentation, the APIs stay the same."
    assert (interaction.supporting, interaction.unscored_reason) == (DOCUMENTS[0], None)
    assert assessment.scores.attributed_document == 0
    exchange = await proxy.collector.exchange()
    assert (exchange.recognition, exchange.injected) == ("client_citations", False)


# --- routes, errors ------------------------------------------------------------------------------------------------


async def test_base_url_without_v1_and_ragtap_errors_in_anthropic_shape(start_proxy) -> None:
    proxy = await start_proxy(answering(), upstream_url="http://127.0.0.1:9/v1")  # nothing listens there
    async with aiohttp.ClientSession() as http:
        for path in ("/v1/messages", "/messages"):
            async with http.post(proxy.url + path, json=ask(), headers={"x-api-key": "k", "anthropic-version": "2023-06-01"}) as response:
                assert response.status == 502
                assert (await response.json())["type"] == "error" and (await response.json())["error"]["type"] == "api_error"
    async with via(proxy) as sdk:
        with pytest.raises(anthropic.APIStatusError) as raised:
            await sdk.messages.create(**ask())
    assert raised.value.status_code == 502 and "upstream" in raised.value.message


async def test_the_upstream_error_reaches_the_app_unchanged(start_proxy) -> None:
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    proxy = await start_proxy(fixed(ScriptedReply(status=529, error_body=overloaded)))
    async with via(proxy) as sdk:
        with pytest.raises(anthropic.APIStatusError) as raised:
            await sdk.messages.create(**ask())
    assert raised.value.status_code == 529 and raised.value.body == overloaded
