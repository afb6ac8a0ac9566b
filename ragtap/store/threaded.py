"""The capture store behind threads: a bounded write queue drained by a writer thread, reads on a reader thread.

The event loop never touches the database.  `offer()` puts a row on a bounded queue and returns at once; when
the queue is full (the database is slow, locked or unreachable) the row is dropped and counted.  The writer
thread writes whatever is queued in one transaction (so batches grow with the load), prunes every
`prune_every_s`, and on a failure (full disk, lock timeout, lost server) drops that batch, counts it, logs at
most one line per `LOG_EVERY_S`, closes its connection and tries a new one after a backoff: the store recovers by
itself when the fault clears.  Reads and labels run on a single reader thread with a connection of its own
(WAL lets SQLite readers proceed while the writer writes), awaited with `run_in_executor`.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ragtap.privacy import NO_REDACTION, Redactor
from ragtap.store.base import CapturedInteraction, InvalidLabel, Label, Page, StoreError, StoreQuery, UnknownInteraction
from ragtap.store.redact import redact_captured, redact_label
from ragtap.store.settings import StoreSettings
from ragtap.store.sql import SqlConnection

log = logging.getLogger("ragtap.store")
LOG_EVERY_S = 60.0  # at most one log line per kind of fault per minute
BACKOFF_FIRST_S = 0.2
BACKOFF_MAX_S = 2.0
_STOP = object()
T = TypeVar("T")


@dataclass
class StoreStats:
    """Counters read by the Prometheus exporter at scrape time (monotonic, except `queue_depth`)."""

    written: int = 0
    dropped: dict[str, int] = field(default_factory=lambda: {"queue_full": 0, "write_failed": 0, "shutdown": 0})
    failures: int = 0  # failed writer transactions (each drops its batch)
    read_failures: int = 0
    pruned: int = 0
    recovered: int = 0  # times the writer got a working connection back after a failure
    # The database file went away under ragtap and a new one was started, by why: deleted, replaced, corrupt.
    reopened: dict[str, int] = field(default_factory=dict)
    last_error: str | None = None
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add_written(self, n: int) -> None:
        with self.lock:  # the writer thread and the reader thread (add_many) both count
            self.written += n

    def drop(self, reason: str, n: int = 1) -> None:
        with self.lock:
            self.dropped[reason] = self.dropped.get(reason, 0) + n

    def reopen(self, reason: str) -> None:
        with self.lock:
            self.reopened[reason] = self.reopened.get(reason, 0) + 1


class _PartlyWritten(Exception):
    """A batch written row by row failed part-way for a reason that is not the row's (the database went away)."""

    def __init__(self, written: int) -> None:
        super().__init__(f"{written} rows written before the failure")
        self.written = written


class _RateLimitedLog:
    def __init__(self) -> None:
        self._last: dict[str, float] = {}
        self._suppressed: dict[str, int] = {}

    def warning(self, kind: str, message: str, *args: Any) -> None:
        now = time.monotonic()
        if now - self._last.get(kind, -LOG_EVERY_S) < LOG_EVERY_S:
            self._suppressed[kind] = self._suppressed.get(kind, 0) + 1
            return
        suppressed = self._suppressed.pop(kind, 0)
        self._last[kind] = now
        log.warning(message + (f" ({suppressed} similar since the last line)" if suppressed else ""), *args)


class ThreadedStore:
    """A `CaptureStore` over any `SqlConnection` factory (SQLite or PostgreSQL)."""

    def __init__(self, connect: Callable[[], SqlConnection], settings: StoreSettings, *, describe: str,
                 on_broken: Callable[[BaseException], bool] | None = None, redactor: Redactor = NO_REDACTION,
                 prunes: bool = True) -> None:
        self._connect = connect
        self._prunes = prunes  # false: another process writing to the same database prunes it
        self.settings = settings
        self.describe = describe  # where the store is, for log lines (never a password)
        self._on_broken = on_broken  # called with a write error; True: the backend repaired itself (retry at once)
        self.stats = StoreStats()
        self.redactor = redactor  # applied on our threads, to every row and label before it is written
        self._lost_files: set[tuple[int, int]] = set()  # database files seen deleted or replaced (counted once each)
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=settings.queue_size)
        self._log = _RateLimitedLog()
        self._writer_connection: SqlConnection | None = None
        self._reader_connection: SqlConnection | None = None
        self._reader = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ragtap-store-read")
        self._closed = False
        self._stop = threading.Event()
        self._writer = threading.Thread(target=self._write_loop, name="ragtap-store-write", daemon=True)
        self._writer.start()

    # ------------------------------------------------------------------------------------------ the write path
    @property
    def queue_depth(self) -> int:
        return self._queue.qsize()

    def offer(self, item: CapturedInteraction) -> bool:
        if self._closed:
            self.stats.drop("shutdown")
            return False
        try:
            self._queue.put_nowait(item)
        except queue.Full:
            self.stats.drop("queue_full")
            self._log.warning("queue_full", "capture store %s: write queue full (%d rows), dropping rows", self.describe,
                              self.settings.queue_size)
            return False
        return True

    def _take_batch(self, timeout: float) -> tuple[list[CapturedInteraction], bool]:
        """Up to batch_max queued rows (waiting up to `timeout` for the first); True when asked to stop."""
        batch: list[CapturedInteraction] = []
        try:
            first = self._queue.get(timeout=timeout)
        except queue.Empty:
            return batch, False
        if first is _STOP:
            return batch, True
        batch.append(first)
        while len(batch) < self.settings.batch_max:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is _STOP:
                return batch, True
            batch.append(item)
        return batch, False

    def _write_loop(self) -> None:
        backoff = 0.0
        next_prune = time.monotonic() + min(5.0, self.settings.prune_every_s) if self._prunes else float("inf")
        stopping = False
        while not stopping:
            if backoff:
                # Let the fault clear; rows keep queueing meanwhile (and are dropped, counted, when it is full).
                self._stop.wait(backoff)
            timeout = max(0.05, min(1.0, next_prune - time.monotonic()))
            batch, stopping = self._take_batch(timeout)
            if stopping:  # write what is still queued, then leave
                batch.extend(self._drain())
            prune_due = time.monotonic() >= next_prune and not stopping
            if not batch and not prune_due:
                self._release(0, stopping)
                continue  # nothing touched the database: a backoff stays as it was
            written = 0
            try:
                if batch:
                    written = self._write_batch(batch)
                if prune_due:
                    next_prune = time.monotonic() + self.settings.prune_every_s
                    self.stats.pruned += self._writer_db().prune(self.settings.max_rows, self.settings.max_age_days * 86400, time.time())
                if backoff:
                    self.stats.recovered += 1
                    log.warning("capture store %s: writing again", self.describe)
                backoff = 0.0
            except Exception as error:  # a full disk, a lock timeout, a lost server: drop, count, retry later
                written = error.written if isinstance(error, _PartlyWritten) else written
                cause = error.__cause__ if isinstance(error, _PartlyWritten) and error.__cause__ is not None else error
                self.stats.failures += 1
                self.stats.drop("write_failed", len(batch) - written)
                self.stats.last_error = f"{type(cause).__name__}: {str(cause)[:200]}"
                self._log.warning("write_failed", "capture store %s: write failed, %d rows dropped: %s", self.describe,
                                  len(batch) - written, self.stats.last_error)
                self._close_writer()
                repaired = self._on_broken is not None and self._on_broken(cause)
                if repaired:
                    self.stats.reopen("corrupt")
                backoff = 0.0 if repaired else min(BACKOFF_MAX_S, max(BACKOFF_FIRST_S, backoff * 2))
            finally:
                self._release(len(batch), stopping)
        self._close_writer()

    def _release(self, rows: int, stopping: bool) -> None:
        """Mark the rows taken from the queue (and the stop marker) as handled, for `flush()`."""
        for _ in range(rows + (1 if stopping else 0)):
            self._queue.task_done()

    def _drain(self) -> list[CapturedInteraction]:
        rest = []
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return rest
            if item is not _STOP:
                rest.append(item)

    def _write_batch(self, batch: list[CapturedInteraction]) -> int:
        """Redact and write one batch in one transaction; returns the rows written (and counts them).

        A row the database refuses by itself (a value it cannot hold, a text too long for its full-text index)
        must not cost the rows written with it: the batch is then written again row by row, each in its own
        transaction, and only the refused rows are dropped (counted as `write_failed`)."""
        rows = [redact_captured(item, self.redactor) for item in batch]
        db = self._writer_db()
        try:
            written = db.add_many(rows)
        except Exception as error:
            if len(rows) == 1 or not db.row_error(error):
                raise
            written = 0
            for row in rows:
                try:
                    written += db.add_many([row])
                except Exception as row_error:
                    if not db.row_error(row_error):
                        self.stats.add_written(written)
                        raise _PartlyWritten(written) from row_error
                    self.stats.failures += 1
                    self.stats.drop("write_failed")
                    self.stats.last_error = f"{type(row_error).__name__}: {str(row_error)[:200]}"
                    self._log.warning("row_refused", "capture store %s: one row refused, dropped (the rest of its batch "
                                      "is written): %s", self.describe, self.stats.last_error)
        self.stats.add_written(written)
        return written

    def _writer_db(self) -> SqlConnection:
        if self._writer_connection is not None and self._file_gone(self._writer_connection):
            self._close_writer()
        if self._writer_connection is None:
            self._writer_connection = self._connect()
        return self._writer_connection

    def _file_gone(self, db: SqlConnection) -> bool:
        """True when the connection's database file was deleted or replaced under it (SQLite): the caller drops
        the connection and opens the file at the path again (a new one when it was deleted).  Logged and counted
        once per lost file, whichever thread (writer or reader) sees it first."""
        gone = db.gone()
        if gone is None:
            return False
        why, file_id = gone
        with self.stats.lock:
            first = file_id not in self._lost_files
            self._lost_files.add(file_id)
        if first:
            self.stats.reopen(why)
            log.error("capture store %s: the database file was %s while ragtap ran (what it held is gone with it): "
                      "writing to a new file at that path", self.describe, why)
        return True

    def _close_writer(self) -> None:
        if self._writer_connection is not None:
            self._writer_connection.close()
            self._writer_connection = None

    # ------------------------------------------------------------------------------------------- the read path
    def _read(self, operation: Callable[[SqlConnection], T]) -> T:
        """Runs on the reader thread: one retry on a fresh connection (the old one may be stale after a fault)."""
        for attempt in (1, 2):
            try:
                if self._reader_connection is not None and self._file_gone(self._reader_connection):
                    self._reader_connection.close()
                    self._reader_connection = None
                if self._reader_connection is None:
                    self._reader_connection = self._connect()
                return operation(self._reader_connection)
            except (StoreError, InvalidLabel, UnknownInteraction):
                raise
            except Exception as error:
                if self._reader_connection is not None:
                    self._reader_connection.close()
                    self._reader_connection = None
                if attempt == 2:
                    self.stats.read_failures += 1
                    self._log.warning("read_failed", "capture store %s: read failed: %s: %s", self.describe,
                                      type(error).__name__, str(error)[:200])
                    raise StoreError(f"the capture store is unavailable ({type(error).__name__}: {str(error)[:200]})") from error
        raise AssertionError("unreachable")

    async def _run(self, operation: Callable[[SqlConnection], T]) -> T:
        if self._closed:
            raise StoreError("the capture store is closed")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._reader, self._read, operation)

    async def add_many(self, items: Sequence[CapturedInteraction]) -> int:
        items = list(items)
        written = await self._run(lambda db: db.add_many([redact_captured(item, self.redactor) for item in items]))
        self.stats.add_written(written)
        return written

    async def query(self, query: StoreQuery) -> Page:
        query.check()
        return await self._run(lambda db: db.query(query))

    async def get(self, interaction_id: str) -> CapturedInteraction | None:
        return await self._run(lambda db: db.get(interaction_id))

    async def add_label(self, label: Label) -> Label:
        label.check()
        return await self._run(lambda db: db.add_label(redact_label(label, self.redactor)))

    async def labelled(self, limit: int = 100_000) -> list[CapturedInteraction]:
        return await self._run(lambda db: db.labelled(limit))

    async def count(self, query: StoreQuery | None = None) -> int:
        return await self._run(lambda db: db.count(query))

    async def prune(self) -> int:
        """Prune now (the writer thread also does it every `prune_every_s`)."""
        s = self.settings
        deleted = await self._run(lambda db: db.prune(s.max_rows, s.max_age_days * 86400, time.time()))
        self.stats.pruned += deleted
        return deleted

    async def flush(self, timeout: float = 10.0) -> bool:
        """Wait (bounded) until every offered row was written or dropped; True when it got there."""
        deadline = time.monotonic() + timeout
        while self._queue.unfinished_tasks > 0:
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(0.02)
        return True

    # ---------------------------------------------------------------------------------------------- closing
    def close_sync(self, timeout: float = 5.0) -> None:
        """Stop taking rows, let the writer write what is queued (up to `timeout`), close both connections."""
        if self._closed:
            return
        self._closed = True
        self._stop.set()  # cut a backoff short
        try:
            self._queue.put(_STOP, timeout=timeout)
        except queue.Full:
            pass
        self._writer.join(timeout)
        if self._writer.is_alive():
            left = self._queue.qsize()
            self.stats.drop("shutdown", left)
            log.warning("capture store %s: writer still busy after %.1f s at shutdown; %d queued rows not written",
                        self.describe, timeout, left)
        reader = self._reader_connection

        def close_reader() -> None:
            if reader is not None:
                reader.close()

        self._reader.submit(close_reader)
        self._reader.shutdown(wait=True, cancel_futures=False)

    async def close(self) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.close_sync)
