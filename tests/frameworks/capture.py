"""Record the JSON request bodies a framework sends, whatever client it builds: wraps `send` (sync and async) of
httpx and of httpx2 (the transport of recent openai SDKs) in the framework's own process.  Test code only."""

from __future__ import annotations

import importlib
import json
from typing import Any

SENT: list[dict] = []


def _record(request: Any) -> None:
    if str(request.url).split("?")[0].endswith("/chat/completions"):
        SENT.append(json.loads(request.read()))


def _wrap(module_name: str) -> None:
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return
    sync_send, async_send = module.Client.send, module.AsyncClient.send

    def send(self, request, *args, **kwargs):  # type: ignore[no-untyped-def]
        _record(request)
        return sync_send(self, request, *args, **kwargs)

    async def asend(self, request, *args, **kwargs):  # type: ignore[no-untyped-def]
        _record(request)
        return await async_send(self, request, *args, **kwargs)

    module.Client.send = send
    module.AsyncClient.send = asend


_wrap("httpx")
_wrap("httpx2")
