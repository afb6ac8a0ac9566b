"""Issue 3, streaming, over real HTTP: the openai SDK (and a raw aiohttp SSE reader) -> ragtap -> the scripted upstream.

The app must receive exactly the answer text, in chunks that keep the upstream's id/model/created/fingerprint,
ending with a clean `[DONE]`, however the upstream cut its bytes; anything ragtap cannot parse is streamed
through unchanged; broken upstreams and departing clients end cleanly and are recorded.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from typing import Any

import aiohttp
import pytest

from ragtap.testing.upstream import ScriptedReply, sse_bytes, was_injected
from ragtap.types import Verdict

from conftest import ANSWER, SUPPORTING, explicit, fixed, json_content, rag_messages, sse_events, sse_payloads

MODEL = "gpt-4o-mini"


async def sdk_stream(proxy, **kwargs: Any) -> tuple[str, list[Any]]:  # type: ignore[no-untyped-def]
    """Stream a RAG request with the SDK; return the concatenated delta text and all chunks."""
    kwargs.setdefault("extra_body", explicit())
    stream = await proxy.client.chat.completions.create(model=MODEL, messages=rag_messages(), stream=True, **kwargs)
    chunks = [chunk async for chunk in stream]
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    return text, chunks


async def raw_stream(proxy, body: dict[str, Any]) -> tuple[aiohttp.ClientResponse, bytes]:  # type: ignore[no-untyped-def]
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=15)) as session:
        async with session.post(f"{proxy.url}/v1/chat/completions", json=body, headers={"Authorization": "Bearer sk-test-key"}) as response:
            data = await response.read()
    return response, data


def rag_body(**extra: Any) -> dict[str, Any]:
    return {"model": MODEL, "messages": rag_messages(), "stream": True, **explicit(), **extra}


def text_of(events: list[dict[str, Any]]) -> str:
    return "".join((e["choices"][0]["delta"].get("content") or "") for e in events if e.get("choices"))


# --------------------------------------------------------------------------------------------------------------
# the happy path
# --------------------------------------------------------------------------------------------------------------


async def test_stream_delivers_exactly_the_answer_with_the_upstream_metadata(start_proxy) -> None:
    proxy = await start_proxy(fixed(ScriptedReply(json_content(), piece_chars=3)))
    text, chunks = await sdk_stream(proxy)
    assert text == ANSWER

    upstream_events = sse_events(proxy.upstream.sent[-1])
    first = upstream_events[0]
    for chunk in chunks:
        assert chunk.id == first["id"]
        assert chunk.model == first["model"] == MODEL
        assert chunk.created == first["created"]
        assert chunk.system_fingerprint == "fp_scripted"
        assert chunk.object == "chat.completion.chunk"
    assert chunks[0].choices[0].delta.role == "assistant"
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finishes == ["stop"]
    assert chunks[-1].choices and chunks[-1].choices[0].finish_reason == "stop"
    assert all(c.usage is None for c in chunks)  # the app did not ask for usage: none reaches it
    assert all(c.choices for c in chunks)

    # The upstream was asked for the JSON reply and for usage; ragtap kept the usage chunk to itself.
    body = proxy.upstream_body()
    assert was_injected(body) and body["response_format"] == {"type": "json_object"} and "ragtap" not in body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert any(not e["choices"] for e in upstream_events)  # the upstream did send one

    # Scores arrive afterwards, for streams too.
    interaction, assessment = await proxy.collector.assessment(1)
    assert (interaction.answer, interaction.supporting, interaction.unscored_reason) == (ANSWER, SUPPORTING, None)
    assert interaction.id == first["id"]
    assert assessment.verdict is Verdict.GROUNDED
    record = await proxy.collector.exchange(1)
    assert record.stream and record.injected and record.outcome == "complete"
    assert record.output_tokens is not None and record.first_token_at is not None  # usage read from ragtap's own chunk


async def test_raw_sse_framing_headers_and_done(start_proxy) -> None:
    proxy = await start_proxy(fixed(ScriptedReply(json_content(), headers={"x-request-id": "req-9"})))
    response, data = await raw_stream(proxy, rag_body())
    assert response.status == 200
    assert response.headers["Content-Type"].startswith("text/event-stream")
    assert response.headers["Cache-Control"] == "no-cache"
    assert response.headers["X-Accel-Buffering"] == "no"
    assert response.headers["x-request-id"] == "req-9"
    assert data.endswith(b"data: [DONE]\n\n")
    assert data.count(b"data: [DONE]") == 1
    assert all(block.startswith(b"data: ") for block in data.split(b"\n\n") if block)
    events = sse_events(data)
    assert text_of(events) == ANSWER
    assert all(e["object"] == "chat.completion.chunk" for e in events)
    assert [e["choices"][0]["finish_reason"] for e in events if e["choices"][0]["finish_reason"]] == ["stop"]


async def test_supporting_content_first_then_answer(start_proxy) -> None:
    content = json.dumps({"supporting_content": SUPPORTING, "answer": ANSWER})
    proxy = await start_proxy(fixed(ScriptedReply(content, piece_chars=5)))
    text, _ = await sdk_stream(proxy)
    assert text == ANSWER
    interaction, _ = await proxy.collector.assessment(1)
    assert interaction.supporting == SUPPORTING


async def test_answer_text_is_forwarded_before_the_upstream_finishes(start_proxy) -> None:
    """Streaming means streaming: the first answer text reaches the app while the upstream is still writing."""
    content = json_content()
    proxy = await start_proxy(fixed(ScriptedReply(content, piece_chars=8)))
    stream_bytes = sse_bytes("chatcmpl-scripted-1", MODEL, content, "stop", {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}, 8)
    per_event = [i + 2 for i in range(len(stream_bytes)) if stream_bytes[i : i + 2] == b"\n\n"]
    proxy.upstream.cutter = lambda stream: per_event
    proxy.upstream.write_delay_s = 0.015
    stream = await proxy.client.chat.completions.create(model=MODEL, messages=rag_messages(), stream=True, extra_body=explicit())
    parts, seen_while_writing = [], False
    async for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            if not parts:
                seen_while_writing = not proxy.upstream.stream_finished[0]
            parts.append(chunk.choices[0].delta.content)
    assert "".join(parts) == ANSWER
    assert seen_while_writing
    assert len(parts) > 3  # several chunks, not one block at the end


@pytest.mark.parametrize(
    "plain",
    [
        "The nitro hypervisor keeps the same public APIs — café, naïve, 😀.",
        f"Sure! Here is the JSON:\n{json_content()}",  # prose first: a stream cannot take back what it forwarded
        '["a", "json", "array"]',
        "   \n  leading whitespace, then text",
    ],
    ids=["plain", "prose_then_json", "json_array", "leading_whitespace"],
)
async def test_non_json_reply_streams_through_unchanged(start_proxy, plain) -> None:
    proxy = await start_proxy(fixed(ScriptedReply(plain, piece_chars=3)))
    text, chunks = await sdk_stream(proxy)
    assert text == plain
    assert chunks[-1].choices[0].finish_reason == "stop"
    interaction, assessment = await proxy.collector.assessment(1)
    assert interaction.answer == plain and interaction.unscored_reason == "not_json"
    assert assessment.verdict is Verdict.UNSCORED


async def test_truncated_by_max_tokens_keeps_the_answer_and_finish_reason(start_proxy) -> None:
    content = json_content()
    cut = content[: content.index(SUPPORTING) + 15]
    proxy = await start_proxy(fixed(ScriptedReply(cut, finish_reason="length")))
    text, chunks = await sdk_stream(proxy, max_tokens=40)
    assert text == ANSWER
    assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] == ["length"]
    interaction, assessment = await proxy.collector.assessment(1)
    assert interaction.unscored_reason == "truncated" and interaction.supporting == SUPPORTING[:15]
    assert assessment.verdict is Verdict.UNSCORED


# --------------------------------------------------------------------------------------------------------------
# usage chunks
# --------------------------------------------------------------------------------------------------------------


async def test_usage_chunk_reaches_the_app_once_when_it_asked(start_proxy) -> None:
    proxy = await start_proxy(fixed(ScriptedReply(json_content(), prompt_tokens=77, completion_tokens=33)))
    text, chunks = await sdk_stream(proxy, stream_options={"include_usage": True})
    assert text == ANSWER
    usage_chunks = [c for c in chunks if not c.choices]
    assert len(usage_chunks) == 1
    assert chunks[-1] is usage_chunks[0]
    usage = usage_chunks[0].usage
    assert usage is not None and (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (77, 33, 110)
    assert all(c.usage is None for c in chunks if c.choices)
    assert proxy.upstream_body()["stream_options"] == {"include_usage": True}


async def test_usage_chunk_stripped_when_the_app_did_not_ask_raw(start_proxy) -> None:
    proxy = await start_proxy(fixed(json_content()))
    _, data = await raw_stream(proxy, rag_body(stream_options={"include_usage": False}))
    assert all(e["choices"] for e in sse_events(data))
    assert b'"usage"' not in data
    assert proxy.upstream_body()["stream_options"] == {"include_usage": True}
    record = await proxy.collector.exchange(1)
    assert record.input_tokens == 100  # ragtap read it for its own metrics


async def test_stream_usage_off_in_config_asks_upstream_nothing(start_proxy) -> None:
    proxy = await start_proxy(fixed(json_content()), flags={"inject": {"stream_usage": False}})
    text, chunks = await sdk_stream(proxy)
    assert text == ANSWER and all(c.choices for c in chunks)
    assert "stream_options" not in proxy.upstream_body()


# --------------------------------------------------------------------------------------------------------------
# cuts: the upstream splits its bytes anywhere
# --------------------------------------------------------------------------------------------------------------

UNICODE_ANSWER = 'Oui — la "nitro" API reste la même: café ☕, naïve, 😀 and \\ backslash.\nNew line, tab\tend.'
UNICODE_SUPPORT = "Les API publiques restent les mêmes 😀 (same APIs) — ünïcödé."


def _escape_spans(stream: bytes) -> list[int]:
    """Every offset inside each `\\\\uXXXX` escape of the SSE bytes (the model's escape, escaped again by SSE JSON)."""
    cuts: list[int] = []
    start = stream.find(b"\\\\u")
    while start >= 0:
        cuts.extend(range(start + 1, start + 7))
        start = stream.find(b"\\\\u", start + 1)
    return cuts


def _multibyte_spans(stream: bytes) -> list[int]:
    """One offset inside each multi-byte UTF-8 character: after its lead byte (2-byte "é", 3-byte "☕", 4-byte "😀")."""
    return [i + 1 for i, byte in enumerate(stream) if byte >= 0xC0]


def _data_line_spans(stream: bytes) -> list[int]:
    """Inside each `data: ` prefix, in the middle of each JSON line, and between the two newlines."""
    cuts = []
    start = stream.find(b"data: ")
    while start >= 0:
        end = stream.find(b"\n\n", start)
        cuts += [start + 2, start + 5, (start + end) // 2, end + 1]
        start = stream.find(b"data: ", end)
    return cuts


@pytest.mark.parametrize(
    ("ensure_ascii", "cutter"),
    [(True, _escape_spans), (False, _multibyte_spans), (True, _data_line_spans), (False, _data_line_spans)],
    ids=["inside_u_escapes", "inside_utf8", "inside_data_lines_escaped", "inside_data_lines_utf8"],
)
async def test_cuts_at_chosen_byte_positions_give_the_exact_answer(start_proxy, ensure_ascii, cutter) -> None:
    content = json_content(UNICODE_ANSWER, UNICODE_SUPPORT, ensure_ascii=ensure_ascii)
    proxy = await start_proxy(fixed(ScriptedReply(content, piece_chars=3)))
    proxy.upstream.cutter = cutter
    proxy.upstream.write_delay_s = 0.002
    text, chunks = await sdk_stream(proxy)
    assert len(cutter(proxy.upstream.sent[-1])) > 10  # the cuts really were where we meant them
    assert text == UNICODE_ANSWER
    assert chunks[-1].choices[0].finish_reason == "stop"
    interaction, _ = await proxy.collector.assessment(1)
    assert (interaction.answer, interaction.supporting, interaction.unscored_reason) == (UNICODE_ANSWER, UNICODE_SUPPORT, None)


async def test_cuts_at_random_positions_give_the_exact_answer(start_proxy) -> None:
    """30 seeded variants: random content cut into pieces of 1-7 characters, random byte cuts of the SSE."""
    variants = []
    for seed in range(30):
        rng = random.Random(seed)
        ensure_ascii = rng.random() < 0.5
        keys_reversed = rng.random() < 0.3
        pairs = [("answer", UNICODE_ANSWER), ("supporting_content", UNICODE_SUPPORT)]
        content = json.dumps(dict(reversed(pairs) if keys_reversed else pairs), ensure_ascii=ensure_ascii, indent=rng.choice([None, 2]))
        if rng.random() < 0.3:
            content = f"```json\n{content}\n```"
        variants.append((rng, content, rng.randint(1, 7)))

    current: dict[str, Any] = {}
    proxy = await start_proxy(lambda body: ScriptedReply(current["content"], piece_chars=current["piece"]))
    proxy.upstream.write_delay_s = 0.001
    for rng, content, piece in variants:
        current.update(content=content, piece=piece)
        proxy.upstream.cutter = lambda stream, rng=rng: sorted(rng.sample(range(1, len(stream)), rng.randint(1, 12)))
        text, _ = await sdk_stream(proxy)
        assert text == UNICODE_ANSWER, (content, piece)
    await proxy.collector.wait_until(lambda: len(proxy.collector.scored) == len(variants), 20, "30 assessments")
    for interaction, _ in proxy.collector.scored:
        assert (interaction.answer, interaction.supporting, interaction.unscored_reason) == (UNICODE_ANSWER, UNICODE_SUPPORT, None)


# --------------------------------------------------------------------------------------------------------------
# broken upstreams, departing clients
# --------------------------------------------------------------------------------------------------------------


def _offset_in_answer(content: str, piece: int, fraction: float) -> int:
    """A byte offset of the upstream's SSE, inside the data line that carries `fraction` of the answer."""
    prototype = sse_bytes("chatcmpl-scripted-1", MODEL, content, "stop", None, piece)
    target = content.index(ANSWER) + int(len(ANSWER) * fraction)
    piece_text = content[target - target % piece : target - target % piece + piece]
    line = prototype.find(json.dumps(piece_text).encode())
    assert line > 0
    return line + 3


async def test_upstream_cut_mid_stream_ends_cleanly_with_the_answer_so_far(start_proxy) -> None:
    content = json_content()
    proxy = await start_proxy(fixed(ScriptedReply(content, piece_chars=4, abort_after_bytes=_offset_in_answer(content, 4, 0.5))))
    text, chunks = await sdk_stream(proxy)  # no exception from the SDK
    assert text and ANSWER.startswith(text) and len(text) < len(ANSWER)
    assert len(text) >= len(ANSWER) // 2 - 8
    assert all(c.id == chunks[0].id for c in chunks)
    record = await proxy.collector.exchange(1)
    assert record.outcome == "upstream_error" and record.error_type
    interaction, assessment = await proxy.collector.assessment(1)
    assert interaction.answer == text and interaction.unscored_reason is not None
    assert assessment.verdict is Verdict.UNSCORED


async def test_upstream_cut_mid_stream_raw_client_gets_done(start_proxy) -> None:
    content = json_content()
    proxy = await start_proxy(fixed(ScriptedReply(content, piece_chars=4, abort_after_bytes=_offset_in_answer(content, 4, 0.3))))
    response, data = await raw_stream(proxy, rag_body())
    assert response.status == 200
    assert data.endswith(b"data: [DONE]\n\n")
    text = text_of(sse_events(data))
    assert text and ANSWER.startswith(text)


async def test_upstream_without_done_after_the_last_event(start_proxy) -> None:
    """The upstream sends every event but drops the connection instead of sending [DONE]: the app still gets all."""
    content = json_content()
    full = sse_bytes("chatcmpl-scripted-1", MODEL, content, "stop", {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}, 4)
    proxy = await start_proxy(fixed(ScriptedReply(content, abort_after_bytes=len(full) - len(b"data: [DONE]\n\n"))))
    response, data = await raw_stream(proxy, rag_body())
    assert data.endswith(b"data: [DONE]\n\n")
    assert text_of(sse_events(data)) == ANSWER
    interaction, _ = await proxy.collector.assessment(1)
    assert interaction.answer == ANSWER and interaction.supporting == SUPPORTING


@pytest.mark.parametrize("kind", ["injected", "observed", "not_rag"])
async def test_client_disconnect_mid_stream_is_recorded_and_upstream_released(start_proxy, kind) -> None:
    content = json_content() if kind == "injected" else ANSWER
    proxy = await start_proxy(fixed(ScriptedReply(content, piece_chars=1)))
    # One network write per SSE event, 20 ms apart: the whole stream would take a few seconds.
    proxy.upstream.cutter = lambda stream: [i + 2 for i in range(len(stream)) if stream[i : i + 2] == b"\n\n"]
    proxy.upstream.write_delay_s = 0.02
    body = {
        "injected": rag_body(),
        "observed": rag_body(response_format={"type": "json_object"}),
        "not_rag": {"model": MODEL, "messages": [{"role": "user", "content": "hello"}], "stream": True},
    }[kind]
    started = time.monotonic()
    session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10))
    try:
        response = await session.post(f"{proxy.url}/v1/chat/completions", json=body)
        first = await asyncio.wait_for(response.content.readline(), 5)
        assert first.startswith(b"data: ")
        response.close()  # the app goes away after its first chunk
    finally:
        await session.close()

    record = await proxy.collector.exchange(1, timeout=8)
    assert record.outcome == "incomplete"
    # ragtap stopped reading: the upstream's next write failed on the closed connection, long before it was done.
    await proxy.collector.wait_until(lambda: proxy.upstream.stream_errors and proxy.upstream.stream_errors[0] is not None, 5, "the upstream write to fail")
    assert not proxy.upstream.stream_finished[0]
    events = len(sse_payloads(proxy.upstream.sent[0]))
    assert time.monotonic() - started < events * 0.02  # it did not wait for the whole stream
    if kind != "not_rag":
        await proxy.collector.settle(1, timeout=5)
        interaction, assessment = proxy.collector.scored[0]
        assert interaction.unscored_reason == "incomplete" and assessment.verdict is Verdict.UNSCORED

    # ragtap is fine afterwards: the next request on the same upstream pool works.
    proxy.upstream.cutter = None
    text, _ = await sdk_stream(proxy)
    assert text == ANSWER


# --------------------------------------------------------------------------------------------------------------
# streams ragtap does not rewrite
# --------------------------------------------------------------------------------------------------------------


async def test_non_rag_stream_passes_through_byte_for_byte_chunk_by_chunk(start_proxy) -> None:
    proxy = await start_proxy(fixed(ScriptedReply("Paris is the capital of France, c'est évident 😀.", piece_chars=3)))
    proxy.upstream.cutter = lambda stream: list(range(40, len(stream), 97))
    proxy.upstream.write_delay_s = 0.01
    body = {"model": MODEL, "messages": [{"role": "user", "content": "What is the capital of France?"}], "stream": True}
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=15)) as session:
        async with session.post(f"{proxy.url}/v1/chat/completions", json=body) as response:
            received, first_while_writing = [], None
            async for piece in response.content.iter_any():
                if first_while_writing is None:
                    first_while_writing = not proxy.upstream.stream_finished[0]
                received.append(piece)
    assert b"".join(received) == proxy.upstream.sent[-1]
    assert first_while_writing  # forwarded as it came, not buffered to the end
    assert "stream_options" not in proxy.upstream_body()  # nothing added to a non-RAG request
    assert proxy.upstream.requests[-1].raw == json.dumps(body).encode()

    # And with the SDK: the same text as the upstream's.
    stream = await proxy.client.chat.completions.create(model=MODEL, messages=body["messages"], stream=True)
    text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
    assert text == "Paris is the capital of France, c'est évident 😀."
    assert proxy.upstream.requests[-1].raw == proxy.client_bodies[-1]


async def test_client_owned_format_stream_is_forwarded_unchanged_and_scored(start_proxy) -> None:
    proxy = await start_proxy(fixed(ScriptedReply(ANSWER, piece_chars=5)))
    body = rag_body(response_format={"type": "json_object"}, stream_options={"include_usage": True})
    response, data = await raw_stream(proxy, body)
    assert data == proxy.upstream.sent[-1]
    sent = dict(body)
    del sent["ragtap"]
    assert proxy.upstream_body() == sent
    interaction, assessment = await proxy.collector.assessment(1)
    assert interaction.answer == ANSWER and interaction.supporting is None
    assert assessment.scores.sdq is None and assessment.scores.qa is not None and assessment.scores.ard is not None
    record = await proxy.collector.exchange(1)
    assert not record.injected and record.output_tokens is not None


async def test_error_event_mid_stream_reaches_the_app(start_proxy) -> None:
    """OpenAI reports a failure after the headers as `data: {"error": ...}`: the app must see it, not a quiet end."""
    import openai

    content = json_content()
    proxy = await start_proxy(fixed(ScriptedReply(content, piece_chars=4)))
    error_event = b'data: {"error": {"message": "The server had an error while processing your request.", "type": "server_error", "param": null, "code": null}}\n\n'

    def break_off(stream: bytes) -> bytes:
        middle = _offset_in_answer(content, 4, 0.5)
        line_end = stream.find(b"\n\n", middle) + 2
        return stream[:line_end] + error_event

    proxy.upstream.transform = break_off
    _, data = await raw_stream(proxy, rag_body())
    assert error_event in data
    assert data.endswith(b"data: [DONE]\n\n") or data.endswith(error_event)

    stream = await proxy.client.chat.completions.create(model=MODEL, messages=rag_messages(), stream=True, extra_body=explicit())
    parts = []
    with pytest.raises(openai.APIError, match="server had an error"):
        async for chunk in stream:
            if chunk.choices:
                parts.append(chunk.choices[0].delta.content or "")
    assert "".join(parts) and ANSWER.startswith("".join(parts))
    record = await proxy.collector.exchange(2)
    assert record.outcome == "upstream_error" and record.error_type == "error_event"


async def test_upstream_stalling_mid_stream_ends_cleanly_after_the_read_timeout(start_proxy) -> None:
    content = json_content()
    proxy = await start_proxy(fixed(ScriptedReply(content, piece_chars=4)), flags={"server": {"read_timeout_s": 0.3}})
    middle = _offset_in_answer(content, 4, 0.5)
    proxy.upstream.cutter = lambda stream: [stream.find(b"\n\n", middle) + 2]
    proxy.upstream.write_delay_s = 1.5  # the second write comes long after ragtap's read timeout
    started = time.monotonic()
    text, _ = await sdk_stream(proxy)
    assert time.monotonic() - started < 1.5
    assert text and ANSWER.startswith(text) and len(text) < len(ANSWER)
    record = await proxy.collector.exchange(1)
    assert record.outcome == "upstream_error"
