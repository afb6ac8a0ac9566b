"""Imported at start-up by a `ragtap serve` that bench/request_gc.py starts (this directory is on its PYTHONPATH):
times the main thread's garbage collections and writes the totals as JSON to $RAGTAP_BENCH_GC_REPORT on SIGUSR2."""

import gc
import json
import os
import signal
import threading
import time

_MAIN = threading.main_thread()
_totals = {"collections": 0, "collected": 0, "seconds": 0.0}
_started = [0.0]


def _timed(phase: str, info: dict) -> None:
    if threading.current_thread() is not _MAIN:
        return
    if phase == "start":
        _started[0] = time.thread_time()
    else:
        _totals["seconds"] += time.thread_time() - _started[0]
        _totals["collections"] += 1
        _totals["collected"] += info["collected"]


def _report(signum: int, frame: object) -> None:
    path = os.environ.get("RAGTAP_BENCH_GC_REPORT")
    if path:
        with open(path + ".tmp", "w") as out:
            json.dump(_totals, out)
        os.replace(path + ".tmp", path)


gc.callbacks.append(_timed)
signal.signal(signal.SIGUSR2, _report)
