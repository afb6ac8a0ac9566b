"""POST /v1/chat/completions: the chat-completions shape on the exchange path (`proxy/exchange_path/`).

Three paths, decided by recognition:
- not RAG: the request bytes go upstream unchanged and the reply bytes come back unchanged;
- RAG, ragtap owns the reply format: the instruction is injected and the reply is split (`_injected`);
- RAG, the client owns the reply format (response_format, tools, n > 1): forwarded unchanged, the answer is
  read from a copy for the scores that need no supporting content (`_observed`).
Whatever ragtap cannot parse, the app receives as the upstream sent it.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from ragtap.exchange import note_usage
from ragtap.proxy.chat_stream import relay_injected, relay_observed
from ragtap.proxy.exchange_path import (
    Exchange, SecondReply, WholeReply, dumps, forward_json, forward_raw, parse_object, read_exchange, read_reply, request_bytes, respond,
    retry_without_json_mode, score_later, send_again, send_json, settle_whole_reply,
)
from ragtap.proxy.inject import inject, without_ragtap_field
from ragtap.proxy.upstream import response_headers
from ragtap.recognise import recognise
from ragtap.split.reply import split_reply


async def handle_chat(request: web.Request) -> web.StreamResponse:
    exchange = await read_exchange(request, "/v1/chat/completions", recognise)
    body, recognition, record = exchange.body, exchange.recognition, exchange.record
    if exchange.context is not None and not isinstance(body.get("messages"), list):  # type: ignore[union-attr]
        # A `ragtap` field but no message list to add the instruction to: the upstream judges the request itself.
        exchange.context = None
    context = exchange.context
    record.rag_source = context.source if context is not None else None
    exchange.state.exporter.exchange_started(record)
    if body is None or recognition is None or (context is None and not recognition.strip_ragtap_field):
        # Not JSON, not an object, or not RAG: the upstream answers it as if ragtap were not there.
        route = forward_raw(exchange)
    elif context is None:
        route = forward_json(exchange, without_ragtap_field(body))
    elif recognition.inject and exchange.state.config.inject.enabled:
        exchange.mark_injected()
        route = _injected(exchange, body)
    else:
        route = _observed(exchange, without_ragtap_field(body) if recognition.strip_ragtap_field else None)
    return await respond(exchange, route)


def _rejects_response_format(body: bytes) -> bool:
    return b"response_format" in body


async def _injected(exchange: Exchange, body: dict[str, Any]) -> web.StreamResponse:
    state = exchange.state
    forwarded, added_usage = inject(body, state.config.inject)
    upstream = await send_json(exchange, request_bytes(forwarded))
    if upstream.status == 400 and "response_format" in forwarded:

        async def without_json_mode():  # type: ignore[no-untyped-def]
            forwarded.pop("response_format")
            return await send_json(exchange, request_bytes(forwarded))

        retried = await retry_without_json_mode(exchange, upstream, _rejects_response_format, without_json_mode)
        if isinstance(retried, web.StreamResponse):
            return retried
        upstream = retried

    exchange.ask_again = lambda instruction: _ask_again(exchange, forwarded, instruction)  # seam (c), for the guard's retry
    streamed = forwarded.get("stream") is True
    data = await read_reply(exchange, upstream, (lambda: relay_injected(exchange, upstream, forward_usage=not added_usage)) if streamed else None)
    if not isinstance(data, bytes):
        return data
    headers = response_headers(upstream.headers, body_rewritten=True)
    completion = parse_object(data, lenient=True)  # (lenient: a reply with a NaN is still split)
    message = _first_message(completion)
    if completion is None or message is None or not isinstance(message.get("content"), str):
        # Not a chat.completion we understand (or a tool call / refusal): return it untouched.
        _note_completion(completion, exchange)
        score_later(exchange, None, None, "upstream_not_json" if completion is None else "no_text_content")
        return web.Response(status=upstream.status, body=data, headers=headers)

    finish = completion["choices"][0].get("finish_reason")
    split = split_reply(message["content"], truncated=finish == "length")
    message["content"] = split.answer
    _note_completion(completion, exchange)
    await settle_whole_reply(exchange, WholeReply(split, lambda text: message.__setitem__("content", text), completion), headers)
    return web.Response(status=upstream.status, body=dumps(completion) or data, headers=headers)


async def _ask_again(exchange: Exchange, forwarded: dict[str, Any], instruction: str) -> SecondReply | None:
    """Seam (c): the injected request once more, not streamed, with `instruction` as a last system message."""
    again = {**forwarded, "messages": [*forwarded["messages"], {"role": "system", "content": instruction}], "stream": False}
    again.pop("stream_options", None)
    completion = await send_again(exchange, again)
    message = _first_message(completion)
    if completion is None or message is None or not isinstance(message.get("content"), str):
        return None
    split = split_reply(message["content"], truncated=completion["choices"][0].get("finish_reason") == "length")
    return SecondReply(split, completion, _write_answer)


def _write_answer(completion: dict[str, Any], text: str) -> None:
    completion["choices"][0]["message"]["content"] = text


async def _observed(exchange: Exchange, forwarded: dict[str, Any] | None) -> web.StreamResponse:
    upstream = await send_json(exchange, exchange.raw if forwarded is None else request_bytes(forwarded))
    data = await read_reply(exchange, upstream, lambda: relay_observed(exchange, upstream))
    if not isinstance(data, bytes):
        return data
    completion = parse_object(data, lenient=True)
    _note_completion(completion, exchange)
    message = _first_message(completion)
    content = message.get("content") if message else None
    if isinstance(content, str):
        score_later(exchange, content, None, None)
    else:
        score_later(exchange, "", None, "no_text_content")
    return web.Response(status=upstream.status, body=data, headers=response_headers(upstream.headers, body_rewritten=True))


def _first_message(completion: dict[str, Any] | None) -> dict[str, Any] | None:
    if completion is None:
        return None
    choices = completion.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None
    message = choices[0].get("message")
    return message if isinstance(message, dict) else None


def _note_completion(completion: dict[str, Any] | None, exchange: Exchange) -> None:
    if completion is None:
        return
    record = exchange.record
    record.response_id = completion.get("id")
    record.response_model = completion.get("model")
    choices = completion.get("choices")
    if isinstance(choices, list):
        record.finish_reasons = tuple(str(c.get("finish_reason")) for c in choices if isinstance(c, dict) and c.get("finish_reason"))
    note_usage(record, completion.get("usage"))
