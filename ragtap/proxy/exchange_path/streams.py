"""Streams on the path, whatever the API shape: open the app's event stream, pump an injected stream through a
shape's relay (`pump_events`), or forward an observed one untouched while reading a copy (`copy_events`).

A shape brings its relay (chat: `proxy/chat_stream.py`; Responses: `proxy/responses_stream.py`; Messages:
`proxy/messages_stream.py`), which rewrites each upstream payload into bytes for the app; the loop, the upstream's
comments, keep-alives, a clean end whatever the upstream did, and the app hanging up are handled here once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from time import perf_counter as now
from typing import Any, Protocol

from aiohttp import web

from ragtap.exchange import ExchangeRecord
from ragtap.proxy.exchange_path.read import Exchange, parse_object
from ragtap.proxy.exchange_path.seams import AnswerGate, abandon_gate, open_gate
from ragtap.proxy.sse import MAX_LINE_BYTES, Comment, SSEDecoder, Unheld, encode_event, encode_typed
from ragtap.proxy.upstream import response_headers
from ragtap.proxy.upstream_http import UPSTREAM_BROKE, UpstreamResponse
from ragtap.split.stream import REPLY_TOO_LARGE, AnswerStreamExtractor, StreamResult
from ragtap.split.text_pieces import TextPieces

# An SSE comment (ignored by SSE clients) sent while the upstream is busy but nothing is for the app to see.
KEEPALIVE = b": ragtap keep-alive\n\n"
KEEPALIVE_AFTER_S = 1.0


@dataclass(slots=True)
class StreamOutcome:
    """What a stream left for scoring."""

    answer: str
    supporting: str | None = None
    unscored_reason: str | None = None


INCOMPLETE = StreamOutcome("", None, "incomplete")  # the app went away: nothing to score (never mutated)


async def open_stream(request: web.Request, upstream: UpstreamResponse) -> web.StreamResponse:
    """The app's event stream, with the upstream's status and headers (minus what the rewrite invalidates)."""
    headers = response_headers(upstream.headers, body_rewritten=True)
    # Proxies in front of ragtap (nginx) must not buffer the stream either.
    headers["Content-Type"] = "text/event-stream; charset=utf-8"
    headers["Cache-Control"] = "no-cache"
    headers["X-Accel-Buffering"] = "no"
    out = web.StreamResponse(status=upstream.status, headers=headers)
    await out.prepare(request)
    return out


class KeptText:
    """Text of a stream kept for scoring up to a limit (beyond it nothing more is kept, and it is not scored), in
    about its own size (`TextPieces`: a list of the pieces, a token or two each, cost ~15 times the text)."""

    __slots__ = ("limit", "overflow", "pieces")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.pieces = TextPieces()
        self.overflow = False

    def append(self, text: str) -> None:
        if self.overflow:
            return
        if self.pieces.size + len(text) > self.limit:
            self.overflow = True
            self.pieces = TextPieces()  # not scored: free it
            return
        self.pieces.append(text)

    def text(self) -> str:
        return self.pieces.text()


class EventRelay(Protocol):
    """What `pump_events` drives: rewrites upstream SSE payloads into `pending` bytes for the app."""

    pending: list[bytes]

    @property
    def closed(self) -> bool:
        """The app's stream is ended (nothing, not even a keep-alive, may follow)."""

    async def on_payload(self, payload: bytes) -> None: ...

    def on_unheld(self, event_type: str | None) -> None:
        """An event too large to hold begins: its bytes reach the app unchanged (`pump_events` puts them in
        `pending`); the relay only counts it (sequence numbers) and notes what it could not split."""

    async def flush(self) -> None: ...

    async def close(self) -> None:
        """End the app's stream cleanly, whatever the upstream did (remaining answer text, final events)."""


async def pump_events(
    out: web.StreamResponse, upstream: UpstreamResponse, record: ExchangeRecord, relay: EventRelay, *,
    flush_first_token: bool = False, max_event_bytes: int = MAX_LINE_BYTES,
) -> bool:
    """Relay an injected SSE stream through `relay`: one write per network read (with `flush_first_token`, the
    first answer text goes out as soon as it is rewritten, not after the rest of its read), the upstream's comments
    forwarded where they came, keep-alive comments while the model writes what the app never sees (neither after the
    stream's end), a clean end whatever the upstream did.  An event over `max_event_bytes` (`replies.max_body_bytes`)
    is not held: its bytes go to the app as they come, unchanged.  False when the app went away (the upstream is
    closed; the record says `incomplete`)."""
    decoder = SSEDecoder(max_event_bytes, pass_unheld=True)
    last_write = now()
    try:
        try:
            async for chunk in upstream.iter_any():
                await _relay_items(decoder.feed(chunk), relay, record, flush_first_token)
                if not relay.pending and not relay.closed and now() - last_write > KEEPALIVE_AFTER_S:
                    # The model is writing its supporting content, which the app never sees: without this the
                    # app's connection would be silent for as long as that takes (direct, it would get chunks).
                    relay.pending.append(KEEPALIVE)
                if relay.pending:
                    last_write = now()
                await relay.flush()
            await _relay_items(decoder.close(), relay, record, False)
            await relay.flush()
        except UPSTREAM_BROKE as error:
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


async def _relay_items(items: list[bytes | Unheld], relay: EventRelay, record: ExchangeRecord, flush_first_token: bool) -> None:
    for item in items:
        if isinstance(item, Comment):  # the upstream's comments, where they came (none after the stream's end)
            if not relay.closed:
                relay.pending.append(item)
            continue
        if isinstance(item, Unheld):  # too large to hold: to the app as it came
            if item.first:
                relay.on_unheld(item.event_type)
            relay.pending.append(item.data)
            continue
        waiting = flush_first_token and record.first_token_at is None
        await relay.on_payload(item)
        if waiting and record.first_token_at is not None:
            await relay.flush()


async def copy_events(out: web.StreamResponse, upstream: UpstreamResponse, record: ExchangeRecord, on_payload: Callable[[bytes], None],
                      on_unheld: Callable[[str | None], None] = lambda event_type: None, *, max_event_bytes: int = MAX_LINE_BYTES) -> bool:
    """Forward the upstream's SSE bytes untouched (comments included) and hand each payload to `on_payload` (a
    copy, read for scoring; an event over `max_event_bytes` is forwarded but not read: its type to `on_unheld`).
    A broken upstream ends the app's stream where its bytes stopped.  False when the app went away (the upstream is
    closed; the record says `incomplete`)."""
    decoder = SSEDecoder(max_event_bytes)
    try:
        try:
            async for chunk in upstream.iter_any():
                await out.write(chunk)
                for payload in decoder.feed(chunk):
                    on_payload(payload)  # type: ignore[arg-type]  # (no Unheld items without pass_unheld)
                decoder.comments.clear()  # forwarded already, with the bytes
                for event_type in decoder.unheld_events:
                    on_unheld(event_type)
                decoder.unheld_events.clear()
        except UPSTREAM_BROKE as error:
            record.outcome, record.error_type = "upstream_error", type(error).__name__
        record.upstream_done_at = now()
        await out.write_eof()
    except (ConnectionResetError, asyncio.CancelledError):  # (the handler is cancelled when the app hangs up)
        record.outcome = "incomplete"
        upstream.close()
        return False
    finally:
        upstream.release()
    return True


class TypedSplitter(Protocol):
    """A shape's splitter of typed events (`ragtap.split.responses_stream`, `ragtap.split.messages_stream`)."""

    released: str  # what the answer gate released, set before the text's last delta is built
    extractor: AnswerStreamExtractor  # the answer's extractor (whether the answer closed, or is not ragtap's JSON)

    def feed(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        """One upstream event in; the events the app receives in its place."""

    def extra_delta(self, text: str) -> dict[str, Any] | None:
        """Answer text a gate lets out between two upstream events, as one more delta event (None: no open text)."""

    def ends_text(self, event: dict[str, Any]) -> bool:
        """`event` completes the split answer text."""

    def text_open(self) -> bool:
        """Answer text was split and its last delta is not out yet."""

    def finish_text(self, event: dict[str, Any] | None) -> StreamResult:
        """The split of the answer, complete (at `event`, or at the end of the stream: None)."""

    def close(self) -> list[dict[str, Any]]:
        """The stream ended: the last answer text still held, as events."""

    def passed_on(self) -> None:
        """An event went to the app unchanged (too large to hold): it takes its place (sequence numbers)."""

    def outcome(self) -> StreamResult:
        """The split, for scoring."""

    @property
    def found_text(self) -> bool:
        """The stream had answer text to split."""


@dataclass(frozen=True, slots=True)
class TypedShape:
    """What a typed-event API shape tells the relay: how to note an event on the record, which rewritten event
    carries answer text (the app's first token), and whether the answer so far goes out before an `error` event."""

    note: Callable[[dict[str, Any], ExchangeRecord], None]
    carries_text: Callable[[dict[str, Any]], bool]
    text_before_error: bool = False
    ends: frozenset[str] = frozenset()  # event types after which the app's stream has ended (no keep-alive follows)
    # Event types that carry no answer text of their own (echoes of the request, text repeated from the deltas):
    # too large to hold, they go to the app unchanged and the split of the deltas still stands.
    no_text: frozenset[str] = frozenset()

    def misses_text(self, unheld: list[str | None]) -> bool:
        """An event too large to hold may have carried answer text (a delta, or an event of no known type)."""
        return any(event_type not in self.no_text for event_type in unheld)


class TypedEventRelay:
    """The typed events (`event: <type>` + `data: {...}`) of an injected stream, rewritten by the shape's splitter
    (an `EventRelay`).  With an answer gate (seam (b)), its release is awaited when the answer is complete, before
    the event that completes it."""

    def __init__(self, out: web.StreamResponse, record: ExchangeRecord, splitter: TypedSplitter, gate: AnswerGate | None, shape: TypedShape) -> None:
        self.out = out
        self.record = record
        self.splitter = splitter
        self.gate = gate
        self.shape = shape
        self.pending: list[bytes] = []
        self.closed = False  # the app's stream has its end (the shape's final event, or close())
        self.unheld: list[str | None] = []  # the types of the events too large to hold (passed on unchanged)
        self.gate_complete: Callable[[], None] | None = getattr(gate, "answer_complete", None)
        if hasattr(gate, "on_ready"):
            gate.on_ready = self.send_text  # type: ignore[union-attr]

    def on_unheld(self, event_type: str | None) -> None:
        self.unheld.append(event_type)
        self.splitter.passed_on()
        if event_type in self.shape.ends:
            self.closed = True

    def send_text(self, text: str) -> None:
        """Text the gate lets out between two events (its optional `on_ready`; written with the next read's events)."""
        event = self.splitter.extra_delta(text)
        if event is not None:
            self._write(event)

    async def _release(self, event: dict[str, Any] | None) -> None:
        assert self.gate is not None
        self.splitter.released = await self.gate.release(self.splitter.finish_text(event))

    def _gate_comment(self) -> None:
        """The gate's optional last word, after the events that close the text (an SSE comment: SDKs ignore it)."""
        comment = getattr(self.gate, "comment", None)
        if comment:
            self.pending.append(b": " + comment.encode() + b"\n\n")
            self.gate.comment = None  # type: ignore[union-attr]

    async def on_payload(self, payload: bytes) -> None:
        event = parse_object(payload, lenient=True)  # (lenient: an echo with a NaN is still restored)
        if event is None:
            self.pending.append(encode_event(payload))  # not ours to judge: pass it on
            return
        self.shape.note(event, self.record)
        released = False
        if self.shape.text_before_error and event.get("type") == "error":  # the answer so far, then the error as it came
            await self._close_text()
        elif self.gate is not None and self.splitter.ends_text(event):
            await self._release(event)
            released = True
        for rewritten in self.splitter.feed(event):
            self._write(rewritten)
        if released:
            self._gate_comment()
        if self.gate_complete is not None and self.splitter.extractor.answer_complete:
            self.gate_complete()  # the answer string closed: the gate need not wait for the end of the stream
            self.gate_complete = None
        if event.get("type") in self.shape.ends:
            self.closed = True

    def _write(self, event: dict[str, Any]) -> None:
        if self.record.first_token_at is None and self.shape.carries_text(event):
            self.record.first_token_at = now()
        self.pending.append(encode_typed(event))

    async def _close_text(self) -> None:
        released = self.gate is not None and self.splitter.text_open()
        if released:
            await self._release(None)
        for event in self.splitter.close():
            self._write(event)
        if released:
            self._gate_comment()

    async def flush(self) -> None:
        if self.pending:
            data = self.pending[0] if len(self.pending) == 1 else b"".join(self.pending)
            self.pending.clear()
            await self.out.write(data)

    async def close(self) -> None:
        await self._close_text()
        await self.flush()
        self.closed = True


def _gate_filter(gate: AnswerGate | None, extractor: Callable[[], AnswerStreamExtractor]) -> Callable[[str], str] | None:
    """The gate's `feed`, telling it first (once) when the reply is not ragtap's JSON and cannot be scored (its
    optional `unscorable`: it then lets the text pass as it is)."""
    if gate is None:
        return None
    unscorable: list[Callable[[str], None]] = [f] if (f := getattr(gate, "unscorable", None)) is not None else []

    def feed(text: str) -> str:
        if unscorable and (reason := extractor().raw_reason) is not None:
            unscorable.pop()(reason)
        return gate.feed(text)

    return feed


async def relay_typed(
    exchange: Exchange, upstream: UpstreamResponse, make_splitter: Callable[[Callable[[str], str] | None], TypedSplitter], shape: TypedShape,
) -> tuple[web.StreamResponse, StreamOutcome]:
    """Relay an injected typed-event stream through the splitter `make_splitter` builds (given the answer gate's
    `feed`, when a gate is open); what it leaves for scoring."""
    out = await open_stream(exchange.request, upstream)
    gate = open_gate(exchange)
    splitter = make_splitter(_gate_filter(gate, lambda: splitter.extractor))
    # One read can hold hundreds of events: the first answer text goes out at once (the app's time to first token).
    relay = TypedEventRelay(out, exchange.record, splitter, gate, shape)
    max_event_bytes = exchange.state.config.replies.max_body_bytes
    if not await pump_events(out, upstream, exchange.record, relay, flush_first_token=True, max_event_bytes=max_event_bytes):
        abandon_gate(gate)
        return out, INCOMPLETE
    result = splitter.outcome()
    reason = REPLY_TOO_LARGE if shape.misses_text(relay.unheld) else result.unscored_reason
    outcome = broken_off(exchange.record, StreamOutcome(result.answer, result.supporting, reason))
    if not splitter.found_text and outcome.unscored_reason is None:
        outcome.unscored_reason = "no_text_content"
    return out, outcome


def broken_off(record: ExchangeRecord, outcome: StreamOutcome) -> StreamOutcome:
    """A stream the upstream did not finish is not scored (unless it is unscored for another reason already)."""
    if record.outcome != "complete" and outcome.unscored_reason is None:
        outcome.unscored_reason = "upstream_broke_off"
    return outcome
