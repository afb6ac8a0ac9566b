"""PrometheusExporter: names, labels, bounded cardinality, the /metrics handler and its token."""

from __future__ import annotations

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from ragtap.exchange import ExchangeRecord
from ragtap.exporters.base import Exporter, ExporterSet
from ragtap.exporters.prometheus import (
    SCORE_BUCKETS,
    PrometheusExporter,
    add_metrics_route,
    metrics_handler,
    normalise_route,
)
from ragtap.exporters.settings import PrometheusSettings
from ragtap.types import Assessment, Document, Interaction, Scores, Verdict


def exchange(model: str | None = "gpt-4o", **kw) -> ExchangeRecord:
    base = dict(route="/v1/chat/completions", request_model=model, rag_source="langchain", injected=True,
                started_at=100.0, upstream_sent_at=100.01, upstream_done_at=101.0, finished_at=101.02,
                status=200, input_tokens=120, output_tokens=40, supporting_tokens=15)
    base.update(kw)
    return ExchangeRecord(**base)


def assessment(verdict: Verdict = Verdict.GROUNDED, poor: bool | None = False, **scores) -> Assessment:
    values = dict(sdq=0.9, sdrd=0.95, sda=0.88, qrd=0.8, qa=0.85, ard=0.9)
    values.update(scores)
    s = Scores(**values, attributed_document=0)
    passed = {m: v >= 0.8 for m, v in s.as_dict().items() if v is not None}
    return Assessment(scores=s, passed=passed, verdict=verdict, poor_retrieval=poor, explanation="the-explanation-text")


def interaction(model: str | None = "gpt-4o", ex: ExchangeRecord | None = None, **kw) -> Interaction:
    return Interaction(question="q?", documents=(Document("doc"),), answer="a", supporting="s", model=model,
                       exchange=ex, **kw)


def families(exporter: PrometheusExporter) -> dict:
    body, content_type = exporter.render()
    assert content_type.startswith("text/plain")
    return {f.name: f for f in text_string_to_metric_families(body.decode())}


def samples(exporter: PrometheusExporter, sample_name: str) -> list:
    return [s for f in families(exporter).values() for s in f.samples if s.name == sample_name]


def value(p: PrometheusExporter, sample_name: str, **labels) -> float:
    found = [s.value for s in samples(p, sample_name)
             if all(s.labels.get(k) == v for k, v in labels.items())]
    assert found, f"no sample {sample_name} {labels}"
    return sum(found)


def test_own_registry_never_global():
    before = set(REGISTRY._names_to_collectors)
    a, b = PrometheusExporter(), PrometheusExporter()  # two instances do not collide
    a.exchange_finished(exchange())
    assert set(REGISTRY._names_to_collectors) == before
    assert value(a, "ragtap_requests_total") == 1
    assert not samples(b, "ragtap_requests_total")


def test_exchange_metrics_names_and_labels():
    p = PrometheusExporter()
    p.exchange_finished(exchange(stream=True, first_token_at=100.3))
    p.exchange_finished(exchange(rag_source=None, injected=False, status=502, outcome="upstream_error",
                                 upstream_done_at=None, input_tokens=None, output_tokens=None,
                                 supporting_tokens=None))
    fams = families(p)
    expected = {"ragtap_requests", "ragtap_chat_requests", "ragtap_exchanges", "ragtap_upstream_duration_seconds",
                "ragtap_added_duration_seconds", "ragtap_time_to_first_token_seconds", "ragtap_tokens",
                "ragtap_scoring_queue_depth", "ragtap_scoring_duration_seconds", "ragtap_scoring_dropped",
                "ragtap_scoring_failed", "ragtap_score", "ragtap_verdicts", "ragtap_poor_retrieval",
                "ragtap_retrieval_judged", "ragtap_unscored", "ragtap_passthrough_requests", "ragtap_exporter_errors"}
    assert expected <= set(fams)
    for name in fams:
        assert name.startswith("ragtap_")
    assert fams["ragtap_requests"].type == "counter"
    assert fams["ragtap_upstream_duration_seconds"].type == "histogram"
    assert fams["ragtap_scoring_queue_depth"].type == "gauge"

    assert value(p, "ragtap_requests_total", route="/v1/chat/completions", model="gpt-4o", status="200") == 1
    assert value(p, "ragtap_requests_total", status="502") == 1
    assert value(p, "ragtap_chat_requests_total", kind="rag", injected="true") == 1
    assert value(p, "ragtap_chat_requests_total", kind="not_rag", injected="false") == 1
    assert value(p, "ragtap_exchanges_total", outcome="complete", model="gpt-4o") == 1
    assert value(p, "ragtap_exchanges_total", outcome="upstream_error") == 1
    # only the first exchange had a complete upstream timing
    assert value(p, "ragtap_upstream_duration_seconds_count", route="/v1/chat/completions") == 1
    assert value(p, "ragtap_upstream_duration_seconds_sum") == pytest.approx(0.99)
    assert value(p, "ragtap_added_duration_seconds_sum") == pytest.approx(0.03)
    assert value(p, "ragtap_time_to_first_token_seconds_count", model="gpt-4o") == 1
    assert value(p, "ragtap_time_to_first_token_seconds_sum") == pytest.approx(0.3)
    assert value(p, "ragtap_tokens_total", model="gpt-4o", kind="input") == 120
    assert value(p, "ragtap_tokens_total", kind="output") == 40
    assert value(p, "ragtap_tokens_total", kind="supporting") == 15


def test_non_stream_has_no_ttft():
    p = PrometheusExporter()
    p.exchange_finished(exchange(stream=False, first_token_at=100.3))
    assert not [s for s in samples(p, "ragtap_time_to_first_token_seconds_count")]


def test_scored_interactions():
    p = PrometheusExporter()
    ex = exchange(model="gpt-4o-mini")
    p.interaction_scored(interaction(model=None, ex=ex), assessment(), 0.12)
    p.interaction_scored(interaction(), assessment(Verdict.REFUSAL, poor=True, qa=0.4, sdrd=0.5), 0.3)
    p.interaction_scored(interaction(unscored_reason="no JSON object!"),
                         Assessment(scores=Scores(), passed={}, verdict=Verdict.UNSCORED, poor_retrieval=None,
                                    explanation="no support"), 0.01)
    assert value(p, "ragtap_verdicts_total", verdict="grounded", model="gpt-4o-mini") == 1  # model from exchange
    assert value(p, "ragtap_verdicts_total", verdict="refusal", model="gpt-4o") == 1
    assert value(p, "ragtap_verdicts_total", verdict="unscored", model="gpt-4o") == 1
    assert value(p, "ragtap_poor_retrieval_total", model="gpt-4o") == 1
    assert value(p, "ragtap_retrieval_judged_total") == 2
    assert value(p, "ragtap_unscored_total", reason="no_json_object", model="gpt-4o") == 1
    assert value(p, "ragtap_scoring_duration_seconds_count") == 3

    metrics = {s.labels["metric"] for s in samples(p, "ragtap_score_count")}
    assert metrics == {"sdq", "sdrd", "sda", "qrd", "qa", "ard"}
    assert value(p, "ragtap_score_count", metric="sdrd") == 2
    # bucket bounds: 0.05 steps from 0 to 1, then +Inf
    bounds = sorted({float(s.labels["le"]) for s in samples(p, "ragtap_score_bucket")})
    assert bounds[:-1] == pytest.approx(list(SCORE_BUCKETS)) and bounds[-1] == float("inf")
    assert value(p, "ragtap_score_bucket", metric="sdrd", model="gpt-4o", le="0.5") == 1
    assert value(p, "ragtap_score_bucket", metric="sdrd", model="gpt-4o", le="0.45") == 0


def test_supporting_tokens_counted_once_at_the_end_of_the_exchange():
    """The proxy settles the supporting-content token count before any hook runs (ragtap.proxy.chat), so the
    exporter counts it where the other token counts are, and scoring never counts it again."""
    p = PrometheusExporter()
    ex = exchange()  # supporting_tokens=15
    p.exchange_finished(ex)
    p.interaction_scored(interaction(ex=ex), assessment(), 0.1)
    p.interaction_scored(interaction(ex=ex), assessment(), 0.1)
    assert value(p, "ragtap_tokens_total", model="gpt-4o", kind="supporting") == 15
    p.exchange_finished(exchange(supporting_tokens=None))  # nothing to count: no sample added
    assert value(p, "ragtap_tokens_total", kind="supporting") == 15


def test_negative_cosine_lands_in_lowest_bucket():
    p = PrometheusExporter()
    p.interaction_scored(interaction(), assessment(qa=-0.3), 0.1)
    assert value(p, "ragtap_score_bucket", metric="qa", le="0.0") == 1


def test_queue_drop_failure_passthrough():
    p = PrometheusExporter()
    p.queue_depth(7)
    p.scoring_dropped("queue_full")
    p.scoring_dropped("queue_full")
    p.scoring_dropped("shutdown")
    p.scoring_failed(interaction(), RuntimeError("embedder down"))
    p.passthrough_finished(ExchangeRecord(route="/v1/embeddings?x=1", request_model="text-embedding-3-small",
                                          status=200, input_tokens=9))
    p.passthrough_finished(ExchangeRecord(route="/v1/models/gpt-4o", method="GET", status=200))
    assert value(p, "ragtap_scoring_queue_depth") == 7
    assert value(p, "ragtap_scoring_dropped_total", reason="queue_full") == 2
    assert value(p, "ragtap_scoring_dropped_total", reason="shutdown") == 1
    assert value(p, "ragtap_scoring_failed_total", model="gpt-4o") == 1
    assert value(p, "ragtap_passthrough_requests_total", route="/v1/embeddings") == 1
    assert value(p, "ragtap_passthrough_requests_total", route="/v1/models") == 1
    assert value(p, "ragtap_requests_total", route="/v1/models", model="unknown") == 1
    assert value(p, "ragtap_tokens_total", model="text-embedding-3-small", kind="input") == 9


def test_route_normalisation():
    assert normalise_route("/v1/chat/completions") == "/v1/chat/completions"
    assert normalise_route("/v1/chat/completions/") == "/v1/chat/completions"
    assert normalise_route("/chat/completions") == "/v1/chat/completions"
    assert normalise_route("/v1/models/gpt-4o") == "/v1/models"
    assert normalise_route("/v1/files/file-abc123") == "other"
    assert normalise_route("/v1/user/alice@example.com") == "other"
    assert normalise_route(None) == "other"


def test_model_cardinality_first_n_then_other():
    p = PrometheusExporter(PrometheusSettings(max_models=3))
    for i in range(10):
        p.exchange_finished(exchange(model=f"model-{i}"))
    p.exchange_finished(exchange(model="model-0"))
    p.exchange_finished(exchange(model=None))
    models = {s.labels["model"] for s in samples(p, "ragtap_requests_total")}
    assert models == {"model-0", "model-1", "model-2", "other", "unknown"}
    assert value(p, "ragtap_requests_total", model="other") == 7
    assert value(p, "ragtap_requests_total", model="model-0") == 2


def test_model_allow_list():
    p = PrometheusExporter(PrometheusSettings(models=("gpt-4o", "llama3")))
    for m in ("gpt-4o", "llama3", "mistral", "gpt-4o-2024-08-06"):
        p.exchange_finished(exchange(model=m))
    assert {s.labels["model"] for s in samples(p, "ragtap_requests_total")} == {"gpt-4o", "llama3", "other"}


def test_reason_labels_bounded():
    p = PrometheusExporter()
    for i in range(100):
        p.scoring_dropped(f"weird reason {i} with user text")
    reasons = {s.labels["reason"] for s in samples(p, "ragtap_scoring_dropped_total")}
    assert len(reasons) <= 17 and "other" in reasons
    assert all(r.replace("_", "").isalnum() for r in reasons)


def test_exporter_errors_from_sources_and_hooks():
    p = PrometheusExporter()

    class Broken(Exporter):
        def queue_depth(self, depth):
            raise RuntimeError("boom")

    exporters = ExporterSet([p, Broken()])
    exporters.queue_depth(3)
    failures = {"n": 4}
    p.watch_errors("hooks", lambda: exporters.errors)
    p.watch_errors("otel", lambda: failures["n"])
    p.watch_errors("bad", lambda: 1 / 0)  # a broken source is skipped, the scrape still works
    assert value(p, "ragtap_exporter_errors_total", exporter="hooks") == 1
    assert value(p, "ragtap_exporter_errors_total", exporter="otel") == 4
    failures["n"] = 6
    assert value(p, "ragtap_exporter_errors_total", exporter="otel") == 6
    assert not [s for s in samples(p, "ragtap_exporter_errors_total") if s.labels["exporter"] == "bad"]


def test_exporter_set_calls_each_hook_on_the_exporters_that_implement_it_including_one_added_later():
    calls: list[tuple[str, str]] = []

    class Finishing(Exporter):
        def __init__(self, name: str) -> None:
            self.name = name

        def exchange_finished(self, exchange: ExchangeRecord) -> None:
            calls.append((self.name, "finished"))

    class Subclass(Finishing):  # (inherits the hook)
        def queue_depth(self, depth: int) -> None:
            calls.append((self.name, f"depth {depth}"))

    exporters = ExporterSet([Finishing("a"), Exporter()])
    exporters.exchange_finished(exchange())
    exporters.queue_depth(1)
    exporters.add(Subclass("b"))  # (the online judge is added after the set is built)
    exporters.exchange_finished(exchange())
    exporters.queue_depth(2)
    assert calls == [("a", "finished"), ("a", "finished"), ("b", "finished"), ("b", "depth 2")]
    assert [type(e).__name__ for e in exporters.exporters] == ["Finishing", "Exporter", "Subclass"]


def test_no_free_text_labels():
    p = PrometheusExporter()
    ex = exchange(route="/v1/chat/completions?api_key=sk-secret", trace_headers={"traceparent": "00-" + "a" * 32
                                                                                 + "-" + "b" * 16 + "-01"})
    p.exchange_started(ex)
    p.exchange_finished(ex)
    p.interaction_scored(interaction(ex=ex), assessment(), 0.1)
    body = p.render()[0].decode()
    for secret in ("sk-secret", "aaaaaaaa", "q?", "the-explanation-text"):
        assert secret not in body
    allowed = {"route", "model", "status", "kind", "injected", "outcome", "metric", "verdict", "reason", "le",
               "exporter"}
    for f in text_string_to_metric_families(body):
        for s in f.samples:
            assert set(s.labels) <= allowed, s


def test_openmetrics_negotiation():
    p = PrometheusExporter()
    p.exchange_finished(exchange())
    body, content_type = p.render("application/openmetrics-text;version=1.0.0,text/plain;q=0.5")
    assert content_type.startswith("application/openmetrics-text")
    assert body.decode().rstrip().endswith("# EOF")


async def _client(app: web.Application) -> TestClient:
    client = TestClient(TestServer(app))
    await client.start_server()
    return client


@pytest.mark.asyncio
async def test_handler_without_token():
    p = PrometheusExporter()
    p.exchange_finished(exchange())
    app = web.Application()
    add_metrics_route(app, p)
    client = await _client(app)
    try:
        resp = await client.get("/metrics")
        assert resp.status == 200
        assert resp.headers["Content-Type"].startswith("text/plain")
        assert "ragtap_requests_total" in await resp.text()
    finally:
        await client.close()


@pytest.mark.asyncio
async def test_handler_token_auth():
    p = PrometheusExporter(PrometheusSettings(token="s3cret", path="/internal/metrics"))
    app = web.Application()
    add_metrics_route(app, p)
    client = await _client(app)
    try:
        resp = await client.get("/internal/metrics")
        assert resp.status == 401 and resp.headers["WWW-Authenticate"].startswith("Bearer")
        resp = await client.get("/internal/metrics", headers={"Authorization": "Bearer wrong"})
        assert resp.status == 401
        resp = await client.get("/internal/metrics", headers={"Authorization": "Basic czNjcmV0"})
        assert resp.status == 401
        resp = await client.get("/internal/metrics", headers={"Authorization": "Bearer s3cret"})
        assert resp.status == 200
        assert "ragtap_scoring_queue_depth" in await resp.text()
    finally:
        await client.close()


@pytest.mark.asyncio
async def test_handler_explicit_token_overrides_settings():
    p = PrometheusExporter(PrometheusSettings(token="from-settings"))
    app = web.Application()
    app.router.add_get("/m", metrics_handler(p, None))  # explicitly open
    client = await _client(app)
    try:
        assert (await client.get("/m")).status == 200
    finally:
        await client.close()




def _public_api_exchange_finished(p: PrometheusExporter, ex: ExchangeRecord) -> None:
    """The exchange hook written with prometheus_client's public API only (`labels().inc()` / `.observe()`): what
    the exporter's cached children and direct adders must reproduce exactly."""
    from ragtap.exporters import prometheus as prom

    route, model = normalise_route(ex.route), p._exchange_model(ex)
    status = str(ex.status) if isinstance(ex.status, int) and 100 <= ex.status <= 599 else "none"
    p.requests.labels(route, model, status).inc()
    p.chat_requests.labels("rag" if ex.rag_source else "not_rag", "true" if ex.injected else "false").inc()
    if ex.recognition is not None:
        p.recognition.labels(ex.recognition if ex.recognition in prom.REASONS else "other").inc()
    if ex.ragtap_field_problem is not None:
        p.malformed_ragtap_field.labels(ex.ragtap_field_problem if ex.ragtap_field_problem in prom.FIELD_PROBLEMS else "other").inc()
    p.exchanges.labels(ex.outcome if ex.outcome in prom.OUTCOMES else "other", model).inc()
    if ex.upstream_seconds is not None:
        p.upstream_seconds.labels(route, model).observe(ex.upstream_seconds)
    if ex.added_seconds is not None:
        p.added_seconds.labels(route, model).observe(ex.added_seconds)
    if ex.stream and ex.first_token_at is not None:
        p.ttft_seconds.labels(model).observe(max(0.0, ex.first_token_at - ex.started_at))
    for kind, count in (("input", ex.input_tokens), ("output", ex.output_tokens), ("supporting", ex.supporting_tokens)):
        if count:
            p.tokens.labels(model, kind).inc(count)
    if ex.overhead is not None:
        for kind, count in (("input", ex.overhead.input_tokens), ("output", ex.overhead.output_tokens)):
            if count:
                p.overhead_tokens.labels(model, kind).inc(count)
        if ex.overhead.cost_usd:
            p.overhead_cost.labels(model).inc(ex.overhead.cost_usd)
        elif ex.overhead.cost_usd is None and (ex.overhead.input_tokens or ex.overhead.output_tokens):
            p.overhead_unpriced.labels(model).inc()
    if ex.guard is not None:
        p.guard.labels(ex.guard.action if ex.guard.action in prom.GUARD_ACTIONS else "other",
                       ex.guard.outcome if ex.guard.outcome in prom.GUARD_OUTCOMES else "other").inc()


def _varied_exchanges() -> list[ExchangeRecord]:
    from ragtap.exchange import GuardRecord, Overhead

    out = []
    for i in range(60):
        upstream = (0.0, 0.05, 0.3, 1.0, 7.9, 15.0, 500.0)[i % 7]  # on bucket bounds, between them, past the last
        added = (0.0, 0.0005, 0.0007, 0.01, 3.0)[i % 5]
        ex = exchange(
            model=("gpt-4o", "gpt-4o-mini", None, "m-" + str(i % 4))[i % 4],
            route=("/v1/chat/completions", "/chat/completions", "/v1/responses", "/v1/messages")[i % 4],
            status=(200, 200, 400, 503, None)[i % 5], outcome=("complete", "incomplete", "upstream_error", "odd")[i % 4],
            rag_source="langchain" if i % 3 else None, injected=i % 3 == 1,
            recognition=("langchain", "no_context", "made_up_reason", None)[i % 4],
            ragtap_field_problem=(None, "not_an_object", "made_up_problem")[i % 3],
            stream=i % 2 == 0, first_token_at=100.0 + 0.01 * i if i % 4 else None,
            upstream_sent_at=100.0, upstream_done_at=100.0 + upstream, finished_at=100.0 + upstream + added,
            input_tokens=(120, 0, None)[i % 3], output_tokens=(40, None)[i % 2], supporting_tokens=(15, None, 0)[i % 3],
            overhead=(None, Overhead("gpt-4o", 30, 15, 0.0001), Overhead("x", 30, 0, None), Overhead("y", 0, 0, None))[i % 4],
            guard=GuardRecord("strip", ("stripped", "passed", "odd")[i % 3]) if i % 5 == 0 else None,
        )
        ex.started_at = 100.0 if i % 6 else None  # type: ignore[assignment]  # (a record without a start: no added time)
        if ex.started_at is None:
            ex.started_at, ex.finished_at = 100.0, None
        out.append(ex)
    return out


def test_cached_children_and_direct_adders_export_what_the_public_api_does():
    """The hooks keep each kind of exchange's label children and add to their values directly (no per-call
    checks): the exposition must be the same, byte for byte but the `_created` timestamps, as with `labels().inc()`
    and `.observe()`, for exchanges of every kind, durations on bucket bounds and past the last one included."""
    fast, reference = PrometheusExporter(PrometheusSettings(max_models=3)), PrometheusExporter(PrometheusSettings(max_models=3))
    for ex in _varied_exchanges():
        fast.exchange_finished(ex)
        _public_api_exchange_finished(reference, ex)
    for i, route in enumerate(("/v1/embeddings", "/v1/models/x", "/v1/files?purpose=a", "/other")):
        for status in (200, 404):
            ex = ExchangeRecord(route=route, method="GET", request_model="emb" if i % 2 else None, status=status, input_tokens=i,
                                upstream_sent_at=1.0, upstream_done_at=1.2 + i, finished_at=1.3 + i, started_at=0.9)
            fast.passthrough_finished(ex)
            reference._exchange_model(ex)  # (the same label admission as the hook's)
            model = reference._exchange_model(ex)
            reference.requests.labels(normalise_route(route), model, str(status)).inc()
            reference.passthrough.labels(normalise_route(route)).inc()
            reference.upstream_seconds.labels(normalise_route(route), model).observe(ex.upstream_seconds)
            reference.added_seconds.labels(normalise_route(route), model).observe(ex.added_seconds)
            if ex.input_tokens:
                reference.tokens.labels(model, "input").inc(ex.input_tokens)

    def exposition(p: PrometheusExporter) -> list[str]:
        return [line for line in p.render()[0].decode().splitlines() if "_created" not in line]

    assert exposition(fast) == exposition(reference)
    assert value(fast, "ragtap_upstream_duration_seconds_bucket", le="+Inf") > value(fast, "ragtap_upstream_duration_seconds_bucket", le="300.0")


def test_remembered_series_are_bounded(monkeypatch):
    """Passthrough routes are the app's paths: the per-kind cache starts over past its bound, and counts stay right."""
    from ragtap.exporters import prometheus as prom

    monkeypatch.setattr(prom, "MAX_SERIES_KEYS", 8)
    p = PrometheusExporter()
    for i in range(50):
        p.passthrough_finished(ExchangeRecord(route=f"/v1/files/{i}", method="GET", status=200))
    assert len(p._series) <= 8
    assert value(p, "ragtap_passthrough_requests_total", route="other") == 50
