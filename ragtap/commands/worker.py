"""`ragtap worker`: score the interactions that `ragtap serve` proxies hand to a Redis stream.

Same config as `serve` (`[scoring]`, `[thresholds]`, `[claims]`, exporters); `[scoring] queue` (or
RAGTAP_SCORING_QUEUE, or `--queue`) names the Redis URL.  Run one or many, on any machine that reaches Redis:
they share the work through a consumer group (pipeline/stream_worker.py).  `--metrics-port` serves this worker's
own /metrics (verdicts, scores, the worker's entry counts), for Prometheus to scrape beside the proxies'.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import socket
import sys

from ragtap.commands.common import CommandError, load_plugins
from ragtap.config import Config, ConfigError, load_config


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("worker", help="score interactions handed off through Redis by `ragtap serve`")
    p.add_argument("--config", help="config.toml (default: none, built-in defaults)")
    p.add_argument("--upstream", help="the upstream's OpenAI base URL (the `openai` embedder and the judge use it)")
    p.add_argument("--queue", help='the Redis URL, e.g. redis://127.0.0.1:6379/0 (default: [scoring] queue)')
    p.add_argument("--consumer", help="this worker's name in the consumer group (default: HOST-PID)")
    p.add_argument("--metrics-host", default="127.0.0.1", help="listen address of /metrics (default 127.0.0.1)")
    p.add_argument("--metrics-port", type=int, help="serve this worker's /metrics on this port (0: any free port)")
    p.set_defaults(func=run)


async def _metrics_site(config: Config, prometheus, host: str, port: int):  # type: ignore[no-untyped-def]
    from aiohttp import web

    from ragtap.exporters.prometheus import add_metrics_route

    app = web.Application()
    add_metrics_route(app, prometheus)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    try:
        await site.start()
    except OSError as error:
        await runner.cleanup()
        raise CommandError(f"cannot serve /metrics on {host}:{port}: {error.strerror or error}") from None
    bound = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, int(bound)


async def _work(config: Config, args: argparse.Namespace) -> None:
    from ragtap.exporters.base import ExporterSet
    from ragtap.pipeline.stream_worker import StreamWorker
    from ragtap.proxy.app import shutdown_exporters
    from ragtap.wiring import build_embedder, build_exporters, build_online_judge, build_policy

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    built = build_exporters(config)
    exporter = ExporterSet(built.exporters)
    if built.prometheus is not None:
        built.prometheus.watch_errors("hooks", lambda: float(exporter.errors))
    embedder = build_embedder(config)
    online_judge = build_online_judge(config, embedder, exporter, built)
    if online_judge is not None:
        exporter.add(online_judge)
    registry = built.prometheus.registry if built.prometheus is not None else None
    consumer = args.consumer or f"{socket.gethostname()}-{os.getpid()}"
    worker = StreamWorker(config.scoring.queue, config.redis_queue, embedder, build_policy(config), exporter, consumer=consumer,
                          batch_max=config.scoring.batch_max, registry=registry)
    runner = None
    if args.metrics_port is not None and built.prometheus is not None:
        runner, port = await _metrics_site(config, built.prometheus, args.metrics_host, args.metrics_port)
        print(f"ragtap worker {consumer}: metrics on http://{args.metrics_host}:{port}{config.prometheus.path}", file=sys.stderr, flush=True)
    print(f"ragtap worker {consumer} reading {config.redis_queue.stream}", file=sys.stderr, flush=True)
    try:
        await worker.run(stop)
    finally:
        grace = config.server.shutdown_grace_s
        if online_judge is not None:
            await online_judge.aclose(drain_timeout=grace)
        await shutdown_exporters(exporter, max(grace, 0.5))
        if runner is not None:
            await runner.cleanup()


def run(args: argparse.Namespace) -> int:
    load_plugins()
    try:
        config = load_config(args.config, flags={"server": {"upstream": args.upstream}, "scoring": {"queue": args.queue}})
    except ConfigError as error:
        print(f"ragtap: config error: {error}", file=sys.stderr)
        return 2
    if config.scoring.queue == "memory":
        raise CommandError('no Redis to read from: set [scoring] queue = "redis://host:port/db", RAGTAP_SCORING_QUEUE or --queue')
    logging.basicConfig(level=config.log.level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    runner = asyncio.run
    try:
        import uvloop

        runner = uvloop.run  # type: ignore[assignment]
    except ImportError:
        pass
    runner(_work(config, args))
    return 0
