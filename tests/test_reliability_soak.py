"""Issue 7, load: a short run of bench/soak.py (a few seconds at 100 requests/s against `ragtap serve` and the fast
bench upstream, scoring off so the process starts quickly).  The 60 s run and its figures are in
docs/reliability.md."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


def _soak():  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location("ragtap_bench_soak", BENCH / "soak.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[spec.name] = module  # type: ignore[union-attr]  # (dataclasses look their module up there)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


@pytest.mark.slow
async def test_short_soak_has_no_errors_and_no_growth() -> None:
    result = await _soak().run(duration=3.0, rate=100.0, max_in_flight=32, scoring=False, quiet=True, warmup=0.5, settle=1.0)
    assert result["errors"] == 0, result["error_kinds"]
    assert result["completed"] == result["requests"] >= 250
    assert all(result["latency_ms"][kind]["n"] > 0 for kind in ("rag", "chat", "rag_stream", "chat_stream"))
    start, end = result["ragtap_start"], result["ragtap_end"]
    # What remains open at the end is at most the idle keep-alive pool to the upstream (one per request in flight).
    assert end["sockets"] <= start["sockets"] + 32 and end["fds"] <= start["fds"] + 32
    assert end["rss_mb"] < start["rss_mb"] + 40
    assert result["shutdown"]["exit_code"] == 0
