"""POST /v1/messages (the Anthropic Messages API) on the exchange path (`proxy/exchange_path/`).

Decided by `recognise_messages`:
- not RAG: the request bytes go upstream unchanged and the reply bytes come back unchanged;
- RAG, ragtap owns the reply format: the instruction is added to `system` (after the app's own system prompt:
  a string is extended, a list of blocks gets one more text block, so the app's `cache_control` breakpoints keep
  their prefix) and the reply is split, whole or streamed (`_injected`);
- RAG, the client owns the reply format (`tools`, extended thinking, `output_config.format`, a prefill):
  forwarded unchanged, the answer read from a copy for the scores that need no supporting content (`_observed`);
- RAG with citations enabled on the documents: forwarded unchanged, and the spans Claude cited are the
  supporting content (`_observed` with `cited`).
ragtap's own errors on this route are in Anthropic's error shape (`proxy/errors.py`, `anthropic_error`); the
upstream's reach the app unchanged.  Whatever ragtap cannot parse, the app receives as the upstream sent it.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from ragtap.exchange import chat_messages
from ragtap.config import InjectSettings
from ragtap.prompts import prompt_text
from ragtap.proxy.exchange_path import (
    Exchange, SecondReply, StreamOutcome, WholeReply, dumps, forward_json, forward_raw, parse_object, read_exchange, read_reply,
    request_bytes, respond, score_later, send_again, send_json, settle_whole_reply,
)
from ragtap.proxy.inject import after_own, without_ragtap_field
from ragtap.proxy.messages_stream import note_message, relay_messages_injected, relay_messages_observed
from ragtap.proxy.upstream import response_headers
from ragtap.recognise.messages import messages_view, recognise_messages
from ragtap.split.messages import NO_CITATIONS, cited_reply, first_text_block, reply_text, split_message

PROVIDER = "anthropic"  # gen_ai.provider.name of the exchanges on this route


def inject_messages(body: dict[str, Any], settings: InjectSettings) -> dict[str, Any]:
    """The Messages request to forward: the instruction after the app's own `system` prompt."""
    out = without_ragtap_field(body)
    instruction = prompt_text(settings.prompt)
    system = body.get("system")
    text = after_own(system, instruction)
    if text is not None:
        out["system"] = text
    elif isinstance(system, list):  # system blocks: one more, after the app's (its cache breakpoints keep their prefix)
        out["system"] = [*system, {"type": "text", "text": instruction}]
    # (neither text nor blocks: the upstream will judge it; ragtap adds nothing it could make worse)
    return out


async def handle_messages(request: web.Request) -> web.StreamResponse:
    exchange = await read_exchange(request, "/v1/messages", recognise_messages)
    state, record, body, recognition = exchange.state, exchange.record, exchange.body, exchange.recognition
    record.provider = PROVIDER
    if body is not None and state.keep_messages:  # the turns as the chat messages they amount to (span content)
        record.input_messages = chat_messages(messages_view(body)["messages"])
    context = exchange.context
    record.rag_source = context.source if context is not None else None
    state.exporter.exchange_started(record)
    if body is None or recognition is None or (context is None and not recognition.strip_ragtap_field):
        route = forward_raw(exchange)
    elif context is None:
        route = forward_json(exchange, without_ragtap_field(body))
    elif recognition.inject and state.config.inject.enabled:
        exchange.mark_injected()
        route = _injected(exchange, body)
    else:
        forwarded = without_ragtap_field(body) if recognition.strip_ragtap_field else None
        route = _observed(exchange, forwarded, cited=recognition.reason == "client_citations")
    return await respond(exchange, route)


async def _injected(exchange: Exchange, body: dict[str, Any]) -> web.StreamResponse:
    state, record = exchange.state, exchange.record
    forwarded = inject_messages(body, state.config.inject)
    upstream = await send_json(exchange, request_bytes(forwarded))
    exchange.ask_again = lambda instruction: _ask_again(exchange, forwarded, instruction)  # seam (c), for the guard's retry
    data = await read_reply(exchange, upstream, (lambda: relay_messages_injected(exchange, upstream)) if forwarded.get("stream") is True else None)
    if not isinstance(data, bytes):
        return data
    headers = response_headers(upstream.headers, body_rewritten=True)
    message = parse_object(data)
    split = split_message(message) if message is not None else None
    if message is None or split is None:
        # Not a message we understand (or no text: a refusal, a tool call): returned untouched.
        if message is not None:
            note_message(message, record)
        score_later(exchange, None, None, "upstream_not_json" if message is None else "no_text_content")
        return web.Response(status=upstream.status, body=data, headers=headers)
    note_message(message, record)
    block = first_text_block(message)
    assert block is not None  # (the split found it)
    await settle_whole_reply(exchange, WholeReply(split, lambda text: block.__setitem__("text", text), message), headers)
    return web.Response(status=upstream.status, body=dumps(message) or data, headers=headers)


async def _ask_again(exchange: Exchange, forwarded: dict[str, Any], instruction: str) -> SecondReply | None:
    """Seam (c): the injected request once more, not streamed, with `instruction` after the system prompt."""
    system = forwarded.get("system")
    text = after_own(system, instruction)
    again = {**forwarded, "stream": False}
    if text is not None:
        again["system"] = text
    elif isinstance(system, list):
        again["system"] = [*system, {"type": "text", "text": instruction}]
    message = await send_again(exchange, again)
    split = split_message(message) if message is not None else None
    if message is None or split is None:
        return None
    return SecondReply(split, message, _write_answer)


def _write_answer(message: dict[str, Any], text: str) -> None:
    block = first_text_block(message)
    if block is not None:
        block["text"] = text


async def _observed(exchange: Exchange, forwarded: dict[str, Any] | None, *, cited: bool) -> web.StreamResponse:
    upstream = await send_json(exchange, exchange.raw if forwarded is None else request_bytes(forwarded))
    data = await read_reply(exchange, upstream, lambda: relay_messages_observed(exchange, upstream, cited=cited))
    if not isinstance(data, bytes):
        return data
    message = parse_object(data)
    if message is not None:
        note_message(message, exchange.record)
    outcome = _observed_outcome(message, cited)
    score_later(exchange, outcome.answer, outcome.supporting, outcome.unscored_reason)
    return web.Response(status=upstream.status, body=data, headers=response_headers(upstream.headers, body_rewritten=True))


def _observed_outcome(message: dict[str, Any] | None, cited: bool) -> StreamOutcome:
    if message is None:
        return StreamOutcome("", None, "upstream_not_json")
    if not cited:
        text = reply_text(message)
        return StreamOutcome(text) if text is not None else StreamOutcome("", None, "no_text_content")
    answer, spans = cited_reply(message)
    if answer is None:
        return StreamOutcome("", None, "no_text_content")
    supporting = spans.supporting
    return StreamOutcome(answer, supporting, None if supporting is not None else NO_CITATIONS)
