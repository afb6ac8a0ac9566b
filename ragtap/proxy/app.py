"""The aiohttp application: routes, and the lifecycle of the upstream client, scoring queue and exporters.

Usage::

    config = load_config(flags={"server": {"upstream": "http://127.0.0.1:9000/v1", "port": 0}})
    app = build_app(config)                      # or build_app(config, embedder=..., exporters=[...])
    runner = web.AppRunner(app); await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 8787); await site.start()

`RagtapServer` (ragtap/proxy/server.py) wraps these steps for the CLI, the demo and the tests.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from aiohttp import web

from ragtap.config import Config
from ragtap.exporters.base import Exporter, ExporterSet
from ragtap.pipeline.batch import ScoringPolicy
from ragtap.pipeline.queue import ScoringQueue
from ragtap.proxy.chat import handle_chat
from ragtap.proxy.errors import openai_error
from ragtap.proxy.passthrough import handle_passthrough
from ragtap.proxy.state import STATE, ProxyState
from ragtap.proxy.upstream import Upstream, UpstreamTarget
from ragtap.scoring.refusal import RefusalDetector

if TYPE_CHECKING:
    from ragtap.embedding.base import Embedder
    from ragtap.exporters.prometheus import PrometheusExporter

log = logging.getLogger("ragtap.proxy")

PROMETHEUS: web.AppKey[PrometheusExporter | None] = web.AppKey("ragtap_prometheus")


def build_embedder(config: Config) -> Embedder:
    from ragtap.embedding.factory import make_embedder

    scoring = config.scoring
    if scoring.embedder == "openai":
        import os

        return make_embedder(
            "openai",
            cache_size=scoring.cache_entries,
            base_url=scoring.openai_base_url or config.server.upstream,
            api_key=os.environ.get(scoring.openai_api_key_env, ""),
            model=scoring.openai_model,
        )
    return make_embedder(scoring.embedder, cache_size=scoring.cache_entries, intra_op_threads=scoring.embedder_threads)


def build_exporters(config: Config) -> tuple[list[Exporter], PrometheusExporter | None]:
    exporters: list[Exporter] = []
    prometheus = None
    if config.prometheus.enabled:
        from ragtap.exporters.prometheus import PrometheusExporter

        prometheus = PrometheusExporter(config.prometheus)
        exporters.append(prometheus)
    if config.otel.enabled:
        from ragtap.exporters.otel import OtelExporter

        otel = OtelExporter(config.otel)
        exporters.append(otel)
        if prometheus is not None:
            prometheus.watch_errors("otel", lambda: float(otel.stats.failures))
    if config.log.interactions_path:
        from ragtap.exporters.jsonl import JsonlExporter

        exporters.append(JsonlExporter(config.log.interactions_path))
    return exporters, prometheus




@web.middleware
async def openai_errors(request: web.Request, handler):  # type: ignore[no-untyped-def]
    """aiohttp's own HTTP errors (413 body too large, ...) in the OpenAI error shape that SDKs parse."""
    try:
        return await handler(request)
    except web.HTTPRequestEntityTooLarge:
        # (the exception keeps the limit only in its text: read it from the settings)
        limit = request.app[STATE].config.server.max_body_bytes
        return openai_error(413, f"ragtap: request body larger than {limit} bytes", type_="invalid_request_error", code="request_too_large")


async def _health(request: web.Request) -> web.Response:
    state = request.app[STATE]
    depth = state.scoring.depth if state.scoring else 0
    return web.json_response({"status": "ok", "scoring_queue": depth})


def build_app(
    config: Config,
    *,
    embedder: Embedder | None = None,
    exporters: Sequence[Exporter] | None = None,
) -> web.Application:
    """The proxy app.  `embedder`/`exporters` replace the configured ones (the demo and tests pass their own)."""
    built, prometheus = build_exporters(config) if exporters is None else (list(exporters), None)
    exporter = ExporterSet(built)
    if prometheus is not None:
        prometheus.watch_errors("hooks", lambda: float(exporter.errors))
    scoring = None
    if config.scoring.enabled:
        policy = ScoringPolicy(config.thresholds, RefusalDetector.build(config.scoring.refusal_patterns))
        scoring = ScoringQueue(
            embedder if embedder is not None else build_embedder(config),
            policy,
            exporter,
            maxsize=config.scoring.queue_size,
            batch_max=config.scoring.batch_max,
        )
    server = config.server
    upstream = Upstream(
        UpstreamTarget.parse(server.upstream),
        connect_timeout=server.connect_timeout_s,
        read_timeout=server.read_timeout_s,
        max_connections=server.max_connections,
    )
    app = web.Application(client_max_size=server.max_body_bytes, middlewares=[openai_errors])
    app[STATE] = ProxyState(config, upstream, exporter, scoring, config.recognise.patterns)

    if prometheus is not None and config.prometheus.listen_port is None:
        from ragtap.exporters.prometheus import add_metrics_route

        add_metrics_route(app, prometheus)
    app.router.add_get("/healthz", _health)
    app.router.add_post("/v1/chat/completions", handle_chat)
    app.router.add_post("/chat/completions", handle_chat)  # clients whose base URL lacks /v1
    app.router.add_route("*", "/{tail:.*}", handle_passthrough)

    async def lifecycle(app: web.Application):  # type: ignore[no-untyped-def]
        await upstream.start()
        if scoring is not None:
            scoring.start()
        yield
        if scoring is not None:
            await scoring.stop(drain_timeout=server.shutdown_grace_s)
        await upstream.close()
        exporter.shutdown()

    app.cleanup_ctx.append(lifecycle)
    app[PROMETHEUS] = prometheus
    return app
