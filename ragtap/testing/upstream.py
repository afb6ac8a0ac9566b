"""A scripted OpenAI-compatible upstream: ragtap's stand-in for a real LLM, speaking the real wire format.

It serves `/v1/chat/completions` (plain JSON and SSE, with `stream_options.include_usage`), `/v1/responses`
(a `response` object, or its typed SSE events: `ragtap/testing/responses_wire.py`), `/v1/messages` (Anthropic's
`message` object, or its typed SSE events: `ragtap/testing/messages_wire.py`), `/v1/models` and
`/v1/embeddings`, records every request it receives, and answers from a *script*: a function from the request
body to a `ScriptedReply`.  The reply's `content` is what the model "writes"; `cuts` lets a test decide where
the SSE byte stream is cut into network writes (inside escapes, inside `data:` lines, inside UTF-8).

Usage::

    async with ScriptedUpstream(script) as upstream:      # listens on 127.0.0.1, a free port
        base_url = upstream.base_url                       # "http://127.0.0.1:PORT/v1"
        ...
        upstream.requests[-1].body                         # what ragtap forwarded
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from ragtap.testing.messages_wire import MessagesWire, anthropic_error
from ragtap.testing.responses_wire import ResponsesWire

INJECTION_MARKER = "supporting_content"  # the injected instruction names this field
MAX_REQUEST_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class ScriptedReply:
    content: str = "ok"
    finish_reason: str = "stop"
    status: int = 200
    error_body: dict[str, Any] | None = None  # sent instead of a completion when status != 200
    headers: dict[str, str] = field(default_factory=dict)
    piece_chars: int = 4  # how many characters of content each SSE chunk carries
    cuts: Sequence[int] | None = None  # byte offsets at which the SSE stream is split into writes
    delay_s: float = 0.0  # before the response starts
    chunk_delay_s: float = 0.0  # between SSE writes
    abort_after_bytes: int | None = None  # cut the connection after this many SSE bytes
    model: str | None = None  # defaults to the request's model
    prompt_tokens: int = 100
    completion_tokens: int | None = None  # defaults to a word count of content
    # OpenAI `tool_calls` ({"id", "type": "function", "function": {"name", "arguments"}}): the reply asks the app
    # to call tools (content null, finish_reason "tool_calls"), as an agent's first turn does.
    tool_calls: Sequence[dict[str, Any]] | None = None
    # Responses API only: output items before the message (reasoning, a file_search_call with results, ...), and
    # an `error` event sent instead of the rest of the stream after this many text deltas.
    output_prefix: Sequence[dict[str, Any]] = ()
    error_after_deltas: int | None = None
    # Messages API only (ragtap/testing/messages_wire.py): the content blocks verbatim (e.g. text blocks with
    # `citations`), the error event's type, and the prompt-cache counts of `usage`.
    blocks: Sequence[dict[str, Any]] | None = None
    error_type: str = "overloaded_error"
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0


Script = Callable[[dict[str, Any]], ScriptedReply]


@dataclass(slots=True)
class ReceivedRequest:
    path: str
    headers: dict[str, str]
    raw: bytes

    @property
    def body(self) -> dict[str, Any]:
        return json.loads(self.raw)


def was_injected(body: dict[str, Any]) -> bool:
    """True when ragtap's instruction is among the messages (the scripted model then replies in JSON)."""
    for message in body.get("messages", []):
        if message.get("role") == "system" and INJECTION_MARKER in str(message.get("content", "")):
            return True
    # The Messages API: ragtap's instruction in `system` (a string, or text blocks).
    if INJECTION_MARKER in str(body.get("system") or ""):
        return True
    # The Responses API: ragtap's instruction in `instructions`, or as a developer input item.
    if INJECTION_MARKER in str(body.get("instructions") or ""):
        return True
    items = body.get("input")
    return isinstance(items, list) and any(
        isinstance(item, dict) and item.get("role") in ("system", "developer") and INJECTION_MARKER in str(item.get("content", "")) for item in items
    )


def json_reply(answer: str, supporting: str) -> str:
    return json.dumps({"answer": answer, "supporting_content": supporting}, ensure_ascii=False)


def echo_script(body: dict[str, Any]) -> ScriptedReply:
    """A default script: answers in JSON when injected, in plain text otherwise."""
    if was_injected(body):
        return ScriptedReply(json_reply("The answer.", "The support."))
    return ScriptedReply("The answer.")


class ScriptedUpstream:
    def __init__(self, script: Script = echo_script, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.script = script
        self.host = host
        self.port = port
        self.requests: list[ReceivedRequest] = []
        self.stored: dict[str, dict[str, Any]] = {}  # Responses API: the response objects kept (`store` not false)
        self._runner: web.AppRunner | None = None
        self._counter = 0

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    async def start(self) -> ScriptedUpstream:
        # Request bodies as large as ragtap forwards (its `server.max_body_bytes`, 8 MiB by default), not aiohttp's 1 MiB.
        app = web.Application(client_max_size=MAX_REQUEST_BYTES)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/v1/responses", self._responses)
        app.router.add_post("/v1/messages", self._messages)
        app.router.add_get("/v1/responses/{response_id}", self._retrieve)
        app.router.add_get("/v1/models", self._models)
        app.router.add_post("/v1/embeddings", self._embeddings)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> ScriptedUpstream:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def _record(self, request: web.Request) -> bytes:
        raw = await request.read()
        self.requests.append(ReceivedRequest(request.path, dict(request.headers), raw))
        return raw

    async def _models(self, request: web.Request) -> web.Response:
        await self._record(request)
        return web.json_response({"object": "list", "data": [{"id": "scripted-model", "object": "model", "created": 0, "owned_by": "ragtap"}]})

    async def _embeddings(self, request: web.Request) -> web.Response:
        body = json.loads(await self._record(request))
        inputs = body.get("input", [])
        inputs = [inputs] if isinstance(inputs, str) else inputs
        data = [{"object": "embedding", "index": i, "embedding": [float(len(str(text))), 1.0, 0.0]} for i, text in enumerate(inputs)]
        return web.json_response({"object": "list", "data": data, "model": body.get("model", "scripted-embed"), "usage": {"prompt_tokens": 1, "total_tokens": 1}})

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = json.loads(await self._record(request))
        reply = self.script(body)
        if reply.delay_s:
            await asyncio.sleep(reply.delay_s)
        if reply.status != 200:
            error = reply.error_body or {"error": {"message": "scripted failure", "type": "server_error", "code": None}}
            return web.json_response(error, status=reply.status, headers=reply.headers)
        self._counter += 1
        completion_id = f"chatcmpl-scripted-{self._counter}"
        model = reply.model or body.get("model", "scripted-model")
        completion_tokens = reply.completion_tokens if reply.completion_tokens is not None else len(reply.content.split())
        usage = {"prompt_tokens": reply.prompt_tokens, "completion_tokens": completion_tokens, "total_tokens": reply.prompt_tokens + completion_tokens}
        if reply.tool_calls and not body.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": None, "refusal": None, "tool_calls": list(reply.tool_calls)}
            payload = {
                "id": completion_id, "object": "chat.completion", "created": int(time.time()), "model": model,
                "system_fingerprint": "fp_scripted",
                "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": "tool_calls"}],
                "usage": usage,
            }
            return web.json_response(payload, headers=reply.headers)
        if reply.tool_calls:
            events = tool_call_events(completion_id, model, reply.tool_calls)
            return await self._write_sse(request, b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n", reply)
        if not body.get("stream"):
            payload = {
                "id": completion_id,
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "system_fingerprint": "fp_scripted",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": reply.content, "refusal": None}, "logprobs": None, "finish_reason": reply.finish_reason}],
                "usage": usage,
            }
            return web.json_response(payload, headers=reply.headers)
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        stream = sse_bytes(completion_id, model, reply.content, reply.finish_reason, usage if include_usage else None, reply.piece_chars)
        return await self._write_sse(request, stream, reply)

    async def _responses(self, request: web.Request) -> web.StreamResponse:
        body = json.loads(await self._record(request))
        reply = self.script(body)
        if reply.delay_s:
            await asyncio.sleep(reply.delay_s)
        if reply.status != 200:
            error = reply.error_body or {"error": {"message": "scripted failure", "type": "server_error", "param": None, "code": None}}
            return web.json_response(error, status=reply.status, headers=reply.headers)
        self._counter += 1
        wire = ResponsesWire(body, reply, self._counter)
        if body.get("store") is not False:
            self.stored[wire.id] = wire.response()
        if not body.get("stream"):
            return web.json_response(wire.response(), headers=reply.headers)
        return await self._write_sse(request, wire.sse_bytes(), reply)

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        body = json.loads(await self._record(request))
        reply = self.script(body)
        if reply.delay_s:
            await asyncio.sleep(reply.delay_s)
        if reply.status != 200:
            error = reply.error_body or anthropic_error("api_error", "scripted failure")
            return web.json_response(error, status=reply.status, headers=reply.headers)
        self._counter += 1
        wire = MessagesWire(body, reply, self._counter)
        if not body.get("stream"):
            return web.json_response(wire.message(), headers=reply.headers)
        return await self._write_sse(request, wire.sse_bytes(), reply)

    async def _retrieve(self, request: web.Request) -> web.Response:
        await self._record(request)
        stored = self.stored.get(request.match_info["response_id"])
        if stored is None:
            error = {"error": {"message": "No response found.", "type": "invalid_request_error", "param": None, "code": None}}
            return web.json_response(error, status=404)
        return web.json_response(stored)

    async def _write_sse(self, request: web.Request, stream: bytes, reply: ScriptedReply) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", **reply.headers})
        await response.prepare(request)
        if reply.abort_after_bytes is not None:
            await response.write(stream[: reply.abort_after_bytes])
            request.transport.close()  # type: ignore[union-attr]  # a cut connection, mid-stream
            return response
        cuts = sorted({c for c in (reply.cuts or ()) if 0 < c < len(stream)})
        for start, end in zip([0, *cuts], [*cuts, len(stream)]):
            await response.write(stream[start:end])
            if reply.chunk_delay_s:
                await asyncio.sleep(reply.chunk_delay_s)
        await response.write_eof()
        return response


def tool_call_events(completion_id: str, model: str, tool_calls: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The chunks of a streamed reply that only calls tools: one delta with every call (indexed), then the finish."""
    base = {"id": completion_id, "object": "chat.completion.chunk", "created": int(time.time()), "model": model, "system_fingerprint": "fp_scripted"}
    calls = [{"index": i, **call} for i, call in enumerate(tool_calls)]
    return [
        {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": None, "tool_calls": calls}, "logprobs": None, "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": {}, "logprobs": None, "finish_reason": "tool_calls"}]},
    ]


def sse_events(completion_id: str, model: str, content: str, finish_reason: str, usage: dict[str, int] | None, piece_chars: int = 4) -> list[dict[str, Any]]:
    """The `chat.completion.chunk` events an OpenAI-style server sends for `content`."""
    created = int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
        return {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "system_fingerprint": "fp_scripted",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }

    events = [chunk({"role": "assistant", "content": "", "refusal": None}, None)]
    step = max(1, piece_chars)
    events += [chunk({"content": content[i : i + step]}, None) for i in range(0, len(content), step)]
    events.append(chunk({}, finish_reason))
    if usage is not None:
        events.append({"id": completion_id, "object": "chat.completion.chunk", "created": created, "model": model, "system_fingerprint": "fp_scripted", "choices": [], "usage": usage})
    return events


def sse_bytes(completion_id: str, model: str, content: str, finish_reason: str, usage: dict[str, int] | None, piece_chars: int = 4) -> bytes:
    events = sse_events(completion_id, model, content, finish_reason, usage, piece_chars)
    lines = [b"data: " + json.dumps(e, ensure_ascii=False).encode() + b"\n\n" for e in events]
    return b"".join(lines) + b"data: [DONE]\n\n"
