"""Capture through the proxy: the official SDK -> ragtap -> the scripted upstream, with a real capture store.

What is stored follows the policy (none / flagged / all), holds the exchange's user, session, trace id, tokens and
latency, is redacted before it reaches the disk, and a broken store (locked or corrupt SQLite, a PostgreSQL
server that goes away) never changes what the app receives: rows are dropped and counted, and capture resumes
when the fault clears.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from pg_server import PostgresServer, running_postgres

from ragtap.demo.cases import thesis_cases, thesis_script
from ragtap.proxy.state import CAPTURE_STORE
from ragtap.store.base import StoreQuery
from ragtap.store.threaded import ThreadedStore

from conftest import Proxy, explicit, rag_messages

MODEL = "gpt-3.5-turbo"
CASES = thesis_cases()
FLAGGED = {"thesis-2": "unsupported_answer", "thesis-3": "parametric", "thesis-4": "refusal", "thesis-5": "refusal"}
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"


def store_of(proxy: Proxy) -> ThreadedStore:
    store = proxy.server.app[CAPTURE_STORE]
    assert isinstance(store, ThreadedStore)
    return store


def user(proxy: Proxy, name: str) -> str | None:
    """A user or session id as the store holds it (hashed under this install's salt, by default)."""
    return store_of(proxy).redactor.identity(name)


async def ask_all(proxy: Proxy, *, tag: str = "", headers: dict[str, str] | None = None) -> None:
    """The five thesis cases through the proxy; each answer must reach the app unchanged."""
    for n, case in enumerate(CASES):
        completion = await proxy.client.chat.completions.create(
            model=MODEL, messages=rag_messages(case.question, case.retrieved), user=f"alice{tag}",
            metadata={"session_id": f"s-{case.id}{tag}"}, extra_body=explicit(case.question, case.retrieved),
            extra_headers={"traceparent": f"00-{TRACE_ID}-{n + 1:016x}-01", **(headers or {})})
        assert completion.choices[0].message.content == case.answer


async def scored(proxy: Proxy, total: int) -> None:
    await proxy.collector.wait_until(lambda: len(proxy.collector.scored) >= total, 30, f"{total} assessments")


async def test_flagged_capture_keeps_every_non_grounded_interaction_with_its_context(start_proxy, tmp_path: Path) -> None:
    proxy = await start_proxy(thesis_script, flags={"store": {"path": str(tmp_path / "c.sqlite3")}})
    await ask_all(proxy)
    await scored(proxy, 5)
    store = store_of(proxy)
    assert await store.flush(timeout=15)
    page = await store.query(StoreQuery(limit=50))
    by_question = {row.question: row for row in page.items}
    assert {case.id: by_question[case.question].verdict for case in CASES if case.question in by_question} == FLAGGED
    for n, case in enumerate(CASES):
        if case.id not in FLAGGED:
            continue
        row = by_question[case.question]
        assert row.answer == case.answer and [d.text for d in row.documents] == list(case.retrieved)
        assert row.supporting == case.supporting
        assert row.user == user(proxy, "alice") != "alice" and row.session == user(proxy, f"s-{case.id}")
        assert (row.trace_id, row.span_id) == (TRACE_ID, f"{n + 1:016x}")
        assert row.model and row.latency_ms is not None and row.latency_ms > 0
        assert row.prompt_tokens and row.answer_tokens is not None and row.supporting_tokens
        assert row.thresholds == proxy.config.thresholds and row.explanation and row.rag_source == "explicit"
        assert row.scores.sdq is not None and row.passed()
    assert by_question[CASES[1].question].poor_retrieval is True
    assert any(c.supported is False for c in by_question[CASES[1].question].claims)  # thesis-2: the unsupported claim
    assert await store.count(StoreQuery(user=user(proxy, "alice"), verdicts=("refusal",))) == 2


@pytest.mark.parametrize(("policy", "expected"), [("all", 5), ("none", None)])
async def test_capture_policy_all_and_none(start_proxy, tmp_path: Path, policy: str, expected: int | None) -> None:
    path = tmp_path / "c.sqlite3"
    proxy = await start_proxy(thesis_script, flags={"store": {"path": str(path), "capture": policy}})
    await ask_all(proxy)
    await scored(proxy, 5)
    if expected is None:
        assert proxy.server.app[CAPTURE_STORE] is None and not path.exists()
        return
    store = store_of(proxy)
    assert await store.flush(timeout=15)
    assert await store.count() == expected


async def test_redaction_happens_before_anything_reaches_the_disk(start_proxy, tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    secret = "jane.doe@example.com"
    case = CASES[2]  # parametric: captured under the default policy
    question = f"{case.question} Reply to {secret}"
    documents = [f"{case.retrieved[0]} Contact {secret}.", *case.retrieved[1:]]
    proxy = await start_proxy(thesis_script, flags={"store": {"path": str(path), "user_headers": ["x-app-user"]},
                                                    "privacy": {"redact": [r"[\w.+-]+@[\w-]+\.[\w.]+"]}})
    await proxy.client.chat.completions.create(model=MODEL, messages=rag_messages(question, documents),
                                               extra_body=explicit(question, documents),
                                               extra_headers={"x-app-user": "bob", "x-ragtap-user": "ignored"})
    await scored(proxy, 1)
    store = store_of(proxy)
    assert await store.flush(timeout=15)
    (row,) = (await store.query(StoreQuery())).items
    assert secret not in row.question and "[redacted]" in row.question and "[redacted]" in row.documents[0].text
    assert row.user == user(proxy, "bob")  # the configured header, not the default one
    await store.close()
    on_disk = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("c.sqlite3"))
    assert secret.encode() not in on_disk and b"[redacted]" in on_disk


async def test_a_locked_sqlite_file_drops_and_counts_then_capture_resumes(start_proxy, tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    proxy = await start_proxy(thesis_script, flags={"store": {"path": str(path), "capture": "all", "lock_timeout_s": 0.3}})
    await ask_all(proxy, tag="-1")
    await scored(proxy, 5)
    store = store_of(proxy)
    assert await store.flush(timeout=15) and store.stats.written == 5
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")
    try:
        await ask_all(proxy, tag="-2")  # every answer unchanged while the store cannot write
        await scored(proxy, 10)
        assert await store.flush(timeout=15)
        assert store.stats.dropped["write_failed"] > 0 and store.stats.failures > 0
        assert "locked" in (store.stats.last_error or "")
        assert await store.count(StoreQuery(user=user(proxy, "alice-1"))) == 5  # WAL: the triage page still reads meanwhile
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    await ask_all(proxy, tag="-3")
    await scored(proxy, 15)
    assert await store.flush(timeout=15)
    assert await store.count(StoreQuery(user=user(proxy, "alice-3"))) == 5  # capture resumed by itself
    assert store.stats.recovered >= 1


async def test_a_corrupt_sqlite_file_is_moved_aside_and_a_new_one_started(start_proxy, tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    path.write_bytes(b"this is not a database, " * 200)
    proxy = await start_proxy(thesis_script, flags={"store": {"path": str(path), "capture": "all"}})
    await ask_all(proxy)
    await scored(proxy, 5)
    store = store_of(proxy)
    assert await store.flush(timeout=15)
    moved = [p for p in tmp_path.iterdir() if ".corrupt-" in p.name]
    assert len(moved) == 1 and moved[0].read_bytes().startswith(b"this is not a database")
    written = await store.count()
    assert written + store.stats.dropped["write_failed"] == 5 and written >= 4  # only the first batch was lost
    assert sqlite3.connect(path).execute("SELECT count(*) FROM interactions").fetchone()[0] == written


# ---------------------------------------------------------------------------------------------- PostgreSQL down
@pytest.fixture(scope="module")
def own_postgres() -> Any:
    """A server of this module's own: the test stops and restarts it."""
    yield from running_postgres()


async def test_an_unreachable_postgresql_drops_and_counts_then_capture_resumes(start_proxy, own_postgres: PostgresServer) -> None:
    proxy = await start_proxy(thesis_script, flags={"store": {"url": own_postgres.url, "capture": "all", "lock_timeout_s": 1.0}})
    await ask_all(proxy, tag="-1")
    await scored(proxy, 5)
    store = store_of(proxy)
    assert await store.flush(timeout=15) and await store.count() == 5
    await asyncio.to_thread(own_postgres.stop)
    try:
        await ask_all(proxy, tag="-2")  # answers unchanged with the database gone
        await scored(proxy, 10)
        assert await store.flush(timeout=20)
        assert store.stats.dropped["write_failed"] > 0
    finally:
        await asyncio.to_thread(own_postgres.start)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:  # the writer retries after its backoff (at most 2 s)
        await ask_all(proxy, tag="-3")
        assert await store.flush(timeout=20)
        if await store.count(StoreQuery(user=user(proxy, "alice-3"))) > 0:
            break
    assert await store.count(StoreQuery(user=user(proxy, "alice-3"))) >= 5
    assert store.stats.recovered >= 1


async def test_store_drops_show_on_the_proxys_metrics_endpoint(embedder, tmp_path: Path) -> None:
    """The configured exporters (Prometheus among them), not a test double: the drop counter is on /metrics."""
    import aiohttp
    import openai

    from ragtap.config import load_config
    from ragtap.proxy.server import RagtapServer
    from ragtap.testing.upstream import ScriptedUpstream

    from conftest import ENV

    path = tmp_path / "c.sqlite3"
    async with ScriptedUpstream(thesis_script) as upstream:
        config = load_config(environ=ENV, flags={"server": {"upstream": upstream.base_url, "port": 0, "shutdown_grace_s": 2.0},
                                                 "store": {"path": str(path), "capture": "all", "lock_timeout_s": 0.3}})
        async with RagtapServer(config, embedder=embedder) as server:
            store = server.app[CAPTURE_STORE]
            client = openai.AsyncOpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0, timeout=15)
            case = CASES[0]
            ask = lambda: client.chat.completions.create(model=MODEL, messages=rag_messages(case.question, case.retrieved),  # noqa: E731
                                                         extra_body=explicit(case.question, case.retrieved))
            await ask()
            deadline = time.monotonic() + 15
            while store.stats.written < 1 and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            blocker = sqlite3.connect(path, isolation_level=None)
            blocker.execute("BEGIN EXCLUSIVE")
            try:
                await ask()
                while store.stats.dropped["write_failed"] < 1 and time.monotonic() < deadline:
                    await asyncio.sleep(0.05)
            finally:
                blocker.execute("ROLLBACK")
                blocker.close()
            async with aiohttp.ClientSession() as session, session.get(f"{server.base_url.removesuffix('/v1')}/metrics") as reply:
                text = await reply.text()
            await client.close()
    assert 'ragtap_store_written_total{backend="sqlite"} 1.0' in text
    assert 'ragtap_store_dropped_total{backend="sqlite",reason="write_failed"} 1.0' in text
    assert "ragtap_store_write_failures_total" in text


@pytest.mark.parametrize(("verdict", "poor", "policy", "kept"), [
    ("grounded", False, "flagged", False), ("grounded", True, "flagged", True), ("grounded", None, "flagged", False),
    ("parametric", False, "flagged", True), ("unscored", None, "flagged", True), ("grounded", False, "all", True),
    ("refusal", True, "none", False),
])
def test_the_capture_policy(verdict: str, poor: bool | None, policy: str, kept: bool) -> None:
    from ragtap.exporters.store import should_capture
    from ragtap.types import Assessment, Scores, Verdict

    assessment = Assessment(Scores(), {}, Verdict(verdict), poor, "")
    assert should_capture(policy, assessment) is kept
