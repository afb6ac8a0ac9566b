"""A fast scripted Anthropic Messages API upstream for bench/messages.py: precomputed bytes, minimal work per request.

    .venv/bin/python bench/messages_upstream.py --port 9103

POST /v1/messages answers a `message` object, or with `"stream": true` its typed SSE events (one network write per
event, as Anthropic sends them): message_start, content_block_start, ping, N text_delta events (N = the
request's `max_tokens`, default 20), content_block_stop, message_delta, message_stop.  When the request carries
ragtap's instruction (its `system` names "supporting_content") the text is Claude's usual JSON reply: a preamble
("Here is the JSON:"), a fenced `{"answer", "supporting_content"}` object, cut into the same N deltas, so direct
and proxied streams have the same event count.  Everything else (chat completions, /v1/models) is answered by
bench/upstream.py's handler: the chat path measured in the same run, for reference.
"""

from __future__ import annotations

import re
from functools import lru_cache

import orjson
from aiohttp import web

import upstream as chat_upstream
from upstream import ANSWER_WORDS, _answer_text, _pieces

MAX_TOKENS = re.compile(rb'"max_tokens": ?(\d+)')
MODEL = "claude-haiku-4-5-20251001"
LEAD_IN = "Here is the JSON:\n```json\n"


def _message(text: str, output_tokens: int) -> dict[str, object]:
    return {"id": "msg_bench", "type": "message", "role": "assistant", "model": MODEL, "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 350, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": output_tokens}}


def _with_lead_in(pieces: list[str]) -> list[str]:
    return [LEAD_IN + pieces[0], *pieces[1:-1], pieces[-1] + "\n```"] if len(pieces) > 1 else [LEAD_IN + pieces[0] + "\n```"]


@lru_cache(maxsize=4)
def message_bytes(injected: bool) -> bytes:
    pieces = _pieces(len(ANSWER_WORDS), injected)
    text = "".join(_with_lead_in(pieces) if injected else pieces)
    return orjson.dumps(_message(text, len(ANSWER_WORDS)))


@lru_cache(maxsize=64)
def stream_events(chunks: int, injected: bool) -> tuple[bytes, ...]:
    pieces = _pieces(chunks, injected)
    if injected:
        pieces = _with_lead_in(pieces)
    events: list[bytes] = []

    def add(kind: str, **fields: object) -> None:
        events.append(b"event: " + kind.encode() + b"\ndata: " + orjson.dumps({"type": kind, **fields}) + b"\n\n")

    start = _message("", 1)
    add("message_start", message={**start, "content": [], "stop_reason": None})
    add("content_block_start", index=0, content_block={"type": "text", "text": ""})
    add("ping")
    for piece in pieces:
        add("content_block_delta", index=0, delta={"type": "text_delta", "text": piece})
    add("content_block_stop", index=0)
    add("message_delta", delta={"stop_reason": "end_turn", "stop_sequence": None}, usage={"output_tokens": chunks})
    add("message_stop")
    return tuple(events)


def _injected(raw: bytes) -> bool:
    return b"supporting_content" in raw and "supporting_content" in str(orjson.loads(raw).get("system") or "")


async def handle(request: web.BaseRequest) -> web.StreamResponse:
    if request.method == "POST" and request.path in ("/v1/messages", "/messages"):
        raw = await request.read()
        injected = _injected(raw)
        if b'"stream":true' not in raw and b'"stream": true' not in raw:
            return web.Response(body=message_bytes(injected), content_type="application/json")
        found = MAX_TOKENS.search(raw)
        chunks = min(100_000, max(2, int(found.group(1)))) if found else 20
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache"})
        await response.prepare(request)
        for data in stream_events(chunks, injected):
            await response.write(data)
        await response.write_eof()
        return response
    return await chat_upstream.handle(request)


def main() -> None:
    chat_upstream.main(handle, "messages upstream", "fast scripted Anthropic Messages API upstream for the ragtap benchmark", 9103)


if __name__ == "__main__":
    main()
