"""Issue 7, faults of the upstream, over real HTTP: ragtap between an aiohttp client and `FaultUpstream`.

`FaultUpstream` is an OpenAI-compatible upstream written on raw asyncio streams, so each fault is exact (a
connection closed before the status line, a body cut at byte N, a reset, a stream that stalls) and so it knows
which of its connections are idle and which are still busy.  The fault is chosen per request with the
`x-fault` header (ragtap forwards request headers unchanged).

The rule under test: the app sees exactly what it would see without ragtap (same status, headers, body bytes),
or a clean OpenAI-style 502/504 when the upstream itself failed; nothing hangs; after a storm of faulty
requests the process's file descriptors and asyncio tasks return to their baseline.
The table of faults and the expected outcome of each is in docs/reliability.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest
from multidict import CIMultiDict

from ragtap.config import load_config
from ragtap.proxy import upstream_http
from ragtap.proxy.server import RagtapServer
from ragtap.testing.upstream import INJECTION_MARKER, sse_bytes

from conftest import ENV, Collector, explicit, free_port, json_content, rag_messages

MODEL = "gpt-4o-mini"
RATE_HEADERS = {"x-ratelimit-limit-requests": "500", "x-ratelimit-remaining-requests": "0", "retry-after": "2", "x-request-id": "req-fault"}
PLAIN_ANSWER = "The answer."

# --------------------------------------------------------------------------------------------------------------
# The fault upstream
# --------------------------------------------------------------------------------------------------------------

_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 413: "Payload Too Large",
            429: "Too Many Requests", 500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable"}


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class _Conn:
    writer: asyncio.StreamWriter
    busy: bool = False


def _head(status: int, headers: dict[str, str]) -> bytes:
    lines = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}"] + [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def error_body(status: int) -> bytes:
    return json.dumps({"error": {"message": f"upstream says {status}", "type": "invalid_request_error" if status < 500 else "server_error",
                                 "param": None, "code": f"code_{status}"}}).encode()


def completion(content: str, model: str = MODEL, usage: Any = None) -> bytes:
    usage = usage if usage is not None else {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    return json.dumps({
        "id": "chatcmpl-fault", "object": "chat.completion", "created": 1, "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content, "refusal": None}, "logprobs": None, "finish_reason": "stop"}],
        "usage": usage,
    }, ensure_ascii=False).encode()


class FaultUpstream:
    """See the module docstring.  `content` (a string or a function of the request body) is the model's reply when
    set; by default the reply is JSON when ragtap injected its instruction, plain text otherwise."""

    def __init__(self) -> None:
        self.requests: list[Received] = []
        self.content: str | Callable[[dict[str, Any]], str] | None = None
        self.usage: Any = None
        self.piece_chars = 4
        self.read_timeout_s = 30.0  # the longest a stalled response waits for the peer (bounded)
        self._conns: dict[asyncio.StreamWriter, _Conn] = {}
        self.accepted = 0  # connections accepted so far
        self._server: asyncio.Server | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def open_connections(self) -> int:
        return len(self._conns)

    @property
    def busy_connections(self) -> int:
        return sum(1 for c in self._conns.values() if c.busy)

    async def start(self) -> FaultUpstream:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            for conn in list(self._conns.values()):
                conn.writer.close()
            await self._server.wait_closed()
            self._server = None

    def close_idle(self) -> None:
        """Close the keep-alive connections waiting for a next request (the client's pool sees them close)."""
        for conn in list(self._conns.values()):
            if not conn.busy:
                conn.writer.close()

    async def __aenter__(self) -> FaultUpstream:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- connection loop ---------------------------------------------------------------------------------------
    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = self._conns[writer] = _Conn(writer)
        self.accepted += 1
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                    return
                conn.busy = True
                lines = head.decode("latin-1").split("\r\n")
                method, target, _ = lines[0].split(" ", 2)
                headers = {}
                for line in lines[1:]:
                    if ":" in line:
                        name, value = line.split(":", 1)
                        headers[name.strip().lower()] = value.strip()
                body = await self._read_body(reader, headers)
                self.requests.append(Received(method, target.split("?", 1)[0], headers, body))
                keep = await self._respond(method, target.split("?", 1)[0], headers, body, reader, writer)
                if not keep:
                    return
                conn.busy = False
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            self._conns.pop(writer, None)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    @staticmethod
    async def _read_body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
        if "content-length" in headers:
            return await reader.readexactly(int(headers["content-length"]))
        if headers.get("transfer-encoding", "").lower() == "chunked":
            parts = []
            while True:
                size = int((await reader.readuntil(b"\r\n")).strip().split(b";")[0], 16)
                data = await reader.readexactly(size + 2)
                if size == 0:
                    return b"".join(parts)
                parts.append(data[:-2])
        return b""

    async def _wait_for_peer(self, reader: asyncio.StreamReader) -> None:
        """Stall: hold the connection until the peer closes it (bounded)."""
        with contextlib.suppress(TimeoutError, ConnectionError):
            async with asyncio.timeout(self.read_timeout_s):
                while await reader.read(65536):
                    pass

    def _reply_content(self, body: dict[str, Any]) -> str:
        if self.content is not None:
            return self.content(body) if callable(self.content) else self.content
        injected = any(isinstance(m, dict) and m.get("role") == "system" and INJECTION_MARKER in str(m.get("content"))
                       for m in body.get("messages", []) if isinstance(body.get("messages"), list))
        return json_content() if injected else PLAIN_ANSWER

    async def _respond(self, method: str, path: str, headers: dict[str, str], raw: bytes,
                       reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        fault = headers.get("x-fault", "ok")
        if fault.startswith("slow:"):
            await asyncio.sleep(float(fault.split(":", 1)[1]))
            fault = "ok"
        if fault == "close":
            return False
        if fault == "reset":
            writer.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()
            return False
        if fault == "stall":
            await self._wait_for_peer(reader)
            return False
        if fault == "garbage":
            writer.write(b"THIS IS NOT HTTP\r\n\r\n")
            await writer.drain()
            return False
        if fault.startswith("status:"):
            status = int(fault.split(":", 1)[1])
            payload = error_body(status)
            writer.write(_head(status, {"Content-Type": "application/json", "Content-Length": str(len(payload)), **RATE_HEADERS}) + payload)
            await writer.drain()
            return True
        if fault == "html":
            payload = b"<html><body>502 Bad Gateway (but sent with 200)</body></html>"
            writer.write(_head(200, {"Content-Type": "text/html", "Content-Length": str(len(payload))}) + payload)
            await writer.drain()
            return True

        # The normal answer for the route, possibly broken by the fault.
        body: dict[str, Any] = {}
        if path.endswith("/chat/completions"):
            try:
                decoded = json.loads(raw)
            except (ValueError, UnicodeDecodeError, RecursionError):
                decoded = None
            if not isinstance(decoded, dict) or not isinstance(decoded.get("messages"), list):
                # What api.openai.com does with a request it cannot read: 400, never 500.
                payload = json.dumps({"error": {"message": "We could not parse the JSON body of your request.", "type": "invalid_request_error",
                                                "param": None, "code": None}}).encode()
                writer.write(_head(400, {"Content-Type": "application/json", "Content-Length": str(len(payload))}) + payload)
                await writer.drain()
                return True
            body = decoded
            if body.get("stream") is True or fault in ("cut-stream", "stall-stream", "trickle"):
                return await self._stream(body, fault, reader, writer)
            payload = completion(self._reply_content(body), str(body.get("model", MODEL)), self.usage)
        elif path.endswith("/models"):
            payload = json.dumps({"object": "list", "data": [{"id": MODEL, "object": "model", "created": 0, "owned_by": "fault"}]}).encode()
        elif path.endswith("/embeddings"):
            payload = json.dumps({"object": "list", "data": [{"object": "embedding", "index": 0, "embedding": [0.1, 0.2]}], "model": "e",
                                  "usage": {"prompt_tokens": 1, "total_tokens": 1}}).encode()
        else:
            payload = json.dumps({"error": {"message": f"Invalid URL ({method} {path})", "type": "invalid_request_error", "param": None, "code": None}}).encode()
            writer.write(_head(404, {"Content-Type": "application/json", "Content-Length": str(len(payload))}) + payload)
            await writer.drain()
            return True

        if fault in ("cut-body", "stall-body"):
            writer.write(_head(200, {"Content-Type": "application/json", "Content-Length": str(len(payload))}) + payload[: len(payload) // 2])
            await writer.drain()
            if fault == "stall-body":
                await self._wait_for_peer(reader)
            return False
        if fault == "cut-chunked":
            writer.write(_head(200, {"Content-Type": "application/json", "Transfer-Encoding": "chunked"}) + _chunk(payload[: len(payload) // 2]))
            await writer.drain()
            return False
        if fault == "chunked":
            writer.write(_head(200, {"Content-Type": "application/json", "Transfer-Encoding": "chunked"}) + _chunk(payload) + b"0\r\n\r\n")
            await writer.drain()
            return True
        writer.write(_head(200, {"Content-Type": "application/json", "Content-Length": str(len(payload)), **RATE_HEADERS}) + payload)
        await writer.drain()
        return True

    async def _stream(self, body: dict[str, Any], fault: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        include_usage = bool((body.get("stream_options") or {}).get("include_usage")) if isinstance(body.get("stream_options"), dict) else False
        data = sse_bytes("chatcmpl-fault", str(body.get("model", MODEL)), self._reply_content(body), "stop",
                         {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15} if include_usage else None, self.piece_chars)
        events = [e + b"\n\n" for e in data.split(b"\n\n") if e]
        writer.write(_head(200, {"Content-Type": "text/event-stream", "Transfer-Encoding": "chunked", "Cache-Control": "no-cache", **RATE_HEADERS}))
        if fault == "cut-stream":
            writer.write(_chunk(b"".join(events[:3]) + events[3][:10]))
            await writer.drain()
            return False
        if fault == "stall-stream":
            writer.write(_chunk(b"".join(events[:3])))
            await writer.drain()
            await self._wait_for_peer(reader)
            return False
        if fault == "trickle":  # an endless stream: one event every 50 ms, until the peer goes (bounded: 30 s)
            writer.write(_chunk(events[0]))
            for _ in range(600):
                writer.write(_chunk(events[1]))
                await writer.drain()
                try:
                    async with asyncio.timeout(0.05):
                        if not await reader.read(65536):
                            return False
                except TimeoutError:
                    pass
            return False
        for event in events:
            writer.write(_chunk(event))
            await writer.drain()
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        return True


# --------------------------------------------------------------------------------------------------------------
# The rig: FaultUpstream -> ragtap (in-process) -> an aiohttp client
# --------------------------------------------------------------------------------------------------------------


@dataclass
class Result:
    status: int | None
    headers: CIMultiDict[str]
    body: bytes
    error: BaseException | None
    seconds: float

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Rig:
    upstream: FaultUpstream
    server: RagtapServer
    collector: Collector
    session: aiohttp.ClientSession
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.port}"

    async def call(self, path: str, body: Any = None, *, fault: str | None = None, method: str = "POST", raw: bytes | None = None,
                   headers: dict[str, str] | None = None, base: str | None = None, read_for: float | None = None) -> Result:
        return await request(self.session, (base or self.url) + path, body, fault=fault, method=method, raw=raw, headers=headers, read_for=read_for)


async def request(session: aiohttp.ClientSession, url: str, body: Any = None, *, fault: str | None = None, method: str = "POST",
                  raw: bytes | None = None, headers: dict[str, str] | None = None, read_for: float | None = None) -> Result:
    """One request; whatever happens (an HTTP status, a broken body) is returned, never raised."""
    sent = {"Authorization": "Bearer sk-test-key", "Content-Type": "application/json", **(headers or {})}
    if fault:
        sent["x-fault"] = fault
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    started = time.perf_counter()
    status, got, parts = None, CIMultiDict(), []
    try:
        async with session.request(method, url, data=data, headers=sent) as response:
            status, got = response.status, CIMultiDict(response.headers)
            if read_for is not None:  # read for a while, then hang up (a client that gives up)
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(read_for):
                        async for chunk in response.content.iter_any():
                            parts.append(chunk)
                response.close()
            else:
                async for chunk in response.content.iter_any():
                    parts.append(chunk)
    except (aiohttp.ClientError, asyncio.TimeoutError, ConnectionError) as error:
        return Result(status, got, b"".join(parts), error, time.perf_counter() - started)
    return Result(status, got, b"".join(parts), None, time.perf_counter() - started)


def chat(kind: str, *, stream: bool = False, **extra: Any) -> dict[str, Any]:
    """A chat body: kind "rag" (explicit ragtap field: injected) or "plain" (not RAG: forwarded byte for byte)."""
    body: dict[str, Any] = {"model": MODEL, "messages": rag_messages() if kind == "rag" else [{"role": "user", "content": "Hello there"}]}
    if stream:
        body["stream"] = True
    if kind == "rag":
        body.update(explicit())
    body.update(extra)
    return body


READ_TIMEOUT = 0.4
CONNECT_TIMEOUT = 0.4


@contextlib.asynccontextmanager
async def rig_context(embedder: Any, flags: dict[str, dict[str, Any]] | None = None, upstream_url: str | None = None,
                      exporters: list[Any] | None = None, limit: int = 100):  # type: ignore[no-untyped-def]
    async with FaultUpstream() as upstream:
        base: dict[str, dict[str, Any]] = {"server": {"upstream": upstream_url or upstream.base_url, "host": "127.0.0.1", "port": 0,
                                                      "read_timeout_s": READ_TIMEOUT, "connect_timeout_s": CONNECT_TIMEOUT,
                                                      "shutdown_grace_s": 2.0},
                                           # the store (on by default) opens its files lazily, mid-test: these tests
                                           # count file descriptors; the store's faults are tests/test_store_faults.py's
                                           "store": {"path": ""}}
        for section, values in (flags or {}).items():
            base.setdefault(section, {}).update(values)
        config = load_config(flags=base, environ=ENV)
        collector = Collector()
        server = RagtapServer(config, embedder=embedder, exporters=[collector, *(exporters or [])])
        async with server:
            connector = aiohttp.TCPConnector(limit=limit)
            async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=20)) as session:
                yield Rig(upstream, server, collector, session)


@pytest.fixture
async def rig(embedder):  # type: ignore[no-untyped-def]
    async with rig_context(embedder) as r:
        yield r


def assert_openai_error(result: Result, status: int, code: str) -> None:
    assert result.error is None, result.error
    assert result.status == status, (result.status, result.body[:300])
    assert result.headers.get("Content-Type", "").startswith("application/json")
    error = result.json()["error"]
    assert error["code"] == code and error["type"] == "upstream_error" and error["message"].startswith("ragtap:")


KINDS = ["rag", "plain", "rag-stream", "plain-stream", "embeddings"]


def target(kind: str) -> tuple[str, dict[str, Any]]:
    if kind == "embeddings":
        return "/v1/embeddings", {"model": "text-embedding-3-small", "input": "hello"}
    name, _, stream = kind.partition("-")
    return "/v1/chat/completions", chat(name, stream=bool(stream))


# --------------------------------------------------------------------------------------------------------------
# 1. The upstream answers with an error: same status, same body bytes, same rate-limit headers
# --------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [400, 401, 404, 429, 500, 503])
async def test_upstream_error_status_body_and_rate_limit_headers_pass_through(rig, status) -> None:
    for kind in KINDS:
        path, body = target(kind)
        via = await rig.call(path, body, fault=f"status:{status}")
        direct = await rig.call(path, body, fault=f"status:{status}", base=f"http://127.0.0.1:{rig.upstream.port}")
        assert (via.status, via.body) == (direct.status, direct.body) == (status, error_body(status)), kind
        for name, value in RATE_HEADERS.items():
            assert via.headers[name] == value, (kind, name)


async def test_reply_that_is_not_json_reaches_the_app_unchanged(rig) -> None:
    for kind in KINDS:
        path, body = target(kind)
        via = await rig.call(path, body, fault="html")
        direct = await rig.call(path, body, fault="html", base=f"http://127.0.0.1:{rig.upstream.port}")
        assert via.error is None and (via.status, via.body) == (direct.status, direct.body), kind
        assert via.headers["Content-Type"] == "text/html", kind
    # The injected-but-unreadable replies are recorded as unscored, not as errors.
    await rig.collector.wait_until(lambda: len(rig.collector.scored) >= 2, 10, "two unscored interactions")
    assert {i.unscored_reason for i, _ in rig.collector.scored} == {"upstream_not_json"}


async def test_usage_that_is_not_a_number_does_not_break_the_exporters(rig) -> None:
    rig.upstream.usage = {"prompt_tokens": "many", "completion_tokens": {"x": 1}, "total_tokens": None}
    for kind in ("rag", "plain"):
        path, body = target(kind)
        result = await rig.call(path, body)
        assert result.status == 200
    record = await rig.collector.exchange(1)
    assert record.input_tokens is None and record.output_tokens is None
    assert rig.server.state.exporter.errors == 0


# --------------------------------------------------------------------------------------------------------------
# 2. The upstream cannot be reached: refused, DNS, connect timeout, hanging resolver
# --------------------------------------------------------------------------------------------------------------


async def test_connection_refused_gives_502_fast(embedder) -> None:
    async with rig_context(embedder, upstream_url=f"http://127.0.0.1:{free_port()}/v1") as rig:
        for kind in KINDS:
            result = await rig.call(*target(kind))
            assert_openai_error(result, 502, "upstream_unreachable")
            assert result.seconds < 1.0


async def test_dns_failure_gives_502_fast(embedder) -> None:
    """A name under .invalid (RFC 6761) never resolves: the local resolver answers NXDOMAIN at once (measured here
    at ~10 ms); a resolver that hangs instead is bounded by the connect timeout (next test)."""
    async with rig_context(embedder, upstream_url="http://ragtap-upstream.invalid/v1") as rig:
        for kind in ("rag", "plain", "embeddings"):
            result = await rig.call(*target(kind))
            assert_openai_error(result, 502, "upstream_unreachable")
            assert "DNS" in result.json()["error"]["message"]
            assert result.seconds < CONNECT_TIMEOUT + 1.0


async def test_hanging_resolver_is_bounded_by_the_connect_timeout(embedder, monkeypatch) -> None:
    async def never(loop, host, port):  # type: ignore[no-untyped-def]
        await asyncio.sleep(30)

    async with rig_context(embedder, upstream_url="http://ragtap-upstream.invalid/v1") as rig:
        monkeypatch.setattr(upstream_http, "lookup", never)
        results = await asyncio.gather(*[rig.call(*target(kind)) for kind in ("rag", "plain", "embeddings")])
        for result in results:
            assert_openai_error(result, 504, "upstream_timeout")
            assert CONNECT_TIMEOUT * 0.9 < result.seconds < CONNECT_TIMEOUT + 1.0


@contextlib.contextmanager
def unanswered_port():  # type: ignore[no-untyped-def]
    """A port whose SYNs go unanswered: a listener with a full accept queue (backlog 0, one connection parked)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    parked = socket.create_connection(("127.0.0.1", port))
    try:
        yield port
    finally:
        parked.close()
        listener.close()


async def test_connect_timeout_gives_504(embedder) -> None:
    with unanswered_port() as port:
        async with rig_context(embedder, upstream_url=f"http://127.0.0.1:{port}/v1") as rig:
            results = await asyncio.gather(*[rig.call(*target(kind)) for kind in ("rag", "plain", "rag-stream", "embeddings")])
    for result in results:
        assert_openai_error(result, 504, "upstream_timeout")
        assert CONNECT_TIMEOUT * 0.9 < result.seconds < CONNECT_TIMEOUT + 1.0


# --------------------------------------------------------------------------------------------------------------
# 3. The upstream breaks off or stops answering
# --------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fault", ["close", "reset", "garbage"])
async def test_upstream_gone_before_the_status_line_gives_502(rig, fault) -> None:
    for kind in KINDS:
        result = await rig.call(*target(kind), fault=fault)
        assert result.error is None and result.status == 502, (kind, result)
        assert result.json()["error"]["type"] == "upstream_error"
        assert result.seconds < 1.0


async def test_read_timeout_before_the_headers_gives_504(rig) -> None:
    results = await asyncio.gather(*[rig.call(*target(kind), fault="stall") for kind in KINDS])
    for kind, result in zip(KINDS, results):
        assert_openai_error(result, 504, "upstream_timeout")
        assert READ_TIMEOUT * 0.9 < result.seconds < READ_TIMEOUT + 1.0, kind


async def test_body_cut_mid_way_gives_502_when_nothing_was_sent_yet(rig) -> None:
    """A JSON reply with a Content-Length, cut half way: ragtap reads such bodies whole, so the app gets a clean 502."""
    for kind in ("rag", "plain", "embeddings"):
        result = await rig.call(*target(kind), fault="cut-body")
        assert_openai_error(result, 502, "upstream_broken_response")


async def test_body_stalled_mid_way_gives_504(rig) -> None:
    results = await asyncio.gather(*[rig.call(*target(kind), fault="stall-body") for kind in ("rag", "plain", "embeddings")])
    for result in results:
        assert_openai_error(result, 504, "upstream_timeout")
        assert result.seconds < READ_TIMEOUT + 1.0


async def test_chunked_body_cut_mid_way_breaks_the_apps_connection_as_it_would_directly(rig) -> None:
    """A chunked (unknown-length) body is relayed as it arrives; cut mid-way, the app must not receive it as a
    complete body: its connection breaks, exactly as it would talking to the upstream directly."""
    for kind in ("plain", "embeddings"):
        path, body = target(kind)
        via = await rig.call(path, body, fault="cut-chunked")
        direct = await rig.call(path, body, fault="cut-chunked", base=f"http://127.0.0.1:{rig.upstream.port}")
        assert isinstance(direct.error, aiohttp.ClientPayloadError), direct
        assert isinstance(via.error, aiohttp.ClientPayloadError), via
        assert via.status == direct.status == 200
        assert direct.body.startswith(via.body)
    # An injected (RAG) reply is read whole before anything is sent: a clean 502 instead.
    result = await rig.call(*target("rag"), fault="cut-chunked")
    assert_openai_error(result, 502, "upstream_broken_response")
    # A complete chunked reply is of course fine.
    assert (await rig.call(*target("plain"), fault="chunked")).status == 200


def _ends_cleanly(result: Result) -> None:
    assert result.error is None and result.status == 200, result


@pytest.mark.parametrize("fault", ["cut-stream", "stall-stream"])
async def test_stream_broken_or_stalled_mid_way_ends_cleanly(rig, fault) -> None:
    """Mid-stream the status line is gone: the app gets the events so far, then a clean end -- for an injected
    stream the answer so far and `[DONE]`; a stream ragtap does not rewrite is cut where the upstream's bytes
    stopped.  A stall is bounded by the read timeout."""
    results = await asyncio.gather(*[rig.call(*target(kind), fault=fault) for kind in ("rag-stream", "plain-stream")])
    injected, plain = results
    for result in results:
        _ends_cleanly(result)
        assert result.seconds < READ_TIMEOUT + 1.0
    assert injected.body.endswith(b"data: [DONE]\n\n")
    assert plain.body.startswith(b"data: ") and b"[DONE]" not in plain.body
    await rig.collector.wait_until(lambda: len(rig.collector.finished) >= 2, 5, "two records")
    assert {r.outcome for r in rig.collector.finished} == {"upstream_error"}


async def test_endless_stream_ends_when_the_app_hangs_up_and_frees_the_upstream_connection(rig) -> None:
    """An upstream that never stops (an event every 50 ms, faster than the read timeout) is bounded by the app's
    own patience, as it would be without ragtap: when the app hangs up, ragtap closes the upstream connection."""
    results = await asyncio.gather(*[rig.call(*target(kind), fault="trickle", read_for=0.5) for kind in ("rag-stream", "plain-stream")])
    for result in results:
        assert result.status == 200 and result.body.startswith(b"data: ")
    deadline = time.monotonic() + 5
    while rig.upstream.busy_connections and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    assert rig.upstream.busy_connections == 0


# --------------------------------------------------------------------------------------------------------------
# 4. A storm of faults: nothing hangs, nothing leaks
# --------------------------------------------------------------------------------------------------------------

STORM = [
    # (kind, fault, acceptable outcomes: statuses, or "broken" for a connection broken like the upstream's)
    ("rag", None, {200}), ("plain", None, {200}), ("rag-stream", None, {200}), ("plain-stream", None, {200}),
    ("embeddings", None, {200}), ("rag", "status:429", {429}), ("plain-stream", "status:500", {500}),
    ("rag", "html", {200}), ("rag", "close", {502}), ("plain", "reset", {502}), ("embeddings", "garbage", {502}),
    ("rag", "stall", {504}), ("plain-stream", "stall", {504}), ("rag", "cut-body", {502}), ("plain", "stall-body", {504}),
    ("plain", "cut-chunked", {"broken"}), ("rag-stream", "cut-stream", {200}), ("plain-stream", "cut-stream", {200}),
    ("rag-stream", "stall-stream", {200}), ("plain-stream", "trickle", {200}), ("rag-stream", "trickle", {200}),
]


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


async def _settle(rig: Rig) -> None:
    """Let keep-alive connections go: the upstream closes its idle ones, ragtap's pool sees them close."""
    for _ in range(3):
        rig.upstream.close_idle()
        await asyncio.sleep(0.05)


@pytest.mark.slow
async def test_fault_storm_leaves_no_task_or_connection_behind(embedder) -> None:
    # The upstream, ragtap and the client share this process's event loop, so each fault's outcome is decided by the
    # read timeout against how fast this process runs.  On a loaded machine a normal reply took longer than the
    # module's 0.4 s (load 8, stress --cpu 2), and even 5 s while the scoring thread's claim checks held the GIL: so
    # a 5 s timeout, and scoring off (this test is about tasks and connections; scoring has tests of its own).  The
    # connect timeout too: in the full suite a 0.4 s connect to 127.0.0.1 timed out (a "cut-chunked" came back 504)
    # while this process's loop, which also accepts for the upstream, was held up.
    async with rig_context(embedder, flags={"server": {"read_timeout_s": 5.0, "connect_timeout_s": 5.0}, "scoring": {"enabled": False}},
                           limit=40) as rig:
        for kind in KINDS:  # warm up every path once, so the baseline includes lazily created things
            assert (await rig.call(*target(kind))).status == 200
        await rig.session.close()
        deadline = time.monotonic() + 10
        await _settle(rig)
        while rig.upstream.open_connections and time.monotonic() < deadline:  # the baseline: every connection closed
            await _settle(rig)
        fds_before, tasks_before = _fds(), len(asyncio.all_tasks())

        session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=40), timeout=aiohttp.ClientTimeout(total=20))
        semaphore = asyncio.Semaphore(40)
        outcomes: list[tuple[str, str | None, Any]] = []

        async def one(i: int) -> None:
            kind, fault, _ = STORM[i % len(STORM)]
            async with semaphore:
                read_for = 0.3 if fault == "trickle" else None
                result = await request(session, rig.url + target(kind)[0], target(kind)[1], fault=fault, read_for=read_for)
            broken = isinstance(result.error, aiohttp.ClientPayloadError)
            outcomes.append((kind, fault, "broken" if broken else result.status))

        total = 300
        async with asyncio.timeout(120):  # nothing may hang
            await asyncio.gather(*[one(i) for i in range(total)])
        await session.close()
        assert len(outcomes) == total
        for kind, fault, outcome in outcomes:
            expected = next(e for k, f, e in STORM if (k, f) == (kind, fault))
            assert outcome in expected, (kind, fault, outcome)

        # Back to the baseline (bounded wait): every socket closed or back in the upstream's idle set, which
        # `_settle` closes; every handler task finished.
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            await _settle(rig)
            if _fds() <= fds_before and len(asyncio.all_tasks()) <= tasks_before and rig.upstream.open_connections == 0:
                break
            await asyncio.sleep(0.1)
        assert rig.upstream.open_connections == 0
        assert _fds() <= fds_before, (_fds(), fds_before, sorted(os.readlink(f"/proc/self/fd/{fd}") for fd in os.listdir("/proc/self/fd")))
        assert len(asyncio.all_tasks()) <= tasks_before, [t.get_name() + " " + repr(t.get_coro()) for t in asyncio.all_tasks()]
        assert rig.server.state.upstream.connections_in_use == 0, "connections acquired from ragtap's pool and never released"
        await rig.collector.wait_until(lambda: len(rig.collector.finished) >= 200, 10, "exchange records")


# --------------------------------------------------------------------------------------------------------------
# 5. Keep-alive: a pooled connection is not reused once the upstream may be closing it
# --------------------------------------------------------------------------------------------------------------


async def test_idle_pooled_connection_is_not_reused_after_upstream_keepalive_s(embedder) -> None:
    keepalive = 1.0  # wide enough that the second call comes within it even on a loaded machine
    async with rig_context(embedder, flags={"server": {"upstream_keepalive_s": keepalive}}) as rig:
        assert (await rig.call(*target("plain"))).status == 200
        first = rig.upstream.accepted
        released_at = time.monotonic()
        assert (await rig.call(*target("plain"))).status == 200  # at once
        assert time.monotonic() - released_at < keepalive, "the machine stalled for the whole keep-alive: the test proves nothing"
        assert rig.upstream.accepted == first  # reused while fresh
        # Waiting for the keep-alive to run out is the condition itself (a clock, not a guess about another task).
        await asyncio.sleep(keepalive * 1.5)
        assert (await rig.call(*target("plain"))).status == 200
        assert rig.upstream.accepted == first + 1  # idle too long: a new connection


async def test_no_502_when_the_upstream_closes_idle_connections_as_requests_arrive(embedder) -> None:
    """An upstream that closes idle keep-alive connections after 50 ms (as uvicorn does after 5 s), and requests
    that arrive just as it does: with ragtap's pool idle time below the upstream's, no request goes out on a
    closing connection.  (With a 30 s pool against a 5 s-style upstream, such requests got 502: 9 in 200 in
    the measurement in docs/reliability.md.)"""
    from aiohttp import web

    async def handler(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(body=completion("hi"), content_type="application/json")

    app = web.Application()
    app.router.add_post("/v1/chat/completions", handler)
    runner = web.AppRunner(app, access_log=None, keepalive_timeout=0.05)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        async with rig_context(embedder, upstream_url=f"http://127.0.0.1:{port}/v1", flags={"server": {"upstream_keepalive_s": 0.02}}) as rig:
            statuses = []
            for i in range(40):
                statuses.append((await rig.call(*target("plain"))).status)
                await asyncio.sleep(0.05 + (i % 5 - 2) * 0.001)
            assert statuses == [200] * 40
    finally:
        await runner.cleanup()


# --------------------------------------------------------------------------------------------------------------
# 6. The app hangs up while the upstream is still working: the upstream request is dropped too
# --------------------------------------------------------------------------------------------------------------


async def test_app_hanging_up_closes_the_upstream_request(embedder) -> None:
    """Without ragtap, an app that gives up closes its connection to the upstream (vLLM then stops generating).
    Through ragtap the same must happen: the handler is cancelled and ragtap's upstream connection closed at
    once, not after the upstream's answer or the read timeout (30 s here)."""
    async with rig_context(embedder, flags={"server": {"read_timeout_s": 30.0}}) as rig:
        impatient = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=0.3))
        try:
            results = await asyncio.gather(*[request(impatient, rig.url + target(kind)[0], target(kind)[1], fault="stall") for kind in KINDS])
        finally:
            await impatient.close()
        assert all(isinstance(r.error, asyncio.TimeoutError) for r in results), results
        deadline = time.monotonic() + 3
        while rig.upstream.busy_connections and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        assert rig.upstream.busy_connections == 0
        await rig.collector.wait_until(lambda: len(rig.collector.finished) >= 4 and len(rig.collector.passthrough) >= 1, 3, "records")
        assert {r.outcome for r in rig.collector.finished + rig.collector.passthrough} == {"incomplete"}
        assert (await rig.call(*target("rag"))).status == 200  # and ragtap carries on
