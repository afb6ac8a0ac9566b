"""A full disk under the SQLite store: writes fail, rows are dropped and counted, writing resumes once space is back.

The disk is "full" for a child process whose file-size limit (RLIMIT_FSIZE) is set just above the database's
size: every write past it fails in the kernel (EFBIG), which SQLite reports like a full disk.  Raising the limit
again is the fault clearing.  A child process, so that the limit touches nothing of the test runner.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ragtap.exporters.store import watch
from ragtap.store.factory import open_store
from ragtap.store.settings import StoreSettings

from test_store import captured

CHILD = textwrap.dedent('''
    import asyncio, dataclasses, json, resource, signal, sys
    sys.path.insert(0, sys.argv[2])
    from test_store import captured
    from ragtap.store.factory import open_store
    from ragtap.store.settings import StoreSettings

    async def main(path):
        store = open_store(StoreSettings(path=path, capture="all", batch_max=5, prune_every_s=3600))
        big = "x" * 200_000  # each row grows the WAL by ~200 kB
        await store.add_many([captured(0)])
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails with EFBIG instead of killing us
        soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        resource.setrlimit(resource.RLIMIT_FSIZE, (600_000, hard))
        for i in range(1, 21):
            store.offer(dataclasses.replace(captured(i), answer=big))
        await store.flush(timeout=30)
        full = dict(written=store.stats.written, dropped=dict(store.stats.dropped), failures=store.stats.failures,
                    error=store.stats.last_error)
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))  # space is back
        # (offered at once: the writer may still be in its backoff; the rows wait in the queue, and flush() waits for them)
        for i in range(100, 105):
            store.offer(captured(i))
        await store.flush(timeout=30)
        after = dict(written=store.stats.written, recovered=store.stats.recovered, count=await store.count())
        await store.close()
        print(json.dumps({"full": full, "after": after}))

    asyncio.run(main(sys.argv[1]))
''')


def test_a_full_disk_drops_and_counts_then_writing_resumes(tmp_path: Path) -> None:
    tests = str(Path(__file__).parent)
    done = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / "c.sqlite3"), tests], capture_output=True, text=True,
                          timeout=120, cwd=Path(__file__).parents[1], env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    full, after = result["full"], result["after"]
    assert full["failures"] > 0 and full["dropped"]["write_failed"] > 0, result
    assert full["written"] < 21, result  # not everything fit
    assert "disk" in full["error"].lower() or "i/o" in full["error"].lower(), full["error"]
    assert after["written"] >= full["written"] + 5 and after["recovered"] >= 1, result
    assert "capture store" in done.stderr and "write failed" in done.stderr  # the (rate-limited) log line
    assert done.stderr.count("write failed") == 1, done.stderr[-2000:]  # once per minute, however many failures


async def test_store_counters_are_exposed_to_prometheus(tmp_path: Path) -> None:
    from prometheus_client import CollectorRegistry, generate_latest

    store = open_store(StoreSettings(path=str(tmp_path / "c.sqlite3"), capture="all", queue_size=1))
    try:
        registry = CollectorRegistry()
        watch(store, registry, "sqlite")
        await store.add_many([captured(1)])
        text = generate_latest(registry).decode()
        assert 'ragtap_store_written_total{backend="sqlite"} 1.0' in text
        assert 'ragtap_store_dropped_total{backend="sqlite",reason="queue_full"} 0.0' in text
        assert 'ragtap_store_queue_depth{backend="sqlite"}' in text
    finally:
        await store.close()


@pytest.mark.parametrize("bad", [{"capture": "some"}, {"path": "/no/such/folder/c.db"}, {"url": "mysql://x"},
                                 {"redact": ["("]}, {"user_headers": ["bad header"]}, {"path": "a.db", "url": "postgresql://x"}])
def test_bad_store_settings_are_one_line_errors(bad: dict[str, object]) -> None:
    from ragtap.config import ConfigError, load_config

    with pytest.raises(ConfigError, match=r"^store"):
        load_config(flags={"store": bad}, environ={})
