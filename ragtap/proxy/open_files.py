"""The client connection limit, derived from the process's open-files limit (issue 24 #10).

Every client connection holds a file descriptor, and so does every connection to the upstream, the capture
store's files, the JSONL log, an exporter's socket, a DNS lookup and the listening sockets.  Under the common
limit of 1,024 open files, 1,100 slow-header connections used every descriptor before `clients.max_connections`
(1,024) was reached: the "oldest connection makes room" rule never fired, `accept()` failed for everyone --
`/healthz` included -- and nothing was logged.  So:

- `ragtap serve` raises its soft limit to the hard limit at start (`raise_open_files_limit`), as nginx's
  `worker_rlimit_nofile` and systemd's `LimitNOFILE` do; a process may always do that, up to the hard limit.
- the watchdog's limit is the smaller of the configured one and what the descriptors allow (`connection_budget`):
  the soft limit, less what is open at start, less a fixed reserve (listeners, store, log, exporters, DNS, the
  connection that a new client -- a health check -- needs to get in), less a share for the upstream pool (up to
  `server.max_connections`, at most half of what is left: a client's request holds one upstream connection).
- the start-up log says so (a WARNING) when the limit had to be lowered; reaching it is counted
  (`ragtap_client_rejections_total{reason="connection_limit"}`) and logged as a WARNING at most once a minute
  (ragtap/proxy/clients.py).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

log = logging.getLogger("ragtap.clients")

FIXED_RESERVE = 64  # listeners, the capture store's files, the JSONL log, exporters' sockets, DNS, headroom to accept
MAX_RAISED = 1 << 20  # fs.nr_open's default: the ceiling where /proc does not say (a hard limit may be "unlimited")


@dataclass(frozen=True, slots=True)
class ConnectionBudget:
    configured: int  # clients.max_connections
    effective: int  # what the watchdog enforces
    open_files_limit: int | None  # the soft RLIMIT_NOFILE (None where the platform has none)
    open_at_start: int
    upstream_share: int  # descriptors kept for connections to the upstream

    @property
    def lowered(self) -> bool:
        return self.effective < self.configured


def open_files_limit() -> tuple[int, int] | None:
    """(soft, hard) RLIMIT_NOFILE, or None where there is no such limit (Windows)."""
    try:
        import resource
    except ImportError:
        return None
    return resource.getrlimit(resource.RLIMIT_NOFILE)


def raise_open_files_limit() -> tuple[int, int] | None:
    """Raise the soft open-files limit to the hard one (where allowed); the limits in force afterwards."""
    limits = open_files_limit()
    if limits is None:
        return None
    import resource

    soft, hard = limits
    target = _kernel_ceiling() if hard == resource.RLIM_INFINITY else min(hard, _kernel_ceiling())
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError) as error:  # a container's seccomp profile, a kernel nr_open below the hard limit
            log.info("could not raise the open-files limit from %d to %d: %s", soft, target, error)
    return open_files_limit()


def _kernel_ceiling() -> int:
    """The most open files the kernel lets one process have (Linux: fs.nr_open); a hard limit may say more."""
    try:
        return int(open("/proc/sys/fs/nr_open").read())
    except (OSError, ValueError):
        return MAX_RAISED


def open_descriptors() -> int:
    """File descriptors this process has open now (0 where /proc is not there to say)."""
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return 0


def connection_budget(configured: int, upstream_pool: int, *, soft_limit: int | None = None, open_now: int | None = None) -> ConnectionBudget:
    """How many client connections fit in the descriptors left (see the module docstring)."""
    if soft_limit is None:
        limits = open_files_limit()
        soft_limit = limits[0] if limits is not None else None
    opened = open_descriptors() if open_now is None else open_now
    if soft_limit is None or soft_limit < 0 or soft_limit >= MAX_RAISED:  # no limit, or RLIM_INFINITY
        return ConnectionBudget(configured, configured, soft_limit, opened, min(upstream_pool, configured))
    available = max(0, soft_limit - opened - FIXED_RESERVE)
    upstream_share = min(upstream_pool, available // 2)
    effective = max(1, min(configured, available - upstream_share))
    return ConnectionBudget(configured, effective, soft_limit, opened, upstream_share)


def describe_lowered(budget: ConnectionBudget) -> str:
    return (f"clients.max_connections lowered from {budget.configured} to {budget.effective}: the open-files limit is "
            f"{budget.open_files_limit} ({budget.open_at_start} open at start, {budget.upstream_share} kept for upstream "
            f"connections, {FIXED_RESERVE} for the store, logs, exporters and listeners); raise it (ulimit -n, LimitNOFILE, "
            "docker --ulimit nofile) to accept more")
