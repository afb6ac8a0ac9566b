"""The capture store: one suite, run against SQLite and against a real PostgreSQL server.

The PostgreSQL server is started once per session (`initdb` + `pg_ctl` on a temporary folder, tests/pg_server.py);
each test gets a database of its own.  Where the binaries are absent the PostgreSQL half skips, naming why.
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from pg_server import PostgresServer, running_postgres

from ragtap.config import DEFAULT_THRESHOLDS
from ragtap.store.base import CapturedInteraction, InvalidLabel, Label, StoreError, StoreQuery, UnknownInteraction
from ragtap.store.factory import open_store
from ragtap.store.settings import StoreSettings
from ragtap.store.threaded import ThreadedStore
from ragtap.types import ClaimOutcome, ClaimSupport, Document, Scores

NOW = 1_790_000_000.0
_databases = itertools.count()


@pytest.fixture(scope="session")
def postgres_server() -> Any:
    yield from running_postgres()


def new_database(server: PostgresServer) -> str:
    import psycopg

    name = f"t{next(_databases)}_{int(time.time() * 1000) % 100000}"
    with psycopg.connect(server.url, autocommit=True, connect_timeout=10) as connection:
        connection.execute(f"CREATE DATABASE {name}")
    return server.url.rsplit("/", 1)[0] + "/" + name


@pytest.fixture(params=["sqlite", "postgresql"])
async def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Callable[..., ThreadedStore]]:
    """`make_store(**settings)` -> an open store on this test's backend; closed after the test."""
    stores: list[ThreadedStore] = []
    if request.param == "postgresql":
        server = request.getfixturevalue("postgres_server")
        where = {"url": new_database(server)}
    else:
        where = {"path": str(tmp_path / "capture.sqlite3")}

    def make(**settings: Any) -> ThreadedStore:
        store = open_store(StoreSettings(**{"capture": "all", **where, **settings}))
        stores.append(store)
        return store

    make.backend = request.param  # type: ignore[attr-defined]
    try:
        yield make
    finally:
        for store in stores:
            await store.close()


def captured(i: int, **changes: Any) -> CapturedInteraction:
    claim = ClaimSupport("answer", "Paris is in Spain.", 0, 18, ClaimOutcome.NOT_FOUND, "name_missing", 0.41, 1, 10, 60, 0.25, ("1889",), ("Spain",))
    item = CapturedInteraction(
        id=f"row-{i:06d}", time=NOW - i, question=f"Where is the tower number {i}?",
        documents=(Document("The Eiffel tower is in Paris, built 1889.", "doc-a"), Document("Unrelated café text ünïcode")),
        supporting="The tower stands in Paris.", answer="Paris is in Spain. <script>alert('x')</script>",
        scores=Scores(sdq=0.7, sdrd=0.55, sda=None, qrd=0.4, qa=0.61, ard=0.3, attributed_document=0),
        thresholds=DEFAULT_THRESHOLDS, verdict=("parametric", "grounded", "refusal", "unsupported_answer")[i % 4],
        poor_retrieval=i % 3 == 0, explanation="SDRD 0.55 fail: the support was not taken from the documents", claims=(claim,),
        unscored_reason=None, latency_ms=12.5, model=("gpt-a", "gpt-b")[i % 2], prompt_tokens=120, answer_tokens=30,
        supporting_tokens=12, trace_id="0af7651916cd43dd8448eb211c80319c", span_id="b7ad6b7169203331",
        user=f"user-{i % 5}", session=f"session-{i % 7}", rag_source="explicit",
    )
    return dataclasses.replace(item, **changes)


async def test_a_row_comes_back_exactly_as_written(make_store: Callable[..., ThreadedStore]) -> None:
    store = make_store()
    item = captured(1)
    assert await store.add_many([item]) == 1
    assert await store.get(item.id) == item
    assert await store.get("no-such-row") is None
    assert await store.add_many([item]) == 1  # written again: ignored, not duplicated
    assert await store.count() == 1


async def test_offered_rows_reach_the_store_through_the_writer_thread(make_store: Callable[..., ThreadedStore]) -> None:
    store = make_store(batch_max=7)
    for i in range(40):
        assert store.offer(captured(i))
    assert await store.flush(timeout=20)
    assert await store.count() == 40
    assert store.stats.written == 40 and store.stats.dropped["queue_full"] == 0


async def test_filters_match_what_they_name(make_store: Callable[..., ThreadedStore]) -> None:
    store = make_store()
    items = [captured(i) for i in range(60)]
    await store.add_many(items)

    async def ids(query: StoreQuery) -> set[str]:
        page = await store.query(dataclasses.replace(query, limit=500))
        assert await store.count(query) == len(page.items)
        return {item.id for item in page.items}

    def expect(predicate: Callable[[CapturedInteraction], bool]) -> set[str]:
        return {item.id for item in items if predicate(item)}

    assert await ids(StoreQuery(verdicts=("parametric", "refusal"))) == expect(lambda x: x.verdict in ("parametric", "refusal"))
    assert await ids(StoreQuery(poor_retrieval=True)) == expect(lambda x: bool(x.poor_retrieval))
    assert await ids(StoreQuery(poor_retrieval=False)) == expect(lambda x: x.poor_retrieval is False)
    assert await ids(StoreQuery(model="gpt-b")) == expect(lambda x: x.model == "gpt-b")
    assert await ids(StoreQuery(user="user-2", session="session-3")) == expect(lambda x: x.user == "user-2" and x.session == "session-3")
    assert await ids(StoreQuery(since=NOW - 20, until=NOW - 10)) == expect(lambda x: NOW - 20 <= x.time < NOW - 10)
    assert await ids(StoreQuery(verdicts=("grounded",), model="gpt-a")) == set()  # grounded rows are the odd ones: gpt-b


async def test_free_text_finds_words_in_any_text_and_treats_syntax_as_words(make_store: Callable[..., ThreadedStore]) -> None:
    store = make_store()
    special = captured(5, question="Why is the sky blue?", documents=(Document("Rayleigh scattering of sunlight"),),
                       answer="Because of nitrogen.", supporting="Scattering explains it.")
    await store.add_many([captured(i) for i in range(5)] + [special])
    assert [x.id for x in (await store.query(StoreQuery(text="rayleigh"))).items] == [special.id]  # in a document
    assert [x.id for x in (await store.query(StoreQuery(text="nitrogen sky"))).items] == [special.id]  # words in any order
    assert await store.count(StoreQuery(text="tower")) == 5
    assert await store.count(StoreQuery(text="rayleigh unicorn")) == 0  # every word must be there
    for hostile in ('"', 'sky" OR "tower', "sky AND NOT", "NEAR(a b)", "col:sky", "*", "%_\\", "'; DROP TABLE interactions; --"):
        await store.query(StoreQuery(text=hostile))  # no syntax error, no injection
    assert await store.count() == 6
    assert await store.count(StoreQuery(text="   ")) == 6  # no words: no filter


async def test_keyset_pages_walk_every_row_once_newest_first(make_store: Callable[..., ThreadedStore]) -> None:
    store = make_store()
    # Ties on time must not lose or repeat rows: five rows share each timestamp.
    items = [captured(i, time=NOW - i // 5) for i in range(47)]
    await store.add_many(items)
    seen: list[CapturedInteraction] = []
    query = StoreQuery(limit=10)
    for _ in range(10):
        page = await store.query(query)
        seen.extend(page.items)
        if page.next_cursor is None:
            break
        query = dataclasses.replace(query, cursor=page.next_cursor)
    assert len(seen) == 47 and len({x.id for x in seen}) == 47
    assert [(x.time, x.id) for x in seen] == sorted(((x.time, x.id) for x in items), reverse=True)
    filtered = await store.query(StoreQuery(verdicts=("refusal",), limit=3))
    second = await store.query(StoreQuery(verdicts=("refusal",), limit=3, cursor=filtered.next_cursor))
    assert all(x.verdict == "refusal" for x in filtered.items + second.items)
    assert not {x.id for x in filtered.items} & {x.id for x in second.items}


async def test_bad_queries_get_one_clear_error(make_store: Callable[..., ThreadedStore]) -> None:
    store = make_store()
    with pytest.raises(StoreError, match="unknown verdict"):
        await store.query(StoreQuery(verdicts=("made_up",)))
    with pytest.raises(StoreError, match="not a page cursor"):
        await store.query(StoreQuery(cursor="garbage"))
    with pytest.raises(StoreError, match="page size"):
        await store.query(StoreQuery(limit=0))


async def test_labels_are_stored_with_their_interaction(make_store: Callable[..., ThreadedStore]) -> None:
    store = make_store()
    await store.add_many([captured(i) for i in range(4)])
    first = await store.add_label(Label("row-000000", verdict_right=False, right_verdict="grounded", note="the doc says Paris"))
    assert first.time > 0
    latest = await store.add_label(Label("row-000000", verdict_right=False, right_verdict="unsupported_answer"))
    await store.add_label(Label("row-000001", verdict_right=True))
    row = await store.get("row-000000")
    assert row is not None and row.label == latest
    assert {x.id for x in await store.labelled()} == {"row-000000", "row-000001"}
    assert await store.count(StoreQuery(labelled=True)) == 2 and await store.count(StoreQuery(labelled=False)) == 2
    with pytest.raises(UnknownInteraction):
        await store.add_label(Label("row-999999", verdict_right=True))
    with pytest.raises(InvalidLabel, match="right_verdict must be one of"):
        await store.add_label(Label("row-000002", verdict_right=False, right_verdict="maybe"))
    with pytest.raises(InvalidLabel, match="repeats the verdict"):
        await store.add_label(Label("row-000002", verdict_right=False, right_verdict="refusal"))  # row 2 is a refusal


async def test_pruning_keeps_the_newest_rows_and_every_labelled_one(make_store: Callable[..., ThreadedStore]) -> None:
    store = make_store(max_rows=10, max_age_days=1.0)
    now = time.time()
    old = captured(99, id="ancient", time=now - 3 * 86400, question="A zeppelin question")
    labelled_old = captured(98, id="ancient-labelled", time=now - 3 * 86400)
    recent = [captured(i, time=now - i) for i in range(15)]
    await store.add_many([old, labelled_old, *recent])
    await store.add_label(Label("ancient-labelled", verdict_right=True))
    deleted = await store.prune()
    assert deleted == 1 + 6  # the unlabelled old row, then the five oldest recent rows beyond ten
    kept = {x.id for x in (await store.query(StoreQuery(limit=100))).items}
    assert kept == {"ancient-labelled"} | {x.id for x in recent[:9]}
    assert await store.count(StoreQuery(text="zeppelin")) == 0  # the search index forgot the deleted row
    await store.add_many([captured(200, id="zeppelin-again", time=now, question="Another zeppelin")])
    assert [x.id for x in (await store.query(StoreQuery(text="zeppelin"))).items] == ["zeppelin-again"]


async def test_a_full_queue_drops_and_counts_instead_of_waiting(make_store: Callable[..., ThreadedStore], tmp_path: Path) -> None:
    if make_store.backend != "sqlite":  # type: ignore[attr-defined]
        pytest.skip("the lock that stalls the writer is SQLite's; PostgreSQL going away is tested in test_capture.py")
    import sqlite3

    store = make_store(queue_size=5, batch_max=1, lock_timeout_s=1.0)
    await store.add_many([captured(0)])  # schema exists
    blocker = sqlite3.connect(store.settings.path, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")
    try:
        accepted = sum(store.offer(captured(i + 1)) for i in range(50))
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert accepted <= 5 + 2  # the queue plus what the writer had taken: offer() did not wait for the lock
    assert store.stats.dropped["queue_full"] == 50 - accepted
    assert await store.flush(timeout=20)


async def test_free_text_over_many_matches_walks_the_time_index_with_the_same_result(make_store: Callable[..., ThreadedStore],
                                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    if make_store.backend != "sqlite":  # type: ignore[attr-defined]
        pytest.skip("the two plans are SQLite's (PostgreSQL's planner chooses by itself)")
    import ragtap.store.sqlite

    store = make_store()
    await store.add_many([captured(i) for i in range(30)])
    few = [x.id for x in (await store.query(StoreQuery(text="tower", limit=12))).items]
    monkeypatch.setattr(ragtap.store.sqlite, "FEW_MATCHES", 3)
    many = [x.id for x in (await store.query(StoreQuery(text="tower", limit=12))).items]
    assert few == many == [captured(i).id for i in range(12)]
    assert await store.count(StoreQuery(text="tower")) == 30


def test_sqlite_without_fts5_searches_by_substring(tmp_path: Path) -> None:
    """Where SQLite was built without FTS5 the same query falls back to LIKE, with LIKE's wildcards escaped."""
    from ragtap.store.sqlite import SqliteConnection

    db = SqliteConnection(str(tmp_path / "c.sqlite3"), 1.0)
    try:
        db.fts = False  # what ensure_schema sets when CREATE VIRTUAL TABLE ... fts5 fails
        db.add_many([captured(1), captured(2, question="100% sure_thing?", documents=(Document("Rayleigh scattering"),))])
        assert [x.id for x in db.query(StoreQuery(text="rayleigh")).items] == ["row-000002"]  # in a document, any case
        assert [x.id for x in db.query(StoreQuery(text="100%")).items] == ["row-000002"]
        assert db.count(StoreQuery(text="1_0")) == 0 and db.count(StoreQuery(text="%")) == 1  # wildcards are literal
        assert db.count(StoreQuery(text="tower")) == 2  # both supports name the tower
    finally:
        db.close()
