"""A fast scripted OpenAI-compatible upstream for the benchmark: precomputed bytes, minimal work per request.

    .venv/bin/python bench/upstream.py --port 9101

POST /v1/chat/completions (and /chat/completions) answers
- a plain-text completion, or, when the request carries ragtap's injected system message (it names
  "supporting_content"), a JSON `{"answer": ..., "supporting_content": ...}` completion;
- `"stream": true`: SSE `chat.completion.chunk` events, one network write per event as LLM servers send them,
  with N content chunks (N = the request's `max_tokens`, default 20), and a usage chunk when
  `stream_options.include_usage` is set.  Injected streams carry the same N chunks, the JSON reply cut into
  them (answer first, then the supporting content), so direct and proxied streams have the same chunk count.
GET /v1/models answers a one-model list.  Every response is built once and cached by its shape; per request
the server only does byte searches on the body and one header look-up.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
from functools import cache, lru_cache

import orjson
from aiohttp import web

ANSWER_WORDS = ["Customers", "can", "request", "a", "refund", "within", "30", "days", "of", "delivery", "when", "an", "order", "arrives", "damaged;", "they", "report", "the", "problem", "from", "the", "order", "page", "with", "a", "photo,", "and", "the", "money", "returns", "to", "the", "original", "payment", "method", "within", "5", "to", "7", "business", "days", "after", "approval."]
SUPPORT = "Refund policy: a refund may be requested within 30 days of delivery for any order that arrived damaged or defective."
MARKER = b"supporting_content"
MAX_TOKENS = re.compile(rb'"max_tokens": ?(\d+)')
CREATED = 1_700_000_000


def _answer_text(words: int) -> str:
    return " ".join(ANSWER_WORDS[i % len(ANSWER_WORDS)] for i in range(words))


def _usage(completion_tokens: int) -> dict[str, int]:
    return {"prompt_tokens": 350, "completion_tokens": completion_tokens, "total_tokens": 350 + completion_tokens}


@cache
def completion_bytes(injected: bool) -> bytes:
    answer = _answer_text(len(ANSWER_WORDS))
    content = orjson.dumps({"answer": answer, "supporting_content": SUPPORT}).decode() if injected else answer
    return orjson.dumps(
        {
            "id": "chatcmpl-bench",
            "object": "chat.completion",
            "created": CREATED,
            "model": "gpt-4o-mini-2024-07-18",
            "system_fingerprint": "fp_bench",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content, "refusal": None}, "logprobs": None, "finish_reason": "stop"}],
            "usage": _usage(len(content.split())),
        }
    )


def _pieces(chunks: int, injected: bool) -> list[str]:
    """`chunks` content pieces; joined they are the plain answer, or the JSON reply when injected."""
    if not injected:
        words = _answer_text(chunks).split(" ")
        return [w + " " for w in words[:-1]] + [words[-1]]
    support_chunks = max(1, chunks // 4)
    answer_words = _answer_text(max(1, chunks - support_chunks)).split(" ")
    support_words = (SUPPORT.split(" ") * (support_chunks // 10 + 2))[:support_chunks]
    pieces = ['{"answer": "' + answer_words[0]] + [" " + w for w in answer_words[1:]]
    pieces[-1] += '", "supporting_content": "'
    pieces += [w + " " for w in support_words[:-1]] + [support_words[-1] + '"}']
    assert len(pieces) == chunks or chunks < 2, (len(pieces), chunks)
    return pieces


@lru_cache(maxsize=64)
def stream_events(chunks: int, injected: bool, include_usage: bool) -> tuple[bytes, ...]:
    def event(delta: dict[str, object], finish: str | None) -> bytes:
        chunk = {
            "id": "chatcmpl-bench",
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": "gpt-4o-mini-2024-07-18",
            "system_fingerprint": "fp_bench",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        return b"data: " + orjson.dumps(chunk) + b"\n\n"

    events = [event({"role": "assistant", "content": "", "refusal": None}, None)]
    events += [event({"content": piece}, None) for piece in _pieces(chunks, injected)]
    events.append(event({}, "stop"))
    if include_usage:
        usage = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": CREATED, "model": "gpt-4o-mini-2024-07-18",
                 "system_fingerprint": "fp_bench", "choices": [], "usage": _usage(chunks)}
        events.append(b"data: " + orjson.dumps(usage) + b"\n\n")
    events.append(b"data: [DONE]\n\n")
    return tuple(events)


MODELS = orjson.dumps({"object": "list", "data": [{"id": "gpt-4o-mini", "object": "model", "created": CREATED, "owned_by": "bench"}]})
NOT_FOUND = orjson.dumps({"error": {"message": "not found", "type": "invalid_request_error", "param": None, "code": None}})


def _injected(raw: bytes) -> bool:
    """ragtap's instruction is a system message naming "supporting_content" (verified only when the bytes say so)."""
    if MARKER not in raw:
        return False
    for message in orjson.loads(raw).get("messages", ()):
        if message.get("role") == "system" and "supporting_content" in str(message.get("content", "")):
            return True
    return False


async def handle(request: web.BaseRequest) -> web.StreamResponse:
    path = request.path
    if request.method == "POST" and path in ("/v1/chat/completions", "/chat/completions"):
        raw = await request.read()
        injected = _injected(raw)
        if b'"stream":true' not in raw and b'"stream": true' not in raw:
            return web.Response(body=completion_bytes(injected), content_type="application/json")
        include_usage = b'"include_usage":true' in raw or b'"include_usage": true' in raw
        found = MAX_TOKENS.search(raw)
        chunks = min(100_000, max(2, int(found.group(1)))) if found else 20
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await response.prepare(request)
        for data in stream_events(chunks, injected, include_usage):
            await response.write(data)
        await response.write_eof()
        return response
    if path in ("/v1/models", "/models"):
        return web.Response(body=MODELS, content_type="application/json")
    return web.Response(status=404, body=NOT_FOUND, content_type="application/json")


async def serve(host: str, port: int, handler=None, name: str = "upstream") -> None:  # type: ignore[no-untyped-def]
    server = web.Server(handler or handle, access_log=None)
    loop = asyncio.get_running_loop()
    listener = await loop.create_server(server, host, port, backlog=1024, reuse_address=True)
    print(f"{name} ready on http://{host}:{listener.sockets[0].getsockname()[1]}/v1", flush=True)
    await asyncio.Event().wait()


def main(handler=None, name: str = "upstream", description: str = "fast scripted upstream for the ragtap benchmark",  # type: ignore[no-untyped-def]
         default_port: int = 9101) -> None:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=default_port)
    args = parser.parse_args()
    try:
        import uvloop

        uvloop.run(serve(args.host, args.port, handler, name))
    except ImportError:
        asyncio.run(serve(args.host, args.port, handler, name))
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
