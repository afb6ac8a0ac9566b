"""The scripted upstream of bench/guard.py: realistic multi-sentence answers, faithful or with one invented sentence.

    .venv/bin/python bench/guard_upstream.py --port 9103

POST /v1/chat/completions and /v1/responses (plain or `"stream": true`, one network write per event) answer from
the bench's refund-policy documents (bench/bodies.py) with three sentences taken from them, or -- when the request
carries `x-bench-answer: invented` (ragtap forwards the app's headers) -- the same with one invented sentence in
the middle.  Injected requests (ragtap's instruction names "supporting_content") get the JSON reply.  A request
that carries the guard's retry instruction ("Your previous answer") always gets the faithful answer.  Streams send
one word per event; `x-bench-token-ms: N` paces them N ms apart (a model writing), 0 by default (as fast as the
sockets go: what ragtap itself adds).  GET /v1/models for readiness.
"""

from __future__ import annotations

import asyncio
from functools import lru_cache

import orjson
from aiohttp import web

import upstream as chat_upstream
from responses_upstream import MODEL, _response, events_of
from upstream import CREATED, NOT_FOUND

FAITHFUL = ("Customers may request a refund within 30 days of delivery for any order that arrived damaged or defective. "
            "The request is made from the order page by choosing Report a problem and attaching a photo of the damage. "
            "Refunds go back to the original payment method within 5 to 7 business days after the claim is approved.")
INVENTED_SENTENCE = "Orders shipped to Alaska or Hawaii are refunded by Dr. Alice Zhang's team in Boise within 48 hours."
_first, _rest = FAITHFUL.split(". ", 1)
INVENTED = f"{_first}. {INVENTED_SENTENCE} {_rest}"
SUPPORT = ("Refund policy. Customers may request a refund within 30 days of delivery for any order that arrived damaged or "
           "defective. Refunds go back to the original payment method within 5 to 7 business days after the claim is approved.")
RETRY_MARKER = b"Your previous answer"


def _text(injected: bool, invented: bool) -> str:
    answer = INVENTED if invented else FAITHFUL
    return orjson.dumps({"answer": answer, "supporting_content": SUPPORT}).decode() if injected else answer


def _pieces(text: str) -> list[str]:
    words = text.split(" ")
    return [w + " " for w in words[:-1]] + [words[-1]]


@lru_cache(maxsize=16)
def chat_completion(injected: bool, invented: bool) -> bytes:
    content = _text(injected, invented)
    return orjson.dumps({
        "id": "chatcmpl-guard", "object": "chat.completion", "created": CREATED, "model": MODEL, "system_fingerprint": "fp_bench",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content, "refusal": None}, "logprobs": None, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 350, "completion_tokens": len(content.split()), "total_tokens": 350 + len(content.split())},
    })


@lru_cache(maxsize=16)
def chat_events(injected: bool, invented: bool) -> tuple[bytes, ...]:
    def event(delta: dict[str, object], finish: str | None) -> bytes:
        chunk = {"id": "chatcmpl-guard", "object": "chat.completion.chunk", "created": CREATED, "model": MODEL,
                 "system_fingerprint": "fp_bench", "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}
        return b"data: " + orjson.dumps(chunk) + b"\n\n"

    events = [event({"role": "assistant", "content": "", "refusal": None}, None)]
    events += [event({"content": piece}, None) for piece in _pieces(_text(injected, invented))]
    return (*events, event({}, "stop"), b"data: [DONE]\n\n")


@lru_cache(maxsize=16)
def response_object(injected: bool, invented: bool) -> bytes:
    return orjson.dumps(_response(_text(injected, invented), "completed"))


@lru_cache(maxsize=16)
def response_events(injected: bool, invented: bool) -> tuple[bytes, ...]:
    return events_of(tuple(_pieces(_text(injected, invented))))


async def handle(request: web.BaseRequest) -> web.StreamResponse:
    chat = request.path in ("/v1/chat/completions", "/chat/completions")
    if request.method != "POST" or not (chat or request.path in ("/v1/responses", "/responses")):
        if request.path in ("/v1/models", "/models"):
            return await chat_upstream.handle(request)
        return web.Response(status=404, body=NOT_FOUND, content_type="application/json")
    raw = await request.read()
    injected = b"supporting_content" in raw
    invented = request.headers.get("x-bench-answer") == "invented" and RETRY_MARKER not in raw
    if b'"stream":true' not in raw and b'"stream": true' not in raw:
        body = chat_completion(injected, invented) if chat else response_object(injected, invented)
        return web.Response(body=body, content_type="application/json")
    pause = float(request.headers.get("x-bench-token-ms", "0")) / 1000.0
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache"})
    await response.prepare(request)
    for data in chat_events(injected, invented) if chat else response_events(injected, invented):
        await response.write(data)
        if pause:
            await asyncio.sleep(pause)
    await response.write_eof()
    return response


def main() -> None:
    chat_upstream.main(handle, "guard upstream", "scripted upstream for bench/guard.py", 9103)


if __name__ == "__main__":
    main()
