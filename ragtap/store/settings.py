"""Settings of the capture store (`[store]` in config.toml).

A plain frozen dataclass with safe defaults; the config loader fills it and checks it, nothing here reads a file.
The store is on by default: `load_config` sets `path` to `capture.sqlite3` in the user's data directory when
neither `path` nor `url` is given (a `StoreSettings()` built by hand has no path: off).  `capture = "none"` or
`path = ""` turns it off.  What it writes is redacted first (`[privacy]`, ragtap/privacy.py).
"""

from __future__ import annotations

from dataclasses import dataclass

CAPTURE_POLICIES = ("none", "flagged", "all")


@dataclass(frozen=True)
class StoreSettings:
    """What is captured, where it goes, and the bounds that keep the store (and ragtap's memory) finite.

    `capture`: `none` (nothing), `flagged` (every verdict but grounded, plus poor retrieval), `all`.
    `path`: the SQLite file (WAL mode); `url`: a `postgresql://` URL instead (several replicas, one store).
    Rows older than `max_age_days`, and the oldest beyond `max_rows`, are deleted every `prune_every_s`
    seconds; labelled rows are kept (they are the calibration set).  `user_headers` / `session_headers`:
    request headers that name the user and the session (checked before the body's OpenAI `user` / `metadata`
    fields).  Writes go through a queue of `queue_size` rows to a writer thread; when it is full (the database is
    slow or down) rows are dropped and counted.
    """

    capture: str = "flagged"
    path: str | None = None
    url: str | None = None
    max_rows: int = 100_000
    max_age_days: float = 30.0
    prune_every_s: float = 60.0
    queue_size: int = 10_000
    batch_max: int = 500  # rows written in one transaction
    lock_timeout_s: float = 2.0  # SQLite: wait this long for a lock; PostgreSQL: connect timeout
    user_headers: tuple[str, ...] = ("x-ragtap-user",)
    session_headers: tuple[str, ...] = ("x-ragtap-session",)

    @property
    def enabled(self) -> bool:
        return self.capture != "none" and bool(self.path or self.url)

    @property
    def backend(self) -> str:
        return "postgresql" if self.url else "sqlite"
