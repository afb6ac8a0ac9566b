"""A fast scripted Responses API upstream for bench/responses.py: precomputed bytes, minimal work per request.

    .venv/bin/python bench/responses_upstream.py --port 9102

POST /v1/responses answers a `response` object, or with `"stream": true` its typed SSE events (one network write
per event, as OpenAI sends them): created, in_progress, output_item.added, content_part.added, N
output_text.delta events (N = the request's `max_output_tokens`, default 20), output_text.done,
content_part.done, output_item.done, completed.
Everything else (chat completions, /v1/models) is answered by bench/upstream.py's handler.  When the request carries ragtap's instruction (its
`instructions` name "supporting_content") the text is the JSON `{"answer", "supporting_content"}` reply, cut
into the same N deltas, so direct and proxied streams have the same event count.  GET /v1/models for readiness.
"""

from __future__ import annotations

import re
from functools import lru_cache

import orjson
from aiohttp import web

import upstream as chat_upstream
from upstream import ANSWER_WORDS, CREATED, NOT_FOUND, SUPPORT, _answer_text, _pieces

MAX_OUTPUT_TOKENS = re.compile(rb'"max_output_tokens": ?(\d+)')
MODEL = "gpt-4o-mini-2024-07-18"


def _response(text: str | None, status: str) -> dict[str, object]:
    output = [] if text is None else [{
        "id": "msg_bench", "type": "message", "status": "completed", "role": "assistant",
        "content": [{"type": "output_text", "annotations": [], "logprobs": [], "text": text}],
    }]
    usage = None if text is None else {
        "input_tokens": 350, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": len(text.split()),
        "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 350 + len(text.split()),
    }
    return {
        "id": "resp_bench", "object": "response", "created_at": CREATED, "status": status, "background": False, "error": None,
        "incomplete_details": None, "instructions": None, "max_output_tokens": None, "model": MODEL, "output": output,
        "parallel_tool_calls": True, "previous_response_id": None, "reasoning": {"effort": None, "summary": None},
        "service_tier": "default", "store": True, "temperature": 0.0, "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": "auto", "tools": [], "top_p": 1.0, "truncation": "disabled", "usage": usage, "user": None, "metadata": {},
    }


@lru_cache(maxsize=4)
def response_bytes(injected: bool) -> bytes:
    answer = _answer_text(len(ANSWER_WORDS))
    text = orjson.dumps({"answer": answer, "supporting_content": SUPPORT}).decode() if injected else answer
    return orjson.dumps(_response(text, "completed"))


@lru_cache(maxsize=64)
def stream_events(chunks: int, injected: bool) -> tuple[bytes, ...]:
    return events_of(tuple(_pieces(chunks, injected)))


def events_of(pieces: tuple[str, ...]) -> tuple[bytes, ...]:
    """The typed events of a streamed response whose text is `pieces`, one `output_text.delta` each."""
    text = "".join(pieces)
    events: list[bytes] = []

    def add(kind: str, **fields: object) -> None:
        payload = orjson.dumps({"type": kind, "sequence_number": len(events), **fields})
        events.append(b"event: " + kind.encode() + b"\ndata: " + payload + b"\n\n")

    ids = {"item_id": "msg_bench", "output_index": 0, "content_index": 0}
    add("response.created", response=_response(None, "in_progress"))
    add("response.in_progress", response=_response(None, "in_progress"))
    add("response.output_item.added", output_index=0, item={"id": "msg_bench", "type": "message", "status": "in_progress", "role": "assistant", "content": []})
    add("response.content_part.added", **ids, part={"type": "output_text", "annotations": [], "logprobs": [], "text": ""})
    for piece in pieces:
        add("response.output_text.delta", **ids, delta=piece, logprobs=[])
    add("response.output_text.done", **ids, text=text, logprobs=[])
    part = {"type": "output_text", "annotations": [], "logprobs": [], "text": text}
    add("response.content_part.done", **ids, part=part)
    add("response.output_item.done", output_index=0, item={"id": "msg_bench", "type": "message", "status": "completed", "role": "assistant", "content": [part]})
    add("response.completed", response=_response(text, "completed"))
    return tuple(events)


def _injected(raw: bytes) -> bool:
    return b"supporting_content" in raw and "supporting_content" in str(orjson.loads(raw).get("instructions") or "")


async def handle(request: web.BaseRequest) -> web.StreamResponse:
    if request.method == "POST" and request.path in ("/v1/responses", "/responses"):
        raw = await request.read()
        injected = _injected(raw)
        if b'"stream":true' not in raw and b'"stream": true' not in raw:
            return web.Response(body=response_bytes(injected), content_type="application/json")
        found = MAX_OUTPUT_TOKENS.search(raw)
        chunks = min(100_000, max(2, int(found.group(1)))) if found else 20
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache"})
        await response.prepare(request)
        for data in stream_events(chunks, injected):
            await response.write(data)
        await response.write_eof()
        return response
    # Chat completions as bench/upstream.py answers them: the chat path measured in the same run, for reference.
    return await chat_upstream.handle(request)
    return web.Response(status=404, body=NOT_FOUND, content_type="application/json")


def main() -> None:
    chat_upstream.main(handle, "responses upstream", "fast scripted Responses API upstream for the ragtap benchmark", 9102)


if __name__ == "__main__":
    main()
