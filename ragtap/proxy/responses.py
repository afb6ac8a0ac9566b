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

import asyncio
from typing import Any

from aiohttp import web

from ragtap.config import InjectSettings
from ragtap.exchange import ExchangeRecord, chat_messages
from ragtap.prompts import prompt_text
from ragtap.proxy.chat import (  # the chat path's helpers, shared rather than copied
    _after_response,
    _answer,
    _defer_scoring,
    _dumps,
    _forward_json,
    _interaction,
    _parse_object,
    _read_bounded,
    _read_exchange,
    _relay_too_large,
    _request_bytes,
    _score_split,
    _send,
    _PENDING,
    _TooLarge,
)
from ragtap.proxy.errors import UpstreamUnavailable, openai_error
from ragtap.proxy.inject import without_ragtap_field
from ragtap.proxy.passthrough import forward_unchanged, relay_response
from ragtap.proxy.responses_store import INJECTED_RESPONSES
from ragtap.proxy.responses_stream import note_response, relay_responses_injected, relay_responses_observed
from ragtap.proxy.state import STATE, ProxyState
from ragtap.proxy.stream import StreamOutcome
from ragtap.proxy.upstream import response_headers
from ragtap.recognise import recognise_responses
from ragtap.recognise.responses import chat_view, client_owned_format, file_search_context, offers_file_search
from ragtap.split.responses import ClientEcho, first_text_part, split_response
from ragtap.types import RagContext


def inject_responses(body: dict[str, Any], settings: InjectSettings) -> dict[str, Any]:
    """The Responses request to forward: the instruction after the app's own `instructions`, and JSON output."""
    out = without_ragtap_field(body)
    instruction = prompt_text(settings.prompt)
    own = body.get("instructions")
    if own is None or (isinstance(own, str) and not own.strip()):
        out["instructions"] = instruction
    elif isinstance(own, str):
        out["instructions"] = own + "\n\n" + instruction
    else:  # not a string (the upstream will judge it): the instruction goes last in the input instead
        items = body.get("input")
        items = [{"role": "user", "content": items}] if isinstance(items, str) else list(items) if isinstance(items, list) else []
        out["input"] = [*items, {"role": "developer", "content": instruction}]
    if settings.json_response_format:
        text = body.get("text")
        out["text"] = {**(text if isinstance(text, dict) else {}), "format": {"type": "json_object"}}
    return out


def client_echo(body: dict[str, Any]) -> ClientEcho:
    text = body.get("text")
    return ClientEcho(body.get("instructions"), text.get("format") if isinstance(text, dict) else None)


async def handle_responses(request: web.Request) -> web.StreamResponse:
    state = request.app[STATE]
    raw, record, body, recognition = await _read_exchange(request, state, "/v1/responses", recognise_responses)
    if body is not None and state.keep_messages:  # the input items as the chat messages they amount to (span content)
        record.input_messages = chat_messages(chat_view(body)["messages"])
    context = recognition.context if recognition is not None else None
    record.rag_source = context.source if context is not None else None
    # Hosted file search: the documents arrive with the reply.  Forwarded as sent (never injected: the request
    # offers tools), scored when the reply carries the search's results.
    # (unless the app said this is not RAG: `{"ragtap": {"enabled": false}}`, or that retrieval found nothing)
    file_search = (body is not None and recognition is not None and context is None
                   and recognition.reason not in ("disabled", "explicit_empty") and offers_file_search(body))
    if file_search:
        record.recognition = "client_tools"
    follow_up = (body is not None and recognition is not None and not file_search
                 and _follows_injected(request, state, body, context, recognition.reason))
    state.exporter.exchange_started(record)
    if file_search:
        assert body is not None and recognition is not None
        forwarded = without_ragtap_field(body) if recognition.strip_ragtap_field else None
        route = _observed(request, state, raw, forwarded, None, record, body)
    elif follow_up:
        assert body is not None
        route = _injected(request, state, body, None, record, inject=False)
    elif body is None or recognition is None or (context is None and not recognition.strip_ragtap_field):
        route = forward_unchanged(request, state, raw, record)
    elif context is None:
        route = _forward_json(request, state, without_ragtap_field(body), record)
    elif recognition.inject and state.config.inject.enabled:
        record.injected = True
        route = _injected(request, state, body, context, record)
    else:
        forwarded = without_ragtap_field(body) if recognition.strip_ragtap_field else None
        route = _observed(request, state, raw, forwarded, context, record)
    response = await _answer(state, record, route)
    if (record.injected or follow_up) and record.response_id and body is not None and body.get("store") is not False:
        # The upstream keeps the JSON reply: a later GET of this id is split too (proxy/responses_store.py).
        request.app[INJECTED_RESPONSES].remember(record.response_id, client_echo(body))
    asyncio.get_running_loop().call_soon(_after_response, state, record, request.get(_PENDING))
    return response


def _follows_injected(request: web.Request, state: ProxyState, body: dict[str, Any], context: RagContext | None, reason: str) -> bool:
    """A turn that is not RAG itself, continuing (`previous_response_id`) a response ragtap injected: the model sees
    its earlier JSON replies in the stored history and may answer in JSON again, so the reply is split as an
    injected one would be (nothing is injected, nothing scored; text that is not our JSON passes unchanged)."""
    previous = body.get("previous_response_id")
    return (
        context is None
        and isinstance(previous, str)
        and reason != "disabled"
        and state.config.inject.enabled
        and client_owned_format(body) is None
        and request.app[INJECTED_RESPONSES].get(previous) is not None
    )


def _rejects_json_format(body: bytes) -> bool:
    """An upstream that does not support `text.format` json_object says so in a 400 naming it."""
    return b"json_object" in body or b"text.format" in body


async def _injected(
    request: web.Request, state: ProxyState, body: dict[str, Any], context: RagContext | None, record: ExchangeRecord, *, inject: bool = True
) -> web.StreamResponse:
    """Forward (with the instruction when `inject`) and split the reply; scored when there is a `context`."""
    forwarded = inject_responses(body, state.config.inject) if inject else without_ragtap_field(body)
    echo = client_echo(body)
    upstream = await _send(request, state, _request_bytes(forwarded), record)
    if upstream.status == 400 and inject and state.config.inject.json_response_format:
        # Some OpenAI-compatible servers reject json_object: ask again without it, once.
        try:
            error_body = await _read_bounded(upstream, record, state.config.replies.max_body_bytes)
        except UpstreamUnavailable as failure:
            record.error_type = failure.error_type
            return openai_error(400, "ragtap: the upstream answered 400 but its error body was cut off or stalled", type_="upstream_error",
                                code="upstream_broken_error_body")
        if isinstance(error_body, _TooLarge):
            return await _relay_too_large(request, upstream, record, error_body, None, context)
        if not _rejects_json_format(error_body):
            return web.Response(status=400, body=error_body, headers=response_headers(upstream.headers, body_rewritten=True))
        if isinstance(body.get("text"), dict):
            forwarded["text"] = body["text"]
        else:
            forwarded.pop("text", None)
        upstream = await _send(request, state, _request_bytes(forwarded), record)

    if upstream.status != 200:  # the upstream's own error: the app sees it unchanged
        return await relay_response(request, upstream, record, decompressed=True)
    if forwarded.get("stream") is True and "text/event-stream" in upstream.headers.get("Content-Type", ""):
        response, outcome = await relay_responses_injected(request, upstream, record, echo, max_kept_chars=state.config.replies.max_kept_chars)
        if context is not None:
            _defer_scoring(request, _interaction(context, outcome.answer, outcome.supporting, outcome.unscored_reason, record))
        return response

    data = await _read_bounded(upstream, record, state.config.replies.max_body_bytes)
    if isinstance(data, _TooLarge):  # relayed unchanged, not split; scored as unscored when RAG
        return await _relay_too_large(request, upstream, record, data, request if context is not None else None, context)
    headers = response_headers(upstream.headers, body_rewritten=True)
    reply = _parse_object(data)
    split = split_response(reply, echo, embedded=inject) if reply is not None else None
    if reply is None or split is None:
        # Not a response object we understand (or no text: a refusal, a function call): only the echo restored.
        if reply is not None:
            note_response(reply, record)
        if context is not None:
            _defer_scoring(request, _interaction(context, None, None, "upstream_not_json" if reply is None else "no_text_content", record))
        return web.Response(status=upstream.status, body=(_dumps(reply) if reply is not None else None) or data, headers=headers)
    note_response(reply, record)
    if context is None:
        return web.Response(status=upstream.status, body=_dumps(reply) or data, headers=headers)
    await _score_split(request, state, context, split, record, headers)
    return web.Response(status=upstream.status, body=_dumps(reply) or data, headers=headers)


async def _observed(
    request: web.Request,
    state: ProxyState,
    raw: bytes,
    forwarded: dict[str, Any] | None,
    context: RagContext | None,
    record: ExchangeRecord,
    file_search_request: dict[str, Any] | None = None,
) -> web.StreamResponse:
    """Forward unchanged, score from a copy.  `context` None: the documents come from the reply's hosted file
    search (`file_search_request` is the request, for its question)."""
    upstream = await _send(request, state, raw if forwarded is None else _request_bytes(forwarded), record)
    if upstream.status != 200:
        return await relay_response(request, upstream, record, decompressed=True)
    if "text/event-stream" in upstream.headers.get("Content-Type", ""):
        response, outcome, reply = await relay_responses_observed(request, upstream, record, max_kept_chars=state.config.replies.max_kept_chars)
    else:
        data = await _read_bounded(upstream, record, state.config.replies.max_body_bytes)
        if isinstance(data, _TooLarge):
            return await _relay_too_large(request, upstream, record, data, request if context is not None else None, context)  # type: ignore[arg-type]
        response = web.Response(status=upstream.status, body=data, headers=response_headers(upstream.headers, body_rewritten=True))
        reply = _parse_object(data)
        where = first_text_part(reply) if reply is not None else None
        if reply is not None:
            note_response(reply, record)
        outcome = StreamOutcome(where.part["text"], None, None) if where is not None else StreamOutcome("", None, "no_text_content")
    if context is None and file_search_request is not None and reply is not None:
        context = file_search_context(file_search_request, reply)
        record.rag_source = context.source if context is not None else None
    if context is not None:
        _defer_scoring(request, _interaction(context, outcome.answer, None, outcome.unscored_reason, record))
    return response
