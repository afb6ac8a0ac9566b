"""OtelExporter: GenAI-convention spans, trace-context joining, evaluation events, content capture, export."""

from __future__ import annotations

import asyncio
import json
import socket
import time

import pytest
from aiohttp import web
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from ragtap.exchange import ExchangeRecord
from ragtap.exporters.base import ExporterSet
from ragtap.exporters.otel import (
    EVALUATION_EVENT,
    CountingSpanExporter,
    ExportStats,
    OtelExporter,
    _traces_endpoint,
)
from ragtap.exporters.prometheus import PrometheusExporter
from ragtap.exporters.settings import OtelSettings
from ragtap.types import Assessment, Document, Interaction, Scores, Verdict

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"


@pytest.fixture
def memory():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def make_exchange(**kw) -> ExchangeRecord:
    now = time.perf_counter()
    base = dict(route="/v1/chat/completions", request_model="gpt-4o", stream=True, rag_source="langchain",
                injected=True, trace_headers={"traceparent": TRACEPARENT, "tracestate": "vendor=x"},
                upstream_host="api.openai.com", upstream_port=443, started_at=now - 1.0,
                upstream_sent_at=now - 0.99, first_token_at=now - 0.7, upstream_done_at=now - 0.05, finished_at=now,
                status=200, response_id="chatcmpl-123", response_model="gpt-4o-2024-08-06",
                finish_reasons=("stop",), input_tokens=321, output_tokens=54, supporting_tokens=20)
    base.update(kw)
    return ExchangeRecord(**base)


def make_assessment(verdict=Verdict.PARAMETRIC) -> Assessment:
    scores = Scores(sdq=0.87, sdrd=0.61, sda=0.85, qrd=0.8, qa=0.93, ard=None, attributed_document=1)
    passed = {"sdq": True, "sdrd": False, "sda": True, "qrd": True, "qa": True}
    return Assessment(scores=scores, passed=passed, verdict=verdict, poor_retrieval=False,
                      explanation="SDRD low while QA high: the model answered from its own knowledge")


def make_interaction(exchange: ExchangeRecord | None, **kw) -> Interaction:
    base = dict(question="How do I create a webhook?",
                documents=(Document("email subscribers specify the protocol " * 10, id="doc-a"),
                           Document("second document " * 500)),
                answer="You create a webhook by ... " * 300, supporting="general knowledge " * 400,
                model="gpt-4o", exchange=exchange)
    base.update(kw)
    return Interaction(**base)


def by_name(exporter: InMemorySpanExporter) -> dict:
    return {s.name: s for s in exporter.get_finished_spans()}


def test_chat_span_attributes_and_parent(memory):
    provider, mem = memory
    otel = OtelExporter(OtelSettings(enabled=True), tracer_provider=provider)
    ex = make_exchange()
    otel.exchange_started(ex)
    assert ex.extras["otel_span"].is_recording()
    otel.exchange_finished(ex)
    (span,) = mem.get_finished_spans()
    assert span.name == "chat gpt-4o"
    assert span.kind == SpanKind.CLIENT
    # joined to the app's trace
    assert format(span.context.trace_id, "032x") == TRACE_ID
    assert span.parent is not None and format(span.parent.span_id, "016x") == PARENT_ID
    assert span.parent.is_remote
    assert span.context.trace_state.get("vendor") == "x"
    a = span.attributes
    assert a["gen_ai.operation.name"] == "chat"
    assert a["gen_ai.provider.name"] == "openai"
    assert a["gen_ai.request.model"] == "gpt-4o"
    assert a["gen_ai.request.stream"] is True
    assert a["server.address"] == "api.openai.com" and a["server.port"] == 443
    assert a["gen_ai.response.model"] == "gpt-4o-2024-08-06"
    assert a["gen_ai.response.id"] == "chatcmpl-123"
    assert tuple(a["gen_ai.response.finish_reasons"]) == ("stop",)
    assert a["gen_ai.usage.input_tokens"] == 321 and a["gen_ai.usage.output_tokens"] == 54
    assert a["ragtap.rag_source"] == "langchain" and a["ragtap.injected"] is True
    assert a["ragtap.outcome"] == "complete"
    assert a["gen_ai.response.time_to_first_chunk"] == pytest.approx(0.3, abs=0.01)
    assert "error.type" not in a
    assert span.status.status_code == StatusCode.UNSET
    # the span covers the exchange's wall time (perf_counter readings converted to epoch time)
    assert (span.end_time - span.start_time) / 1e9 == pytest.approx(1.0, abs=0.05)


def test_no_traceparent_starts_a_new_trace(memory):
    provider, mem = memory
    otel = OtelExporter(OtelSettings(enabled=True), tracer_provider=provider)
    ex = make_exchange(trace_headers={}, request_model=None)
    otel.exchange_started(ex)
    otel.exchange_finished(ex)
    (span,) = mem.get_finished_spans()
    assert span.parent is None
    assert span.name == "chat"


def test_unsampled_parent_records_nothing(memory):
    provider, mem = memory
    otel = OtelExporter(OtelSettings(enabled=True), tracer_provider=provider)
    ex = make_exchange(trace_headers={"traceparent": f"00-{TRACE_ID}-{PARENT_ID}-00"})
    otel.exchange_started(ex)
    otel.exchange_finished(ex)
    otel.interaction_scored(make_interaction(ex), make_assessment(), 0.2)
    assert mem.get_finished_spans() == ()


def test_upstream_error_sets_error_status(memory):
    provider, mem = memory
    otel = OtelExporter(OtelSettings(enabled=True), tracer_provider=provider)
    ex = make_exchange(status=502, outcome="upstream_error", response_id=None, finish_reasons=())
    otel.exchange_started(ex)
    otel.exchange_finished(ex)
    ex2 = make_exchange(status=None, outcome="upstream_error", error_type="TimeoutError")
    otel.exchange_started(ex2)
    otel.exchange_finished(ex2)
    s1, s2 = mem.get_finished_spans()
    assert s1.attributes["error.type"] == "502" and s1.status.status_code == StatusCode.ERROR
    assert s1.attributes["ragtap.outcome"] == "upstream_error"
    assert s2.attributes["error.type"] == "TimeoutError" and s2.status.status_code == StatusCode.ERROR


def test_evaluation_events(memory):
    provider, mem = memory
    otel = OtelExporter(OtelSettings(enabled=True), tracer_provider=provider)
    ex = make_exchange()
    otel.exchange_started(ex)
    otel.exchange_finished(ex)
    otel.interaction_scored(make_interaction(ex), make_assessment(), 0.25)
    spans = by_name(mem)
    chat, ev = spans["chat gpt-4o"], spans["evaluate ragtap"]
    assert ev.kind == SpanKind.INTERNAL
    assert ev.context.trace_id == chat.context.trace_id
    assert ev.parent.span_id == chat.context.span_id
    assert (ev.end_time - ev.start_time) / 1e9 == pytest.approx(0.25, abs=0.01)
    a = ev.attributes
    assert a["ragtap.verdict"] == "parametric"
    assert a["ragtap.poor_retrieval"] is False
    assert a["ragtap.attributed_document"] == 1
    assert a["ragtap.supporting_tokens"] == 20
    assert a["gen_ai.response.id"] == "chatcmpl-123"
    assert a["ragtap.score.sdrd"] == pytest.approx(0.61)

    events = [e for e in ev.events if e.name == EVALUATION_EVENT]
    named = {e.attributes["gen_ai.evaluation.name"]: e.attributes for e in events}
    # one per metric that has a score (ard is None here), plus the verdict and the retrieval judgement
    assert set(named) == {"ragtap.sdq", "ragtap.sdrd", "ragtap.sda", "ragtap.qrd", "ragtap.qa", "ragtap.verdict",
                          "ragtap.retrieval"}
    assert named["ragtap.sdrd"]["gen_ai.evaluation.score.value"] == pytest.approx(0.61)
    assert named["ragtap.sdrd"]["gen_ai.evaluation.score.label"] == "fail"
    assert named["ragtap.qa"]["gen_ai.evaluation.score.label"] == "pass"
    verdict = named["ragtap.verdict"]
    assert verdict["gen_ai.evaluation.score.label"] == "parametric"
    assert verdict["gen_ai.evaluation.explanation"].startswith("SDRD low")
    assert "gen_ai.evaluation.score.value" not in verdict
    assert named["ragtap.retrieval"]["gen_ai.evaluation.score.label"] == "ok"
    for attrs in named.values():
        assert attrs["gen_ai.response.id"] == "chatcmpl-123"


def test_evaluation_joins_by_traceparent_without_chat_span(memory):
    """Scoring for an exchange whose chat span this exporter never saw still lands in the app's trace."""
    provider, mem = memory
    otel = OtelExporter(OtelSettings(enabled=True), tracer_provider=provider)
    otel.interaction_scored(make_interaction(make_exchange()), make_assessment(), 0.1)
    (ev,) = mem.get_finished_spans()
    assert format(ev.context.trace_id, "032x") == TRACE_ID
    assert format(ev.parent.span_id, "016x") == PARENT_ID


def test_offline_interaction_without_exchange(memory):
    provider, mem = memory
    otel = OtelExporter(OtelSettings(enabled=True), tracer_provider=provider)
    unscored = Assessment(scores=Scores(), passed={}, verdict=Verdict.UNSCORED, poor_retrieval=None,
                          explanation="no supporting content")
    otel.interaction_scored(make_interaction(None, supporting=None, unscored_reason="no_json"), unscored, 0.0)
    (ev,) = mem.get_finished_spans()
    assert ev.parent is None
    assert ev.attributes["ragtap.verdict"] == "unscored"
    assert ev.attributes["ragtap.unscored_reason"] == "no_json"
    names = [e.attributes["gen_ai.evaluation.name"] for e in ev.events]
    assert names == ["ragtap.verdict"]
    assert "gen_ai.response.id" not in ev.events[0].attributes


CONTENT_KEYS = ("gen_ai.retrieval.query.text", "gen_ai.retrieval.documents", "gen_ai.output.messages",
                "ragtap.supporting_content")


def test_content_not_captured_by_default(memory):
    provider, mem = memory
    otel = OtelExporter(OtelSettings(enabled=True), tracer_provider=provider)
    ex = make_exchange()
    otel.exchange_started(ex)
    otel.exchange_finished(ex)
    otel.interaction_scored(make_interaction(ex), make_assessment(), 0.1)
    for span in mem.get_finished_spans():
        for key in CONTENT_KEYS:
            assert key not in span.attributes
        flat = json.dumps({k: str(v) for k, v in span.attributes.items()})
        assert "webhook" not in flat and "general knowledge" not in flat


def test_content_captured_and_capped(memory):
    provider, mem = memory
    otel = OtelExporter(OtelSettings(enabled=True, capture_content=True, content_max_chars=100),
                        tracer_provider=provider)
    ex = make_exchange()
    otel.exchange_started(ex)
    otel.exchange_finished(ex)
    otel.interaction_scored(make_interaction(ex), make_assessment(), 0.1)
    a = by_name(mem)["evaluate ragtap"].attributes
    assert a["gen_ai.retrieval.query.text"] == "How do I create a webhook?"
    assert a["ragtap.supporting_content"].startswith("general knowledge") and len(a["ragtap.supporting_content"]) == 100
    docs = json.loads(a["gen_ai.retrieval.documents"])
    assert [d["id"] for d in docs] == ["doc-a", "1"]
    assert all(len(d["content"]) <= 100 for d in docs)
    (message,) = json.loads(a["gen_ai.output.messages"])
    assert message["role"] == "assistant" and message["finish_reason"] == "stop"
    assert message["parts"][0]["type"] == "text" and len(message["parts"][0]["content"]) == 100


def test_hooks_never_raise_through_exporter_set(memory):
    provider, mem = memory
    otel = OtelExporter(OtelSettings(enabled=True), tracer_provider=provider)
    hooks = ExporterSet([otel])
    ex = make_exchange()
    hooks.exchange_finished(ex)  # no exchange_started: the span is created late, not an error
    hooks.interaction_scored(make_interaction(ex), make_assessment(), 0.1)
    assert hooks.errors == 0
    assert set(by_name(mem)) == {"chat gpt-4o", "evaluate ragtap"}


def test_traces_endpoint_resolution():
    assert _traces_endpoint(None) is None
    assert _traces_endpoint("http://collector:4318") == "http://collector:4318/v1/traces"
    assert _traces_endpoint("http://collector:4318/") == "http://collector:4318/v1/traces"
    assert _traces_endpoint("http://gw/otlp/v1/traces") == "http://gw/otlp/v1/traces"


def test_counting_exporter_counts_and_swallows():
    class Raising:
        def export(self, spans):
            raise ConnectionError("nope")

        def shutdown(self):
            raise RuntimeError("nope")

        def force_flush(self, timeout_millis=0):
            return True

    stats = ExportStats()
    wrapped = CountingSpanExporter(Raising(), stats)
    assert wrapped.export([object(), object()]) == SpanExportResult.FAILURE
    wrapped.shutdown()
    assert stats.failed_exports == 1 and stats.failed_spans == 2 and stats.failures == 1


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.asyncio
async def test_otlp_http_end_to_end():
    """A real OTLP/HTTP receiver on 127.0.0.1 decodes what the exporter sends: traces, metrics and log events."""
    received: list[ExportTraceServiceRequest] = []
    headers_seen: list[dict] = []
    metrics_received: list[ExportMetricsServiceRequest] = []
    logs_received: list[ExportLogsServiceRequest] = []

    def decoder(kind, into):
        async def handle(request: web.Request) -> web.Response:
            msg = kind()
            msg.ParseFromString(await request.read())
            into.append(msg)
            return web.Response(body=b"", content_type="application/x-protobuf")
        return handle

    async def traces(request: web.Request) -> web.Response:
        headers_seen.append(dict(request.headers))
        msg = ExportTraceServiceRequest()
        msg.ParseFromString(await request.read())
        received.append(msg)
        return web.Response(body=b"", content_type="application/x-protobuf")

    app = web.Application()
    app.router.add_post("/v1/traces", traces)
    app.router.add_post("/v1/metrics", decoder(ExportMetricsServiceRequest, metrics_received))
    app.router.add_post("/v1/logs", decoder(ExportLogsServiceRequest, logs_received))
    runner = web.AppRunner(app)
    await runner.setup()
    port = _free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        settings = OtelSettings(enabled=True, exporter="otlp", endpoint=f"http://127.0.0.1:{port}",
                                headers={"x-api-key": "k1"}, service_name="ragtap-test", export_timeout=5)
        otel = OtelExporter(settings)
        ex = make_exchange()
        otel.exchange_started(ex)
        otel.exchange_finished(ex)
        otel.interaction_scored(make_interaction(ex), make_assessment(Verdict.REFUSAL), 0.1)
        await asyncio.to_thread(otel.shutdown)  # flushes the batch processor (blocking: off the loop)
    finally:
        await runner.cleanup()

    assert received and headers_seen[0].get("x-api-key") == "k1"
    assert headers_seen[0]["Content-Type"] == "application/x-protobuf"
    spans = {}
    for msg in received:
        for rs in msg.resource_spans:
            resource = {kv.key: kv.value.string_value for kv in rs.resource.attributes}
            assert resource["service.name"] == "ragtap-test"
            for ss in rs.scope_spans:
                assert ss.scope.name == "ragtap"
                for span in ss.spans:
                    spans[span.name] = span
    chat, ev = spans["chat gpt-4o"], spans["evaluate ragtap"]
    assert chat.trace_id.hex() == TRACE_ID and chat.parent_span_id.hex() == PARENT_ID
    assert ev.parent_span_id == chat.span_id
    attrs = {kv.key: kv.value for kv in chat.attributes}
    assert attrs["gen_ai.request.model"].string_value == "gpt-4o"
    assert attrs["gen_ai.usage.input_tokens"].int_value == 321
    verdicts = [e for e in ev.events if e.name == "gen_ai.evaluation.result"
                and any(kv.key == "gen_ai.evaluation.name" and kv.value.string_value == "ragtap.verdict"
                        for kv in e.attributes)]
    assert len(verdicts) == 1
    labels = {kv.key: kv.value.string_value for kv in verdicts[0].attributes}
    assert labels["gen_ai.evaluation.score.label"] == "refusal"
    assert otel.stats.exported_spans == 2 and otel.stats.failures == 0
    metric_names = {m.name for msg in metrics_received for rm in msg.resource_metrics for sm in rm.scope_metrics
                    for m in sm.metrics}
    assert {"gen_ai.client.operation.duration", "gen_ai.client.token.usage",
            "gen_ai.client.operation.time_to_first_chunk"} <= metric_names
    records = [r for msg in logs_received for rl in msg.resource_logs for sl in rl.scope_logs for r in sl.log_records]
    assert records and all(r.event_name == "gen_ai.evaluation.result" for r in records)
    assert all(r.span_id == chat.span_id and r.trace_id == chat.trace_id for r in records)  # the chat span's context


@pytest.mark.asyncio
async def test_closed_port_failures_counted_and_reach_prometheus():
    port = _free_port()  # nothing listens there
    # A hook that waited for the collector would take the export's timeout (retries against the closed port); the
    # bound below is half of it, far above the first call's own cost (imports, lazy set-up: 0.35 s once on a loaded
    # CI machine, which failed the 0.2 s bound this test had with a 0.5 s timeout).
    settings = OtelSettings(enabled=True, exporter="otlp", endpoint=f"http://127.0.0.1:{port}/v1/traces",
                            export_timeout=2.0)
    otel = OtelExporter(settings)
    prom = PrometheusExporter()
    hooks = ExporterSet([prom, otel])
    prom.watch_errors("otel", lambda: otel.stats.failures)
    ex = make_exchange()
    started = time.perf_counter()
    hooks.exchange_started(ex)
    hooks.exchange_finished(ex)
    hooks.interaction_scored(make_interaction(ex), make_assessment(), 0.1)
    assert time.perf_counter() - started < settings.export_timeout / 2  # the hooks never wait for the collector
    await asyncio.to_thread(hooks.shutdown)
    assert hooks.errors == 0
    assert otel.stats.failures >= 1 and otel.stats.failed_spans == 2 and otel.stats.exported_spans == 0
    body = prom.render()[0].decode()
    assert f'ragtap_exporter_errors_total{{exporter="otel"}} {float(otel.stats.failures)}' in body


def test_console_and_none_exporters(capsys):
    for kind in ("console", "none"):
        otel = OtelExporter(OtelSettings(enabled=True, exporter=kind))
        ex = make_exchange()
        otel.exchange_started(ex)
        otel.exchange_finished(ex)
        otel.shutdown()
        otel.shutdown()  # idempotent
    captured = capsys.readouterr()
    assert captured.out == ""  # stdout stays clean for CLI output
    assert captured.err.count('"name": "chat gpt-4o"') == 1


def test_unknown_exporter_rejected():
    with pytest.raises(ValueError):
        OtelExporter(OtelSettings(enabled=True, exporter="zipkin"))
