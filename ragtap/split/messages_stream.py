"""Splitting a streamed, injected reply of the Anthropic Messages API: its typed events, rewritten one by one.

`MessagesStreamSplitter.feed(event)` takes one decoded event and returns the events the app receives in its
place (none, one, or two), so that the app's stream is the one it would have received without ragtap:
- the split text is the first `text` block (`content_block_start` names its `index`); its `text_delta` events
  carry the decoded answer text only (`AnswerStreamExtractor` with the Messages lead-in allowance, see
  `ragtap.split.messages`): a delta that carries only the preamble, JSON syntax or supporting content is dropped;
  the block's `content_block_stop` is preceded by one delta with whatever the extractor still held;
- every other event (`message_start`, `ping`, other blocks, `message_delta` with stop_reason and usage,
  `message_stop`, `error`) passes unchanged: the indices, the usage and the stop reason stay the upstream's.
When the text cannot be split (the model ignored the instruction) the extractor forwards it unchanged.
Per event the work is constant apart from the extractor's pass over the new text.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ragtap.split.messages import LEAD_IN_CHARS
from ragtap.split.stream import DEFAULT_MAX_CHARS, INCOMPLETE_JSON, TRUNCATED, AnswerStreamExtractor, StreamResult


class MessagesStreamSplitter:
    def __init__(self, max_kept_chars: int = DEFAULT_MAX_CHARS, text_filter: Callable[[str], str] | None = None) -> None:
        self.extractor = AnswerStreamExtractor(max_kept_chars, lead_in=LEAD_IN_CHARS)
        # The proxy's answer gate (its `feed`), when one is open: every piece of answer text passes through it.
        self.text_filter = text_filter
        self.released = ""  # the text the gate released when the answer was complete (set by the proxy)
        self.index: int | None = None  # the content block whose text is split
        self.result: StreamResult | None = None
        self.text_closed = False  # the split block's last delta is out
        self.truncated = False  # the upstream stopped at max_tokens

    def feed(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        kind = event.get("type")
        if kind == "content_block_delta":
            if event.get("index") == self.index and self.index is not None and not self.text_closed:
                delta = event.get("delta")
                if isinstance(delta, dict) and delta.get("type") == "text_delta" and isinstance(delta.get("text"), str):
                    text = self._emit(self.extractor.feed(delta["text"]))
                    if not text:
                        return []
                    delta["text"] = text
            return [event]
        if kind == "content_block_start":
            block = event.get("content_block")
            if self.index is None and isinstance(block, dict) and block.get("type") == "text" and isinstance(event.get("index"), int):
                self.index = event["index"]
                if isinstance(block.get("text"), str) and block["text"]:  # (some servers start the block with text)
                    block["text"] = self._emit(self.extractor.feed(block["text"]))
            return [event]
        if kind == "content_block_stop":
            if self.ends_text(event):
                self.text_closed = True
                closing = self._closing_text(self.finish_text(event))
                return [self._delta(closing), event] if closing else [event]
            return [event]
        if kind == "message_delta":
            delta = event.get("delta")
            if isinstance(delta, dict) and delta.get("stop_reason") == "max_tokens":
                self.truncated = True
        return [event]

    def passed_on(self) -> None:
        """An event went to the app unchanged (too large to hold): Messages events carry no numbers to keep."""

    def close(self) -> list[dict[str, Any]]:
        """The stream ended (or an error event came) while the split block was open: the text the extractor still
        holds (and the gate released), as one last delta."""
        if not self.text_open():
            return []
        self.text_closed = True
        closing = self._closing_text(self.finish_text(None))
        return [self._delta(closing)] if closing else []

    def outcome(self) -> StreamResult:
        result = self.result or self._finish(truncated=True)
        if self.truncated and result.unscored_reason == INCOMPLETE_JSON:
            # The text was done before message_delta said why it stopped: the output-token limit.
            return StreamResult(result.remainder, result.answer, result.supporting, result.mode, TRUNCATED)
        return result

    # --- seam (b): the proxy awaits its gate's release when the answer is complete --------------------------

    def extra_delta(self, text: str) -> dict[str, Any] | None:
        """Answer text the gate let out between two upstream events (its `on_ready`): one more `text_delta`; None
        when the split block is not open (nothing to attach it to)."""
        return self._delta(text) if text and self.text_open() else None

    def ends_text(self, event: dict[str, Any]) -> bool:
        """`event` closes the split block, which is still open."""
        return event.get("type") == "content_block_stop" and self.index is not None and event.get("index") == self.index and not self.text_closed

    @property
    def found_text(self) -> bool:
        """A text block was found to split."""
        return self.index is not None

    def text_open(self) -> bool:
        return self.index is not None and not self.text_closed

    def finish_text(self, event: dict[str, Any] | None) -> StreamResult:
        """The split of the answer, complete: at its block's `content_block_stop` (`event`; whether it was cut is
        known only later), or at the end of the stream (None)."""
        return self._finish(truncated=event is None)

    # ---------------------------------------------------------------------------------------------------------

    def _finish(self, *, truncated: bool) -> StreamResult:
        if self.result is None:
            self.result = self.extractor.finish(truncated=truncated)
        return self.result

    def _emit(self, text: str) -> str:
        if self.text_filter is not None and text:
            return self.text_filter(text)
        return text

    def _closing_text(self, result: StreamResult) -> str:
        return (self._emit(result.remainder) if result.remainder else "") + self.released

    def _delta(self, text: str) -> dict[str, Any]:
        return {"type": "content_block_delta", "index": self.index, "delta": {"type": "text_delta", "text": text}}
