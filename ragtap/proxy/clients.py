"""Client connections: a slow or idle client cannot hold a connection (and its file descriptor) forever.

aiohttp's server has one timer of its own, `keepalive_timeout` (3630 s by default), which closes a connection
that has not finished a request's headers that long after it opened or after its last response -- silently.  It
has no timeout for the headers of a request once they started, none for the body, and no cap on connections: a
client sending one header line every 10 s (slowloris) holds its connection for an hour, and a thousand of them
hold every file descriptor (issue 13 #6).  So ragtap watches its connections itself, as nginx
(client_header_timeout, client_body_timeout, keepalive_timeout) and Go (ReadHeaderTimeout, IdleTimeout) do:

* **idle** (`idle_timeout_s`): no byte of a new request that long after the connection opened or after the last
  response -> closed.
* **headers** (`header_timeout_s`): the first byte of a request arrived but its headers were not complete that
  long after -> closed.
* **body** (`body_timeout_s`): the whole body did not arrive within that long after the headers -> the app gets
  `408 request_timeout` (OpenAI error shape) and the connection is closed.  Enforced by ragtap's request path
  (`proxy/app.py`, `request_path` around every route: it reads the body, aiohttp keeps it for the handler).
* **connection limit** (`max_connections`, lowered at start to what the open-files limit allows:
  ragtap/proxy/open_files.py): a new connection over the limit closes the oldest connection that is idle or still
  sending its headers (never one whose request is being answered; the new one itself when every other is busy); so
  under a flood of slow connections a new client -- a health check -- still gets in.  Reaching the limit is also
  one WARNING line at most once a minute (with the count since the last), since it means the limit is too low
  for the traffic or the server is under attack.

Each close is one INFO line on `ragtap.clients` with its reason code (at most `_LOG_PER_SWEEP` per sweep, then a
count) and is counted through the exporters' `client_rejected(reason)` hook
(`ragtap_client_rejections_total{reason}`).  What happens while a request is being answered is governed by the
upstream's timeouts, not by these.

The watchdog sits between asyncio and aiohttp's protocol (`WatchedSite` wraps aiohttp's protocol factory) so
that it sees every connection open, receive bytes and close, without touching aiohttp's internals.
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import logging
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

log = logging.getLogger("ragtap.clients")

# Reason codes: labels of ragtap_client_rejections_total and the `reason=` of the log line.
IDLE_TIMEOUT = "idle_timeout"
HEADER_TIMEOUT = "header_timeout"
BODY_TIMEOUT = "body_timeout"
CONNECTION_LIMIT = "connection_limit"
CLIENT_REASONS = frozenset({IDLE_TIMEOUT, HEADER_TIMEOUT, BODY_TIMEOUT, CONNECTION_LIMIT})

_LOG_PER_SWEEP = 20  # a flood of slow clients must not become a flood of log lines
_LIMIT_WARNING_EVERY_S = 60.0


@dataclass(frozen=True, slots=True)
class ClientLimits:
    header_timeout_s: float
    body_timeout_s: float
    idle_timeout_s: float
    max_connections: int


class _Phase(enum.Enum):
    IDLE = "idle"  # waiting for the first byte of a request
    HEADERS = "headers"  # a request's first bytes came, its headers are not complete yet
    BUSY = "busy"  # a request is being read or answered (the handler runs)


class _Conn:
    __slots__ = ("deadline", "opened", "peer", "phase", "transport")

    def __init__(self, transport: asyncio.Transport, deadline: float) -> None:
        self.transport = transport
        self.phase = _Phase.IDLE
        self.deadline = deadline
        self.opened = time.monotonic()
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) and len(peer) >= 2 else "?"


class ConnectionWatchdog:
    """Tracks the proxy listener's connections and closes the ones that break a limit (see the module docstring)."""

    def __init__(self, limits: ClientLimits, on_reject: Callable[[str], None] = lambda reason: None) -> None:
        self.limits = limits
        self._on_reject = on_reject
        self._conns: dict[asyncio.BaseTransport, _Conn] = {}  # insertion order: oldest first
        self._sweeper: asyncio.Task[None] | None = None
        self._logged = 0
        self._unlogged: dict[str, int] = {}
        self._limit_hits = 0  # connection-limit closes since the last WARNING about them
        self._next_limit_warning = 0.0
        self.closed: dict[str, int] = {}  # closes by reason, for tests and the soak

    def limit_connections(self, max_connections: int) -> None:
        """Enforce a lower connection limit than configured (what the open-files limit allows)."""
        self.limits = dataclasses.replace(self.limits, max_connections=max_connections)

    # --- what the protocol wrapper and the request path report ---------------------------------------------------

    def opened(self, transport: asyncio.Transport) -> None:
        self._conns[transport] = _Conn(transport, self._now() + self.limits.idle_timeout_s)
        if len(self._conns) > self.limits.max_connections:
            self._shed()

    def received(self, transport: asyncio.BaseTransport) -> None:
        conn = self._conns.get(transport)
        if conn is not None and conn.phase is _Phase.IDLE:
            conn.phase = _Phase.HEADERS
            conn.deadline = self._now() + self.limits.header_timeout_s

    def request_started(self, transport: asyncio.BaseTransport | None) -> None:
        conn = self._conns.get(transport) if transport is not None else None
        if conn is not None:
            conn.phase = _Phase.BUSY

    def request_finished(self, transport: asyncio.BaseTransport | None) -> None:
        conn = self._conns.get(transport) if transport is not None else None
        if conn is not None:
            conn.phase = _Phase.IDLE
            conn.deadline = self._now() + self.limits.idle_timeout_s

    def lost(self, transport: asyncio.BaseTransport) -> None:
        self._conns.pop(transport, None)

    @property
    def open_connections(self) -> int:
        return len(self._conns)

    # --- enforcement ---------------------------------------------------------------------------------------

    def start(self) -> None:
        if self._sweeper is None:
            self._sweeper = asyncio.get_running_loop().create_task(self._sweep_forever(), name="ragtap-client-watchdog")

    async def stop(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            try:
                await self._sweeper
            except asyncio.CancelledError:
                pass
            self._sweeper = None

    async def _sweep_forever(self) -> None:
        # A quarter of the shortest timeout, within [0.05, 1] s: a limit is enforced at most that late.
        interval = min(1.0, max(0.05, min(self.limits.header_timeout_s, self.limits.idle_timeout_s) / 4))
        while True:
            await asyncio.sleep(interval)
            self.sweep()

    def sweep(self) -> None:
        """Close the connections past their deadline: O(open connections)."""
        now = self._now()
        expired = [c for c in self._conns.values() if c.phase is not _Phase.BUSY and c.deadline <= now]
        for conn in expired:
            self._close(conn, HEADER_TIMEOUT if conn.phase is _Phase.HEADERS else IDLE_TIMEOUT)
        self._flush_log_summary()

    def _shed(self) -> None:
        """Over the connection limit: close the oldest connection that is idle or still sending its headers (the
        newest, just opened, is idle too: it is the one closed when every other is busy)."""
        self._warn_limit_reached()
        for conn in self._conns.values():
            if conn.phase is not _Phase.BUSY:
                self._close(conn, CONNECTION_LIMIT)
                return

    def _warn_limit_reached(self) -> None:
        self._limit_hits += 1
        now = self._now()
        if now >= self._next_limit_warning:
            self._next_limit_warning = now + _LIMIT_WARNING_EVERY_S
            log.warning("client connection limit reached (%d open, limit %d): closing the oldest idle or header-sending "
                        "connection; %d such closes since the last line", len(self._conns), self.limits.max_connections, self._limit_hits)
            self._limit_hits = 0

    def _close(self, conn: _Conn, reason: str) -> None:
        self._conns.pop(conn.transport, None)
        conn.transport.close()
        self.rejected(reason, conn.peer, time.monotonic() - conn.opened)

    def rejected(self, reason: str, peer: str, age_s: float) -> None:
        """Count and log one connection or request ragtap gave up on (also called for body timeouts)."""
        self.closed[reason] = self.closed.get(reason, 0) + 1
        self._on_reject(reason)
        if self._logged < _LOG_PER_SWEEP:
            self._logged += 1
            log.info("client connection closed: reason=%s peer=%s age_s=%.1f", reason, peer, age_s)
        else:
            self._unlogged[reason] = self._unlogged.get(reason, 0) + 1

    def _flush_log_summary(self) -> None:
        if self._unlogged:
            counts = " ".join(f"{reason}={n}" for reason, n in sorted(self._unlogged.items()))
            log.info("client connections closed without a line of their own: %s", counts)
            self._unlogged.clear()
        self._logged = 0

    @staticmethod
    def _now() -> float:
        return time.monotonic()


class _WatchedProtocol(asyncio.Protocol):
    """Passes every event on to aiohttp's protocol, telling the watchdog first."""

    __slots__ = ("_inner", "_transport", "_watchdog")

    def __init__(self, inner: asyncio.Protocol, watchdog: ConnectionWatchdog) -> None:
        self._inner = inner
        self._watchdog = watchdog
        self._transport: asyncio.BaseTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport
        self._inner.connection_made(transport)  # aiohttp first: shedding may close another connection, never this one
        self._watchdog.opened(transport)  # type: ignore[arg-type]

    def data_received(self, data: bytes) -> None:
        if self._transport is not None:
            self._watchdog.received(self._transport)
        self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self._inner.eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._transport is not None:
            self._watchdog.lost(self._transport)
        self._inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self._inner.pause_writing()

    def resume_writing(self) -> None:
        self._inner.resume_writing()


class WatchedSite(web.TCPSite):
    """aiohttp's TCPSite, with each connection's protocol wrapped for the watchdog.  `sock`: listen on this socket
    (opened by a supervisor and shared by its worker processes) instead of binding host and port."""

    def __init__(self, runner: web.BaseRunner, host: str, port: int, watchdog: ConnectionWatchdog, *, sock: socket.socket | None = None,
                 **kwargs: Any) -> None:
        super().__init__(runner, host, port, **kwargs)
        self._watchdog = watchdog
        self._sock = sock

    async def start(self) -> None:
        await web.BaseSite.start(self)  # registers the site with the runner (what TCPSite.start does first)
        server = self._runner.server
        assert server is not None
        watchdog = self._watchdog
        loop = asyncio.get_running_loop()
        if self._sock is not None:
            self._server = await loop.create_server(lambda: _WatchedProtocol(server(), watchdog), sock=self._sock, backlog=self._backlog)
        else:
            self._server = await loop.create_server(
                lambda: _WatchedProtocol(server(), watchdog), self._host, self._port, reuse_address=self._reuse_address,
                reuse_port=self._reuse_port, backlog=self._backlog,
            )
        self._bound_port = self._server.sockets[0].getsockname()[1] if self._server.sockets else self._port
