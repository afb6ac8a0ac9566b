"""Streams of the Responses API (`stream: true`): typed SSE events (`event: <type>` + `data: {...}`), relayed.

`relay_responses_injected` decodes each event, lets `ResponsesStreamSplitter` rewrite it (answer-only deltas,
the app's own echo, sequence numbers without gaps) and writes what comes out, one write per network read.
`relay_responses_observed` forwards the upstream's bytes untouched and reads the text from a copy for scoring.
Events ragtap cannot decode are passed on as they came.  The Responses stream has no `[DONE]` sentinel: it ends
with `response.completed` (or `incomplete` / `failed`), or with an `error` event.
"""

from __future__ import annotations

from time import perf_counter as now
from typing import Any

from aiohttp import web

from ragtap.exchange import ExchangeRecord, note_usage
from ragtap.proxy.exchange_path import (
    INCOMPLETE, Exchange, KeptText, StreamOutcome, TypedShape, broken_off, copy_events, open_stream, parse_object, relay_typed,
)
from ragtap.proxy.upstream_http import UpstreamResponse
from ragtap.split.responses import ClientEcho, was_truncated
from ragtap.split.responses_stream import ResponsesStreamSplitter
from ragtap.split.stream import REPLY_TOO_LARGE

_FINAL_EVENTS = frozenset({"response.completed", "response.incomplete", "response.failed"})
# Events that carry no answer text of their own (they echo settings or repeat the text done elsewhere): too large
# to hold, they go to the app unchanged and the answer split from the deltas still stands (issue 24 #2).
_NO_TEXT = frozenset({"response.created", "response.in_progress", "response.queued", "response.output_item.added",
                      "response.output_item.done", "response.content_part.added", "response.content_part.done",
                      "response.output_text.done", *_FINAL_EVENTS})


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


def _carries_text(event: dict[str, Any]) -> bool:
    return event.get("type") == "response.output_text.delta" and bool(event.get("delta"))


_SHAPE = TypedShape(_note_event, _carries_text, ends=_FINAL_EVENTS | {"error"}, no_text=_NO_TEXT)


async def relay_responses_injected(exchange: Exchange, upstream: UpstreamResponse, echo: ClientEcho, *,
                                   only_ours: bool = False) -> tuple[web.StreamResponse, StreamOutcome]:
    """`only_ours`: a follow-up turn ragtap did not inject, split only when the model wrote ragtap's own object."""
    max_kept = exchange.state.config.replies.max_kept_chars
    return await relay_typed(exchange, upstream, lambda text_filter: ResponsesStreamSplitter(echo, max_kept, text_filter, only_ours=only_ours), _SHAPE)


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
        event = parse_object(payload, lenient=True)
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
        return self.parts.text() if self.item_id is not None else None


async def relay_responses_observed(exchange: Exchange, upstream: UpstreamResponse) -> tuple[web.StreamResponse, StreamOutcome, dict[str, Any] | None]:
    """Forward the upstream's SSE bytes untouched; read the answer (and the final response object, where a hosted
    file search left its results) from a copy for scoring."""
    record = exchange.record
    out = await open_stream(exchange.request, upstream)
    collector = _TextCollector(record, exchange.state.config.replies.max_kept_chars)
    unheld: list[str | None] = []
    if not await copy_events(out, upstream, record, collector.on_payload, unheld.append,
                             max_event_bytes=exchange.state.config.replies.max_body_bytes):
        return out, INCOMPLETE, None
    if collector.parts.overflow or _SHAPE.misses_text(unheld):
        return out, StreamOutcome("", None, REPLY_TOO_LARGE), None
    text = collector.text
    if text is None:
        return out, StreamOutcome("", None, "no_text_content"), collector.final
    return out, broken_off(record, StreamOutcome(text)), collector.final
