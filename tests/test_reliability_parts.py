"""Issue 7, faults of ragtap's own parts, over real HTTP: the embedder raises or is slow, the OTLP collector is
down, an exporter raises, the scoring queue is full.  The app's responses are unaffected (same answers, no
added wait), and every fault is counted in the metrics, read from the Prometheus text ragtap serves on /metrics.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from ragtap.config import load_config
from ragtap.exporters.base import Exporter
from ragtap.proxy.server import RagtapServer

from conftest import ENV, free_port, json_content
from test_reliability_faults import PLAIN_ANSWER, FaultUpstream, chat, request

ANSWER = json.loads(json_content())["answer"]


class BrokenEmbedder:
    name, dim = "broken", 384

    def embed(self, texts):  # type: ignore[no-untyped-def]
        raise RuntimeError("embedding backend is down")


class SlowEmbedder:
    def __init__(self, inner: Any, delay_s: float) -> None:
        self.inner, self.delay_s = inner, delay_s
        self.name, self.dim = inner.name, inner.dim

    def embed(self, texts):  # type: ignore[no-untyped-def]
        time.sleep(self.delay_s)
        return self.inner.embed(texts)


class RaisingExporter(Exporter):
    def __init__(self) -> None:
        self.calls = 0
        self._lock = threading.Lock()

    def exchange_finished(self, *args: Any) -> None:
        with self._lock:
            self.calls += 1
        raise RuntimeError("exporter bug")

    interaction_scored = scoring_failed = exchange_finished  # type: ignore[assignment]


async def metrics(session: aiohttp.ClientSession, url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """The samples of ragtap's /metrics: {(name, sorted labels): value}."""
    async with session.get(url + "/metrics") as response:
        assert response.status == 200
        text = await response.text()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for family in text_string_to_metric_families(text) for s in family.samples}


def total(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str) -> float:
    return sum(v for (n, ls), v in samples.items() if n == name and all((k, v2) in ls for k, v2 in labels.items()))


async def wait_for_metric(session: aiohttp.ClientSession, url: str, name: str, at_least: float, timeout: float = 10.0, **labels: str) -> float:
    deadline = time.monotonic() + timeout
    while True:
        value = total(await metrics(session, url), name, **labels)
        if value >= at_least or time.monotonic() > deadline:
            return value
        await asyncio.sleep(0.1)


async def answer_of(result: Any, stream: bool) -> str:
    assert result.error is None and result.status == 200, result
    if not stream:
        return result.json()["choices"][0]["message"]["content"]
    text = ""
    for line in result.body.split(b"\n"):
        if line.startswith(b"data: ") and line != b"data: [DONE]":
            event = json.loads(line[6:])
            if event.get("choices"):
                text += event["choices"][0]["delta"].get("content") or ""
    return text


async def test_broken_embedder_dead_collector_and_raising_exporter_leave_responses_alone(monkeypatch) -> None:
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "50")  # export every 50 ms instead of 5 s, so failures show quickly
    async with FaultUpstream() as upstream:
        config = load_config(environ=ENV, flags={
            "server": {"upstream": upstream.base_url, "port": 0, "shutdown_grace_s": 2.0},
            "otel": {"enabled": True, "exporter": "otlp", "endpoint": f"http://127.0.0.1:{free_port()}", "export_timeout": 0.3},
        })
        async with RagtapServer(config, embedder=BrokenEmbedder()) as server:
            raising = RaisingExporter()
            server.state.exporter.add(raising)
            url = f"http://127.0.0.1:{server.port}"
            async with aiohttp.ClientSession() as session:
                for stream in (False, True, False, True, False):
                    result = await request(session, url + "/v1/chat/completions", chat("rag", stream=stream))
                    assert await answer_of(result, stream) == ANSWER
                    assert result.seconds < 1.0
                result = await request(session, url + "/v1/chat/completions", chat("plain"))
                assert await answer_of(result, False) == PLAIN_ANSWER

                assert await wait_for_metric(session, url, "ragtap_scoring_failed_total", 5) == 5
                assert await wait_for_metric(session, url, "ragtap_exporter_errors_total", 1, exporter="otel") >= 1
                hooks = await wait_for_metric(session, url, "ragtap_exporter_errors_total", 11, exporter="hooks")
                assert hooks == raising.calls >= 11  # 6 exchanges + 5 scoring failures
                samples = await metrics(session, url)
                assert total(samples, "ragtap_requests_total", route="/v1/chat/completions", status="200") == 6
                assert total(samples, "ragtap_verdicts_total") == 0
            assert server.state.scoring is not None and server.state.scoring.failed == 5


async def test_full_scoring_queue_drops_and_counts_without_slowing_responses(embedder) -> None:
    async with FaultUpstream() as upstream:
        config = load_config(environ=ENV, flags={
            "server": {"upstream": upstream.base_url, "port": 0, "shutdown_grace_s": 2.0},
            "scoring": {"queue_size": 1, "batch_max": 1},
        })
        async with RagtapServer(config, embedder=SlowEmbedder(embedder, 0.3)) as server:
            url = f"http://127.0.0.1:{server.port}"
            async with aiohttp.ClientSession() as session:
                started = time.perf_counter()
                results = await asyncio.gather(*[request(session, url + "/v1/chat/completions", chat("rag")) for _ in range(15)])
                elapsed = time.perf_counter() - started
                for result in results:
                    assert await answer_of(result, False) == ANSWER
                assert elapsed < 1.5, elapsed  # scoring 15 at 0.3 s each would take 4.5 s
                dropped = await wait_for_metric(session, url, "ragtap_scoring_dropped_total", 1, reason="queue_full")
                assert dropped >= 10
                scored = await wait_for_metric(session, url, "ragtap_verdicts_total", 15 - dropped)
                assert scored + dropped == 15
                assert total(await metrics(session, url), "ragtap_scoring_queue_depth") == 0
