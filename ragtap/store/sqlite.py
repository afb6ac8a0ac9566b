"""The SQLite backend: one file in WAL mode (readers never wait for the writer), FTS5 for free text.

Free text: a contentless FTS5 table fed by triggers (the texts are not stored twice); where SQLite was built
without FTS5 the search falls back to LIKE (correct, slower).  A file that is not a database (or is corrupt) is
moved aside to `<path>.corrupt-<time>` and a new one started, so the store recovers without losing the evidence.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ragtap.store.base import CapturedInteraction
from ragtap.store.sql import ADDED_COLUMNS, COLUMNS, INDEX_SQL, SqlConnection, add_column_sql, row_values, table_sql, words

log = logging.getLogger("ragtap.store")

_DOCS = "(SELECT coalesce(group_concat(value ->> '$.text', ' '), '') FROM json_each({row}.documents))"
_FTS_SQL = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS interactions_fts USING fts5(question, answer, supporting, documents, "
    "content='', tokenize='unicode61 remove_diacritics 2')",
    "CREATE TRIGGER IF NOT EXISTS interactions_fts_insert AFTER INSERT ON interactions BEGIN "
    "INSERT INTO interactions_fts (rowid, question, answer, supporting, documents) VALUES (new.rowid, new.question, "
    f"coalesce(new.answer, ''), coalesce(new.supporting, ''), {_DOCS.format(row='new')}); END",
    # A contentless table forgets a row only when given the very values it indexed.
    "CREATE TRIGGER IF NOT EXISTS interactions_fts_delete AFTER DELETE ON interactions BEGIN "
    "INSERT INTO interactions_fts (interactions_fts, rowid, question, answer, supporting, documents) VALUES ('delete', "
    f"old.rowid, old.question, coalesce(old.answer, ''), coalesce(old.supporting, ''), {_DOCS.format(row='old')}); END",
)
FEW_MATCHES = 2000  # free text matching more rows than this is filtered along the time index (see text_filter)
_LABELS_SQL = ("CREATE TABLE IF NOT EXISTS labels (seq INTEGER PRIMARY KEY AUTOINCREMENT, interaction_id TEXT NOT NULL, "
               "verdict_right BOOLEAN NOT NULL, right_verdict TEXT, note TEXT NOT NULL, time REAL NOT NULL)")


def _file_id(stat: os.stat_result) -> tuple[int, int]:
    return stat.st_dev, stat.st_ino


def create_private(path: str) -> None:
    """Create the database file (and its folder) readable by this user only, when it does not exist yet: it holds
    message content.  SQLite gives its -wal and -shm files the database file's permissions."""
    file = Path(path).expanduser()
    if file.exists():
        return
    file.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with contextlib.suppress(FileExistsError):
        os.close(os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))


def is_corrupt(error: BaseException) -> bool:
    """True for the errors that mean the file itself is bad (not a lock, not a full disk)."""
    text = str(error).lower()
    return isinstance(error, sqlite3.DatabaseError) and ("not a database" in text or "malformed" in text)


def move_aside(path: str) -> str:
    """Rename a corrupt database (and its WAL files) out of the way; returns the new name."""
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    target = f"{path}.corrupt-{stamp}"
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.replace(path + suffix, target + suffix)
    return target


class SqliteConnection(SqlConnection):
    placeholder = "?"

    def __init__(self, path: str, lock_timeout_s: float) -> None:
        create_private(path)
        # Autocommit mode: transactions are explicit (BEGIN IMMEDIATE takes the write lock up front, so a busy
        # database fails at BEGIN after the timeout instead of half-way through a batch).
        connection = sqlite3.connect(path, timeout=lock_timeout_s, isolation_level=None, check_same_thread=False)
        super().__init__(connection)
        self.path = path
        self.fts = False
        try:
            self.ensure_schema()
            self.file_id = _file_id(os.stat(path))  # the file this connection has open (see gone())
        except BaseException:
            self.close()
            raise

    def gone(self) -> tuple[str, tuple[int, int]] | None:
        # SQLite keeps writing to a file that was deleted under it (the rows vanish at the next start): a stat per
        # batch / read notices it.
        try:
            now = _file_id(os.stat(self.path))
        except FileNotFoundError:
            return "deleted", self.file_id
        return None if now == self.file_id else ("replaced", self.file_id)

    def row_error(self, error: BaseException) -> bool:
        # OverflowError: an integer beyond 64 bits (sqlite3 refuses to bind it)
        return isinstance(error, (sqlite3.DataError, sqlite3.IntegrityError, OverflowError))

    def ensure_schema(self) -> None:
        c = self.connection
        c.execute("PRAGMA journal_mode=WAL")
        c.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: durable across crashes of ragtap, fast commits
        existing = {row[0] for row in c.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'trigger', 'index')")}
        if {"interactions", "labels", "interactions_fts", "interactions_fts_delete", "interactions_by_label"} <= existing:
            self.fts = True  # all there: no write lock needed (a reader can open while another process writes)
            self._add_missing_columns()
            return
        with self.transaction():
            c.execute(table_sql("REAL"))
            c.execute(_LABELS_SQL)
            for statement in INDEX_SQL:
                c.execute(statement)
            try:
                for statement in _FTS_SQL:
                    c.execute(statement)
                self.fts = True
            except sqlite3.OperationalError as error:  # built without FTS5 (or without JSON): LIKE instead
                if "fts5" not in str(error) and "json" not in str(error) and "->>" not in str(error):
                    raise
                log.warning("SQLite without FTS5/JSON (%s): free-text search scans rows", error)
        if not self.fts:
            self.fts = bool(c.execute("SELECT count(*) FROM sqlite_master WHERE name = 'interactions_fts'").fetchone()[0])

    def _add_missing_columns(self) -> None:
        """A store written by an earlier ragtap lacks the columns added since (ADDED_COLUMNS): add them."""
        have = {row[1] for row in self.connection.execute("PRAGMA table_info(interactions)")}
        missing = [column for column in ADDED_COLUMNS if column not in have]
        if missing:
            with self.transaction() as c:
                have = {row[1] for row in c.execute("PRAGMA table_info(interactions)")}  # another process may have
                for column in missing:
                    if column not in have:
                        c.execute(add_column_sql(column))

    def maintain(self) -> None:
        self.connection.execute("PRAGMA optimize")  # analyses only the tables whose statistics are stale

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Any]:
        c = self.connection
        if c.in_transaction:  # nested (add_label inside its own): the outer one commits
            yield c
            return
        c.execute("BEGIN IMMEDIATE")
        try:
            yield c
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                c.execute("ROLLBACK")
            raise
        c.execute("COMMIT")

    def insert_rows(self, items: Sequence[CapturedInteraction]) -> None:
        marks = ", ".join("?" for _ in COLUMNS)
        self.connection.executemany(
            f"INSERT INTO interactions ({', '.join(COLUMNS)}) VALUES ({marks}) ON CONFLICT (id) DO NOTHING",
            [row_values(item) for item in items])

    def text_filter(self, text: str) -> tuple[str, list[Any]] | None:
        found = words(text)
        if not found:
            return None
        if self.fts:
            # Each word quoted: FTS5 syntax in the input ("AND", "*", quotes) is searched for, not obeyed.
            match = " ".join('"' + w.replace('"', '""') + '"' for w in found)
            # Few matches: look them up and sort them by time.  Many (common words): walk the time index newest
            # first and test membership (`+rowid` keeps the planner from driving the query by the match set), so
            # the first page stops after a page of rows instead of fetching and sorting every match.
            many = self.connection.execute(
                "SELECT count(*) FROM (SELECT rowid FROM interactions_fts WHERE interactions_fts MATCH ? LIMIT ?)",
                (match, FEW_MATCHES + 1)).fetchone()[0] > FEW_MATCHES
            column = "+rowid" if many else "rowid"
            return f"{column} IN (SELECT rowid FROM interactions_fts WHERE interactions_fts MATCH ?)", [match]
        clauses, params = [], []
        for w in found:
            pattern = "%" + w.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            clauses.append("(question LIKE ? ESCAPE '\\' OR answer LIKE ? ESCAPE '\\' OR supporting LIKE ? ESCAPE '\\' "
                           "OR documents LIKE ? ESCAPE '\\')")
            params.extend([pattern] * 4)
        return " AND ".join(clauses), params
