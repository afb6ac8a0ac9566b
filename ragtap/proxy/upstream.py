"""The client side: one pooled keep-alive session to the upstream, URL mapping and header hygiene."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

import aiohttp
from multidict import CIMultiDict

from ragtap.proxy.errors import UpstreamUnavailable, openai_error

# Hop-by-hop headers (RFC 9110 §7.6.1) and the ones aiohttp computes itself are never copied across.
_HOP_BY_HOP = frozenset(
    h.lower()
    for h in (
        "Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "TE", "Trailer",
        "Transfer-Encoding", "Upgrade", "Host", "Content-Length",
    )
)
# Headers that are ragtap's own business and must not reach the upstream.
_RAGTAP_REQUEST_HEADERS = frozenset({"x-ragtap-debug"})


def request_headers(incoming: Mapping[str, str], *, identity_encoding: bool) -> CIMultiDict[str]:
    """Headers to send upstream: the client's (Authorization included, untouched), minus hop-by-hop ones.

    When ragtap must read the reply (`identity_encoding`), it asks for an uncompressed body so that it can
    parse and re-serialise it without a decompress/compress round trip.
    """
    out: CIMultiDict[str] = CIMultiDict()
    for name, value in incoming.items():
        lower = name.lower()
        if lower in _HOP_BY_HOP or lower in _RAGTAP_REQUEST_HEADERS:
            continue
        if identity_encoding and lower == "accept-encoding":
            continue
        out.add(name, value)
    if identity_encoding:
        # Say so explicitly: without the header aiohttp adds its default "gzip, deflate" and the upstream compresses.
        out["Accept-Encoding"] = "identity"
    return out


def response_headers(upstream: Mapping[str, str], *, body_rewritten: bool) -> CIMultiDict[str]:
    """Headers to return to the app: the upstream's (rate-limit and request-id headers included)."""
    out: CIMultiDict[str] = CIMultiDict()
    for name, value in upstream.items():
        lower = name.lower()
        if lower in _HOP_BY_HOP:
            continue
        if body_rewritten and lower in ("content-encoding", "content-md5", "etag"):
            continue
        out.add(name, value)
    return out


@dataclass(frozen=True, slots=True)
class UpstreamTarget:
    base_url: str  # e.g. "https://api.openai.com/v1", no trailing slash
    host: str
    port: int

    @classmethod
    def parse(cls, base_url: str) -> UpstreamTarget:
        parts = urlsplit(base_url.rstrip("/"))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"upstream must be an http(s) URL, got {base_url!r}")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        return cls(base_url.rstrip("/"), parts.hostname, port)

    def url_for(self, path: str, query: str = "") -> str:
        """Map the app's path onto the upstream base: "/v1/chat/completions" -> base + "/chat/completions"."""
        if path == "/v1" or path.startswith("/v1/"):
            path = path[3:]
        return f"{self.base_url}{path}" + (f"?{query}" if query else "")


class _BoundedResolver(aiohttp.abc.AbstractResolver):
    """aiohttp's default resolver with each lookup bounded by the connect timeout.  The session's `sock_connect`
    bounds only the TCP connect; without this a resolver that never answers would hold a request forever.  A
    lookup that times out surfaces as a TimeoutError (the app gets 504), a failed one as a DNS error (502)."""

    def __init__(self, timeout: float) -> None:
        self._inner = aiohttp.resolver.DefaultResolver()
        self._timeout = timeout

    async def resolve(self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET) -> list[aiohttp.abc.ResolveResult]:
        async with asyncio.timeout(self._timeout):
            return await self._inner.resolve(host, port, family)

    async def close(self) -> None:
        await self._inner.close()


class Upstream:
    def __init__(
        self, target: UpstreamTarget, *, connect_timeout: float, read_timeout: float, max_connections: int, keepalive: float = 4.0
    ) -> None:
        self.target = target
        self._timeout = aiohttp.ClientTimeout(total=None, sock_connect=connect_timeout, sock_read=read_timeout)
        self._connect_timeout = connect_timeout
        self._keepalive = keepalive
        self._max_connections = max_connections
        self._session: aiohttp.ClientSession | None = None

    async def start(self) -> None:
        connector = aiohttp.TCPConnector(
            limit=self._max_connections, keepalive_timeout=self._keepalive, ttl_dns_cache=300, resolver=_BoundedResolver(self._connect_timeout)
        )
        # auto_decompress is chosen per request: passthrough bodies stay compressed, bytes in = bytes out.
        # No cookie jar: cookies one upstream reply sets (e.g. a CDN's) must not ride along on other apps' requests.
        self._session = aiohttp.ClientSession(
            connector=connector, timeout=self._timeout, auto_decompress=False, cookie_jar=aiohttp.DummyCookieJar()
        )

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def send(
        self, method: str, path: str, query: str, headers: CIMultiDict[str], body: bytes, *, decompress: bool
    ) -> aiohttp.ClientResponse:
        """Send a request and return the response with its headers read (the body is the caller's to read)."""
        assert self._session is not None, "Upstream.start() was not awaited"
        try:
            return await self._session.request(
                method,
                self.target.url_for(path, query),
                headers=headers,
                data=body,
                auto_decompress=decompress,
                allow_redirects=False,
            )
        except asyncio.TimeoutError as error:
            raise UpstreamUnavailable(
                openai_error(504, "ragtap: the upstream did not answer in time", type_="upstream_error", code="upstream_timeout"),
                "timeout",
            ) from error
        except (aiohttp.ClientConnectorError, aiohttp.ClientOSError, aiohttp.ServerDisconnectedError, socket.gaierror) as error:
            raise UpstreamUnavailable(
                openai_error(502, f"ragtap: cannot reach the upstream ({type(error).__name__})", type_="upstream_error", code="upstream_unreachable"),
                type(error).__name__,
            ) from error
        except aiohttp.ClientError as error:
            raise UpstreamUnavailable(
                openai_error(502, f"ragtap: upstream request failed ({type(error).__name__})", type_="upstream_error", code="upstream_error"),
                type(error).__name__,
            ) from error
