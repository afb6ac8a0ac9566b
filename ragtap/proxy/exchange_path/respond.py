"""Step 6: respond.  `respond` awaits a route's response and maps ragtap's own failures to an error the app's SDK
parses; the exchange's hooks and scoring then run on the next loop turn, off the app's latency.  A reply body is
read whole only up to `replies.max_body_bytes` (`read_bounded`); beyond, it is relayed unchanged (`relay_too_large`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from time import perf_counter as now

from aiohttp import web

from ragtap.exchange import ExchangeRecord
from ragtap.proxy.errors import BadPath, RequestTooDeep, UpstreamUnavailable, failure_response
from ragtap.proxy.exchange_path.handoff import after_response, score_later
from ragtap.proxy.exchange_path.read import Exchange
from ragtap.proxy.exchange_path.streams import StreamOutcome
from ragtap.proxy.passthrough import relay_response
from ragtap.proxy.upstream_http import UPSTREAM_BROKE, UpstreamResponse
from ragtap.split.stream import REPLY_TOO_LARGE


async def respond(exchange: Exchange, route: Awaitable[web.StreamResponse]) -> web.StreamResponse:
    """Await a route's response; ragtap's own failures become the app's answer (an OpenAI-shaped error).  The
    exchange's hooks run after the response (`after_response`, next loop turn): not part of the app's latency."""
    record = exchange.record
    loop = asyncio.get_running_loop()
    try:
        response = await route
    except (UpstreamUnavailable, BadPath, RequestTooDeep) as failure:
        response = failure_response(record, failure)
    except asyncio.CancelledError:  # the app hung up (or the grace period ran out): the upstream request is dropped
        exchange.ask_again = None
        record.outcome, record.finished_at = "incomplete", now()
        exchange.pending = None
        loop.call_soon(after_response, exchange)
        raise
    # The route is done, and with it seam (c).  Its closure holds the exchange (a reference cycle): dropped here, the
    # exchange, its request and bodies are freed by reference counting when the hooks are done with them, instead of
    # waiting as cyclic garbage for the collector (at c=32, ~37 objects per RAG request and ~10% of the event
    # loop's CPU in collections; docs/benchmarks.md "Request path, fifth round").
    exchange.ask_again = None
    record.finished_at = now()
    loop.call_soon(after_response, exchange)
    return response


StreamRelay = Callable[[], Awaitable[tuple[web.StreamResponse, StreamOutcome]]]


async def read_reply(exchange: Exchange, upstream: UpstreamResponse, stream_relay: StreamRelay | None) -> web.StreamResponse | bytes:
    """The reply to a request ragtap reads, up to where a shape's own work starts: the upstream's own error relayed
    unchanged; an event stream relayed by `stream_relay` (when the request asked for one) and handed to scoring; a
    body too large to hold relayed unchanged (unscored); else the whole body, for the shape to split or read."""
    if upstream.status != 200:  # the upstream's own error (4xx, 5xx, 529 overloaded): the app sees it unchanged
        return await relay_response(exchange.request, upstream, exchange.record, decompressed=True)
    if stream_relay is not None and "text/event-stream" in upstream.headers.get("Content-Type", ""):
        # (an upstream that ignores `stream` and answers with one JSON body, or with HTML, is read whole)
        response, outcome = await stream_relay()
        score_later(exchange, outcome.answer, outcome.supporting, outcome.unscored_reason)
        return response
    data = await read_bounded(upstream, exchange.record, exchange.state.config.replies.max_body_bytes)
    if isinstance(data, TooLarge):
        return await relay_too_large(exchange, upstream, data, scored=True)
    return data


class TooLarge:
    """A reply body over `replies.max_body_bytes`: the bytes read so far (at most the limit plus one read)."""

    __slots__ = ("prefix",)

    def __init__(self, prefix: bytes) -> None:
        self.prefix = prefix


async def read_bounded(upstream: UpstreamResponse, record: ExchangeRecord, limit: int) -> bytes | TooLarge:
    """The whole reply body if it is at most `limit` bytes; else what was read so far, the rest left unread (the
    caller relays it).  A body that breaks off or stalls is UpstreamUnavailable (502 / 504: nothing was sent yet)."""
    if upstream.content_length is not None and upstream.content_length > limit:
        return TooLarge(b"")
    parts: list[bytes] = []
    size = 0
    try:
        async for chunk in upstream.iter_any():
            parts.append(chunk)
            size += len(chunk)
            if size > limit:
                return TooLarge(b"".join(parts))
    except UPSTREAM_BROKE as error:
        upstream.release()
        record.upstream_done_at = now()
        raise UpstreamUnavailable.from_broken_body(error) from error
    upstream.release()
    record.upstream_done_at = now()
    return b"".join(parts)


async def relay_too_large(exchange: Exchange, upstream: UpstreamResponse, too_large: TooLarge, *, scored: bool) -> web.StreamResponse:
    """A reply too large to hold: the app gets the upstream's bytes unchanged, streamed through; when `scored`
    (a RAG reply), it is handed to scoring as unscored (`reply_too_large`)."""
    prefix, too_large.prefix = too_large.prefix, b""
    response = await relay_response(exchange.request, upstream, exchange.record, decompressed=True, prefix=prefix)
    if scored:
        score_later(exchange, None, None, REPLY_TOO_LARGE)
    return response
