"""The Responses API wire format (`POST /v1/responses`) as the scripted upstream speaks it.

Shapes follow the OpenAI reference and the `openai` SDK's types (`openai.types.responses`): a `response` object
(`id` "resp_...", `object` "response", `status` completed | incomplete, `incomplete_details`, the echoed request
settings `instructions` / `text` / `tools`, `output` items, `usage` with `input_tokens` / `output_tokens` and
their details), and, streamed, typed SSE events, each an `event: <type>` line plus `data: {...}` with a
`sequence_number` from 0:
`response.created`, `response.in_progress`, then per output item `response.output_item.added` (and for the
message `response.content_part.added`, `response.output_text.delta` ..., `response.output_text.done`,
`response.content_part.done`), `response.output_item.done`, and last `response.completed` (or
`response.incomplete` when the reply hit `max_output_tokens`).  There is no `[DONE]` sentinel.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragtap.testing.upstream import ScriptedReply


class ResponsesWire:
    """One scripted reply to one Responses request, as a response object or as its SSE stream."""

    def __init__(self, body: dict[str, Any], reply: ScriptedReply, counter: int) -> None:
        self.body = body
        self.reply = reply
        self.id = f"resp_scripted_{counter}"
        self.message_id = f"msg_scripted_{counter}"
        self.created_at = int(time.time())
        self.truncated = reply.finish_reason == "length"

    # --- the response object -------------------------------------------------------------------------------

    def _usage(self) -> dict[str, Any]:
        reply = self.reply
        output_tokens = reply.completion_tokens if reply.completion_tokens is not None else len(reply.content.split())
        return {
            "input_tokens": reply.prompt_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": reply.prompt_tokens + output_tokens,
        }

    def _message(self, text: str | None, status: str) -> dict[str, Any]:
        content = [] if text is None else [{"type": "output_text", "annotations": [], "logprobs": [], "text": text}]
        return {"id": self.message_id, "type": "message", "status": status, "content": content, "role": "assistant"}

    def _function_calls(self) -> list[dict[str, Any]]:
        calls = []
        for i, call in enumerate(self.reply.tool_calls or ()):
            function = call.get("function", {})
            calls.append({
                "id": f"fc_scripted_{i}", "type": "function_call", "status": "completed", "call_id": call.get("id", f"call_{i}"),
                "name": function.get("name", ""), "arguments": function.get("arguments", "{}"),
            })
        return calls

    def output(self) -> list[dict[str, Any]]:
        if self.reply.tool_calls:
            return [*self.reply.output_prefix, *self._function_calls()]
        return [*self.reply.output_prefix, self._message(self.reply.content, "incomplete" if self.truncated else "completed")]

    def response(self, *, status: str | None = None, output: list[dict[str, Any]] | None = None, usage: bool = True) -> dict[str, Any]:
        body = self.body
        text = body.get("text") if isinstance(body.get("text"), dict) else {}
        final = "incomplete" if self.truncated else "completed"
        return {
            "id": self.id,
            "object": "response",
            "created_at": self.created_at,
            "status": status or final,
            "background": bool(body.get("background", False)),
            "error": None,
            "incomplete_details": {"reason": "max_output_tokens"} if self.truncated and (status or final) == "incomplete" else None,
            "instructions": body.get("instructions"),
            "max_output_tokens": body.get("max_output_tokens"),
            "max_tool_calls": None,
            "model": self.reply.model or body.get("model", "scripted-model"),
            "output": self.output() if output is None else output,
            "parallel_tool_calls": True,
            "previous_response_id": body.get("previous_response_id"),
            "prompt_cache_key": None,
            "reasoning": {"effort": None, "summary": None},
            "safety_identifier": None,
            "service_tier": "default",
            "store": body.get("store", True),
            "temperature": body.get("temperature", 1.0),
            "text": {"format": text.get("format", {"type": "text"}), "verbosity": text.get("verbosity", "medium")},
            "tool_choice": body.get("tool_choice", "auto"),
            "tools": body.get("tools", []),
            "top_logprobs": 0,
            "top_p": body.get("top_p", 1.0),
            "truncation": "disabled",
            "usage": self._usage() if usage else None,
            "user": body.get("user"),
            "metadata": body.get("metadata", {}),
        }

    # --- the stream ----------------------------------------------------------------------------------------

    def events(self) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []

        def add(kind: str, **fields: Any) -> None:
            events.append({"type": kind, "sequence_number": len(events), **fields})

        add("response.created", response=self.response(status="in_progress", output=[], usage=False))
        add("response.in_progress", response=self.response(status="in_progress", output=[], usage=False))
        items = self.output()
        for index, item in enumerate(items):
            if item.get("type") != "message":
                add("response.output_item.added", output_index=index, item={**item, "status": "in_progress"} if "status" in item else item)
                add("response.output_item.done", output_index=index, item=item)
                continue
            add("response.output_item.added", output_index=index, item=self._message(None, "in_progress"))
            ids = {"item_id": self.message_id, "output_index": index, "content_index": 0}
            add("response.content_part.added", **ids, part={"type": "output_text", "annotations": [], "logprobs": [], "text": ""})
            content, step = self.reply.content, max(1, self.reply.piece_chars)
            for n, start in enumerate(range(0, len(content), step)):
                if self.reply.error_after_deltas is not None and n >= self.reply.error_after_deltas:
                    add("error", code="server_error", message="The server had an error while processing your request.", param=None)
                    return events
                add("response.output_text.delta", **ids, delta=content[start : start + step], logprobs=[])
            add("response.output_text.done", **ids, text=content, logprobs=[])
            add("response.content_part.done", **ids, part={"type": "output_text", "annotations": [], "logprobs": [], "text": content})
            add("response.output_item.done", output_index=index, item=item)
        final = self.response()
        add("response.incomplete" if final["status"] == "incomplete" else "response.completed", response=final)
        return events

    def sse_bytes(self) -> bytes:
        return b"".join(
            b"event: " + e["type"].encode() + b"\ndata: " + json.dumps(e, ensure_ascii=False).encode() + b"\n\n" for e in self.events()
        )
