"""`ragtap serve --workers 2` (issue 23): two real worker processes on one port behind the supervisor, the official
`openai` SDK as the app and the scripted upstream on 127.0.0.1.

- both workers answer concurrent streamed and non-streamed requests (with SO_REUSEPORT, and with one shared socket);
  the start-up line is printed once;
- /metrics, whichever worker answers the scrape, reports the sum over both (a counter both incremented, and the
  capture store's written rows copied from each worker's scrape-time collector); both write to one capture store and
  either one's triage API lists every row;
- a worker killed with SIGKILL is replaced, and the streams the other worker was relaying finish whole;
- SIGTERM to the supervisor drains both: every in-flight stream finishes, every interaction is scored and logged,
  the supervisor exits 0 within the grace period.

Which worker answered: with `x-ragtap-debug: 1` a worker names itself in `x-ragtap-worker`; /healthz gives its index
and pid.  Each request opens its own connection (no keep-alive), so the kernel spreads them over the workers.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import time
from pathlib import Path
from typing import Any

import aiohttp
import openai
import pytest

from ragtap.testing.upstream import ScriptedReply, ScriptedUpstream, json_reply, was_injected

from conftest import explicit, rag_messages
from test_shutdown import STREAM_ANSWER, start_ragtap, stream_text

DEBUG = {"x-ragtap-debug": "1"}
pytestmark = pytest.mark.slow


def slow_script(writes: int, delay_s: float):  # type: ignore[no-untyped-def]
    """Streams injected replies in `writes` network writes `delay_s` apart; plain replies at once."""

    def script(body: dict[str, Any]) -> ScriptedReply:
        content = json_reply(STREAM_ANSWER, "The APIs remain the same.") if was_injected(body) else STREAM_ANSWER
        if body.get("stream"):
            return ScriptedReply(content, piece_chars=3, cuts=[i * 120 for i in range(1, writes)], chunk_delay_s=delay_s)
        return ScriptedReply(content)

    return script


async def get(url: str, **kwargs: Any) -> tuple[int, str]:
    """One GET on a connection of its own (so it may land on either worker)."""
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True)) as session:
        async with session.get(url, timeout=aiohttp.ClientTimeout(total=30), **kwargs) as response:
            return response.status, await response.text()


async def worker_pids(port: int, want: int = 2) -> dict[int, int]:
    """Worker index -> pid, from /healthz on fresh connections until `want` workers answered (bounded)."""
    seen: dict[int, int] = {}
    for _ in range(200):
        status, body = await get(f"http://127.0.0.1:{port}/healthz")
        health = json.loads(body)
        seen[health["worker"]] = health["pid"]
        if len(seen) >= want:
            return seen
    raise AssertionError(f"only workers {sorted(seen)} answered /healthz")


def metric(text: str, name: str, **labels: str) -> float:
    """The sum of the samples of `name` whose labels include `labels`."""
    total = 0.0
    for line in text.splitlines():
        match = re.match(r"^([a-zA-Z_:][\w:]*)(\{(.*)\})? (\S+)$", line)
        if not match or match.group(1) != name:
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', match.group(3) or ""))
        if all(found.get(k) == v for k, v in labels.items()):
            total += float(match.group(4))
    return total


async def until(condition, timeout: float, what: str):  # type: ignore[no-untyped-def]
    """Poll an async condition until it returns something truthy (bounded)."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = await condition()
        if last:
            return last
        await asyncio.sleep(0.2)
    raise AssertionError(f"{what}: not within {timeout} s (last: {last!r})")


async def stop(process: asyncio.subprocess.Process) -> str:
    if process.returncode is None:
        process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(process.wait(), 30)
        except TimeoutError:
            process.kill()
            await process.wait()
    return (await process.stderr.read()).decode()  # type: ignore[union-attr]


@pytest.mark.parametrize("reuse_port", ["true", "false"])
async def test_two_workers_answer_concurrent_requests_and_metrics_and_store_cover_both(tmp_path: Path, reuse_port: str) -> None:
    store = tmp_path / "capture.sqlite3"
    async with ScriptedUpstream(slow_script(writes=4, delay_s=0.05)) as upstream:
        process, port, banner = await start_ragtap(
            f'[server]\nport = PORT\nupstream = "{upstream.base_url}"\nworkers = 2\nreuse_port = {reuse_port}\nconnect_timeout_s = 60\n'
            f'[store]\npath = "{store}"\ncapture = "all"\n', tmp_path)
        try:
            assert "(2 workers, " + ("SO_REUSEPORT" if reuse_port == "true" else "one shared socket") + ")" in banner

            def client() -> openai.AsyncOpenAI:  # one per request: its own connection, to either worker
                return openai.AsyncOpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="sk-test", max_retries=0, timeout=60)

            async def plain(sdk: openai.AsyncOpenAI) -> tuple[str, str]:
                raw = await sdk.chat.completions.with_raw_response.create(
                    model="gpt-4o-mini", messages=rag_messages(), extra_body=explicit(), extra_headers=DEBUG)
                return raw.headers["x-ragtap-worker"], raw.parse().choices[0].message.content or ""

            async def streamed(sdk: openai.AsyncOpenAI) -> tuple[str, str]:
                raw = await sdk.chat.completions.with_raw_response.create(
                    model="gpt-4o-mini", messages=rag_messages(), extra_body=explicit(), extra_headers=DEBUG, stream=True)
                text = ""
                async for chunk in raw.parse():
                    if chunk.choices:
                        text += chunk.choices[0].delta.content or ""
                return raw.headers["x-ragtap-worker"], text

            # Waves of 12 concurrent requests (6 plain, 6 streamed) until both workers answered some.  With one shared
            # socket the worker that wakes first may accept a whole wave; with SO_REUSEPORT one wave is plenty.  The
            # clients are made before a wave starts: making one costs CPU in this process, the scripted upstream's.
            results: list[tuple[str, str]] = []
            for _ in range(8):
                sdks = [client() for _ in range(12)]
                try:
                    results += await asyncio.wait_for(asyncio.gather(*[plain(c) for c in sdks[:6]], *[streamed(c) for c in sdks[6:]]), 120)
                finally:
                    for sdk in sdks:
                        await sdk.close()
                if {worker for worker, _ in results} == {"0", "1"}:
                    break
            sent = len(results)
            assert [text for _, text in results] == [STREAM_ANSWER] * sent
            served = {worker for worker, _ in results}
            assert served == {"0", "1"}, served  # both workers answered, plain and streamed

            url = f"http://127.0.0.1:{port}/metrics"

            async def every_scrape_sums_both() -> list[float] | None:
                # Each scrape lands on either worker; each must count the exchanges of both.
                counts = [metric((await get(url))[1], "ragtap_requests_total", route="/v1/chat/completions", status="200")
                          for _ in range(6)]
                return counts if counts == [float(sent)] * 6 else None

            await until(every_scrape_sums_both, 20, "ragtap_requests_total summed over the workers")
            # The store's written rows: a scrape-time collector in each worker, copied into the shared metrics.
            written = await until(lambda: _written(url, sent), 20, "ragtap_store_written_total summed over the workers")
            assert written == sent

            async def every_triage_lists_all() -> bool:
                for _ in range(6):
                    status, body = await get(f"http://127.0.0.1:{port}/triage/api/interactions?limit=500")
                    assert status == 200, body
                    if len(json.loads(body)["items"]) != sent:
                        return False
                return True

            await until(every_triage_lists_all, 20, "one store for both workers")
        finally:
            stderr = await stop(process)
    assert stderr.count("ragtap listening on") == 0  # the banner was read already: printed once, not per worker
    assert "Traceback" not in stderr, stderr


async def _written(url: str, want: float) -> float | None:
    value = metric((await get(url))[1], "ragtap_store_written_total")
    return value if value == want else None


Stream = tuple[str, aiohttp.ClientSession, aiohttp.ClientResponse, float]


async def _open_streams(url: str, count: int) -> list[Stream]:
    """`count` RAG streams, each on its own connection, read until their first bytes: (worker, session, response,
    when its first bytes arrived)."""
    body = {"model": "gpt-4o-mini", "messages": rag_messages(), "stream": True, **explicit()}
    streams = []
    for _ in range(count):
        session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True))
        response = await session.post(url, json=body, headers=DEBUG, timeout=aiohttp.ClientTimeout(total=120))
        assert response.status == 200
        await response.content.readany()
        streams.append((response.headers["x-ragtap-worker"], session, response, time.monotonic()))
    return streams


async def _streams_on_both(url: str) -> list[Stream]:
    """Streams opened until both workers relay some (connections are spread by the kernel: bounded tries)."""
    streams = await _open_streams(url, 4)
    for _ in range(10):
        if {s[0] for s in streams} == {"0", "1"}:
            break
        streams += await _open_streams(url, 2)
    assert {s[0] for s in streams} == {"0", "1"}
    return streams


async def _finish(response: aiohttp.ClientResponse) -> tuple[str, bytes] | BaseException:
    try:
        return await stream_text(response)
    except (aiohttp.ClientError, asyncio.TimeoutError) as error:
        return error


async def test_a_killed_worker_is_replaced_and_the_other_workers_streams_finish(tmp_path: Path) -> None:
    stream_s = 12.0  # each stream lasts at least this long after its first bytes: still running at the kill
    async with ScriptedUpstream(slow_script(writes=int(stream_s / 0.1), delay_s=0.1)) as upstream:
        process, port, _ = await start_ragtap(f'[server]\nport = PORT\nupstream = "{upstream.base_url}"\nworkers = 2\n', tmp_path)
        sessions: list[aiohttp.ClientSession] = []
        try:
            pids = await worker_pids(port)
            streams = await _streams_on_both(f"http://127.0.0.1:{port}/v1/chat/completions")
            sessions = [s[1] for s in streams]
            victim = int(streams[-1][0])
            killed_at = time.monotonic()
            os.kill(pids[victim], signal.SIGKILL)
            in_flight = [s for s in streams if killed_at - s[3] < stream_s - 2]
            assert {s[0] for s in in_flight} == {"0", "1"}, "the streams were opened too slowly to be in flight on both"
            outcomes = await asyncio.wait_for(asyncio.gather(*[_finish(s[2]) for s in in_flight]), 120)
            for (worker, *_), outcome in zip(in_flight, outcomes):
                if int(worker) != victim:  # the other worker's streams are whole
                    assert not isinstance(outcome, BaseException), outcome
                    text, raw = outcome
                    assert raw.endswith(b"data: [DONE]\n\n") and STREAM_ANSWER.endswith(text[-20:])
                else:  # the killed worker's were cut (they cannot end with [DONE])
                    assert isinstance(outcome, BaseException) or not outcome[1].endswith(b"data: [DONE]\n\n")

            async def replaced() -> dict[int, int] | None:
                seen = await worker_pids(port)
                return seen if seen[victim] != pids[victim] and seen[1 - victim] == pids[1 - victim] else None

            await until(replaced, 120, "a new worker in the killed one's place")
            status, body = await get(f"http://127.0.0.1:{port}/v1/models")
            assert status == 200
        finally:
            for session in sessions:
                await session.close()
            stderr = await stop(process)
    assert f"worker {victim} (pid {pids[victim]}) was killed by SIGKILL" in stderr, stderr
    assert "Traceback" not in stderr, stderr


async def test_sigterm_drains_both_workers(tmp_path: Path) -> None:
    grace = 15.0
    interactions = tmp_path / "interactions.jsonl"
    async with ScriptedUpstream(slow_script(writes=50, delay_s=0.1)) as upstream:
        process, port, _ = await start_ragtap(
            f'[server]\nport = PORT\nupstream = "{upstream.base_url}"\nworkers = 2\nshutdown_grace_s = {grace}\n'
            f'[log]\ninteractions_path = "{interactions}"\n', tmp_path)
        sessions: list[aiohttp.ClientSession] = []
        try:
            streams = await _streams_on_both(f"http://127.0.0.1:{port}/v1/chat/completions")
            sessions = [s[1] for s in streams]
            sent_at = time.monotonic()
            process.send_signal(signal.SIGTERM)
            outcomes = await asyncio.wait_for(asyncio.gather(*[_finish(s[2]) for s in streams]), 60)
            for outcome in outcomes:
                assert not isinstance(outcome, BaseException), outcome
                assert outcome[1].endswith(b"data: [DONE]\n\n")
            code = await asyncio.wait_for(process.wait(), grace + 10)
            exited_after = time.monotonic() - sent_at
            with pytest.raises(aiohttp.ClientConnectorError):  # nothing listens any more
                await get(f"http://127.0.0.1:{port}/healthz")
        finally:
            for session in sessions:
                await session.close()
            stderr = await stop(process)
    assert code == 0, stderr
    # Exit code 0: both workers stopped by themselves, before the supervisor's deadline (grace + 5 s) to kill them.
    assert exited_after < grace + 5, exited_after
    assert stderr.count("shutting down") == 1, stderr
    # Both workers scored their streams during the drain and appended whole lines to the one log.
    records = [json.loads(line) for line in interactions.read_text().splitlines()]
    assert len(records) == len(streams) and all(r["answer"] == STREAM_ANSWER and r["verdict"] != "unscored" for r in records)


async def test_a_worker_that_cannot_start_stops_the_others_with_one_line(tmp_path: Path) -> None:
    """Each worker builds its embedder; when that fails (a plugin's embedder here, a missing model file in life), the
    supervisor stops the workers that did start and says why in one line, exit code 2, the port free again.  (Fails
    on the previous code: no --workers.)"""
    import sys

    from conftest import free_port

    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGTAP_", "OTEL_"))}
    env.update(RAGTAP_PLUGINS="broken_embedder_plugin", RAGTAP_EMBEDDER="broken", PYTHONPATH=str(Path(__file__).parent))
    ragtap = str(Path(sys.executable).with_name("ragtap"))
    process = await asyncio.create_subprocess_exec(ragtap, "serve", "--workers", "2", "--port", str(port), "--upstream", "http://127.0.0.1:9/v1",
                                                   stderr=asyncio.subprocess.PIPE, env=env)
    code = await asyncio.wait_for(process.wait(), 120)
    stderr = (await process.stderr.read()).decode().strip()  # type: ignore[union-attr]
    assert code == 2, stderr
    assert re.fullmatch(r"ragtap: worker [01] could not start: RuntimeError: the model file is not there", stderr), stderr
    import socket

    with socket.socket() as probe:  # nothing holds the port any more
        probe.bind(("127.0.0.1", port))


def test_workers_on_a_port_in_use_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    from ragtap.cli import main

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", "--workers", "2", "--port", str(port), "--upstream", "http://127.0.0.1:9/v1"]) == 2
    assert capsys.readouterr().err.strip() == f"ragtap: cannot listen on 127.0.0.1:{port}: Address already in use"
