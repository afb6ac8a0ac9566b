"""Step 4: send the request upstream: unchanged (bytes as the app sent them), or rewritten and read back.

A request ragtap will read the reply of is sent asking for an uncompressed body (`send_json`), so the reply can
be parsed without a decompress/compress round trip.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from time import perf_counter as now
from typing import Any

from aiohttp import web

from ragtap.proxy.errors import UpstreamUnavailable, openai_error
from ragtap.proxy.exchange_path.read import Exchange, request_bytes
from ragtap.proxy.exchange_path.respond import TooLarge, read_bounded, relay_too_large
from ragtap.proxy.passthrough import forward_unchanged, relay_response
from ragtap.proxy.upstream import forward_target, request_headers, response_headers
from ragtap.proxy.upstream_http import UpstreamResponse


async def send_json(exchange: Exchange, body: bytes) -> UpstreamResponse:
    """Forward a body ragtap will read: uncompressed, so the reply can be parsed."""
    request, record = exchange.request, exchange.record
    record.upstream_sent_at = now()
    upstream = await exchange.state.upstream.send(
        "POST", forward_target(request.path, request.raw_path), request_headers(request.headers, identity_encoding=True), body, decompress=True
    )
    record.upstream_headers_at = now()
    record.status = upstream.status
    return upstream


def forward_raw(exchange: Exchange) -> Awaitable[web.StreamResponse]:
    """Not ragtap's to read: the request bytes go upstream unchanged and the reply bytes come back unchanged.
    (The passthrough's coroutine itself, not one wrapping it: this is every non-RAG request's path.)"""
    return forward_unchanged(exchange.request, exchange.state, exchange.raw, exchange.record)


async def forward_json(exchange: Exchange, body: dict[str, Any]) -> web.StreamResponse:
    """A rewritten request (e.g. without the `ragtap` field) whose reply the app gets unchanged."""
    upstream = await send_json(exchange, request_bytes(body))
    return await relay_response(exchange.request, upstream, exchange.record, decompressed=True)


async def retry_without_json_mode(
    exchange: Exchange, upstream: UpstreamResponse, rejects: Callable[[bytes], bool], resend: Callable[[], Awaitable[UpstreamResponse]],
) -> UpstreamResponse | web.StreamResponse:
    """Some OpenAI-compatible servers reject the JSON mode ragtap asked for with a 400 naming it: ask again
    without it, once (`resend`).  Any other 400 is the app's answer, unchanged."""
    record = exchange.record
    try:
        error_body = await read_bounded(upstream, record, exchange.state.config.replies.max_body_bytes)
    except UpstreamUnavailable as failure:  # the 400's body was cut or stalled: the app still gets the 400
        record.error_type = failure.error_type
        return openai_error(400, "ragtap: the upstream answered 400 but its error body was cut off or stalled", type_="upstream_error",
                            code="upstream_broken_error_body")
    if isinstance(error_body, TooLarge):
        return await relay_too_large(exchange, upstream, error_body, scored=False)
    if not rejects(error_body):
        return web.Response(status=400, body=error_body, headers=response_headers(upstream.headers, body_rewritten=True))
    return await resend()
