"""Streams of the Responses API (`stream: true`): typed SSE events (`event: <type>` + `data: {...}`), relayed.

`relay_responses_injected` decodes each event, lets `ResponsesStreamSplitter` rewrite it (answer-only deltas,
the app's own echo, sequence numbers without gaps) and writes what comes out, one write per network read.
`relay_responses_observed` forwards the upstream's bytes untouched and reads the text from a copy for scoring.
Events ragtap cannot decode are passed on as they came.  The Responses stream has no `[DONE]` sentinel: it ends
with `response.completed` (or `incomplete` / `failed`), or with an `error` event.
"""

from __future__ import annotations

import json
from time import perf_counter as now
from typing import Any

import aiohttp
import orjson
from aiohttp import web

from ragtap.exchange import ExchangeRecord, note_usage
from ragtap.proxy.exchange_path import (
    INCOMPLETE, AnswerGate, Exchange, KeptText, StreamOutcome, broken_off, copy_events, open_gate, open_stream, parse_object, pump_events,
)
from ragtap.proxy.sse import encode_event
from ragtap.split.responses import ClientEcho, was_truncated
from ragtap.split.responses_stream import ResponsesStreamSplitter
from ragtap.split.stream import REPLY_TOO_LARGE

_FINAL_EVENTS = frozenset({"response.completed", "response.incomplete", "response.failed"})


def encode_typed(event: dict[str, Any]) -> bytes:
    """One event as the Responses API writes it: its type on an `event:` line, then the JSON."""
    try:
        data = orjson.dumps(event)
    except orjson.JSONEncodeError:  # nested deeper than orjson writes (254 levels; it reads 1024)
        data = json.dumps(event, ensure_ascii=False, separators=(",", ":")).encode()
    kind = event.get("type")
    if isinstance(kind, str) and "\n" not in kind and "\r" not in kind:
        return b"event: " + kind.encode() + b"\n" + encode_event(data)
    return encode_event(data)


def note_response(response: dict[str, Any], record: ExchangeRecord) -> None:
    """Ids, status and usage of a response object, for the exchange record."""
    if isinstance(response.get("id"), str):
        record.response_id = response["id"]
    if isinstance(response.get("model"), str):
        record.response_model = response["model"]
    status = response.get("status")
    if isinstance(status, str):
        # In chat-completions terms (the exporters' finish reasons): completed -> stop, the limit -> length.
        details = response.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, dict) else None
        if was_truncated(response):
            finish = "length"
        elif isinstance(reason, str):
            finish = reason  # e.g. "content_filter"
        else:
            finish = "stop" if status == "completed" else status
        record.finish_reasons = (finish,)
    note_usage(record, response.get("usage"))


def _note_event(event: dict[str, Any], record: ExchangeRecord) -> None:
    kind = event.get("type")
    if kind == "response.created" or kind in _FINAL_EVENTS:
        response = event.get("response")
        if isinstance(response, dict):
            note_response(response, record)
        if kind == "response.failed":
            record.outcome, record.error_type = "upstream_error", "response_failed"
    elif kind == "error":
        record.outcome, record.error_type = "upstream_error", "error_event"


class _ResponsesRelay:
    """The typed events of an injected Responses stream, rewritten by `ResponsesStreamSplitter` (an `EventRelay`).
    With an answer gate (seam (b)), its release is awaited when the answer is complete, before `output_text.done`."""

    def __init__(self, out: web.StreamResponse, record: ExchangeRecord, splitter: ResponsesStreamSplitter, gate: AnswerGate | None) -> None:
        self.out = out
        self.record = record
        self.splitter = splitter
        self.gate = gate
        self.pending: list[bytes] = []

    async def on_payload(self, payload: bytes) -> None:
        try:
            event = orjson.loads(payload)
        except orjson.JSONDecodeError:
            event = None
        if not isinstance(event, dict):
            self.pending.append(encode_event(payload))  # not ours to judge: pass it on
            return
        _note_event(event, self.record)
        if self.gate is not None and self.splitter.ends_text(event):
            self.splitter.released = await self.gate.release(self.splitter.finish_text(event))
        for rewritten in self.splitter.feed(event):
            if self.record.first_token_at is None and rewritten.get("type") == "response.output_text.delta" and rewritten.get("delta"):
                self.record.first_token_at = now()
            self.pending.append(encode_typed(rewritten))

    async def flush(self) -> None:
        if self.pending:
            data = self.pending[0] if len(self.pending) == 1 else b"".join(self.pending)
            self.pending.clear()
            await self.out.write(data)

    async def close(self) -> None:
        if self.gate is not None and self.splitter.text_open():
            self.splitter.released = await self.gate.release(self.splitter.finish_text(None))
        self.pending.extend(encode_typed(event) for event in self.splitter.close())
        await self.flush()


async def relay_responses_injected(exchange: Exchange, upstream: aiohttp.ClientResponse, echo: ClientEcho) -> tuple[web.StreamResponse, StreamOutcome]:
    record = exchange.record
    out = await open_stream(exchange.request, upstream)
    gate = open_gate(exchange)
    splitter = ResponsesStreamSplitter(echo, exchange.state.config.replies.max_kept_chars, gate.feed if gate is not None else None)
    # One read can hold hundreds of events: the first answer text goes out at once (the app's time to first token).
    if not await pump_events(out, upstream, record, _ResponsesRelay(out, record, splitter, gate), flush_first_token=True):
        return out, INCOMPLETE
    result = splitter.outcome()
    outcome = broken_off(record, StreamOutcome(result.answer, result.supporting, result.unscored_reason))
    if splitter.item_id is None and outcome.unscored_reason is None:
        outcome.unscored_reason = "no_text_content"
    return out, outcome


class _TextCollector:
    """The first message's first output_text, read from a copy of the events (the observed path)."""

    def __init__(self, record: ExchangeRecord, max_kept_chars: int) -> None:
        self.record = record
        self.item_id: str | None = None
        self.content_index: int | None = None
        self.parts = KeptText(max_kept_chars)  # bounded: an endless stream is forwarded, not kept
        self.done_text: str | None = None
        self.final: dict[str, Any] | None = None  # the response object of the final event

    def on_payload(self, payload: bytes) -> None:
        event = parse_object(payload)
        if event is None:
            return
        _note_event(event, self.record)
        kind = event.get("type")
        if kind in _FINAL_EVENTS and isinstance(event.get("response"), dict):
            self.final = event["response"]
        elif kind == "response.output_item.added" and self.item_id is None:
            item = event.get("item")
            if isinstance(item, dict) and item.get("type") == "message":
                self.item_id = item.get("id")
        elif kind == "response.content_part.added" and self.content_index is None and event.get("item_id") == self.item_id:
            part = event.get("part")
            if isinstance(part, dict) and part.get("type") == "output_text":
                self.content_index = event.get("content_index")
        elif kind in ("response.output_text.delta", "response.output_text.done") and self._is_text(event):
            if kind == "response.output_text.done":
                if isinstance(event.get("text"), str) and self.done_text is None and not self.parts.overflow:
                    self.done_text = event["text"]
            elif isinstance(delta := event.get("delta"), str) and delta:
                if self.record.first_token_at is None:
                    self.record.first_token_at = now()
                self.parts.append(delta)

    def _is_text(self, event: dict[str, Any]) -> bool:
        return self.item_id is not None and event.get("item_id") == self.item_id and event.get("content_index") == self.content_index

    @property
    def text(self) -> str | None:
        if self.done_text is not None:
            return self.done_text
        return "".join(self.parts.parts) if self.item_id is not None else None


async def relay_responses_observed(exchange: Exchange, upstream: aiohttp.ClientResponse) -> tuple[web.StreamResponse, StreamOutcome, dict[str, Any] | None]:
    """Forward the upstream's SSE bytes untouched; read the answer (and the final response object, where a hosted
    file search left its results) from a copy for scoring."""
    record = exchange.record
    out = await open_stream(exchange.request, upstream)
    collector = _TextCollector(record, exchange.state.config.replies.max_kept_chars)
    if not await copy_events(out, upstream, record, collector.on_payload):
        return out, INCOMPLETE, None
    if collector.parts.overflow:
        return out, StreamOutcome("", None, REPLY_TOO_LARGE), None
    text = collector.text
    if text is None:
        return out, StreamOutcome("", None, "no_text_content"), collector.final
    return out, broken_off(record, StreamOutcome(text)), collector.final
