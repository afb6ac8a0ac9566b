"""Issue 24, the Responses API under attack (findings 1, 2, 3 and the smaller Responses items), over real HTTP:
the official openai SDK -> ragtap -> the scripted upstream (or a raw one where the attack needs exact bytes).

1. An upstream that skips `response.output_text.done` (some OpenAI-compatible servers go straight to
   `content_part.done` / `output_item.done` / `response.completed`): the final events must carry the split
   answer, never the raw JSON, so the SDK's `get_final_response().output_text` is the streamed answer.
2. An event larger than ragtap's SSE line limit (every `response.*` event echoes `instructions`): ragtap holds
   it when it can (up to `replies.max_body_bytes`) and relays it unchanged when it cannot -- never drops it.
3. A follow-up turn (`previous_response_id`) to an injected response where the user asks for JSON of their own:
   the app gets the model's reply as it would without ragtap; the create and a later GET agree.
Smaller: integers beyond 64 bits in a rewritten reply come back exactly; a reply orjson cannot read (a NaN)
never shows ragtap's instruction in the echoed `instructions`.
"""

from __future__ import annotations

import json
import re
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from conftest import ANSWER, DOCUMENTS, QUESTION, SUPPORTING, explicit, fixed
from ragtap.prompts import prompt_text
from ragtap.testing.upstream import ScriptedReply, json_reply, was_injected

MODEL = "gpt-4.1-mini"
RAG_INPUT = [
    {"role": "user", "content": [{"type": "input_text", "text": "Documents:\n" + "\n".join(DOCUMENTS) + f"\n\nQuestion: {QUESTION}"}]},
]
INSTRUCTION = prompt_text("supporting_content")


def answering(plain: str = ANSWER, supporting: str = SUPPORTING, **reply: Any):  # type: ignore[no-untyped-def]
    def script(body: dict[str, Any]) -> ScriptedReply:
        return ScriptedReply(json_reply(plain, supporting) if was_injected(body) else plain, **reply)

    return script


def without_events(kinds: set[str]):  # type: ignore[no-untyped-def]
    """An SSE transform that drops every event of the given types (the upstream never sent them)."""

    def transform(raw: bytes) -> bytes:
        blocks = [b for b in raw.split(b"\n\n") if b]
        kept = [b for b in blocks if not any(b.startswith(b"event: " + k.encode() + b"\n") for k in kinds)]
        return b"".join(b + b"\n\n" for b in kept)

    return transform


def events_of(raw: bytes) -> list[dict[str, Any]]:
    out = []
    for block in raw.split(b"\n\n"):
        data = [line[6:] for line in block.split(b"\n") if line.startswith(b"data: ")]
        if data:
            out.append(json.loads(b"\n".join(data)))
    return out


async def _raw(client, **request: Any) -> bytes:  # type: ignore[no-untyped-def]
    async with client.responses.with_streaming_response.create(**request) as response:
        return await response.read()


# --- 1. no output_text.done --------------------------------------------------------------------------------------


@pytest.mark.parametrize("skipped", [
    {"response.output_text.done"},
    {"response.output_text.done", "response.content_part.done"},
    {"response.output_text.done", "response.content_part.done", "response.output_item.done"},
], ids=["to-content_part.done", "to-output_item.done", "to-completed"])
async def test_a_stream_without_output_text_done_ends_with_the_split_answer(start_proxy, skipped) -> None:
    proxy = await start_proxy(answering(piece_chars=7))
    proxy.upstream.transform = without_events(skipped)
    async with proxy.client.responses.stream(model=MODEL, input=RAG_INPUT, instructions="Be brief.", extra_body=explicit()) as stream:
        events = [event async for event in stream]
        final = await stream.get_final_response()
    streamed = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert streamed == ANSWER
    assert final.output_text == ANSWER and final.instructions == "Be brief."
    for event in events:
        if event.type == "response.content_part.done":
            assert event.part.text == ANSWER
        if event.type == "response.output_item.done" and event.item.type == "message":
            assert event.item.content[0].text == ANSWER
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert not any("supporting_content" in json.dumps(e.model_dump(mode="json", warnings=False)) for e in events)
    interaction, _ = await proxy.collector.assessment()
    assert (interaction.answer, interaction.supporting) == (ANSWER, SUPPORTING)


# --- 2. events larger than the SSE line limit ---------------------------------------------------------------------

BIG = 5 * 1024 * 1024  # over the 4 MiB a line could take before


async def test_an_event_over_4_mib_is_held_and_split(start_proxy) -> None:
    instructions = "Answer from the documents. " + "x" * BIG
    proxy = await start_proxy(answering())
    async with proxy.client.responses.stream(model=MODEL, input=RAG_INPUT, instructions=instructions, extra_body=explicit()) as stream:
        events = [event async for event in stream]
        final = await stream.get_final_response()
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == ANSWER
    assert final.output_text == ANSWER and final.instructions == instructions
    assert events[0].type == "response.created" and events[0].response.instructions == instructions


async def test_an_event_too_large_to_hold_is_relayed_unchanged(start_proxy) -> None:
    """Over `replies.max_body_bytes` (here 1 MiB) ragtap does not hold an event: it passes it on as it came,
    and the rest of the stream goes on being split."""
    limit = 1 << 20
    instructions = "Answer from the documents. " + "y" * (limit + limit // 2)
    proxy = await start_proxy(answering(), flags={"replies": {"max_body_bytes": limit}})
    raw = await _raw(proxy.client, model=MODEL, input=RAG_INPUT, instructions=instructions, stream=True, extra_body=explicit())
    sent = events_of(proxy.upstream.sent[-1])
    received = events_of(raw)
    kinds = [e["type"] for e in received]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"  # nothing dropped, nothing cut
    assert [k for k in kinds if k != "response.output_text.delta"] == [e["type"] for e in sent if e["type"] != "response.output_text.delta"]
    big_sent = [e for e in sent if len(json.dumps(e)) > limit]
    assert big_sent and all(e in received for e in big_sent)  # relayed as they came
    assert "".join(e["delta"] for e in received if e["type"] == "response.output_text.delta") == ANSWER


async def test_an_event_over_4_mib_on_the_tools_path_is_relayed_byte_for_byte(start_proxy) -> None:
    tools = [{"type": "function", "name": "lookup", "description": "d" * BIG, "parameters": {"type": "object", "properties": {}}}]
    proxy = await start_proxy(answering())
    raw = await _raw(proxy.client, model=MODEL, input=RAG_INPUT, tools=tools, stream=True, extra_body=explicit())
    assert raw == proxy.upstream.sent[-1]


async def test_an_event_too_large_to_hold_on_the_observed_path_is_relayed_byte_for_byte(start_proxy) -> None:
    limit = 1 << 20
    proxy = await start_proxy(answering(), flags={"replies": {"max_body_bytes": limit}})
    request = {"model": MODEL, "input": RAG_INPUT, "instructions": "z" * (2 * limit), "stream": True,
               "text": {"format": {"type": "json_object"}}, "extra_body": explicit()}
    raw = await _raw(proxy.client, **request)
    assert raw == proxy.upstream.sent[-1]
    interaction, _ = await proxy.collector.assessment()
    assert interaction.answer == ANSWER  # the answer is still read for scoring (from the small events)


# --- 3. follow-up turns -------------------------------------------------------------------------------------------

OWN_JSON = json.dumps({"answer": "No.", "confidence": 0.9, "sources": ["ec2.md"]})


def follow_ups(reply: str):  # type: ignore[no-untyped-def]
    def script(body: dict[str, Any]) -> ScriptedReply:
        if body.get("previous_response_id"):
            return ScriptedReply(reply, piece_chars=5)
        return ScriptedReply(json_reply(ANSWER, SUPPORTING) if was_injected(body) else ANSWER)

    return script


@pytest.mark.parametrize("stream", [False, True])
async def test_a_follow_up_asking_for_its_own_json_gets_the_models_reply_unchanged(start_proxy, stream) -> None:
    proxy = await start_proxy(follow_ups(OWN_JSON))
    first = await proxy.client.responses.create(model=MODEL, input=RAG_INPUT, extra_body=explicit())
    ask = {"model": MODEL, "input": "As JSON with the fields answer, confidence and sources, please.", "previous_response_id": first.id}
    if stream:
        async with proxy.client.responses.stream(**ask) as events:
            deltas = "".join([e.delta async for e in events if e.type == "response.output_text.delta"])
            second = await events.get_final_response()
        assert deltas == OWN_JSON
    else:
        second = await proxy.client.responses.create(**ask)
    assert second.output_text == OWN_JSON
    assert (await proxy.client.responses.retrieve(second.id)).output_text == OWN_JSON


@pytest.mark.parametrize("stream", [False, True])
async def test_a_follow_up_in_ragtaps_json_is_split_and_the_get_agrees_with_the_create(start_proxy, stream) -> None:
    reply = json_reply("No.", "The documents say the APIs remain the same.") + "\n\nAnything else?"
    proxy = await start_proxy(follow_ups(reply))
    first = await proxy.client.responses.create(model=MODEL, input=RAG_INPUT, extra_body=explicit())
    ask = {"model": MODEL, "input": "In one word?", "previous_response_id": first.id}
    if stream:
        async with proxy.client.responses.stream(**ask) as events:
            second = await events.get_final_response()
    else:
        second = await proxy.client.responses.create(**ask)
    assert second.output_text == "No.\n\nAnything else?"
    assert (await proxy.client.responses.retrieve(second.id)).output_text == second.output_text


# --- smaller ------------------------------------------------------------------------------------------------------

BIG_INT = 123456789012345678901234567890


class RawUpstream:
    """A Responses upstream that sends exactly `body` (bytes) with status 200, for every request."""

    def __init__(self, body: bytes, content_type: str = "application/json") -> None:
        self.body = body
        self.content_type = content_type
        self.requests: list[dict[str, Any]] = []
        self.runner: web.AppRunner | None = None
        self.port = 0

    async def __aenter__(self) -> RawUpstream:
        async def handler(request: web.Request) -> web.Response:
            self.requests.append(json.loads(await request.read()))
            return web.Response(body=self.body, content_type=self.content_type)

        app = web.Application()
        app.router.add_post("/v1/responses", handler)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.runner is not None
        await self.runner.cleanup()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"


def _reply_bytes(instructions: str, text: str, extra: str) -> bytes:
    message = {"id": "msg_1", "type": "message", "status": "completed", "role": "assistant",
               "content": [{"type": "output_text", "annotations": [], "text": text}]}
    head = {"id": "resp_1", "object": "response", "created_at": 1, "status": "completed", "model": MODEL, "instructions": instructions,
            "output": [message], "text": {"format": {"type": "json_object"}}, "usage": None}
    return json.dumps(head)[:-1].encode() + b", " + extra.encode() + b"}"


async def test_a_big_integer_in_a_rewritten_reply_is_not_turned_into_a_float(start_proxy) -> None:
    body = _reply_bytes("Be brief.\n\n" + INSTRUCTION, json_reply(ANSWER, SUPPORTING), f'"metadata": {{"n": {BIG_INT}}}')
    async with RawUpstream(body) as upstream:
        proxy = await start_proxy(upstream_url=upstream.base_url)
        raw = await _raw(proxy.client, model=MODEL, input=RAG_INPUT, instructions="Be brief.", extra_body=explicit())
    reply = json.loads(raw)
    assert reply["metadata"]["n"] == BIG_INT and str(BIG_INT) in raw.decode()
    assert reply["output"][0]["content"][0]["text"] == ANSWER and reply["instructions"] == "Be brief."


@pytest.mark.parametrize("constant", ["NaN", "Infinity"])
async def test_a_reply_orjson_cannot_read_never_shows_ragtaps_instruction(start_proxy, constant) -> None:
    body = _reply_bytes("Be brief.\n\n" + INSTRUCTION, json_reply(ANSWER, SUPPORTING), f'"temperature": {constant}')
    async with RawUpstream(body) as upstream:
        proxy = await start_proxy(upstream_url=upstream.base_url)
        async with aiohttp.ClientSession() as session:
            request = {"model": MODEL, "input": RAG_INPUT, "instructions": "Be brief.", **explicit()}
            async with session.post(f"{proxy.url}/v1/responses", json=request) as response:
                assert response.status == 200
                raw = await response.read()
    assert INSTRUCTION[:60].encode() not in raw and b"supporting_content" not in raw.replace(b"\\", b"")
    assert re.search(rb'"temperature":\s*' + constant.encode(), raw)  # the value the upstream wrote, as written
    reply = json.loads(raw)  # (Python's json reads NaN / Infinity)
    assert reply["instructions"] == "Be brief." and reply["output"][0]["content"][0]["text"] == ANSWER


async def test_a_reply_nothing_can_read_is_relayed_without_ragtaps_instruction(start_proxy) -> None:
    """Cut JSON: relayed as it came (the app's SDK will say what is wrong with it), less ragtap's instruction."""
    whole = _reply_bytes("Be brief.\n\n" + INSTRUCTION, json_reply(ANSWER, SUPPORTING), '"temperature": 1')
    body = whole[: whole.index(b'"output"')]  # the echo, then nothing
    async with RawUpstream(body) as upstream:
        proxy = await start_proxy(upstream_url=upstream.base_url)
        async with aiohttp.ClientSession() as session:
            request = {"model": MODEL, "input": RAG_INPUT, "instructions": "Be brief.", **explicit()}
            async with session.post(f"{proxy.url}/v1/responses", json=request) as response:
                raw = await response.read()
    assert raw == body.replace(json.dumps("\n\n" + INSTRUCTION)[1:-1].encode(), b"")
    assert b'"instructions": "Be brief."' in raw


async def test_stream_events_orjson_cannot_read_never_show_ragtaps_instruction(start_proxy) -> None:
    proxy = await start_proxy(answering())
    proxy.upstream.transform = lambda raw: raw.replace(b'"temperature": 1.0', b'"temperature": NaN')
    raw = await _raw(proxy.client, model=MODEL, input=RAG_INPUT, instructions="Be brief.", stream=True, extra_body=explicit())
    assert b"NaN" in proxy.upstream.sent[-1] and INSTRUCTION[:60].encode() in proxy.upstream.sent[-1]  # what came
    assert INSTRUCTION[:60].encode() not in raw and b"supporting_content" not in raw.replace(b"\\", b"")
    events = events_of(raw)  # (Python's json reads NaN)
    assert events[-1]["type"] == "response.completed" and events[-1]["response"]["instructions"] == "Be brief."
    assert events[-1]["response"]["output"][0]["content"][0]["text"] == ANSWER and b'"temperature":NaN' in raw


async def test_a_messages_event_too_large_to_hold_is_relayed_unchanged(start_proxy) -> None:
    """Issue 24 #2 on the Anthropic Messages API (the same typed-event relay): an event over `replies.max_body_bytes`
    -- here a `ping` carrying 1.5 MiB -- reaches the app as it came, and the answer around it is still split."""
    from test_proxy_messages import answering as messages_answering
    from test_proxy_messages import ask, raw, via

    limit = 1 << 20
    proxy = await start_proxy(messages_answering(), flags={"replies": {"max_body_bytes": limit}})
    big = b"event: ping\ndata: " + json.dumps({"type": "ping", "padding": "p" * (limit + limit // 2)}).encode() + b"\n\n"
    proxy.upstream.transform = lambda stream: stream.replace(b"event: message_stop", big + b"event: message_stop")
    received = await raw(via(proxy), **ask(stream=True))
    assert big in received and received.rstrip().endswith(b'{"type":"message_stop"}')
    text = "".join(e["delta"].get("text", "") for e in events_of(received) if e["type"] == "content_block_delta")
    assert text == ANSWER
    interaction, _ = await proxy.collector.assessment()
    assert interaction.answer == ANSWER and interaction.unscored_reason is None  # a ping carries no answer text
