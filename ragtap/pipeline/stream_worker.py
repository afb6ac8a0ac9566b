"""`ragtap worker`'s loop: read interactions from the Redis stream as one consumer of a group, score them in
batches with the same code as the in-process queue (pipeline/batch.py), export, acknowledge.

One pass of the loop:

1. every `claim_idle_s / 2`, XAUTOCLAIM entries another consumer read but did not acknowledge for `claim_idle_s`
   (a worker that died, was killed, or lost its network): they are scored here, so a crash loses nothing;
2. otherwise XREADGROUP up to `batch_max` new entries (blocking up to `block_ms`);
3. score the batch in a worker thread (the event loop keeps serving /metrics);
4. for each entry SET `ragtap:exported:<hand-off id>` NX with a TTL: only the consumer that sets it exports, so
   an entry delivered twice (claimed from a worker that was slow, not dead; or re-read after a Redis failover)
   is exported once;
5. export (the exporters' `interaction_scored`), then XACK and XDEL the entries (the stream holds only the
   backlog: see pipeline/redis_stream.py).

A crash between 4 and 5 (a sub-millisecond window: the exports are in-process calls) loses the exports of that
batch; a crash anywhere else loses nothing.  An entry that is not a ragtap interaction of a version this worker
reads is logged in one line, counted and acknowledged (it would otherwise come back forever).  Redis failing
(down, restarted, failing over) never ends the loop: the worker backs off, reconnects and re-creates the group
if the restart lost it.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from ragtap.config import RedisQueueSettings
from ragtap.exporters.base import Exporter
from ragtap.pipeline.batch import ScoringPolicy, assess_batch
from ragtap.pipeline.redis_stream import DEDUPE_PREFIX, connect, ensure_group
from ragtap.pipeline.wire import WireError, WireInteraction, decode
from ragtap.types import Assessment

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

    from ragtap.embedding.base import Embedder

log = logging.getLogger("ragtap.worker")

RECONNECT_FIRST_S = 0.05


class WorkerMetrics:
    """`ragtap_worker_entries_total{result}` (scored, duplicate, bad_entry, failed) and `..._batch_size`."""

    def __init__(self, registry: CollectorRegistry | None) -> None:
        self.counts: collections.Counter[str] = collections.Counter()
        self._entries: Any = None
        self._claimed: Any = None
        if registry is not None:
            from prometheus_client import Counter

            self._entries = Counter("ragtap_worker_entries", "Stream entries a worker handled, by result: scored (and exported), "
                                    "duplicate (exported before: not again), bad_entry (not readable), failed (scoring raised).",
                                    ["result"], registry=registry)
            self._claimed = Counter("ragtap_worker_claimed_entries", "Entries claimed from consumers that stopped acknowledging.",
                                    registry=registry)

    def count(self, result: str, n: int = 1) -> None:
        if n <= 0:
            return
        self.counts[result] += n
        if self._entries is not None:
            self._entries.labels(result).inc(n)

    def claimed(self, n: int) -> None:
        self.counts["claimed"] += n
        if self._claimed is not None and n:
            self._claimed.inc(n)


class StreamWorker:
    def __init__(
        self,
        url: str,
        settings: RedisQueueSettings,
        embedder: Embedder,
        policy: ScoringPolicy,
        exporter: Exporter,
        *,
        consumer: str,
        batch_max: int = 16,
        registry: CollectorRegistry | None = None,
    ) -> None:
        self.url = url
        self.settings = settings
        self.embedder = embedder
        self.policy = policy
        self.exporter = exporter
        self.consumer = consumer
        self.batch_max = max(1, batch_max)
        self.metrics = WorkerMetrics(registry)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ragtap-worker-embed")
        self._client: Any = None
        self._next_claim = 0.0
        self._claim_cursor = "0-0"

    async def run(self, stop: asyncio.Event) -> None:
        """Until `stop` is set: the current batch is finished (scored, exported, acknowledged) first."""
        # A blocked read must outlast its own block time: the socket timeout is that plus a margin.
        self._client = connect(self.url, timeout_s=self.settings.block_ms / 1000 + 5.0)
        delay = RECONNECT_FIRST_S
        ready = False
        try:
            while not stop.is_set():
                try:
                    if not ready:
                        await ensure_group(self._client, self.settings)
                        ready = True
                        log.info("worker %s reading %s as group %s", self.consumer, self.settings.stream, self.settings.group)
                    await self._one_pass()
                    delay = RECONNECT_FIRST_S
                except Exception as error:  # Redis down or restarted (the group may be gone): back off, start over
                    if "NOGROUP" not in str(error):
                        log.warning("worker %s: Redis failed (%s: %s); retrying in %.2f s", self.consumer, type(error).__name__,
                                    str(error)[:120], delay)
                    ready = False
                    try:
                        await asyncio.wait_for(stop.wait(), delay)
                    except TimeoutError:
                        pass
                    delay = min(delay * 2, self.settings.reconnect_max_s)
        finally:
            try:
                await asyncio.wait_for(self._client.aclose(), 1.0)
            except Exception:
                pass
            self._executor.shutdown(wait=False, cancel_futures=True)

    async def _one_pass(self) -> None:
        now = time.monotonic()
        if now >= self._next_claim:
            self._next_claim = now + self.settings.claim_idle_s / 2
            entries = await self._claim()
            if entries:
                await self._process(entries)
                self._next_claim = 0.0  # there may be more: claim again before reading new ones
                return
        reply = await self._client.xreadgroup(
            self.settings.group, self.consumer, {self.settings.stream: ">"}, count=self.batch_max, block=self.settings.block_ms,
        )
        entries = [entry for _stream, stream_entries in (reply or []) for entry in stream_entries]
        if entries:
            await self._process(entries)

    async def _claim(self) -> list[tuple[bytes, dict[bytes, bytes]]]:
        reply = await self._client.xautoclaim(
            self.settings.stream, self.settings.group, self.consumer, int(self.settings.claim_idle_s * 1000),
            start_id=self._claim_cursor, count=self.batch_max,
        )
        cursor, entries = reply[0], reply[1]
        self._claim_cursor = cursor.decode() if isinstance(cursor, bytes) else str(cursor)
        # Entries deleted while pending (Redis 7 lists their ids third) come back as (id, None): nothing to score.
        live = [entry for entry in entries if entry and entry[1]]
        self.metrics.claimed(len(live))
        if live:
            log.info("worker %s claimed %d unacknowledged entries", self.consumer, len(live))
        return live

    async def _process(self, entries: list[tuple[bytes, dict[bytes, bytes]]]) -> None:
        entry_ids = [entry_id for entry_id, _ in entries]
        readable: list[tuple[bytes, WireInteraction]] = []
        for entry_id, fields in entries:
            try:
                readable.append((entry_id, decode(fields[b"d"])))
            except (WireError, KeyError, TypeError) as error:
                log.warning("stream entry %s skipped: %s", entry_id.decode(errors="replace"), error)
                self.metrics.count("bad_entry")
        if readable:
            await self._score_and_export(readable)
        await self._acknowledge(entry_ids)

    async def _score_and_export(self, readable: list[tuple[bytes, WireInteraction]]) -> None:
        interactions = [wire.interaction for _, wire in readable]
        loop = asyncio.get_running_loop()
        try:
            results: list[Assessment] = await loop.run_in_executor(self._executor, assess_batch, interactions, self.embedder, self.policy)
        except Exception as error:  # the embedder or the core failed: counted, acknowledged (as the in-process queue)
            log.warning("scoring failed for %d interactions: %s", len(interactions), type(error).__name__)
            for item in interactions:
                self.exporter.scoring_failed(item, error)
            self.metrics.count("failed", len(interactions))
            return
        pipe = self._client.pipeline(transaction=False)
        for _, wire in readable:
            pipe.set(DEDUPE_PREFIX + wire.handoff_id, self.consumer, nx=True, ex=self.settings.dedupe_ttl_s)
        first = await pipe.execute()
        now = time.perf_counter()
        for (_, wire), assessment, is_first in zip(readable, results, first):
            if not is_first:
                self.metrics.count("duplicate")
                continue
            item = wire.interaction
            self.exporter.interaction_scored(item, assessment, now - (item.enqueued_at or now))
            self.metrics.count("scored")

    async def _acknowledge(self, entry_ids: list[bytes]) -> None:
        pipe = self._client.pipeline(transaction=False)
        pipe.xack(self.settings.stream, self.settings.group, *entry_ids)
        pipe.xdel(self.settings.stream, *entry_ids)
        await pipe.execute()
