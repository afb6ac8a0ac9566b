"""Step 1 and 2 of the path: read the request, parse it, recognise it, and start the exchange's record.

`read_exchange` is the same for every API shape; only the recogniser differs (chat completions, Responses,
Messages).  The `Exchange` it returns travels through the rest of the path: one object per request, which
replaces the tuple the route used to unpack.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aiohttp import web

from ragtap.exchange import ExchangeRecord, note_request
from ragtap.prompts import prompt_text
from ragtap.proxy.errors import RequestTooDeep
from ragtap.proxy.json_bodies import dumps, parse_object
from ragtap.proxy.requestlog import log
from ragtap.proxy.state import STATE, ProxyState
from ragtap.recognise import Recognition
from ragtap.types import Assessment, Interaction, RagContext

if TYPE_CHECKING:
    from ragtap.proxy.exchange_path.seams import AskAgain

TRACE_HEADERS = ("traceparent", "tracestate", "baggage")
# A body this large (a document bomb: 30,000 documents are ~0.3 s of parsing and recognition) is read in a worker
# thread, so the event loop keeps serving the other requests meanwhile (the GIL switches every few ms) instead of
# stalling them all for as long.
OFFLOAD_BYTES = 256 * 1024

Recogniser = Callable[..., Recognition]


@dataclass(slots=True)
class Exchange:
    """One request on the exchange path: what was read, what recognition decided, and what goes to scoring."""

    request: web.Request
    state: ProxyState
    record: ExchangeRecord
    raw: bytes
    body: dict[str, Any] | None  # None: not a JSON object
    recognition: Recognition | None  # None: not a JSON object
    context: RagContext | None  # question and documents; None: not RAG (a route may clear it)
    pending: Interaction | None = None  # handed to scoring after the response (`handoff.after_response`)
    assessment: Assessment | None = None  # scored before the response (`handoff.assess_now`), else None
    assessed: bool = False
    # Scored before the response by a step itself (the guard's lane): exported after `exchange_finished`, in place
    # of the background scoring (interaction, assessment, seconds from reply to verdict).
    scored: tuple[Interaction, Assessment, float] | None = None
    ask_again: AskAgain | None = None  # seam (c): set by a route that can ask the upstream again

    def mark_injected(self) -> None:
        """ragtap adds its instruction to this request: so recorded, with the instruction ragtap's overhead tokens and
        cost count (`ragtap/cost.py`), whatever the API shape."""
        self.record.injected = True
        self.record.injected_instruction = prompt_text(self.state.config.inject.prompt)


def request_bytes(body: dict[str, Any]) -> bytes:
    """The bytes of a rewritten request; RequestTooDeep when it cannot be written (the app gets a 400)."""
    data = dumps(body)
    if data is None:
        raise RequestTooDeep
    return data


def _parse_and_recognise(raw: bytes, recogniser: Recogniser, patterns: Any) -> tuple[dict[str, Any] | None, Recognition | None]:
    body = parse_object(raw)
    return body, (recogniser(body, patterns) if body is not None else None)


async def read_exchange(request: web.Request, route: str, recogniser: Recogniser) -> Exchange:
    """The request read and recognised, and the exchange record it starts (every API shape alike)."""
    state = request.app[STATE]
    raw = await request.read()
    headers = request.headers
    record = ExchangeRecord(
        route=route,
        trace_headers={h: headers[h] for h in TRACE_HEADERS if h in headers},
        upstream_host=state.upstream.target.host,
        upstream_port=state.upstream.target.port,
    )
    if len(raw) > OFFLOAD_BYTES:
        body, recognition = await asyncio.to_thread(_parse_and_recognise, raw, recogniser, state.patterns)
    else:
        body, recognition = _parse_and_recognise(raw, recogniser, state.patterns)
    if body is not None:
        model = body.get("model")
        record.request_model = model if isinstance(model, str) else None
        record.stream = body.get("stream") is True
    identity = state.config.store
    note_request(record, body, headers, identity.user_headers, identity.session_headers, keep_messages=state.keep_messages)
    record.recognition = recognition.reason if recognition is not None else "bad_body"
    if recognition is not None and recognition.field_problem is not None:
        record.ragtap_field_problem = recognition.field_problem
        log.info("malformed ragtap field: reason=%s recognition=%s (the field is stripped; the implicit rules decided)",
                 recognition.field_problem, recognition.reason)
    context = recognition.context if recognition is not None else None
    return Exchange(request, state, record, raw, body, recognition, context)
