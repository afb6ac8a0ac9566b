"""POST /v1/responses (the Responses API): recognise -> inject -> forward -> split -> respond, then scoring.

The same three paths as chat completions (`proxy/chat.py`), decided by `recognise_responses`:
- not RAG: the request bytes go upstream unchanged and the reply bytes come back unchanged;
- RAG, ragtap owns the reply format: the instruction is appended to `instructions` and `text.format` asks for
  `json_object`; the reply is split (the whole response object, or the typed stream events) and the echoed
  settings are put back, so the app sees what it would have seen without ragtap (`_injected`);
- RAG, the client owns the reply format (its own `text.format`, `tools`, `background`): forwarded unchanged, the
  answer read from a copy for the scores that need no supporting content (`_observed`);
- hosted file search (a `file_search` tool): forwarded unchanged, and scored when the reply carries the search's
  results (the documents come with the reply, not the request: `_observed` without a context);
- a non-RAG turn continuing an injected one (`previous_response_id`): forwarded unchanged, its reply split in case
  the model answers in JSON as in the stored history (`_injected` without injection, not scored).
The instruction goes into `instructions`, not into `input`: with `previous_response_id` the upstream stores the
input items of each turn (an injected item would pile up in the conversation), while `instructions` are not
carried over to the next turn.  Such a request is scored on what it carries (the new input items).
Whatever ragtap cannot parse, the app receives as the upstream sent it.
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from ragtap.config import InjectSettings
from ragtap.exchange import chat_messages
from ragtap.prompts import prompt_text
from ragtap.proxy.exchange_path import (
    Exchange, SecondReply, StreamOutcome, TooLarge, WholeReply, dumps, forward_json, forward_raw, parse_object, read_bounded,
    read_exchange, read_reply, relay_too_large, request_bytes, respond, retry_without_json_mode, score_later, send_again, send_json,
    settle_whole_reply,
)
from ragtap.proxy.inject import after_own, without_ragtap_field
from ragtap.proxy.passthrough import relay_response
from ragtap.proxy.responses_store import INJECTED_RESPONSES
from ragtap.proxy.responses_stream import note_response, relay_responses_injected, relay_responses_observed
from ragtap.proxy.upstream import response_headers
from ragtap.recognise import recognise_responses
from ragtap.recognise.responses import chat_view, client_owned_format, file_search_context, offers_file_search
from ragtap.split.responses import ClientEcho, first_text_part, set_answer, split_response


def inject_responses(body: dict[str, Any], settings: InjectSettings) -> dict[str, Any]:
    """The Responses request to forward: the instruction after the app's own `instructions`, and JSON output."""
    out = without_ragtap_field(body)
    instruction = prompt_text(settings.prompt)
    instructions = after_own(body.get("instructions"), instruction)
    if instructions is not None:
        out["instructions"] = instructions
    else:  # not a string (the upstream will judge it): the instruction goes last in the input instead
        items = body.get("input")
        items = [{"role": "user", "content": items}] if isinstance(items, str) else list(items) if isinstance(items, list) else []
        out["input"] = [*items, {"role": "developer", "content": instruction}]
    if settings.json_response_format:
        text = body.get("text")
        out["text"] = {**(text if isinstance(text, dict) else {}), "format": {"type": "json_object"}}
    return out


def without_instruction(data: bytes, instruction: str) -> bytes:
    """A reply ragtap cannot parse, without the instruction it echoes (in `instructions`, JSON-escaped either way)."""
    for ascii_only in (False, True):
        escaped = json.dumps(instruction, ensure_ascii=ascii_only)[1:-1].encode()
        data = data.replace(b"\\n\\n" + escaped, b"").replace(escaped, b"")
    return data


def client_echo(body: dict[str, Any]) -> ClientEcho:
    text = body.get("text")
    return ClientEcho(body.get("instructions"), text.get("format") if isinstance(text, dict) else None)


async def handle_responses(request: web.Request) -> web.StreamResponse:
    exchange = await read_exchange(request, "/v1/responses", recognise_responses)
    state, record, body, recognition = exchange.state, exchange.record, exchange.body, exchange.recognition
    if body is not None and state.keep_messages:  # the input items as the chat messages they amount to (span content)
        record.input_messages = chat_messages(chat_view(body)["messages"])
    context = exchange.context
    record.rag_source = context.source if context is not None else None
    # Hosted file search: the documents arrive with the reply.  Forwarded as sent (never injected: the request
    # offers tools), scored when the reply carries the search's results.
    # (unless the app said this is not RAG: `{"ragtap": {"enabled": false}}`, or that retrieval found nothing)
    file_search = (body is not None and recognition is not None and context is None
                   and recognition.reason not in ("disabled", "explicit_empty") and offers_file_search(body))
    if file_search:
        record.recognition = "client_tools"
    follow_up = (body is not None and recognition is not None and not file_search
                 and _follows_injected(exchange, body, recognition.reason))
    state.exporter.exchange_started(record)
    if file_search:
        assert body is not None and recognition is not None
        route = _observed(exchange, without_ragtap_field(body) if recognition.strip_ragtap_field else None, body)
    elif follow_up:
        assert body is not None
        route = _injected(exchange, body, inject=False)
    elif body is None or recognition is None or (context is None and not recognition.strip_ragtap_field):
        route = forward_raw(exchange)
    elif context is None:
        route = forward_json(exchange, without_ragtap_field(body))
    elif recognition.inject and state.config.inject.enabled:
        exchange.mark_injected()
        route = _injected(exchange, body)
    else:
        route = _observed(exchange, without_ragtap_field(body) if recognition.strip_ragtap_field else None)
    response = await respond(exchange, route)
    if (record.injected or follow_up) and record.response_id and body is not None and body.get("store") is not False:
        # The upstream keeps the JSON reply: a later GET of this id is split too (proxy/responses_store.py).
        request.app[INJECTED_RESPONSES].remember(record.response_id, client_echo(body), injected=record.injected)
    return response


def _follows_injected(exchange: Exchange, body: dict[str, Any], reason: str) -> bool:
    """A turn that is not RAG itself, continuing (`previous_response_id`) a response ragtap injected: the model sees
    its earlier JSON replies in the stored history and may answer in JSON again, so the reply is split as an
    injected one would be (nothing is injected, nothing scored; text that is not our JSON passes unchanged)."""
    previous = body.get("previous_response_id")
    return (
        exchange.context is None
        and isinstance(previous, str)
        and reason != "disabled"
        and exchange.state.config.inject.enabled
        and client_owned_format(body) is None
        and exchange.request.app[INJECTED_RESPONSES].get(previous) is not None
    )


def _rejects_json_format(body: bytes) -> bool:
    """An upstream that does not support `text.format` json_object says so in a 400 naming it."""
    return b"json_object" in body or b"text.format" in body


async def _injected(exchange: Exchange, body: dict[str, Any], *, inject: bool = True) -> web.StreamResponse:
    """Forward (with the instruction when `inject`) and split the reply; scored when the exchange is RAG."""
    state, record = exchange.state, exchange.record
    forwarded = inject_responses(body, state.config.inject) if inject else without_ragtap_field(body)
    echo = client_echo(body)
    upstream = await send_json(exchange, request_bytes(forwarded))
    if upstream.status == 400 and inject and state.config.inject.json_response_format:

        async def without_json_mode():  # type: ignore[no-untyped-def]
            if isinstance(body.get("text"), dict):
                forwarded["text"] = body["text"]
            else:
                forwarded.pop("text", None)
            return await send_json(exchange, request_bytes(forwarded))

        retried = await retry_without_json_mode(exchange, upstream, _rejects_json_format, without_json_mode)
        if isinstance(retried, web.StreamResponse):
            return retried
        upstream = retried

    if inject:
        exchange.ask_again = lambda instruction: _ask_again(exchange, forwarded, echo, instruction)  # seam (c), for the guard's retry
    streamed = forwarded.get("stream") is True
    data = await read_reply(exchange, upstream, (lambda: relay_responses_injected(exchange, upstream, echo, only_ours=not inject)) if streamed else None)
    if not isinstance(data, bytes):
        return data
    headers = response_headers(upstream.headers, body_rewritten=True)
    reply = parse_object(data, lenient=True)  # (lenient: a NaN must not bring ragtap's instruction back to the app)
    split = split_response(reply, echo, embedded=inject) if reply is not None else None
    if reply is None or split is None:
        # Not a response object we understand (or no text: a refusal, a function call): only the echo restored.
        if reply is not None:
            note_response(reply, record)
        score_later(exchange, None, None, "upstream_not_json" if reply is None else "no_text_content")
        if reply is None and inject:  # bytes ragtap cannot read: as sent, but never with ragtap's instruction in them
            data = without_instruction(data, prompt_text(state.config.inject.prompt))
        return web.Response(status=upstream.status, body=(dumps(reply) if reply is not None else None) or data, headers=headers)
    note_response(reply, record)
    if exchange.context is not None:
        where = first_text_part(reply)
        assert where is not None  # (the split found it)
        await settle_whole_reply(exchange, WholeReply(split, lambda text: set_answer(reply, where, text), reply), headers)
    return web.Response(status=upstream.status, body=dumps(reply) or data, headers=headers)


async def _ask_again(exchange: Exchange, forwarded: dict[str, Any], echo: ClientEcho, instruction: str) -> SecondReply | None:
    """Seam (c): the injected request once more, not streamed, with `instruction` after the instructions."""
    own = forwarded.get("instructions")
    if own is None or isinstance(own, str):
        again = {**forwarded, "instructions": f"{own or ''}\n\n{instruction}".strip(), "stream": False}
    else:  # (as `inject_responses` does with instructions that are not a string)
        items = forwarded.get("input") if isinstance(forwarded.get("input"), list) else []
        again = {**forwarded, "input": [*items, {"role": "developer", "content": instruction}], "stream": False}
    reply = await send_again(exchange, again)
    split = split_response(reply, echo, embedded=True) if reply is not None else None
    if reply is None or split is None:
        return None

    def write(body: dict[str, Any], text: str) -> None:
        where = first_text_part(body)
        if where is not None:
            set_answer(body, where, text)
        if isinstance(body.get("id"), str):  # the id the app now holds: a later retrieve of it is split too
            exchange.record.response_id = body["id"]

    return SecondReply(split, reply, write)


async def _observed(exchange: Exchange, forwarded: dict[str, Any] | None, file_search_request: dict[str, Any] | None = None) -> web.StreamResponse:
    """Forward unchanged, score from a copy.  With `file_search_request` (the request) and no context, the
    documents come from the reply's hosted file search."""
    record = exchange.record
    upstream = await send_json(exchange, exchange.raw if forwarded is None else request_bytes(forwarded))
    if upstream.status != 200:
        return await relay_response(exchange.request, upstream, record, decompressed=True)
    if "text/event-stream" in upstream.headers.get("Content-Type", ""):
        response, outcome, reply = await relay_responses_observed(exchange, upstream)
    else:
        data = await read_bounded(upstream, record, exchange.state.config.replies.max_body_bytes)
        if isinstance(data, TooLarge):
            return await relay_too_large(exchange, upstream, data, scored=True)
        response = web.Response(status=upstream.status, body=data, headers=response_headers(upstream.headers, body_rewritten=True))
        reply = parse_object(data, lenient=True)
        where = first_text_part(reply) if reply is not None else None
        if reply is not None:
            note_response(reply, record)
        outcome = StreamOutcome(where.part["text"]) if where is not None else StreamOutcome("", None, "no_text_content")
    if exchange.context is None and file_search_request is not None and reply is not None:
        exchange.context = file_search_context(file_search_request, reply)
        record.rag_source = exchange.context.source if exchange.context is not None else None
    score_later(exchange, outcome.answer, None, outcome.unscored_reason)
    return response
