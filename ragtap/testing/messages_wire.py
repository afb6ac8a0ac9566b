"""The Anthropic Messages API wire format (`POST /v1/messages`) as the scripted upstream speaks it.

Shapes follow Anthropic's reference and the `anthropic` SDK's types (`anthropic.types`): a `message` object (`id`
"msg_...", `type` "message", `role` "assistant", `content` blocks, `model`, `stop_reason` end_turn | max_tokens |
tool_use, `stop_sequence`, `usage` with `input_tokens`, `output_tokens`, `cache_creation_input_tokens`,
`cache_read_input_tokens`), and, streamed, typed SSE events (an `event: <type>` line, then `data: {...}`):
`message_start` (the message with empty content), per block `content_block_start`, its deltas (`text_delta`,
`citations_delta`, `input_json_delta`, `thinking_delta`), `content_block_stop`; a `ping` after the first block
starts; then `message_delta` (stop_reason and the cumulative usage) and `message_stop`.  An `error` event (e.g.
`overloaded_error`) may replace the rest of a stream.  Errors before the stream are `{"type": "error", "error":
{"type", "message"}}` with the HTTP status.

A `ScriptedReply` maps on as: `content` the text the model writes (one text block, after `output_prefix` blocks
such as thinking), or `blocks` verbatim (e.g. text blocks carrying `citations`); `finish_reason` "length" ->
`max_tokens`, else `end_turn` (`tool_use` with `tool_calls`); `error_after_deltas` -> an `error` event after that
many text deltas (`error_type`, default `overloaded_error`).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragtap.testing.upstream import ScriptedReply

STOP_REASONS = {"length": "max_tokens", "tool_calls": "tool_use", "stop": "end_turn"}


def anthropic_error(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


class MessagesWire:
    """One scripted reply to one Messages request, as a message object or as its SSE stream."""

    def __init__(self, body: dict[str, Any], reply: ScriptedReply, counter: int) -> None:
        self.body = body
        self.reply = reply
        self.id = f"msg_scripted_{counter:024d}"
        self.model = reply.model or body.get("model", "claude-scripted")

    def _blocks(self) -> list[dict[str, Any]]:
        reply = self.reply
        if reply.blocks is not None:
            return [dict(b) for b in reply.blocks]
        blocks = [dict(b) for b in reply.output_prefix]
        if reply.content or not reply.tool_calls:
            blocks.append({"type": "text", "text": reply.content})
        for i, call in enumerate(reply.tool_calls or ()):
            function = call.get("function", {})
            blocks.append({"type": "tool_use", "id": call.get("id", f"toolu_{i}"), "name": function.get("name", ""),
                           "input": json.loads(function.get("arguments") or "{}")})
        return blocks

    def _stop_reason(self) -> str:
        return "tool_use" if self.reply.tool_calls else STOP_REASONS.get(self.reply.finish_reason, "end_turn")

    def _usage(self, *, output_tokens: int | None = None) -> dict[str, Any]:
        reply = self.reply
        written = reply.completion_tokens if reply.completion_tokens is not None else len(reply.content.split())
        return {
            "input_tokens": reply.prompt_tokens,
            "cache_creation_input_tokens": reply.cache_creation_tokens,
            "cache_read_input_tokens": reply.cache_read_tokens,
            "output_tokens": written if output_tokens is None else output_tokens,
        }

    def message(self) -> dict[str, Any]:
        return {
            "id": self.id, "type": "message", "role": "assistant", "model": self.model, "content": self._blocks(),
            "stop_reason": self._stop_reason(), "stop_sequence": None, "usage": self._usage(),
        }

    def events(self) -> list[dict[str, Any]]:
        reply = self.reply
        start = {**self.message(), "content": [], "stop_reason": None, "usage": self._usage(output_tokens=1)}
        events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
        text_deltas = 0
        step = max(1, reply.piece_chars)
        for index, block in enumerate(self._blocks()):
            kind = block.get("type")
            opening = {**block, "text": ""} if kind == "text" else {**block, "thinking": ""} if kind == "thinking" else \
                {**block, "input": {}} if kind == "tool_use" else block
            if kind == "text" and "citations" in block:
                opening["citations"] = []
            events.append({"type": "content_block_start", "index": index, "content_block": opening})
            if index == 0:
                events.append({"type": "ping"})
            if kind == "text":
                for citation in block.get("citations") or ():
                    events.append({"type": "content_block_delta", "index": index, "delta": {"type": "citations_delta", "citation": citation}})
                text = block["text"]
                for i in range(0, len(text), step):
                    if reply.error_after_deltas is not None and text_deltas >= reply.error_after_deltas:
                        events.append(anthropic_error(reply.error_type, "Overloaded" if reply.error_type == "overloaded_error" else "scripted error"))
                        return events
                    events.append({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text[i:i + step]}})
                    text_deltas += 1
            elif kind == "thinking":
                events.append({"type": "content_block_delta", "index": index, "delta": {"type": "thinking_delta", "thinking": block.get("thinking", "")}})
                events.append({"type": "content_block_delta", "index": index, "delta": {"type": "signature_delta", "signature": block.get("signature", "sig")}})
            elif kind == "tool_use":
                events.append({"type": "content_block_delta", "index": index,
                               "delta": {"type": "input_json_delta", "partial_json": json.dumps(block.get("input", {}))}})
            events.append({"type": "content_block_stop", "index": index})
        usage = self._usage()
        events.append({"type": "message_delta", "delta": {"stop_reason": self._stop_reason(), "stop_sequence": None},
                       "usage": {"output_tokens": usage["output_tokens"]}})
        events.append({"type": "message_stop"})
        return events

    def sse_bytes(self) -> bytes:
        return b"".join(b"event: " + e["type"].encode() + b"\ndata: " + json.dumps(e, ensure_ascii=False).encode() + b"\n\n" for e in self.events())
