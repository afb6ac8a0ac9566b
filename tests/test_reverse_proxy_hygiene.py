"""Issue 13, defects 7, 13 and 14, over real HTTP: ragtap forwards like a careful reverse proxy.

- 7: a gzip request body is forwarded decoded (aiohttp's server decodes it), so its Content-Encoding is dropped;
- 13: a path may not leave the API base (dot segments, encoded slashes), and "%3F"/"%23" stay in the path;
- 14: headers named in Connection / Proxy-Connection are hop-by-hop both ways; Expect is not forwarded.

Raw sockets send the request lines, because an HTTP client library would normalise "/v1/../admin" itself.  The
upstream is a catch-all aiohttp app that records what reached it.
"""

from __future__ import annotations

import asyncio
import gzip
import json

import pytest
from aiohttp import web

from ragtap.config import load_config
from ragtap.proxy.server import RagtapServer

from conftest import ENV


class Recorder:
    """An upstream that answers every route and keeps (method, raw path, headers, body) of each request."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, dict[str, str], bytes]] = []
        self.runner: web.AppRunner | None = None
        self.port = 0

    async def handle(self, request: web.Request) -> web.Response:
        self.seen.append((request.method, request.raw_path, dict(request.headers), await request.read()))
        headers = {"Connection": "keep-alive, X-Upstream-Hop", "X-Upstream-Hop": "secret-hop", "X-Request-Id": "req-1"}
        return web.json_response({"object": "list", "data": []}, headers=headers)

    async def __aenter__(self) -> Recorder:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self.handle)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.runner is not None
        await self.runner.cleanup()


async def raw_request(port: int, head: str, body: bytes = b"", timeout: float = 10.0) -> tuple[int, dict[str, str], bytes]:
    reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), timeout)
    try:
        writer.write(head.replace("\n", "\r\n").encode() + b"\r\n" + body)
        await writer.drain()
        status_line = await asyncio.wait_for(reader.readline(), timeout)
        headers: dict[str, str] = {}
        while (line := await asyncio.wait_for(reader.readline(), timeout)) not in (b"\r\n", b""):
            name, _, value = line.decode().partition(":")
            headers[name.strip().lower()] = value.strip()
        payload = await asyncio.wait_for(reader.readexactly(int(headers.get("content-length", "0"))), timeout)
        return int(status_line.split()[1]), headers, payload
    finally:
        writer.close()


@pytest.fixture
async def rig():  # type: ignore[no-untyped-def]
    async with Recorder() as upstream:
        config = load_config(environ=ENV, flags={"server": {"upstream": f"http://127.0.0.1:{upstream.port}/v1", "port": 0},
                                                 "scoring": {"enabled": False}})
        async with RagtapServer(config) as server:
            yield upstream, server


@pytest.mark.parametrize("path", ["/v1/../admin", "/v1/models/..%2F..%2Fsecret", "/v1/./models", "/v1/models/a%5C..%5Cb"])
async def test_paths_cannot_leave_the_api_base(rig, path: str) -> None:  # type: ignore[no-untyped-def]
    upstream, server = rig
    status, _, body = await raw_request(server.port, f"GET {path} HTTP/1.1\nHost: x\nConnection: close\n")
    assert status == 400 and json.loads(body)["error"]["code"] == "bad_path"
    assert upstream.seen == []


@pytest.mark.parametrize(("path", "expected"), [("/v1/models/a%3Fb", "/v1/models/a%3Fb"), ("/v1/models/a%23b?x=%2F", "/v1/models/a%23b?x=%2F")])
async def test_encoded_characters_stay_in_the_path(rig, path: str, expected: str) -> None:  # type: ignore[no-untyped-def]
    upstream, server = rig
    status, _, _ = await raw_request(server.port, f"GET {path} HTTP/1.1\nHost: x\nConnection: close\n")
    assert status == 200
    assert [raw for _, raw, _, _ in upstream.seen] == [expected]


async def test_gzip_body_is_forwarded_decoded_and_labelled_so(rig) -> None:  # type: ignore[no-untyped-def]
    upstream, server = rig
    payload = json.dumps({"model": "m", "input": "hello"}).encode()
    body = gzip.compress(payload)
    head = f"POST /v1/embeddings HTTP/1.1\nHost: x\nContent-Type: application/json\nContent-Encoding: gzip\nContent-Length: {len(body)}\nConnection: close\n"
    status, _, _ = await raw_request(server.port, head, body)
    assert status == 200
    ((_, _, headers, received),) = upstream.seen
    assert received == payload and "Content-Encoding" not in headers


async def test_connection_named_headers_and_expect_are_hop_by_hop(rig) -> None:  # type: ignore[no-untyped-def]
    upstream, server = rig
    head = ("GET /v1/models HTTP/1.1\nHost: x\nConnection: close, X-Client-Hop\nProxy-Connection: X-Other-Hop\nX-Client-Hop: a\n"
            "X-Other-Hop: b\nX-Kept: c\nAuthorization: Bearer sk-test\n")
    status, headers, _ = await raw_request(server.port, head)
    assert status == 200
    ((_, _, sent, _),) = upstream.seen
    lowered = {k.lower() for k in sent}
    assert {"x-client-hop", "x-other-hop", "proxy-connection"}.isdisjoint(lowered)
    assert sent["X-Kept"] == "c" and sent["Authorization"] == "Bearer sk-test"
    # and on the way back: the upstream's Connection-named header does not reach the app
    assert "x-upstream-hop" not in headers and headers["x-request-id"] == "req-1"


async def test_expect_100_continue_is_not_forwarded(rig) -> None:  # type: ignore[no-untyped-def]
    upstream, server = rig
    body = b'{"model": "m", "input": "x"}'
    head = f"POST /v1/embeddings HTTP/1.1\nHost: x\nContent-Type: application/json\nContent-Length: {len(body)}\nExpect: 100-continue\nConnection: close\n"
    reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", server.port), 10)
    try:
        writer.write(head.replace("\n", "\r\n").encode() + b"\r\n")
        await writer.drain()
        assert (await asyncio.wait_for(reader.readline(), 10)).startswith(b"HTTP/1.1 100")  # ragtap's own go-ahead
        await asyncio.wait_for(reader.readline(), 10)
        writer.write(body)
        await writer.drain()
        assert (await asyncio.wait_for(reader.readline(), 10)).split()[1] == b"200"
    finally:
        writer.close()
    ((_, _, sent, received),) = upstream.seen
    assert received == body and "expect" not in {k.lower() for k in sent}
