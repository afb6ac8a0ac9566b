"""Record the JSON request bodies a framework sends, whatever client it builds: wraps httpx's `send` (sync and
async) in the framework's own process.  Test code only; ragtap is not touched."""

from __future__ import annotations

import json

import httpx

SENT: list[dict] = []
_sync_send, _async_send = httpx.Client.send, httpx.AsyncClient.send


def _record(request: httpx.Request) -> None:
    if request.url.path.endswith("/chat/completions"):
        SENT.append(json.loads(request.read()))


def _send(self, request, *args, **kwargs):  # type: ignore[no-untyped-def]
    _record(request)
    return _sync_send(self, request, *args, **kwargs)


async def _asend(self, request, *args, **kwargs):  # type: ignore[no-untyped-def]
    _record(request)
    return await _async_send(self, request, *args, **kwargs)


httpx.Client.send = _send  # type: ignore[method-assign]
httpx.AsyncClient.send = _asend  # type: ignore[method-assign]
