"""The Redis hand-off's wire format (pipeline/wire.py) and its settings: no server needed."""

from __future__ import annotations

import dataclasses
import time

import orjson
import pytest

from ragtap.config import ConfigError, load_config
from ragtap.exchange import ChatMessage, ChatMessagePart, ExchangeRecord, Overhead, RequestParameters
from ragtap.pipeline.wire import WireError, decode, encode
from ragtap.types import Document, Interaction


def _interaction() -> Interaction:
    now = time.perf_counter()
    record = ExchangeRecord(route="/v1/chat/completions", request_model="gpt-4o-mini", user="u-1", session="s-1", stream=True,
                            rag_source="explicit", recognition="explicit", injected=True,
                            trace_headers={"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
                            upstream_host="127.0.0.1", upstream_port=9000, started_at=now - 0.5, upstream_sent_at=now - 0.49,
                            upstream_done_at=now - 0.1, first_token_at=now - 0.3, finished_at=now - 0.05, status=200,
                            response_id="chatcmpl-1", response_model="gpt-4o-mini-2024", finish_reasons=("stop",), input_tokens=120,
                            output_tokens=40, supporting_tokens=12, extras={"otel_span": object()},
                            parameters=RequestParameters(temperature=0.1, max_tokens=200, stop_sequences=("END",), output_type="json"),
                            input_messages=(ChatMessage("system", (ChatMessagePart("text", content="Context: doc one"),)),
                                            ChatMessage("tool", (ChatMessagePart("tool_call_response", content="doc two", id="call_1"),))),
                            overhead=Overhead(model="gpt-4o-mini", input_tokens=115, output_tokens=12, cost_usd=2.4e-05),
                            cached_input_tokens=64, reasoning_tokens=0, conversation_id="conv-1")
    return Interaction(question="Q?", documents=(Document("doc one", "d1"), Document("doc two")), answer="A.", supporting="S.",
                       id="chatcmpl-1", model="gpt-4o-mini-2024", unscored_reason=None, exchange=record, enqueued_at=now,
                       truncated=("documents",))


def test_round_trip_keeps_what_the_exporters_read() -> None:
    item = _interaction()
    wire = decode(encode("abc123", item))
    assert wire.handoff_id == "abc123"
    got = wire.interaction
    for name in ("question", "documents", "answer", "supporting", "id", "model", "unscored_reason", "truncated"):
        assert getattr(got, name) == getattr(item, name), name
    sent, received = item.exchange, got.exchange
    assert received is not None and sent is not None
    for field in dataclasses.fields(ExchangeRecord):
        if field.name == "extras":
            assert received.extras == {}  # live objects of the proxy process stay there
        elif field.name.endswith("_at"):
            expected = getattr(sent, field.name)
            assert expected is None and getattr(received, field.name) is None or abs(getattr(received, field.name) - expected) < 0.01
        else:
            assert getattr(received, field.name) == getattr(sent, field.name), field.name
    assert abs(received.added_seconds - sent.added_seconds) < 1e-6  # durations survive the clock change exactly
    assert got.enqueued_at is not None and abs(got.enqueued_at - item.enqueued_at) < 0.01


def test_an_offline_interaction_without_exchange_round_trips() -> None:
    item = Interaction(question="Q?", documents=(), answer=None)
    got = decode(encode("x", item)).interaction
    assert got.exchange is None and got.answer is None and got.documents == ()


@pytest.mark.parametrize(("data", "message"), [
    (b"not json", "not JSON"),
    (b"[1]", "not a JSON object"),
    (b'{"v": 2}', "wire version 2"),
    (orjson.dumps({"v": 1, "h": "x", "q": 5, "d": []}), "field 'q' is int"),
    (orjson.dumps({"v": 1, "h": "x", "q": "Q", "d": "docs"}), "field 'd'"),
    (orjson.dumps({"v": 1, "h": "x", "q": "Q", "d": [], "x": {"route": "/", "started_at": "soon"}}), "not a number"),
    (orjson.dumps({"v": 1, "h": "x", "q": "Q", "d": [], "x": {"route": "/", "bogus": 1}}), None),
])
def test_bad_entries_are_one_clear_error(data: bytes, message: str | None) -> None:
    if message is None:  # an unknown exchange field (a newer proxy) is ignored, not an error
        exchange = decode(data).interaction.exchange
        assert exchange is not None and exchange.route == "/" and not hasattr(exchange, "bogus")
        return
    with pytest.raises(WireError, match=message):
        decode(data)


def test_queue_setting() -> None:
    assert load_config(environ={}).scoring.queue == "memory"
    config = load_config(environ={"RAGTAP_SCORING_QUEUE": "redis://10.0.0.5:6379/2"})
    assert config.scoring.queue == "redis://10.0.0.5:6379/2"
    with pytest.raises(ConfigError, match=r"scoring.queue: expected \"memory\" or a redis://.*'http://:\*\*\*@x'"):
        load_config(environ={"RAGTAP_SCORING_QUEUE": "http://:secret@x"})
    with pytest.raises(ConfigError, match="redis_queue.max_length"):
        load_config(flags={"redis_queue": {"max_length": 0}}, environ={})


def test_the_chat_span_travels_as_the_parent_of_the_workers_evaluation_span() -> None:
    """In the proxy the OTel exporter keeps the chat span in `extras`; a worker must parent its evaluation span on
    it, so its context travels as the traceparent (the app's own traceparent is the chat span's parent)."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from ragtap.exporters.otel import OtelExporter
    from ragtap.exporters.settings import OtelSettings
    from ragtap.scoring.verdict import assess
    from ragtap.types import Scores

    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    proxy_side = OtelExporter(OtelSettings(enabled=True), tracer_provider=provider)
    item = _interaction()
    assert item.exchange is not None
    proxy_side.exchange_started(item.exchange)
    proxy_side.exchange_finished(item.exchange)
    received = decode(encode("h", item)).interaction
    worker_side = OtelExporter(OtelSettings(enabled=True), tracer_provider=provider)
    assessment = assess(Scores(qa=0.9, qrd=0.9), _thresholds(), received.answer)
    worker_side.interaction_scored(received, assessment, 0.1)
    chat, evaluation = spans.get_finished_spans()
    assert evaluation.parent is not None and evaluation.parent.span_id == chat.context.span_id
    assert evaluation.context.trace_id == chat.context.trace_id == 0x0AF7651916CD43DD8448EB211C80319C


def _thresholds():  # type: ignore[no-untyped-def]
    from ragtap.config import DEFAULT_THRESHOLDS

    return DEFAULT_THRESHOLDS
