"""The Responses API (`POST /v1/responses`) through ragtap, with the official openai SDK over real HTTP.

Each test sends the same request through ragtap and directly to the scripted upstream (which replies in plain
text when ragtap's instruction is absent, in JSON when it is present, as a real model asked for JSON would), and
checks that the app sees through ragtap what it sees directly: the same text, the same structure, the same
events in the same order with gapless sequence numbers; byte for byte where ragtap does not rewrite.  Only the
ids and times of the two replies differ (one upstream, two requests), and the usage, which is the upstream's
real count for what it wrote.
"""

from __future__ import annotations

import asyncio
import gc
import json
import re
from typing import Any

import aiohttp
import openai
import pytest
from aiohttp import web

from ragtap.cost import instruction_tokens
from ragtap.prompts import prompt_text
from ragtap.proxy.exchange_path import Exchange
from ragtap.testing.responses_wire import ResponsesWire
from ragtap.testing.upstream import ScriptedReply, json_reply, was_injected
from ragtap.types import Verdict

from conftest import ANSWER, DOCUMENTS, QUESTION, SUPPORTING, explicit, fixed, sse_events

MODEL = "gpt-4.1-mini"
RAG_INPUT = [
    {"role": "user", "content": [{"type": "input_text", "text": "Documents:\n" + "\n".join(DOCUMENTS) + f"\n\nQuestion: {QUESTION}"}]},
]
LANGCHAIN_INSTRUCTIONS = (
    "You are an assistant for question-answering tasks. Use the following pieces of retrieved context to answer the question. "
    "If you don't know the answer, say that you don't know.\n\n" + "\n\n".join(DOCUMENTS)
)
REASONING = {"id": "rs_scripted", "type": "reasoning", "summary": [], "status": "completed"}


def answering(plain: str = ANSWER, supporting: str = SUPPORTING, **reply: Any):  # type: ignore[no-untyped-def]
    """A model that follows the instruction when it is there, and answers `plain` the same either way."""

    def script(body: dict[str, Any]) -> ScriptedReply:
        return ScriptedReply(json_reply(plain, supporting) if was_injected(body) else plain, **reply)

    return script


def direct(proxy):  # type: ignore[no-untyped-def]
    """The same SDK client, pointed at the upstream itself."""
    return proxy.client.with_options(base_url=proxy.upstream.base_url)


_IDS = re.compile(r"(resp|msg)_scripted_\d+")


def normalised(value: Any) -> Any:
    """A reply with what differs between two calls to one upstream (ids, times, the token count) blanked."""
    text = _IDS.sub(r"\1_X", json.dumps(value, sort_keys=True))
    value = json.loads(text)

    def blank(node: Any) -> None:
        if isinstance(node, dict):
            for key in ("created_at", "usage"):
                if key in node:
                    node[key] = "X"
            for child in node.values():
                blank(child)
        elif isinstance(node, list):
            for child in node:
                blank(child)

    blank(value)
    return value


async def _raw(client, **request: Any) -> bytes:  # type: ignore[no-untyped-def]
    async with client.responses.with_streaming_response.create(**request) as response:
        return await response.read()


def _without_deltas(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [normalised({k: v for k, v in e.items() if k != "sequence_number"}) for e in events if e["type"] != "response.output_text.delta"]


def _text(events: list[dict[str, Any]]) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")


# --- not RAG: bytes unchanged -----------------------------------------------------------------------------------


async def test_plain_request_and_reply_unchanged(start_proxy) -> None:
    proxy = await start_proxy(fixed("Hello there."))
    raw = await _raw(proxy.client, model=MODEL, input="Say hello.")
    assert raw == proxy.upstream.sent[-1]
    assert proxy.upstream.requests[-1].raw == proxy.client_bodies[-1]
    streamed = await _raw(proxy.client, model=MODEL, input="Say hello.", stream=True)
    assert streamed == proxy.upstream.sent[-1]
    exchange = await proxy.collector.exchange(2)
    assert (exchange.route, exchange.recognition, exchange.injected) == ("/v1/responses", "no_context", False)
    assert proxy.collector.scored == []


# --- RAG, injected ----------------------------------------------------------------------------------------------


async def test_injected_reply_is_what_the_app_sees_directly(start_proxy) -> None:
    proxy = await start_proxy(answering())
    request = {"model": MODEL, "input": RAG_INPUT, "instructions": "Be brief.", "extra_body": explicit()}
    through = await proxy.client.responses.create(**request)
    sent = proxy.upstream_body()
    assert "ragtap" not in sent
    assert sent["instructions"].startswith("Be brief.\n\n") and "supporting_content" in sent["instructions"]
    assert sent["text"] == {"format": {"type": "json_object"}}
    upstream_reply = json.loads(proxy.upstream.sent[-1])

    alone = await direct(proxy).responses.create(model=MODEL, input=RAG_INPUT, instructions="Be brief.")
    assert through.output_text == alone.output_text == ANSWER
    assert normalised(through.model_dump()) == normalised(alone.model_dump())
    # ids, status and usage are the upstream's own for the reply it wrote
    assert through.id == upstream_reply["id"] and through.usage.model_dump(exclude_unset=True) == upstream_reply["usage"]
    assert through.instructions == "Be brief." and through.text.format.type == "text"

    interaction, assessment = await proxy.collector.assessment()
    assert interaction.answer == ANSWER and interaction.supporting == SUPPORTING
    assert interaction.question == QUESTION and interaction.id == through.id
    assert assessment.verdict == Verdict.GROUNDED
    exchange = await proxy.collector.exchange()
    assert exchange.injected and exchange.recognition == "explicit" and exchange.input_tokens == 100
    # ragtap's own tokens: the instruction it appended (billed with the prompt) and the supporting content
    instruction = instruction_tokens(prompt_text(proxy.config.inject.prompt), MODEL)
    assert exchange.overhead is not None and exchange.overhead.input_tokens == instruction > 50
    assert exchange.overhead.output_tokens == exchange.supporting_tokens > 0


async def test_injected_stream_is_what_the_app_sees_directly(start_proxy) -> None:
    proxy = await start_proxy(answering(output_prefix=(REASONING,), piece_chars=3))
    request = {"model": MODEL, "input": RAG_INPUT, "extra_body": explicit()}
    async with proxy.client.responses.stream(**request) as stream:
        texts = [event.delta async for event in stream if event.type == "response.output_text.delta"]
        final = await stream.get_final_response()
    assert "".join(texts) == ANSWER and final.output_text == ANSWER
    assert final.instructions is None and final.text.format.type == "text"

    raw = await _raw(proxy.client, **request, stream=True)
    assert b"supporting" not in raw and b"json_object" not in raw  # neither the support nor ragtap's settings leak
    through = sse_events(raw)
    alone = sse_events(await _raw(direct(proxy), model=MODEL, input=RAG_INPUT, stream=True))
    assert [e["sequence_number"] for e in through] == list(range(len(through)))
    assert _text(through) == _text(alone) == ANSWER
    assert _without_deltas(through) == _without_deltas(alone)
    upstream_final = sse_events(proxy.upstream.sent[-2])[-1]["response"]  # (the upstream's reply to ragtap)
    assert through[-1]["response"]["usage"] == upstream_final["usage"]

    for n in (1, 2):
        interaction, assessment = await proxy.collector.assessment(n)
        assert interaction.answer == ANSWER and interaction.supporting == SUPPORTING and interaction.unscored_reason is None
        assert assessment.verdict == Verdict.GROUNDED


async def test_stream_keeps_event_lines_and_typed_sdk_events(start_proxy) -> None:
    proxy = await start_proxy(answering())
    raw = await _raw(proxy.client, model=MODEL, input=RAG_INPUT, stream=True, extra_body=explicit())
    blocks = [b for b in raw.split(b"\n\n") if b]
    for block in blocks:
        event_line, data_line = block.split(b"\n")
        assert event_line == b"event: " + json.loads(data_line[6:])["type"].encode()
    stream = await proxy.client.responses.create(model=MODEL, input=RAG_INPUT, stream=True, extra_body=explicit())
    kinds = [event.type async for event in stream]
    assert kinds[:2] == ["response.created", "response.in_progress"] and kinds[-1] == "response.completed"


async def test_framework_prompt_in_instructions_is_recognised(start_proxy) -> None:
    proxy = await start_proxy(answering())
    through = await proxy.client.responses.create(model=MODEL, instructions=LANGCHAIN_INSTRUCTIONS, input=QUESTION)
    assert through.output_text == ANSWER and through.instructions == LANGCHAIN_INSTRUCTIONS
    interaction, _ = await proxy.collector.assessment()
    assert interaction.question == QUESTION and interaction.documents[0].text == DOCUMENTS[0]
    exchange = await proxy.collector.exchange()
    assert exchange.injected and exchange.rag_source == "langchain"


async def test_function_call_output_carries_the_documents(start_proxy) -> None:
    proxy = await start_proxy(answering())
    items = [
        {"role": "user", "content": QUESTION},
        {"type": "function_call", "call_id": "call_1", "name": "retrieve", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": json.dumps([{"page_content": DOCUMENTS[0]}])},
    ]
    through = await proxy.client.responses.create(model=MODEL, input=items)
    assert through.output_text == ANSWER
    interaction, assessment = await proxy.collector.assessment()
    assert interaction.documents[0].text == DOCUMENTS[0] and assessment.verdict == Verdict.GROUNDED


async def test_previous_response_id_passes_through_and_is_scored(start_proxy) -> None:
    proxy = await start_proxy(answering())
    through = await proxy.client.responses.create(model=MODEL, input=RAG_INPUT, previous_response_id="resp_earlier", extra_body=explicit())
    assert through.output_text == ANSWER and through.previous_response_id == "resp_earlier"
    assert proxy.upstream_body()["previous_response_id"] == "resp_earlier"
    interaction, _ = await proxy.collector.assessment()
    assert interaction.supporting == SUPPORTING


# --- RAG, broken or cut replies: never worse than the upstream's ------------------------------------------------


async def test_reply_that_ignored_the_instruction_reaches_the_app_unchanged(start_proxy) -> None:
    proxy = await start_proxy(fixed("A plain answer, not JSON."))
    through = await proxy.client.responses.create(model=MODEL, input=RAG_INPUT, extra_body=explicit())
    alone = await direct(proxy).responses.create(model=MODEL, input=RAG_INPUT)
    assert normalised(through.model_dump()) == normalised(alone.model_dump())
    events = sse_events(await _raw(proxy.client, model=MODEL, input=RAG_INPUT, stream=True, extra_body=explicit()))
    alone_events = sse_events(await _raw(direct(proxy), model=MODEL, input=RAG_INPUT, stream=True))
    assert _text(events) == _text(alone_events) == "A plain answer, not JSON."
    assert _without_deltas(events) == _without_deltas(alone_events)
    for n in (1, 2):
        interaction, _ = await proxy.collector.assessment(n)
        assert interaction.unscored_reason == "not_json" and interaction.answer == "A plain answer, not JSON."


async def test_unparseable_reply_body_is_returned_as_sent(start_proxy) -> None:
    """An upstream that answers 200 with something that is not a response object: the app gets those bytes."""
    garbage = b'{"id": "resp_1", "output": "not a list"'  # cut JSON

    async def handler(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(body=garbage, content_type="application/json")

    app = web.Application()
    app.router.add_post("/v1/responses", handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        proxy = await start_proxy(upstream_url=f"http://127.0.0.1:{port}/v1")
        raw = await _raw(proxy.client, model=MODEL, input=RAG_INPUT, extra_body=explicit())
        assert raw == garbage
        exchange = await proxy.collector.exchange()
        assert exchange.injected
        await proxy.collector.wait_until(lambda: proxy.collector.scored or proxy.collector.dropped or proxy.collector.failed, 10, "scoring outcome")
    finally:
        await runner.cleanup()


async def test_truncated_reply_keeps_status_and_details(start_proxy) -> None:
    content = json_reply(ANSWER, SUPPORTING)[:40]  # cut inside the answer
    proxy = await start_proxy(fixed(ScriptedReply(content, finish_reason="length")))
    through = await proxy.client.responses.create(model=MODEL, input=RAG_INPUT, max_output_tokens=16, extra_body=explicit())
    assert through.status == "incomplete" and through.incomplete_details.reason == "max_output_tokens"
    assert ANSWER.startswith(through.output_text) and through.output_text
    interaction, _ = await proxy.collector.assessment()
    assert interaction.unscored_reason == "truncated"
    events = sse_events(await _raw(proxy.client, model=MODEL, input=RAG_INPUT, stream=True, max_output_tokens=16, extra_body=explicit()))
    assert events[-1]["type"] == "response.incomplete" and events[-1]["response"]["incomplete_details"] == {"reason": "max_output_tokens"}
    assert _text(events) == through.output_text
    interaction, _ = await proxy.collector.assessment(2)
    assert interaction.unscored_reason == "truncated"


async def test_error_event_mid_stream_reaches_the_app(start_proxy) -> None:
    proxy = await start_proxy(answering(error_after_deltas=12, piece_chars=4))
    events = sse_events(await _raw(proxy.client, model=MODEL, input=RAG_INPUT, stream=True, extra_body=explicit()))
    assert events[-1]["type"] == "error" and events[-1]["sequence_number"] == len(events) - 1
    assert ANSWER.startswith(_text(events)) and _text(events)
    exchange = await proxy.collector.exchange()
    assert exchange.outcome == "upstream_error" and exchange.error_type == "error_event"


async def test_upstream_that_rejects_json_format_is_asked_again_without_it(start_proxy) -> None:
    def script(body: dict[str, Any]) -> ScriptedReply:
        if (body.get("text") or {}).get("format", {}).get("type") == "json_object":
            return ScriptedReply(status=400, error_body={"error": {"message": "'text.format' of type 'json_object' is not supported with this model.",
                                                                   "type": "invalid_request_error", "param": "text.format", "code": None}})
        return ScriptedReply(json_reply(ANSWER, SUPPORTING) if was_injected(body) else ANSWER)

    proxy = await start_proxy(script)
    through = await proxy.client.responses.create(model=MODEL, input=RAG_INPUT, extra_body=explicit())
    assert through.output_text == ANSWER and "text" not in proxy.upstream_body()
    assert len(proxy.upstream.requests) == 2


# --- RAG, the client owns the reply format: forwarded unchanged, still scored ----------------------------------


async def test_client_text_format_is_not_injected_and_is_scored(start_proxy) -> None:
    proxy = await start_proxy(fixed(json.dumps({"reply": ANSWER})))
    text_format = {"format": {"type": "json_schema", "name": "reply", "schema": {"type": "object", "properties": {"reply": {"type": "string"}}}}}
    raw = await _raw(proxy.client, model=MODEL, instructions=LANGCHAIN_INSTRUCTIONS, input=QUESTION, text=text_format)
    assert raw == proxy.upstream.sent[-1] and proxy.upstream.requests[-1].raw == proxy.client_bodies[-1]
    interaction, _ = await proxy.collector.assessment()
    assert interaction.answer == json.dumps({"reply": ANSWER}) and interaction.supporting is None
    assert (await proxy.collector.exchange()).recognition == "client_response_format"


async def test_tools_and_background_are_not_injected(start_proxy) -> None:
    proxy = await start_proxy(fixed(ANSWER))
    tool = {"type": "function", "name": "lookup", "parameters": {"type": "object", "properties": {}}}
    streamed = await _raw(proxy.client, model=MODEL, instructions=LANGCHAIN_INSTRUCTIONS, input=QUESTION, tools=[tool], stream=True)
    assert streamed == proxy.upstream.sent[-1]
    await _raw(proxy.client, model=MODEL, instructions=LANGCHAIN_INSTRUCTIONS, input=QUESTION, background=True)
    assert proxy.upstream.requests[-1].raw == proxy.client_bodies[-1]
    first, second = await proxy.collector.exchange(1), await proxy.collector.exchange(2)
    assert (first.recognition, second.recognition) == ("client_tools", "client_background")
    assert not first.injected and not second.injected
    interaction, _ = await proxy.collector.assessment()
    assert interaction.answer == ANSWER


async def test_upstream_error_reaches_the_app_unchanged(start_proxy) -> None:
    proxy = await start_proxy(fixed(ScriptedReply(status=429, error_body={"error": {"message": "slow down", "type": "rate_limit", "param": None, "code": None}})))
    try:
        await proxy.client.responses.create(model=MODEL, input=RAG_INPUT, extra_body=explicit())
    except openai.RateLimitError as error:
        assert error.body == {"message": "slow down", "type": "rate_limit", "param": None, "code": None}
    else:
        raise AssertionError("the 429 did not reach the app")


async def test_stream_cut_anywhere_gives_the_same_events(start_proxy) -> None:
    proxy = await start_proxy(answering(output_prefix=(REASONING,)))
    request = {"model": MODEL, "input": RAG_INPUT, "stream": True, "extra_body": explicit()}
    whole = sse_events(await _raw(proxy.client, **request))
    proxy.upstream.cutter = lambda stream: range(7, len(stream), 7)  # inside event lines, JSON and escapes
    cut = sse_events(await _raw(proxy.client, **request))
    assert normalised(cut) == normalised(whole) and _text(cut) == ANSWER


async def test_stream_broken_off_by_the_upstream_still_ends_cleanly(start_proxy) -> None:
    content = json_reply(ANSWER, SUPPORTING)

    def script(body: dict[str, Any]) -> ScriptedReply:
        stream_bytes = ResponsesWire(body, ScriptedReply(content), 1).sse_bytes()
        cut_at = stream_bytes.index(b'"delta": "perv')  # answer text out ("No, the nitro h..."), then the cut
        return ScriptedReply(content, abort_after_bytes=cut_at)

    proxy = await start_proxy(script)
    raw = await _raw(proxy.client, model=MODEL, input=RAG_INPUT, stream=True, extra_body=explicit())
    events = sse_events(raw)
    assert events and [e["sequence_number"] for e in events] == list(range(len(events)))
    assert _text(events) and ANSWER.startswith(_text(events)) and b"supporting" not in raw
    exchange = await proxy.collector.exchange()
    assert exchange.outcome == "upstream_error"
    interaction, _ = await proxy.collector.assessment()
    assert interaction.unscored_reason in ("incomplete_json", "upstream_broke_off", "truncated")


FILE_SEARCH_TOOL = {"type": "file_search", "vector_store_ids": ["vs_docs"]}


def _file_search_call(with_results: bool) -> dict[str, Any]:
    results = [{"file_id": "file-ec2", "filename": "ec2.md", "score": 0.91, "text": DOCUMENTS[0], "attributes": {}}] if with_results else None
    return {"id": "fs_scripted", "type": "file_search_call", "status": "completed", "queries": [QUESTION], "results": results}


async def test_hosted_file_search_results_are_scored_and_the_reply_is_untouched(start_proxy) -> None:
    proxy = await start_proxy(fixed(ScriptedReply(ANSWER, output_prefix=(_file_search_call(True),))))
    request = {"model": MODEL, "input": QUESTION, "tools": [FILE_SEARCH_TOOL], "include": ["file_search_call.results"]}
    raw = await _raw(proxy.client, **request)
    assert raw == proxy.upstream.sent[-1] and proxy.upstream.requests[-1].raw == proxy.client_bodies[-1]
    streamed = await _raw(proxy.client, **request, stream=True)
    assert streamed == proxy.upstream.sent[-1]
    for n in (1, 2):
        interaction, assessment = await proxy.collector.assessment(n)
        assert interaction.question == QUESTION and [(d.text, d.id) for d in interaction.documents] == [(DOCUMENTS[0], "file-ec2")]
        assert interaction.answer == ANSWER and interaction.supporting is None
        # scored on the answer alone (no supporting content was asked for): it restates the one document
        assert assessment.verdict is Verdict.GROUNDED and assessment.scores.sdq is None and assessment.scores.attributed_document == 0
    exchange = await proxy.collector.exchange()
    assert (exchange.recognition, exchange.rag_source, exchange.injected) == ("client_tools", "file_search", False)


async def test_hosted_file_search_without_results_is_not_scored(start_proxy) -> None:
    proxy = await start_proxy(fixed(ScriptedReply(ANSWER, output_prefix=(_file_search_call(False),))))
    through = await proxy.client.responses.create(model=MODEL, input=QUESTION, tools=[FILE_SEARCH_TOOL])
    assert through.output_text == ANSWER
    exchange = await proxy.collector.exchange()
    assert exchange.rag_source is None and not exchange.injected
    # A RAG request after it: the only interaction scored is that one (scoring runs in order).
    later = await proxy.client.responses.create(model=MODEL, input=RAG_INPUT, extra_body=explicit())
    interaction, _ = await proxy.collector.assessment()
    assert interaction.id == later.id and len(proxy.collector.scored) == 1 and proxy.collector.dropped == []


async def test_hosted_file_search_marked_not_rag_is_left_alone(start_proxy) -> None:
    proxy = await start_proxy(fixed(ScriptedReply(ANSWER, output_prefix=(_file_search_call(True),))))
    await proxy.client.responses.create(model=MODEL, input=QUESTION, tools=[FILE_SEARCH_TOOL], include=["file_search_call.results"],
                                        extra_body={"ragtap": {"enabled": False}})
    exchange = await proxy.collector.exchange()
    assert (exchange.recognition, exchange.rag_source) == ("disabled", None) and "ragtap" not in proxy.upstream_body()
    later = await proxy.client.responses.create(model=MODEL, input=RAG_INPUT, extra_body=explicit())
    interaction, _ = await proxy.collector.assessment()
    assert interaction.id == later.id and len(proxy.collector.scored) == 1


async def test_debug_headers_carry_the_verdict(start_proxy) -> None:
    proxy = await start_proxy(answering())
    raw = await proxy.client.responses.with_raw_response.create(model=MODEL, input=RAG_INPUT, extra_body=explicit(),
                                                                extra_headers={"x-ragtap-debug": "1"})
    assert raw.headers["x-ragtap-verdict"] == Verdict.GROUNDED.value and "x-ragtap-scores" in raw.headers
    assert raw.parse().output_text == ANSWER


@pytest.mark.parametrize("kind", ["injected", "observed"])
async def test_app_hanging_up_mid_stream_is_recorded_and_the_upstream_released(start_proxy, kind) -> None:
    proxy = await start_proxy(answering(piece_chars=1))
    # One network write per SSE event, 20 ms apart: the whole stream would take seconds.
    proxy.upstream.cutter = lambda stream: [i + 2 for i in range(len(stream)) if stream[i : i + 2] == b"\n\n"]
    proxy.upstream.write_delay_s = 0.02
    body: dict[str, Any] = {"model": MODEL, "input": RAG_INPUT, "stream": True, "ragtap": explicit()["ragtap"]}
    if kind == "observed":
        body["text"] = {"format": {"type": "json_object"}}
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session:
        response = await session.post(f"{proxy.url}/v1/responses", json=body)
        first = await asyncio.wait_for(response.content.readline(), 5)
        assert first.startswith(b"event: response.created")
        response.close()  # the app goes away after its first event
    record = await proxy.collector.exchange(1, timeout=8)
    assert record.outcome == "incomplete"
    await proxy.collector.wait_until(lambda: bool(proxy.upstream.stream_errors) and proxy.upstream.stream_errors[0] is not None, 5, "the upstream write to fail")
    assert not proxy.upstream.stream_finished[0]
    interaction, assessment = await proxy.collector.assessment()
    assert interaction.unscored_reason == "incomplete" and assessment.verdict is Verdict.UNSCORED
    proxy.upstream.cutter = None  # ragtap is fine afterwards
    assert (await proxy.client.responses.create(model=MODEL, input=RAG_INPUT, extra_body=explicit())).output_text == ANSWER


async def test_stored_injected_response_is_split_when_retrieved(start_proxy) -> None:
    proxy = await start_proxy(answering())
    created = await proxy.client.responses.create(model=MODEL, input=RAG_INPUT, instructions="Be brief.", extra_body=explicit())
    async with proxy.client.responses.stream(model=MODEL, input=RAG_INPUT, extra_body=explicit()) as stream:
        streamed = await stream.get_final_response()
    alone = await direct(proxy).responses.create(model=MODEL, input=RAG_INPUT, instructions="Be brief.")
    for made in (created, streamed):
        fetched = await proxy.client.responses.retrieve(made.id)
        assert fetched.id == made.id and fetched.output_text == ANSWER and fetched.text.format.type == "text"
        assert "supporting_content" in json.dumps(proxy.upstream.stored[made.id])  # what the upstream keeps
    fetched = await proxy.client.responses.retrieve(created.id)
    assert normalised(fetched.model_dump()) == normalised((await direct(proxy).responses.retrieve(alone.id)).model_dump())
    # A response ragtap did not inject, and an unknown id: the upstream's bytes, unchanged.
    async with proxy.client.responses.with_streaming_response.retrieve(alone.id) as raw:
        assert await raw.read() == json.dumps(proxy.upstream.stored[alone.id]).encode()
    try:
        await proxy.client.responses.retrieve("resp_unknown")
    except openai.NotFoundError as error:
        assert error.status_code == 404
    else:
        raise AssertionError("the 404 did not reach the app")


async def test_a_response_created_through_another_worker_is_split_when_retrieved(start_proxy) -> None:
    """`ragtap serve --workers N`: the GET may land on a worker (or an instance, or a restarted ragtap) that did not
    create the response and so does not remember it; what the upstream stored says it was ragtap's."""
    creating = await start_proxy(answering())
    other = await start_proxy(answering(), upstream_url=creating.upstream.base_url)  # the same upstream, a fresh memory
    created = await creating.client.responses.create(model=MODEL, input=RAG_INPUT, instructions="Be brief.", extra_body=explicit())
    bare = await creating.client.responses.create(model=MODEL, input=RAG_INPUT, extra_body=explicit())
    alone = await direct(creating).responses.create(model=MODEL, input=RAG_INPUT, instructions="Be brief.")
    for made, instructions in ((created, "Be brief."), (bare, None)):
        fetched = await other.client.responses.retrieve(made.id)
        assert fetched.id == made.id and fetched.output_text == ANSWER and fetched.text.format.type == "text"
        assert fetched.instructions == instructions
    fetched = await other.client.responses.retrieve(created.id)
    assert normalised(fetched.model_dump()) == normalised((await direct(creating).responses.retrieve(alone.id)).model_dump())
    # A response ragtap did not inject: the upstream's bytes, unchanged.
    async with other.client.responses.with_streaming_response.retrieve(alone.id) as raw:
        assert await raw.read() == json.dumps(creating.upstream.stored[alone.id]).encode()


async def test_unstored_response_is_not_remembered(start_proxy) -> None:
    from ragtap.proxy.responses_store import INJECTED_RESPONSES

    proxy = await start_proxy(answering())
    await proxy.client.responses.create(model=MODEL, input=RAG_INPUT, store=False, extra_body=explicit())
    kept = await proxy.client.responses.create(model=MODEL, input=RAG_INPUT, extra_body=explicit())
    remembered = proxy.server.app[INJECTED_RESPONSES]
    assert len(remembered) == 1 and remembered.get(kept.id) is not None


def test_remembered_ids_are_bounded() -> None:
    from ragtap.proxy.responses_store import InjectedResponses
    from ragtap.split.responses import ClientEcho

    echo = ClientEcho(None, None)

    remembered = InjectedResponses(max_entries=3)
    for n in range(5):
        remembered.remember(f"resp_{n}", echo)
    assert len(remembered) == 3 and remembered.get("resp_1") is None and remembered.get("resp_4") == echo


async def test_non_rag_follow_up_of_an_injected_turn_is_split_not_scored(start_proxy) -> None:
    """The model, seeing its earlier JSON reply in the stored history, answers the follow-up in JSON too."""

    def script(body: dict[str, Any]) -> ScriptedReply:
        if body.get("previous_response_id"):
            return ScriptedReply(json_reply("No.", "The documents say the APIs remain the same."))
        return ScriptedReply(json_reply(ANSWER, SUPPORTING) if was_injected(body) else ANSWER)

    proxy = await start_proxy(script)
    first = await proxy.client.responses.create(model=MODEL, input=RAG_INPUT, extra_body=explicit())
    second = await proxy.client.responses.create(model=MODEL, input="In one word?", previous_response_id=first.id)
    assert second.output_text == "No." and not was_injected(proxy.upstream_body())
    assert proxy.upstream.requests[-1].raw == proxy.client_bodies[-1]  # forwarded as sent
    async with proxy.client.responses.stream(model=MODEL, input="And again?", previous_response_id=second.id) as stream:
        third = await stream.get_final_response()
    assert third.output_text == "No."  # the chain goes on: the second turn's id was remembered
    # A turn continuing a response ragtap did not inject is left alone.
    raw = await _raw(proxy.client, model=MODEL, input="In one word?", previous_response_id="resp_elsewhere")
    assert raw == proxy.upstream.sent[-1]
    exchanges = [await proxy.collector.exchange(n) for n in (1, 2, 3, 4)]
    assert [e.injected for e in exchanges] == [True, False, False, False]
    later = await proxy.client.responses.create(model=MODEL, input=RAG_INPUT, extra_body=explicit())
    await proxy.collector.assessment(2)  # scoring runs in order: the follow-ups in between were not scored
    assert [i.id for i, _ in proxy.collector.scored] == [first.id, later.id]


@pytest.mark.parametrize("stream", [False, True])
async def test_a_finished_rag_exchange_is_freed_without_the_collector(start_proxy, stream) -> None:
    """As for chat completions (tests/test_proxy_core.py): seam (c)'s closure, which holds the exchange, is dropped
    when the route is done, so nothing of the exchange is left for the cyclic collector."""
    proxy = await start_proxy(answering())
    gc.collect()
    gc.disable()  # (a collection during the request would hide a cycle)
    try:
        reply = await proxy.client.responses.create(model=MODEL, input=RAG_INPUT, stream=stream, extra_body=explicit())
        if stream:
            async for _ in reply:
                pass
        await proxy.collector.assessment(1)  # the exchange's hooks have run, and scoring after them
        await asyncio.sleep(0)
        left = [o for o in gc.get_objects() if isinstance(o, Exchange)]
    finally:
        gc.enable()
    assert left == []
