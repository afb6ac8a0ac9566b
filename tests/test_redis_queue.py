"""Scoring through Redis Streams: `ragtap serve` proxies hand interactions to a real `redis-server`, `ragtap worker`
subprocesses score them (docs/scaling.md).

Real everything: the openai SDK -> ragtap (in this process) -> the scripted upstream, over HTTP on 127.0.0.1; a
redis-server started here in a temporary directory on a free port; the workers are `python -m ragtap worker`
processes that select a test embedder and a ledger exporter by name (tests/redis_worker_plugin.py, loaded through
RAGTAP_PLUGINS).  The ledger is a file each worker appends one line to per exported interaction, unbuffered, so
"scored exactly once" is checked from what the workers really exported, SIGKILL included.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import explicit, free_port

REDIS = shutil.which("redis-server")
pytestmark = pytest.mark.skipif(REDIS is None, reason="redis-server not installed (scripts/system-packages.sh: apt-get install -y redis-server)")

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
REPLY = "The answer."


class RedisServer:
    """A redis-server child process in `folder`, on `port`; stop() and start() again keep the port and the folder
    (with `aof`, what was written survives the restart, as in a production setup with persistence)."""

    def __init__(self, folder: Path, *, aof: bool = False) -> None:
        self.folder = folder
        self.port = free_port()
        self.aof = aof
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        args = [REDIS, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.folder), "--save", "",
                "--appendonly", "yes" if self.aof else "no", "--appendfsync", "always", "--protected-mode", "no"]
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # type: ignore[arg-type]
        import redis

        client = redis.Redis(port=self.port, socket_timeout=1, socket_connect_timeout=1)
        deadline = time.monotonic() + 15
        while True:
            try:
                client.ping()
                client.close()
                return
            except redis.exceptions.RedisError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise AssertionError("redis-server did not start within 15 s") from None
                time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()  # SIGTERM: redis-server fsyncs its AOF and exits
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        self.process = None

    def client(self):  # type: ignore[no-untyped-def]
        import redis

        return redis.Redis(port=self.port, socket_timeout=5)


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def redis_aof(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path, aof=True)
    server.start()
    try:
        yield server
    finally:
        server.stop()


# A generous add timeout: on a loaded CI machine a slow Redis reply must not count as an outage (the restart test
# stops Redis, which refuses connections at once).
QUEUE_FLAGS = {"block_ms": 200, "claim_idle_s": 1.0, "reconnect_max_s": 0.5, "handoff_timeout_ms": 2000.0}


def _config_file(folder: Path) -> Path:
    path = folder / "worker.toml"
    path.write_text("[redis_queue]\n" + "".join(f"{k} = {v!r}\n" for k, v in QUEUE_FLAGS.items()) + "[prometheus]\nenabled = true\n")
    return path


class Worker:
    def __init__(self, redis: RedisServer, folder: Path, name: str, *, delay: float = 0.0, barrier: int = 0) -> None:
        self.name = name
        self.ledger = folder / f"ledger-{name}.jsonl"
        self.marker = folder / f"embeds-{name}.txt"
        self.log = folder / f"worker-{name}.log"
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("RAGTAP_")},
            "PYTHONPATH": os.pathsep.join([str(TESTS), str(ROOT)]),
            "RAGTAP_PLUGINS": "redis_worker_plugin",
            "RAGTAP_EMBEDDER": "test-word-hash",
            "RAGTAP_SCORING_QUEUE": redis.url,
            "RAGTAP_TEST_LEDGER": str(self.ledger),
            "RAGTAP_TEST_EMBED_MARKER": str(self.marker),
            "RAGTAP_TEST_EMBED_DELAY_S": str(delay),
            "RAGTAP_TEST_EMBED_BARRIER": f"{folder / 'barrier.txt'}:{barrier}" if barrier else "",
            "RAGTAP_LOG_LEVEL": "INFO",
        }
        self._log_file = open(self.log, "wb")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "ragtap", "worker", "--config", str(_config_file(folder)), "--consumer", name, "--metrics-port", "0"],
            env=env, cwd=ROOT, stdout=self._log_file, stderr=subprocess.STDOUT,
        )
        self.redis = redis

    def wait_ready(self, timeout: float = 30.0) -> None:
        """Until the worker has joined the group (it logs it; Redis lists a consumer only once it read an entry)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process.poll() is None, f"worker {self.name} exited: {self.log.read_text()[-2000:]}"
            if "as group ragtap-scorers" in self.log.read_text():
                return
            time.sleep(0.05)
        raise AssertionError(f"worker {self.name} not reading after {timeout} s: {self.log.read_text()[-2000:]}")

    def embeds_started(self) -> int:
        return len(self.marker.read_text().splitlines()) if self.marker.exists() else 0

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        self._log_file.close()


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[list[Worker]]:
    started: list[Worker] = []
    yield started
    for worker in started:
        worker.stop()


def ledger_questions(folder: Path) -> list[str]:
    questions = []
    for path in folder.glob("ledger-*.jsonl"):
        questions.extend(json.loads(line)["question"] for line in path.read_text().splitlines() if line.strip())
    return questions


async def wait_for(predicate, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(0.05)


def question(k: int) -> str:
    return f"Question {k}: will the nitro hypervisor change the apis used to interact with ec2 instances?"


async def ask(proxy, k: int) -> str:  # type: ignore[no-untyped-def]
    reply = await proxy.client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": question(k)}], extra_body=explicit(question(k)),
    )
    return reply.choices[0].message.content


async def start_redis_proxy(start_proxy, redis: RedisServer, **queue):  # type: ignore[no-untyped-def]
    from redis_worker_plugin import WordHashEmbedder

    flags = {"scoring": {"queue": redis.url}, "redis_queue": {**QUEUE_FLAGS, **queue}}
    return await start_proxy(flags=flags, embedder_override=WordHashEmbedder())


def backlog(redis: RedisServer) -> tuple[int, int]:
    """(entries in the stream, entries read but not acknowledged)."""
    client = redis.client()
    length = client.xlen("ragtap:interactions")
    pending = client.xpending("ragtap:interactions", "ragtap-scorers")["pending"]
    client.close()
    return length, pending


# ------------------------------------------------------------------------------------------------------------------


async def test_two_proxies_two_workers_score_each_interaction_exactly_once(start_proxy, redis_server, workers, tmp_path) -> None:
    # Each worker's first embed call waits until the other worker has started one too (a barrier, not a delay):
    # the first interaction goes out alone and holds the worker that read it, so the others are read by the other.
    workers.extend(Worker(redis_server, tmp_path, f"w{i}", barrier=2) for i in range(2))
    for worker in workers:
        worker.wait_ready()
    # Every interaction must reach Redis: an add that took over the default 2 s (load 13 on 2 cores) fell back to
    # local scoring and was never exported by a worker.
    proxies = [await start_redis_proxy(start_proxy, redis_server, handoff_timeout_ms=30_000.0) for _ in range(2)]
    total = 60
    limit = asyncio.Semaphore(8)

    async def one(k: int) -> str:
        async with limit:
            return await ask(proxies[k % 2], k)

    answers = [await one(0)]
    await wait_for(lambda: sum(w.embeds_started() for w in workers) >= 1, 15, "a worker to start on the first interaction")
    answers += await asyncio.gather(*(one(k) for k in range(1, total)))
    assert answers == [REPLY] * total  # the app gets the plain answer, as with the in-process queue
    await wait_for(lambda: len(ledger_questions(tmp_path)) >= total, 60, f"{total} exported interactions")
    await wait_for(lambda: backlog(redis_server) == (0, 0), 10, "an empty, fully acknowledged stream")
    counts = Counter(ledger_questions(tmp_path))
    assert counts == Counter({question(k): 1 for k in range(total)})
    for proxy in proxies:
        handoff = proxy.server.state.scoring
        assert handoff.metrics.counts["fallback"] == 0 and handoff.metrics.counts["stream_full"] == 0
        assert proxy.collector.scored == []  # nothing was scored in the proxies
    assert sum(p.server.state.scoring.metrics.counts["sent"] for p in proxies) == total
    exporting = {json.loads(line)["pid"] for w in workers for line in w.ledger.read_text().splitlines()}
    assert exporting == {w.process.pid for w in workers}  # both workers shared the work


async def test_a_worker_killed_mid_batch_loses_nothing(start_proxy, redis_server, workers, tmp_path) -> None:
    slow = Worker(redis_server, tmp_path, "slow", delay=2.0)
    workers.append(slow)
    slow.wait_ready()
    proxy = await start_redis_proxy(start_proxy, redis_server, handoff_timeout_ms=30_000.0)  # (every add must reach Redis)
    total = 24
    assert await asyncio.gather(*(ask(proxy, k) for k in range(total))) == [REPLY] * total
    await wait_for(lambda: slow.embeds_started() >= 1, 15, "the slow worker to start embedding a batch")
    client = redis_server.client()
    held = client.xpending("ragtap:interactions", "ragtap-scorers")["consumers"]
    slow.process.send_signal(signal.SIGKILL)  # mid-batch: it is inside its 2 s embed call
    slow.process.wait(10)
    held_by_slow = {c["name"].decode(): c["pending"] for c in held}.get("slow", 0)
    assert held_by_slow >= 1, "the killed worker held no unacknowledged entries: the test did not kill it mid-batch"
    assert ledger_questions(tmp_path) == []  # it exported nothing before it died

    rescuer = Worker(redis_server, tmp_path, "rescuer")
    workers.append(rescuer)
    await wait_for(lambda: len(ledger_questions(tmp_path)) >= total, 30, f"{total} exported interactions")
    await wait_for(lambda: backlog(redis_server) == (0, 0), 10, "an empty, fully acknowledged stream")
    assert Counter(ledger_questions(tmp_path)) == Counter({question(k): 1 for k in range(total)})
    client.close()


async def test_redis_stopped_and_restarted_under_traffic(start_proxy, redis_aof, workers, tmp_path) -> None:
    worker = Worker(redis_aof, tmp_path, "w")
    workers.append(worker)
    worker.wait_ready()
    proxy = await start_redis_proxy(start_proxy, redis_aof)
    handoff = proxy.server.state.scoring
    asked: list[int] = []
    errors: list[BaseException] = []
    phase = {"stop": False}

    async def traffic(lane: int) -> None:
        k = lane
        for _ in range(2000):  # bounded; the phases below stop it long before
            if phase["stop"]:
                return
            try:
                assert await ask(proxy, k) == REPLY
                asked.append(k)
            except BaseException as error:  # noqa: BLE001 - any failure is what the test looks for
                errors.append(error)
            k += 4
            await asyncio.sleep(0.01)

    lanes = [asyncio.create_task(traffic(lane)) for lane in range(4)]
    try:
        await wait_for(lambda: len(ledger_questions(tmp_path)) >= 20, 20, "scoring through Redis before the outage")
        redis_aof.stop()
        at_stop = len(asked)
        await wait_for(lambda: not handoff.redis_up, 10, "the proxy to notice the outage")
        health = await _get(proxy.url + "/healthz")
        assert json.loads(health)["handoff"] == "fallback"
        await wait_for(lambda: len(asked) >= at_stop + 30, 20, "traffic during the outage")
        redis_aof.start()
        await wait_for(lambda: handoff.redis_up, 15, "the proxy to reconnect")
        sent_at_recovery = handoff.metrics.counts["sent"]
        scored_at_recovery = len(ledger_questions(tmp_path))
        await wait_for(lambda: handoff.metrics.counts["sent"] >= sent_at_recovery + 20, 20, "hand-offs after the restart")
        await wait_for(lambda: len(ledger_questions(tmp_path)) >= scored_at_recovery + 20, 20, "worker scoring after the restart")
    finally:
        phase["stop"] = True
        await asyncio.wait_for(asyncio.gather(*lanes), 30)
    assert errors == []  # the app never saw an error
    assert handoff.metrics.counts["fallback"] >= 1  # the outage was real and counted

    def scored() -> Counter[str]:
        return Counter(ledger_questions(tmp_path)) + Counter(i.question for i, _ in proxy.collector.scored)

    await wait_for(lambda: set(scored()) >= {question(k) for k in asked}, 30, "every answered interaction scored")
    counts = scored()
    assert set(counts) == {question(k) for k in asked}
    # At most the batch in flight when Redis went away is scored twice (it may have reached Redis before the
    # connection broke, and it is scored locally too); nothing is lost.
    assert sum(counts.values()) - len(counts) <= 256


async def test_a_full_stream_sheds_and_counts_never_blocks(start_proxy, redis_server) -> None:
    # No worker: the stream fills to its bound, then new interactions are shed (counted), the app unaffected.
    proxy = await start_redis_proxy(start_proxy, redis_server, max_length=5)
    assert await asyncio.gather(*(ask(proxy, k) for k in range(12))) == [REPLY] * 12
    handoff = proxy.server.state.scoring
    await wait_for(lambda: handoff.metrics.counts["sent"] + handoff.metrics.counts["stream_full"] == 12, 10, "12 hand-offs")
    assert handoff.metrics.counts["sent"] == 5 and handoff.metrics.counts["stream_full"] == 7
    assert proxy.collector.dropped.count("stream_full") == 7
    assert backlog(redis_server) == (5, 0)


async def _get(url: str) -> str:
    import aiohttp

    async with aiohttp.ClientSession() as session, session.get(url, timeout=aiohttp.ClientTimeout(total=10)) as response:
        return await response.text()


async def test_a_worker_skips_an_unreadable_entry_and_scores_the_rest(start_proxy, redis_server, workers, tmp_path) -> None:
    from ragtap.pipeline.wire import encode
    from ragtap.types import Document, Interaction

    client = redis_server.client()
    client.xgroup_create("ragtap:interactions", "ragtap-scorers", id="0", mkstream=True)
    client.xadd("ragtap:interactions", {"h": "junk", "d": b"not json"})
    client.xadd("ragtap:interactions", {"h": "future", "d": b'{"v": 99}'})
    # An entry exported before (its dedupe key is set: a worker died after exporting, before acknowledging):
    # delivered again, it must not be exported a second time.
    again = Interaction(question="Exported already?", documents=(Document("a document about exports"),), answer="Yes.")
    client.xadd("ragtap:interactions", {"h": "again", "d": encode("again", again)})
    client.set("ragtap:exported:again", "a-dead-worker", ex=600)
    worker = Worker(redis_server, tmp_path, "w")
    workers.append(worker)
    worker.wait_ready()
    proxy = await start_redis_proxy(start_proxy, redis_server)
    assert await asyncio.gather(*(ask(proxy, k) for k in range(3))) == [REPLY] * 3
    await wait_for(lambda: len(ledger_questions(tmp_path)) >= 3, 20, "3 exported interactions")
    await wait_for(lambda: backlog(redis_server) == (0, 0), 10, "the unreadable entries acknowledged too")
    log = worker.log.read_text()
    assert "skipped: not JSON" in log and "wire version 99, this ragtap reads 1" in log
    # The worker's own /metrics (--metrics-port): its entry counts and the verdicts it exported.
    metrics_url = re.search(r"metrics on (http://\S+)", log).group(1)  # type: ignore[union-attr]
    body = await _get(metrics_url)
    assert 'ragtap_worker_entries_total{result="bad_entry"} 2.0' in body
    assert 'ragtap_worker_entries_total{result="scored"} 3.0' in body
    assert 'ragtap_worker_entries_total{result="duplicate"} 1.0' in body
    assert "Exported already?" not in ledger_questions(tmp_path)
    assert re.search(r'ragtap_verdicts_total\{[^}]*\} 3.0', body), body[:3000]
    client.close()


async def test_a_redis_that_stops_answering_costs_the_app_nothing(start_proxy, redis_server) -> None:
    """Redis accepts the connection but does not answer (CLIENT PAUSE ... WRITE blocks scripts): each add is cut at
    `handoff_timeout_ms`, the proxy scores locally meanwhile, and hands off again once Redis answers."""
    proxy = await start_redis_proxy(start_proxy, redis_server, handoff_timeout_ms=100.0)
    handoff = proxy.server.state.scoring
    assert await ask(proxy, 0) == REPLY
    await wait_for(lambda: handoff.metrics.counts["sent"] == 1, 10, "the first hand-off")
    client = redis_server.client()
    # Paused until the test says UNPAUSE (the 60 s only bound a failing test): no race with a timer on a loaded machine.
    client.execute_command("CLIENT", "PAUSE", "60000", "WRITE")
    try:
        assert await asyncio.gather(*(ask(proxy, k) for k in range(1, 6))) == [REPLY] * 5
        await wait_for(lambda: handoff.metrics.counts["fallback"] >= 5, 10, "the paused adds to fall back")
        await proxy.collector.wait_until(lambda: len(proxy.collector.scored) >= 5, 10, "local scoring of the paused ones")
        assert handoff.metrics.counts["sent"] == 1  # none of them reached Redis while it was paused
    finally:
        client.execute_command("CLIENT", "UNPAUSE")
    await wait_for(lambda: handoff.redis_up, 15, "the hand-off to resume")
    sent = handoff.metrics.counts["sent"]
    assert await ask(proxy, 6) == REPLY
    await wait_for(lambda: handoff.metrics.counts["sent"] == sent + 1, 10, "a hand-off after the pause")
    client.close()
