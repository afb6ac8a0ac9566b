"""GET /v1/responses/{id}: a stored response that ragtap injected, split again as its create was.

The upstream stores the reply it wrote (`store` defaults to true): for an injected request, the JSON object with
the supporting content, and ragtap's instruction in the echoed `instructions`.  An app that reads it back
(`client.responses.retrieve(id)`) must see what it would have seen without ragtap, so ragtap remembers the ids of
the responses it injected (with what the app sent for the echoed settings) and splits those when they are
fetched -- with the reading its create used: an injected reply as such, a follow-up turn (not injected, split only
when the model wrote ragtap's own object) as such, so the GET and the create agree.  The memory is bounded (the
most recent `MAX_REMEMBERED` ids) and per process, so a response created through another worker of
`ragtap serve --workers N`, another instance or before a restart is recognised by what the upstream stored instead:
its echoed `instructions` end with ragtap's instruction (`echo_from_stored`).  Such a GET is read whole (up to
`[replies] max_body_bytes`); any other reply is relayed as its bytes came.  A streamed retrieve (`?stream=true`) and
every other method go through the passthrough unchanged.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from dataclasses import dataclass
from time import perf_counter as now
from typing import Any

from aiohttp import web

from ragtap.exchange import ExchangeRecord
from ragtap.prompts import prompt_text
from ragtap.proxy.errors import BadPath, UpstreamUnavailable, failure_response
from ragtap.proxy.exchange_path.read import dumps, parse_object
from ragtap.proxy.exchange_path.respond import TooLarge, read_bounded
from ragtap.proxy.passthrough import handle_passthrough, relay_response
from ragtap.proxy.state import STATE
from ragtap.proxy.upstream import forward_target, request_headers, response_headers
from ragtap.split.responses import ClientEcho, split_response

MAX_REMEMBERED = 10_000  # ~100 bytes each: about 1 MB at most


@dataclass(frozen=True, slots=True)
class _Remembered:
    echo: ClientEcho
    injected: bool  # False: a follow-up turn, split only when it is ragtap's own object (`split_response(embedded=False)`)


class InjectedResponses:
    """The ids of the responses ragtap injected (or split as follow-ups), most recent last, with the app's own
    echoed settings."""

    def __init__(self, max_entries: int = MAX_REMEMBERED) -> None:
        self._echoes: OrderedDict[str, _Remembered] = OrderedDict()
        self._max = max_entries

    def remember(self, response_id: str, echo: ClientEcho, *, injected: bool = True) -> None:
        self._echoes[response_id] = _Remembered(echo, injected)
        self._echoes.move_to_end(response_id)
        while len(self._echoes) > self._max:
            self._echoes.popitem(last=False)

    def get(self, response_id: str) -> ClientEcho | None:
        remembered = self._echoes.get(response_id)
        return remembered.echo if remembered is not None else None

    def injected(self, response_id: str) -> bool:
        """True for a response ragtap injected, False for a follow-up turn it only split (or one it forgot)."""
        remembered = self._echoes.get(response_id)
        return remembered is not None and remembered.injected

    def __len__(self) -> int:
        return len(self._echoes)


INJECTED_RESPONSES: web.AppKey[InjectedResponses] = web.AppKey("ragtap_injected_responses", InjectedResponses)


def echo_from_stored(reply: dict[str, Any], instruction: str, *, json_format_injected: bool) -> ClientEcho | None:
    """The app's own echoed settings of a stored response ragtap injected but does not remember, read back from the
    response itself (`inject_responses` appended `instruction` to the app's `instructions` after a blank line, and
    asked for `json_object` when `json_format_injected`); None when its `instructions` do not end with ragtap's
    instruction.  (An app's empty `instructions` reads back as none: the upstream echoes the same.)"""
    stored = reply.get("instructions")
    if not isinstance(stored, str) or not stored.endswith(instruction):
        return None
    own = stored[: len(stored) - len(instruction)]
    own = own.removesuffix("\n\n")
    text = reply.get("text")
    text_format = text.get("format") if isinstance(text, dict) else None
    if json_format_injected:
        text_format = None  # ragtap's json_object; an app that asks for a format of its own is not injected
    return ClientEcho(own or None, text_format)


async def handle_retrieve(request: web.Request) -> web.StreamResponse:
    remembered = request.app[INJECTED_RESPONSES]
    response_id = request.match_info["response_id"]
    if request.query.get("stream", "").lower() == "true":
        return await handle_passthrough(request)
    echo = remembered.get(response_id)
    state = request.app[STATE]
    record = ExchangeRecord(route=request.path, method=request.method)
    try:
        record.upstream_sent_at = now()
        upstream = await state.upstream.send(
            "GET", forward_target(request.path, request.raw_path), request_headers(request.headers, identity_encoding=True), b"", decompress=True
        )
        record.upstream_headers_at = now()
        record.status = upstream.status
        if upstream.status != 200:
            response = await relay_response(request, upstream, record, decompressed=True)
        else:
            data = await read_bounded(upstream, record, state.config.replies.max_body_bytes)
            if isinstance(data, TooLarge):  # too large to hold: relayed unchanged
                response = await relay_response(request, upstream, record, decompressed=True, prefix=data.prefix)
            else:
                reply = parse_object(data, lenient=True)
                embedded = remembered.injected(response_id)
                if echo is None and reply is not None:  # created through another worker or instance, or before a restart
                    inject = state.config.inject
                    echo = echo_from_stored(reply, prompt_text(inject.prompt), json_format_injected=inject.json_response_format)
                    embedded = True
                body = data  # not ragtap's: the upstream's bytes as they came (as `relay_response` returns a whole body)
                if echo is not None and reply is not None:
                    split_response(reply, echo, embedded=embedded)
                    body = dumps(reply) or data
                response = web.Response(status=200, body=body, headers=response_headers(upstream.headers, body_rewritten=True))
    except (UpstreamUnavailable, BadPath) as failure:
        response = failure_response(record, failure)
    record.finished_at = now()
    asyncio.get_running_loop().call_soon(state.exporter.passthrough_finished, record)  # off the latency path
    return response
