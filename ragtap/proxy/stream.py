"""Streams: `stream: true` chat completions, relayed chunk by chunk.

`relay_injected` rewrites each `chat.completion.chunk` so that `delta.content` carries only the decoded text of
the JSON `answer` field, as soon as it arrives (the supporting content is collected, not forwarded).
`relay_observed` forwards the upstream's bytes untouched and only reads a copy of the content for scoring.

Per chunk the work is constant: one SSE line split over the new bytes, one orjson parse and dump of a small
event, and the extractor's state machine over the new characters.  Nothing re-joins the reply so far.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from time import perf_counter as now
from typing import Any, Protocol

import aiohttp
import orjson
from aiohttp import web

from ragtap.exchange import ExchangeRecord, note_usage
from ragtap.proxy.sse import DONE_EVENT, SSEDecoder, encode_event, take_comments
from ragtap.proxy.upstream import response_headers
from ragtap.split.stream import DEFAULT_MAX_CHARS, REPLY_TOO_LARGE, AnswerStreamExtractor, StreamResult

_UPSTREAM_BROKE = (aiohttp.ClientPayloadError, aiohttp.ClientConnectionError, TimeoutError)


@dataclass(slots=True)
class StreamOutcome:
    """What the stream left for scoring."""

    answer: str
    supporting: str | None = None
    unscored_reason: str | None = None


async def _open(request: web.Request, upstream: aiohttp.ClientResponse) -> web.StreamResponse:
    headers = response_headers(upstream.headers, body_rewritten=True)
    # Proxies in front of ragtap (nginx) must not buffer the stream either.
    headers["Content-Type"] = "text/event-stream; charset=utf-8"
    headers["Cache-Control"] = "no-cache"
    headers["X-Accel-Buffering"] = "no"
    out = web.StreamResponse(status=upstream.status, headers=headers)
    await out.prepare(request)
    return out


def _note_event(event: dict[str, Any], record: ExchangeRecord) -> None:
    if record.response_id is None:
        record.response_id = event.get("id")
        record.response_model = event.get("model")
    note_usage(record, event.get("usage"))


def token_count(value: Any) -> int | None:
    """A usage count as the upstream reported it, if it is one (the exporters do arithmetic on it)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _content_text(content: Any) -> str | None:
    """A delta's text: a string, or the text parts of a list of content parts ([{"type": "text", "text": ...}])."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p["text"] for p in content if isinstance(p, dict) and p.get("type") in ("text", "output_text") and isinstance(p.get("text"), str))
    return None


# An SSE comment (ignored by SSE clients) sent while the upstream is busy but nothing is for the app to see.
KEEPALIVE = b": ragtap keep-alive\n\n"
KEEPALIVE_AFTER_S = 1.0


# The keys of OpenAI's usage chunk (`stream_options.include_usage`): an event with no others is only usage.
_USAGE_CHUNK_KEYS = frozenset({"id", "object", "created", "model", "system_fingerprint", "service_tier", "choices", "usage", "obfuscation"})


@dataclass(slots=True)
class _InjectedRelay:
    out: web.StreamResponse
    record: ExchangeRecord
    forward_usage: bool  # the app asked for the usage chunk itself
    extractor: AnswerStreamExtractor = field(default_factory=AnswerStreamExtractor)
    result: StreamResult | None = None
    template: dict[str, Any] | None = None  # the last chunk seen, to build a closing chunk from
    # The upstream's finish_reason.  The extractor is finished only when the stream ends ([DONE] or EOF): real
    # upstreams send finish_reason on every chunk, or on reasoning chunks before the content.
    finish_reason: str | None = None
    done_sent: bool = False
    # Events rewritten from one network read, sent together by `flush()`: one write (one syscall) per read
    # instead of one per event when the upstream's events arrive several at a time.
    pending: list[bytes] = field(default_factory=list)

    async def flush(self) -> None:
        if self.pending:
            data = self.pending[0] if len(self.pending) == 1 else b"".join(self.pending)
            self.pending.clear()
            await self.out.write(data)

    async def on_payload(self, payload: bytes) -> None:
        """Rewrite one event into `pending`; the caller flushes after each network read."""
        if payload == b"[DONE]":
            await self.close()
            return
        try:
            event = orjson.loads(payload)
        except orjson.JSONDecodeError:
            self.pending.append(encode_event(payload))  # not ours to judge: pass it on
            return
        if not isinstance(event, dict):
            self.pending.append(encode_event(payload))
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
        finish = choice.get("finish_reason")
        if finish:
            self.finish_reason = str(finish)
            self.record.finish_reasons = (self.finish_reason,)
        if text or finish or any(key != "content" for key in delta):  # role, tool_calls, refusal...
            if text or "content" in delta:
                delta["content"] = text
            choice["delta"] = delta
            self._write(event, text)

    def _finish(self, *, truncated: bool) -> str:
        if self.result is None:
            self.result = self.extractor.finish(truncated=truncated)
            return self.result.remainder
        return ""

    def _write(self, event: dict[str, Any], text: str) -> None:
        if text and self.record.first_token_at is None:
            self.record.first_token_at = now()
        try:
            data = orjson.dumps(event)
        except orjson.JSONEncodeError:  # nested deeper than orjson writes (254 levels; it reads 1024)
            data = json.dumps(event, ensure_ascii=False, separators=(",", ":")).encode()
        self.pending.append(encode_event(data))

    async def close(self) -> None:
        """End the app's stream cleanly, whatever the upstream did: remaining answer text, then [DONE]."""
        if self.done_sent:
            return
        # No finish_reason (the upstream broke off) or "length": the reply was cut.
        remainder = self._finish(truncated=self.finish_reason in (None, "length"))
        if remainder and self.template is not None:
            closing = {**self.template, "choices": [{"index": 0, "delta": {"content": remainder}, "logprobs": None, "finish_reason": None}]}
            closing.pop("usage", None)
            self._write(closing, remainder)
        self.done_sent = True
        self.pending.append(DONE_EVENT)
        await self.flush()

    def outcome(self) -> StreamOutcome:
        result = self.result or self.extractor.finish(truncated=self.finish_reason in (None, "length"))
        return StreamOutcome(result.answer, result.supporting, result.unscored_reason)


class EventRelay(Protocol):
    """What `pump_events` drives: rewrites upstream SSE payloads into `pending` bytes for the app."""

    pending: list[bytes]

    async def on_payload(self, payload: bytes) -> None: ...

    async def flush(self) -> None: ...

    async def close(self) -> None:
        """End the app's stream cleanly, whatever the upstream did (remaining answer text, final events)."""


async def pump_events(
    out: web.StreamResponse, upstream: aiohttp.ClientResponse, record: ExchangeRecord, relay: EventRelay, *,
    flush_first_token: bool = False,
) -> bool:
    """Relay an injected SSE stream through `relay`: one write per network read (with `flush_first_token`, the
    first answer text goes out as soon as it is rewritten, not after the rest of its read), the upstream's comments
    forwarded, keep-alive comments while the model writes what the app never sees, a clean end whatever the
    upstream did.  False when the app went away (the upstream is closed; the record says `incomplete`)."""
    decoder = SSEDecoder()
    last_write = now()
    try:
        try:
            async for chunk in upstream.content.iter_any():
                for payload in decoder.feed(chunk):
                    waiting = flush_first_token and record.first_token_at is None
                    await relay.on_payload(payload)
                    if waiting and record.first_token_at is not None:
                        await relay.flush()
                comments = take_comments(decoder)
                if comments:
                    relay.pending.append(comments)
                if not relay.pending and now() - last_write > KEEPALIVE_AFTER_S:
                    # The model is writing its supporting content, which the app never sees: without this the
                    # app's connection would be silent for as long as that takes (direct, it would get chunks).
                    relay.pending.append(KEEPALIVE)
                if relay.pending:
                    last_write = now()
                await relay.flush()
            for payload in decoder.close():
                await relay.on_payload(payload)
            await relay.flush()
        except _UPSTREAM_BROKE as error:
            record.outcome, record.error_type = "upstream_error", type(error).__name__
        record.upstream_done_at = now()
        await relay.close()
        await out.write_eof()
    except (ConnectionResetError, asyncio.CancelledError):  # the app went away: stop reading, close the upstream
        record.outcome = "incomplete"
        upstream.close()
        return False
    finally:
        upstream.release()
    return True


async def relay_injected(
    request: web.Request, upstream: aiohttp.ClientResponse, record: ExchangeRecord, *, forward_usage: bool,
    max_kept_chars: int = DEFAULT_MAX_CHARS,
) -> tuple[web.StreamResponse, StreamOutcome]:
    out = await _open(request, upstream)
    relay = _InjectedRelay(out, record, forward_usage, AnswerStreamExtractor(max_kept_chars))
    if not await pump_events(out, upstream, record, relay):
        return out, StreamOutcome("", None, "incomplete")
    outcome = relay.outcome()
    if record.outcome != "complete" and outcome.unscored_reason is None:
        outcome.unscored_reason = "upstream_broke_off"
    return out, outcome


async def relay_observed(
    request: web.Request, upstream: aiohttp.ClientResponse, record: ExchangeRecord, *, max_kept_chars: int = DEFAULT_MAX_CHARS
) -> tuple[web.StreamResponse, StreamOutcome]:
    """Forward the upstream's SSE bytes untouched; read the first choice's content from a copy for scoring (at most
    `max_kept_chars` of it: beyond, the bytes are still forwarded, nothing more is kept, and it is not scored)."""
    out = await _open(request, upstream)
    decoder = SSEDecoder()
    parts = _KeptText(max_kept_chars)
    try:
        try:
            async for chunk in upstream.content.iter_any():
                await out.write(chunk)
                for payload in decoder.feed(chunk):
                    _collect(payload, parts, record)
                decoder.comments.clear()  # forwarded already, with the bytes
        except _UPSTREAM_BROKE as error:
            record.outcome, record.error_type = "upstream_error", type(error).__name__
        record.upstream_done_at = now()
        await out.write_eof()
    except (ConnectionResetError, asyncio.CancelledError):  # (the handler is cancelled when the app hangs up)
        record.outcome = "incomplete"
        upstream.close()
        return out, StreamOutcome("", None, "incomplete")
    finally:
        upstream.release()
    if parts.overflow:
        return out, StreamOutcome("".join(parts.parts), None, REPLY_TOO_LARGE)
    return out, StreamOutcome("".join(parts.parts), None, None if record.outcome == "complete" else "upstream_broke_off")


class _KeptText:
    """The content of an observed stream, kept for scoring up to a limit."""

    __slots__ = ("limit", "overflow", "parts", "size")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.parts: list[str] = []
        self.size = 0
        self.overflow = False

    def append(self, text: str) -> None:
        if self.overflow:
            return
        self.size += len(text)
        if self.size > self.limit:
            self.overflow = True
            self.parts = []  # not scored: free it
            return
        self.parts.append(text)


def _collect(payload: bytes, parts: _KeptText, record: ExchangeRecord) -> None:
    if payload == b"[DONE]":
        return
    try:
        event = orjson.loads(payload)
    except orjson.JSONDecodeError:
        return
    if not isinstance(event, dict):
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
