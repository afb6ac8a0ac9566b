"""Issue 7, secrets and data, over real HTTP.

- The app's API key (`Authorization`, Azure-style `api-key`, an `api-key` query parameter) reaches the upstream
  and appears nowhere ragtap writes: logs (DEBUG, root logger), spans (attributes and events), metrics, the
  JSONL interactions log, ragtap's own error bodies, and the stdout/stderr of a `ragtap serve` process.
- Message content leaves ragtap only when configured (OTel `capture_content`, `[log] interactions_path`).
- ragtap binds 127.0.0.1 by default; /metrics can have its own listener and a bearer token.
"""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import socket
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from ragtap.config import Config, load_config
from ragtap.exporters.jsonl import JsonlExporter
from ragtap.exporters.otel import OtelExporter
from ragtap.exporters.prometheus import PrometheusExporter
from ragtap.exporters.settings import OtelSettings, PrometheusSettings
from ragtap.wiring import build_exporters
from ragtap.proxy.server import RagtapServer

from conftest import ENV, free_port, rag_messages
from test_reliability_faults import FaultUpstream, chat, request
from test_reliability_parts import RaisingExporter, answer_of
from test_shutdown import start_ragtap

SECRET = "sk-ragtap-secret-XYZ"
AUTH = {"Authorization": f"Bearer {SECRET}", "api-key": SECRET}
CONTENT_MARK = "PURPLE-ELEPHANT"  # in the question, the documents and the answer


class Capture(logging.Handler):
    """Everything logged anywhere in the process, formatted with tracebacks."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s %(message)s"))
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


async def _traffic(url: str, upstream_port: int, stall_url: str | None = None) -> list[bytes]:
    """Every kind of exchange, each with the secret; returns the bodies of the errors ragtap itself produced."""
    own_errors: list[bytes] = []
    async with aiohttp.ClientSession() as session:
        async def call(path: str, body: Any = None, **kw: Any) -> Any:
            return await request(session, url + path, body, headers={**AUTH, **kw.pop("headers", {})}, **kw)

        for stream in (False, True):
            result = await call("/v1/chat/completions", chat("rag", stream=stream))
            assert result.status == 200
        assert (await call("/v1/chat/completions", chat("rag"), headers={"x-ragtap-debug": "1"})).status == 200
        assert (await call("/v1/chat/completions", chat("plain"))).status == 200
        assert (await call(f"/v1/chat/completions?api-key={SECRET}", chat("plain", stream=True))).status == 200
        assert (await call(f"/v1/embeddings?api-key={SECRET}", {"model": "e", "input": "x"})).status == 200
        assert (await call("/v1/models", method="GET")).status == 200
        assert (await call("/v1/files", method="GET")).status == 404
        assert (await call("/v1/chat/completions", chat("rag"), fault="status:401")).status == 401
        assert (await call("/v1/chat/completions", raw=b'{"model": "m", "messages": [', headers={})).status == 400
        for fault, status in (("close", 502), ("stall", 504), ("cut-body", 502)):
            result = await call("/v1/chat/completions", chat("rag"), fault=fault)
            assert result.status == status
            own_errors.append(result.body)
        result = await call("/v1/chat/completions", raw=b"x" * 300_000)
        assert result.status == 413
        own_errors.append(result.body)
    # A request aiohttp cannot parse, with the key in the line that breaks it (the 400 echoes the line to its
    # sender only; the log must not keep it).
    reader, writer = await asyncio.open_connection("127.0.0.1", int(url.rsplit(":", 1)[1]))
    writer.write(f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {SECRET}".encode() + b"A" * 9000 + b"\r\n\r\n")
    await writer.drain()
    assert (await asyncio.wait_for(reader.read(), 5)).startswith(b"HTTP/1.0 400")
    writer.close()
    return own_errors


def _content_reply(body: dict[str, Any]) -> str:
    injected = any("supporting_content" in str(m.get("content")) for m in body["messages"] if isinstance(m, dict))
    answer = f"The APIs stay the same ({CONTENT_MARK})."
    return json.dumps({"answer": answer, "supporting_content": f"APIs remain the same {CONTENT_MARK}"}) if injected else answer


def _rag_body() -> dict[str, Any]:
    question = f"Will the hypervisor change the APIs ({CONTENT_MARK})?"
    documents = [f"All public facing APIs remain the same ({CONTENT_MARK})."]
    return {"model": "gpt-4o-mini", "messages": rag_messages(question, documents), "ragtap": {"question": question, "documents": documents}}


async def test_the_api_key_never_appears_in_logs_spans_metrics_jsonl_or_error_bodies(embedder, tmp_path, caplog) -> None:
    capture = Capture()
    root = logging.getLogger()
    root.addHandler(capture)
    caplog.set_level(logging.DEBUG)
    jsonl_path = tmp_path / "interactions.jsonl"
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    spans = InMemorySpanExporter()
    prometheus = PrometheusExporter(PrometheusSettings())
    otel = OtelExporter(OtelSettings(enabled=True, capture_content=True), span_exporter=spans)
    jsonl = JsonlExporter(str(jsonl_path), flush_every=1)
    try:
        async with FaultUpstream() as upstream:
            config = load_config(environ=ENV, flags={"server": {"upstream": upstream.base_url, "port": 0, "read_timeout_s": 0.3,
                                                                "max_body_bytes": 100_000, "shutdown_grace_s": 2.0},
                                                     "log": {"level": "DEBUG"}})
            async with RagtapServer(config, embedder=embedder, exporters=[prometheus, otel, jsonl, RaisingExporter()]) as server:
                own_errors = await _traffic(f"http://127.0.0.1:{server.port}", upstream.port)
                assert server.state.scoring is not None
                deadline = asyncio.get_running_loop().time() + 15
                while server.state.scoring.scored < 3 and asyncio.get_running_loop().time() < deadline:
                    await asyncio.sleep(0.05)
                assert server.state.scoring.scored >= 3
            # The key did reach the upstream, untouched: ragtap passes credentials through.
            assert all(r.headers.get("authorization") == f"Bearer {SECRET}" for r in upstream.requests)
            assert sum(r.headers.get("api-key") == SECRET for r in upstream.requests) == len(upstream.requests)
    finally:
        root.removeHandler(capture)
    otel.force_flush()
    finished = spans.get_finished_spans()
    span_text = "\n".join(span.to_json() for span in finished)
    metrics_text = prometheus.render()[0].decode()
    log_text = "\n".join(capture.lines) + "\n" + caplog.text
    emitted = {"logs": log_text, "spans": span_text, "metrics": metrics_text, "jsonl": jsonl_path.read_text(),
               "error bodies": b"\n".join(own_errors).decode()}
    # The captures are real: each holds what it should.
    assert "unparseable request" in log_text and "RaisingExporter" in log_text
    assert len(finished) >= 10 and "evaluate ragtap" in span_text and "gen_ai.evaluation.result" in span_text
    assert "ragtap_requests_total" in metrics_text and emitted["jsonl"].count("\n") >= 3
    assert all(b'"type":"upstream_error"' in e or b"request_too_large" in e for e in own_errors)
    for where, text in emitted.items():
        assert SECRET not in text, f"the API key leaked into {where}"
        assert "sk-ragtap" not in text, f"part of the API key leaked into {where}"


@pytest.mark.slow
async def test_ragtap_serve_at_debug_prints_no_secret_and_binds_loopback(tmp_path) -> None:
    metrics_token = "metrics-token-XYZ-123"
    async with FaultUpstream() as upstream:
        interactions = tmp_path / "interactions.jsonl"
        process, port, banner = await start_ragtap(
            f'[server]\nport = PORT\nupstream = "{upstream.base_url}"\nread_timeout_s = 0.3\nmax_body_bytes = 100000\nshutdown_grace_s = 3.0\n'
            f'[log]\nlevel = "DEBUG"\ninteractions_path = "{interactions}"\n'
            f'[otel]\nenabled = true\nexporter = "console"\ncapture_content = true\n'
            f'[prometheus]\ntoken = "{metrics_token}"\n', tmp_path,
            # (the word-hash test embedder: MiniLM loading in the nice-19 scoring thread starves on a saturated machine)
            env={"PYTHONASYNCIODEBUG": "1", "RAGTAP_PLUGINS": "redis_worker_plugin", "RAGTAP_EMBEDDER": "test-word-hash",
                 "PYTHONPATH": str(Path(__file__).parent)})
        try:
            assert f"listening on http://127.0.0.1:{port}/v1" in banner
            assert _listening_addresses(port) == {"127.0.0.1"}
            own_errors = await _traffic(f"http://127.0.0.1:{port}", upstream.port)
            async with aiohttp.ClientSession() as session:
                async with session.get(f"http://127.0.0.1:{port}/metrics", headers={"Authorization": f"Bearer {metrics_token}"}) as response:
                    assert response.status == 200
                    metrics_text = await response.text()
            # Scoring caught up before the drain: the three RAG interactions are in the JSONL log (bounded wait).
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and (not interactions.exists() or interactions.read_text().count("\n") < 3):
                await asyncio.sleep(0.05)
            assert interactions.read_text().count("\n") >= 3
        finally:
            process.send_signal(signal.SIGTERM)
            stdout, stderr = await asyncio.wait_for(process.communicate(), 20)
    assert process.returncode == 0
    output = stdout.decode() + stderr.decode()
    assert "gen_ai.operation.name" in output  # the console span exporter did print spans
    assert "evaluate ragtap" in output
    for where, text in {"stdout/stderr": output, "metrics": metrics_text, "jsonl": interactions.read_text(),
                        "error bodies": b"\n".join(own_errors).decode()}.items():
        assert SECRET not in text and "sk-ragtap" not in text, f"the API key leaked into {where}"
        assert metrics_token not in text, f"the metrics token leaked into {where}"


def _listening_addresses(port: int) -> set[str]:
    """The local addresses of the TCP sockets listening on `port` (from /proc/net/tcp{,6})."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not Path(table).exists():
            continue
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            address, hex_port = fields[1].rsplit(":", 1)
            if int(hex_port, 16) == port and fields[3] == "0A":  # 0A: LISTEN
                found.add(socket.inet_ntop(socket.AF_INET, bytes.fromhex(address)[::-1]) if len(address) == 8 else address)
    return found


async def test_ragtap_binds_loopback_by_default() -> None:
    assert Config().server.host == "127.0.0.1"
    assert load_config(environ={}).server.host == "127.0.0.1"
    async with FaultUpstream() as upstream:
        config = load_config(environ=ENV, flags={"server": {"upstream": upstream.base_url, "port": 0},
                                                 "prometheus": {"listen_port": 0}, "scoring": {"enabled": False}})
        async with RagtapServer(config) as server:
            assert _listening_addresses(server.port) == {"127.0.0.1"}
            assert server.metrics_port is not None and _listening_addresses(server.metrics_port) == {"127.0.0.1"}


async def test_metrics_on_their_own_listener_with_a_bearer_token() -> None:
    token = "scrape-token-42"
    metrics_port = free_port()
    async with FaultUpstream() as upstream:
        config = load_config(environ=ENV, flags={"server": {"upstream": upstream.base_url, "port": 0},
                                                 "prometheus": {"listen_host": "127.0.0.1", "listen_port": metrics_port, "token": token},
                                                 "scoring": {"enabled": False}})
        async with RagtapServer(config) as server, aiohttp.ClientSession() as session:
            assert server.metrics_port == metrics_port and _listening_addresses(metrics_port) == {"127.0.0.1"}
            assert (await request(session, f"http://127.0.0.1:{server.port}/v1/chat/completions", chat("plain"))).status == 200
            metrics_url = f"http://127.0.0.1:{metrics_port}/metrics"
            for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": token}, {"Authorization": f"Basic {token}"}):
                async with session.get(metrics_url, headers=headers) as response:
                    assert response.status == 401 and response.headers["WWW-Authenticate"].startswith("Bearer")
                    assert token not in await response.text()
            async with session.get(metrics_url, headers={"Authorization": f"Bearer {token}"}) as response:
                assert response.status == 200
                assert 'ragtap_requests_total{model="gpt-4o-mini",route="/v1/chat/completions",status="200"} 1.0' in await response.text()
            # On the proxy's port /metrics is not ragtap's any more: it goes to the upstream like any unknown route.
            async with session.get(f"http://127.0.0.1:{server.port}/metrics", headers={"Authorization": f"Bearer {token}"}) as response:
                assert response.status == 404 and "ragtap_requests_total" not in await response.text()
            assert upstream.requests[-1].path == "/v1/metrics"


async def test_metrics_token_on_the_proxy_port() -> None:
    async with FaultUpstream() as upstream:
        config = load_config(environ=ENV, flags={"server": {"upstream": upstream.base_url, "port": 0}, "prometheus": {"token": "tok"},
                                                 "scoring": {"enabled": False}})
        async with RagtapServer(config) as server, aiohttp.ClientSession() as session:
            async with session.get(f"http://127.0.0.1:{server.port}/metrics") as response:
                assert response.status == 401
            async with session.get(f"http://127.0.0.1:{server.port}/metrics", headers={"Authorization": "Bearer tok"}) as response:
                assert response.status == 200
    assert len(upstream.requests) == 0


@pytest.mark.parametrize("capture", [False, True], ids=["default", "capture_content"])
async def test_message_content_is_exported_only_when_configured(embedder, tmp_path, caplog, capture) -> None:
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    caplog.set_level(logging.DEBUG)
    async with FaultUpstream() as upstream:
        upstream.content = _content_reply
        flags: dict[str, dict[str, Any]] = {"server": {"upstream": upstream.base_url, "port": 0, "shutdown_grace_s": 2.0},
                                            "otel": {"enabled": True, "capture_content": capture}}
        if capture:
            flags["log"] = {"interactions_path": str(tmp_path / "interactions.jsonl")}
        config = load_config(environ=ENV, flags=flags)
        built = build_exporters(dataclass_replace_otel_off(config))
        exporters, prometheus = built.exporters, built.prometheus
        spans = InMemorySpanExporter()
        otel = OtelExporter(config.otel, span_exporter=spans)
        async with RagtapServer(config, embedder=embedder, exporters=[*exporters, otel]) as server, aiohttp.ClientSession() as session:
            for stream in (False, True):
                result = await request(session, f"http://127.0.0.1:{server.port}/v1/chat/completions", {**_rag_body(), "stream": stream})
                assert CONTENT_MARK in await answer_of(result, stream)  # the app gets its answer
            deadline = asyncio.get_running_loop().time() + 15
            while server.state.scoring.scored < 2 and asyncio.get_running_loop().time() < deadline:  # type: ignore[union-attr]
                await asyncio.sleep(0.05)
        otel.force_flush()
        span_text = "\n".join(s.to_json() for s in spans.get_finished_spans())
        assert "evaluate ragtap" in span_text
        assert prometheus is not None and CONTENT_MARK not in prometheus.render()[0].decode()
        assert CONTENT_MARK not in caplog.text
        if capture:
            assert CONTENT_MARK in span_text
            assert CONTENT_MARK in (tmp_path / "interactions.jsonl").read_text()
        else:
            assert CONTENT_MARK not in span_text
            assert list(tmp_path.iterdir()) == []  # no interactions log unless configured


def dataclass_replace_otel_off(config: Config) -> Config:
    """The config's exporters minus OpenTelemetry (the test adds its own in-memory one)."""
    import dataclasses

    return dataclasses.replace(config, otel=dataclasses.replace(config.otel, enabled=False))


def test_metrics_open_on_a_public_address_warns() -> None:
    from ragtap.proxy.server import metrics_exposure_warning

    public = load_config(environ=ENV, flags={"server": {"host": "0.0.0.0"}})
    assert "without a token" in (metrics_exposure_warning(public) or "")
    assert metrics_exposure_warning(load_config(environ=ENV, flags={"server": {"host": "0.0.0.0"}, "prometheus": {"token": "t"}})) is None
    assert metrics_exposure_warning(load_config(environ=ENV)) is None  # loopback by default
    separate = load_config(environ=ENV, flags={"server": {"host": "0.0.0.0"}, "prometheus": {"listen_port": 9100, "listen_host": "127.0.0.1"}})
    assert metrics_exposure_warning(separate) is None


def test_junk_model_names_cannot_use_up_the_model_label_budget() -> None:
    from ragtap.exchange import ExchangeRecord

    prometheus = PrometheusExporter(PrometheusSettings(max_models=2))
    for i in range(50):  # a client floods ragtap with made-up model names; the upstream answers 404
        prometheus.exchange_finished(ExchangeRecord(route="/v1/chat/completions", request_model=f"junk-{i}", status=404))
    prometheus.exchange_finished(ExchangeRecord(route="/v1/chat/completions", request_model="gpt-4o", status=200))
    text = prometheus.render()[0].decode()
    assert 'model="gpt-4o"' in text and "junk-" not in text and 'model="other"' in text


def test_refusal_wording_is_not_exported_without_content_capture(embedder) -> None:
    """Issue 13 #10: the verdict's explanation named the refusal phrase, i.e. answer text, even with capture off."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from ragtap.pipeline.batch import ScoringPolicy, assess_batch
    from ragtap.types import Document, Interaction

    answer = "The provided documents do not mention the ZORBLAX warranty for Mrs Quimby."
    item = Interaction(question="What is the warranty?", documents=(Document("The battery is covered for eight years."),), answer=answer)
    (assessment,) = assess_batch([item], embedder, ScoringPolicy(load_config(environ=ENV).thresholds))
    assert assessment.verdict.value == "refusal" and assessment.refusal_phrase
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    OtelExporter(OtelSettings(enabled=True, capture_content=False), tracer_provider=provider).interaction_scored(item, assessment, 0.1)
    exported = "\n".join(s.to_json() for s in spans.get_finished_spans())
    assert "refusal" in exported
    assert assessment.refusal_phrase not in exported and "do not mention" not in exported
