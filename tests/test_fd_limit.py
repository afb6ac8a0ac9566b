"""Issue 24 #10 over real sockets: under the common limit of 1,024 open files, 1,100 slow-header connections must
not take every file descriptor.  `ragtap serve` runs in a subprocess whose RLIMIT_NOFILE is lowered before it
starts (soft = hard = 1024: it cannot raise it); the test process opens 1,100 connections that send half a request
head and then nothing, and a health check must still get in.  On the previous code the descriptors ran out at
about 1,000 connections, before `clients.max_connections` (1,024) was reached, so the oldest-connection rule never
fired: /healthz hung and nothing was logged or counted."""

from __future__ import annotations

import asyncio
import re
import resource
import signal
from pathlib import Path

import aiohttp
import pytest

from test_shutdown import start_ragtap

SLOW = 1100
NEEDED_HERE = SLOW + 400  # this process holds the other end of every slow connection


def _limit_open_files(soft: int, hard: int):  # type: ignore[no-untyped-def]
    def apply() -> None:  # runs in the child between fork and exec
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

    return apply


@pytest.fixture
def enough_descriptors_here():  # type: ignore[no-untyped-def]
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < NEEDED_HERE:
        pytest.skip(f"the test needs {NEEDED_HERE} open files in its own process (hard limit {hard})")
    if soft != resource.RLIM_INFINITY and soft < NEEDED_HERE:
        resource.setrlimit(resource.RLIMIT_NOFILE, (NEEDED_HERE, hard))
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


async def _serve(tmp_path: Path, soft: int, hard: int) -> tuple[asyncio.subprocess.Process, int, str]:
    """`ragtap serve` with RLIMIT_NOFILE set to (soft, hard) from its start: (process, port, stderr up to listening)."""
    # Client timeouts far beyond the test: only the connection limit may close the slow connections.
    config = ('[server]\nport = PORT\nupstream = "http://127.0.0.1:9/v1"\nshutdown_grace_s = 1.0\n'
              "[scoring]\nenabled = false\n[clients]\nheader_timeout_s = 300\nidle_timeout_s = 300\n")
    return await start_ragtap(config, tmp_path, preexec_fn=_limit_open_files(soft, hard))


async def _stop(process: asyncio.subprocess.Process) -> str:
    process.send_signal(signal.SIGTERM)
    _, stderr = await asyncio.wait_for(process.communicate(), 30)
    return stderr.decode()  # type: ignore[union-attr]


async def _slow_connection(port: int) -> asyncio.StreamWriter | None:
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 5)
    except (OSError, TimeoutError):
        return None
    writer.write(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # ... and never the rest
    return writer


def _metric(text: str, name: str) -> float:
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


@pytest.mark.slow
async def test_slow_connections_under_a_1024_file_limit_leave_room_for_healthz(tmp_path, enough_descriptors_here) -> None:
    process, port, started = await _serve(tmp_path, 1024, 1024)
    writers: list[asyncio.StreamWriter | None] = []
    try:
        for start in range(0, SLOW, 100):  # 100 at a time: the listen backlog is 128
            writers += await asyncio.gather(*(_slow_connection(port) for _ in range(start, min(SLOW, start + 100))))
        async with aiohttp.ClientSession() as session:
            async with asyncio.timeout(10), session.get(f"http://127.0.0.1:{port}/healthz") as response:
                assert response.status == 200  # the health check got in
            async with asyncio.timeout(10), session.get(f"http://127.0.0.1:{port}/metrics") as response:
                metrics = await response.text()
    finally:
        for writer in writers:
            if writer is not None:
                writer.close()
        stderr = started + await _stop(process)
    assert process.returncode == 0, stderr[-3000:]
    assert sum(w is not None for w in writers) == SLOW  # every slow client was accepted (the oldest then closed)
    # The refusals are counted and logged; the limit in force is what 1,024 descriptors allow, and start-up said so.
    lowered = re.search(r"clients.max_connections lowered from 1024 to (\d+): the open-files limit is 1024", stderr)
    assert lowered is not None, stderr[-3000:]
    limit = int(lowered.group(1))
    assert 512 <= limit <= 1024 - 64
    shed = _metric(metrics, 'ragtap_client_rejections_total{reason="connection_limit"}')
    assert SLOW - limit <= shed <= SLOW + 2 - limit, (shed, limit)  # (+ /healthz and /metrics)
    assert "client connection limit reached" in stderr and "Traceback" not in stderr, stderr[-3000:]


@pytest.mark.slow
async def test_ragtap_serve_raises_its_soft_file_limit_to_the_hard_one(tmp_path) -> None:
    process, _, started = await _serve(tmp_path, 1024, 4096)
    try:
        limits = Path(f"/proc/{process.pid}/limits").read_text()
    finally:
        stderr = started + await _stop(process)
    (line,) = [line for line in limits.splitlines() if line.startswith("Max open files")]
    assert line.split()[3:5] == ["4096", "4096"], line
    assert "lowered" not in stderr, stderr[-2000:]  # 4,096 descriptors hold the 1,024 connections configured


def test_the_connection_budget_arithmetic() -> None:
    from ragtap.proxy.open_files import FIXED_RESERVE, connection_budget

    roomy = connection_budget(1024, 256, soft_limit=65536, open_now=40)
    assert (roomy.effective, roomy.lowered) == (1024, False)  # the configured limit fits: kept
    tight = connection_budget(1024, 256, soft_limit=1024, open_now=40)
    assert tight.effective == 1024 - 40 - FIXED_RESERVE - 256 and tight.lowered  # the upstream pool's share kept aside
    small = connection_budget(1024, 256, soft_limit=200, open_now=40)
    assert small.upstream_share == (200 - 40 - FIXED_RESERVE) // 2 and small.effective == 200 - 40 - FIXED_RESERVE - small.upstream_share
    assert connection_budget(1024, 256, soft_limit=64, open_now=40).effective == 1  # never zero: one connection at a time
    unlimited = connection_budget(1024, 256, soft_limit=-1, open_now=40)  # RLIM_INFINITY
    assert unlimited.effective == 1024 and not unlimited.lowered
