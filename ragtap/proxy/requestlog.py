"""What ragtap says about each request in its log (logger `ragtap.requests`).

- INFO: one line per request ragtap refused or failed itself, with its reason code -- the `code` of the OpenAI-style
  error it answered (`request_too_large`, `bad_path`, `request_timeout`, `upstream_timeout`, `upstream_unreachable`,
  `ragtap_internal_error`, ...), and a stream the upstream broke off (`upstream_broke_off`).  The upstream's own
  errors (its 400s, 429s) are the app's business and are not logged as ragtap's.
- DEBUG: one line per request with its detail (method, path, status, duration; for chat: model, recognition,
  injection, outcome, upstream time).

Never logged: query strings (an Azure `api-key` may be one), headers, bodies.
"""

from __future__ import annotations

import logging
from time import perf_counter

from aiohttp import web

from ragtap.exchange import ExchangeRecord

log = logging.getLogger("ragtap.requests")


def log_rejected(request: web.Request, error: web.HTTPException) -> None:
    """aiohttp's own HTTP errors (a 405 on /healthz, ...)."""
    log.info("request rejected: status=%d reason=http_%d method=%s path=%s", error.status, error.status, request.method, request.path)


def log_cancelled(request: web.Request) -> None:
    log.debug("request cancelled (the client went away): method=%s path=%s", request.method, request.path)


def log_response(request: web.Request, response: web.StreamResponse, started: float, code: str | None) -> None:
    """One INFO line for a request ragtap refused or failed itself (`code`: its error code, `errors.ragtap_error_code`),
    the DEBUG detail for every one; `started`: `perf_counter()` when the request reached ragtap's request path
    (`proxy/app.py`)."""
    if code is not None:
        verdict = "failed" if response.status >= 500 else "rejected"
        log.info("request %s: status=%d reason=%s method=%s path=%s", verdict, response.status, code, request.method, request.path)
    if log.isEnabledFor(logging.DEBUG):
        log.debug("request: method=%s path=%s status=%d ms=%.1f", request.method, request.path, response.status, (perf_counter() - started) * 1000)


def log_exchange(record: ExchangeRecord) -> None:
    """After a chat exchange: an upstream that broke off a reply already under way (INFO), and the detail (DEBUG)."""
    if record.outcome == "upstream_error" and record.status is not None and record.status < 400:
        log.info("request failed: status=%d reason=upstream_broke_off error=%s route=%s", record.status, record.error_type, record.route)
    if log.isEnabledFor(logging.DEBUG):
        upstream = record.upstream_seconds
        log.debug(
            "exchange: route=%s model=%s stream=%s recognition=%s rag_source=%s injected=%s status=%s outcome=%s upstream_ms=%s",
            record.route, record.request_model, record.stream, record.recognition, record.rag_source, record.injected, record.status,
            record.outcome, "-" if upstream is None else f"{upstream * 1000:.1f}",
        )
