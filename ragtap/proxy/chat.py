"""POST /v1/chat/completions: recognise -> inject -> forward -> split -> respond, then hand off for scoring.

Three paths, decided by recognition:
- not RAG: the request bytes go upstream unchanged and the reply bytes come back unchanged;
- RAG, ragtap owns the reply format: the instruction is injected and the reply is split (`_injected`);
- RAG, the client owns the reply format (response_format, tools, n > 1): forwarded unchanged, the answer is
  read from a copy for the scores that need no supporting content (`_observed`).
Whatever ragtap cannot parse, the app receives as the upstream sent it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from time import perf_counter as now
from typing import Any

import aiohttp
import orjson
from aiohttp import web

from ragtap.cost import settle_overhead
from ragtap.exchange import ExchangeRecord, note_request, note_usage
from ragtap.proxy.errors import UpstreamUnavailable, bad_path_response, openai_error
from ragtap.prompts import prompt_text
from ragtap.proxy.inject import inject, without_ragtap_field
from ragtap.proxy.passthrough import forward_unchanged, relay_response
from ragtap.proxy.requestlog import log, log_exchange
from ragtap.proxy.state import STATE, ProxyState
from ragtap.proxy.stream import StreamOutcome, relay_injected, relay_observed
from ragtap.proxy.upstream import BadPath, forward_target, request_headers, response_headers
from ragtap.recognise import Recognition, recognise
from ragtap.split.reply import split_reply
from ragtap.split.stream import REPLY_TOO_LARGE
from ragtap.tokens import count_tokens
from ragtap.types import Assessment, Interaction, RagContext, SplitReply

_TRACE_HEADERS = ("traceparent", "tracestate", "baggage")
# The interaction a handler built for scoring; handed over only after the response (see `_after_response`).
_PENDING = web.RequestKey("ragtap_pending_interaction", Interaction)


def _parse_object(raw: bytes) -> dict[str, Any] | None:
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


_OFFLOAD_BYTES = 256 * 1024


def _parse_and_recognise(raw: bytes, recogniser: Callable[..., Recognition], patterns: Any) -> tuple[dict[str, Any] | None, Recognition | None]:
    body = _parse_object(raw)
    return body, (recogniser(body, patterns) if body is not None else None)


async def _read_exchange(
    request: web.Request, state: ProxyState, route: str, recogniser: Callable[..., Recognition]
) -> tuple[bytes, ExchangeRecord, dict[str, Any] | None, Recognition | None]:
    """The request read and recognised, and the exchange record it starts (chat completions and Responses alike)."""
    raw = await request.read()
    record = ExchangeRecord(
        route=route,
        trace_headers={h: request.headers[h] for h in _TRACE_HEADERS if h in request.headers},
        upstream_host=state.upstream.target.host,
        upstream_port=state.upstream.target.port,
    )
    if len(raw) > _OFFLOAD_BYTES:
        # A body this large (a document bomb: 30,000 documents are ~0.3 s of parsing and recognition) is read in a
        # worker thread, so the event loop keeps serving the other requests meanwhile (the GIL switches every 5 ms)
        # instead of stalling them all for as long.
        body, recognition = await asyncio.to_thread(_parse_and_recognise, raw, recogniser, state.patterns)
    else:
        body, recognition = _parse_and_recognise(raw, recogniser, state.patterns)
    if body is not None:
        model = body.get("model")
        record.request_model = model if isinstance(model, str) else None
        record.stream = body.get("stream") is True
    identity = state.config.store
    note_request(record, body, request.headers, identity.user_headers, identity.session_headers, keep_messages=state.keep_messages)
    record.recognition = recognition.reason if recognition is not None else "bad_body"
    if recognition is not None and recognition.field_problem is not None:
        record.ragtap_field_problem = recognition.field_problem
        log.info("malformed ragtap field: reason=%s recognition=%s (the field is stripped; the implicit rules decided)",
                 recognition.field_problem, recognition.reason)
    return raw, record, body, recognition


async def _answer(
    state: ProxyState, record: ExchangeRecord, route: Awaitable[web.StreamResponse]
) -> web.StreamResponse:
    """Await a route's response; ragtap's own failures become the app's answer (an OpenAI-shaped error).  The
    exchange's hooks run after the response (`_after_response`, next loop turn): not part of the app's latency."""
    try:
        response = await route
    except UpstreamUnavailable as failure:
        record.error_type, record.outcome, record.status = failure.error_type, "upstream_error", failure.response.status
        response = failure.response
    except BadPath:
        record.status, record.error_type = 400, "bad_path"
        response = bad_path_response()
    except _RequestTooDeep:
        record.status, record.error_type = 400, "request_too_deep"
        response = openai_error(
            400, "ragtap: the request JSON is nested too deeply for ragtap to rewrite it", type_="invalid_request_error", code="request_too_deep"
        )
    except asyncio.CancelledError:  # the app hung up (or the grace period ran out): the upstream request is dropped
        record.outcome, record.finished_at = "incomplete", now()
        asyncio.get_running_loop().call_soon(_after_response, state, record, None)
        raise
    record.finished_at = now()
    return response


class _RequestTooDeep(Exception):
    """A request ragtap must rewrite is nested deeper than it can write back (see `_dumps`)."""


def _dumps(value: Any) -> bytes | None:
    """JSON bytes of a decoded body, or None.  orjson reads 1024 levels of nesting but writes only 254: deeper
    values go through the json module (about 990 levels); deeper still, None."""
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError:
        try:
            return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
        except (RecursionError, ValueError, TypeError):
            return None


def _request_bytes(body: dict[str, Any]) -> bytes:
    data = _dumps(body)
    if data is None:
        raise _RequestTooDeep
    return data


async def handle_chat(request: web.Request) -> web.StreamResponse:
    state = request.app[STATE]
    raw, record, body, recognition = await _read_exchange(request, state, "/v1/chat/completions", recognise)
    context = recognition.context if recognition is not None else None
    if context is not None and not isinstance(body.get("messages"), list):  # type: ignore[union-attr]
        # A `ragtap` field but no message list to add the instruction to: the upstream judges the request itself.
        context = None
    record.rag_source = context.source if context is not None else None
    state.exporter.exchange_started(record)
    if body is None or recognition is None or (context is None and not recognition.strip_ragtap_field):
        # Not JSON, not an object, or not RAG: the upstream answers it as if ragtap were not there.
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
    asyncio.get_running_loop().call_soon(_after_response, state, record, request.get(_PENDING))
    return response


def _after_response(state: ProxyState, record: ExchangeRecord, interaction: Interaction | None) -> None:
    """Settle the token counts, then run the exporters' exchange hooks, then hand the interaction to scoring: in
    that order, so that every hook (and the scored interaction's exporters) sees the final record."""
    if interaction is not None and interaction.supporting and record.supporting_tokens is None:
        record.supporting_tokens = count_tokens(interaction.supporting, interaction.model)
    if interaction is not None:
        record.output_text = interaction.answer
    if state.prices is not None:
        settle_overhead(record, state.prices)
    state.exporter.exchange_finished(record)
    log_exchange(record)
    if interaction is not None and state.scoring is not None:
        state.scoring.submit(interaction)


async def _send(request: web.Request, state: ProxyState, body: bytes, record: ExchangeRecord) -> aiohttp.ClientResponse:
    """Forward a body ragtap will read: uncompressed, so the reply can be parsed."""
    record.upstream_sent_at = now()
    upstream = await state.upstream.send(
        "POST", forward_target(request.path, request.raw_path), request_headers(request.headers, identity_encoding=True), body, decompress=True
    )
    record.upstream_headers_at = now()
    record.status = upstream.status
    return upstream


async def _forward_json(request: web.Request, state: ProxyState, body: dict[str, Any], record: ExchangeRecord) -> web.StreamResponse:
    upstream = await _send(request, state, _request_bytes(body), record)
    return await relay_response(request, upstream, record, decompressed=True)


def _rejects_response_format(status: int, body: bytes) -> bool:
    return status == 400 and b"response_format" in body


async def _injected(request: web.Request, state: ProxyState, body: dict[str, Any], context: RagContext, record: ExchangeRecord) -> web.StreamResponse:
    forwarded, added_usage = inject(body, state.config.inject)
    record.injected_instruction = prompt_text(state.config.inject.prompt)  # what ragtap's overhead cost counts
    upstream = await _send(request, state, _request_bytes(forwarded), record)
    if upstream.status == 400 and "response_format" in forwarded:
        # Some OpenAI-compatible servers reject json_object: ask again without it, once.
        try:
            error_body = await _read_bounded(upstream, record, state.config.replies.max_body_bytes)
        except UpstreamUnavailable as failure:  # the 400's body was cut or stalled: the app still gets the 400
            record.error_type = failure.error_type
            return openai_error(400, "ragtap: the upstream answered 400 but its error body was cut off or stalled", type_="upstream_error",
                                code="upstream_broken_error_body")
        if isinstance(error_body, _TooLarge):
            return await _relay_too_large(request, upstream, record, error_body, None, context)
        if not _rejects_response_format(400, error_body):
            return web.Response(status=400, body=error_body, headers=response_headers(upstream.headers, body_rewritten=True))
        forwarded.pop("response_format")
        upstream = await _send(request, state, _request_bytes(forwarded), record)

    if upstream.status != 200:  # the upstream's own error: the app sees it unchanged
        return await relay_response(request, upstream, record, decompressed=True)
    if forwarded.get("stream") is True and "text/event-stream" in upstream.headers.get("Content-Type", ""):
        # (an upstream that ignores `stream` and answers with one JSON body, or with HTML, is handled below)
        response, outcome = await relay_injected(
            request, upstream, record, forward_usage=not added_usage, max_kept_chars=state.config.replies.max_kept_chars
        )
        _defer_scoring(request, _interaction(context, outcome.answer, outcome.supporting, outcome.unscored_reason, record))
        return response

    data = await _read_bounded(upstream, record, state.config.replies.max_body_bytes)
    if isinstance(data, _TooLarge):
        return await _relay_too_large(request, upstream, record, data, request, context)
    headers = response_headers(upstream.headers, body_rewritten=True)
    completion = _parse_object(data)
    message = _first_message(completion)
    if completion is None or message is None or not isinstance(message.get("content"), str):
        # Not a chat.completion we understand (or a tool call / refusal): return it untouched.
        _note_completion(completion, record)
        _defer_scoring(request, _interaction(context, None, None, "upstream_not_json" if completion is None else "no_text_content", record))
        return web.Response(status=upstream.status, body=data, headers=headers)

    finish = completion["choices"][0].get("finish_reason")
    split = split_reply(message["content"], truncated=finish == "length")
    message["content"] = split.answer
    _note_completion(completion, record)
    await _score_split(request, state, context, split, record, headers)
    return web.Response(status=upstream.status, body=_dumps(completion) or data, headers=headers)


async def _score_split(
    request: web.Request, state: ProxyState, context: RagContext, split: SplitReply, record: ExchangeRecord, headers: Any
) -> None:
    """Hand a split whole reply to scoring after the response, or, when the app asked for the debug headers,
    score it now (bounded by `debug_wait_s`) and add them."""
    interaction = _interaction(context, split.answer, split.supporting, split.unscored_reason, record)
    if _debug_requested(request, state):
        if split.supporting:  # scored before the response: settle the count now, as `_after_response` would
            record.supporting_tokens = count_tokens(split.supporting, interaction.model)
        assessment = await state.scoring.score_now(interaction, state.config.server.debug_wait_s) if state.scoring else None
        _add_debug_headers(headers, assessment, split.unscored_reason)
    else:
        _defer_scoring(request, interaction)


async def _observed(
    request: web.Request, state: ProxyState, raw: bytes, forwarded: dict[str, Any] | None, context: RagContext, record: ExchangeRecord
) -> web.StreamResponse:
    upstream = await _send(request, state, raw if forwarded is None else _request_bytes(forwarded), record)
    if upstream.status != 200:
        return await relay_response(request, upstream, record, decompressed=True)
    if "text/event-stream" in upstream.headers.get("Content-Type", ""):
        response, outcome = await relay_observed(request, upstream, record, max_kept_chars=state.config.replies.max_kept_chars)
    else:
        data = await _read_bounded(upstream, record, state.config.replies.max_body_bytes)
        if isinstance(data, _TooLarge):
            return await _relay_too_large(request, upstream, record, data, request, context)
        response = web.Response(status=upstream.status, body=data, headers=response_headers(upstream.headers, body_rewritten=True))
        completion = _parse_object(data)
        _note_completion(completion, record)
        message = _first_message(completion)
        content = message.get("content") if message else None
        outcome = StreamOutcome(content, None, None) if isinstance(content, str) else StreamOutcome("", None, "no_text_content")
    _defer_scoring(request, _interaction(context, outcome.answer, None, outcome.unscored_reason, record))
    return response


class _TooLarge:
    """A reply body over `replies.max_body_bytes`: the bytes read so far (at most the limit plus one read)."""

    __slots__ = ("prefix",)

    def __init__(self, prefix: bytes) -> None:
        self.prefix = prefix


async def _read_bounded(upstream: aiohttp.ClientResponse, record: ExchangeRecord, limit: int) -> bytes | _TooLarge:
    """The whole reply body if it is at most `limit` bytes; else what was read so far, the rest left unread (the
    caller relays it).  A body that breaks off or stalls is UpstreamUnavailable (502 / 504: nothing was sent yet)."""
    if upstream.content_length is not None and upstream.content_length > limit:
        return _TooLarge(b"")
    parts: list[bytes] = []
    size = 0
    try:
        async for chunk in upstream.content.iter_any():
            parts.append(chunk)
            size += len(chunk)
            if size > limit:
                return _TooLarge(b"".join(parts))
    except (aiohttp.ClientPayloadError, aiohttp.ClientConnectionError, TimeoutError) as error:
        upstream.release()
        record.upstream_done_at = now()
        raise UpstreamUnavailable.from_broken_body(error) from error
    upstream.release()
    record.upstream_done_at = now()
    return b"".join(parts)


async def _relay_too_large(
    request: web.Request, upstream: aiohttp.ClientResponse, record: ExchangeRecord, too_large: _TooLarge, scored: web.Request | None,
    context: RagContext,
) -> web.StreamResponse:
    """A reply too large to hold: the app gets the upstream's bytes unchanged, streamed through; not scored."""
    prefix, too_large.prefix = too_large.prefix, b""
    response = await relay_response(request, upstream, record, decompressed=True, prefix=prefix)
    if scored is not None:
        _defer_scoring(scored, _interaction(context, None, None, REPLY_TOO_LARGE, record))
    return response


def _first_message(completion: dict[str, Any] | None) -> dict[str, Any] | None:
    if completion is None:
        return None
    choices = completion.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None
    message = choices[0].get("message")
    return message if isinstance(message, dict) else None


def _note_completion(completion: dict[str, Any] | None, record: ExchangeRecord) -> None:
    if completion is None:
        return
    record.response_id = completion.get("id")
    record.response_model = completion.get("model")
    choices = completion.get("choices")
    if isinstance(choices, list):
        record.finish_reasons = tuple(str(c.get("finish_reason")) for c in choices if isinstance(c, dict) and c.get("finish_reason"))
    note_usage(record, completion.get("usage"))


def _interaction(context: RagContext, answer: str | None, supporting: str | None, reason: str | None, record: ExchangeRecord) -> Interaction:
    return Interaction(
        question=context.question,
        documents=context.documents,
        answer=answer,
        supporting=supporting,
        id=record.response_id,
        model=record.response_model or record.request_model,
        unscored_reason=reason,
        exchange=record,
    )


def _defer_scoring(request: web.Request, interaction: Interaction) -> None:
    request[_PENDING] = interaction


def _debug_requested(request: web.Request, state: ProxyState) -> bool:
    return state.config.server.debug_headers or request.headers.get("x-ragtap-debug") == "1"


def _add_debug_headers(headers: Any, assessment: Assessment | None, reason: str | None) -> None:
    if assessment is None:
        headers["x-ragtap-verdict"] = "unscored"
        headers["x-ragtap-unscored-reason"] = reason or "scoring_unavailable"
        return
    headers["x-ragtap-verdict"] = assessment.verdict.value
    headers["x-ragtap-poor-retrieval"] = str(assessment.poor_retrieval).lower()
    scores = {k: round(v, 4) for k, v in assessment.scores.as_dict().items() if v is not None}
    headers["x-ragtap-scores"] = json.dumps(scores, separators=(",", ":"))
    headers["x-ragtap-unsupported-claims"] = str(len(assessment.unsupported_claims))
    if reason:
        headers["x-ragtap-unscored-reason"] = reason
