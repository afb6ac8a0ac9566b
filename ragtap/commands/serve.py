"""`ragtap serve`: run the proxy until SIGINT/SIGTERM, then shut down gracefully."""

from __future__ import annotations

import argparse
import asyncio
import functools
import logging
import sys

from ragtap.commands.common import CommandError, load_plugins
from ragtap.config import Config, ConfigError, load_config


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("serve", help="run the OpenAI-compatible proxy")
    p.add_argument("--config", help="config.toml (default: none, built-in defaults)")
    p.add_argument("--upstream", help="the upstream's OpenAI base URL, e.g. https://api.openai.com/v1")
    p.add_argument("--host", help="listen address (default 127.0.0.1)")
    p.add_argument("--port", type=int, help="listen port (default 8787)")
    p.add_argument("--workers", help='processes serving the port (default 1; "auto": one per core); docs/scaling.md')
    p.set_defaults(func=run)


def _banner(config, base_url: str, triage: str, workers: str = "") -> None:  # type: ignore[no-untyped-def]
    """The start-up lines (once, however many workers): where ragtap listens and forwards, the triage page, the store."""
    print(f"ragtap listening on {base_url} -> {_redacted(config.server.upstream)}; triage page: {triage}{workers}", file=sys.stderr, flush=True)
    print(capture_line(config), file=sys.stderr, flush=True)
    log.info("%s", startup_summary(config, base_url))


def _shutting_down() -> None:
    print("ragtap: shutting down (finishing in-flight requests, draining scoring)", file=sys.stderr, flush=True)


async def _serve(config) -> None:  # type: ignore[no-untyped-def]
    """One process serving (the default, `[server] workers = 1`)."""
    from ragtap.supervisor.process import CannotServe, serve

    async def started(server) -> None:  # type: ignore[no-untyped-def]
        _banner(config, server.base_url, server.triage_url or f"{server.triage_unavailable}")
        await _warn_if_unresolvable(config)

    try:
        await serve(config, started=started, stopping=_shutting_down)
    except CannotServe as error:  # the port is taken, the host is not this machine's, ... (names the listener)
        raise CommandError(str(error)) from None


def _supervise(config, count: int) -> int:  # type: ignore[no-untyped-def]
    """`count` worker processes on one port (ragtap/supervisor/)."""
    from ragtap.supervisor.process import CannotServe
    from ragtap.supervisor.supervisor import StartFailed, supervise

    def announce(first, opened) -> None:  # type: ignore[no-untyped-def]
        _banner(opened.config, first.base_url, first.triage, f" ({count} workers, {opened.mode})")

    async def worker_started(server) -> None:  # type: ignore[no-untyped-def]
        if server.worker.leads:  # one warning, not one per worker
            await _warn_if_unresolvable(config)

    try:
        return supervise(config, count, announce=announce, stopping=_shutting_down, on_started=worker_started,
                         prepare=functools.partial(_prepare_worker, config.log.level, config.log.format))
    except (CannotServe, StartFailed) as error:
        raise CommandError(str(error)) from None


log = logging.getLogger("ragtap.serve")
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
    """One line with what ragtap does: where it listens and forwards, what it scores and exports, its limits."""
    c = config
    exporters = [name for name, on in (("prometheus", c.prometheus.enabled), ("otel", c.otel.enabled),
                                       ("jsonl", bool(c.log.interactions_path)), ("judge", c.judge.enabled)) if on]
    return (
        f"ragtap started: listening={base_url} workers={c.server.worker_count} upstream={_redacted(c.server.upstream)} inject={c.inject.enabled} "
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
        config = load_config(args.config, flags={"server": {"upstream": args.upstream, "host": args.host, "port": args.port,
                                                            "workers": args.workers}})
    except ConfigError as error:
        print(f"ragtap: config error: {error}", file=sys.stderr)
        return 2
    from ragtap.commands.logs import configure_logging

    configure_logging(config.log.level, config.log.format)
    if config.server.worker_count > 1:
        return _supervise(config, config.server.worker_count)
    from ragtap.supervisor.process import event_loop_runner

    event_loop_runner()(_serve(config))
    return 0


def _prepare_worker(level: str, fmt: str) -> None:
    """A worker's set-up: the plugins and the logging (a forked worker inherited both; a spawned one did not)."""
    from ragtap.commands.logs import configure_logging

    load_plugins()
    configure_logging(level, fmt)
