"""`ragtap serve`: run the proxy until SIGINT/SIGTERM, then shut down gracefully."""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import signal
import sys

from ragtap.commands.common import CommandError, load_plugins
from ragtap.config import ConfigError, load_config


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("serve", help="run the OpenAI-compatible proxy")
    p.add_argument("--config", help="config.toml (default: none, built-in defaults)")
    p.add_argument("--upstream", help="the upstream's OpenAI base URL, e.g. https://api.openai.com/v1")
    p.add_argument("--host", help="listen address (default 127.0.0.1)")
    p.add_argument("--port", type=int, help="listen port (default 8787)")
    p.set_defaults(func=run)


async def _serve(config) -> None:  # type: ignore[no-untyped-def]
    from ragtap.proxy.server import RagtapServer

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    server = RagtapServer(config)
    try:
        await server.start()
    except OSError as error:  # the port is taken, the host is not this machine's, ...
        await server.stop()
        raise CommandError(f"cannot listen on {config.server.host}:{config.server.port}: {error.strerror or error}") from None
    # Everything allocated so far (the model, the app) lives as long as the process: freeze it out of the
    # collector's view, so a full collection does not stall the event loop for tens of milliseconds.
    gc.collect()
    gc.freeze()
    print(f"ragtap listening on {server.base_url} -> {_redacted(config.server.upstream)}", file=sys.stderr, flush=True)
    await stop.wait()
    print("ragtap: shutting down (finishing in-flight requests, draining scoring)", file=sys.stderr, flush=True)
    await server.stop()


def _redacted(url: str) -> str:
    """The URL without credentials (`https://user:key@host/v1` -> `https://***@host/v1`), for the log."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    return urlunsplit(parts._replace(netloc="***@" + parts.netloc.rpartition("@")[2]))


def run(args: argparse.Namespace) -> int:
    load_plugins()
    try:
        config = load_config(args.config, flags={"server": {"upstream": args.upstream, "host": args.host, "port": args.port}})
    except ConfigError as error:
        print(f"ragtap: config error: {error}", file=sys.stderr)
        return 2
    logging.basicConfig(level=config.log.level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    runner = asyncio.run
    try:
        import uvloop

        runner = uvloop.run  # type: ignore[assignment]
    except ImportError:
        pass
    runner(_serve(config))
    return 0
