"""Scoring through the proxy: the thesis's five cases give their verdicts, and scoring never blocks a response
(slow embedder, full queue, failing embedder, scoring disabled)."""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import threading
import time

import pytest

from ragtap.demo.cases import thesis_cases, thesis_script
from ragtap.types import Verdict

from conftest import ANSWER, explicit, fixed, json_content, rag_messages

MODEL = "gpt-3.5-turbo"

THESIS_VERDICTS = {
    "thesis-1": (Verdict.GROUNDED, False),
    "thesis-2": (Verdict.UNSUPPORTED_ANSWER, True),
    "thesis-3": (Verdict.PARAMETRIC, True),
    "thesis-4": (Verdict.REFUSAL, True),
    "thesis-5": (Verdict.REFUSAL, True),
}


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_thesis_cases_through_the_proxy(start_proxy, stream) -> None:
    proxy = await start_proxy(thesis_script)
    cases = thesis_cases()
    for case in cases:
        messages = rag_messages(case.question, case.retrieved)
        extra = explicit(case.question, case.retrieved)
        if stream:
            chunks = [c async for c in await proxy.client.chat.completions.create(model=MODEL, messages=messages, stream=True, extra_body=extra)]
            text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        else:
            completion = await proxy.client.chat.completions.create(model=MODEL, messages=messages, extra_body=extra)
            text = completion.choices[0].message.content
        assert text == case.answer
    await proxy.collector.wait_until(lambda: len(proxy.collector.scored) == len(cases), 15, "five assessments")
    by_question = {interaction.question: assessment for interaction, assessment in proxy.collector.scored}
    for case in cases:
        assessment = by_question[case.question]
        assert (assessment.verdict, assessment.poor_retrieval) == THESIS_VERDICTS[case.id], (case.id, assessment.explanation)


class SlowEmbedder:
    """The real embedder behind a deliberate 0.5 s per call."""

    def __init__(self, inner, delay_s: float = 0.5) -> None:  # type: ignore[no-untyped-def]
        self.inner, self.delay_s = inner, delay_s
        self.name, self.dim = inner.name, inner.dim
        self.calls = 0
        self._lock = threading.Lock()

    def embed(self, texts):  # type: ignore[no-untyped-def]
        time.sleep(self.delay_s)
        with self._lock:
            self.calls += 1
        return self.inner.embed(texts)


class BrokenEmbedder:
    name, dim = "broken", 384

    def __init__(self) -> None:
        self.calls = 0

    def embed(self, texts):  # type: ignore[no-untyped-def]
        self.calls += 1
        raise RuntimeError("embedding backend is down")


async def _timed(coro) -> float:  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    await coro
    return time.perf_counter() - started


async def test_slow_scoring_never_delays_responses_and_overflow_is_dropped(start_proxy, embedder) -> None:
    slow = SlowEmbedder(embedder, 0.5)
    proxy = await start_proxy(fixed(json_content()), embedder_override=slow, flags={"scoring": {"queue_size": 2}})
    # Warm the connection pool so the burst measures ragtap, not connects.
    await proxy.client.models.list()

    async def one() -> str:
        completion = await proxy.client.chat.completions.create(model=MODEL, messages=rag_messages(), extra_body=explicit())
        return completion.choices[0].message.content

    started = time.perf_counter()
    results = await asyncio.gather(*[_timed(one()) for _ in range(20)])
    elapsed = time.perf_counter() - started
    # If responses waited for scoring, 20 of them would take 20 x 0.5 s; loosely: well under half of that.
    assert elapsed < 20 * slow.delay_s / 2, elapsed
    assert statistics.median(results) < 20 * slow.delay_s / 4
    assert proxy.server.state.scoring is not None

    await proxy.collector.settle(20, timeout=15)
    collector = proxy.collector
    assert len(collector.dropped) >= 1 and set(collector.dropped) == {"queue_full"}
    assert len(collector.scored) + len(collector.dropped) == 20 and collector.failed == []
    assert proxy.server.state.scoring.dropped == len(collector.dropped)
    assert all(assessment.verdict is Verdict.GROUNDED for _, assessment in collector.scored)
    assert max(collector.depths) <= 2


async def test_failing_embedder_does_not_touch_responses(start_proxy) -> None:
    broken = BrokenEmbedder()
    proxy = await start_proxy(fixed(json_content()), embedder_override=broken)
    for _ in range(3):
        completion = await proxy.client.chat.completions.create(model=MODEL, messages=rag_messages(), extra_body=explicit())
        assert completion.choices[0].message.content == ANSWER
    text = "".join(
        [c.choices[0].delta.content or "" async for c in await proxy.client.chat.completions.create(model=MODEL, messages=rag_messages(), stream=True, extra_body=explicit()) if c.choices]
    )
    assert text == ANSWER
    await proxy.collector.settle(4, timeout=10)
    assert len(proxy.collector.failed) == 4 and proxy.collector.scored == []
    assert all(isinstance(error, RuntimeError) for _, error in proxy.collector.failed)
    assert proxy.server.state.scoring is not None and proxy.server.state.scoring.failed == 4

    # The debug path waits for scoring: a failure there is an "unscored" header, not an error.
    raw = await proxy.client.chat.completions.with_raw_response.create(
        model=MODEL, messages=rag_messages(), extra_body=explicit(), extra_headers={"x-ragtap-debug": "1"}
    )
    assert raw.parse().choices[0].message.content == ANSWER
    assert raw.headers["x-ragtap-verdict"] == "unscored"
    assert raw.headers["x-ragtap-unscored-reason"] == "scoring_unavailable"


async def test_debug_wait_is_bounded_by_debug_wait_s(start_proxy, embedder) -> None:
    slow = SlowEmbedder(embedder, 1.5)
    proxy = await start_proxy(fixed(json_content()), embedder_override=slow, flags={"server": {"debug_wait_s": 0.2}})
    started = time.perf_counter()
    raw = await proxy.client.chat.completions.with_raw_response.create(
        model=MODEL, messages=rag_messages(), extra_body=explicit(), extra_headers={"x-ragtap-debug": "1"}
    )
    assert time.perf_counter() - started < slow.delay_s
    assert raw.parse().choices[0].message.content == ANSWER
    assert raw.headers["x-ragtap-verdict"] == "unscored"


async def test_scoring_disabled(start_proxy) -> None:
    proxy = await start_proxy(fixed(json_content()), flags={"scoring": {"enabled": False}})
    assert proxy.server.state.scoring is None
    raw = await proxy.client.chat.completions.with_raw_response.create(
        model=MODEL, messages=rag_messages(), extra_body=explicit(), extra_headers={"x-ragtap-debug": "1"}
    )
    assert raw.parse().choices[0].message.content == ANSWER  # still split: injection does not need scoring
    assert raw.headers["x-ragtap-verdict"] == "unscored"
    record = await proxy.collector.exchange(1)
    assert record.injected and proxy.collector.scored == []


async def test_healthz_reports_the_queue(start_proxy) -> None:
    import aiohttp

    proxy = await start_proxy()
    async with aiohttp.ClientSession() as session:
        async with session.get(f"{proxy.url}/healthz") as response:
            body = json.loads(await response.read())
    assert response.status == 200 and body == {"status": "ok", "scoring_queue": 0}
    assert proxy.upstream.requests == []  # answered by ragtap itself


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SCHED_IDLE is Linux's")
async def test_the_scoring_thread_runs_only_on_idle_cpu(start_proxy) -> None:
    """Requests first: the embedding thread is SCHED_IDLE, so on a saturated core it takes nothing from the event
    loop (at nice 19 it still took ~1.5% of the core, costing the loop ~4% of its throughput)."""
    proxy = await start_proxy(fixed(json_content()))
    await proxy.client.chat.completions.create(model=MODEL, messages=rag_messages(), extra_body=explicit())
    await proxy.collector.wait_until(lambda: len(proxy.collector.scored) >= 1, 10, "a scored interaction")
    scoring = proxy.server.state.scoring
    policy = await asyncio.get_running_loop().run_in_executor(scoring._executor, os.sched_getscheduler, 0)
    assert policy == os.SCHED_IDLE
