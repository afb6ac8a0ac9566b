"""An Interaction (with the fields of its ExchangeRecord the exporters read) as compact bytes, and back.

The Redis hand-off (pipeline/redis_handoff.py, pipeline/stream_worker.py) moves interactions between processes,
possibly between machines.  The format is versioned JSON (orjson: ~10 µs for a typical RAG interaction) with
short keys.  Times: `ExchangeRecord` holds `perf_counter()` readings, which mean nothing in another process, so
they travel as wall-clock seconds and are turned back into this process's `perf_counter()` scale on decoding
(time-to-verdict across machines is then as good as their clocks' agreement).  `extras` (per-exporter live
objects such as an OTel span) never travel: when the proxy's OTel exporter opened a chat span for the exchange,
its context travels as the W3C `traceparent` of `trace_headers`, so the worker's evaluation span is the chat
span's child, as it is when scoring runs in the proxy.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Any

import orjson

from ragtap.exchange import ChatMessage, ChatMessagePart, ExchangeRecord, Overhead, RequestParameters
from ragtap.exporters.semconv import chat_span
from ragtap.types import Document, Interaction

WIRE_VERSION = 1

# ExchangeRecord fields holding perf_counter() readings: sent as wall-clock seconds.
_CLOCK_FIELDS = ("started_at", "upstream_sent_at", "upstream_headers_at", "upstream_done_at", "first_token_at", "finished_at")
# Everything else the exporters read, sent as is (`extras` stays behind: live objects of this process).
_PLAIN_FIELDS = tuple(
    f.name for f in dataclasses.fields(ExchangeRecord) if f.name not in _CLOCK_FIELDS and f.name != "extras"
)


class WireError(ValueError):
    """An entry that is not a ragtap interaction of a version this code reads (one line says which)."""


@dataclass(frozen=True, slots=True)
class WireInteraction:
    """An interaction as it came off the wire, with the hand-off id that makes its export idempotent."""

    handoff_id: str
    interaction: Interaction


def _wall_offset() -> float:
    """time.time() - time.perf_counter(): adds to a perf_counter reading to make it wall-clock seconds."""
    return time.time() - time.perf_counter()


def encode(handoff_id: str, item: Interaction) -> bytes:
    offset = _wall_offset()
    payload: dict[str, Any] = {
        "v": WIRE_VERSION,
        "h": handoff_id,
        "q": item.question,
        "d": [[doc.text, doc.id] for doc in item.documents],
        "a": item.answer,
        "s": item.supporting,
        "i": item.id,
        "m": item.model,
        "u": item.unscored_reason,
        "t": list(item.truncated),
        "e": None if item.enqueued_at is None else item.enqueued_at + offset,
    }
    exchange = item.exchange
    if exchange is not None:
        record: dict[str, Any] = {name: getattr(exchange, name) for name in _PLAIN_FIELDS}
        for name in _CLOCK_FIELDS:
            value = getattr(exchange, name)
            record[name] = None if value is None else value + offset
        traceparent = _chat_span_traceparent(exchange)
        if traceparent is not None:
            record["trace_headers"] = {**exchange.trace_headers, "traceparent": traceparent}
        payload["x"] = record
    return orjson.dumps(payload)


def _chat_span_traceparent(exchange: ExchangeRecord) -> str | None:
    """The W3C traceparent of the chat span the OTel exporter keeps for this exchange (None: no span)."""
    span = chat_span(exchange.extras) if exchange.extras else None
    if span is None:
        return None
    try:
        context = span.get_span_context()
        if not context.is_valid:
            return None
        return f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"
    except Exception:  # not an OTel span after all: the app's own trace headers still travel
        return None


def _str(value: Any, name: str, optional: bool = True) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise WireError(f"field {name!r} is {type(value).__name__}, expected a string")
    return value


def _exchange(record: Any, offset: float) -> ExchangeRecord:
    if not isinstance(record, dict):
        raise WireError("field 'x' is not an object")
    known = {name: record[name] for name in _PLAIN_FIELDS if name in record}
    for name in ("trace_headers",):
        if name in known and not isinstance(known[name], dict):
            raise WireError(f"exchange field {name!r} is not an object")
    if "finish_reasons" in known:
        known["finish_reasons"] = tuple(str(r) for r in known["finish_reasons"] or ())
    _typed_fields(known)
    for name in _CLOCK_FIELDS:
        value = record.get(name)
        if value is not None:
            if not isinstance(value, (int, float)):
                raise WireError(f"exchange field {name!r} is not a number")
            known[name] = float(value) - offset
    if "route" not in known:
        raise WireError("exchange without a route")
    try:
        return ExchangeRecord(**known)
    except TypeError as error:
        raise WireError(f"exchange record: {error}") from None


def _typed_fields(known: dict[str, Any]) -> None:
    """The record's nested dataclasses travel as JSON objects (orjson writes dataclasses as dicts): typed again
    here, so an exporter in the worker reads the same types it reads in the proxy."""
    try:
        if isinstance(known.get("parameters"), dict):
            parameters = dict(known["parameters"])
            parameters["stop_sequences"] = tuple(parameters.get("stop_sequences") or ())
            known["parameters"] = RequestParameters(**parameters)
        if isinstance(known.get("overhead"), dict):
            known["overhead"] = Overhead(**known["overhead"])
        if "input_messages" in known:
            known["input_messages"] = tuple(
                ChatMessage(m["role"], tuple(ChatMessagePart(**part) for part in m.get("parts") or ()))
                for m in known["input_messages"] or ()
            )
    except (TypeError, KeyError, AttributeError) as error:
        raise WireError(f"exchange record: {error}") from None


def decode(data: bytes) -> WireInteraction:
    """The interaction of an entry, or WireError (malformed JSON, a version this code does not read, a bad field)."""
    try:
        payload = orjson.loads(data)
    except orjson.JSONDecodeError as error:
        raise WireError(f"not JSON ({error.msg})") from None
    if not isinstance(payload, dict):
        raise WireError("not a JSON object")
    version = payload.get("v")
    if version != WIRE_VERSION:
        raise WireError(f"wire version {version!r}, this ragtap reads {WIRE_VERSION}")
    documents = payload.get("d")
    if not isinstance(documents, list) or not all(isinstance(d, list) and len(d) == 2 for d in documents):
        raise WireError("field 'd' is not a list of [text, id] pairs")
    offset = _wall_offset()
    enqueued = payload.get("e")
    item = Interaction(
        question=_str(payload.get("q"), "q", optional=False),  # type: ignore[arg-type]
        documents=tuple(Document(_str(text, "d", optional=False), _str(doc_id, "d")) for text, doc_id in documents),  # type: ignore[arg-type]
        answer=_str(payload.get("a"), "a"),
        supporting=_str(payload.get("s"), "s"),
        id=_str(payload.get("i"), "i"),
        model=_str(payload.get("m"), "m"),
        unscored_reason=_str(payload.get("u"), "u"),
        truncated=tuple(str(t) for t in payload.get("t") or ()),
        enqueued_at=None if not isinstance(enqueued, (int, float)) else float(enqueued) - offset,
        exchange=_exchange(payload["x"], offset) if payload.get("x") is not None else None,
    )
    handoff_id = _str(payload.get("h"), "h", optional=False)
    return WireInteraction(handoff_id, item)  # type: ignore[arg-type]
