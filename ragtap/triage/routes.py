"""The triage page's HTTP side: the page and its assets, the JSON API, human labels; mounted on an aiohttp app.

Usage::

    add_triage_routes(app, store, settings, token=settings.token or config.prometheus.token,
                      thresholds=config.thresholds, listen_host=host, redactor=redactor)

Routes (under `settings.path`, default /triage):

    GET  /triage/                               the page (static HTML; no data in it)
    GET  /triage/static/{triage.js,triage.css}  its assets, shipped in the package (no CDN, no build step)
    GET  /triage/api/meta                       verdicts, metrics, thresholds in force, polling interval
    GET  /triage/api/interactions?...           one page of the table (filters and paging: api.py)
    GET  /triage/api/interactions/{id}          the detail view of one interaction
    POST /triage/api/interactions/{id}/labels   a human label {"verdict_right", "right_verdict", "note"}

The data routes want `Authorization: Bearer <token>` when a token is set (`[triage] token`, else the /metrics
token); the page itself and its assets hold no data and are served without it (a browser cannot send a bearer
header when it opens a link), and the page asks for the token when the API answers 401 and keeps it in memory
only.  Without a token the API answers only requests addressed to a loopback name, the listener's own address or
`[triage] allowed_hosts` (access.py: a DNS-rebinding page cannot read it), and a label post must be JSON from the
page's own origin (a cross-site form cannot label).  User and session filters are hashed like the stored ids.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable
from importlib import resources
from typing import Any

from aiohttp import web

from ragtap.auth import BearerToken
from ragtap.privacy import NO_REDACTION, Redactor
from ragtap.store.base import VERDICTS, CaptureStore, InvalidLabel, StoreError, StoreQuery, UnknownInteraction
from ragtap.triage.access import host_is_trusted, trusted_hosts
from ragtap.triage.api import (
    MAX_LABEL_BODY_BYTES,
    BadRequest,
    QueryParams,
    detail_json,
    no_nul,
    parse_label,
    row_json,
    store_query,
)
from ragtap.triage.settings import TriageSettings
from ragtap.types import METRICS, Thresholds

log = logging.getLogger("ragtap.triage")

MAX_ID_CHARS = 256
_ASSETS = {"triage.js": "text/javascript", "triage.css": "text/css"}
# The page builds its DOM with textContent only; this policy is the second line: no inline script, no script or
# style from elsewhere, no framing, nothing fetched from another origin.
_CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
        "base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
_SECURITY_HEADERS = {
    "Content-Security-Policy": _CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",  # trace links and filters stay out of other sites' logs
    "X-Frame-Options": "DENY",
}

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _asset(name: str) -> bytes:
    return (resources.files("ragtap.triage") / "static" / name).read_bytes()


def _error(status: int, message: str, **headers: str) -> web.Response:
    return web.json_response({"error": message}, status=status, headers={**_SECURITY_HEADERS, "Cache-Control": "no-store", **headers})


def _json(data: Any) -> web.Response:
    return web.json_response(data, headers={**_SECURITY_HEADERS, "Cache-Control": "no-store"})


class TriageAPI:
    """The handlers, bound to one store and one set of settings."""

    def __init__(self, store: CaptureStore, settings: TriageSettings, *, token: str | None, thresholds: Thresholds,
                 listen_host: str, redactor: Redactor = NO_REDACTION) -> None:
        self.store = store
        self.settings = settings
        self.thresholds = thresholds
        self.redactor = redactor  # hashes the user / session a filter names, as the store hashed them
        self._bearer = BearerToken(token)
        self._trusted = trusted_hosts(listen_host, settings.allowed_hosts)
        self._page = _asset("index.html")
        self._assets = {name: (_asset(name), kind) for name, kind in _ASSETS.items()}

    # --- access --------------------------------------------------------------------------------------------------
    def _refused(self, request: web.Request) -> web.Response | None:
        if self._bearer.required:
            if not self._bearer.allows(request.headers.get("Authorization")):
                # no WWW-Authenticate challenge: the browser must not pop up its own login box; the page asks
                return _error(401, "unauthorized: send Authorization: Bearer <the [triage] token, else the [prometheus] token>")
            return None
        if not host_is_trusted(request.headers.get("Host", ""), self._trusted):
            return _error(403, "forbidden: without a token the triage API answers only loopback names, the listener's "
                               "address and [triage] allowed_hosts")
        return None

    def guarded(self, handler: Handler) -> Handler:
        async def check(request: web.Request) -> web.StreamResponse:
            refused = self._refused(request)
            return refused if refused is not None else await handler(request)

        return check

    # --- the page --------------------------------------------------------------------------------------------------
    async def page(self, request: web.Request) -> web.Response:
        return web.Response(body=self._page, content_type="text/html", charset="utf-8",
                            headers={**_SECURITY_HEADERS, "Cache-Control": "no-cache"})

    async def to_page(self, request: web.Request) -> web.Response:
        location = self.settings.prefix + "/" + (f"?{request.query_string}" if request.query_string else "")
        raise web.HTTPFound(location)

    async def asset(self, request: web.Request) -> web.Response:
        found = self._assets.get(request.match_info["name"])
        if found is None:
            return _error(404, "no such asset")
        body, kind = found
        return web.Response(body=body, content_type=kind, charset="utf-8", headers={**_SECURITY_HEADERS, "Cache-Control": "no-cache"})

    async def not_found(self, request: web.Request) -> web.Response:
        return _error(404, f"no triage route {request.method} {request.path[:200]}")

    # --- the API ---------------------------------------------------------------------------------------------------
    async def meta(self, request: web.Request) -> web.Response:
        settings = self.settings
        return _json({
            "verdicts": list(VERDICTS),
            "metrics": list(METRICS),
            "thresholds": {m: self.thresholds.of(m) for m in METRICS},
            "page_size": settings.page_size,
            "poll_seconds": settings.poll_seconds,
            "live_lookback_s": settings.live_lookback_s,
            "trace_links": bool(settings.trace_url),
        })

    async def interactions(self, request: web.Request) -> web.Response:
        try:
            query = self._identities_hashed(store_query(QueryParams(tuple(request.query.items())), self.settings.page_size))
        except BadRequest as error:
            return _error(400, str(error))
        try:
            page = await self.store.query(query)
        except StoreError as error:
            log.warning("triage: store query failed: %s", error)
            return _error(503, f"the capture store cannot answer: {error}")
        return _json({"items": [row_json(item) for item in page.items], "next_cursor": page.next_cursor})

    def _identities_hashed(self, query: StoreQuery) -> StoreQuery:
        """The user and session filters as the store holds them (hashed by default; a pasted hash stays itself).
        With identities not written at all, a filter keeps its value, which then matches nothing."""
        hashed = self.redactor.identity
        return dataclasses.replace(query, user=query.user and (hashed(query.user) or query.user),
                                   session=query.session and (hashed(query.session) or query.session))

    def _interaction_id(self, request: web.Request) -> str:
        interaction_id = request.match_info["id"]
        if not interaction_id or len(interaction_id) > MAX_ID_CHARS:
            raise BadRequest(f"interaction id: expected 1 to {MAX_ID_CHARS} characters")
        return no_nul(interaction_id, "interaction id")

    async def interaction(self, request: web.Request) -> web.Response:
        try:
            interaction_id = self._interaction_id(request)
        except BadRequest as error:
            return _error(400, str(error))
        try:
            item = await self.store.get(interaction_id)
        except StoreError as error:
            return _error(503, f"the capture store cannot answer: {error}")
        if item is None:
            return _error(404, f"no captured interaction {interaction_id[:80]!r}")
        return _json(detail_json(item, self.settings.trace_url))

    async def add_label(self, request: web.Request) -> web.Response:
        if request.content_type != "application/json":
            return _error(415, f"a label is posted as application/json (got {request.content_type or 'no content type'})")
        origin = request.headers.get("Origin")
        if origin is not None and origin.split("://", 1)[-1].lower() != request.headers.get("Host", "").lower():
            return _error(403, "forbidden: a label must be posted from the triage page's own origin")
        if request.content_length is not None and request.content_length > MAX_LABEL_BODY_BYTES:
            return _error(413, f"label body larger than {MAX_LABEL_BODY_BYTES} bytes")
        try:
            interaction_id = self._interaction_id(request)
            # request.read(): the proxy's body-timeout middleware may have read the body already (aiohttp keeps it)
            body = await request.read()
            if len(body) > MAX_LABEL_BODY_BYTES:
                return _error(413, f"label body larger than {MAX_LABEL_BODY_BYTES} bytes")
            label = parse_label(interaction_id, body)
        except BadRequest as error:
            return _error(400, str(error))
        try:
            current = await self.store.get(interaction_id)
            if current is None:
                return _error(404, f"no captured interaction {interaction_id[:80]!r}")
            label.check(current.verdict)
            stored = await self.store.add_label(label)
        except UnknownInteraction as error:
            return _error(404, str(error))
        except InvalidLabel as error:
            return _error(400, str(error))
        except StoreError as error:
            return _error(503, f"the capture store cannot store the label: {error}")
        return web.json_response(
            {"interaction_id": stored.interaction_id, "verdict_right": stored.verdict_right,
             "right_verdict": stored.right_verdict, "note": stored.note, "time": stored.time},
            status=201, headers={**_SECURITY_HEADERS, "Cache-Control": "no-store"},
        )


def add_triage_routes(app: web.Application, store: CaptureStore, settings: TriageSettings, *, token: str | None,
                      thresholds: Thresholds, listen_host: str, redactor: Redactor = NO_REDACTION) -> TriageAPI:
    """Mount the page and its API under `settings.path` (before the proxy's catch-all route)."""
    api = TriageAPI(store, settings, token=token, thresholds=thresholds, listen_host=listen_host, redactor=redactor)
    prefix = settings.prefix
    router = app.router
    router.add_get(prefix, api.to_page)
    router.add_get(prefix + "/", api.page)
    router.add_get(prefix + "/static/{name}", api.asset)
    router.add_get(prefix + "/api/meta", api.guarded(api.meta))
    router.add_get(prefix + "/api/interactions", api.guarded(api.interactions))
    router.add_get(prefix + "/api/interactions/{id}", api.guarded(api.interaction))
    router.add_post(prefix + "/api/interactions/{id}/labels", api.guarded(api.add_label))
    # anything else under the prefix is the page's, never forwarded to the upstream by the proxy's catch-all
    router.add_route("*", prefix + "/{tail:.*}", api.not_found)
    return api


