"""The client side: the one upstream (pooled keep-alive connections: `upstream_http`), URL mapping and header hygiene."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import urlsplit

from multidict import CIMultiDict, CIMultiDictProxy, istr

from ragtap.proxy.errors import BadPath, UpstreamUnavailable, openai_error
from ragtap.proxy.upstream_http import HttpClient, UpstreamBroke, UpstreamDisconnected, UpstreamResponse

# Hop-by-hop headers (RFC 9110 §7.6.1; Proxy-Connection is the pre-standard one clients still send) and the ones
# the client computes itself (Host, Content-Length) are never copied across; neither is any header the Connection header names.
_HOP_BY_HOP = frozenset(
    h.lower()
    for h in (
        "Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "TE", "Trailer",
        "Transfer-Encoding", "Upgrade", "Host", "Content-Length",
    )
)
# Request only: ragtap has read the whole body already (Expect: 100-continue would make the upstream wait for a
# go-ahead nobody sends), and aiohttp's server has decoded a gzip/deflate body, so its Content-Encoding no longer
# describes what is forwarded.
_REQUEST_ONLY = frozenset({"expect", "content-encoding"})


def _connection_named(headers: Mapping[str, str]) -> frozenset[str]:
    """Header names listed in Connection / Proxy-Connection: hop-by-hop by declaration (RFC 9110 §7.6.1)."""
    named: set[str] = set()
    multi = isinstance(headers, _MULTIDICTS)
    for key in _CONNECTION_HEADERS:
        if key not in headers:  # (most requests have one of the two at most)
            continue
        values = headers.getall(key, []) if multi else [headers.get(key) or ""]  # type: ignore[attr-defined]
        for value in values:
            named.update(token.strip().lower() for token in value.split(",") if token.strip())
    return frozenset(named)


_MULTIDICTS = (CIMultiDict, CIMultiDictProxy)
# (Header names as `istr`: a case-insensitive multidict looks them up without lower-casing them first, ~10% of a
# header copy.)
_CONNECTION_HEADERS = (istr("Connection"), istr("Proxy-Connection"))
# Headers that are ragtap's own business and must not reach the upstream.
_RAGTAP_REQUEST_HEADERS = frozenset({"x-ragtap-debug", "x-ragtap-guard"})
# What is never forwarded upstream; and, when ragtap reads the reply, the app's Accept-Encoding too.
_NOT_FORWARDED = frozenset(istr(h) for h in _HOP_BY_HOP | _REQUEST_ONLY | _RAGTAP_REQUEST_HEADERS)
_NOT_FORWARDED_READ = _NOT_FORWARDED | {istr("accept-encoding")}
# What is never returned to the app; and, when ragtap rewrote the body, what described the upstream's bytes.
_NOT_RETURNED = frozenset(istr(h) for h in _HOP_BY_HOP)
_NOT_RETURNED_REWRITTEN = _NOT_RETURNED | {istr("content-encoding"), istr("content-md5"), istr("etag")}


def _copy(headers: Mapping[str, str], dropped: frozenset[str]) -> CIMultiDict[str]:
    """`headers` without the `dropped` names (lower case) and without those their Connection header names.
    (Copied whole in C, then the dropped names that are present deleted: 0.7 us against 1.2 us for a filtered
    copy that lower-cases every name in Python; the order and repeated headers are kept alike.)"""
    named = _connection_named(headers)
    if named:
        dropped = dropped | named
    out = CIMultiDict(headers)
    for name in dropped:
        if name in out:
            del out[name]
    return out


def request_headers(incoming: Mapping[str, str], *, identity_encoding: bool) -> CIMultiDict[str]:
    """Headers to send upstream: the client's (Authorization included, untouched), minus hop-by-hop ones.

    When ragtap must read the reply (`identity_encoding`), it asks for an uncompressed body so that it can
    parse and re-serialise it without a decompress/compress round trip.
    """
    out = _copy(incoming, _NOT_FORWARDED_READ if identity_encoding else _NOT_FORWARDED)
    if identity_encoding:
        # Say so explicitly: an upstream may compress for a request that names no encoding (RFC 9110 §12.5.3).
        out["Accept-Encoding"] = "identity"
    return out


def response_headers(upstream: Mapping[str, str], *, body_rewritten: bool) -> CIMultiDict[str]:
    """Headers to return to the app: the upstream's (rate-limit and request-id headers included)."""
    return _copy(upstream, _NOT_RETURNED_REWRITTEN if body_rewritten else _NOT_RETURNED)


@dataclass(frozen=True, slots=True)
class UpstreamTarget:
    host: str
    port: int
    tls: bool
    base_path: str  # the base URL's path, e.g. "/v1"; "" for none

    @classmethod
    def parse(cls, base_url: str) -> UpstreamTarget:
        parts = urlsplit(base_url.rstrip("/"))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"upstream must be an http(s) URL, got {base_url!r}")
        if parts.query or parts.fragment:
            raise ValueError(f"the upstream URL must not carry a query or a fragment, got {base_url!r}")
        tls = parts.scheme == "https"
        port = parts.port or (443 if tls else 80)
        return cls(parts.hostname, port, tls, parts.path)

    def target_for(self, raw_path: str) -> str:
        """Map the app's path onto the upstream base: "/v1/chat/completions" -> base path + "/chat/completions".

        `raw_path` is the request target as the app sent it, still percent-encoded, query included (see
        `forward_target`): it is passed on encoded, so "%3F" stays part of the path and never becomes a query."""
        return _upstream_target(self.base_path, raw_path)


@lru_cache(maxsize=256)  # an app calls a handful of paths (queries make more: bounded)
def _upstream_target(base_path: str, raw_path: str) -> str:
    path, sep, query = raw_path.partition("?")
    if path == "/v1" or path.startswith("/v1/"):
        path = path[3:]
    return f"{base_path}{path}{sep}{query}" or "/"


class Upstream:
    """The one upstream: requests sent on pooled keep-alive connections (`upstream_http`), failures mapped to the
    OpenAI-shaped errors the app receives."""

    def __init__(
        self, target: UpstreamTarget, *, connect_timeout: float, read_timeout: float, max_connections: int, keepalive: float = 4.0
    ) -> None:
        self.target = target
        self._connect_timeout = connect_timeout
        self._read_timeout = read_timeout
        self._keepalive = keepalive
        self._max_connections = max_connections
        self._client: HttpClient | None = None

    async def start(self) -> None:  # (the pool belongs to the running loop: made here, not in __init__)
        self._client = HttpClient(
            self.target.host, self.target.port, tls=self.target.tls, connect_timeout=self._connect_timeout, read_timeout=self._read_timeout,
            keepalive=self._keepalive, limit=self._max_connections,
        )

    @property
    def connections_in_use(self) -> int:
        """Pooled connections handed to a request and not given back yet (0 when idle: none leaked)."""
        return self._client.connections_in_use if self._client is not None else 0

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None

    async def send(self, method: str, raw_path: str, headers: CIMultiDict[str], body: bytes, *, decompress: bool) -> UpstreamResponse:
        """Send a request and return the response with its headers read (the body is the caller's to read)."""
        assert self._client is not None, "Upstream.start() was not awaited"
        try:
            return await self._client.send(method, self.target.target_for(raw_path), headers, body, decompress=decompress)
        except TimeoutError as error:
            raise UpstreamUnavailable(
                openai_error(504, "ragtap: the upstream did not answer in time", type_="upstream_error", code="upstream_timeout"),
                "timeout",
            ) from error
        except (OSError, UpstreamDisconnected) as error:  # refused, reset, unresolvable, TLS, closed before answering
            raise UpstreamUnavailable(
                openai_error(502, f"ragtap: cannot reach the upstream ({type(error).__name__})", type_="upstream_error", code="upstream_unreachable"),
                type(error).__name__,
            ) from error
        except (UpstreamBroke, ValueError) as error:  # not HTTP, or a header ragtap cannot write
            raise UpstreamUnavailable(
                openai_error(502, f"ragtap: upstream request failed ({type(error).__name__})", type_="upstream_error", code="upstream_error"),
                type(error).__name__,
            ) from error


_ENCODED_SEPARATOR = re.compile(r"%(?:2[fF]|5[cC])")


def forward_target(request_path: str, raw_path: str) -> str:
    """The request target to forward (percent-encoded, query included), or BadPath.

    A reverse proxy must not let a client walk out of the prefix it proxies: "/v1/../admin" would reach the
    upstream's "/admin" once a URL library normalises it, and "..%2F" does the same on servers that decode
    before they route.  Such paths are refused rather than normalised: no OpenAI client sends them."""
    if "." not in raw_path and "%" not in raw_path and "." not in request_path:
        return raw_path  # no dot to make a dot segment, no escape to hide a separator (most requests)
    if any(segment in ("..", ".") for segment in request_path.split("/")):
        raise BadPath("dot segments")
    path = raw_path.partition("?")[0]
    if any(segment in ("..", ".") for segment in path.split("/")) or _ENCODED_SEPARATOR.search(path):
        raise BadPath("encoded separators or dot segments")
    return raw_path
