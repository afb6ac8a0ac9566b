"""Splitting a streamed, injected reply of the Responses API: its typed events, rewritten one by one.

`ResponsesStreamSplitter.feed(event)` takes one decoded event and returns the events the app receives in its
place (none, one, or two), so that the app's stream is the one it would have received without ragtap:
- the split text is the first `output_text` part of the first `message` item (`response.output_item.added`
  names the item, `response.content_part.added` the part); its `response.output_text.delta` events carry the
  decoded answer text only (`AnswerStreamExtractor`: as soon as it arrives; a delta that carries only supporting
  content or JSON syntax is dropped); `response.output_text.done` carries the whole answer, preceded by one
  delta with whatever the extractor still held; `response.content_part.done`, `response.output_item.done` and
  the final `response.completed` / `response.incomplete` / `response.failed` carry the answer in that part;
- the response objects in `response.created` / `in_progress` / `queued` / the final events echo the app's own
  `instructions` and `text.format` (`restore_echo`);
- `sequence_number` counts the events the app receives (0, 1, 2, ... with no gaps for the dropped deltas);
- every other event (reasoning, other items, annotations, `error`) passes unchanged but for its number.
When the text cannot be split (the model ignored the instruction) the extractor forwards it unchanged, so the
app gets the upstream's text as it was.  Per event the work is constant apart from the extractor's pass over
the new text; the final response object is one rewrite of one part.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ragtap.split.responses import ClientEcho, first_text_part, restore_echo, set_answer, was_truncated
from ragtap.split.stream import DEFAULT_MAX_CHARS, INCOMPLETE_JSON, TRUNCATED, AnswerStreamExtractor, StreamResult

_RESPONSE_EVENTS = frozenset({"response.created", "response.in_progress", "response.queued"})
_FINAL_EVENTS = frozenset({"response.completed", "response.incomplete", "response.failed"})


class ResponsesStreamSplitter:
    def __init__(self, echo: ClientEcho, max_kept_chars: int = DEFAULT_MAX_CHARS, text_filter: Callable[[str], str] | None = None, *,
                 only_ours: bool = False) -> None:
        self.echo = echo
        # `only_ours`: a follow-up turn ragtap did not inject (split_response's `embedded=False` reading)
        self.extractor = AnswerStreamExtractor(max_kept_chars, only_ours=only_ours)
        self.result: StreamResult | None = None
        # The proxy's answer gate (its `feed`), when one is open: every piece of answer text passes through it, and
        # what it lets through is what the app received (`delivered`), which the done events then carry.
        self.text_filter = text_filter
        self.sent_parts: list[str] | None = [] if text_filter is not None else None
        self.released = ""  # the text the gate released when the answer was complete (set by the proxy)
        self.text_closed = False  # the split part's last delta is out (at its `output_text.done`, or at the end)
        self.item_id: str | None = None  # the message item whose first output_text part is split
        self.content_index: int | None = None
        self.delta_template: dict[str, Any] | None = None  # the last delta of the split part, for a closing delta
        self.truncated = False  # the upstream reported max_output_tokens
        self.final: dict[str, Any] | None = None  # the final response object (for usage, ids, status)
        self.next_number = 0

    def feed(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        kind = event.get("type")
        out = [event]
        # An upstream that skips `output_text.done` (some compatible servers): the text ends at the next event that
        # closes its part, its item or the response, which then carries the split answer like the rest.
        before = self._end_text(event) if kind != "response.output_text.done" and self._closes_text(event) else []
        if kind == "response.output_text.delta":
            if self._is_split_part(event):
                out = self._delta(event)
        elif kind == "response.output_text.done":
            if self._is_split_part(event):
                out = self._text_done(event)
        elif kind == "response.content_part.done":
            part = event.get("part")
            if self._is_split_part(event) and isinstance(part, dict) and self.result is not None:
                part["text"] = self.delivered
        elif kind == "response.output_item.done":
            self._item_done(event.get("item"))
        elif kind == "response.output_item.added":
            item = event.get("item")
            if self.item_id is None and isinstance(item, dict) and item.get("type") == "message" and isinstance(item.get("id"), str):
                self.item_id = item["id"]
        elif kind == "response.content_part.added":
            part = event.get("part")
            if (self.content_index is None and event.get("item_id") == self.item_id and self.item_id is not None
                    and isinstance(part, dict) and part.get("type") == "output_text"):
                self.content_index = event.get("content_index")
        elif kind in _RESPONSE_EVENTS or kind in _FINAL_EVENTS:
            response = event.get("response")
            if isinstance(response, dict):
                restore_echo(response, self.echo)
                if kind in _FINAL_EVENTS:
                    self._final(response)
        if before:
            out = before + out
        for item in out:
            if "sequence_number" in item:
                item["sequence_number"] = self.next_number
            self.next_number += 1
        return out

    def passed_on(self) -> None:
        """An event went to the app unchanged (too large to hold): it takes a place in the numbering."""
        self.next_number += 1

    def close(self) -> list[dict[str, Any]]:
        """The stream ended before the split part was done (the upstream broke off): the answer text the
        extractor still holds (and the gate released), as one last delta."""
        if not self.text_open():
            return []
        self.text_closed = True
        closing = self._closing_text(self._finish(truncated=True))
        if not closing:
            return []
        assert self.delta_template is not None
        closing_event = {**self.delta_template, "delta": closing}
        if "sequence_number" in closing_event:
            closing_event["sequence_number"] = self.next_number
        self.next_number += 1
        return [closing_event]

    # --- seam (b): the proxy awaits its gate's release when the answer is complete --------------------------

    def extra_delta(self, text: str) -> dict[str, Any] | None:
        """Answer text the gate let out between two upstream events (its `on_ready`): one more delta event, numbered
        in turn; None when the split text is not open (nothing to attach it to)."""
        if not text or self.text_closed or self.delta_template is None or self.sent_parts is None:
            return None
        self.sent_parts.append(text)
        event = {**self.delta_template, "delta": text}
        if "sequence_number" in event:
            event["sequence_number"] = self.next_number
        self.next_number += 1
        return event

    def ends_text(self, event: dict[str, Any]) -> bool:
        """`event` completes the split text, which is still open: its `output_text.done`, or when the upstream
        skipped that, the `content_part.done` / `output_item.done` / final event after the text."""
        if event.get("type") == "response.output_text.done":
            return not self.text_closed and self._is_split_part(event)
        return self._closes_text(event)

    def text_open(self) -> bool:
        """Answer text was split and its last delta is not out yet (the stream ends without `output_text.done`)."""
        return not self.text_closed and self.delta_template is not None

    def finish_text(self, event: dict[str, Any] | None) -> StreamResult:
        """The split of the answer, complete: at its `output_text.done` (`event`), or at the end of the stream."""
        if event is not None and self.result is None and not isinstance(self.delta_template, dict) and isinstance(event.get("text"), str):
            self._emit(self.extractor.feed(event["text"]))  # no deltas came (or none we could read): split the done text
        if event is None:
            return self._finish(truncated=True)
        response = event.get("response") if event.get("type") in _FINAL_EVENTS else None
        return self._finish(truncated=isinstance(response, dict) and was_truncated(response))

    @property
    def found_text(self) -> bool:
        """A message's output_text part was found to split."""
        return self.item_id is not None

    @property
    def delivered(self) -> str:
        """The answer text the app received."""
        if self.sent_parts is not None:
            return "".join(self.sent_parts)
        return self.result.answer if self.result is not None else ""

    def _emit(self, text: str) -> str:
        if self.text_filter is not None:
            text = self.text_filter(text) if text else text
            if text:
                self.sent_parts.append(text)  # type: ignore[union-attr]
        return text

    def _closing_text(self, result: StreamResult) -> str:
        closing = self._emit(result.remainder) if result.remainder else ""
        if self.released:
            closing += self.released
            self.sent_parts.append(self.released)  # type: ignore[union-attr]
        return closing

    def outcome(self) -> StreamResult:
        result = self.result or self._finish(truncated=True)
        if self.truncated and result.unscored_reason == INCOMPLETE_JSON:
            # The text was done before the final event said why it stopped: the output-token limit.
            return StreamResult(result.remainder, result.answer, result.supporting, result.mode, TRUNCATED)
        return result

    # ---------------------------------------------------------------------------------------------------------

    def _is_split_part(self, event: dict[str, Any]) -> bool:
        if self.item_id is None and event.get("type") == "response.output_text.delta" and isinstance(event.get("item_id"), str):
            self.item_id = event["item_id"]  # an upstream that sends no `output_item.added` (some compatible servers)
        if self.content_index is None and event.get("item_id") == self.item_id and event.get("type") == "response.output_text.delta":
            self.content_index = event.get("content_index")  # ... or no `content_part.added`
        return self.item_id is not None and event.get("item_id") == self.item_id and event.get("content_index") == self.content_index

    def _finish(self, *, truncated: bool) -> StreamResult:
        if self.result is None:
            self.result = self.extractor.finish(truncated=truncated)
        return self.result

    def _delta(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        delta = event.get("delta")
        if self.result is not None or not isinstance(delta, str):
            return [event]
        self.delta_template = event
        text = self._emit(self.extractor.feed(delta))
        if not text:
            return []
        event["delta"] = text
        return [event]

    def _text_done(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        if self.text_closed:
            return [event]
        out = self._end_text(event)
        event["text"] = self.delivered
        out.append(event)
        return out

    def _closes_text(self, event: dict[str, Any]) -> bool:
        """The text is open (deltas came, no `output_text.done` yet) and `event` closes its part, item or response."""
        if self.text_closed or self.delta_template is None:
            return False
        kind = event.get("type")
        if kind == "response.content_part.done":
            return self._is_split_part(event)
        if kind == "response.output_item.done":
            item = event.get("item")
            return isinstance(item, dict) and item.get("id") == self.item_id
        return kind in _FINAL_EVENTS

    def _end_text(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        """The split text is complete at `event`: a closing delta with what the extractor (and the gate) still held."""
        self.text_closed = True
        closing = self._closing_text(self.finish_text(event))
        return [{**self.delta_template, "delta": closing}] if closing and self.delta_template is not None else []

    def _item_done(self, item: Any) -> None:
        if not isinstance(item, dict) or item.get("id") != self.item_id or self.result is None:
            return
        content = item.get("content")
        if isinstance(content, list) and isinstance(self.content_index, int) and 0 <= self.content_index < len(content):
            part = content[self.content_index]
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                part["text"] = self.delivered

    def _final(self, response: dict[str, Any]) -> None:
        self.final = response
        self.truncated = was_truncated(response)
        if self.result is None:
            return
        where = first_text_part(response)
        if where is not None:
            set_answer(response, where, self.delivered)
