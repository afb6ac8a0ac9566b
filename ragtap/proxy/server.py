"""Run the proxy app on a socket (and the metrics app on its own socket when configured).

Usage::

    async with RagtapServer(config) as server:     # port 0 picks a free port
        print(server.base_url)                     # "http://127.0.0.1:PORT/v1"
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from ragtap.config import Config, WorkerRole
from ragtap.exporters.base import Exporter
from ragtap.proxy.app import PROMETHEUS, WATCHDOG, build_app
from ragtap.proxy.clients import ConnectionWatchdog, WatchedSite
from ragtap.proxy.open_files import ConnectionBudget, connection_budget, describe_lowered
from ragtap.proxy.state import CAPTURE_STORE, STATE, ExchangeSteps, ProxyState
from ragtap.proxy.triage import mount_triage, triage_host, triage_page_url, triage_unavailable, triage_warning
from ragtap.triage.access import is_loopback_host

if TYPE_CHECKING:
    from ragtap.embedding.base import Embedder


class _NoRequestBytes(logging.Filter):
    """aiohttp logs a request it cannot parse (a header over 8190 bytes, a bad chunk size...) with the offending
    bytes, which may be an `Authorization` header: keep the fact and the error class, drop the bytes."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, HttpProcessingError):
            record.msg = f"{record.msg}: unparseable request ({type(error).__name__}, answered {error.code})"
            record.exc_info, record.exc_text = None, None
            record.levelno, record.levelname = logging.WARNING, "WARNING"  # the client's fault, not ragtap's
        return True


HTTP_LOG = logging.getLogger("ragtap.http")  # aiohttp's server log for ragtap's listeners
HTTP_LOG.addFilter(_NoRequestBytes())
log = logging.getLogger("ragtap.proxy")


class ListenError(OSError):
    """A listener could not be opened; `address` names the one that failed (the proxy's, /metrics' or the page's)."""

    def __init__(self, address: str, error: OSError) -> None:
        super().__init__(error.errno, error.strerror or str(error))
        self.address = address


async def _start_site(site: web.BaseSite, host: str, port: int) -> None:
    try:
        await site.start()
    except OSError as error:
        shown = f"[{host}]" if ":" in host else host
        raise ListenError(f"{shown}:{port}", error) from error


def metrics_exposure_warning(config: Config) -> str | None:
    """One line when /metrics answers anyone who can reach a non-loopback address with no token: the metrics name
    models and traffic, and an open endpoint is easy to miss (the Dockerfile binds 0.0.0.0)."""
    settings = config.prometheus
    if not settings.enabled or settings.token:
        return None
    host = (settings.listen_host or config.server.host) if settings.listen_port is not None else config.server.host
    if is_loopback_host(host):
        return None
    return (f"/metrics is served on {host} without a token: anyone who reaches that address can read it "
            "(set [prometheus] token or RAGTAP_METRICS_TOKEN, or a loopback listen_host)")


@dataclass(frozen=True)
class Listener:
    """How one of the server's listeners (`PROXY`, `METRICS`, `TRIAGE`) gets its socket when several processes serve
    the same port (ragtap/supervisor/): `sock`, a listening socket the supervisor opened and shares; or else a
    socket of its own bound with SO_REUSEPORT (`reuse_port`), the kernel spreading connections over the workers."""

    sock: socket.socket | None = None
    reuse_port: bool = False


PROXY, METRICS, TRIAGE = "proxy", "metrics", "triage"


@dataclass(frozen=True)
class Listeners:
    """Listener of each name; a name without one binds its configured address alone (a single process)."""

    by_name: Mapping[str, Listener] = field(default_factory=dict)

    def site(self, name: str, runner: web.BaseRunner, host: str, port: int) -> web.BaseSite:
        listener = self.by_name.get(name)
        if listener is not None and listener.sock is not None:
            return web.SockSite(runner, listener.sock)
        return web.TCPSite(runner, host, port, reuse_port=listener.reuse_port if listener is not None else None)

    def watched_site(self, runner: web.BaseRunner, host: str, port: int, watchdog: ConnectionWatchdog) -> WatchedSite:
        listener = self.by_name.get(PROXY)
        if listener is None:
            return WatchedSite(runner, host, port, watchdog)
        return WatchedSite(runner, host, port, watchdog, sock=listener.sock, reuse_port=listener.reuse_port or None)


def _bound_port(site: web.BaseSite) -> int:
    server = site._server  # aiohttp exposes the listening socket only here
    return int(server.sockets[0].getsockname()[1])  # type: ignore[union-attr]


class RagtapServer:
    """`steps`: plugged into the exchange path's seams.  `worker` and `listeners`: this is one of the processes of
    `ragtap serve --workers N` (ragtap/supervisor/)."""

    def __init__(self, config: Config, *, embedder: Embedder | None = None, exporters: Sequence[Exporter] | None = None,
                 steps: ExchangeSteps | None = None, worker: WorkerRole | None = None, listeners: Listeners | None = None) -> None:
        self.config = config
        self.worker = worker or WorkerRole()
        self.listeners = listeners or Listeners()
        self.app = build_app(config, embedder=embedder, exporters=exporters, steps=steps, worker=self.worker)
        self.host = config.server.host
        self.port = config.server.port
        self.metrics_port: int | None = None
        self.triage_port: int | None = None  # where the triage page listens (the proxy's port unless its own)
        self.connection_budget: ConnectionBudget | None = None  # the client connection limit in force, once started
        self._runners: list[web.AppRunner] = []

    @property
    def state(self) -> ProxyState:
        return self.app[STATE]

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def triage_unavailable(self) -> str | None:
        """Why the triage page is not served, or None when it is."""
        return triage_unavailable(self.config, self.app[CAPTURE_STORE])

    @property
    def triage_url(self) -> str | None:
        """The triage page's full URL once listening (None when it is not served)."""
        if self.triage_port is None:
            return None
        return triage_page_url(self.config, triage_host(self.config), self.triage_port)

    async def start(self) -> RagtapServer:
        warning = metrics_exposure_warning(self.config)
        if warning is not None and self.worker.leads:  # said once, not by every worker
            log.warning(warning)
        # handler_cancellation: when the app hangs up, its handler is cancelled and the upstream request closed, as
        # it would be without ragtap (vLLM, for one, stops generating for a client that went away).
        # keepalive_timeout: aiohttp's own idle timer, a silent backstop behind the watchdog's (ragtap/proxy/clients.py).
        clients = self.config.clients
        runner = web.AppRunner(
            self.app, access_log=None, handle_signals=False, shutdown_timeout=self.config.server.shutdown_grace_s, logger=HTTP_LOG,
            handler_cancellation=True, keepalive_timeout=clients.idle_timeout_s + clients.header_timeout_s + 5,
        )
        await runner.setup()
        self._runners.append(runner)
        # As many client connections as the file descriptors allow (issue 24 #10), counted before listening.
        self.connection_budget = connection_budget(clients.max_connections, self.config.server.max_connections)
        self.app[WATCHDOG].limit_connections(self.connection_budget.effective)
        if self.connection_budget.lowered:
            log.warning(describe_lowered(self.connection_budget))
        site = self.listeners.watched_site(runner, self.host, self.port, self.app[WATCHDOG])
        await _start_site(site, self.host, self.port)
        self.port = _bound_port(site)
        prometheus = self.app[PROMETHEUS]
        settings = self.config.prometheus
        if prometheus is not None and settings.listen_port is not None:
            from ragtap.exporters.prometheus import add_metrics_route

            metrics_app = web.Application()
            add_metrics_route(metrics_app, prometheus)
            metrics_runner = web.AppRunner(
                metrics_app, access_log=None, handle_signals=False, shutdown_timeout=self.config.server.shutdown_grace_s, logger=HTTP_LOG
            )
            await metrics_runner.setup()
            self._runners.append(metrics_runner)
            metrics_site = self.listeners.site(METRICS, metrics_runner, settings.listen_host or self.host, settings.listen_port)
            await _start_site(metrics_site, settings.listen_host or self.host, settings.listen_port)
            self.metrics_port = _bound_port(metrics_site)
        await self._start_triage()
        return self

    async def _start_triage(self) -> None:
        problem = self.triage_unavailable
        if problem is not None:
            if self.config.triage.enabled and self.app[CAPTURE_STORE] is not None and self.worker.leads:
                log.warning("triage page %s", problem)  # turned off for safety: say so once
            return
        warning = triage_warning(self.config)
        if warning is not None and self.worker.leads:  # said once, not by every worker
            log.warning(warning)
        if self.config.triage.listen_port is None:
            self.triage_port = self.port  # mounted on the proxy's app by build_app
            return
        triage_app = web.Application()
        store = self.app[CAPTURE_STORE]
        mount_triage(triage_app, self.config, store, store.redactor)
        runner = web.AppRunner(triage_app, access_log=None, handle_signals=False, shutdown_timeout=self.config.server.shutdown_grace_s,
                               logger=HTTP_LOG)
        await runner.setup()
        # stopped before the proxy, whose cleanup closes the store the page reads
        self._runners.append(runner)
        site = self.listeners.site(TRIAGE, runner, triage_host(self.config), self.config.triage.listen_port)
        await _start_site(site, triage_host(self.config), self.config.triage.listen_port)
        self.triage_port = _bound_port(site)

    async def stop(self) -> None:
        """Stop listening, let in-flight requests finish (up to the grace period), drain scoring, flush exporters."""
        for runner in reversed(self._runners):
            await runner.cleanup()
        self._runners.clear()

    async def __aenter__(self) -> RagtapServer:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
