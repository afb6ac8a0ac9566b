"""Scored interactions appended to a JSON-lines file: the log `ragtap score` and `ragtap calibrate` read back.

It holds message content, so it is written only when `[log] interactions_path` is set.  One line per scored
interaction: the texts and the assessment (`ragtap score`'s output format) plus when it happened (`time`, UTC),
the `trace_id` / `span_id`, `latency_ms`, `tokens` (prompt, answer, supporting), `user` and `session`.

The event loop only puts the interaction on a bounded queue; a writer thread redacts it (`[privacy]`: texts,
claims, user and session ids, through the same `Redactor` as the capture store), serialises it and writes the lines
gathered so far as soon as the queue is drained (at most `flush_interval_s` after a line arrives), so the log is
current while ragtap runs, not only at shutdown.  A full queue (the disk stalls) drops lines and counts them
(`dropped`).  Each write is whole lines in one `write()` to a file opened for appending (no buffer that could split
a line), so the workers of `ragtap serve --workers N` append to one log without interleaving their lines.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from datetime import UTC, datetime
from typing import IO, Any

import orjson

from ragtap.exporters.base import Exporter
from ragtap.exporters.store import finished_epoch, trace_ids
from ragtap.privacy import NO_REDACTION, Redactor
from ragtap.records import output_record
from ragtap.types import Assessment, Interaction

log = logging.getLogger("ragtap.exporters")
_STOP = object()


def log_record(interaction: Interaction, assessment: Assessment, redactor: Redactor = NO_REDACTION,
               finished: float | None = None) -> dict[str, Any]:
    """One log line: `ragtap score`'s output record plus the exchange's time, trace, latency, tokens and identity,
    redacted.  `finished`: when the exchange finished (epoch seconds; default: worked out now)."""
    exchange = interaction.exchange
    trace_id, span_id = trace_ids(exchange)
    latency = exchange.total_seconds if exchange is not None else None
    output = exchange.output_tokens if exchange is not None else None
    supporting = exchange.supporting_tokens if exchange is not None else None
    redacted = redactor.interaction(interaction)
    assessment = redactor.assessment(assessment, redacted.answer, redacted.supporting, interaction.documents)
    return {
        "time": datetime.fromtimestamp(finished_epoch(exchange) if finished is None else finished, UTC).isoformat(timespec="milliseconds"),
        "trace_id": trace_id,
        "span_id": span_id,
        "latency_ms": None if latency is None else round(latency * 1000.0, 3),
        "tokens": {
            "prompt": exchange.input_tokens if exchange is not None else None,
            "answer": output - supporting if output is not None and supporting is not None else output,
            "supporting": supporting,
        },
        "user": redactor.identity(exchange.user) if exchange is not None else None,
        "session": redactor.identity(exchange.session) if exchange is not None else None,
        **output_record(redacted, assessment),
    }


class JsonlExporter(Exporter):
    def __init__(self, path: str, *, flush_every: int = 64, flush_interval_s: float = 0.5, queue_size: int = 10_000,
                 close_timeout_s: float = 5.0, redactor: Redactor = NO_REDACTION) -> None:
        self._file: IO[bytes] = open(path, "ab", buffering=0)  # noqa: SIM115 - lives as long as the exporter
        self.path = path
        self.redactor = redactor
        self._flush_every = max(1, flush_every)  # lines between flushes under a steady stream, at most
        self._flush_interval_s = flush_interval_s
        self._close_timeout_s = close_timeout_s
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=queue_size)
        self.written = 0
        self.dropped = 0
        self.failures = 0
        self._closed = False
        self._writer = threading.Thread(target=self._write_loop, name="ragtap-jsonl-write", daemon=True)
        self._writer.start()

    def interaction_scored(self, interaction: Interaction, assessment: Assessment, seconds: float) -> None:
        if self._closed:
            return
        try:  # redacting and serialising happen on the writer thread; the time is taken now
            self._queue.put_nowait((interaction, assessment, finished_epoch(interaction.exchange)))
        except queue.Full:
            self.dropped += 1

    def _write_loop(self) -> None:
        pending: list[bytes] = []
        last_flush = time.monotonic()
        while True:
            try:
                queued = self._queue.get(timeout=self._flush_interval_s)
            except queue.Empty:
                queued = None
            stopping = queued is _STOP
            if queued is not None and not stopping:
                try:
                    interaction, assessment, finished = queued
                    pending.append(orjson.dumps(log_record(interaction, assessment, self.redactor, finished)) + b"\n")
                except Exception as error:  # a line that cannot be written: count, keep going
                    self._failed(error)
            due = time.monotonic() - last_flush >= self._flush_interval_s or len(pending) >= self._flush_every
            if pending and (self._queue.empty() or due or stopping):
                lines, pending = pending, []
                self._write(lines)
                last_flush = time.monotonic()
            if stopping:
                break

    def _write(self, lines: list[bytes]) -> None:
        try:
            data = memoryview(b"".join(lines))
            while data:  # a raw file may take part of a write
                taken = self._file.write(data)
                if not taken:
                    raise OSError("the file took no bytes")
                data = data[taken:]
            self.written += len(lines)
        except Exception as error:  # a full disk: count, keep going (the next write may succeed)
            self._failed(error)

    def _failed(self, error: Exception) -> None:
        self.failures += 1
        if self.failures == 1 or self.failures % 1000 == 0:
            log.warning("interaction log %s: write failed (%d so far): %s", self.path, self.failures, error)

    def shutdown(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._queue.put(_STOP, timeout=self._close_timeout_s)
        except queue.Full:
            pass
        self._writer.join(self._close_timeout_s)
        if self._writer.is_alive():  # the disk stalls: leave the file to the writer rather than close it under it
            log.warning("interaction log %s: writer still busy after %.1f s at shutdown", self.path, self._close_timeout_s)
            return
        try:
            self._file.flush()
            self._file.close()
        except OSError as error:
            log.warning("interaction log %s: closing failed: %s", self.path, error)
