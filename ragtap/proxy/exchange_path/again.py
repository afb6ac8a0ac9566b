"""Seam (c)'s transport: the exchange's request sent to the upstream once more (the guard's retry).

The body is the route's (its injected request plus one more instruction, not streamed); this sends it with the
app's own headers, reads the reply whole (bounded like a first reply), and returns the decoded object.  The
exchange record keeps the first request's timings and status; the second request's tokens are ragtap's own
(`record.retry_input_tokens` / `retry_output_tokens`, counted in the overhead).  Every failure -- the upstream
unreachable, an error status, a body cut off, too large or not JSON -- is None: the caller falls back.
"""

from __future__ import annotations

import logging
from typing import Any

from ragtap.exchange import ExchangeRecord, note_usage
from ragtap.proxy.errors import UpstreamUnavailable
from ragtap.proxy.exchange_path.read import Exchange, dumps, parse_object
from ragtap.proxy.upstream import forward_target, request_headers
from ragtap.proxy.upstream_http import UPSTREAM_BROKE

log = logging.getLogger("ragtap.proxy")


async def send_again(exchange: Exchange, body: dict[str, Any]) -> dict[str, Any] | None:
    request, state = exchange.request, exchange.state
    data = dumps(body)
    if data is None:
        return None
    try:
        upstream = await state.upstream.send(
            "POST", forward_target(request.path, request.raw_path), request_headers(request.headers, identity_encoding=True), data, decompress=True
        )
    except UpstreamUnavailable as failure:
        log.info("guard retry: the upstream could not be reached (%s)", failure.error_type)
        return None
    limit = state.config.replies.max_body_bytes
    parts: list[bytes] = []
    size = 0
    try:
        if upstream.status != 200:
            log.info("guard retry: the upstream answered %d", upstream.status)
            return None
        async for chunk in upstream.iter_any():
            size += len(chunk)
            if size > limit:
                return None
            parts.append(chunk)
    except UPSTREAM_BROKE as error:
        log.info("guard retry: the reply broke off (%s)", type(error).__name__)
        return None
    finally:
        upstream.release()
    reply = parse_object(b"".join(parts))
    if reply is not None:
        usage = ExchangeRecord(route=exchange.record.route)
        note_usage(usage, reply.get("usage"))
        exchange.record.retry_input_tokens = usage.input_tokens
        exchange.record.retry_output_tokens = usage.output_tokens
    return reply
