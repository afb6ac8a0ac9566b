"""What the guard did is recorded: ragtap_guard_total{action,outcome} on /metrics, the ragtap.guard.* span
attributes, the capture store's original and delivered answers (and the triage detail showing both), a store
written before the guard's columns opening cleanly; and the fail-open paths through the proxy: an unscorable reply
and an overloaded lane release the answer unchanged, counted.  (No such metric, attribute or column before.)"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from pathlib import Path

import aiohttp
import openai
import pytest

from ragtap.config import load_config
from ragtap.exchange import ExchangeRecord, GuardRecord
from ragtap.proxy.server import RagtapServer
from ragtap.proxy.state import CAPTURE_STORE
from ragtap.store.base import StoreQuery
from ragtap.testing.upstream import ScriptedReply, ScriptedUpstream

from conftest import ENV
from test_guard_proxy import (
    ACTING, BLOCK, EXTRA, FAITHFUL, INVENTED, KEPT_1, MESSAGES, MODEL, WITH_INVENTION, SlowEmbedder, ask, guard_record, script,
)


async def test_the_metric_counts_action_and_outcome_on_metrics(embedder) -> None:
    async with ScriptedUpstream(script(WITH_INVENTION)) as upstream:
        config = load_config(environ=ENV, flags={"server": {"upstream": upstream.base_url, "port": 0, "shutdown_grace_s": 2.0},
                                                 "guard": {**ACTING, "action": "strip"}})
        async with RagtapServer(config, embedder=embedder) as server:
            client = openai.AsyncOpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0, timeout=15)
            for guard in ("strip", "strip", "block"):
                await client.chat.completions.create(model=MODEL, messages=MESSAGES, extra_body=EXTRA, extra_headers={"x-ragtap-guard": guard})
            await client.close()
            url = f"{server.base_url.removesuffix('/v1')}/metrics"
            text = ""
            for _ in range(100):  # the hooks run after the response: bounded wait for the third
                async with aiohttp.ClientSession() as session, session.get(url) as reply:
                    text = await reply.text()
                if 'ragtap_guard_total{action="block",outcome="blocked"} 1.0' in text:
                    break
                await asyncio.sleep(0.02)
    assert 'ragtap_guard_total{action="strip",outcome="stripped"} 2.0' in text
    assert 'ragtap_guard_total{action="block",outcome="blocked"} 1.0' in text


def test_span_attributes_say_what_the_guard_did() -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from ragtap.exporters.otel import OtelExporter
    from ragtap.exporters.settings import OtelSettings

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    otel = OtelExporter(OtelSettings(enabled=True), tracer_provider=provider)
    now = time.perf_counter()
    record = ExchangeRecord(route="/v1/chat/completions", request_model=MODEL, started_at=now - 0.5, finished_at=now, status=200,
                            guard=GuardRecord("retry", "stripped", "unsupported_answer", WITH_INVENTION, FAITHFUL, removed_claims=1,
                                              retry="failed", waited_ms=12.5))
    otel.exchange_started(record)
    otel.exchange_finished(record)
    (span,) = memory.get_finished_spans()
    attributes = {k: v for k, v in span.attributes.items() if k.startswith("ragtap.guard.")}
    assert attributes == {"ragtap.guard.action": "retry", "ragtap.guard.outcome": "stripped", "ragtap.guard.changed": True,
                          "ragtap.guard.trigger": "unsupported_answer", "ragtap.guard.removed_claims": 1, "ragtap.guard.retry": "failed",
                          "ragtap.guard.waited_ms": 12.5}
    assert INVENTED not in json.dumps(dict(span.attributes))  # never the texts (content capture is off)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_the_store_keeps_both_answers_and_the_triage_detail_shows_them(start_proxy, tmp_path: Path, stream: bool) -> None:
    proxy = await start_proxy(script(WITH_INVENTION), flags={"store": {"path": str(tmp_path / "c.sqlite3")}, "guard": ACTING})
    text, _, _ = await ask(proxy, "chat", stream, "strip")
    assert text == FAITHFUL
    await proxy.collector.assessment()
    store = proxy.server.app[CAPTURE_STORE]
    assert await store.flush(timeout=15)
    [row] = (await store.query(StoreQuery(limit=5))).items
    assert (row.answer, row.delivered_answer, row.guard_action, row.guard_outcome) == (WITH_INVENTION, FAITHFUL, "strip", "stripped")
    async with aiohttp.ClientSession() as session, session.get(f"{proxy.url}/triage/api/interactions/{row.id}") as reply:
        detail = await reply.json()
    assert detail["answer"] == WITH_INVENTION
    assert detail["guard"] == {"action": "strip", "outcome": "stripped", "delivered_answer": FAITHFUL}
    assert detail["guard_changed"] is True


def test_a_store_written_before_the_guard_columns_opens_and_takes_rows(tmp_path: Path) -> None:
    from ragtap.store.sql import ADDED_COLUMNS
    from ragtap.store.sqlite import SqliteConnection

    from triage_rows import captured

    path = tmp_path / "old.sqlite3"
    SqliteConnection(str(path), 2.0).close()  # today's schema, then made old: the guard's columns dropped
    with sqlite3.connect(path) as db:
        for column in ADDED_COLUMNS:
            db.execute(f"ALTER TABLE interactions DROP COLUMN {column}")
    connection = SqliteConnection(str(path), 2.0)
    try:
        assert connection.add_many([captured(1)]) == 1
        assert connection.get(captured(1).id).delivered_answer is None
    finally:
        connection.close()


@pytest.mark.parametrize("api", ["chat", "responses"])
async def test_an_unscorable_reply_is_released_unchanged_and_counted(start_proxy, api: str) -> None:
    plain = f"{KEPT_1} {INVENTED}"  # the model ignored the JSON instruction: not split, not scorable
    proxy = await start_proxy(lambda body: ScriptedReply(plain), flags={"guard": ACTING})
    for n, stream in enumerate((False, True), 1):
        text, _, _ = await ask(proxy, api, stream, "block")
        assert text == plain
        assert (await guard_record(proxy, n)).outcome == "unscorable"



async def test_an_overloaded_lane_releases_answers_unchanged_and_counts_them(start_proxy, embedder) -> None:
    slow = SlowEmbedder(embedder)
    proxy = await start_proxy(script(WITH_INVENTION), embedder_override=slow,
                              flags={"guard": {"block_message": BLOCK, "deadline_ms": 50, "max_in_flight": 1}})
    try:
        first, _, _ = await ask(proxy, "chat", False, "block")  # its check is still running in the lane's one slot
        second, _, _ = await ask(proxy, "chat", False, "block")
        assert first == second == WITH_INVENTION
        assert [(await guard_record(proxy, n)).outcome for n in (1, 2)] == ["timeout", "overload"]
    finally:
        slow.gate.set()


async def test_an_app_that_goes_away_mid_stream_stops_the_guard_and_is_recorded(start_proxy) -> None:
    proxy = await start_proxy(script(WITH_INVENTION), flags={"guard": ACTING})
    proxy.upstream.cutter = lambda stream: [i + 2 for i in range(len(stream)) if stream.startswith(b"\n\n", i)]
    proxy.upstream.write_delay_s = 0.02  # the model still writes when the app hangs up
    async with aiohttp.ClientSession() as session:
        async with session.post(f"{proxy.url}/v1/chat/completions", headers={"x-ragtap-guard": "strip"},
                                json={"model": MODEL, "messages": MESSAGES, "stream": True, **EXTRA}) as response:
            async for line in response.content:
                if b'"content":"No' in line:  # the first sentence, checked: the app leaves now
                    break
    record = await proxy.collector.exchange()
    assert record.outcome == "incomplete" and record.guard is not None and record.guard.outcome == "incomplete"


async def test_the_debug_headers_show_the_guards_assessment_scored_once(start_proxy) -> None:
    proxy = await start_proxy(script(WITH_INVENTION), flags={"guard": ACTING})
    raw = await proxy.client.chat.completions.with_raw_response.create(
        model=MODEL, messages=MESSAGES, extra_body=EXTRA, extra_headers={"x-ragtap-guard": "strip", "x-ragtap-debug": "1"})
    assert raw.parse().choices[0].message.content == FAITHFUL
    assert raw.headers["x-ragtap-verdict"] == "unsupported_answer" and json.loads(raw.headers["x-ragtap-scores"])["qa"] > 0
    _, assessment = await proxy.collector.assessment()
    assert json.loads(raw.headers["x-ragtap-unsupported-claims"]) == [[c.start, c.end] for c in assessment.unsupported_claims]
    # Exported by `after_response` right after `exchange_finished`, in place of a hand-off to the scoring queue (which
    # would have reported its depth in that same call): scored once, by the guard's lane.
    assert len(proxy.collector.scored) == 1 and proxy.collector.depths == []
