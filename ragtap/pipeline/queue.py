"""The online scoring queue: bounded, off the response path, micro-batched, embedding in a worker thread.

The proxy calls `submit()`, which never waits: when the queue is full the interaction is dropped and counted.
A single consumer task takes whatever is queued (up to `batch_max`), runs `assess_batch` in a thread (the
embedder releases the GIL, so the event loop keeps serving requests), and hands each result to the exporters.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from ragtap.exporters.base import Exporter
from ragtap.pipeline.batch import ScoringPolicy, assess_batch
from ragtap.pipeline.limits import bound
from ragtap.tokens import count_tokens
from ragtap.types import Assessment, Interaction

if TYPE_CHECKING:
    from ragtap.embedding.base import Embedder

log = logging.getLogger("ragtap.scoring")

# The embedding thread yields its core to the event loop.  Linux: SCHED_IDLE, i.e. it runs only when the core has
# nothing else to run; so requests come first, scoring gets the idle time, and when requests saturate the core the
# queue fills and sheds instead of slowing them.  Where SCHED_IDLE is refused, nice 19, which still lets the thread
# take ~1.5% of a saturated core, in slices that cost the event loop ~4% of its throughput at c=32 (refilled caches,
# GIL hand-offs; docs/benchmarks.md "Request path, sixth round").
EMBED_THREAD_NICE = 19


def _lower_thread_priority() -> None:
    """Runs once, in the embedding thread (threads it starts inherit its policy).  Linux only: there the calls take
    a thread id and affect that thread alone (elsewhere the id would be taken for a process id, so nothing is done)."""
    if not sys.platform.startswith("linux"):
        return
    thread = threading.get_native_id()
    try:
        os.sched_setscheduler(thread, os.SCHED_IDLE, os.sched_param(0))
        return
    except OSError:  # refused (a seccomp profile): the nice value instead
        pass
    try:
        os.setpriority(os.PRIO_PROCESS, thread, EMBED_THREAD_NICE)
    except OSError:  # not permitted (a sandbox): scoring still runs, at the normal priority
        pass


class ScoringQueue:
    def __init__(
        self,
        embedder: Embedder,
        policy: ScoringPolicy,
        exporter: Exporter,
        *,
        maxsize: int = 1000,
        batch_max: int = 16,
    ) -> None:
        self.embedder = embedder
        self.policy = policy
        self.exporter = exporter
        self.batch_max = max(1, batch_max)
        self._queue: asyncio.Queue[tuple[Interaction, asyncio.Future[Assessment] | None]] = asyncio.Queue(maxsize)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ragtap-embed", initializer=_lower_thread_priority)
        self._task: asyncio.Task[None] | None = None
        self._busy = 0  # interactions of the batch being scored now (taken off the queue, not yet exported)
        self.scored = 0
        self.dropped = 0
        self.failed = 0

    @property
    def depth(self) -> int:
        return self._queue.qsize()

    def start(self) -> None:
        if self._task is None:
            loop = asyncio.get_running_loop()
            # Load the token tables now, in the worker thread: the first count holds the GIL ~0.2 s.
            loop.run_in_executor(self._executor, count_tokens, "warm-up", None)
            self._task = loop.create_task(self._run(), name="ragtap-scoring")

    def submit(self, interaction: Interaction) -> bool:
        """Queue an interaction for scoring; False (and counted) when the queue is full. Never blocks."""
        return self._put(interaction, None)

    async def score_now(self, interaction: Interaction, timeout: float) -> Assessment | None:
        """Queue an interaction and wait for its assessment (debug headers only: this waits on scoring)."""
        future: asyncio.Future[Assessment] = asyncio.get_running_loop().create_future()
        if not self._put(interaction, future):
            return None
        try:
            return await asyncio.wait_for(future, timeout)
        except (asyncio.TimeoutError, Exception):
            return None

    def _put(self, interaction: Interaction, future: asyncio.Future[Assessment] | None) -> bool:
        # Full (requests outrunning scoring: most of them then): dropped before any work is spent on it.
        if self._queue.full():
            self._drop_full()
            return False
        interaction = bound(interaction, self.policy.limits)  # O(max_documents): a document bomb is cut here
        if interaction.enqueued_at is None:
            interaction.enqueued_at = time.perf_counter()
        try:
            self._queue.put_nowait((interaction, future))
        except asyncio.QueueFull:
            self._drop_full()
            return False
        self.exporter.queue_depth(self._queue.qsize())
        return True

    def _drop_full(self) -> None:
        self.dropped += 1
        self.exporter.scoring_dropped("queue_full")

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            batch = [await self._queue.get()]
            while len(batch) < self.batch_max and not self._queue.empty():
                batch.append(self._queue.get_nowait())
            self.exporter.queue_depth(self._queue.qsize())
            interactions = [item for item, _ in batch]
            self._busy = len(batch)
            try:
                results = await loop.run_in_executor(self._executor, self._assess, interactions)
            except Exception as error:  # the embedder or the core failed: count, never propagate
                log.warning("scoring failed for %d interactions: %s", len(batch), type(error).__name__)
                self._busy = 0
                for item, future in batch:
                    self.failed += 1
                    self.exporter.scoring_failed(item, error)
                    if future is not None and not future.done():
                        future.set_exception(error)
                continue
            self._busy = 0
            now = time.perf_counter()
            for (item, future), assessment in zip(batch, results):
                self.scored += 1
                self.exporter.interaction_scored(item, assessment, now - (item.enqueued_at or now))
                if future is not None and not future.done():
                    future.set_result(assessment)

    def _assess(self, interactions: list[Interaction]) -> list[Assessment]:
        return assess_batch(interactions, self.embedder, self.policy)

    async def stop(self, drain_timeout: float = 5.0) -> None:
        """Let the worker drain what is queued and the batch it is scoring (bounded by `drain_timeout`), then stop
        it.  Whatever is left, the batch cut short included, is counted as dropped ("shutdown")."""
        deadline = time.monotonic() + drain_timeout
        while (
            (not self._queue.empty() or self._busy)
            and time.monotonic() < deadline
            and self._task is not None
            and not self._task.done()
        ):
            await asyncio.sleep(0.01)
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass
            self._task = None
        left = self._queue.qsize() + self._busy
        self._busy = 0
        self.dropped += left
        for _ in range(left):
            self.exporter.scoring_dropped("shutdown")
        self._executor.shutdown(wait=False, cancel_futures=True)
