"""Streams of chat completions (`stream: true`), relayed chunk by chunk.

`relay_injected` rewrites each `chat.completion.chunk` so that `delta.content` carries only the decoded text of
the JSON `answer` field, as soon as it arrives (the supporting content is collected, not forwarded); the text
passes through the exchange's `AnswerGate` when a step opened one (seam (b), `exchange_path/seams.py`), and
then the chunk carrying finish_reason is held until the gate has released the rest.
`relay_observed` forwards the upstream's bytes untouched and only reads a copy of the content for scoring.

Per chunk the work is constant: one SSE line split over the new bytes, one orjson parse and dump of a small
event, and the extractor's state machine over the new characters.  Nothing re-joins the reply so far.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from time import perf_counter as now
from typing import Any

from aiohttp import web

from ragtap.exchange import ExchangeRecord, note_usage
from ragtap.proxy.exchange_path import (
    INCOMPLETE, AnswerGate, Exchange, KeptText, StreamOutcome, abandon_gate, broken_off, copy_events, dumps, open_gate, open_stream,
    parse_object, pump_events,
)
from ragtap.proxy.sse import DONE_EVENT, encode_event
from ragtap.proxy.upstream_http import UpstreamResponse
from ragtap.split.stream import AnswerStreamExtractor, REPLY_TOO_LARGE, StreamResult


def _note_event(event: dict[str, Any], record: ExchangeRecord) -> None:
    if record.response_id is None:
        record.response_id = event.get("id")
        record.response_model = event.get("model")
    usage = event.get("usage")
    if usage is not None:  # (one chunk in a stream has it, at most: no call for the others)
        note_usage(record, usage)


def _content_text(content: Any) -> str | None:
    """A delta's text: a string, or the text parts of a list of content parts ([{"type": "text", "text": ...}])."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p["text"] for p in content if isinstance(p, dict) and p.get("type") in ("text", "output_text") and isinstance(p.get("text"), str))
    return None


# The keys of OpenAI's usage chunk (`stream_options.include_usage`): an event with no others is only usage.
_USAGE_CHUNK_KEYS = frozenset({"id", "object", "created", "model", "system_fingerprint", "service_tier", "choices", "usage", "obfuscation"})


@dataclass(slots=True)
class _InjectedRelay:
    out: web.StreamResponse
    record: ExchangeRecord
    forward_usage: bool  # the app asked for the usage chunk itself
    extractor: AnswerStreamExtractor = field(default_factory=AnswerStreamExtractor)
    gate: AnswerGate | None = None  # seam (b): the answer text passes through it
    result: StreamResult | None = None
    template: dict[str, Any] | None = None  # the last chunk seen, to build a closing chunk from
    # The upstream's finish_reason.  The extractor is finished only when the stream ends ([DONE] or EOF): real
    # upstreams send finish_reason on every chunk, or on reasoning chunks before the content.
    finish_reason: str | None = None
    held_finish: dict[str, Any] | None = None  # with a gate: the finish_reason chunk, sent after the released text
    gate_complete: Callable[[], None] | None = None  # the gate's optional `answer_complete`, called once
    gate_unscorable: Callable[[str], None] | None = None  # the gate's optional `unscorable`, called once
    done_sent: bool = False
    unheld: bool = False  # an event was too large to hold: passed on unchanged, its content not split (not scored)
    # Events rewritten from one network read, sent together by `flush()`: one write (one syscall) per read
    # instead of one per event when the upstream's events arrive several at a time.
    pending: list[bytes] = field(default_factory=list)

    async def flush(self) -> None:
        if self.pending:
            data = self.pending[0] if len(self.pending) == 1 else b"".join(self.pending)
            self.pending.clear()
            await self.out.write(data)

    def on_unheld(self, event_type: str | None) -> None:
        self.unheld = True

    async def on_payload(self, payload: bytes) -> None:
        """Rewrite one event into `pending`; the caller flushes after each network read."""
        if payload == b"[DONE]":
            await self.close()
            return
        event = parse_object(payload, lenient=True)  # (lenient: a chunk with a NaN is still split)
        if event is None:
            self.pending.append(encode_event(payload))  # not ours to judge: pass it on
            return
        _note_event(event, self.record)
        choices = event.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            # The usage chunk (choices: []) that ragtap asked for reaches the app only if the app asked for it
            # too.  Anything else without a choice to rewrite -- an `{"error": ...}` event sent mid-stream,
            # Azure's `prompt_filter_results` (choices: [] too) -- is the app's to see, unchanged.
            if "error" in event:
                self.record.outcome, self.record.error_type = "upstream_error", "error_event"
            if self.forward_usage or choices != [] or "error" in event:
                self.pending.append(encode_event(payload))
            elif not set(event) <= _USAGE_CHUNK_KEYS:  # more than usage: forward it, without the usage
                self._write({k: v for k, v in event.items() if k != "usage"}, "")
            return
        choice = choices[0]
        delta = choice.get("delta") or {}
        if len(choices) > 1 or choice.get("index", 0) != 0 or not isinstance(delta, dict):
            # Another choice's event (ragtap injects only n == 1, but upstreams may still number choices), or
            # not a chunk ragtap can rewrite: the app gets it as sent; only choice 0 is split.
            self.pending.append(encode_event(payload))
            return
        self.template = event
        content = _content_text(delta.get("content"))
        text = self.extractor.feed(content) if content else ""
        if text and self.gate is not None:
            self._tell_gate_if_raw()
            text = self.gate.feed(text)
        if self.gate_complete is not None and self.extractor.answer_complete:
            self.gate_complete()  # the answer string closed: the gate need not wait for the end of the stream
            self.gate_complete = None
        finish = choice.get("finish_reason")
        if finish:
            self.finish_reason = str(finish)
            self.record.finish_reasons = (self.finish_reason,)
            if self.gate is not None:  # the gate may still release text: the finish chunk goes after it
                self.held_finish = {**event, "choices": [{**choice, "delta": {}}]}
                choice["finish_reason"] = None
                event.pop("usage", None)  # (it goes with the finish chunk)
        if text or finish or any(key != "content" for key in delta):  # role, tool_calls, refusal...
            if text or "content" in delta:
                delta["content"] = text
            choice["delta"] = delta
            if text or not (finish and self.gate is not None) or any(key != "content" for key in delta):
                self._write(event, text)

    @property
    def closed(self) -> bool:
        return self.done_sent

    def _finish(self, *, truncated: bool) -> StreamResult:
        if self.result is None:
            self.result = self.extractor.finish(truncated=truncated)
        return self.result

    def _write(self, event: dict[str, Any], text: str) -> None:
        if text and self.record.first_token_at is None:
            self.record.first_token_at = now()
        data = dumps(event)  # (orjson, or the json module for what orjson does not write: deep nesting, NaN, big integers)
        if data is None:  # deeper than either writes: as the json module fails on it
            raise RecursionError("a chunk nested deeper than ragtap can write")
        self.pending.append(encode_event(data))

    async def close(self) -> None:
        """End the app's stream cleanly, whatever the upstream did: remaining answer text, then [DONE]."""
        if self.done_sent:
            return
        self.done_sent = True
        # No finish_reason (the upstream broke off) or "length": the reply was cut.
        result = self._finish(truncated=self.finish_reason in (None, "length"))
        remainder = result.remainder
        if self.gate is not None:
            self._tell_gate_if_raw()
            remainder = (self.gate.feed(remainder) if remainder else "") + await self.gate.release(result)
        self.send_text(remainder)
        comment = getattr(self.gate, "comment", None)
        if comment:  # the gate's last word (an SSE comment: SDKs ignore it)
            self.pending.append(b": " + comment.encode() + b"\n\n")
        if self.held_finish is not None:
            self._write(self.held_finish, "")
        self.pending.append(DONE_EVENT)
        await self.flush()

    def _tell_gate_if_raw(self) -> None:
        """The reply is not ragtap's JSON (the model ignored the instruction): it cannot be scored, and a gate that
        asked (`unscorable`) lets it pass as it is."""
        if self.gate_unscorable is not None and self.extractor.raw_reason is not None:
            self.gate_unscorable(self.extractor.raw_reason)
            self.gate_unscorable = None

    def send_text(self, text: str) -> None:
        """Answer text as a chunk of its own (the gate's release, or text it lets out between two chunks: its
        `on_ready`; written with the next network read's events)."""
        if text and self.template is not None:
            chunk = {**self.template, "choices": [{"index": 0, "delta": {"content": text}, "logprobs": None, "finish_reason": None}]}
            chunk.pop("usage", None)
            self._write(chunk, text)

    def outcome(self) -> StreamOutcome:
        result = self.result or self.extractor.finish(truncated=self.finish_reason in (None, "length"))
        return StreamOutcome(result.answer, result.supporting, REPLY_TOO_LARGE if self.unheld else result.unscored_reason)


async def relay_injected(exchange: Exchange, upstream: UpstreamResponse, *, forward_usage: bool) -> tuple[web.StreamResponse, StreamOutcome]:
    record = exchange.record
    out = await open_stream(exchange.request, upstream)
    extractor = AnswerStreamExtractor(exchange.state.config.replies.max_kept_chars)
    gate = open_gate(exchange)
    relay = _InjectedRelay(out, record, forward_usage, extractor, gate, gate_complete=getattr(gate, "answer_complete", None),
                           gate_unscorable=getattr(gate, "unscorable", None))
    if hasattr(gate, "on_ready"):
        gate.on_ready = relay.send_text  # type: ignore[union-attr]
    if not await pump_events(out, upstream, record, relay, max_event_bytes=exchange.state.config.replies.max_body_bytes):
        abandon_gate(gate)
        return out, INCOMPLETE
    return out, broken_off(record, relay.outcome())


async def relay_observed(exchange: Exchange, upstream: UpstreamResponse) -> tuple[web.StreamResponse, StreamOutcome]:
    """Forward the upstream's SSE bytes untouched; read the first choice's content from a copy for scoring (at most
    `max_kept_chars` of it: beyond, the bytes are still forwarded, nothing more is kept, and it is not scored)."""
    record = exchange.record
    out = await open_stream(exchange.request, upstream)
    parts = KeptText(exchange.state.config.replies.max_kept_chars)
    unheld: list[str | None] = []  # events too large to read: forwarded, but their content is not in `parts`
    if not await copy_events(out, upstream, record, lambda payload: _collect(payload, parts, record), unheld.append,
                             max_event_bytes=exchange.state.config.replies.max_body_bytes):
        return out, INCOMPLETE
    if parts.overflow or unheld:
        return out, StreamOutcome(parts.text(), None, REPLY_TOO_LARGE)
    return out, broken_off(record, StreamOutcome(parts.text()))


def _collect(payload: bytes, parts: KeptText, record: ExchangeRecord) -> None:
    event = parse_object(payload, lenient=True) if payload != b"[DONE]" else None
    if event is None:
        return
    _note_event(event, record)
    choices = event.get("choices")
    for choice in choices if isinstance(choices, list) else ():
        if not isinstance(choice, dict) or choice.get("index", 0) != 0:
            continue
        delta = choice.get("delta")
        content = _content_text(delta.get("content")) if isinstance(delta, dict) else None
        if content:
            if record.first_token_at is None:
                record.first_token_at = now()
            parts.append(content)
        if choice.get("finish_reason"):
            record.finish_reasons = (choice["finish_reason"],)
