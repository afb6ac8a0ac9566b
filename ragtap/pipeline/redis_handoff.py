"""The proxy's side of the Redis hand-off: interactions go to a Redis stream for `ragtap worker` to score.

`submit()` is what the proxy calls after a response, as with the in-process queue, and it never waits: it puts
the interaction in a bounded outbox.  A sender task waits `linger_ms` after the first one, takes what the outbox
holds, encodes it (pipeline/wire.py) and adds it to the stream with one script call per batch, bounded by
`handoff_timeout_ms`.  Nothing here can
fail a request:

- the stream holds `max_length` unscored entries: beyond it an entry is shed and counted (`stream_full`);
- Redis down, slow or refusing (a timeout, a refused connection, an error reply): the batch in hand and every
  interaction submitted while Redis is down go to the local in-process queue (scored here, shed when full: the
  embedded behaviour), counted as `fallback`; a probe retries with exponential backoff up to
  `reconnect_max_s`, and when Redis answers again the hand-off resumes;
- the outbox full (Redis slower than the traffic): local fallback, counted.

A batch whose add timed out may have reached Redis anyway; it is then also scored locally (at most one batch
per outage scored twice, never lost).  Debug-header requests (`score_now`) are scored locally: they wait for
their verdict, which a remote worker cannot give back.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import os
import time
from typing import TYPE_CHECKING, Any

from ragtap.config import RedisQueueSettings
from ragtap.exporters.base import Exporter
from ragtap.pipeline.limits import bound
from ragtap.pipeline.queue import ScoringQueue
from ragtap.pipeline.redis_stream import AddScript, connect, ensure_group
from ragtap.pipeline.wire import encode
from ragtap.types import Assessment, Interaction

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

log = logging.getLogger("ragtap.handoff")

SEND_BATCH_MAX = 256  # entries per script call: one round trip each
RECONNECT_FIRST_S = 0.05


class HandoffMetrics:
    """`ragtap_handoff_total{result}` and `ragtap_handoff_redis_up`, on the proxy's Prometheus registry."""

    def __init__(self, registry: CollectorRegistry | None) -> None:
        self.counts: collections.Counter[str] = collections.Counter()
        self._counter: Any = None
        self._up: Any = None
        if registry is not None:
            from prometheus_client import Counter, Gauge

            self._counter = Counter(
                "ragtap_handoff", "Interactions handed to scoring through Redis, by result: sent, stream_full (shed), "
                "fallback (scored locally: Redis down or the outbox full).", ["result"], registry=registry,
            )
            # Several workers (`ragtap serve --workers N`): 0 as soon as one of them falls back.
            self._up = Gauge("ragtap_handoff_redis_up", "1 while the proxy hands interactions to Redis, 0 while it falls back.",
                             registry=registry, multiprocess_mode="livemin")
            self._up.set(1)

    def count(self, result: str, n: int = 1) -> None:
        self.counts[result] += n
        if self._counter is not None:
            self._counter.labels(result).inc(n)

    def set_up(self, up: bool) -> None:
        if self._up is not None:
            self._up.set(1 if up else 0)


class RedisHandoff:
    """Same interface as `ScoringQueue` (submit, score_now, depth, start, stop), scoring elsewhere."""

    def __init__(
        self,
        url: str,
        settings: RedisQueueSettings,
        fallback: ScoringQueue,
        exporter: Exporter,
        *,
        registry: CollectorRegistry | None = None,
    ) -> None:
        self.url = url
        self.settings = settings
        self.fallback = fallback  # the in-process queue: outages and debug requests
        self.exporter = exporter
        self.policy = fallback.policy
        self.metrics = HandoffMetrics(registry)
        self._outbox: collections.deque[tuple[str, Interaction]] = collections.deque()
        self._wake = asyncio.Event()
        self._client: Any = None
        self._up = True  # optimistic: the first failure switches to the fallback
        self._task: asyncio.Task[None] | None = None
        self._sending = 0
        self._timeout = settings.handoff_timeout_ms / 1000
        self._linger = settings.linger_ms / 1000
        self._script: Any = None

    @property
    def redis_up(self) -> bool:
        return self._up

    @property
    def depth(self) -> int:
        return len(self._outbox) + self._sending + self.fallback.depth

    def start(self) -> None:
        if self._task is not None:
            return
        self.fallback.start()
        # The connect timeout is a little longer than one add: a fresh connection costs a handshake.
        self._client = connect(self.url, timeout_s=max(self._timeout * 4, 0.2), single_connection=True)
        self._script = AddScript(self._client)
        self._task = asyncio.get_running_loop().create_task(self._run(), name="ragtap-handoff")

    def submit(self, interaction: Interaction) -> bool:
        """Hand an interaction on (to Redis, or to local scoring while Redis is down).  Never blocks."""
        if not self._up or len(self._outbox) >= self.settings.outbox_size:
            self.metrics.count("fallback")
            return self.fallback.submit(interaction)
        interaction = bound(interaction, self.policy.limits)
        if interaction.enqueued_at is None:
            interaction.enqueued_at = time.perf_counter()
        self._outbox.append((os.urandom(12).hex(), interaction))
        self._wake.set()
        return True

    async def score_now(self, interaction: Interaction, timeout: float) -> Assessment | None:
        return await self.fallback.score_now(interaction, timeout)

    # ---------------------------------------------------------------------------------------------- sending
    async def _run(self) -> None:
        try:  # the group from the start, so that a stream filled before any worker exists is read from its first entry
            await asyncio.wait_for(ensure_group(self._client, self.settings), max(self._timeout * 4, 0.2))
        except Exception as error:
            self._go_down(error)
        while True:
            if not self._up:
                await self._reconnect()
                continue
            if not self._outbox:
                self._wake.clear()
                await self._wake.wait()
                if self._linger > 0 and len(self._outbox) < SEND_BATCH_MAX:
                    await asyncio.sleep(self._linger)  # gather more: one Redis call for many interactions
                continue
            batch = [self._outbox.popleft() for _ in range(min(len(self._outbox), SEND_BATCH_MAX))]
            self._sending = len(batch)
            try:
                added = await self._send(batch)
            except asyncio.CancelledError:  # stopped past the drain deadline with a batch in hand
                for _ in batch:
                    self.exporter.scoring_dropped("shutdown")
                raise
            except Exception as error:  # any failure of Redis: score these here, and probe until it answers
                self._sending = 0
                self._go_down(error)
                for _, interaction in batch:
                    self.fallback.submit(interaction)
                self.metrics.count("fallback", len(batch))
                continue
            self._sending = 0
            sent = sum(1 for flag in added if flag)
            self.metrics.count("sent", sent)
            if sent < len(batch):
                self.metrics.count("stream_full", len(batch) - sent)
                for _ in range(len(batch) - sent):
                    self.exporter.scoring_dropped("stream_full")

    async def _send(self, batch: list[tuple[str, Interaction]]) -> list[int]:
        entries = [(handoff_id, encode(handoff_id, interaction)) for handoff_id, interaction in batch]
        # A batch of many entries may take longer than one: the bound grows with it (1 ms per 16 entries).
        timeout = self._timeout + len(batch) / 16000
        async with asyncio.timeout(timeout):  # (no extra task, unlike wait_for: this runs once per request at low load)
            return await self._script(self.settings.stream, self.settings.max_length, entries)

    def _go_down(self, error: BaseException) -> None:
        if self._up:
            log.warning("Redis hand-off failed (%s): scoring locally until %s answers again",
                        type(error).__name__, _without_password(self.url))
        self._up = False
        self.metrics.set_up(False)
        # What is still in the outbox goes to local scoring too: it would wait for the whole outage otherwise.
        moved = len(self._outbox)
        while self._outbox:
            self.fallback.submit(self._outbox.popleft()[1])
        if moved:
            self.metrics.count("fallback", moved)

    async def _reconnect(self) -> None:
        """Probe with exponential backoff until Redis answers (bounded per try, unbounded in count: an outage may
        last hours, and each try costs one PING every `reconnect_max_s` at most)."""
        delay = RECONNECT_FIRST_S
        while True:
            await asyncio.sleep(delay)
            try:
                await asyncio.wait_for(self._client.ping(), max(self._timeout * 4, 0.2))
                await asyncio.wait_for(ensure_group(self._client, self.settings), max(self._timeout * 4, 0.2))
            except Exception:
                delay = min(delay * 2, self.settings.reconnect_max_s)
                continue
            log.warning("Redis hand-off resumed (%s)", _without_password(self.url))
            self._up = True
            self.metrics.set_up(True)
            return

    async def stop(self, drain_timeout: float = 5.0) -> None:
        """Send what the outbox holds (bounded by `drain_timeout`), then stop; the local queue drains in what is
        left.  What could not be sent is scored locally or, past the deadline, counted as dropped ("shutdown")."""
        deadline = time.monotonic() + drain_timeout
        while (self._outbox or self._sending) and self._up and time.monotonic() < deadline:
            await asyncio.sleep(0.005)
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass
            self._task = None
        while self._outbox:
            self.fallback.submit(self._outbox.popleft()[1])
            self.metrics.count("fallback")
        await self.fallback.stop(drain_timeout=max(0.0, deadline - time.monotonic()))
        if self._client is not None:
            try:
                await asyncio.wait_for(self._client.aclose(), 1.0)
            except Exception:
                pass
            self._client = None


def _without_password(url: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return url if parts.password is None else url.replace(f":{parts.password}@", ":***@")
