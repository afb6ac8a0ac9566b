"""OpenTelemetry GenAI conventions beyond the chat span: client metrics, log-based evaluation events on the chat
span's context, request/usage/identity attributes, messages under content capture, the OTEL_* / RAGTAP_OTEL_*
settings, OTLP over gRPC, and ragtap's own overhead cost (Prometheus and spans), through the real proxy."""

from __future__ import annotations

import asyncio
import json
from concurrent import futures
from typing import Any

import grpc
import openai
import pytest
from conftest import ENV, Collector, RecordingUpstream, explicit, fixed, json_content, rag_messages
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2, metrics_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from test_otel_exporter import make_assessment, make_exchange, make_interaction

from ragtap.config import ConfigError, load_config
from ragtap.cost import CostSettings, ModelPrice, PriceTable, instruction_tokens, settle_overhead
from ragtap.exchange import ExchangeRecord, chat_messages, note_usage, request_parameters
from ragtap.exporters.otel import (
    OtelExporter,
    build_log_exporter,
    build_metric_exporter,
    build_resource,
    build_span_exporter,
    otlp_protocol,
    sdk_disabled,
)
from ragtap.exporters.prometheus import PrometheusExporter
from ragtap.exporters.semconv import DURATION_BUCKETS, TOKEN_BUCKETS
from ragtap.exporters.settings import OtelSettings
from ragtap.prompts import prompt_text
from ragtap.proxy.server import RagtapServer
from ragtap.wiring import build_exporters


def in_memory(settings: OtelSettings | None = None) -> tuple[OtelExporter, InMemorySpanExporter, InMemoryMetricReader, InMemoryLogRecordExporter]:
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    reader = InMemoryMetricReader()
    logs = InMemoryLogRecordExporter()
    otel = OtelExporter(settings or OtelSettings(enabled=True), tracer_provider=provider, metric_reader=reader, log_exporter=logs)
    return otel, spans, reader, logs


def metric_points(reader: InMemoryMetricReader) -> dict[str, list[Any]]:
    """metric name -> [(unit, point)] of everything the reader collected."""
    found: dict[str, list[Any]] = {}
    data = reader.get_metrics_data()
    for rm in data.resource_metrics if data else ():
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                found.setdefault(metric.name, []).extend((metric.unit, p) for p in metric.data.data_points)
    return found


# ------------------------------------------------------------------------------------------------- metrics
def test_client_metrics_names_units_buckets_and_required_attributes():
    otel, _, reader, _ = in_memory()
    ex = make_exchange()
    otel.exchange_started(ex)
    otel.exchange_finished(ex)
    points = metric_points(reader)
    (unit, duration), = points["gen_ai.client.operation.duration"]
    assert unit == "s" and tuple(duration.explicit_bounds) == DURATION_BUCKETS
    assert duration.count == 1 and duration.sum == pytest.approx(1.0, abs=0.05)
    attrs = dict(duration.attributes)
    assert attrs == {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4o",
                     "gen_ai.response.model": "gpt-4o-2024-08-06", "server.address": "api.openai.com", "server.port": 443}
    tokens = {dict(p.attributes)["gen_ai.token.type"]: (u, p) for u, p in points["gen_ai.client.token.usage"]}
    assert tokens["input"][0] == "{token}" and tokens["input"][1].sum == 321 and tokens["output"][1].sum == 54
    assert tuple(tokens["input"][1].explicit_bounds) == TOKEN_BUCKETS
    (unit, first), = points["gen_ai.client.operation.time_to_first_chunk"]
    assert unit == "s" and first.sum == pytest.approx(0.3, abs=0.05)
    otel.shutdown()


def test_errors_carry_error_type_and_unstreamed_calls_have_no_first_chunk_metric():
    otel, _, reader, _ = in_memory()
    ex = make_exchange(stream=False, status=502, outcome="upstream_error", input_tokens=None, output_tokens=None)
    otel.exchange_finished(ex)
    points = metric_points(reader)
    (_, duration), = points["gen_ai.client.operation.duration"]
    assert dict(duration.attributes)["error.type"] == "502"
    assert "gen_ai.client.operation.time_to_first_chunk" not in points
    assert "gen_ai.client.token.usage" not in points  # no usage reported: nothing is made up
    otel.shutdown()


# ------------------------------------------------------------------------------------------ evaluation events
def test_evaluation_results_are_log_events_on_the_chat_span_context():
    otel, spans, _, logs = in_memory()
    ex = make_exchange()
    otel.exchange_started(ex)
    otel.exchange_finished(ex)
    otel.interaction_scored(make_interaction(ex), make_assessment(), 0.1)
    otel.force_flush()  # log records go through a batch processor
    chat = next(s for s in spans.get_finished_spans() if s.name == "chat gpt-4o")
    records = [r.log_record for r in logs.get_finished_logs()]
    names = {r.attributes["gen_ai.evaluation.name"] for r in records}
    assert names == {"ragtap.sdq", "ragtap.sdrd", "ragtap.sda", "ragtap.qrd", "ragtap.qa", "ragtap.verdict", "ragtap.retrieval"}
    for record in records:
        assert record.event_name == "gen_ai.evaluation.result"
        assert record.trace_id == chat.context.trace_id and record.span_id == chat.context.span_id
        assert record.attributes["gen_ai.response.id"] == "chatcmpl-123"
    verdict = next(r for r in records if r.attributes["gen_ai.evaluation.name"] == "ragtap.verdict")
    assert verdict.attributes["gen_ai.evaluation.score.label"] == "parametric"
    otel.shutdown()


def test_evaluation_span_can_be_turned_off():
    otel, spans, _, logs = in_memory(OtelSettings(enabled=True, evaluation_span=False))
    ex = make_exchange()
    otel.exchange_started(ex)
    otel.exchange_finished(ex)
    otel.interaction_scored(make_interaction(ex), make_assessment(), 0.1)
    otel.force_flush()
    assert [s.name for s in spans.get_finished_spans()] == ["chat gpt-4o"]
    assert len(logs.get_finished_logs()) == 7
    otel.shutdown()


# ------------------------------------------------------------------------------------- request attributes
def test_request_parameters_and_usage_details_from_wire_bodies():
    p = request_parameters({"temperature": 0.2, "top_p": 1, "max_completion_tokens": 300, "seed": 7, "n": 2, "stop": "END",
                            "frequency_penalty": 0.5, "response_format": {"type": "json_schema"}, "reasoning_effort": "low"})
    assert (p.temperature, p.top_p, p.max_tokens, p.seed, p.choice_count, p.stop_sequences, p.output_type, p.reasoning_level) == (
        0.2, 1.0, 300, 7, 2, ("END",), "json", "low")
    assert request_parameters({"temperature": True, "max_tokens": "9"}).temperature is None  # wrong types are not guessed
    assert request_parameters({"max_output_tokens": 50, "text": {"format": {"type": "text"}}}).output_type == "text"
    record = ExchangeRecord(route="/v1/chat/completions")
    note_usage(record, {"prompt_tokens": 100, "completion_tokens": 20, "prompt_tokens_details": {"cached_tokens": 64},
                        "completion_tokens_details": {"reasoning_tokens": 8}})
    assert (record.input_tokens, record.output_tokens, record.cached_input_tokens, record.reasoning_tokens) == (100, 20, 64, 8)
    note_usage(record, {"input_tokens": 5, "output_tokens": 6, "input_tokens_details": {"cached_tokens": 0},
                        "output_tokens_details": {"reasoning_tokens": 2}})  # the Responses API's names
    assert (record.input_tokens, record.output_tokens, record.cached_input_tokens, record.reasoning_tokens) == (5, 6, 0, 2)
    messages = chat_messages([{"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "function": {"name": "search", "arguments": "{}"}}]},
                              {"role": "tool", "tool_call_id": "c1", "content": "doc"}, "junk"])
    assert [m.role for m in messages] == ["assistant", "tool"]
    assert messages[0].parts[0].type == "tool_call" and messages[1].parts[0].type == "tool_call_response"


@pytest.fixture
async def otel_proxy(embedder):
    """ragtap between the openai SDK and the scripted upstream, with an in-memory OtelExporter beside the others."""
    started: list[Any] = []

    async def start(script, otel_settings: OtelSettings, flags: dict | None = None):
        upstream = RecordingUpstream(script)
        await upstream.__aenter__()
        started.append(upstream)
        otel, spans, reader, logs = in_memory(otel_settings)
        sections = {"server": {"upstream": upstream.base_url, "host": "127.0.0.1", "port": 0, "shutdown_grace_s": 2.0}}
        sections.update(flags or {})
        config = load_config(flags=sections, environ=ENV)
        collector = Collector()
        prometheus = PrometheusExporter(config.prometheus)
        server = RagtapServer(config, embedder=embedder, exporters=[collector, prometheus, otel])
        await server.__aenter__()
        started.append(server)
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0, timeout=15)
        started.append(client)
        return client, collector, spans, reader, logs, prometheus

    try:
        yield start
    finally:
        for thing in reversed(started):
            if isinstance(thing, openai.AsyncOpenAI):
                await thing.close()
            else:
                await thing.__aexit__(None, None, None)


@pytest.mark.parametrize("stream", [False, True])
async def test_proxied_rag_exchange_span_attributes_messages_and_overhead(otel_proxy, stream):
    client, collector, spans, reader, logs, prometheus = await otel_proxy(
        fixed(json_content()), OtelSettings(enabled=True, capture_content=True))
    messages = rag_messages()
    kwargs: dict[str, Any] = dict(model="gpt-4o-mini", messages=messages, temperature=0.3, top_p=0.9, max_tokens=200,
                                  seed=11, user="user-42", metadata={"session_id": "sess-7", "conversation_id": "conv-9"}, store=True,
                                  extra_body=explicit())
    if stream:
        answer = ""
        async for chunk in await client.chat.completions.create(stream=True, **kwargs):
            answer += "".join(c.delta.content or "" for c in chunk.choices)
    else:
        answer = (await client.chat.completions.create(**kwargs)).choices[0].message.content
    await collector.assessment(timeout=20)
    chat = next(s for s in spans.get_finished_spans() if s.name == "chat gpt-4o-mini")
    a = chat.attributes
    assert (a["gen_ai.request.temperature"], a["gen_ai.request.top_p"], a["gen_ai.request.max_tokens"], a["gen_ai.request.seed"]) == (
        0.3, 0.9, 200, 11)
    assert "gen_ai.request.choice.count" not in a  # n not set (== 1): not recorded
    assert (a["user.id"], a["session.id"], a["gen_ai.conversation.id"]) == ("user-42", "sess-7", "conv-9")
    assert a["gen_ai.response.finish_reasons"] == ("stop",)
    inputs = json.loads(a["gen_ai.input.messages"])
    assert [m["role"] for m in inputs] == ["system", "user"]  # the app's messages, not ragtap's instruction
    assert inputs[1]["parts"] == [{"type": "text", "content": messages[1]["content"]}]
    (output,) = json.loads(a["gen_ai.output.messages"])
    assert output["parts"][0]["content"] == answer and output["finish_reason"] == "stop"
    # ragtap's own overhead: the injected instruction and the supporting content, priced (gpt-4o-mini default)
    instruction = instruction_tokens(prompt_text("supporting_content"), "gpt-4o-mini")
    assert a["ragtap.overhead.input_tokens"] == instruction > 50
    assert a["ragtap.overhead.output_tokens"] == a["ragtap.supporting_tokens"] > 10
    expected = (instruction * 0.15 + a["ragtap.supporting_tokens"] * 0.60) / 1e6
    assert a["ragtap.overhead.cost_usd"] == pytest.approx(expected)
    exchange = await collector.exchange()
    assert exchange.overhead is not None and exchange.overhead.cost_usd == pytest.approx(expected)  # for the capture store
    body = prometheus.render()[0].decode()
    assert f'ragtap_overhead_tokens_total{{kind="input",model="gpt-4o-mini"}} {float(instruction)}' in body
    assert 'ragtap_overhead_cost_usd_total{model="gpt-4o-mini"}' in body
    points = metric_points(reader)
    assert sum(p.count for _, p in points["gen_ai.client.operation.duration"]) == 1
    assert {dict(p.attributes)["gen_ai.token.type"] for _, p in points["ragtap.overhead.tokens"]} == {"input", "output"}


async def test_not_rag_exchange_has_no_overhead_and_no_content_without_capture(otel_proxy):
    client, collector, spans, _, _, _ = await otel_proxy(fixed("plain answer"), OtelSettings(enabled=True))
    await client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hello there"}], n=2)
    exchange = await collector.exchange()
    assert exchange.overhead is None
    # The exporters' hooks run one after another: the span ends after the collector saw the exchange.
    await collector.wait_until(lambda: any(s.name == "chat gpt-4o" for s in spans.get_finished_spans()), 10, "the chat span")
    chat = next(s for s in spans.get_finished_spans() if s.name == "chat gpt-4o")
    assert chat.attributes["gen_ai.request.choice.count"] == 2
    assert "gen_ai.input.messages" not in chat.attributes and "ragtap.overhead.cost_usd" not in chat.attributes


# -------------------------------------------------------------------------------------------------- cost
def test_price_table_defaults_snapshots_and_overrides():
    table = PriceTable()
    assert table.price("gpt-4o-mini-2024-07-18") == ModelPrice(0.15, 0.60)  # the snapshot of gpt-4o-mini, not gpt-4o
    assert table.price("gpt-4o-2024-08-06") == ModelPrice(2.50, 10.00)
    assert table.price("llama-3.1-70b") is None and table.price(None) is None
    custom = PriceTable(CostSettings(prices={"gpt-4o": ModelPrice(1.0, 2.0), "llama": ModelPrice(0.0, 0.0)}))
    assert custom.cost("gpt-4o", 1_000_000, 500_000) == pytest.approx(2.0)
    assert custom.cost("llama-3.1-70b", 10, 10) is None  # a bare prefix names another model: unpriced
    assert custom.cost("llama", 10, 10) == 0.0
    record = ExchangeRecord(route="/v1/chat/completions", request_model="unpriced-model", status=200,
                            injected_instruction="Answer in JSON.", supporting_tokens=12)
    overhead = settle_overhead(record, table)
    assert overhead.input_tokens == instruction_tokens("Answer in JSON.", "unpriced-model") and overhead.output_tokens == 12
    assert overhead.cost_usd is None  # no price: tokens are still counted, money is not invented
    failed = ExchangeRecord(route="/v1/chat/completions", request_model="gpt-4o", status=429, injected_instruction="x")
    assert settle_overhead(failed, table) is not None and failed.overhead.input_tokens == 0  # an error reply bills nothing
    off = ExchangeRecord(route="/v1/chat/completions", status=200, injected_instruction="x")
    assert settle_overhead(off, PriceTable(CostSettings(enabled=False))) is None


def test_cost_config_section():
    config = load_config(flags={"cost": {"prices": {"my-model": {"input": 1, "output": 2}}}}, environ={"RAGTAP_COST_ENABLED": "false"})
    assert config.cost.prices == {"my-model": ModelPrice(1.0, 2.0)} and config.cost.enabled is False
    with pytest.raises(ConfigError, match="cost.prices"):
        load_config(flags={"cost": {"prices": {"m": {"input": -1, "output": 2}}}}, environ={})


# -------------------------------------------------------------------------------- OTEL_* and RAGTAP_OTEL_*
def test_ragtap_otel_environment_overrides():
    config = load_config(environ={"RAGTAP_OTEL_ENABLED": "true", "RAGTAP_OTEL_PROTOCOL": "grpc", "RAGTAP_OTEL_CAPTURE_CONTENT": "1",
                                  "RAGTAP_OTEL_HEADERS": "x-api-key=k1,authorization=Bearer%20t", "RAGTAP_OTEL_SERVICE_NAME": "rag-svc"})
    otel = config.otel
    assert (otel.enabled, otel.protocol, otel.capture_content, otel.service_name) == (True, "grpc", True, "rag-svc")
    assert otel.headers == {"x-api-key": "k1", "authorization": "Bearer t"}
    with pytest.raises(ConfigError, match="otel.protocol"):
        load_config(environ={"RAGTAP_OTEL_PROTOCOL": "http/json"})


def test_standard_resource_and_protocol_variables(monkeypatch):
    monkeypatch.delenv("OTEL_SERVICE_NAME", raising=False)
    monkeypatch.delenv("OTEL_RESOURCE_ATTRIBUTES", raising=False)
    assert build_resource(OtelSettings()).attributes["service.name"] == "ragtap"
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=prod,service.name=from-attrs")
    assert build_resource(OtelSettings()).attributes["service.name"] == "from-attrs"
    monkeypatch.setenv("OTEL_SERVICE_NAME", "from-env")
    resource = build_resource(OtelSettings())
    assert resource.attributes["service.name"] == "from-env" and resource.attributes["deployment.environment"] == "prod"
    assert build_resource(OtelSettings(service_name="from-config")).attributes["service.name"] == "from-config"

    assert otlp_protocol(OtelSettings(), "traces", {}) == "http/protobuf"
    env = {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL": "http/protobuf"}
    assert otlp_protocol(OtelSettings(), "traces", env) == "grpc" and otlp_protocol(OtelSettings(), "logs", env) == "http/protobuf"
    assert otlp_protocol(OtelSettings(protocol="http/protobuf"), "traces", env) == "http/protobuf"
    with pytest.raises(ValueError, match="http/json"):
        otlp_protocol(OtelSettings(), "metrics", {"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"})

    grpc_settings = OtelSettings(protocol="grpc", endpoint="http://127.0.0.1:4317")
    assert "grpc" in type(build_span_exporter(grpc_settings)).__module__
    assert "grpc" in type(build_metric_exporter(grpc_settings)).__module__
    assert "grpc" in type(build_log_exporter(grpc_settings)).__module__
    # no endpoint set: the SDK resolves each signal from OTEL_EXPORTER_OTLP_<SIGNAL>_ENDPOINT / OTEL_EXPORTER_OTLP_ENDPOINT
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://base:4318")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://metrics:9999/custom")
    assert build_span_exporter(OtelSettings())._endpoint == "http://base:4318/v1/traces"
    assert build_metric_exporter(OtelSettings())._endpoint == "http://metrics:9999/custom"
    assert build_log_exporter(OtelSettings())._endpoint == "http://base:4318/v1/logs"
    http_span = build_span_exporter(OtelSettings(endpoint="http://collector:4318"))
    assert "http" in type(http_span).__module__ and http_span._endpoint == "http://collector:4318/v1/traces"


def test_otel_sdk_disabled_turns_otel_off(monkeypatch):
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    assert sdk_disabled()
    config = load_config(flags={"otel": {"enabled": True, "exporter": "none"}}, environ={})
    built = build_exporters(config)
    assert not any(isinstance(e, OtelExporter) for e in built.exporters)
    monkeypatch.setenv("OTEL_SDK_DISABLED", "false")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
    with pytest.raises(ConfigError, match="http/json"):  # one config line for `ragtap serve`, not a traceback
        build_exporters(load_config(flags={"otel": {"enabled": True}}, environ={}))
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_PROTOCOL")
    built = build_exporters(config)
    assert any(isinstance(e, OtelExporter) for e in built.exporters)
    for exporter in built.exporters:
        exporter.shutdown()


# ------------------------------------------------------------------------------------------- OTLP over gRPC
class _Receiver(trace_service_pb2_grpc.TraceServiceServicer, metrics_service_pb2_grpc.MetricsServiceServicer,
                logs_service_pb2_grpc.LogsServiceServicer):
    """The OTLP gRPC services, keeping what arrives (the generated stubs of opentelemetry-proto)."""

    def __init__(self) -> None:
        self.traces: list[Any] = []
        self.metrics: list[Any] = []
        self.logs: list[Any] = []
        self.metadata: list[dict[str, str]] = []

    def Export(self, request, context):  # noqa: N802 (the service's method name)
        self.metadata.append(dict(context.invocation_metadata()))
        if isinstance(request, trace_service_pb2.ExportTraceServiceRequest):
            self.traces.append(request)
            return trace_service_pb2.ExportTraceServiceResponse()
        if isinstance(request, metrics_service_pb2.ExportMetricsServiceRequest):
            self.metrics.append(request)
            return metrics_service_pb2.ExportMetricsServiceResponse()
        self.logs.append(request)
        return logs_service_pb2.ExportLogsServiceResponse()


async def test_otlp_grpc_end_to_end():
    receiver = _Receiver()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(receiver, server)
    metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server(receiver, server)
    logs_service_pb2_grpc.add_LogsServiceServicer_to_server(receiver, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        otel = OtelExporter(OtelSettings(enabled=True, protocol="grpc", endpoint=f"http://127.0.0.1:{port}",
                                         headers={"x-api-key": "k2"}, service_name="ragtap-grpc", export_timeout=5))
        ex = make_exchange()
        otel.exchange_started(ex)
        otel.exchange_finished(ex)
        otel.interaction_scored(make_interaction(ex), make_assessment(), 0.1)
        await asyncio.to_thread(otel.shutdown)
    finally:
        server.stop(grace=None)
    assert otel.stats.failures == 0 and otel.stats.exported_spans == 2
    names = {s.name for msg in receiver.traces for rs in msg.resource_spans for ss in rs.scope_spans for s in ss.spans}
    assert names == {"chat gpt-4o", "evaluate ragtap"}
    assert any(m.get("x-api-key") == "k2" for m in receiver.metadata)
    metric_names = {m.name for msg in receiver.metrics for rm in msg.resource_metrics for sm in rm.scope_metrics for m in sm.metrics}
    assert "gen_ai.client.operation.duration" in metric_names
    events = [r for msg in receiver.logs for rl in msg.resource_logs for sl in rl.scope_logs for r in sl.log_records]
    assert events and {r.event_name for r in events} == {"gen_ai.evaluation.result"}


def test_judge_results_are_log_events_on_the_chat_span_context_too():
    """The Ragas judge's results go where ragtap's own go: `evaluate ragas` span events and log-based events."""
    from test_judge_online import interaction, make_judgement

    from ragtap.exporters.judge import OtelJudgeExporter

    otel, spans, _, logs = in_memory()
    ex = make_exchange()
    otel.exchange_started(ex)
    otel.exchange_finished(ex)
    item = interaction(1)
    item.exchange = ex
    OtelJudgeExporter(otel.tracer, otel.event_logger).interaction_judged(item, make_judgement())
    otel.force_flush()
    chat = next(s for s in spans.get_finished_spans() if s.name == "chat gpt-4o")
    records = [r.log_record for r in logs.get_finished_logs()]
    assert {r.attributes["gen_ai.evaluation.name"] for r in records} == {"ragas.faithfulness", "ragas.answer_relevance",
                                                                         "ragas.context_relevance"}
    assert all(r.event_name == "gen_ai.evaluation.result" and r.span_id == chat.context.span_id for r in records)
    assert any(s.name == "evaluate ragas" for s in spans.get_finished_spans())
    otel.shutdown()
