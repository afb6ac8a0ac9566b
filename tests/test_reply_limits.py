"""Issue 13 #9 (remainder) over real HTTP: what ragtap keeps of one RAG reply is bounded.

- A non-streamed RAG reply over `replies.max_body_bytes` reaches the app as the upstream's bytes, unchanged,
  streamed through; it is not scored (`reply_too_large`).  On the previous code the whole body was read into
  memory first (an endless reply grew without bound): the tracemalloc test fails there.
- A stream's extractor keeps at most `replies.max_kept_chars`: beyond, the app keeps getting the answer (or, if
  nothing was forwarded yet, the upstream text unchanged) and the interaction is not scored; the answer kept for
  the record is at most the limit.  On the previous code the whole answer was kept (no reason, scored).
"""

from __future__ import annotations

import asyncio
import json
import tracemalloc
from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp import web

from conftest import explicit, fixed, rag_messages
from ragtap.testing.upstream import ScriptedReply

MODEL = "gpt-4o-mini"
CHUNK = b"x" * 65536
HEAD = b'{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"'


class EndlessUpstream:
    """An OpenAI-style upstream whose reply never ends on its own: a chat.completion JSON body (chunked) or an SSE
    stream whose content keeps growing, up to `max_bytes` (a bound for the test), then it ends properly."""

    def __init__(self, *, stream: bool, head: str = '{"answer": "', max_bytes: int = 64 << 20) -> None:
        self.stream = stream
        self.head = head
        self.max_bytes = max_bytes
        self.sent = 0
        self.finished = False  # it got to the end (the app never hung up)
        self.cancelled = False  # its handler was cancelled: ragtap closed the connection
        self._runner: web.AppRunner | None = None
        self.port = 0

    async def __aenter__(self) -> EndlessUpstream:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        self._runner = web.AppRunner(app, access_log=None, handler_cancellation=True)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._runner is not None
        await self._runner.cleanup()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def body_bytes(self) -> AsyncIterator[bytes]:
        async def gen() -> AsyncIterator[bytes]:
            if self.stream:
                event = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
                         "choices": [{"index": 0, "delta": {"content": self.head}, "finish_reason": None}]}
                yield b"data: " + json.dumps(event).encode() + b"\n\n"
                piece = json.dumps({**event, "choices": [{"index": 0, "delta": {"content": "x" * 8192}, "finish_reason": None}]}).encode()
                while self.sent < self.max_bytes:
                    yield b"data: " + piece + b"\n\n"
                end = {**event, "choices": [{"index": 0, "delta": {"content": '"}'}, "finish_reason": "stop"}]}
                yield b"data: " + json.dumps(end).encode() + b"\n\ndata: [DONE]\n\n"
            else:
                yield HEAD
                while self.sent < self.max_bytes:
                    yield CHUNK
                yield b'"}}]}'
        return gen()

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        await request.read()
        content_type = "text/event-stream" if self.stream else "application/json"
        response = web.StreamResponse(headers={"Content-Type": content_type})
        await response.prepare(request)
        try:
            async for data in self.body_bytes():
                await response.write(data)
                self.sent += len(data)
            await response.write_eof()
            self.finished = True
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        except ConnectionResetError:
            self.cancelled = True
        return response


def _rag_body(stream: bool) -> dict:
    return {"model": MODEL, "messages": rag_messages(), "stream": stream, **explicit()}


async def test_an_endless_non_streamed_reply_is_relayed_with_bounded_memory(start_proxy) -> None:
    limit = 256 * 1024
    async with EndlessUpstream(stream=False) as upstream:
        proxy = await start_proxy(upstream_url=upstream.base_url, flags={"replies": {"max_body_bytes": limit}})
        tracemalloc.start()
        try:
            received = 0
            async with aiohttp.ClientSession() as session:
                async with session.post(f"{proxy.url}/v1/chat/completions", json=_rag_body(False)) as response:
                    assert response.status == 200
                    first = await response.content.readexactly(len(HEAD))
                    assert first == HEAD  # the upstream's bytes, unchanged
                    received = len(first)
                    while received < 24 << 20:  # bounded: 24 MiB through ragtap, then the app hangs up
                        data = await asyncio.wait_for(response.content.read(1 << 20), 10)
                        assert data and data == b"x" * len(data)
                        received += len(data)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        # Everything this process allocated (the upstream, ragtap and the client are all here) stayed far below the
        # 24 MiB that went through: ragtap held at most its limit plus a read, never the body.
        assert peak < 8 << 20, peak
        async with asyncio.timeout(10):  # the app hung up: ragtap closed the upstream connection
            while not upstream.cancelled:
                await asyncio.sleep(0.02)
        assert not upstream.finished


async def test_a_non_streamed_reply_over_the_limit_reaches_the_app_unchanged_and_is_not_scored(start_proxy) -> None:
    limit = 64 * 1024
    async with EndlessUpstream(stream=False, max_bytes=3 << 20) as upstream:  # ends after ~3 MiB
        proxy = await start_proxy(upstream_url=upstream.base_url, flags={"replies": {"max_body_bytes": limit}})
        async with aiohttp.ClientSession() as session:
            async with session.post(f"{proxy.url}/v1/chat/completions", json=_rag_body(False)) as response:
                body = await response.read()
                assert response.status == 200
        assert upstream.finished
        assert len(body) == upstream.sent
        assert body.startswith(HEAD) and body.endswith(b'"}}]}')
        completion = json.loads(body)  # the upstream's JSON, whole
        assert set(completion["choices"][0]["message"]["content"]) == {"x"}
        interaction, _ = await proxy.collector.assessment()
        assert (interaction.answer, interaction.unscored_reason) == (None, "reply_too_large")


async def test_a_non_streamed_reply_with_a_content_length_over_the_limit_is_streamed_through(start_proxy) -> None:
    content = json.dumps({"answer": "A" * 200_000, "supporting_content": "S"})
    proxy = await start_proxy(fixed(ScriptedReply(content)), flags={"replies": {"max_body_bytes": 50_000}})
    completion = await proxy.client.chat.completions.create(model=MODEL, messages=rag_messages(), extra_body=explicit())
    assert completion.choices[0].message.content == content  # unchanged: not split
    interaction, _ = await proxy.collector.assessment()
    assert interaction.unscored_reason == "reply_too_large"


async def _stream_text(proxy, extra: dict | None = None) -> str:  # type: ignore[no-untyped-def]
    text = ""
    stream = await proxy.client.chat.completions.create(model=MODEL, messages=rag_messages(), extra_body=explicit(), stream=True, **(extra or {}))
    async for chunk in stream:
        for choice in chunk.choices:
            text += choice.delta.content or ""
    return text


async def test_a_streamed_answer_over_the_kept_limit_is_forwarded_whole_and_not_kept(start_proxy) -> None:
    answer = "".join(f"word{i} " for i in range(60_000))  # ~470,000 characters
    content = json.dumps({"answer": answer, "supporting_content": "S" * 1000})
    proxy = await start_proxy(fixed(ScriptedReply(content, piece_chars=4096)), flags={"replies": {"max_kept_chars": 50_000}})
    assert await _stream_text(proxy) == answer
    interaction, _ = await proxy.collector.assessment()
    assert interaction.unscored_reason == "reply_too_large"
    assert interaction.supporting is None
    assert len(interaction.answer) <= 50_000  # what ragtap kept: bounded


async def test_a_stream_over_the_kept_limit_before_any_answer_reaches_the_app_unchanged(start_proxy) -> None:
    # The supporting content first and huge: nothing was forwarded when the limit is reached, so the app gets the
    # upstream's text unchanged from there on.
    content = json.dumps({"supporting_content": "S" * 200_000, "answer": "Paris."})
    proxy = await start_proxy(fixed(ScriptedReply(content, piece_chars=4096)), flags={"replies": {"max_kept_chars": 50_000}})
    assert await _stream_text(proxy) == content
    interaction, _ = await proxy.collector.assessment()
    assert interaction.unscored_reason == "reply_too_large"


async def test_an_observed_stream_over_the_kept_limit_is_forwarded_and_not_scored(start_proxy) -> None:
    content = "z" * 200_000
    proxy = await start_proxy(fixed(ScriptedReply(content, piece_chars=4096)), flags={"replies": {"max_kept_chars": 50_000}})
    # A client-owned response_format: ragtap observes, it does not inject.
    assert await _stream_text(proxy, {"response_format": {"type": "json_object"}}) == content
    assert "response_format" in proxy.upstream_body() and proxy.upstream_body()["response_format"] == {"type": "json_object"}
    interaction, _ = await proxy.collector.assessment()
    assert (await proxy.collector.exchange()).injected is False
    assert interaction.unscored_reason == "reply_too_large"
    assert interaction.answer == ""  # nothing kept


@pytest.mark.parametrize("head", ['{"answer": "', '{"supporting_content": "'], ids=["answer", "support_first"])
async def test_an_endless_injected_stream_keeps_flowing_with_bounded_memory(start_proxy, head: str) -> None:
    async with EndlessUpstream(stream=True, head=head) as upstream:
        proxy = await start_proxy(upstream_url=upstream.base_url, flags={"replies": {"max_kept_chars": 200_000}})
        tracemalloc.start()
        try:
            forwarded = 0
            async with aiohttp.ClientSession() as session:
                async with session.post(f"{proxy.url}/v1/chat/completions", json=_rag_body(True)) as response:
                    assert response.status == 200
                    for _ in range(100_000):  # bounded
                        line = await asyncio.wait_for(response.content.readline(), 10)
                        if line.startswith(b"data: {"):
                            for choice in json.loads(line[6:])["choices"]:
                                forwarded += len(choice["delta"].get("content") or "")
                        if forwarded > 12_000_000:
                            break
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert forwarded > 12_000_000  # the app kept getting text
        assert peak < 10 << 20, peak  # 12 M characters went through; ragtap kept at most 200,000
        async with asyncio.timeout(10):
            while not upstream.cancelled:
                await asyncio.sleep(0.02)
