"""Streams on the path, whatever the API shape: open the app's event stream, pump an injected stream through a
shape's relay (`pump_events`), or forward an observed one untouched while reading a copy (`copy_events`).

A shape brings its relay (chat: `proxy/chat_stream.py`; Responses: `proxy/responses_stream.py`; Messages:
`proxy/messages_stream.py`), which rewrites each upstream payload into bytes for the app; the loop, the upstream's
comments, keep-alives, a clean end whatever the upstream did, and the app hanging up are handled here once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from time import perf_counter as now
from typing import Protocol

import aiohttp
from aiohttp import web

from ragtap.exchange import ExchangeRecord
from ragtap.proxy.sse import SSEDecoder, SSELineTooLong, take_comments
from ragtap.proxy.upstream import response_headers

# What a broken or stalled upstream stream raises while it is read.
UPSTREAM_BROKE = (aiohttp.ClientPayloadError, aiohttp.ClientConnectionError, TimeoutError, SSELineTooLong)
# An SSE comment (ignored by SSE clients) sent while the upstream is busy but nothing is for the app to see.
KEEPALIVE = b": ragtap keep-alive\n\n"
KEEPALIVE_AFTER_S = 1.0


@dataclass(slots=True)
class StreamOutcome:
    """What a stream left for scoring."""

    answer: str
    supporting: str | None = None
    unscored_reason: str | None = None


INCOMPLETE = StreamOutcome("", None, "incomplete")  # the app went away: nothing to score (never mutated)


async def open_stream(request: web.Request, upstream: aiohttp.ClientResponse) -> web.StreamResponse:
    """The app's event stream, with the upstream's status and headers (minus what the rewrite invalidates)."""
    headers = response_headers(upstream.headers, body_rewritten=True)
    # Proxies in front of ragtap (nginx) must not buffer the stream either.
    headers["Content-Type"] = "text/event-stream; charset=utf-8"
    headers["Cache-Control"] = "no-cache"
    headers["X-Accel-Buffering"] = "no"
    out = web.StreamResponse(status=upstream.status, headers=headers)
    await out.prepare(request)
    return out


class KeptText:
    """Text of a stream kept for scoring up to a limit (beyond it nothing more is kept, and it is not scored)."""

    __slots__ = ("limit", "overflow", "parts", "size")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.parts: list[str] = []
        self.size = 0
        self.overflow = False

    def append(self, text: str) -> None:
        if self.overflow:
            return
        self.size += len(text)
        if self.size > self.limit:
            self.overflow = True
            self.parts = []  # not scored: free it
            return
        self.parts.append(text)

    def text(self) -> str:
        return "".join(self.parts)


class EventRelay(Protocol):
    """What `pump_events` drives: rewrites upstream SSE payloads into `pending` bytes for the app."""

    pending: list[bytes]

    async def on_payload(self, payload: bytes) -> None: ...

    async def flush(self) -> None: ...

    async def close(self) -> None:
        """End the app's stream cleanly, whatever the upstream did (remaining answer text, final events)."""


async def pump_events(
    out: web.StreamResponse, upstream: aiohttp.ClientResponse, record: ExchangeRecord, relay: EventRelay, *,
    flush_first_token: bool = False,
) -> bool:
    """Relay an injected SSE stream through `relay`: one write per network read (with `flush_first_token`, the
    first answer text goes out as soon as it is rewritten, not after the rest of its read), the upstream's comments
    forwarded, keep-alive comments while the model writes what the app never sees, a clean end whatever the
    upstream did.  False when the app went away (the upstream is closed; the record says `incomplete`)."""
    decoder = SSEDecoder()
    last_write = now()
    try:
        try:
            async for chunk in upstream.content.iter_any():
                for payload in decoder.feed(chunk):
                    waiting = flush_first_token and record.first_token_at is None
                    await relay.on_payload(payload)
                    if waiting and record.first_token_at is not None:
                        await relay.flush()
                comments = take_comments(decoder)
                if comments:
                    relay.pending.append(comments)
                if not relay.pending and now() - last_write > KEEPALIVE_AFTER_S:
                    # The model is writing its supporting content, which the app never sees: without this the
                    # app's connection would be silent for as long as that takes (direct, it would get chunks).
                    relay.pending.append(KEEPALIVE)
                if relay.pending:
                    last_write = now()
                await relay.flush()
            for payload in decoder.close():
                await relay.on_payload(payload)
            await relay.flush()
        except UPSTREAM_BROKE as error:
            record.outcome, record.error_type = "upstream_error", type(error).__name__
        record.upstream_done_at = now()
        await relay.close()
        await out.write_eof()
    except (ConnectionResetError, asyncio.CancelledError):  # the app went away: stop reading, close the upstream
        record.outcome = "incomplete"
        upstream.close()
        return False
    finally:
        upstream.release()
    return True


async def copy_events(out: web.StreamResponse, upstream: aiohttp.ClientResponse, record: ExchangeRecord, on_payload: Callable[[bytes], None]) -> bool:
    """Forward the upstream's SSE bytes untouched (comments included) and hand each payload to `on_payload` (a
    copy, read for scoring).  A broken upstream ends the app's stream where its bytes stopped.  False when the
    app went away (the upstream is closed; the record says `incomplete`)."""
    decoder = SSEDecoder()
    try:
        try:
            async for chunk in upstream.content.iter_any():
                await out.write(chunk)
                for payload in decoder.feed(chunk):
                    on_payload(payload)
                decoder.comments.clear()  # forwarded already, with the bytes
        except UPSTREAM_BROKE as error:
            record.outcome, record.error_type = "upstream_error", type(error).__name__
        record.upstream_done_at = now()
        await out.write_eof()
    except (ConnectionResetError, asyncio.CancelledError):  # (the handler is cancelled when the app hangs up)
        record.outcome = "incomplete"
        upstream.close()
        return False
    finally:
        upstream.release()
    return True


def broken_off(record: ExchangeRecord, outcome: StreamOutcome) -> StreamOutcome:
    """A stream the upstream did not finish is not scored (unless it is unscored for another reason already)."""
    if record.outcome != "complete" and outcome.unscored_reason is None:
        outcome.unscored_reason = "upstream_broke_off"
    return outcome
