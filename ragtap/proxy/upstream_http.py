"""The upstream client's wire: HTTP/1.1 on pooled keep-alive connections to the one upstream, parsed by httptools.

ragtap talks to exactly one origin, always with a body already in memory, never follows a redirect, keeps no
cookies and uses no proxy from the environment.  aiohttp's general client spent ~62 us of CPU per request at c=32
on that (the request object, the connector, a write task, the payload machinery, a timer per read); this one
spends ~20 us (bench/upstream_client.py).  Through ragtap at c=32 the whole request's CPU fell by ~80 us (a RAG
request 277 -> 194 us, docs/benchmarks.md "Request path, sixth round").

What it does, as aiohttp's client did for ragtap:
- a pool of at most `limit` connections, the most recently used reused first, idle ones closed after
  `keepalive` seconds, one that the upstream closed never reused;
- `connect_timeout` bounds name resolution, the TCP connect and the TLS handshake together; `read_timeout` bounds
  every wait for the upstream's bytes (headers or body), counted from the request or the last bytes, and the wait
  for a free connection;
- bodies of any framing (Content-Length, chunked, to the close), 1xx interim responses skipped, HEAD answered
  without a body; gzip and deflate decoded when asked (`decompress=True`), other encodings left as they are;
- a response body is buffered up to `_PAUSE_AT` bytes, then the socket stops being read until the caller catches
  up (an app reading slowly never makes ragtap hold a whole large body).
When the upstream closed a reused connection before answering, an idempotent request (GET, HEAD, ...) is sent once
more on a new one, as aiohttp's client did; a POST never is: an LLM call is not idempotent.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import ipaddress
import socket
import ssl
import zlib
from collections.abc import AsyncIterator
from typing import Final

import httptools
from multidict import CIMultiDict, CIMultiDictProxy

_PAUSE_AT: Final = 256 * 1024  # buffered body bytes at which the socket stops being read
_DNS_TTL_S: Final = 300.0  # a resolved address list is reused this long (aiohttp's ttl_dns_cache, as ragtap set it)
_HEADER_BYTES_LIMIT: Final = 256 * 1024  # response headers larger than this are a broken upstream, not a reply
_BODY_METHODS: Final = frozenset({"POST", "PUT", "PATCH"})  # a Content-Length even when the body is empty
# Sent a second time, on a new connection, when a reused one turns out closed before any byte of the answer
# (as aiohttp's client does): repeating them is harmless.  Never a POST: an LLM call is not idempotent.
_IDEMPOTENT: Final = frozenset({"GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"})


class UpstreamBroke(Exception):
    """The upstream's connection closed, or its bytes were not HTTP, before the response was complete."""


class UpstreamDisconnected(UpstreamBroke):
    """The connection closed (or was reset) before the response was complete."""


class MalformedResponse(UpstreamBroke):
    """The upstream's bytes are not an HTTP/1.x response httptools can parse."""


class DNSLookupError(OSError):
    """The upstream's host name does not resolve."""


# What a caller reading a body catches: the connection broke, or the upstream fell silent for `read_timeout_s`.
UPSTREAM_BROKE: Final = (UpstreamBroke, TimeoutError)


class _Decoder:
    """gzip / deflate bodies decoded as they arrive (deflate: zlib-wrapped, or raw as some servers send it)."""

    __slots__ = ("_encoding", "_inner", "_raw_fallback")

    def __init__(self, encoding: str) -> None:
        self._encoding = encoding
        self._raw_fallback = encoding == "deflate"  # until the first bytes decoded
        self._inner = zlib.decompressobj(16 + zlib.MAX_WBITS if encoding != "deflate" else zlib.MAX_WBITS)

    def decode(self, data: bytes) -> bytes:
        try:
            decoded = self._inner.decompress(data)
        except zlib.error as error:
            if self._raw_fallback:  # the first bytes had no zlib header: a raw deflate stream
                self._raw_fallback = False
                self._inner = zlib.decompressobj(-zlib.MAX_WBITS)
                return self.decode(data)
            raise MalformedResponse(f"the {self._encoding} body does not decode: {error}") from error
        self._raw_fallback = False
        return decoded

    def flush(self) -> bytes:
        return self._inner.flush()


def _decoder_for(headers: CIMultiDictProxy[str]) -> _Decoder | None:
    encoding = headers.get("Content-Encoding", "").strip().lower()
    if encoding in ("gzip", "x-gzip"):
        return _Decoder("gzip")
    if encoding == "deflate":
        return _Decoder("deflate")
    return None


class UpstreamResponse:
    """One response: status and headers read, the body still arriving (`iter_any()` or `read()`).
    `release()` when done: the connection goes back to the pool if the body was read to its end, else it is closed."""

    __slots__ = ("_conn", "content_length", "headers", "reason", "status")

    def __init__(self, conn: _Connection, status: int, reason: str, headers: CIMultiDictProxy[str]) -> None:
        self._conn: _Connection | None = conn  # (the connection holds no reference back: no cycle to wait for the collector)
        self.status = status
        self.reason = reason
        self.headers = headers
        length = headers.get("Content-Length")
        self.content_length = int(length) if length is not None and length.isdigit() else None

    async def iter_any(self) -> AsyncIterator[bytes]:
        """The body's bytes as they arrive, in pieces of any size; UPSTREAM_BROKE if it does not arrive whole."""
        conn = self._conn
        if conn is None:
            return
        while True:
            data = conn.take()
            if data:
                yield data
            elif conn.body_done:
                return
            else:
                await conn.wait()

    async def read(self) -> bytes:
        """The whole body (most replies have arrived whole with their headers: no wait, no generator)."""
        conn = self._conn
        if conn is None:
            return b""
        parts: list[bytes] = []
        while True:
            data = conn.take()
            if data:
                parts.append(data)
            elif conn.body_done:
                return parts[0] if len(parts) == 1 else b"".join(parts)
            else:
                await conn.wait()

    def release(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.finish(reuse=True)

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.finish(reuse=False)

    def __del__(self) -> None:  # a caller that dropped the response without releasing it must not leak a pool slot
        if self._conn is not None:
            with contextlib.suppress(RuntimeError):  # (the loop already closed, at exit: nothing left to give back to)
                self._conn.finish(reuse=False)


class _Connection(asyncio.Protocol):
    """One keep-alive connection: httptools parses what arrives into the current response's state."""

    def __init__(self, pool: ConnectionPool) -> None:
        self._pool = pool
        self._loop = pool.loop
        self._parser = httptools.HttpResponseParser(self)
        self.transport: asyncio.Transport | None = None
        self.lost = False
        self.idle_since = 0.0
        self.exchanges = 0  # requests begun on this connection
        # The current exchange:
        self._head_request = False
        self._decompress = False
        self._decoder: _Decoder | None = None
        self._reason = b""
        self._raw_headers: list[tuple[bytes, bytes]] = []
        self._header_bytes = 0
        self._interim = False  # parsing a 1xx interim response, skipped
        self._status = 0
        self._headers: CIMultiDictProxy[str] | None = None  # set once the final response's headers are complete
        self._chunks: collections.deque[bytes] = collections.deque()
        self._buffered = 0
        self._paused = False
        self.body_done = False
        self._keep_alive = False
        self._error: BaseException | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._last_read = 0.0
        self._read_timeout = 0.0
        self._active = False  # a request was sent and its response is not finished with
        self._timer: asyncio.TimerHandle | None = None

    # --- asyncio.Protocol ---------------------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self._last_read = self._loop.time()
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserCallbackError as error:  # raised by one of the callbacks below: its cause is ours
            self._fail(error.__context__ or MalformedResponse(str(error)))
        except httptools.HttpParserError as error:
            self._fail(MalformedResponse(f"the upstream's response is not HTTP/1.x: {error}"))

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self._pool.forget_idle(self)
        if self._headers is not None and not self.body_done and self._error is None and self._close_delimited():
            self._complete()  # a body without length or chunking ends where the connection does
        elif not self.body_done and self._error is None and self._active:
            self._fail(UpstreamDisconnected(f"the upstream closed the connection mid-response ({exc or 'EOF'})"))
        self._cancel_timer()

    # --- httptools callbacks ------------------------------------------------------------------------------------

    def on_status(self, status: bytes) -> None:
        self._reason += status

    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_bytes += len(name) + len(value)
        if self._header_bytes > _HEADER_BYTES_LIMIT:
            raise MalformedResponse(f"response headers over {_HEADER_BYTES_LIMIT} bytes")
        self._raw_headers.append((name, value))  # (httptools hands over each header whole)

    def on_headers_complete(self) -> None:
        status = self._parser.get_status_code()
        if 100 <= status < 200 and status != 101:
            self._interim = True  # 100 Continue, 103 Early Hints: the real response follows on the same connection
            return
        self._status = status
        self._headers = headers = CIMultiDictProxy(CIMultiDict(
            (name.decode("utf-8", "surrogateescape"), value.decode("utf-8", "surrogateescape")) for name, value in self._raw_headers
        ))
        if self._decompress:
            self._decoder = _decoder_for(headers)
        self._keep_alive = self._parser.should_keep_alive()
        if self._head_request:  # no body follows, whatever Content-Length says; httptools would wait for one
            self._keep_alive = False
            self._complete()
        self._wake()

    def on_body(self, body: bytes) -> None:
        if self.body_done or self._interim:
            return
        if self._decoder is not None:
            body = self._decoder.decode(body)
            if not body:
                return
        self._chunks.append(body)
        self._buffered += len(body)
        if self._buffered >= _PAUSE_AT and not self._paused and self.transport is not None:
            self._paused = True
            self.transport.pause_reading()
        self._wake()

    def on_message_complete(self) -> None:
        if self._interim:
            self._interim = False
            self._reason, self._raw_headers, self._header_bytes = b"", [], 0
            return
        if not self.body_done:
            self._complete()

    # --- the exchange --------------------------------------------------------------------------------------------

    def begin(self, request: bytes, *, head: bool, decompress: bool, read_timeout: float) -> None:
        """Send one request (its bytes whole); the response is awaited with `response()`."""
        self._head_request, self._decompress = head, decompress
        self.exchanges += 1
        self._active = True
        self._last_read = self._loop.time()
        self._read_timeout = read_timeout
        if self._timer is None:  # (one left armed by an earlier exchange fires earlier than this one's deadline: it re-arms)
            self._timer = self._loop.call_at(self._last_read + read_timeout, self._check_timeout)
        assert self.transport is not None
        self.transport.write(request)

    async def response(self) -> UpstreamResponse:
        while self._headers is None:
            await self.wait()
        return UpstreamResponse(self, self._status, self._reason.decode("latin-1").strip(), self._headers)

    def take(self) -> bytes:
        """The body bytes buffered so far ("" if none); raises the connection's failure once they are taken."""
        if self._chunks:
            data = self._chunks.popleft() if len(self._chunks) == 1 else b"".join(self._chunks)
            self._chunks.clear()
            self._buffered = 0
            if self._paused and self.transport is not None and not self.lost:
                self._paused = False
                self.transport.resume_reading()
            return data
        if self._error is not None:
            raise self._error
        return b""

    async def wait(self) -> None:
        if self._error is not None:
            raise self._error
        waiter = self._waiter = self._loop.create_future()
        try:
            await waiter
        finally:
            self._waiter = None

    def finish(self, *, reuse: bool) -> None:
        """The response is done with: back to the pool when it was read whole and the upstream keeps the connection."""
        reusable = reuse and self.body_done and self._keep_alive and self._error is None and not self.lost and not self._chunks
        self._reset()
        self._pool.give_back(self, reusable)

    def close(self) -> None:
        self._cancel_timer()
        if self.transport is not None:
            self.transport.close()

    def usable(self, now: float, keepalive: float) -> bool:
        closing = self.transport is None or self.transport.is_closing()
        return not self.lost and not closing and self._error is None and now - self.idle_since < keepalive

    # --- internals ------------------------------------------------------------------------------------------------

    def _complete(self) -> None:
        if self._decoder is not None:
            try:
                tail = self._decoder.flush()
            except zlib.error as error:
                self._fail(MalformedResponse(f"the compressed body does not decode: {error}"))
                return
            if tail:
                self._chunks.append(tail)
        self.body_done = True
        self._wake()

    def _fail(self, error: BaseException) -> None:
        if self._error is None:
            self._error = error
        self._keep_alive = False
        self._cancel_timer()
        self._wake()
        if self.transport is not None:
            self.transport.close()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _close_delimited(self) -> bool:
        headers = self._headers
        return headers is not None and "Content-Length" not in headers and "chunked" not in headers.get("Transfer-Encoding", "").lower()

    def _check_timeout(self) -> None:
        # One timer per connection, checked when it fires against the time of the last bytes and re-armed when they
        # came since; left armed between exchanges: cheaper than a timer for every read (aiohttp) or every request.
        self._timer = None
        if not self._active or self.body_done or self._error is not None:
            return
        deadline = self._last_read + self._read_timeout
        if self._paused or self._loop.time() < deadline:  # (paused: the app is slow, not the upstream)
            self._timer = self._loop.call_at(max(deadline, self._loop.time() + 0.001), self._check_timeout)
            return
        self._fail(TimeoutError(f"the upstream sent nothing for {self._read_timeout:g} s"))

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _reset(self) -> None:
        self._active = False
        self._headers, self._decoder, self._error = None, None, None
        self._reason, self._raw_headers, self._header_bytes = b"", [], 0
        self._chunks.clear()
        self._buffered = 0
        self.body_done = self._interim = False


async def lookup(loop: asyncio.AbstractEventLoop, host: str, port: int) -> list[tuple[str, int]]:
    """host:port's addresses, in the resolver's order (getaddrinfo, run off the loop by the loop itself)."""
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as error:
        raise DNSLookupError(f"DNS lookup of {host!r} failed: {error}") from error
    return list(dict.fromkeys((info[4][0], info[4][1]) for info in infos))


def _ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


class ConnectionPool:
    """At most `limit` connections to host:port (TLS when `ssl_context`); idle ones reused newest first.  A request
    finding every connection busy waits for one at most `wait_timeout` (then TimeoutError, as a silent upstream)."""

    def __init__(self, host: str, port: int, *, ssl_context: ssl.SSLContext | None, connect_timeout: float, wait_timeout: float, keepalive: float,
                 limit: int) -> None:
        self.host, self.port = host, port
        self._ssl = ssl_context
        self._connect_timeout = connect_timeout
        self._wait_timeout = wait_timeout
        self._keepalive = keepalive
        self._limit = limit
        self._idle: collections.deque[_Connection] = collections.deque()  # oldest left, newest right
        self._open = 0  # connections open or being opened, idle ones included
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()
        self._sweeper: asyncio.TimerHandle | None = None
        self._closed = False
        self._addresses: list[tuple[str, int]] = [(host, port)] if _ip_literal(host) else []
        self._addresses_expire = float("inf") if self._addresses else 0.0
        self.loop = asyncio.get_running_loop()

    @property
    def in_use(self) -> int:
        """Connections handed out and not yet given back (or being opened)."""
        return self._open - len(self._idle)

    async def acquire(self) -> _Connection:
        while True:
            if self._closed:
                raise UpstreamDisconnected("the upstream client is closed")
            now = self.loop.time()
            while self._idle:
                conn = self._idle.pop()
                if conn.usable(now, self._keepalive):
                    return conn
                self._drop(conn)
            if self._open < self._limit:
                return await self._connect()
            waiter = self.loop.create_future()
            self._waiters.append(waiter)
            try:
                async with asyncio.timeout(self._wait_timeout):
                    await waiter  # a connection was given back or closed: look again
            except BaseException:  # timed out or cancelled: a wake-up this request was given goes to the next one
                if waiter.done() and not waiter.cancelled():
                    self._wake_one()
                raise
            finally:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)

    async def _connect(self) -> _Connection:
        self._open += 1
        try:
            async with asyncio.timeout(self._connect_timeout):  # the lookup, the TCP connect and the TLS handshake
                return await self._open_connection()
        except BaseException:
            self._open -= 1
            self._wake_one()
            raise

    async def _open_connection(self) -> _Connection:
        if self.loop.time() >= self._addresses_expire:
            self._addresses = await lookup(self.loop, self.host, self.port)
            self._addresses_expire = self.loop.time() + _DNS_TTL_S
        failure: OSError | None = None
        for address, port in self._addresses:  # each address in turn, as aiohttp's connector did
            try:
                _, conn = await self.loop.create_connection(
                    lambda: _Connection(self), address, port, ssl=self._ssl, server_hostname=self.host if self._ssl else None
                )
                return conn
            except OSError as error:
                failure = error
        raise failure or DNSLookupError(f"DNS lookup of {self.host!r} gave no address")

    def give_back(self, conn: _Connection, reusable: bool) -> None:
        if reusable and not self._closed:
            conn.idle_since = self.loop.time()
            self._idle.append(conn)
            if self._sweeper is None:
                self._sweeper = self.loop.call_later(self._keepalive, self._sweep)
        else:
            self._drop(conn)
        self._wake_one()

    def forget_idle(self, conn: _Connection) -> None:
        """The upstream closed an idle connection: it no longer counts against the limit."""
        if conn in self._idle:
            self._idle.remove(conn)
            self._open -= 1
            self._wake_one()

    def _drop(self, conn: _Connection) -> None:
        conn.close()
        self._open -= 1

    def _wake_one(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def _sweep(self) -> None:
        self._sweeper = None
        now = self.loop.time()
        while self._idle and not self._idle[0].usable(now, self._keepalive):
            self._drop(self._idle.popleft())
        if self._idle:
            self._sweeper = self.loop.call_at(self._idle[0].idle_since + self._keepalive, self._sweep)

    async def close(self) -> None:
        self._closed = True
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None
        while self._idle:
            self._drop(self._idle.pop())
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)


class HttpClient:
    """Requests to one origin over a ConnectionPool: `send()` returns once the response's headers are read."""

    def __init__(self, host: str, port: int, *, tls: bool, connect_timeout: float, read_timeout: float, keepalive: float, limit: int) -> None:
        self._pool = ConnectionPool(
            host, port, ssl_context=ssl.create_default_context() if tls else None, connect_timeout=connect_timeout, wait_timeout=read_timeout,
            keepalive=keepalive, limit=limit,
        )
        self._read_timeout = read_timeout
        default_port = 443 if tls else 80
        self._host_header = host if port == default_port else f"{host}:{port}"
        if ":" in host and not host.startswith("["):  # an IPv6 literal
            self._host_header = f"[{host}]" if port == default_port else f"[{host}]:{port}"

    async def send(self, method: str, target: str, headers: CIMultiDict[str], body: bytes, *, decompress: bool) -> UpstreamResponse:
        request = self._request_bytes(method, target, headers, body)
        retry = method in _IDEMPOTENT
        while True:
            conn = await self._pool.acquire()
            reused = conn.exchanges > 0
            try:
                conn.begin(request, head=method == "HEAD", decompress=decompress, read_timeout=self._read_timeout)
                return await conn.response()
            except UpstreamDisconnected:
                conn.finish(reuse=False)
                if not (retry and reused):
                    raise
                retry = False
            except BaseException:  # a timeout, bytes that are not HTTP, or the app hung up: the connection is not reusable
                conn.finish(reuse=False)
                raise

    def _request_bytes(self, method: str, target: str, headers: CIMultiDict[str], body: bytes) -> bytes:
        lines = [f"{method} {target} HTTP/1.1\r\nHost: {self._host_header}\r\n"]
        lines += [f"{name}: {value}\r\n" for name, value in headers.items()]
        if body or method in _BODY_METHODS:
            lines.append(f"Content-Length: {len(body)}\r\n")
        lines.append("\r\n")
        head = "".join(lines)
        # Each line ends in the one CRLF written above: any other CR or LF came inside a name or a value (a header
        # injection), which no header aiohttp's server parsed can hold, but a header ragtap adds might.
        if head.count("\n") != len(lines) + 1 or head.count("\r") != len(lines) + 1:
            bad = next((name for name, value in headers.items() if any(c in name + value for c in "\r\n")), "?")
            raise ValueError(f"header {bad!r} holds a line break")
        return head.encode("utf-8", "surrogateescape") + body

    @property
    def connections_in_use(self) -> int:
        return self._pool.in_use

    async def close(self) -> None:
        await self._pool.close()
