"""Tests for the online judge: the policy (sampling, token bucket, daily budget with UTC reset) under a flood with
injected clocks, background judging over real HTTP after the scoring queue, Prometheus metrics and OTel events."""

from __future__ import annotations

import asyncio
import datetime as dt
import random
import time

import numpy as np
from prometheus_client import CollectorRegistry

from ragtap.exporters.base import Exporter, ExporterSet
from ragtap.exporters.judge import JudgePrometheusMetrics, OtelJudgeExporter, judgement_events
from ragtap.pipeline.online_judge import DailyBudget, JudgePolicy, OnlineJudge, TokenBucket, build_online_judge, estimate_tokens
from ragtap.judge.ragas import Judgement, MetricResult
from ragtap.judge.settings import JudgeSettings
from ragtap.testing.judge import generic_ragas_script
from ragtap.judge.client import Usage
from ragtap.testing.upstream import ScriptedUpstream
from ragtap.types import Assessment, Document, Interaction, Scores, Verdict


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class HashEmbedder:
    name = "hash"
    dim = 16

    def embed(self, texts):
        out = np.array([np.random.default_rng(abs(hash(t)) % 2**32).normal(size=16) for t in texts], dtype=np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


class Recorder(Exporter):
    def __init__(self) -> None:
        self.judged: list[tuple[Interaction, Judgement]] = []

    def interaction_judged(self, interaction, judgement) -> None:
        self.judged.append((interaction, judgement))


def assessment(verdict: Verdict) -> Assessment:
    return Assessment(Scores(qa=0.5), {}, verdict, None, "test")


def interaction(i: int, answer: str | None = "Nolan directed it. It was released in 2023.") -> Interaction:
    return Interaction(question=f"Who directed film {i}?", documents=(Document("Nolan directed it. It came out in 2023."),), answer=answer, id=str(i))


MIDNIGHT = dt.datetime(2025, 3, 1, tzinfo=dt.timezone.utc).timestamp()

# ------------------------------------------------------------------------------------------------- policy


def test_token_bucket_refills_at_rate() -> None:
    clock = Clock(0.0)
    bucket = TokenBucket(rate=2.0, capacity=8, clock=clock)
    assert bucket.try_take(8) and not bucket.try_take(1)
    clock.now = 1.5
    assert bucket.try_take(3) and not bucket.try_take(1)
    clock.now = 100.0
    assert bucket.available() == 8  # never above capacity


def test_daily_budget_resets_at_utc_midnight() -> None:
    clock = Clock(MIDNIGHT - 60)
    budget = DailyBudget(1000, clock)
    assert budget.can_cover(1000) and not budget.can_cover(1001)
    budget.reserve(600)
    assert not budget.can_cover(500)  # reservations in flight count
    budget.settle(600, 450)
    assert budget.used == 450 and budget.can_cover(550) and not budget.can_cover(551)
    clock.now = MIDNIGHT + 1
    assert budget.can_cover(1000) and budget.used == 0


def test_policy_judges_every_non_grounded_and_samples_grounded() -> None:
    policy = JudgePolicy(sample_rate=0.1, calls_per_second=1e9, burst_calls=10**9, daily_token_budget=0, max_in_flight=10**9,
                         rng=random.Random(7))
    verdicts = [Verdict.PARAMETRIC, Verdict.REFUSAL, Verdict.UNSUPPORTED_ANSWER, Verdict.UNSCORED]
    assert all(policy.decide(v, True, 4, 100).reason == "not_grounded" for v in verdicts)
    decisions = [policy.decide(Verdict.GROUNDED, True, 4, 100) for _ in range(10_000)]
    sampled = sum(d.judge for d in decisions)
    assert 900 <= sampled <= 1100 and {d.reason for d in decisions} == {"sampled", "sampled_out"}
    # the same seed gives the same sample
    again = JudgePolicy(sample_rate=0.1, calls_per_second=1e9, burst_calls=10**9, daily_token_budget=0, max_in_flight=10**9,
                        rng=random.Random(7))
    for v in verdicts:
        again.decide(v, True, 4, 100)
    assert [again.decide(Verdict.GROUNDED, True, 4, 100).judge for _ in range(10_000)] == [d.judge for d in decisions]
    assert policy.decide(Verdict.PARAMETRIC, False, 4, 100).reason == "no_answer"


def test_flooded_policy_holds_rate_limit_and_budget() -> None:
    wall, mono = Clock(MIDNIGHT - 3600), Clock(0.0)
    policy = JudgePolicy(sample_rate=1.0, calls_per_second=2.0, burst_calls=8, daily_token_budget=10_000, max_in_flight=10**6,
                         rng=random.Random(0), clock=wall, monotonic=mono)
    spent = 0

    def flood(n: int) -> list[str]:
        nonlocal spent
        reasons = []
        for _ in range(n):
            decision = policy.decide(Verdict.PARAMETRIC, True, 4, 1500)
            reasons.append(decision.reason)
            if decision.judge:
                policy.finished(decision, 1200)  # the judgement used less than its estimate
                spent += 1200
        return reasons

    # 1,000 at one instant: the bucket holds 8 calls = 2 judgements of 4 calls
    assert flood(1000).count("not_grounded") == 2
    # 100 s later the bucket has refilled (capped at 8 calls): 2 more
    mono.now += 100
    assert flood(1000).count("not_grounded") == 2
    # one call per 0.5 s: over 600 s of steady flood, about 2 calls/s -> 300 judgements wanted, budget allows 8
    judged = 0
    for _ in range(600):
        mono.now += 1.0
        judged += flood(10).count("not_grounded")
    # admitted while used + 1500 <= 10,000: at 4,800, 6,000, 7,200 and 8,400 tokens used
    assert judged == 4 and spent == 9_600 and policy.budget.used == spent
    assert flood(10) == ["budget_exhausted"] * 10
    # a new UTC day: the budget is back (the bucket had time to refill as well)
    wall.now = MIDNIGHT + 5
    mono.now += 10
    assert flood(1).count("not_grounded") == 1


def test_policy_bounds_judgements_in_flight() -> None:
    policy = JudgePolicy(sample_rate=1.0, calls_per_second=1e9, burst_calls=10**9, daily_token_budget=0, max_in_flight=3)
    decisions = [policy.decide(Verdict.REFUSAL, True, 4, 10) for _ in range(10)]
    assert [d.reason for d in decisions].count("busy") == 7
    policy.finished(decisions[0], 5)
    assert policy.decide(Verdict.REFUSAL, True, 4, 10).judge


# -------------------------------------------------------------------------------------- online, over HTTP


async def test_online_judge_floods_off_the_response_path_within_limits() -> None:
    wall, mono = Clock(MIDNIGHT - 600), Clock(1000.0)
    recorder = Recorder()
    exporters = ExporterSet([recorder])
    registry = CollectorRegistry()
    settings = JudgeSettings(enabled=True, model="judge-x", sample_rate=0.5, calls_per_second=4.0, burst_calls=20,
                             daily_token_budget=1, max_in_flight=1000, max_retries=0, max_tokens=64)
    script = generic_ragas_script(prompt_tokens=100, completion_tokens=20)  # below the estimate, as real usage is

    def slow(body):  # every judge call takes 50 ms: judging must not hold up interaction_scored
        reply = script(body)
        return type(reply)(**{**{f: getattr(reply, f) for f in reply.__dataclass_fields__}, "delay_s": 0.05})

    async with ScriptedUpstream(slow) as upstream:
        online = build_online_judge(settings, HashEmbedder(), exporters, upstream=upstream.base_url, registry=registry,
                                    rng=random.Random(1), clock=wall, monotonic=mono, environ={})
        exporters.add(online)
        item = interaction(0)
        estimate = estimate_tokens(online.judge, item.question, [d.text for d in item.documents], item.answer, 64)
        budget = online.policy.budget.limit = 12 * estimate  # room for the first burst and then some
        started = time.perf_counter()
        for i in range(2000):  # the flood: half grounded, half not, all at one instant
            verdict = Verdict.GROUNDED if i % 2 else Verdict.PARAMETRIC
            exporters.interaction_scored(interaction(i), assessment(verdict), 0.01)
        flood_seconds = time.perf_counter() - started
        assert flood_seconds < 2.0  # nothing waited for the judge
        assert sum(online.triggers.values()) == 5  # 20 calls of burst / 4 calls per judgement
        assert len(online.tasks) == 5 and recorder.judged == []
        await online.drain(10)
        assert len(recorder.judged) == 5 and len(upstream.requests) == 20
        assert online.skipped["rate_limited"] + online.skipped["sampled_out"] == 1995
        assert 400 <= online.skipped["sampled_out"] <= 600  # grounded ones are sampled at 50%
        first_tokens = online.usage_tokens
        assert first_tokens == 5 * 4 * 120

        # time passes; the flood goes on until the daily budget stops it
        for step in range(100):
            if online.skipped["budget_exhausted"] >= 20:
                break
            mono.now += 5.0
            for i in range(20):
                exporters.interaction_scored(interaction(10_000 + step * 20 + i), assessment(Verdict.REFUSAL), 0.01)
            await online.drain(10)
        assert online.usage_tokens <= budget and online.skipped["budget_exhausted"] > 0 and online.judged >= 12
        assert online.policy.budget.used == online.usage_tokens
        judged_before_midnight = online.judged

        wall.now = MIDNIGHT + 1  # a new UTC day
        mono.now += 5.0
        exporters.interaction_scored(interaction(99_999), assessment(Verdict.REFUSAL), 0.01)
        await online.drain(10)
        assert online.judged == judged_before_midnight + 1
        await online.aclose()

    interaction_0, judgement_0 = recorder.judged[0]
    assert interaction_0.judgement is judgement_0 and judgement_0.score("faithfulness") == 1.0
    sample = lambda name, labels: registry.get_sample_value(name, labels)  # noqa: E731
    assert sum(sample("ragtap_judge_judgements_total", {"trigger": t}) for t in ("not_grounded", "sampled")) == online.judged
    assert sample("ragtap_judge_calls_total", {"outcome": "ok"}) == 4 * online.judged
    assert sample("ragtap_judge_tokens_total", {"kind": "prompt"}) == 100 * 4 * online.judged
    assert sample("ragtap_judge_skipped_total", {"reason": "budget_exhausted"}) == online.skipped["budget_exhausted"]
    assert sample("ragtap_judge_score_count", {"metric": "faithfulness"}) == online.judged
    assert sample("ragtap_judge_budget_remaining_tokens", {}) == budget - 4 * 120


async def test_online_judge_runs_after_the_scoring_queue() -> None:
    from ragtap.pipeline.batch import ScoringPolicy
    from ragtap.pipeline.queue import ScoringQueue
    from ragtap.config import DEFAULT_THRESHOLDS

    recorder = Recorder()
    exporters = ExporterSet([recorder])
    async with ScriptedUpstream(generic_ragas_script()) as upstream:
        online = build_online_judge(JudgeSettings(enabled=True, sample_rate=0.0), HashEmbedder(), exporters,
                                    upstream=upstream.base_url, environ={})
        exporters.add(online)
        queue = ScoringQueue(HashEmbedder(), ScoringPolicy(DEFAULT_THRESHOLDS), exporters)
        queue.start()
        # Not `grounded` whatever the (hash-seeded, random) vectors: the support's claim is not in the document, so
        # the claim rules flag it even if the cosines pass.
        queue.submit(Interaction(question="Who directed Oppenheimer?", documents=(Document("The film premiered in July 2023."),),
                                 answer="Christopher Nolan.", supporting="Nolan directed Oppenheimer."))
        for _ in range(200):
            if recorder.judged:
                break
            await asyncio.sleep(0.02)
        await queue.stop()
        await online.aclose()
    assert len(recorder.judged) == 1
    judged, judgement = recorder.judged[0]
    assert judged.answer == "Christopher Nolan." and set(judgement.results) == {"faithfulness", "answer_relevance", "context_relevance"}


def test_online_judge_outside_an_event_loop_skips() -> None:
    online = OnlineJudge.__new__(OnlineJudge)
    online.skipped = __import__("collections").Counter()
    online.metrics = None
    online.interaction_scored(interaction(1), assessment(Verdict.REFUSAL), 0.0)
    assert online.skipped == {"no_event_loop": 1}


# ------------------------------------------------------------------------------------------------- OTel


def make_judgement() -> Judgement:
    return Judgement(
        {"faithfulness": MetricResult(0.5, None, 2), "answer_relevance": MetricResult(0.0, "noncommittal answer", 1),
         "context_relevance": MetricResult(None, "malformed extraction reply: no JSON object in the reply", 1)},
        "judge-x", {"ragas_statements": 1}, Usage(calls=4, prompt_tokens=400, completion_tokens=40), 0.2)


def test_otel_events_link_to_the_response() -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from ragtap.exchange import ExchangeRecord

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("test")
    chat = tracer.start_span("chat m")
    exchange = ExchangeRecord(route="/v1/chat/completions", response_id="chatcmpl-42")
    exchange.extras["otel_span"] = chat
    chat.end()
    item = interaction(1)
    item.exchange = exchange
    OtelJudgeExporter(tracer).interaction_judged(item, make_judgement())
    span = next(s for s in memory.get_finished_spans() if s.name == "evaluate ragas")
    assert span.parent is not None and span.parent.span_id == chat.get_span_context().span_id
    events = {e.attributes["gen_ai.evaluation.name"]: dict(e.attributes) for e in span.events}
    assert set(events) == {"ragas.faithfulness", "ragas.answer_relevance", "ragas.context_relevance"}
    assert all(e.name == "gen_ai.evaluation.result" for e in span.events)
    assert events["ragas.faithfulness"]["gen_ai.evaluation.score.value"] == 0.5
    assert events["ragas.faithfulness"]["gen_ai.response.id"] == "chatcmpl-42"
    assert events["ragas.context_relevance"]["gen_ai.evaluation.score.label"] == "unscored"
    assert "gen_ai.evaluation.score.value" not in events["ragas.context_relevance"]
    assert span.attributes["ragtap.judge.tokens"] == 440


def test_prometheus_metrics_record_judgements_and_skips() -> None:
    registry = CollectorRegistry()
    metrics = JudgePrometheusMetrics(registry)
    metrics.record_judgement(make_judgement(), "sampled")
    metrics.record_skip("rate_limited")
    metrics.record_skip("something new")  # unknown reasons never become new label values
    value = registry.get_sample_value
    assert value("ragtap_judge_score_count", {"metric": "faithfulness"}) == 1
    assert value("ragtap_judge_null_total", {"metric": "context_relevance"}) == 1
    assert value("ragtap_judge_judgements_total", {"trigger": "sampled"}) == 1
    assert value("ragtap_judge_tokens_total", {"kind": "completion"}) == 40
    assert value("ragtap_judge_skipped_total", {"reason": "rate_limited"}) == 1
    assert value("ragtap_judge_skipped_total", {"reason": "busy"}) == 1
    assert judgement_events(make_judgement(), None)[0] == {"gen_ai.evaluation.name": "ragas.faithfulness",
                                                          "gen_ai.request.model": "judge-x", "gen_ai.evaluation.score.value": 0.5}


def test_settings_endpoint_reads_the_key_from_the_named_variable() -> None:
    settings = JudgeSettings(api_key_env="MY_JUDGE_KEY", model="m", max_tokens=0)
    endpoint = settings.endpoint("http://up/v1", environ={"MY_JUDGE_KEY": "sk-test"})
    assert endpoint.api_key == "sk-test" and endpoint.base_url == "http://up/v1" and endpoint.max_tokens is None
    assert JudgeSettings(base_url="http://judge/v1").endpoint("http://up/v1", environ={}).base_url == "http://judge/v1"


def test_settings_load_through_the_config_coercion() -> None:
    """The lead adds `judge: JudgeSettings` to ragtap.config.Config; its generic loader must fill every field."""
    from ragtap.config import _apply

    settings = _apply(JudgeSettings(), {"enabled": "true", "metrics": ["faithfulness"], "seed": 3, "base_url": "http://j/v1",
                                        "sample_rate": "0.05", "daily_token_budget": 1000, "json_mode": False}, "judge")
    assert settings == JudgeSettings(enabled=True, metrics=("faithfulness",), seed=3, base_url="http://j/v1", sample_rate=0.05,
                                     daily_token_budget=1000, json_mode=False)


async def test_online_judge_behind_the_real_proxy_never_delays_the_response() -> None:
    """The wiring the lead adds to build_app, done by hand: ragtap proxies a RAG request to the scripted upstream,
    scores it, and the online judge (same scripted upstream as judge endpoint, 1 s per judge call) judges it
    after the app already has its answer."""
    import openai

    from ragtap.config import load_config
    from ragtap.testing.judge import prompt_kind
    from ragtap.proxy.server import RagtapServer
    from ragtap.testing.upstream import echo_script

    judge_script = generic_ragas_script()

    def script(body):
        if prompt_kind(body) is not None:  # a judge call: slow on purpose
            reply = judge_script(body)
            return type(reply)(**{**{f: getattr(reply, f) for f in reply.__dataclass_fields__}, "delay_s": 1.0})
        return echo_script(body)  # the app's LLM

    recorder = Recorder()
    async with ScriptedUpstream(script) as upstream:
        config = load_config(flags={"server": {"upstream": upstream.base_url, "port": 0}, "prometheus": {"enabled": False}}, environ={})
        online = build_online_judge(JudgeSettings(enabled=True, sample_rate=1.0), HashEmbedder(), ExporterSet([recorder]),
                                    upstream=upstream.base_url, environ={})
        async with RagtapServer(config, embedder=HashEmbedder(), exporters=[online]) as server:
            client = openai.AsyncOpenAI(base_url=server.base_url, api_key="sk-app", max_retries=0)
            question, documents = "Who directed Oppenheimer?", ["Oppenheimer is a 2023 film directed by Christopher Nolan."]
            completion = await client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "Documents:\n" + documents[0] + f"\n\nQuestion: {question}"}],
                extra_body={"ragtap": {"question": question, "documents": documents}})
            # the app has its answer while the judgement (>= 2 s: two sequential 1 s calls) has not finished
            assert completion.choices[0].message.content == "The answer." and recorder.judged == []
            for _ in range(200):
                if recorder.judged:
                    break
                await asyncio.sleep(0.05)
            await client.close()
            await online.aclose()
    assert len(recorder.judged) == 1
    judged, judgement = recorder.judged[0]
    assert judged.question == question and judged.answer == "The answer."
    assert judgement.score("faithfulness") == 1.0 and judgement.usage.calls == 4
    judge_calls = [r for r in upstream.requests if r.path.endswith("/chat/completions") and prompt_kind(r.body) is not None]
    assert len(judge_calls) == 4
