"""The aiohttp application: routes, and the lifecycle of the upstream client, scoring queue and exporters.

Usage::

    config = load_config(flags={"server": {"upstream": "http://127.0.0.1:9000/v1", "port": 0}})
    app = build_app(config)                      # or build_app(config, embedder=..., exporters=[...])
    runner = web.AppRunner(app); await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 8787); await site.start()

`RagtapServer` (ragtap/proxy/server.py) wraps these steps for the CLI, the demo and the tests.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from time import perf_counter
from typing import TYPE_CHECKING

from aiohttp import web

from ragtap.config import Config, WorkerRole
from ragtap.exporters.base import Exporter, ExporterSet
from ragtap.pipeline.guard_lane import GuardLane
from ragtap.pipeline.queue import ScoringQueue
from ragtap.pipeline.redis_handoff import RedisHandoff
from ragtap.proxy.chat import handle_chat
from ragtap.proxy.clients import BODY_TIMEOUT, ClientLimits, ConnectionWatchdog
from ragtap.proxy.errors import in_anthropic_shape, openai_error, ragtap_error_code
from ragtap.proxy.guarding import Guarding
from ragtap.proxy.messages import handle_messages
from ragtap.proxy.passthrough import handle_passthrough
from ragtap.proxy.requestlog import log_cancelled, log_rejected, log_response
from ragtap.proxy.responses import handle_responses
from ragtap.proxy.responses_store import INJECTED_RESPONSES, InjectedResponses, handle_retrieve
from ragtap.proxy.state import CAPTURE_STORE, STATE, ExchangeSteps, ProxyState
from ragtap.proxy.triage import mount_triage, triage_unavailable
from ragtap.proxy.upstream import Upstream, UpstreamTarget
from ragtap.wiring import (
    BuiltExporters,
    build_capture,
    build_embedder,
    build_exporters,
    build_online_judge,
    build_policy,
    build_redactor,
)

if TYPE_CHECKING:
    from ragtap.embedding.base import Embedder
    from ragtap.pipeline.online_judge import OnlineJudge
    from ragtap.exporters.prometheus import PrometheusExporter

log = logging.getLogger("ragtap.proxy")

PROMETHEUS: web.AppKey[PrometheusExporter | None] = web.AppKey("ragtap_prometheus")
WORKER: web.AppKey[WorkerRole] = web.AppKey("ragtap_worker", WorkerRole)
WATCHDOG: web.AppKey[ConnectionWatchdog] = web.AppKey("ragtap_client_watchdog", ConnectionWatchdog)


_MESSAGES_ROUTES = frozenset({"/v1/messages", "/messages"})


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def request_path(handler: Handler) -> Handler:
    """ragtap's request path around one route's handler (`_through_request_path` puts it around every route of the
    app).  Three things, in one coroutine:
    - the request log (`requestlog.py`): a line for what ragtap refused or failed, the detail at DEBUG;
    - aiohttp's own HTTP errors (413 body too large, ...) in the OpenAI error shape that SDKs parse, a ragtap bug as
      a 500 of that shape, and on the Messages API's routes ragtap's own errors in Anthropic's shape (checked only
      for an error ragtap answered);
    - the client watchdog (`clients.py`): told that a request is in progress (no idle/header deadline while it is
      answered), and the body read within `clients.body_timeout_s` (aiohttp keeps it: the handler's
      `request.read()` returns it at once).
    Around the handler rather than as an aiohttp middleware: an application with a middleware runs it and aiohttp's
    own `_fix_request_current_app` as two more coroutine layers per request, behind a cached build of the chain (an
    empty one cost ~18,000 instructions per request in the previous round's count); and aiohttp answers
    `Expect: 100-continue` before it calls the handler, as it did before the middlewares, so the body is read after
    the go-ahead."""

    async def on_request_path(request: web.Request) -> web.StreamResponse:
        started = perf_counter()
        try:
            try:
                watchdog = request.app[WATCHDOG]
                transport = request.transport
                watchdog.request_started(transport)
                try:
                    # A body already received whole (most requests: it came with the headers) needs no timer.
                    timed_out = None
                    if request.can_read_body and not request.content.is_eof():
                        timed_out = await _read_body_in_time(request, watchdog)
                    response = timed_out if timed_out is not None else await handler(request)
                finally:
                    watchdog.request_finished(transport)
            except web.HTTPRequestEntityTooLarge:
                # (the exception keeps the limit only in its text: read it from the settings)
                limit = request.app[STATE].config.server.max_body_bytes
                response = openai_error(413, f"ragtap: request body larger than {limit} bytes", type_="invalid_request_error",
                                        code="request_too_large")
            except web.HTTPException:
                raise
            except Exception:
                # A ragtap bug: the app gets an error its SDK parses (and retries), not aiohttp's text/plain page.
                log.exception("unexpected error handling %s %s", request.method, request.path)
                if request.writer.output_size > 0:
                    raise  # part of a response is out already: aiohttp closes the connection
                response = openai_error(500, "ragtap: internal error (see ragtap's log)", type_="server_error",
                                        code="ragtap_internal_error")
            code = ragtap_error_code(response)
            if code is not None and request.path in _MESSAGES_ROUTES and isinstance(response, web.Response):
                response = in_anthropic_shape(response)
        except web.HTTPException as error:  # aiohttp's own (a 405 on /healthz, ...)
            log_rejected(request, error)
            raise
        except asyncio.CancelledError:
            log_cancelled(request)
            raise
        log_response(request, response, started, code)
        return response

    return on_request_path


def _through_request_path(app: web.Application) -> None:
    """Every route of `app` (the proxy's, /healthz, /metrics and the triage page when mounted here) answered
    through `request_path`.  Done once the routes are all added: the router is frozen with the app."""
    for route in app.router.routes():
        route._handler = request_path(route.handler)  # type: ignore[attr-defined]  (aiohttp keeps it there: no setter)


async def _read_body_in_time(request: web.Request, watchdog: ConnectionWatchdog) -> web.Response | None:
    """Read the rest of the body within `clients.body_timeout_s`: None when it came, else the 408 to answer (and
    the connection is closed after it)."""
    limit = watchdog.limits.body_timeout_s
    started = time.monotonic()
    try:
        async with asyncio.timeout(limit):
            await request.read()
    except TimeoutError:
        watchdog.rejected(BODY_TIMEOUT, request.remote or "?", time.monotonic() - started)
        response = openai_error(408, f"ragtap: the request body did not arrive within {limit:g} s", type_="invalid_request_error",
                                code="request_timeout")
        response.force_close()
        return response
    return None


async def shutdown_exporters(exporters: ExporterSet, budget: float) -> None:
    """Flush and close the exporters.  OpenTelemetry's flush is network I/O that retries up to `export_timeout`
    against a dead collector, so it runs in a daemon thread and is waited for at most `budget` seconds (what is
    left of the grace period); the other exporters (the JSONL log among them) are closed first, here."""
    network = [e for e in exporters.exporters if e.flushes_over_network]
    local = ExporterSet([e for e in exporters.exporters if not e.flushes_over_network])
    local.shutdown()
    exporters.errors += local.errors
    if not network:
        return
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()

    def flush() -> None:
        ExporterSet(network).shutdown()
        try:
            loop.call_soon_threadsafe(lambda: done.done() or done.set_result(None))
        except RuntimeError:  # the loop is closed: nobody waits any more
            pass

    threading.Thread(target=flush, name="ragtap-otel-flush", daemon=True).start()
    try:
        await asyncio.wait_for(asyncio.shield(done), budget)
    except TimeoutError:
        log.warning("OpenTelemetry flush still running after %.1f s (collector down?): not waiting for it", budget)


async def _health(request: web.Request) -> web.Response:
    state = request.app[STATE]
    depth = state.scoring.depth if state.scoring else 0
    body: dict[str, object] = {"status": "ok", "scoring_queue": depth}
    if isinstance(state.scoring, RedisHandoff):  # "fallback": Redis is down, this proxy scores locally meanwhile
        body["handoff"] = "redis" if state.scoring.redis_up else "fallback"
    worker = request.app[WORKER]
    if worker.count > 1:  # which of `ragtap serve --workers N`'s processes answered
        body["worker"] = worker.index
        body["pid"] = os.getpid()
    return web.json_response(body)


def _worker_header(index: int, always: bool):  # type: ignore[no-untyped-def]
    """With several workers, a response to a request that asked for ragtap's debug headers (`x-ragtap-debug: 1`,
    or `[server] debug_headers`) says which worker answered it: `x-ragtap-worker: <index>`, streams included."""
    value = str(index)

    async def name_the_worker(request: web.Request, response: web.StreamResponse) -> None:
        if always or request.headers.get("x-ragtap-debug") == "1":
            response.headers["x-ragtap-worker"] = value

    return name_the_worker


def build_app(
    config: Config,
    *,
    embedder: Embedder | None = None,
    exporters: Sequence[Exporter] | None = None,
    steps: ExchangeSteps | None = None,
    worker: WorkerRole | None = None,
) -> web.Application:
    """The proxy app.  `embedder`/`exporters` replace the configured ones (the demo and tests pass their own);
    `steps` plug into the exchange path's seams (`proxy/exchange_path/seams.py`); `worker`: which of
    `ragtap serve --workers N`'s processes builds it."""
    worker = worker or WorkerRole()
    built = (build_exporters(config, worker) if exporters is None
             else BuiltExporters(list(exporters), redactor=build_redactor(config), worker=worker))
    if exporters is not None:  # the capture store is a part of ragtap, not an exporter a caller replaces
        built.exporters.extend(build_capture(config, built))
    prometheus = built.prometheus
    exporter = ExporterSet(built.exporters)
    if prometheus is not None:
        prometheus.watch_errors("hooks", lambda: float(exporter.errors))
    scoring: ScoringQueue | RedisHandoff | None = None
    online_judge = None
    guard_lane: GuardLane | None = None
    if config.scoring.enabled:
        local = ScoringQueue(
            embedder if embedder is not None else build_embedder(config),
            build_policy(config),
            exporter,
            maxsize=config.scoring.queue_size,
            batch_max=config.scoring.batch_max,
        )
        scoring = local
        if config.scoring.queue != "memory":  # workers score; the local queue is the fallback while Redis is down
            registry = prometheus.registry if prometheus is not None else None
            scoring = RedisHandoff(config.scoring.queue, config.redis_queue, local, exporter, registry=registry)
        online_judge = build_online_judge(config, local.embedder, exporter, built)
        if online_judge is not None:
            exporter.add(online_judge)
        # The guard (docs/guard.md): always plugged in, since a request may ask for it even when `[guard] action` is
        # off; its checks run in their own lane on the same embedder.
        guard_lane = GuardLane(local.embedder, local.policy, max_in_flight=config.guard.max_in_flight)
        guarding = Guarding(config.guard, guard_lane).steps()
        steps = guarding if steps is None else ExchangeSteps((*steps.whole_reply, *guarding.whole_reply),
                                                             (*steps.stream_gates, *guarding.stream_gates))
    server = config.server
    upstream = Upstream(
        UpstreamTarget.parse(server.upstream),
        connect_timeout=server.connect_timeout_s,
        read_timeout=server.read_timeout_s,
        max_connections=server.max_connections,
        keepalive=server.upstream_keepalive_s,
    )
    app = web.Application(client_max_size=server.max_body_bytes)
    app[STATE] = ProxyState(config, upstream, exporter, scoring, config.recognise.patterns, steps=steps or ExchangeSteps())
    clients = config.clients
    watchdog = ConnectionWatchdog(
        ClientLimits(clients.header_timeout_s, clients.body_timeout_s, clients.idle_timeout_s, clients.max_connections),
        on_reject=exporter.client_rejected,
    )
    app[WATCHDOG] = watchdog

    if prometheus is not None and config.prometheus.listen_port is None:
        from ragtap.exporters.prometheus import add_metrics_route

        add_metrics_route(app, prometheus)
    if config.triage.listen_port is None and triage_unavailable(config, built.store) is None:
        mount_triage(app, config, built.store, built.redactor)  # before the catch-all: its paths are never forwarded upstream
    app.router.add_get("/healthz", _health)
    app.router.add_post("/v1/chat/completions", handle_chat)
    app.router.add_post("/chat/completions", handle_chat)  # clients whose base URL lacks /v1
    app.router.add_post("/v1/responses", handle_responses)  # the Responses API
    app.router.add_post("/responses", handle_responses)
    app.router.add_post("/v1/messages", handle_messages)  # the Anthropic Messages API (anthropic SDK, ChatAnthropic)
    app.router.add_post("/messages", handle_messages)
    app[INJECTED_RESPONSES] = InjectedResponses()
    app.router.add_get("/v1/responses/{response_id}", handle_retrieve)  # split if ragtap injected it, else passthrough
    app.router.add_get("/responses/{response_id}", handle_retrieve)
    app.router.add_route("*", "/{tail:.*}", handle_passthrough)
    _through_request_path(app)

    _add_lifecycle(app, server.shutdown_grace_s, upstream, scoring, online_judge, exporter, watchdog, guard_lane)
    app[WORKER] = worker
    if worker.count > 1:
        app.on_response_prepare.append(_worker_header(worker.index, server.debug_headers))
    app[PROMETHEUS] = prometheus
    app[CAPTURE_STORE] = built.store
    return app


def _add_lifecycle(
    app: web.Application, grace_s: float, upstream: Upstream, scoring: ScoringQueue | RedisHandoff | None, online_judge: OnlineJudge | None, exporter: ExporterSet,
    watchdog: ConnectionWatchdog, guard_lane: GuardLane | None = None,
) -> None:
    """Start the upstream client and the scoring worker with the app; stop them in order at shutdown.

    One grace period for the whole shutdown: it starts when the listener closes (on_shutdown runs before aiohttp
    waits for in-flight requests); the scoring drain and the exporters' flush get what is left of it."""
    shutdown_began: list[float] = []

    async def note_shutdown(app: web.Application) -> None:
        shutdown_began.append(time.monotonic())

    def grace_left() -> float:
        began = shutdown_began[0] if shutdown_began else time.monotonic()
        return max(0.0, grace_s - (time.monotonic() - began))

    async def lifecycle(app: web.Application):  # type: ignore[no-untyped-def]
        await upstream.start()
        if scoring is not None:
            scoring.start()
        watchdog.start()
        yield
        await watchdog.stop()
        if scoring is not None:
            await scoring.stop(drain_timeout=grace_left())
        if online_judge is not None:
            await online_judge.aclose(drain_timeout=grace_left())
        await upstream.close()
        if guard_lane is not None:
            guard_lane.close()
        await shutdown_exporters(exporter, max(grace_left(), 0.5))

    app.on_shutdown.append(note_shutdown)
    app.cleanup_ctx.append(lifecycle)
