"""Attribute builders for the chat span: the request settings and who asked, ragtap's overhead, the captured
input/output messages (under content capture), `error.type`, plus the span name and the verdict label that the
span and the evaluation results share."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ragtap.exchange import ChatMessage, ExchangeRecord
from ragtap.exporters.semconv import (
    GEN_AI_CONVERSATION_ID,
    GEN_AI_INPUT_MESSAGES,
    GEN_AI_OUTPUT_MESSAGES,
    GEN_AI_OUTPUT_TYPE,
    GEN_AI_REQUEST_CHOICE_COUNT,
    GEN_AI_REQUEST_FREQUENCY_PENALTY,
    GEN_AI_REQUEST_MAX_TOKENS,
    GEN_AI_REQUEST_PRESENCE_PENALTY,
    GEN_AI_REQUEST_REASONING_LEVEL,
    GEN_AI_REQUEST_SEED,
    GEN_AI_REQUEST_STOP_SEQUENCES,
    GEN_AI_REQUEST_TEMPERATURE,
    GEN_AI_REQUEST_TOP_P,
    SESSION_ID,
    USER_ID,
)
from ragtap.exporters.settings import OtelSettings
from ragtap.privacy import NO_REDACTION, Redactor
from ragtap.types import Assessment, Verdict

MAX_CAPTURED_MESSAGES = 100  # the last ones: a long chat history keeps its most recent turns


def _error_type(exchange: ExchangeRecord) -> str | None:
    """`error.type`: the proxy's own error, else the HTTP status of an upstream error or a >= 400 reply."""
    error_type = exchange.error_type
    if error_type is None and exchange.outcome == "upstream_error":
        error_type = str(exchange.status) if exchange.status else "upstream_error"
    if error_type is None and exchange.status is not None and exchange.status >= 400:
        error_type = str(exchange.status)
    return error_type


def _request_attributes(exchange: ExchangeRecord, redactor: Redactor = NO_REDACTION) -> dict[str, Any]:
    """The `gen_ai.request.*` settings the app set, `gen_ai.output.type`, and who asked (user, session, conversation:
    written as `[privacy] identity` says, hashed by default)."""
    attrs: dict[str, Any] = {}
    p = exchange.parameters
    if p is not None:
        for key, value in ((GEN_AI_REQUEST_TEMPERATURE, p.temperature), (GEN_AI_REQUEST_TOP_P, p.top_p),
                           (GEN_AI_REQUEST_FREQUENCY_PENALTY, p.frequency_penalty),
                           (GEN_AI_REQUEST_PRESENCE_PENALTY, p.presence_penalty)):
            if value is not None:
                attrs[key] = float(value)
        for key, whole in ((GEN_AI_REQUEST_MAX_TOKENS, p.max_tokens), (GEN_AI_REQUEST_SEED, p.seed)):
            if whole is not None:
                attrs[key] = int(whole)
        if p.choice_count is not None and p.choice_count != 1:  # conditionally required: only when != 1
            attrs[GEN_AI_REQUEST_CHOICE_COUNT] = int(p.choice_count)
        if p.stop_sequences:
            attrs[GEN_AI_REQUEST_STOP_SEQUENCES] = list(p.stop_sequences)
        if p.output_type:
            attrs[GEN_AI_OUTPUT_TYPE] = p.output_type
        if p.reasoning_level:
            attrs[GEN_AI_REQUEST_REASONING_LEVEL] = p.reasoning_level
    user, session = redactor.identity(exchange.user), redactor.identity(exchange.session)
    if user:
        attrs[USER_ID] = user
    if session:
        attrs[SESSION_ID] = session
    conversation = exchange.conversation_id or session  # the app's thread id, else the (hashed) session
    if conversation:
        attrs[GEN_AI_CONVERSATION_ID] = conversation
    return attrs


def _overhead_attributes(exchange: ExchangeRecord) -> dict[str, Any]:
    overhead = exchange.overhead
    if overhead is None:
        return {}
    attrs: dict[str, Any] = {"ragtap.overhead.input_tokens": overhead.input_tokens,
                             "ragtap.overhead.output_tokens": overhead.output_tokens}
    if overhead.cost_usd is not None:
        attrs["ragtap.overhead.cost_usd"] = overhead.cost_usd
    return attrs


def _guard_attributes(exchange: ExchangeRecord) -> dict[str, Any]:
    """What the guard did (never the texts: those are content, kept by the capture store)."""
    guard = exchange.guard
    if guard is None:
        return {}
    attrs: dict[str, Any] = {"ragtap.guard.action": guard.action, "ragtap.guard.outcome": guard.outcome,
                             "ragtap.guard.changed": guard.delivered_answer is not None}
    if guard.trigger is not None:
        attrs["ragtap.guard.trigger"] = guard.trigger
    if guard.removed_claims:
        attrs["ragtap.guard.removed_claims"] = guard.removed_claims
    if guard.retry is not None:
        attrs["ragtap.guard.retry"] = guard.retry
    if guard.waited_ms is not None:
        attrs["ragtap.guard.waited_ms"] = guard.waited_ms
    return attrs


def capped_text(redactor: Redactor, cap: int) -> Callable[[str | None], str]:
    """A text as content capture exports it: cut to `cap` characters, then redacted (the regexes run on at most
    `cap` characters per text, on the event loop)."""
    return lambda text: redactor.text((text or "")[:cap])


def _message_attributes(settings: OtelSettings, exchange: ExchangeRecord, redactor: Redactor = NO_REDACTION) -> dict[str, Any]:
    """`gen_ai.input.messages` (the app's messages) and `gen_ai.output.messages` (the answer the app received)
    in the conventions' JSON shape, each text capped at `content_max_chars` and redacted."""
    capped = capped_text(redactor, max(0, int(settings.content_max_chars)))
    attrs: dict[str, Any] = {}
    if exchange.input_messages:
        messages = exchange.input_messages[-MAX_CAPTURED_MESSAGES:]
        attrs[GEN_AI_INPUT_MESSAGES] = json.dumps([_message_json(m, capped) for m in messages], ensure_ascii=False)
    if exchange.output_text is not None:
        finish = exchange.finish_reasons[0] if exchange.finish_reasons else "stop"
        message = {"role": "assistant", "parts": [{"type": "text", "content": capped(exchange.output_text)}],
                   "finish_reason": finish}
        attrs[GEN_AI_OUTPUT_MESSAGES] = json.dumps([message], ensure_ascii=False)
    return attrs


def _message_json(message: ChatMessage, capped: Callable[[str | None], str]) -> dict[str, Any]:
    parts = []
    for part in message.parts:
        if part.type == "text":
            parts.append({"type": "text", "content": capped(part.content)})
        elif part.type == "tool_call":
            parts.append({"type": "tool_call", "id": part.id, "name": part.name, "arguments": capped(part.arguments)})
        else:
            parts.append({"type": "tool_call_response", "id": part.id, "response": capped(part.content)})
    return {"role": message.role, "parts": parts}


def _verdict_label(assessment: Assessment) -> str:
    return assessment.verdict.value if isinstance(assessment.verdict, Verdict) else str(assessment.verdict)


def _chat_span_name(model: str | None) -> str:
    return f"chat {model}" if model else "chat"
