"""`open_store`: the configured backend behind the store's threads (SQLite by `path`, PostgreSQL by `url`)."""

from __future__ import annotations

import logging
from urllib.parse import urlsplit

from ragtap.privacy import NO_REDACTION, Redactor
from ragtap.store.settings import StoreSettings
from ragtap.store.sql import SqlConnection
from ragtap.store.threaded import ThreadedStore

log = logging.getLogger("ragtap.store")


def describe_url(url: str) -> str:
    """A PostgreSQL URL without its credentials (for log lines); a malformed one is described, never raised on."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return "a malformed postgresql:// URL"
    return f"{parts.scheme}://{parts.hostname or ''}{f':{port}' if port else ''}{parts.path}"


def open_store(settings: StoreSettings, redactor: Redactor = NO_REDACTION, *, maintain: bool = True) -> ThreadedStore:
    """The store of these settings.  Connections are made lazily by the store's threads, so a database that is
    down at start-up does not stop ragtap: rows are dropped and counted until it answers.  `maintain`: this process
    prunes old rows and moves a corrupt SQLite file aside; false in all but one of several processes writing to
    the same store (`ragtap serve --workers N`), which then only write (and retry) while that one maintains it."""
    if settings.url:
        from ragtap.store.postgres import PostgresConnection, _psycopg

        _psycopg()  # a missing driver is a configuration error at start-up, not a dropped row per request
        url = settings.url

        def connect_postgres() -> SqlConnection:
            return PostgresConnection(url, settings.lock_timeout_s)

        return ThreadedStore(connect_postgres, settings, describe=describe_url(url), redactor=redactor, prunes=maintain)
    if not settings.path:
        raise ValueError("the capture store needs [store] path (SQLite) or url (PostgreSQL)")
    from ragtap.store.sqlite import SqliteConnection, is_corrupt, move_aside

    path = settings.path

    def connect_sqlite() -> SqlConnection:
        return SqliteConnection(path, settings.lock_timeout_s)

    def repair(error: BaseException) -> bool:
        if not is_corrupt(error):
            return False
        moved = move_aside(path)
        log.error("capture store %s is not a readable database (%s): moved to %s, starting a new one", path, error, moved)
        return True

    return ThreadedStore(connect_sqlite, settings, describe=path, on_broken=repair if maintain else None, redactor=redactor, prunes=maintain)
