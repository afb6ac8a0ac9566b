"""The exchange path: the one way a request of any API shape (chat completions, Responses, Messages) goes through
ragtap, each step in its own module and every name here public.  A route module (`proxy/chat.py`,
`proxy/responses.py`, `proxy/messages.py`) decides, per request, which steps apply, and brings only what is its
shape's own: how to inject, how to split, how to write the answer back.

    read       `read_exchange(request, route, recogniser) -> Exchange`: read, parse, recognise, start the record
    inject     the shape's own (`proxy/inject.py`, `proxy/responses.py`, `proxy/messages.py`)
    send       `send_json`, `forward_json`, `forward_raw`, `retry_without_json_mode`
    split      the shape's own (`ragtap/split/`), whole replies or streams through a relay:
               `open_stream`, `pump_events` + the shape's `EventRelay`, `copy_events` (observed streams), `KeptText`
    seams      (a) whole replies: `WholeReplyStep`, run by `settle_whole_reply`; (b) streams: `AnswerGate`,
               opened per exchange by `open_gate` (see `seams.py`)
    respond    `respond(exchange, route)`: ragtap's failures as the app's error, hooks after the response;
               `read_bounded` / `TooLarge` / `relay_too_large` for reply bodies
    scoring    `score_later`, `assess_now`, `after_response`
"""

from ragtap.proxy.exchange_path.handoff import add_debug_headers, after_response, assess_now, interaction_for, score_later, settle_whole_reply
from ragtap.proxy.errors import RequestTooDeep
from ragtap.proxy.exchange_path.read import Exchange, dumps, parse_object, read_exchange, request_bytes
from ragtap.proxy.exchange_path.respond import TooLarge, read_bounded, relay_too_large, respond
from ragtap.proxy.exchange_path.seams import AnswerGate, ExchangeSteps, GateFactory, WholeReply, WholeReplyStep, open_gate
from ragtap.proxy.exchange_path.send import forward_json, forward_raw, retry_without_json_mode, send_json
from ragtap.proxy.exchange_path.streams import (
    INCOMPLETE, KEEPALIVE, UPSTREAM_BROKE, EventRelay, KeptText, StreamOutcome, broken_off, copy_events, open_stream, pump_events,
)

__all__ = [
    "INCOMPLETE", "KEEPALIVE", "UPSTREAM_BROKE", "AnswerGate", "EventRelay", "Exchange", "ExchangeSteps", "GateFactory", "KeptText",
    "RequestTooDeep", "StreamOutcome", "TooLarge", "WholeReply", "WholeReplyStep", "add_debug_headers", "after_response", "assess_now",
    "broken_off", "copy_events", "dumps", "forward_json", "forward_raw", "interaction_for", "open_gate", "open_stream", "parse_object",
    "pump_events", "read_bounded", "read_exchange", "relay_too_large", "request_bytes", "respond", "retry_without_json_mode",
    "score_later", "send_json", "settle_whole_reply",
]
