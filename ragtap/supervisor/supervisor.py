"""The supervisor of `ragtap serve --workers N`: starts the workers, keeps N of them, and stops them gracefully.

- Start: the listeners are opened first (`listeners.py`), then N workers are forked (spawned where the platform
  cannot fork); each reports once it listens.  When all have, `announce` prints the one start-up line.  A worker
  that cannot start (the port, the config, the model) stops the others: one line saying why, exit code 2.
- A worker that dies (a crash, the OOM killer, SIGKILL) is replaced at once; one that dies again within
  `STABLE_AFTER_S` of its start waits `RESTART_BACKOFF_FIRST_S`, doubling up to `RESTART_BACKOFF_MAX_S`, so a
  worker that cannot run does not spin.  Its live gauges are removed from the shared metrics (its counters stay in
  the sums).  The other workers and their in-flight requests are not touched.
- SIGTERM or SIGINT: passed to every worker as SIGTERM; each stops listening, finishes its in-flight requests,
  drains its scoring queue and flushes its exporters within `[server] shutdown_grace_s`.  The supervisor waits that
  long plus `STOP_MARGIN_S`, kills what is left, and exits 0 when every worker stopped cleanly.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import Any

from ragtap.config import Config, WorkerRole
from ragtap.proxy.server import RagtapServer
from ragtap.supervisor.listeners import OpenedListeners, open_listeners
from ragtap.supervisor.process import Started, run_worker

log = logging.getLogger("ragtap.supervisor")

STABLE_AFTER_S = 10.0
RESTART_BACKOFF_FIRST_S = 1.0
RESTART_BACKOFF_MAX_S = 30.0
START_TIMEOUT_S = 300.0  # a first start builds the int8 model when its cache is empty (~10 s of one core)
STOP_MARGIN_S = 5.0
METRICS_DIR_ENV = "PROMETHEUS_MULTIPROC_DIR"


class StartFailed(Exception):
    """A worker could not start: the message says why (one line)."""


@dataclass
class _Slot:
    index: int
    process: BaseProcess | None = None
    report: Connection | None = None
    started_at: float = 0.0
    ready: bool = False
    backoff: float = 0.0
    restart_at: float | None = None


def _exit_reason(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


class Supervisor:
    def __init__(self, count: int, opened: OpenedListeners, *, metrics_dir: str,
                 announce: Callable[[Started], None], stopping: Callable[[], None],
                 on_started: Callable[[RagtapServer], Awaitable[None]] | None = None, prepare: Callable[[], None] | None = None) -> None:
        self.config = opened.config
        self.count = count
        self.opened = opened
        self.metrics_dir = metrics_dir
        self._announce = announce
        self._stopping = stopping
        self._on_started = on_started
        self._prepare = prepare
        self._slots = [_Slot(i) for i in range(count)]
        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        self._context: Any = multiprocessing.get_context(method)
        self._forks = method == "fork"
        self._wake_read, self._wake_write = os.pipe()
        os.set_blocking(self._wake_write, False)
        self._signalled: int | None = None

    # ------------------------------------------------------------------------------------------------ workers
    def _start(self, slot: _Slot) -> None:
        report, child_end = self._context.Pipe(duplex=False)
        role = WorkerRole(slot.index, self.count)
        process = self._context.Process(
            target=_worker, name=f"ragtap-worker-{slot.index}",
            args=(self.config, role, self.opened, child_end, self._on_started, self._prepare, self.metrics_dir,
                  (self._wake_read, self._wake_write) if self._forks else ()),
        )
        process.start()
        child_end.close()  # the worker holds the only writing end: its death is an EOF here
        slot.process, slot.report, slot.ready, slot.restart_at = process, report, False, None
        slot.started_at = time.monotonic()

    def _live(self) -> list[_Slot]:
        return [s for s in self._slots if s.process is not None]

    def _reap(self, slot: _Slot) -> int | None:
        """The dead worker's exit code, its pipe closed and its live gauges removed from the shared metrics."""
        assert slot.process is not None
        slot.process.join(1.0)
        code, pid = slot.process.exitcode, slot.process.pid
        if slot.report is not None:
            slot.report.close()
        slot.process, slot.report, slot.ready = None, None, False
        if pid is not None:
            from prometheus_client.multiprocess import mark_process_dead

            mark_process_dead(pid, self.metrics_dir)
        return code

    def _events(self, timeout: float | None) -> list[Any]:
        watched: list[Any] = [self._wake_read]
        for slot in self._live():
            watched.append(slot.process.sentinel)  # type: ignore[union-attr]
            if not slot.ready and slot.report is not None:
                watched.append(slot.report)
        return wait(watched, timeout)

    def _drain_wake(self) -> None:
        try:
            while os.read(self._wake_read, 512):
                pass
        except BlockingIOError:
            pass

    def _read_report(self, slot: _Slot) -> Started | str | None:
        try:
            message = slot.report.recv()  # type: ignore[union-attr]
        except (EOFError, OSError):
            return None  # it died before saying anything: its sentinel tells the rest
        return message  # type: ignore[no-any-return]

    # ---------------------------------------------------------------------------------------------- the run
    def _on_signal(self, signum: int, _frame: Any) -> None:
        self._signalled = signum
        try:
            os.write(self._wake_write, b"!")
        except OSError:
            pass

    def run(self) -> int:
        os.set_blocking(self._wake_read, False)
        previous = {sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            for slot in self._slots:
                self._start(slot)
            first = self._wait_until_ready()
            if first is None:  # a signal during the start
                return self._stop()
            self._announce(first)
            self._supervise()
            return self._stop()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            for fd in (self._wake_read, self._wake_write):
                os.close(fd)

    def _wait_until_ready(self) -> Started | None:
        deadline = time.monotonic() + START_TIMEOUT_S
        first: Started | None = None
        while not all(s.ready for s in self._slots):
            left = deadline - time.monotonic()
            if left <= 0:
                self._abort()
                raise StartFailed(f"the workers did not start within {START_TIMEOUT_S:.0f} s")
            for event in self._events(left):
                if event == self._wake_read:
                    self._drain_wake()
            if self._signalled is not None:
                return None
            for slot in self._slots:
                if slot.process is None:
                    continue
                if not slot.ready and slot.report is not None and slot.report.poll():
                    message = self._read_report(slot)
                    if isinstance(message, Started):
                        slot.ready = True
                        first = message if message.index == 0 else first
                    elif isinstance(message, str):
                        self._abort()
                        raise StartFailed(message)
                if not slot.process.is_alive():
                    code = self._reap(slot)
                    self._abort()
                    raise StartFailed(f"worker {slot.index} {_exit_reason(code)} before it was ready")
        return first

    def _supervise(self) -> None:
        while self._signalled is None:
            now = time.monotonic()
            due = [s.restart_at for s in self._slots if s.restart_at is not None]
            timeout = max(0.0, min(due) - now) if due else None
            for event in self._events(timeout):
                if event == self._wake_read:
                    self._drain_wake()
            if self._signalled is not None:
                return
            for slot in self._slots:
                self._check(slot)

    def _check(self, slot: _Slot) -> None:
        if slot.process is None:
            if slot.restart_at is not None and time.monotonic() >= slot.restart_at:
                self._start(slot)
            return
        if not slot.ready and slot.report is not None and slot.report.poll():
            message = self._read_report(slot)
            if isinstance(message, Started):
                slot.ready = True
                log.info("worker %d is serving again (pid %d)", slot.index, message.pid)
            elif isinstance(message, str):
                log.error("worker %d could not start: %s", slot.index, message)
        if slot.process.is_alive():
            return
        pid = slot.process.pid
        lived = time.monotonic() - slot.started_at
        code = self._reap(slot)
        slot.backoff = 0.0 if lived >= STABLE_AFTER_S else min(RESTART_BACKOFF_MAX_S, max(RESTART_BACKOFF_FIRST_S, slot.backoff * 2))
        slot.restart_at = time.monotonic() + slot.backoff
        when = f"in {slot.backoff:.0f} s" if slot.backoff else "now"
        log.warning("worker %d (pid %s) %s after %.1f s: starting a new one %s", slot.index, pid, _exit_reason(code), lived, when)

    # ----------------------------------------------------------------------------------------------- stopping
    def _terminate(self) -> None:
        for slot in self._live():
            try:
                os.kill(slot.process.pid, signal.SIGTERM)  # type: ignore[union-attr,arg-type]
            except ProcessLookupError:
                pass

    def _abort(self) -> None:
        """A failed start: stop whatever did start, without a grace period worth speaking of."""
        self._terminate()
        self._wait_for_exit(time.monotonic() + STOP_MARGIN_S)

    def _stop(self) -> int:
        self._stopping()
        self._terminate()
        # The supervisor's copies of the listening sockets go now: once the workers close theirs, a new connection is
        # refused instead of waiting in a backlog nobody accepts from.
        self.opened.close()
        clean = self._wait_for_exit(time.monotonic() + self.config.server.shutdown_grace_s + STOP_MARGIN_S)
        return 0 if clean else 1

    def _wait_for_exit(self, deadline: float) -> bool:
        """True when every worker exited 0 before the deadline; the ones still running then are killed."""
        clean = True
        for slot in self._slots:
            slot.restart_at = None
        while self._live():
            left = deadline - time.monotonic()
            if left <= 0:
                for slot in self._live():
                    log.warning("worker %d (pid %s) still running after the grace period: killing it", slot.index, slot.process.pid)  # type: ignore[union-attr]
                    slot.process.kill()  # type: ignore[union-attr]
                    self._reap(slot)
                return False
            for event in self._events(left):
                if event == self._wake_read:
                    self._drain_wake()  # a second signal: the workers are stopping already
            for slot in self._live():
                if not slot.process.is_alive():  # type: ignore[union-attr]
                    clean = self._reap(slot) == 0 and clean
        return clean


def _worker(config: Config, role: WorkerRole, opened: OpenedListeners, report: Connection,
            on_started: Callable[[RagtapServer], Awaitable[None]] | None, prepare: Callable[[], None] | None, metrics_dir: str,
            supervisor_fds: tuple[int, int]) -> None:
    """A worker, freshly started: its metric values go to the shared directory (set before any metric exists:
    ragtap/exporters/prometheus.py); it lets go of what is the supervisor's alone (its wake-up pipe, inherited at
    fork); then it serves."""
    os.environ[METRICS_DIR_ENV] = metrics_dir
    for fd in supervisor_fds:
        os.close(fd)
    opened.close_in_worker()
    run_worker(config, role, opened.listeners, report, on_started, prepare)


def supervise(config: Config, count: int, *, announce: Callable[[Started, OpenedListeners], None], stopping: Callable[[], None],
              on_started: Callable[[RagtapServer], Awaitable[None]] | None = None, prepare: Callable[[], None] | None = None) -> int:
    """Run `count` workers until SIGTERM/SIGINT.  CannotServe when the listeners cannot be opened, StartFailed when a
    worker cannot start (both before anything is served)."""
    metrics_dir = tempfile.mkdtemp(prefix="ragtap-metrics-")  # every worker's metric values, as files
    try:
        opened = open_listeners(config)
        try:
            supervisor = Supervisor(count, opened, metrics_dir=metrics_dir, announce=lambda first: announce(first, opened),
                                    stopping=stopping, on_started=on_started, prepare=prepare)
            return supervisor.run()
        finally:
            opened.close()
    finally:
        shutil.rmtree(metrics_dir, ignore_errors=True)
