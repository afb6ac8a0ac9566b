"""A RAGTAP_PLUGINS module for the `ragtap worker` subprocesses of tests/test_redis_queue.py (and a `ragtap serve`
of tests/test_shutdown.py that must score without loading a model).

It registers, by name, what a test selects through the environment (as a user selects any embedder/exporter):

- embedder `test-word-hash`: deterministic bag of words (no model load: a worker starts in a fraction of a
  second).  RAGTAP_TEST_EMBED_DELAY_S makes each embed call sleep (a batch then lasts long enough to be killed
  in the middle of); RAGTAP_TEST_EMBED_MARKER names a file that gets one line per embed call as it starts.
  RAGTAP_TEST_EMBED_BARRIER="path:n" holds each embed call until n different workers have started one (each
  appends its pid to the shared file `path`; bounded: 30 s), so a test knows the work was shared without
  relying on how long a call takes.
- exporter `test-ledger`: when RAGTAP_TEST_LEDGER names a file, every exported interaction is appended as one
  JSON line (question, consumer pid) with O_APPEND and no buffering, so what a worker exported survives SIGKILL.
"""

from __future__ import annotations

import json
import os
import time
import zlib
from collections.abc import Sequence

import numpy as np

from ragtap.embedding.base import l2_normalise
from ragtap.embedding.factory import register_embedder
from ragtap.exporters.base import Exporter
from ragtap.types import Assessment, Interaction
from ragtap.wiring import register_exporter


class WordHashEmbedder:
    name = "test-word-hash"
    dim = 64

    def __init__(self) -> None:
        self.delay = float(os.environ.get("RAGTAP_TEST_EMBED_DELAY_S", "0") or 0)
        self.marker = os.environ.get("RAGTAP_TEST_EMBED_MARKER")
        barrier = os.environ.get("RAGTAP_TEST_EMBED_BARRIER", "")
        self.barrier_path, _, count = barrier.rpartition(":")
        self.barrier_count = int(count) if barrier else 0

    def _wait_at_barrier(self) -> None:
        with open(self.barrier_path, "a", encoding="utf-8") as f:
            f.write(f"{os.getpid()}\n")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with open(self.barrier_path, encoding="utf-8") as f:
                if len(set(f.read().split())) >= self.barrier_count:
                    return
            time.sleep(0.02)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if self.marker:
            with open(self.marker, "a", encoding="utf-8") as f:
                f.write(f"{os.getpid()}\n")
        if self.barrier_count:
            self._wait_at_barrier()
        if self.delay:
            time.sleep(self.delay)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().split():
                out[i, zlib.crc32(word.encode()) % self.dim] += 1.0
        return l2_normalise(out) if len(texts) else out


class LedgerExporter(Exporter):
    def __init__(self, path: str) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def interaction_scored(self, interaction: Interaction, assessment: Assessment, seconds: float) -> None:
        line = {"question": interaction.question, "pid": os.getpid(), "verdict": assessment.verdict.value, "seconds": seconds,
                "response_id": interaction.exchange.response_id if interaction.exchange else None}
        os.write(self.fd, (json.dumps(line) + "\n").encode())

    def shutdown(self) -> None:
        os.close(self.fd)


def _ledger(config, built):  # type: ignore[no-untyped-def]
    path = os.environ.get("RAGTAP_TEST_LEDGER")
    return [LedgerExporter(path)] if path else []


register_embedder("test-word-hash", lambda **_options: WordHashEmbedder())
register_exporter("test-ledger", _ledger)
