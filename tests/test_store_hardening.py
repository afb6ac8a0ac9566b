"""The capture store attacked and on by default (issue 24): one bad row must not cost its batch (finding 5, on a real
PostgreSQL and SQLite), a database file deleted or replaced while ragtap runs is noticed, logged, counted and
started again (finding 6, a real SQLite file), and the default store: where it is, who may read it, several
processes sharing it, and `ragtap serve` with no config at all printing its triage page and filling it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import os
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import aiohttp
import openai
import pytest
from pg_server import running_postgres
from test_store import captured, new_database

from ragtap.demo.cases import thesis_cases, thesis_script
from ragtap.store.base import StoreQuery
from ragtap.store.factory import open_store
from ragtap.store.settings import StoreSettings
from ragtap.testing.upstream import ScriptedUpstream

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def postgres_server() -> Any:
    yield from running_postgres()


@pytest.fixture(params=["sqlite", "postgresql"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    if request.param == "postgresql":
        return {"url": new_database(request.getfixturevalue("postgres_server"))}
    return {"path": str(tmp_path / "c.sqlite3")}


# ------------------------------------------------------------------------------- finding 5: one row, one batch
def distinct_words(count: int) -> str:
    """`count` different words (no two alike): the worst case for a full-text index."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = []
    for n in range(count):
        word = ""
        n += 26 * 27
        while n:
            n, digit = divmod(n, 26)
            word = letters[digit] + word
        words.append(word)
    return " ".join(words)


async def test_a_row_over_postgresqls_tsvector_limit_does_not_lose_its_batch(postgres_server: Any) -> None:
    import psycopg

    url = new_database(postgres_server)
    huge = "zebrafirst " + distinct_words(350_000)  # ~2.6 MB of distinct words
    with psycopg.connect(url, autocommit=True) as connection:  # the input really is over PostgreSQL's limit
        with pytest.raises(psycopg.errors.ProgramLimitExceeded, match="too long for tsvector"):
            connection.execute("SELECT to_tsvector('simple', %s)", (huge,))
    store = open_store(StoreSettings(url=url, capture="all", batch_max=500))
    try:
        rows = [captured(i) for i in range(10)]
        rows.insert(5, dataclasses.replace(captured(99), documents=(dataclasses.replace(captured(99).documents[0], text=huge),)))
        for row in rows:  # offered together: the writer takes them as one batch
            assert store.offer(row)
        assert await store.flush(timeout=60)
        assert await store.count() == 11 and store.stats.dropped["write_failed"] == 0, store.stats.last_error
        assert [r.id for r in (await store.query(StoreQuery(text="zebrafirst"))).items] == ["row-000099"]  # searchable
        got = await store.get("row-000099")
        assert got is not None and len(got.documents[0].text) == len(huge)  # kept whole
    finally:
        await store.close()


async def test_a_row_the_database_refuses_is_dropped_alone(where: dict[str, str]) -> None:
    store = open_store(StoreSettings(capture="all", batch_max=500, **where))
    try:
        rows = [captured(i) for i in range(6)]
        rows[2] = dataclasses.replace(rows[2], prompt_tokens=2**70)  # no INTEGER column holds it
        for row in rows:
            assert store.offer(row)
        assert await store.flush(timeout=30)
        assert await store.count() == 5
        assert await store.get("row-000002") is None and await store.get("row-000003") is not None
        assert store.stats.dropped["write_failed"] == 1 and store.stats.written == 5
    finally:
        await store.close()


# ------------------------------------------------------------------------ finding 6: the file deleted under us
async def test_a_deleted_database_file_is_noticed_logged_counted_and_started_again(tmp_path: Path, caplog) -> None:
    from prometheus_client import CollectorRegistry, generate_latest

    from ragtap.exporters.store import watch

    path = tmp_path / "c.sqlite3"
    store = open_store(StoreSettings(path=str(path), capture="all"))
    registry = CollectorRegistry()
    watch(store, registry, "sqlite")
    try:
        store.offer(captured(1))
        assert await store.flush(timeout=15) and await store.count() == 1
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        caplog.set_level(logging.ERROR, logger="ragtap.store")
        store.offer(captured(2))
        assert await store.flush(timeout=15)
        assert path.exists()  # a new file, at the same path
        with sqlite3.connect(path) as db:
            assert db.execute("SELECT id FROM interactions").fetchall() == [("row-000002",)]
        assert [r.id for r in (await store.query(StoreQuery())).items] == ["row-000002"]  # the page reads the new file
        assert store.stats.reopened == {"deleted": 1}
        [line] = [r.getMessage() for r in caplog.records if "database file was deleted" in r.getMessage()]
        assert str(path) in line
        assert 'ragtap_store_reopened_total{backend="sqlite",reason="deleted"} 1.0' in generate_latest(registry).decode()
        # another file put in its place: noticed too
        other = tmp_path / "other.sqlite3"
        sqlite3.connect(other).close()
        os.replace(other, path)
        store.offer(captured(3))
        assert await store.flush(timeout=15)
        assert store.stats.reopened == {"deleted": 1, "replaced": 1}
        assert [r.id for r in (await store.query(StoreQuery())).items] == ["row-000003"]
    finally:
        await store.close()
    reopened = open_store(StoreSettings(path=str(path), capture="all"))  # a restart: what was written since is there
    try:
        assert await reopened.get("row-000003") is not None
    finally:
        await reopened.close()


# ------------------------------------------------------------------------------------------ the default store
SEVERAL = textwrap.dedent('''
    import asyncio, json, sys
    sys.path.insert(0, sys.argv[1])
    from test_store import captured
    from ragtap.config import load_config
    from ragtap.store.factory import open_store
    from ragtap.wiring import build_redactor

    async def main(worker):
        config = load_config(environ={})
        store = open_store(config.store, build_redactor(config))
        for i in range(200):
            store.offer(captured(worker * 1000 + i))
        await store.flush(timeout=60)
        stats = store.stats
        await store.close()
        print(json.dumps({"path": config.store.path, "written": stats.written, "dropped": stats.dropped}))

    asyncio.run(main(int(sys.argv[2])))
''')


def test_several_processes_share_the_default_store(tmp_path: Path) -> None:
    """What `ragtap serve --workers N` (or a proxy and its `ragtap worker`s on one machine) does with the default
    store: every process writes the one SQLite file (WAL: their writers take turns, readers never wait)."""
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    processes = [subprocess.Popen([sys.executable, "-c", SEVERAL, str(Path(__file__).parent), str(n)], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for n in range(3)]
    results = []
    for process in processes:
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err[-2000:]
        results.append(json.loads(out.strip().splitlines()[-1]))
    database = tmp_path / "ragtap" / "capture.sqlite3"
    assert {r["path"] for r in results} == {str(database)}
    assert [r["written"] for r in results] == [200, 200, 200] and all(sum(r["dropped"].values()) == 0 for r in results)
    with sqlite3.connect(database) as db:
        # five users (user-0..4), hashed alike by every process (one per-install salt): five ids, not fifteen
        assert db.execute("SELECT count(*), count(DISTINCT user_id) FROM interactions").fetchone() == (600, 5)
        assert db.execute("SELECT count(*) FROM interactions WHERE user_id NOT LIKE 'h:%'").fetchone() == (0,)
    assert database.stat().st_mode & 0o777 == 0o600 and database.parent.stat().st_mode & 0o777 == 0o700


def test_the_data_directory_is_xdg_data_home_else_home(tmp_path: Path) -> None:
    script = "from ragtap.config import load_config; print(load_config(environ={}).store.path)"
    base = {k: v for k, v in os.environ.items() if k != "XDG_DATA_HOME"}

    def path_with(**env: str) -> str:
        done = subprocess.run([sys.executable, "-c", script], env={**base, "PYTHONPATH": str(ROOT), **env},
                              capture_output=True, text=True, timeout=60, check=True)
        return done.stdout.strip()

    assert path_with(XDG_DATA_HOME=str(tmp_path / "xdg")) == str(tmp_path / "xdg" / "ragtap" / "capture.sqlite3")
    assert path_with(HOME=str(tmp_path / "home")) == str(tmp_path / "home" / ".local" / "share" / "ragtap" / "capture.sqlite3")
    assert path_with(HOME=str(tmp_path / "home"), XDG_DATA_HOME="relative/ignored") == str(
        tmp_path / "home" / ".local" / "share" / "ragtap" / "capture.sqlite3")


@pytest.mark.parametrize(("environ", "why"), [({"RAGTAP_CAPTURE": "none"}, 'capture = "none"'), ({"RAGTAP_STORE_PATH": ""}, 'path = ""')])
def test_capture_none_or_an_empty_path_turns_the_store_off(environ: dict[str, str], why: str) -> None:
    from ragtap.commands.serve import capture_line
    from ragtap.config import load_config

    config = load_config(environ=environ)
    assert not config.store.enabled and capture_line(config) == f"capture store: off ([store] {why})"


async def read_line(stream: asyncio.StreamReader, starts: str) -> str:
    while True:
        line = (await stream.readline()).decode()
        assert line, "ragtap exited"
        if line.startswith(starts):
            return line.strip()


async def test_ragtap_serve_with_no_config_keeps_a_flagged_interaction_for_its_triage_page(tmp_path: Path) -> None:
    """Issue 24's "done when": `ragtap serve` with no config prints `triage page: http://127.0.0.1:PORT/triage/`,
    and a flagged interaction sent through it appears there; the store is where the start-up line says."""
    case = thesis_cases()[3]  # a refusal: flagged
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGTAP_", "OTEL_"))}
    env.update(XDG_DATA_HOME=str(tmp_path / "data"), PYTHONPATH=str(ROOT))
    async with ScriptedUpstream(thesis_script) as upstream:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "ragtap", "serve", "--upstream", upstream.base_url, "--port", "0", cwd=ROOT, env=env,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
        try:
            async with asyncio.timeout(90):
                listening = await read_line(process.stderr, "ragtap listening on")  # type: ignore[arg-type]
                capture = await read_line(process.stderr, "capture store:")  # type: ignore[arg-type]
            url = listening.split("triage page: ", 1)[1]
            assert url.startswith("http://127.0.0.1:") and url.endswith("/triage/")
            database = tmp_path / "data" / "ragtap" / "capture.sqlite3"
            assert capture.startswith(f"capture store: sqlite {database} (capture flagged: every verdict but grounded, "
                                      "and poor retrieval;")
            assert 'kept 30 days, at most 100000 rows; [store] capture = "none" turns it off' in capture
            base = url.removesuffix("/triage/")
            client = openai.AsyncOpenAI(base_url=f"{base}/v1", api_key="sk-test", max_retries=0, timeout=60)
            messages = [{"role": "user", "content": "Documents:\n" + "\n".join(case.retrieved) + f"\n\nQuestion: {case.question}"}]
            completion = await client.chat.completions.create(model="gpt-4o-mini", messages=messages, user="alice@example.com",
                                                              extra_body={"ragtap": {"question": case.question, "documents": list(case.retrieved)}})
            await client.close()
            assert completion.choices[0].message.content == case.answer
            deadline = time.monotonic() + 60
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as http:
                while True:
                    async with http.get(url + "api/interactions") as response:
                        items = (await response.json())["items"]
                    if items or time.monotonic() > deadline:
                        break
                    await asyncio.sleep(0.2)
            [row] = items
            assert row["verdict"] == "refusal" and row["question"] == case.question
            assert row["user"].startswith("h:")  # hashed, not alice@example.com
            assert database.stat().st_mode & 0o777 == 0o600
        finally:
            process.terminate()
            async with asyncio.timeout(30):
                await process.wait()


async def test_export_reads_the_default_store_and_never_creates_an_empty_one(tmp_path: Path, capsys) -> None:
    from ragtap.cli import main
    from ragtap.config import data_dir, load_config

    out = tmp_path / "flagged.jsonl"
    assert await asyncio.to_thread(main, ["export", "--out", str(out)]) == 2
    assert f"no capture store at {data_dir() / 'capture.sqlite3'}" in capsys.readouterr().err
    assert not data_dir().exists()
    store = open_store(load_config(environ={}).store)
    try:
        assert await store.add_many([captured(1), captured(2)]) == 2
    finally:
        await store.close()
    assert await asyncio.to_thread(main, ["export", "--out", str(out)]) == 0
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == ["row-000001", "row-000002"]


def test_the_tests_never_write_into_the_real_home() -> None:
    """conftest.py points XDG_DATA_HOME at a temporary folder for every test (and the processes tests start)."""
    import tempfile

    from ragtap.config import data_dir

    assert data_dir().is_relative_to(tempfile.gettempdir()) and not data_dir().is_relative_to(Path(os.path.expanduser("~")))
