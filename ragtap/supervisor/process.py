"""One serving process from start to stop: `ragtap serve` alone, or one worker of `ragtap serve --workers N`.

A worker is forked by the supervisor (`supervisor.py`): it reports to the supervisor over a pipe once it listens (or
why it could not start), serves until SIGTERM or SIGINT (or until the supervisor is gone: it then stops as if told
to), and exits 0 after a graceful stop.  It prints nothing at start: the supervisor prints one line for all.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection

from ragtap.config import Config, WorkerRole
from ragtap.proxy.open_files import raise_open_files_limit
from ragtap.proxy.server import ListenError, Listeners, RagtapServer

log = logging.getLogger("ragtap.serve")

# The event loop shares the GIL with the scoring thread and the thread that parses very large bodies; with Python's
# default switch interval (5 ms) either can keep the loop waiting 5 ms at a time.  At 1 ms the hostile soak's
# normal-request p99 went from 4.1x to 1.9x its calm p99, with no measurable throughput cost
# (bench/hostile_soak.py, bench/run.py --quick, same session; docs/reliability.md).
GIL_SWITCH_INTERVAL_S = 0.001
# The collector's youngest generation is collected after this many allocations (Python's default: 700).  At c=32
# a request's objects are still alive when a collection comes every ~2 requests, so they are promoted and traversed
# again by the older generations; with 10,000 most die young.  -4% of the event loop's instructions per request at
# c=32 (RAG and plain chat, bench/request_instructions.py --no-scoring --conns 32; 50,000 gains nothing more), for a
# young collection of up to 10,000 objects (well under a millisecond) 14x less often.
GC_YOUNG_THRESHOLD = 10_000
PARENT_CHECK_S = 1.0  # how often a worker looks whether its supervisor is still there


class CannotServe(Exception):
    """The server could not start (a port taken, a host not this machine's): one line for the user."""


@dataclass(frozen=True)
class Started:
    """What a worker tells the supervisor once it listens; the supervisor's start-up line is made of worker 0's."""

    index: int
    pid: int
    base_url: str
    triage: str  # the page's URL, or why it is not served


async def serve(config: Config, *, worker: WorkerRole | None = None, listeners: Listeners | None = None,
                started: Callable[[RagtapServer], Awaitable[None]], stopping: Callable[[], None] | None = None) -> None:
    """Start the server, call `started`, serve until SIGINT/SIGTERM, call `stopping`, stop gracefully (in-flight
    requests, the scoring drain and the exporters' flush within `[server] shutdown_grace_s`)."""
    raise_open_files_limit()  # every client connection is a file descriptor: take what the hard limit allows
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    server = RagtapServer(config, worker=worker, listeners=listeners)
    try:
        await server.start()
    except ListenError as error:  # names the listener that failed (the proxy's, /metrics' or the page's)
        await server.stop()
        raise CannotServe(f"cannot listen on {error.address}: {error.strerror or error}") from None
    except OSError as error:
        await server.stop()
        raise CannotServe(f"cannot start: {error.strerror or error}") from None
    # Everything allocated so far (the model, the app) lives as long as the process: freeze it out of the
    # collector's view, so a full collection does not stall the event loop for tens of milliseconds.
    gc.collect()
    gc.freeze()
    gc.set_threshold(GC_YOUNG_THRESHOLD, *gc.get_threshold()[1:])
    sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)
    await started(server)
    await stop.wait()
    if stopping is not None:
        stopping()
    await server.stop()


async def _watch_parent(parent: int, stop: Callable[[], None]) -> None:
    """A worker whose supervisor died (SIGKILL, a crash) would serve on unsupervised: stop it gracefully instead."""
    while os.getppid() == parent:
        await asyncio.sleep(PARENT_CHECK_S)
    log.warning("the supervisor (pid %d) is gone: worker stopping", parent)
    stop()


def run_worker(config: Config, role: WorkerRole, listeners: Listeners, report: Connection,
               on_started: Callable[[RagtapServer], Awaitable[None]] | None, prepare: Callable[[], None] | None) -> None:
    """A worker process's whole life (the target of the supervisor's fork)."""
    # The supervisor's signal handlers only wake its own loop: this process starts from the defaults, and the
    # serving loop installs its own.
    signal.set_wakeup_fd(-1)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)
    _use_shared_metrics()
    if prepare is not None:
        prepare()
    parent = os.getppid()
    watchers: set[asyncio.Task[None]] = set()  # a reference, so the task is not collected while it runs
    ready: list[bool] = []

    async def started(server: RagtapServer) -> None:
        triage = server.triage_url or f"{server.triage_unavailable}"
        report.send(Started(role.index, os.getpid(), server.base_url, triage))
        ready.append(True)
        # (cancelled with the loop's other tasks when the run ends)
        watchers.add(asyncio.get_running_loop().create_task(_watch_parent(parent, lambda: os.kill(os.getpid(), signal.SIGTERM))))
        if on_started is not None:
            await on_started(server)

    try:
        event_loop_runner()(serve(config, worker=role, listeners=listeners, started=started))
    except CannotServe as error:
        report.send(str(error))
        sys.exit(2)
    except Exception as error:
        if ready:  # it served: a crash like any other (the supervisor starts a new worker)
            raise
        # Before it served anything (the model, a plugin): the supervisor says why in one line and stops the rest.
        log.debug("worker %d could not start", role.index, exc_info=True)
        report.send(f"worker {role.index} could not start: {type(error).__name__}: {error}")
        sys.exit(2)
    finally:
        report.close()


def _use_shared_metrics() -> None:
    """prometheus_client picks where metric values live once, when it is first imported: a forked worker inherits the
    supervisor's choice, made without PROMETHEUS_MULTIPROC_DIR (only workers have it).  Switch to the multiprocess
    values here, before any metric of this worker is created."""
    if "PROMETHEUS_MULTIPROC_DIR" not in os.environ:
        return
    from prometheus_client import values

    if not getattr(values.ValueClass, "_multiprocess", False):
        values.ValueClass = values.MultiProcessValue()


def event_loop_runner() -> Callable[[Awaitable[None]], None]:
    """uvloop's runner where it is installed (faster I/O), else asyncio's."""
    try:
        import uvloop

        return uvloop.run  # type: ignore[return-value]
    except ImportError:
        return asyncio.run  # type: ignore[return-value]
