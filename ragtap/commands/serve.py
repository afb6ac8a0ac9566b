"""`ragtap serve`: run the proxy until SIGINT/SIGTERM, then shut down gracefully."""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import signal
import sys

from ragtap.commands.common import CommandError, load_plugins
from ragtap.config import Config, ConfigError, load_config


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("serve", help="run the OpenAI-compatible proxy")
    p.add_argument("--config", help="config.toml (default: none, built-in defaults)")
    p.add_argument("--upstream", help="the upstream's OpenAI base URL, e.g. https://api.openai.com/v1")
    p.add_argument("--host", help="listen address (default 127.0.0.1)")
    p.add_argument("--port", type=int, help="listen port (default 8787)")
    p.set_defaults(func=run)


async def _serve(config) -> None:  # type: ignore[no-untyped-def]
    from ragtap.proxy.server import ListenError, RagtapServer

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    server = RagtapServer(config)
    try:
        await server.start()
    except ListenError as error:  # the port is taken, the host is not this machine's, ... (names the listener)
        await server.stop()
        raise CommandError(f"cannot listen on {error.address}: {error.strerror or error}") from None
    except OSError as error:
        await server.stop()
        raise CommandError(f"cannot start: {error.strerror or error}") from None
    # Everything allocated so far (the model, the app) lives as long as the process: freeze it out of the
    # collector's view, so a full collection does not stall the event loop for tens of milliseconds.
    gc.collect()
    gc.freeze()
    # The event loop shares the GIL with the scoring thread and the thread that parses very large bodies; with
    # Python's default switch interval (5 ms) either can keep the loop waiting 5 ms at a time.  At 1 ms the hostile
    # soak's normal-request p99 went from 4.1x to 1.9x its calm p99, with no measurable throughput cost
    # (bench/hostile_soak.py, bench/run.py --quick, same session; docs/reliability.md).
    sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)
    triage = server.triage_url or f"{server.triage_unavailable}"
    print(f"ragtap listening on {server.base_url} -> {_redacted(config.server.upstream)}; triage page: {triage}", file=sys.stderr, flush=True)
    print(capture_line(config), file=sys.stderr, flush=True)
    log.info("%s", startup_summary(config, server.base_url))
    await _warn_if_unresolvable(config)
    await stop.wait()
    print("ragtap: shutting down (finishing in-flight requests, draining scoring)", file=sys.stderr, flush=True)
    await server.stop()


log = logging.getLogger("ragtap.serve")
GIL_SWITCH_INTERVAL_S = 0.001
_KEPT = {"flagged": "every verdict but grounded, and poor retrieval", "all": "every scored interaction"}


def capture_line(config: Config) -> str:
    """What the capture store keeps, where, for how long, and how to turn it off: one start-up line."""
    store, privacy = config.store, config.privacy
    if not store.enabled:
        why = 'capture = "none"' if store.capture == "none" else 'path = ""'
        return f"capture store: off ([store] {why})"
    where = store.path or _redacted(store.url or "")
    identity = {"hashed": "user/session ids hashed", "clear": "user/session ids in clear", "none": "no user/session ids"}[privacy.identity]
    redacted = f"{len(privacy.redact)} redaction patterns" if privacy.redact else "no redaction patterns"
    return (f"capture store: {store.backend} {where} (capture {store.capture}: {_KEPT[store.capture]}; {redacted}, {identity}; "
            f"kept {store.max_age_days:g} days, at most {store.max_rows} rows; [store] capture = \"none\" turns it off)")


def startup_summary(config, base_url: str) -> str:  # type: ignore[no-untyped-def]
    """One line with what this process does: where it listens and forwards, what it scores and exports, its limits."""
    c = config
    exporters = [name for name, on in (("prometheus", c.prometheus.enabled), ("otel", c.otel.enabled),
                                       ("jsonl", bool(c.log.interactions_path)), ("judge", c.judge.enabled)) if on]
    return (
        f"ragtap started: listening={base_url} upstream={_redacted(c.server.upstream)} inject={c.inject.enabled} "
        f"scoring={'on embedder=' + c.scoring.embedder if c.scoring.enabled else 'off'} exporters={','.join(exporters) or 'none'} "
        f"clients=header {c.clients.header_timeout_s:g}s/body {c.clients.body_timeout_s:g}s/idle {c.clients.idle_timeout_s:g}s/"
        f"max {c.clients.max_connections} replies=body {c.replies.max_body_bytes} B/kept {c.replies.max_kept_chars} chars "
        f"max_body_bytes={c.server.max_body_bytes} log={c.log.level.upper()}/{c.log.format}"
    )


async def _warn_if_unresolvable(config) -> None:  # type: ignore[no-untyped-def]
    """An upstream host that does not resolve at start is one WARNING line, not an exit: DNS may not be ready yet
    (a compose or Kubernetes service starting alongside ragtap), and the requests meanwhile get a clean 502."""
    from urllib.parse import urlsplit

    parts = urlsplit(config.server.upstream)
    host = parts.hostname or ""
    try:
        async with asyncio.timeout(config.server.connect_timeout_s):
            await asyncio.get_running_loop().getaddrinfo(host, parts.port or (443 if parts.scheme == "https" else 80))
    except (OSError, TimeoutError) as error:
        why = "timed out" if isinstance(error, TimeoutError) else (getattr(error, "strerror", None) or str(error))
        log.warning("the upstream host %s does not resolve (%s): requests get 502 upstream_unreachable until it does", host, why)


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
    from ragtap.commands.logs import configure_logging

    configure_logging(config.log.level, config.log.format)
    runner = asyncio.run
    try:
        import uvloop

        runner = uvloop.run  # type: ignore[assignment]
    except ImportError:
        pass
    runner(_serve(config))
    return 0
