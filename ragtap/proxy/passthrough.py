"""Byte-for-byte forwarding, for every route ragtap does not rewrite (and for chat requests it leaves alone)."""

from __future__ import annotations

import asyncio

from aiohttp import web
from time import perf_counter as _now

from ragtap.exchange import ExchangeRecord
from ragtap.proxy.errors import BadPath, UpstreamUnavailable, failure_response
from ragtap.proxy.state import STATE, ProxyState
from ragtap.proxy.upstream import forward_target, request_headers, response_headers
from ragtap.proxy.upstream_http import UPSTREAM_BROKE, UpstreamResponse

_READ_WHOLE_LIMIT = 1 << 20  # bodies up to 1 MiB with a known length are read at once (one write, fewer syscalls)


async def relay_response(
    request: web.Request, upstream: UpstreamResponse, record: ExchangeRecord, *, decompressed: bool = False, prefix: bytes | None = None
) -> web.StreamResponse:
    """Return the upstream's response unchanged: status, headers, body bytes (compressed or not).

    `decompressed`: the response was requested with `decompress=True`, so its body arrives decoded and its
    Content-Encoding header no longer describes it.  `prefix`: the first bytes of the body, already read by the
    caller (a RAG reply too large to split; may be empty): sent first, then the rest as it arrives.
    """
    headers = response_headers(upstream.headers, body_rewritten=decompressed)
    record.status = upstream.status
    streaming = prefix is not None or upstream.content_length is None or upstream.content_length > _READ_WHOLE_LIMIT
    try:
        if not streaming:
            body = await upstream.read()
            record.upstream_done_at = record.finished_at = _now()
            return web.Response(status=upstream.status, body=body, headers=headers)
        out = web.StreamResponse(status=upstream.status, headers=headers)
        await out.prepare(request)
        try:
            if prefix:
                await out.write(prefix)
            async for chunk in upstream.iter_any():
                await out.write(chunk)
        except ConnectionResetError:  # the app went away: stop reading the upstream
            record.outcome = "incomplete"
            return out
        except UPSTREAM_BROKE:
            record.outcome = "upstream_error"
            if "text/event-stream" not in upstream.headers.get("Content-Type", "") and request.transport is not None:
                # A body that is not an event stream (JSON, a file) must not reach the app looking complete: its
                # connection breaks as ragtap's did, so the app sees the failure it would see without ragtap.
                request.transport.close()
                record.upstream_done_at = record.finished_at = _now()
                return out
            # An event stream ends cleanly: the app keeps the events it got, then the end (as injected streams do).
        record.upstream_done_at = _now()
        await out.write_eof()
        record.finished_at = _now()
        return out
    except UPSTREAM_BROKE as error:
        # Nothing was sent yet: the upstream broke off while we were reading a body of known length.
        raise UpstreamUnavailable.from_broken_body(error) from error
    finally:
        upstream.release()


async def forward_unchanged(request: web.Request, state: ProxyState, body: bytes, record: ExchangeRecord) -> web.StreamResponse:
    record.upstream_sent_at = _now()
    upstream = await state.upstream.send(
        request.method, forward_target(request.path, request.raw_path), request_headers(request.headers, identity_encoding=False), body, decompress=False
    )
    record.upstream_headers_at = _now()
    return await relay_response(request, upstream, record)


async def handle_passthrough(request: web.Request) -> web.StreamResponse:
    """Any route but chat completions: forwarded untouched and counted."""
    state = request.app[STATE]
    record = ExchangeRecord(route=request.path, method=request.method)
    try:
        response = await forward_unchanged(request, state, await request.read(), record)
    except (UpstreamUnavailable, BadPath) as failure:
        response = failure_response(record, failure)
    except asyncio.CancelledError:  # the app hung up (or the grace period ran out): the upstream request is dropped
        record.outcome, record.finished_at = "incomplete", _now()
        asyncio.get_running_loop().call_soon(state.exporter.passthrough_finished, record)
        raise
    record.finished_at = record.finished_at or _now()
    asyncio.get_running_loop().call_soon(state.exporter.passthrough_finished, record)  # off the latency path, as in chat.py
    return response
