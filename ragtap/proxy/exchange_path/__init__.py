"""The exchange path: the one way a request of any API shape (chat completions, Responses, Messages) goes through
ragtap, each step in its own module and every name here public.  A route module (`proxy/chat.py`,
`proxy/responses.py`, `proxy/messages.py`) decides, per request, which steps apply, and brings only what is its
shape's own: how to inject, how to split, how to write the answer back.

    read       `read_exchange(request, route, recogniser) -> Exchange`: read, parse, recognise, start the record
    inject     the shape's own (`proxy/inject.py`, `proxy/responses.py`, `proxy/messages.py`)
    send       `send_json`, `forward_json`, `forward_raw`, `retry_without_json_mode`
    split      the shape's own (`ragtap/split/`), whole replies or streams through a relay:
               `open_stream`, `pump_events` + the shape's `EventRelay` (typed events: `relay_typed` with the
               shape's `TypedSplitter` and `TypedShape`), `copy_events` (observed streams), `KeptText`
    seams      (a) whole replies: `WholeReplyStep`, run by `settle_whole_reply`; (b) streams: `AnswerGate`,
               opened per exchange by `open_gate`; (c) asking again: `Exchange.ask_again`, sent by `send_again`
               (see `seams.py`)
    respond    `respond(exchange, route)`: ragtap's failures as the app's error, hooks after the response;
               `read_reply` (the upstream's error, a stream, a body too large, or the body to split);
               `read_bounded` / `TooLarge` / `relay_too_large` for reply bodies
    scoring    `score_later`, `assess_now` (whole replies), `assess_split` (a gate's release), `after_response`
"""

from ragtap.proxy.exchange_path.again import send_again
from ragtap.proxy.exchange_path.handoff import (
    add_debug_headers, after_response, assess_now, assess_split, claim_offsets, interaction_for, score_later, settle_whole_reply,
)
from ragtap.proxy.errors import RequestTooDeep
from ragtap.proxy.exchange_path.read import Exchange, dumps, parse_object, read_exchange, request_bytes
from ragtap.proxy.exchange_path.respond import StreamRelay, TooLarge, read_bounded, read_reply, relay_too_large, respond
from ragtap.proxy.exchange_path.seams import (
    AnswerGate, AskAgain, ExchangeSteps, GateFactory, SecondReply, WholeReply, WholeReplyStep, abandon_gate, open_gate,
)
from ragtap.proxy.exchange_path.send import forward_json, forward_raw, retry_without_json_mode, send_json
from ragtap.proxy.exchange_path.streams import (
    INCOMPLETE, KEEPALIVE, UPSTREAM_BROKE, EventRelay, KeptText, StreamOutcome, TypedEventRelay, TypedShape, TypedSplitter, broken_off,
    copy_events, open_stream, pump_events, relay_typed,
)

__all__ = [
    "INCOMPLETE", "KEEPALIVE", "UPSTREAM_BROKE", "AnswerGate", "AskAgain", "EventRelay", "Exchange", "ExchangeSteps", "GateFactory",
    "KeptText", "RequestTooDeep", "SecondReply", "StreamOutcome", "StreamRelay", "TooLarge", "TypedEventRelay", "TypedShape",
    "TypedSplitter", "WholeReply", "WholeReplyStep", "abandon_gate", "add_debug_headers", "after_response", "assess_now",
    "assess_split", "broken_off", "claim_offsets", "copy_events", "dumps", "forward_json", "forward_raw", "interaction_for",
    "open_gate", "open_stream", "parse_object", "pump_events", "read_bounded", "read_exchange", "read_reply", "relay_too_large",
    "relay_typed", "request_bytes", "respond", "retry_without_json_mode", "score_later", "send_again", "send_json",
    "settle_whole_reply",
]
