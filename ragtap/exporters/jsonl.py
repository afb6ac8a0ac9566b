"""Scored interactions appended to a JSON-lines file: the log `ragtap score` and `ragtap calibrate` read back.

It holds message content, so it is written only when `[log] interactions_path` is set.  One line per scored
interaction: the texts and the assessment (`ragtap score`'s output format) plus when it happened (`time`, UTC),
the `trace_id` / `span_id`, `latency_ms`, `tokens` (prompt, answer, supporting), `user` and `session`.

The event loop only puts the record on a bounded queue; a writer thread serialises it and writes the lines
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
from ragtap.records import output_record
from ragtap.types import Assessment, Interaction

log = logging.getLogger("ragtap.exporters")
_STOP = object()


def log_record(interaction: Interaction, assessment: Assessment) -> dict[str, Any]:
    """One log line: `ragtap score`'s output record plus the exchange's time, trace, latency, tokens and identity."""
    exchange = interaction.exchange
    trace_id, span_id = trace_ids(exchange)
    latency = exchange.total_seconds if exchange is not None else None
    output = exchange.output_tokens if exchange is not None else None
    supporting = exchange.supporting_tokens if exchange is not None else None
    return {
        "time": datetime.fromtimestamp(finished_epoch(exchange), UTC).isoformat(timespec="milliseconds"),
        "trace_id": trace_id,
        "span_id": span_id,
        "latency_ms": None if latency is None else round(latency * 1000.0, 3),
        "tokens": {
            "prompt": exchange.input_tokens if exchange is not None else None,
            "answer": output - supporting if output is not None and supporting is not None else output,
            "supporting": supporting,
        },
        "user": exchange.user if exchange is not None else None,
        "session": exchange.session if exchange is not None else None,
        **output_record(interaction, assessment),
    }


class JsonlExporter(Exporter):
    def __init__(self, path: str, *, flush_every: int = 64, flush_interval_s: float = 0.5, queue_size: int = 10_000,
                 close_timeout_s: float = 5.0) -> None:
        self._file: IO[bytes] = open(path, "ab", buffering=0)  # noqa: SIM115 - lives as long as the exporter
        self.path = path
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
        try:
            self._queue.put_nowait(log_record(interaction, assessment))
        except queue.Full:
            self.dropped += 1

    def _write_loop(self) -> None:
        pending: list[bytes] = []
        last_flush = time.monotonic()
        while True:
            try:
                record = self._queue.get(timeout=self._flush_interval_s)
            except queue.Empty:
                record = None
            stopping = record is _STOP
            if record is not None and not stopping:
                pending.append(orjson.dumps(record) + b"\n")
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
        except (OSError, ValueError) as error:  # a full disk: count, keep going (the next write may succeed)
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
