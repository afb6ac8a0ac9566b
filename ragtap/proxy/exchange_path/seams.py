"""The two places where a step may change the answer the app receives (issue 22's guard plugs in here).

(a) A whole (non-streamed) reply: `WholeReplyStep.on_whole_reply(exchange, reply)` runs once per split reply,
    after the split and before the response body is built (`handoff.settle_whole_reply`).  The step may await
    the assessment (`handoff.assess_now(exchange, timeout)`: scored once, shared with the debug headers) and
    replace the answer text (`reply.replace_answer(text)`).  The API shape's own writer puts the text where that
    shape carries it (chat: `choices[0].message.content`; Responses: the split `output_text` part; Messages: the
    answer's text block), so ids, usage and finish/stop reasons stay the upstream's: the app is billed for what
    the model wrote, and sees why it stopped.
(b) A stream: every piece of answer text the splitter produces passes through one `AnswerGate` before the relay
    wraps it in the shape's event (chat: a `delta.content` chunk; Responses: `response.output_text.delta`;
    Messages: a `text_delta`).  `feed(text)` returns the text to send now: the same (pass), "" (hold back or
    drop), or other text (replace).  When the answer is complete, the relay awaits `release(result)` (the
    split's answer, supporting content and unscored reason: what scoring needs) and sends what it returns as the
    last answer text, before the shape's closing events (chat: the finish_reason chunk and [DONE]; Responses:
    `output_text.done` and after, which then carry the text the app received; Messages: `content_block_stop`,
    `message_delta`, `message_stop`).  Held text must be released (or replaced) there: nothing else sends it.
    A gate that needs the verdict awaits `handoff.assess_split(exchange, result, timeout)` in `release`: the
    stream's split is scored once, then, and not again when the stream ends.
    Optional parts of a gate, used when present: `answer_complete()` (the relay tells it the answer string has
    closed, before the rest of the stream), `on_ready` (the relay sets it to a function that sends text at once,
    so a gate can let held text out between two pieces), `unscorable(reason)` (the reply is not ragtap's JSON:
    told before its first text), `abandon()` (the app went away: `release` will not come), and `comment` (read
    after `release`: one SSE comment line, which SDKs ignore, written after the text).
(c) Asking again: a route that can sets `exchange.ask_again` (`AskAgain`): the injected request sent once more
    with one more instruction, its reply split like the first (`SecondReply`); a whole-reply step may deliver it
    with `reply.adopt(second, text)` (then its id, usage and finish reason go with its text).

Steps are given to the app (`build_app(..., steps=ExchangeSteps(...))`, kept in `ProxyState.steps`).  With no
step (the default) the path does no extra work: one empty-tuple check per reply.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ragtap.proxy.state import ExchangeSteps
from ragtap.split.stream import StreamResult
from ragtap.types import SplitReply

if TYPE_CHECKING:
    from ragtap.proxy.exchange_path.read import Exchange


class WholeReply:
    """A split whole reply on its way to the app: its split, the writer that puts answer text into the body, and
    (for a step that annotates) the response object being built and its headers."""

    __slots__ = ("_write", "body", "headers", "replaced", "split")

    def __init__(self, split: SplitReply, write: Callable[[str], None], body: dict[str, Any] | None = None) -> None:
        self.split = split
        self._write = write
        self.body = body  # the decoded response object the app receives (chat: the completion)
        self.headers: Any = None  # its headers (set by `settle_whole_reply`)
        self.replaced: str | None = None  # the text a step put in place of the split answer

    @property
    def answer(self) -> str:
        """The answer text the app will receive."""
        return self.split.answer if self.replaced is None else self.replaced

    def replace_answer(self, text: str) -> None:
        self._write(text)
        self.replaced = text

    def adopt(self, second: SecondReply, text: str) -> None:
        """The app receives `second`'s reply instead (its id, usage, finish reason) with `text` as its answer."""
        if self.body is None:
            self.replace_answer(text)
            return
        self.body.clear()
        self.body.update(second.envelope)
        second.write(self.body, text)
        self.replaced = text


@dataclass(frozen=True, slots=True)
class SecondReply:
    """The upstream's answer to the same request asked again (`Exchange.ask_again`), split like the first:
    `envelope` is its decoded response object and `write(body, text)` puts answer text where the shape carries it."""

    split: SplitReply
    envelope: dict[str, Any]
    write: Callable[[dict[str, Any], str], None]


# Asks the upstream the exchange's injected request once more with one more instruction (the guard's retry); set
# by a route that can (chat, Responses), None when it fails (its tokens are ragtap's: `record.retry_*_tokens`).
AskAgain = Callable[[str], Awaitable[SecondReply | None]]


class WholeReplyStep(Protocol):
    async def on_whole_reply(self, exchange: Exchange, reply: WholeReply) -> None:
        """Seam (a): may await `assess_now(exchange, ...)` and call `reply.replace_answer(...)`."""


class AnswerGate(Protocol):
    """Seam (b): the answer text of one stream, on its way to the app."""

    def feed(self, text: str) -> str:
        """Answer text the splitter produced; the text to send now ("" holds it back or drops it)."""

    async def release(self, result: StreamResult) -> str:
        """The answer is complete: the text to send last (held text, a replacement, or "")."""


# Builds the gate of one streamed exchange (None: this exchange needs none).
GateFactory = Callable[["Exchange"], AnswerGate | None]

__all__ = [
    "AnswerGate", "AskAgain", "ExchangeSteps", "GateFactory", "SecondReply", "WholeReply", "WholeReplyStep", "abandon_gate", "open_gate",
]


class _Chain:
    """Several gates, the text passing through each in order."""

    __slots__ = ("gates",)

    def __init__(self, gates: Sequence[AnswerGate]) -> None:
        self.gates = tuple(gates)

    def feed(self, text: str) -> str:
        for gate in self.gates:
            text = gate.feed(text)
        return text

    async def release(self, result: StreamResult) -> str:
        text = ""
        for gate in self.gates:
            text = gate.feed(text) if text else text
            text += await gate.release(result)
        return text


def abandon_gate(gate: AnswerGate | None) -> None:
    """The app went away mid-stream: a gate that has an `abandon()` stops its work (checks, timers)."""
    abandon = getattr(gate, "abandon", None)
    if abandon is not None:
        abandon()


def open_gate(exchange: Exchange) -> AnswerGate | None:
    """The gate of one streamed exchange, or None (no step wants one: the relay passes text straight on)."""
    factories = exchange.state.steps.stream_gates
    if not factories:
        return None
    gates = [gate for factory in factories if (gate := factory(exchange)) is not None]
    if not gates:
        return None
    return gates[0] if len(gates) == 1 else _Chain(gates)
