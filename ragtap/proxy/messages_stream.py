"""Streams of the Anthropic Messages API (`stream: true`): typed SSE events (`event: <type>` + `data: {...}`).

`relay_messages_injected` decodes each event, lets `MessagesStreamSplitter` rewrite it (answer-only text deltas;
every other event as it came) and writes what comes out, one write per network read.  An `error` event (e.g.
`overloaded_error`) is relayed unchanged, after the answer text ragtap still held.  A stream the upstream cut
ends where it was cut (no `message_stop` is made up: the app sees the failure it would see without ragtap).
`relay_messages_observed` forwards the upstream's bytes untouched and reads the text (and the cited spans) from a
copy for scoring.  Events ragtap cannot decode are passed on as they came.  There is no `[DONE]` sentinel.
"""

from __future__ import annotations

from time import perf_counter as now
from typing import Any

from aiohttp import web

from ragtap.exchange import ExchangeRecord, note_anthropic_usage
from ragtap.proxy.exchange_path import (
    INCOMPLETE, Exchange, KeptText, StreamOutcome, TypedShape, broken_off, copy_events, open_stream, parse_object, relay_typed,
)
from ragtap.proxy.upstream_http import UpstreamResponse
from ragtap.split.messages import NO_CITATIONS, CitedSpans
from ragtap.split.messages_stream import MessagesStreamSplitter
from ragtap.split.stream import REPLY_TOO_LARGE


def note_message(message: dict[str, Any], record: ExchangeRecord) -> None:
    """Id, model, stop reason and usage of a message object, for the exchange record."""
    if isinstance(message.get("id"), str):
        record.response_id = message["id"]
    if isinstance(message.get("model"), str):
        record.response_model = message["model"]
    if isinstance(message.get("stop_reason"), str):
        record.finish_reasons = (message["stop_reason"],)
    note_anthropic_usage(record, message.get("usage"))


def _note_event(event: dict[str, Any], record: ExchangeRecord) -> None:
    kind = event.get("type")
    if kind == "message_start" and isinstance(event.get("message"), dict):
        note_message(event["message"], record)
    elif kind == "message_delta":
        delta = event.get("delta")
        if isinstance(delta, dict) and isinstance(delta.get("stop_reason"), str):
            record.finish_reasons = (delta["stop_reason"],)
        note_anthropic_usage(record, event.get("usage"))  # cumulative: what it carries overwrites
    elif kind == "error":
        error = event.get("error")
        kind = error.get("type") if isinstance(error, dict) else None
        record.outcome, record.error_type = "upstream_error", kind if isinstance(kind, str) and kind.isidentifier() else "error_event"


def _carries_text(event: dict[str, Any]) -> bool:
    delta = event.get("delta") if event.get("type") == "content_block_delta" else None
    return isinstance(delta, dict) and delta.get("type") == "text_delta" and bool(delta.get("text"))


# The answer text still held goes out before an `error` event (the SDKs raise on it and read no further).
# Too large to hold, an event of these types goes to the app unchanged without spoiling the split (issue 24 #2);
# after `message_stop` (or an error) the app's stream has ended: no keep-alive follows.
_SHAPE = TypedShape(_note_event, _carries_text, text_before_error=True, ends=frozenset({"message_stop", "error"}),
                    no_text=frozenset({"message_start", "content_block_stop", "message_delta", "message_stop", "ping"}))


async def relay_messages_injected(exchange: Exchange, upstream: UpstreamResponse) -> tuple[web.StreamResponse, StreamOutcome]:
    max_kept = exchange.state.config.replies.max_kept_chars
    return await relay_typed(exchange, upstream, lambda text_filter: MessagesStreamSplitter(max_kept, text_filter), _SHAPE)


class _TextCollector:
    """Every text block's text (bounded), and the spans cited, read from a copy of the events (the observed path)."""

    def __init__(self, record: ExchangeRecord, max_kept_chars: int) -> None:
        self.record = record
        self.parts = KeptText(max_kept_chars)  # bounded: an endless stream is forwarded, not kept
        self.text_blocks: set[int] = set()
        self.spans = CitedSpans()

    def on_payload(self, payload: bytes) -> None:
        event = parse_object(payload, lenient=True)
        if event is None:
            return
        _note_event(event, self.record)
        kind = event.get("type")
        if kind == "content_block_start":
            block = event.get("content_block")
            if isinstance(block, dict) and block.get("type") == "text" and isinstance(event.get("index"), int):
                self.text_blocks.add(event["index"])
                if isinstance(block.get("text"), str) and block["text"]:
                    self.parts.append(block["text"])
                for citation in block.get("citations") or ():
                    self.spans.add(citation)
        elif kind == "content_block_delta" and event.get("index") in self.text_blocks:
            delta = event.get("delta")
            if not isinstance(delta, dict):
                return
            if delta.get("type") == "text_delta" and isinstance(delta.get("text"), str) and delta["text"]:
                if self.record.first_token_at is None:
                    self.record.first_token_at = now()
                self.parts.append(delta["text"])
            elif delta.get("type") == "citations_delta":
                self.spans.add(delta.get("citation"))


async def relay_messages_observed(exchange: Exchange, upstream: UpstreamResponse, *, cited: bool) -> tuple[web.StreamResponse, StreamOutcome]:
    """Forward the upstream's SSE bytes untouched; read the answer (and, with `cited`, the cited spans as the
    supporting content) from a copy for scoring."""
    record = exchange.record
    out = await open_stream(exchange.request, upstream)
    collector = _TextCollector(record, exchange.state.config.replies.max_kept_chars)
    unheld: list[str | None] = []
    if not await copy_events(out, upstream, record, collector.on_payload, unheld.append,
                             max_event_bytes=exchange.state.config.replies.max_body_bytes):
        return out, INCOMPLETE
    if collector.parts.overflow or _SHAPE.misses_text(unheld):
        return out, StreamOutcome("", None, REPLY_TOO_LARGE)
    if not collector.text_blocks:
        return out, StreamOutcome("", None, "no_text_content")
    supporting = collector.spans.supporting if cited else None
    reason = NO_CITATIONS if cited and supporting is None else None
    return out, broken_off(record, StreamOutcome(collector.parts.text(), supporting, reason))
