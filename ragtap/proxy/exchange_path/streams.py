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
from ragtap.proxy.sse import MAX_LINE_BYTES, Comment, SSEDecoder, Unheld
from ragtap.proxy.upstream import response_headers
from ragtap.split.text_pieces import TextPieces

# What a broken or stalled upstream stream raises while it is read.
UPSTREAM_BROKE = (aiohttp.ClientPayloadError, aiohttp.ClientConnectionError, TimeoutError)
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
    """Text of a stream kept for scoring up to a limit (beyond it nothing more is kept, and it is not scored), in
    about its own size (`TextPieces`: a list of the pieces, a token or two each, cost ~15 times the text)."""

    __slots__ = ("limit", "overflow", "pieces")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.pieces = TextPieces()
        self.overflow = False

    def append(self, text: str) -> None:
        if self.overflow:
            return
        if self.pieces.size + len(text) > self.limit:
            self.overflow = True
            self.pieces = TextPieces()  # not scored: free it
            return
        self.pieces.append(text)

    def text(self) -> str:
        return self.pieces.text()


class EventRelay(Protocol):
    """What `pump_events` drives: rewrites upstream SSE payloads into `pending` bytes for the app."""

    pending: list[bytes]

    @property
    def ended(self) -> bool:
        """The app's stream has its end ([DONE], the final event): nothing, not even a keep-alive, may follow."""

    async def on_payload(self, payload: bytes) -> None: ...

    def on_unheld(self, event_type: str | None) -> None:
        """An event too large to hold begins: its bytes reach the app unchanged (`pump_events` puts them in
        `pending`); the relay only counts it (sequence numbers) and notes what it could not split."""

    async def flush(self) -> None: ...

    async def close(self) -> None:
        """End the app's stream cleanly, whatever the upstream did (remaining answer text, final events)."""


async def pump_events(
    out: web.StreamResponse, upstream: aiohttp.ClientResponse, record: ExchangeRecord, relay: EventRelay, *,
    flush_first_token: bool = False, max_event_bytes: int = MAX_LINE_BYTES,
) -> bool:
    """Relay an injected SSE stream through `relay`: one write per network read (with `flush_first_token`, the
    first answer text goes out as soon as it is rewritten, not after the rest of its read), the upstream's comments
    forwarded, keep-alive comments while the model writes what the app never sees (never after the stream's end),
    a clean end whatever the upstream did.  An event over `max_event_bytes` (`replies.max_body_bytes`) is not held:
    its bytes go to the app as they come, unchanged.  False when the app went away (the upstream is closed; the
    record says `incomplete`)."""
    decoder = SSEDecoder(max_event_bytes, pass_unheld=True)
    last_write = now()
    try:
        try:
            async for chunk in upstream.content.iter_any():
                await _relay_items(decoder.feed(chunk), relay, record, flush_first_token)
                if not relay.pending and not relay.ended and now() - last_write > KEEPALIVE_AFTER_S:
                    # The model is writing its supporting content, which the app never sees: without this the
                    # app's connection would be silent for as long as that takes (direct, it would get chunks).
                    relay.pending.append(KEEPALIVE)
                if relay.pending:
                    last_write = now()
                await relay.flush()
            await _relay_items(decoder.close(), relay, record, False)
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


async def _relay_items(items: list[bytes | Unheld], relay: EventRelay, record: ExchangeRecord, flush_first_token: bool) -> None:
    for item in items:
        if isinstance(item, Comment):  # the upstream's comments, where they came (none after the stream's end)
            if not relay.ended:
                relay.pending.append(item)
            continue
        if isinstance(item, Unheld):  # too large to hold: to the app as it came
            if item.first:
                relay.on_unheld(item.event_type)
            relay.pending.append(item.data)
            continue
        waiting = flush_first_token and record.first_token_at is None
        await relay.on_payload(item)
        if waiting and record.first_token_at is not None:
            await relay.flush()


async def copy_events(out: web.StreamResponse, upstream: aiohttp.ClientResponse, record: ExchangeRecord, on_payload: Callable[[bytes], None],
                      on_unheld: Callable[[str | None], None] = lambda event_type: None, *, max_event_bytes: int = MAX_LINE_BYTES) -> bool:
    """Forward the upstream's SSE bytes untouched (comments included) and hand each payload to `on_payload` (a
    copy, read for scoring; an event over `max_event_bytes` is forwarded but not read: its type to `on_unheld`).  A broken upstream ends the
    app's stream where its bytes stopped.  False when the app went away (the upstream is closed; the record says
    `incomplete`)."""
    decoder = SSEDecoder(max_event_bytes)
    try:
        try:
            async for chunk in upstream.content.iter_any():
                await out.write(chunk)
                for payload in decoder.feed(chunk):
                    on_payload(payload)  # type: ignore[arg-type]  # (no Unheld items without pass_unheld)
                decoder.comments.clear()  # forwarded already, with the bytes
                for event_type in decoder.unheld_events:
                    on_unheld(event_type)
                decoder.unheld_events.clear()
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
