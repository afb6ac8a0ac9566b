"""The triage page's JSON API over plain HTTP, on a real SQLite capture store: paging, filters, detail, labels,
and the 4xx answers to bad input (each with a one-line message).

The page itself is tested in a real browser in test_triage_browser.py; the proxy feeding the store (openai SDK ->
ragtap -> scripted upstream) in test_triage_proxy.py.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from triage_rows import HOSTILE, NOW, SPAN_ID, TRACE_ID, captured

from ragtap.config import DEFAULT_THRESHOLDS
from ragtap.store.factory import open_store
from ragtap.store.settings import StoreSettings
from ragtap.store.threaded import ThreadedStore
from ragtap.triage.routes import add_triage_routes
from ragtap.triage.settings import TriageSettings


@dataclasses.dataclass
class Triage:
    base: str  # http://127.0.0.1:PORT/triage
    store: ThreadedStore
    http: aiohttp.ClientSession

    async def get(self, path: str, **kwargs: Any) -> tuple[int, Any]:
        async with self.http.get(self.base + path, **kwargs) as response:
            return response.status, await response.json(content_type=None)

    async def post(self, path: str, **kwargs: Any) -> tuple[int, Any]:
        async with self.http.post(self.base + path, **kwargs) as response:
            return response.status, await response.json(content_type=None)

    async def ids(self, query: str) -> list[str]:
        status, body = await self.get("/api/interactions?" + query)
        assert status == 200, body
        return [row["id"] for row in body["items"]]


@pytest.fixture
async def start_triage(tmp_path: Path) -> AsyncIterator[Callable[..., Any]]:
    """`await start_triage(rows, token=None, **settings)`: a SQLite store holding `rows`, the triage routes on their
    own aiohttp app on 127.0.0.1 (as the proxy mounts them), and an HTTP client."""
    cleanups: list[Callable[[], Any]] = []

    async def start(rows: list, token: str | None = None, **settings: Any) -> Triage:
        store = open_store(StoreSettings(capture="all", path=str(tmp_path / f"capture{len(cleanups)}.sqlite3")))
        cleanups.append(store.close)
        if rows:
            assert await store.add_many(rows) == len(rows)
        app = web.Application()
        triage_settings = TriageSettings(**settings)
        add_triage_routes(app, store, triage_settings, token=token, thresholds=DEFAULT_THRESHOLDS, listen_host="127.0.0.1")
        runner = web.AppRunner(app)
        await runner.setup()
        cleanups.append(runner.cleanup)
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        http = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30))
        cleanups.append(http.close)
        return Triage(f"http://127.0.0.1:{port}{triage_settings.prefix}", store, http)

    yield start
    for cleanup in reversed(cleanups):
        await cleanup()


ROWS = [captured(i) for i in range(120)]


async def test_pages_are_newest_first_and_keyset_paging_visits_every_row_once(start_triage) -> None:
    triage = await start_triage(ROWS)
    seen: list[str] = []
    cursor = None
    for _ in range(10):  # bounded: 120 rows / 50 = 3 pages
        status, body = await triage.get("/api/interactions?limit=50" + (f"&cursor={cursor}" if cursor else ""))
        assert status == 200, body
        seen += [row["id"] for row in body["items"]]
        cursor = body["next_cursor"]
        if cursor is None:
            break
    assert seen == [row.id for row in ROWS]  # rows were made one second apart, newest first
    # a row's own cursor resumes after it (the live view drops old rows and pages on from the last kept one)
    status, body = await triage.get("/api/interactions?limit=3")
    status, after = await triage.get(f"/api/interactions?limit=2&cursor={body['items'][0]['cursor']}")
    assert [r["id"] for r in after["items"]] == [ROWS[1].id, ROWS[2].id]


async def test_a_row_carries_the_fig_3_2_columns_judged_against_its_own_thresholds(start_triage) -> None:
    odd = dataclasses.replace(DEFAULT_THRESHOLDS, sdq=0.75)  # scored under other thresholds than today's
    triage = await start_triage([captured(1, thresholds=odd)])
    status, body = await triage.get("/api/interactions")
    row = body["items"][0]
    assert row["question"] == f"Where is tower 1? {HOSTILE}"  # raw text: escaping is the page's job
    assert row["scores"] == {"sdq": 0.7, "sdrd": 0.55, "sda": None, "qrd": 0.8, "qa": 0.61, "ard": 0.3}
    assert row["thresholds"]["sdq"] == 0.75
    assert row["passed"] == {"sdq": False, "sdrd": False, "qrd": True, "qa": True, "ard": False}  # no SDA score: absent
    assert (row["verdict"], row["poor_retrieval"], row["model"], row["unsupported_claims"], row["label"]) == ("grounded", False, "gpt-b", 1, None)
    status, meta = await triage.get("/api/meta")
    assert meta["thresholds"]["sdq"] == DEFAULT_THRESHOLDS.sdq and meta["verdicts"][0] == "grounded"


async def test_filters_select_what_they_name(start_triage) -> None:
    triage = await start_triage(ROWS)

    def expect(predicate: Callable[[Any], bool]) -> list[str]:
        return [row.id for row in ROWS if predicate(row)]

    assert await triage.ids("verdict=refusal&limit=500") == expect(lambda r: r.verdict == "refusal")
    assert await triage.ids("verdict=refusal,parametric&limit=500") == expect(lambda r: r.verdict in ("refusal", "parametric"))
    assert await triage.ids("verdict=refusal&verdict=parametric&limit=500") == expect(lambda r: r.verdict in ("refusal", "parametric"))
    assert await triage.ids("poor_retrieval=true&limit=500") == expect(lambda r: r.poor_retrieval)
    assert await triage.ids("poor_retrieval=false&model=gpt-a&limit=500") == expect(lambda r: not r.poor_retrieval and r.model == "gpt-a")
    assert await triage.ids("user=user-1&session=session-3&limit=500") == expect(lambda r: r.user == "user-1" and r.session == "session-3")
    millis = int((NOW - 20) * 1000), int((NOW - 10) * 1000)  # Grafana's ${__from} / ${__to}
    assert await triage.ids(f"from={millis[0]}&to={millis[1]}") == expect(lambda r: NOW - 20 <= r.time < NOW - 10)
    assert await triage.ids("from=2026-09-21T14:13:00Z&to=2026-09-21T14:13:10Z") == expect(lambda r: 1789999980 <= r.time < 1789999990)
    assert await triage.ids("from=now-15m&limit=500") == []  # Grafana's relative times: the rows are from 2026-09-21
    assert len(await triage.ids("to=now&limit=500")) == len(ROWS)
    special = captured(500, question="Why is the sky blue?", answer="Rayleigh scattering.", claims=(), verdict="refusal")
    await triage.store.add_many([special])
    assert await triage.ids("q=rayleigh") == [special.id]
    assert await triage.ids("q=rayleigh&verdict=grounded") == []


async def test_detail_view_has_the_texts_claims_rule_tokens_and_a_trace_link(start_triage) -> None:
    triage = await start_triage([captured(3), captured(4, trace_id=None, span_id=None)],
                                trace_url="http://jaeger.local:16686/trace/{trace_id}?uiFind={span_id}")
    status, item = await triage.get(f"/api/interactions/{captured(3).id}")
    assert status == 200, item
    assert [d["attributed"] for d in item["documents"]] == [True, False]
    assert item["documents"][1] == {"index": 1, "id": "doc-\"b'", "text": f"Unrelated {HOSTILE} text", "attributed": False}
    unsupported = [c for c in item["claims"] if c["supported"] is False]
    assert len(unsupported) == 1 and item["answer"][unsupported[0]["start"]:unsupported[0]["end"]] == unsupported[0]["text"]
    assert unsupported[0]["missing_numbers"] == ["1999"]
    assert item["explanation"].startswith("SDRD 0.55 fail")
    assert item["tokens"] == {"prompt": 120, "answer": 30, "supporting": 12}
    assert item["trace"]["url"] == f"http://jaeger.local:16686/trace/{TRACE_ID}?uiFind={SPAN_ID}"
    status, untraced = await triage.get(f"/api/interactions/{captured(4).id}")
    assert untraced["trace"] == {"trace_id": None, "span_id": None, "url": None}


async def test_labels_are_stored_read_back_and_filterable(start_triage) -> None:
    triage = await start_triage(ROWS[:10])
    wrong_id, right_id = ROWS[2].id, ROWS[3].id  # refusal, unsupported_answer
    status, body = await triage.post(f"/api/interactions/{wrong_id}/labels",
                                     json={"verdict_right": False, "right_verdict": "grounded", "note": f"fine {HOSTILE}"})
    assert status == 201, body
    assert body["right_verdict"] == "grounded" and body["time"] > 0
    status, body = await triage.post(f"/api/interactions/{right_id}/labels", json={"verdict_right": True})
    assert status == 201, body
    status, item = await triage.get(f"/api/interactions/{wrong_id}")
    assert item["label"]["verdict_right"] is False and item["label"]["right_verdict"] == "grounded"
    assert item["label"]["note"] == f"fine {HOSTILE}"
    assert await triage.ids("labelled=true") == [wrong_id, right_id]
    assert wrong_id not in await triage.ids("labelled=false")
    status, body = await triage.get("/api/interactions?labelled=true")
    assert body["items"][0]["label"]["right_verdict"] == "grounded"
    # the latest label counts
    await triage.post(f"/api/interactions/{wrong_id}/labels", json={"verdict_right": True, "right_verdict": None})
    status, item = await triage.get(f"/api/interactions/{wrong_id}")
    assert item["label"]["verdict_right"] is True


@pytest.mark.parametrize(
    ("query", "status", "words"),
    [
        ("verdict=hallucination", 400, "verdict: unknown 'hallucination'"),
        ("poor_retrieval=maybe", 400, "poor_retrieval: expected true or false"),
        ("limit=0", 400, "limit: expected 1 to 500"),
        ("limit=ten", 400, "limit: expected a whole number"),
        ("cursor=garbage", 400, "not a page cursor"),
        ("from=yesterday", 400, "from: expected epoch milliseconds, now-15m or ISO 8601"),
        ("to=now-5y", 400, "to: expected epoch milliseconds, now-15m or ISO 8601"),
        ("from=2000&to=1000", 400, "to: must be later than from"),
        ("colour=red", 400, "unknown parameter(s) colour"),
        ("model=a&model=b", 400, "model: given 2 times"),
        ("q=" + "x" * 600, 400, "q: longer than 512"),
    ],
)
async def test_bad_queries_get_400_with_one_line(start_triage, query: str, status: int, words: str) -> None:
    triage = await start_triage([])
    got, body = await triage.get("/api/interactions?" + query)
    assert got == status and words in body["error"] and "\n" not in body["error"], body


@pytest.mark.parametrize(
    ("body", "headers", "status", "words"),
    [
        (b"{not json", {"Content-Type": "application/json"}, 400, "not JSON"),
        (b"[]", {"Content-Type": "application/json"}, 400, "must be a JSON object"),
        (b'{"verdict_right": "yes"}', {"Content-Type": "application/json"}, 400, "verdict_right: expected true or false"),
        (b'{"verdict_right": false, "right_verdict": "hallucination"}', {"Content-Type": "application/json"}, 400, "right_verdict: expected one of"),
        (b'{"verdict_right": false, "right_verdict": "refusal"}', {"Content-Type": "application/json"}, 400, "repeats the verdict"),
        (b'{"verdict_right": true, "right_verdict": "grounded"}', {"Content-Type": "application/json"}, 400, "is not the verdict"),
        (b'{"verdict_right": true, "score": 1}', {"Content-Type": "application/json"}, 400, "unknown field(s) 'score'"),
        (b'{"verdict_right": true, "note": 5}', {"Content-Type": "application/json"}, 400, "note: expected a string"),
        (b'{"verdict_right": true, "note": "' + b"n" * 2001 + b'"}', {"Content-Type": "application/json"}, 400, "note: longer than 2000"),
        (b'{"verdict_right": true}', {"Content-Type": "text/plain"}, 415, "posted as application/json"),
        (b'{"verdict_right": true}', {"Content-Type": "application/json", "Origin": "http://evil.example"}, 403, "own origin"),
        (b"{" + b" " * 20000 + b"}", {"Content-Type": "application/json"}, 413, "larger than"),
    ],
)
async def test_bad_labels_get_4xx_with_one_line_and_store_nothing(start_triage, body: bytes, headers: dict, status: int, words: str) -> None:
    triage = await start_triage([captured(2)])  # verdict refusal
    got, answer = await triage.post(f"/api/interactions/{captured(2).id}/labels", data=body, headers=headers)
    assert got == status and words in answer["error"] and "\n" not in answer["error"], answer
    status_, item = await triage.get(f"/api/interactions/{captured(2).id}")
    assert item["label"] is None


async def test_unknown_interactions_and_routes_are_404(start_triage) -> None:
    triage = await start_triage([captured(1)])
    status, body = await triage.get("/api/interactions/no-such-row")
    assert status == 404 and "no captured interaction 'no-such-row'" in body["error"]
    status, body = await triage.post("/api/interactions/no-such-row/labels", json={"verdict_right": True})
    assert status == 404 and "no-such-row" in body["error"]
    status, body = await triage.get("/api/interactions/" + "x" * 300)
    assert status == 400 and "interaction id" in body["error"]
    status, body = await triage.get("/api/nothing-here")
    assert status == 404 and "no triage route" in body["error"]
    status, body = await triage.get("/static/config.toml")
    assert status == 404 and body["error"] == "no such asset"


async def test_the_token_guards_the_data_but_not_the_empty_page(start_triage) -> None:
    triage = await start_triage([captured(1)], token="s3cret")
    for path in ("/api/meta", "/api/interactions", f"/api/interactions/{captured(1).id}"):
        status, body = await triage.get(path)
        assert status == 401 and "Bearer" in body["error"]
        status, body = await triage.get(path, headers={"Authorization": "Bearer wrong"})
        assert status == 401
        status, body = await triage.get(path, headers={"Authorization": "Bearer s3cret"})
        assert status == 200, body
    status, body = await triage.post(f"/api/interactions/{captured(1).id}/labels", json={"verdict_right": True})
    assert status == 401
    async with triage.http.get(triage.base + "/") as page:  # the page holds no data: served without the token
        page_text = await page.text()
        assert page.status == 200 and "<table" in page_text  # the page's frame ...
        row = captured(1)  # ... and nothing of the stored interaction: the data comes from the API, with the token
        for value in (row.id, "Where is tower 1?", "The tower stands in Paris.", "Eiffel", row.user, row.session, row.explanation):
            assert value not in page_text, value
        assert "script-src 'self'" in page.headers["Content-Security-Policy"]
        assert page.headers["X-Content-Type-Options"] == "nosniff"
    async with triage.http.get(triage.base + "/static/triage.js") as asset:
        assert asset.status == 200 and asset.content_type == "text/javascript"
        script = await asset.text()
        for sink in (".innerHTML", ".outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
            assert sink not in script, f"{sink}: the page builds its DOM with textContent only"


async def test_without_a_token_only_loopback_host_names_reach_the_data(start_triage) -> None:
    triage = await start_triage([captured(1)])
    status, body = await triage.get("/api/interactions", headers={"Host": "rebound.evil.example"})
    assert status == 403 and "loopback" in body["error"]
    status, body = await triage.get("/api/interactions", headers={"Host": "localhost:8787"})
    assert status == 200


async def test_the_page_path_redirects_to_the_page_keeping_the_filters(start_triage) -> None:
    triage = await start_triage([])
    async with triage.http.get(triage.base + "?verdict=refusal", allow_redirects=False) as response:
        assert response.status == 302 and response.headers["Location"] == "/triage/?verdict=refusal"
