"""The upstream client's wire (ragtap/proxy/upstream_http.py) against a scripted HTTP/1.1 server on 127.0.0.1.

The server is a plain asyncio TCP server that answers each request with the bytes a test scripts, so framing,
interim responses, encodings, stalls and disconnects are exactly what real servers send.  The proxy-level
behaviour (what the app receives when the upstream breaks) is tested through real HTTP in test_proxy_core.py and
test_reliability_faults.py; these tests pin down the client itself: pooling, timeouts, bounds.
"""

from __future__ import annotations

import asyncio
import gc
import gzip
import ssl
import subprocess
import zlib
from collections.abc import Awaitable, Callable

import pytest
from multidict import CIMultiDict

from ragtap.proxy import upstream_http
from ragtap.proxy.upstream import UpstreamTarget
from ragtap.proxy.upstream_http import HttpClient, MalformedResponse, UpstreamDisconnected

Script = Callable[[bytes, asyncio.StreamReader, asyncio.StreamWriter], Awaitable[bool]]  # -> keep the connection open


class ScriptedServer:
    """Reads one request at a time (headers, then Content-Length bytes) and runs `script` on it."""

    def __init__(self, script: Script, *, tls: ssl.SSLContext | None = None) -> None:
        self.script = script
        self._tls = tls
        self.connections = 0
        self.requests: list[bytes] = []
        self._server: asyncio.Server | None = None
        self._handlers: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> ScriptedServer:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self._tls)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for handler in self._handlers:
            handler.cancel()
        await asyncio.wait_for(asyncio.gather(*self._handlers, return_exceptions=True), 5)
        await asyncio.wait_for(self._server.wait_closed(), 5)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        handler = asyncio.current_task()
        assert handler is not None
        self._handlers.add(handler)
        try:
            while True:
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
                length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")), 0)
                request = head + await reader.readexactly(length)
                self.requests.append(request)
                if not await self.script(request, reader, writer):
                    break
        except (asyncio.IncompleteReadError, ConnectionError, TimeoutError, asyncio.CancelledError):
            pass
        finally:
            writer.close()
            self._handlers.discard(handler)


def reply(body: bytes, *, status: str = "200 OK", headers: str = "") -> Script:
    async def script(request: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        writer.write(f"HTTP/1.1 {status}\r\nContent-Length: {len(body)}\r\n{headers}\r\n".encode() + body)
        await writer.drain()
        return True
    return script


def client(port: int, *, host: str = "127.0.0.1", tls: bool = False, **overrides: float) -> HttpClient:
    settings = {"connect_timeout": 2.0, "read_timeout": 2.0, "keepalive": 4.0, "limit": 8} | overrides
    return HttpClient(host, port, tls=tls, **settings)  # type: ignore[arg-type]


async def post(http: HttpClient, body: bytes = b'{"q": 1}', *, decompress: bool = False, method: str = "POST") -> tuple[int, bytes]:
    response = await http.send(method, "/v1/chat/completions", CIMultiDict({"Content-Type": "application/json"}), body, decompress=decompress)
    try:
        return response.status, await response.read()
    finally:
        response.release()


async def test_a_request_reuses_the_kept_alive_connection_and_writes_its_own_framing() -> None:
    async with ScriptedServer(reply(b'{"ok": true}', headers="X-Request-Id: r1\r\n")) as server:
        http = client(server.port)
        response = await http.send("POST", "/v1/chat/completions", CIMultiDict({"Authorization": "Bearer k", "X-Dup": "a"}), b"{}", decompress=False)
        assert (response.status, response.reason, response.headers["x-request-id"], response.content_length) == (200, "OK", "r1", 12)
        assert await response.read() == b'{"ok": true}'
        response.release()
        assert await post(http) == (200, b'{"ok": true}')
        await http.close()
    assert server.connections == 1
    first = server.requests[0].decode()
    assert first.startswith("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:")
    assert "Authorization: Bearer k\r\n" in first and "Content-Length: 2\r\n\r\n{}" in first


async def test_a_chunked_body_arrives_piece_by_piece_as_the_upstream_sends_it() -> None:
    go_on = asyncio.Event()

    async def chunked(request: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/event-stream\r\n\r\n5\r\nfirst\r\n")
        await writer.drain()
        await go_on.wait()
        writer.write(b"6\r\nsecond\r\n0\r\n\r\n")
        await writer.drain()
        return True

    async with ScriptedServer(chunked) as server:
        http = client(server.port)
        response = await http.send("POST", "/v1/chat/completions", CIMultiDict(), b"{}", decompress=False)
        pieces = response.iter_any()
        assert await asyncio.wait_for(anext(pieces), 2) == b"first"  # before the rest was even sent
        go_on.set()
        assert b"".join([piece async for piece in pieces]) == b"second"
        response.release()
        assert response.content_length is None
        assert (await post(http))[0] == 200  # the connection was reused after a chunked body
        await http.close()
    assert server.connections == 1


async def test_a_body_delimited_by_the_close_ends_with_the_connection_which_is_not_reused() -> None:
    async def to_the_close(request: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nall of it")
        await writer.drain()
        return False

    async with ScriptedServer(to_the_close) as server:
        http = client(server.port)
        assert await asyncio.wait_for(post(http), 2) == (200, b"all of it")
        assert await asyncio.wait_for(post(http), 2) == (200, b"all of it")
        await http.close()
    assert server.connections == 2


async def test_interim_responses_are_skipped_and_head_needs_no_body() -> None:
    async def early_hints(request: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        if request.startswith(b"HEAD"):
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")  # the length of the body a GET would get
        else:
            writer.write(b"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok")
        await writer.drain()
        return True

    async with ScriptedServer(early_hints) as server:
        http = client(server.port, read_timeout=1.0)
        response = await http.send("POST", "/v1/files", CIMultiDict(), b"x", decompress=False)
        assert (response.status, "Link" in response.headers, await response.read()) == (201, False, b"ok")
        response.release()
        assert await asyncio.wait_for(post(http, b"", method="HEAD"), 0.9) == (200, b"")
        await http.close()
    assert b"Content-Length" not in server.requests[-1]  # (a HEAD has no body to announce)


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "raw-deflate"])
async def test_compressed_bodies_are_decoded_only_when_asked(encoding: str) -> None:
    text = b'{"answer": "' + b"grounded " * 2000 + b'"}'
    if encoding == "gzip":
        packed = gzip.compress(text)
    else:
        squeeze = zlib.compressobj(wbits=zlib.MAX_WBITS if encoding == "deflate" else -zlib.MAX_WBITS)
        packed = squeeze.compress(text) + squeeze.flush()
    name = "gzip" if encoding == "gzip" else "deflate"
    async with ScriptedServer(reply(packed, headers=f"Content-Encoding: {name}\r\n")) as server:
        http = client(server.port)
        assert await post(http, decompress=True) == (200, text)
        assert await post(http, decompress=False) == (200, packed)
        await http.close()


async def test_silence_past_the_read_timeout_fails_the_wait_for_headers_and_for_the_body() -> None:
    async def stall(request: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        if b'"stall": "body"' in request:
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npart")
            await writer.drain()
        await asyncio.sleep(5)
        return False

    async with ScriptedServer(stall) as server:
        http = client(server.port, read_timeout=0.2)
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(post(http, b'{"stall": "headers"}'), 2)
        response = await asyncio.wait_for(http.send("POST", "/", CIMultiDict(), b'{"stall": "body"}', decompress=False), 2)
        pieces = response.iter_any()
        assert await anext(pieces) == b"part"
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(anext(pieces), 2)
        response.release()
        await http.close()


async def test_a_body_cut_short_or_bytes_that_are_not_http_fail_loudly() -> None:
    async def broken(request: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b" if b"cut" in request else b"SSH-2.0-OpenSSH_9.2\r\n\r\n")
        await writer.drain()
        return False

    async with ScriptedServer(broken) as server:
        http = client(server.port)
        with pytest.raises(UpstreamDisconnected):
            await post(http, b"cut")
        with pytest.raises(MalformedResponse):
            await post(http, b"ssh")
        await http.close()


async def test_the_pool_holds_at_most_its_limit_and_a_waiting_request_gets_the_freed_connection() -> None:
    release_first = asyncio.Event()

    async def slow_first(request: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        if b"first" in request:
            await release_first.wait()
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        await writer.drain()
        return True

    async with ScriptedServer(slow_first) as server:
        http = client(server.port, limit=1)
        first = asyncio.create_task(post(http, b"first"))
        second = asyncio.create_task(post(http, b"second"))
        await asyncio.sleep(0.1)
        assert not second.done() and server.requests == [server.requests[0]]  # the second waits for the one connection
        release_first.set()
        assert await asyncio.wait_for(asyncio.gather(first, second), 2) == [(200, b"ok"), (200, b"ok")]
        await http.close()
    assert server.connections == 1


async def test_a_request_waits_for_a_free_connection_no_longer_than_the_read_timeout() -> None:
    async def never(request: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        await asyncio.sleep(5)
        return False

    async with ScriptedServer(never) as server:
        http = client(server.port, limit=1, read_timeout=0.2)
        results = await asyncio.wait_for(asyncio.gather(post(http), post(http), return_exceptions=True), 2)
        assert all(isinstance(r, TimeoutError) for r in results), results
        await http.close()


async def test_connections_the_upstream_closed_or_that_idled_past_keepalive_are_not_reused() -> None:
    async def close_after(request: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        await writer.drain()
        return b"keep" in request  # else the server closes this idle connection right after answering

    async with ScriptedServer(close_after) as server:
        http = client(server.port, keepalive=0.3)
        assert await post(http, b"drop") == (200, b"ok")
        await asyncio.sleep(0.1)  # the close reaches the client
        assert await post(http, b"keep") == (200, b"ok")  # on a new connection, not a failure on the closed one
        assert server.connections == 2
        await asyncio.sleep(0.5)  # past keepalive: the idle connection is closed by the client
        assert await post(http, b"keep") == (200, b"ok")
        assert server.connections == 3
        await http.close()


async def test_a_response_dropped_or_cancelled_unreleased_gives_its_pool_slot_back() -> None:
    async def answer_or_hang(request: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        if b"hang" in request:
            await asyncio.sleep(5)
            return False
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nbody")
        await writer.drain()
        return True

    async with ScriptedServer(answer_or_hang) as server:
        http = client(server.port, limit=1, read_timeout=1.0)
        response = await http.send("POST", "/", CIMultiDict(), b"x", decompress=False)
        del response  # never read nor released: the slot comes back with the object
        gc.collect()
        hanging = asyncio.create_task(post(http, b"hang"))
        await asyncio.sleep(0.1)
        hanging.cancel()  # the app hung up while ragtap waited for the headers
        with pytest.raises(asyncio.CancelledError):
            await hanging
        assert await asyncio.wait_for(post(http), 0.9) == (200, b"body")
        await http.close()


async def test_a_large_body_is_buffered_only_up_to_the_pause_mark_while_the_reader_is_slow() -> None:
    size = 8 * upstream_http._PAUSE_AT
    async with ScriptedServer(reply(b"x" * size)) as server:
        http = client(server.port)
        response = await http.send("POST", "/", CIMultiDict(), b"x", decompress=False)
        largest, total = 0, 0
        async for piece in response.iter_any():
            largest, total = max(largest, len(piece)), total + len(piece)
            await asyncio.sleep(0.01)  # a slow app
        response.release()
        await http.close()
    assert total == size
    assert largest <= upstream_http._PAUSE_AT + 256 * 1024  # the mark plus at most one socket read


async def test_a_header_value_with_a_line_break_is_refused_before_anything_is_sent() -> None:
    async with ScriptedServer(reply(b"ok")) as server:
        http = client(server.port)
        with pytest.raises(ValueError, match="line break"):
            await http.send("POST", "/", CIMultiDict({"X-Evil": "a\r\nInjected: 1"}), b"{}", decompress=False)
        assert await post(http) == (200, b"ok")
        await http.close()
    assert all(b"Injected" not in r for r in server.requests)


@pytest.mark.parametrize("method", ["GET", "POST"])
async def test_a_reused_connection_closed_unanswered_is_retried_only_for_an_idempotent_method(method: str) -> None:
    served: dict[int, int] = {}

    async def close_the_second(request: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        served[id(writer)] = served.get(id(writer), 0) + 1
        if served[id(writer)] == 2:
            return False  # the request was read, the connection closes without a byte of answer
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        await writer.drain()
        return True

    async with ScriptedServer(close_the_second) as server:
        http = client(server.port)
        assert await post(http, method="POST") == (200, b"ok")
        if method == "GET":
            assert await post(http, b"", method="GET") == (200, b"ok")  # sent again on a new connection
            assert server.connections == 2
        else:
            with pytest.raises(UpstreamDisconnected):
                await post(http, method="POST")
            assert server.connections == 1  # an LLM call is never sent twice
        await http.close()


async def test_an_https_upstream_is_verified_against_the_trusted_certificates(tmp_path, monkeypatch) -> None:
    """A throw-away certificate for "localhost": refused while untrusted, used once SSL_CERT_FILE names it (the
    standard way to trust a private CA; ssl.create_default_context reads it)."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1",
                    "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True, timeout=30)
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_tls.load_cert_chain(cert, key)
    async with ScriptedServer(reply(b'{"over": "tls"}'), tls=server_tls) as server:
        untrusting = client(server.port, host="localhost", tls=True)
        with pytest.raises(ssl.SSLCertVerificationError):
            await post(untrusting)
        await untrusting.close()
        monkeypatch.setenv("SSL_CERT_FILE", str(cert))
        trusting = client(server.port, host="localhost", tls=True)  # ("localhost" is looked up: ::1 may come first)
        assert await post(trusting) == (200, b'{"over": "tls"}')
        await trusting.close()
    assert server.requests[-1].startswith(b"POST /v1/chat/completions HTTP/1.1\r\nHost: localhost:")


@pytest.mark.parametrize(("base", "raw_path", "target"), [
    ("http://127.0.0.1:9101/v1", "/v1/chat/completions", "/v1/chat/completions"),
    ("https://api.example.com", "/v1/chat/completions", "/chat/completions"),
    ("https://x.openai.azure.com/openai/deployments/d/", "/v1/chat/completions?api-version=2024-10-21",
     "/openai/deployments/d/chat/completions?api-version=2024-10-21"),
    ("http://h/v1", "/v1/files/a%2Fb", "/v1/files/a%2Fb"),  # still encoded: never decoded into a separator
    ("http://h", "/v1", "/"),
])
def test_the_apps_path_maps_onto_the_upstream_base(base: str, raw_path: str, target: str) -> None:
    upstream = UpstreamTarget.parse(base)
    assert upstream.target_for(raw_path) == target
    assert upstream.tls == base.startswith("https")
