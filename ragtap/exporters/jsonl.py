"""Scored interactions appended to a JSON-lines file: the log `ragtap score` and `ragtap calibrate` read back.

It holds message content, so it is written only when `[log] interactions_path` is set.  Writes are buffered
and flushed at shutdown and every `flush_every` lines, so the event loop does not wait on the disk per request.
"""

from __future__ import annotations

from typing import IO

import orjson

from ragtap.exporters.base import Exporter
from ragtap.records import output_record
from ragtap.types import Assessment, Interaction


class JsonlExporter(Exporter):
    def __init__(self, path: str, *, flush_every: int = 64) -> None:
        self._file: IO[bytes] = open(path, "ab")  # noqa: SIM115 - lives as long as the exporter
        self._flush_every = flush_every
        self._pending = 0

    def interaction_scored(self, interaction: Interaction, assessment: Assessment, seconds: float) -> None:
        self._file.write(orjson.dumps(output_record(interaction, assessment)) + b"\n")
        self._pending += 1
        if self._pending >= self._flush_every:
            self._file.flush()
            self._pending = 0

    def shutdown(self) -> None:
        self._file.flush()
        self._file.close()
