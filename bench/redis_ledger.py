"""A RAGTAP_PLUGINS module for bench/redis_queue.py's workers: exporter `bench-ledger` appends, per exported
interaction, the seconds from hand-off to verdict to the file RAGTAP_BENCH_LEDGER names (unbuffered)."""

from __future__ import annotations

import os

from ragtap.exporters.base import Exporter
from ragtap.types import Assessment, Interaction
from ragtap.wiring import register_exporter


class SecondsLedger(Exporter):
    def __init__(self, path: str) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def interaction_scored(self, interaction: Interaction, assessment: Assessment, seconds: float) -> None:
        os.write(self.fd, f"{seconds:.6f}\n".encode())

    def shutdown(self) -> None:
        os.close(self.fd)


def _ledger(config, built):  # type: ignore[no-untyped-def]
    path = os.environ.get("RAGTAP_BENCH_LEDGER")
    return [SecondsLedger(path)] if path else []


register_exporter("bench-ledger", _ledger)
