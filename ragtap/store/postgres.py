"""The PostgreSQL backend (psycopg 3): the same table as SQLite, for several ragtap replicas sharing one store.

Free text: a `search` tsvector column ('simple' configuration: no stemming, like SQLite's unicode61) filled at
insert time, with a GIN index.  The schema is created under an advisory lock, so replicas starting together do
not race each other's CREATE statements.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

from ragtap.store.base import CapturedInteraction, StoreError
from ragtap.store.sql import ADDED_COLUMNS, COLUMNS, INDEX_SQL, SqlConnection, add_column_sql, row_values, search_text, table_sql, words

# What the tsvector of one row is built from, at most.  PostgreSQL refuses a tsvector over 1 MB ("string is too
# long for tsvector"); 100,000 characters stay well under it whatever the words (measured: 2.6 MB of distinct
# words fails; 100,000 characters of distinct 3-letter, CJK or astral-plane words make tsvectors of 190-300 KB).
# Free text then finds words in the first 100,000 characters of question, answer, supporting content and
# documents together (in that order); the row keeps every text whole.
MAX_SEARCH_CHARS = 100_000
_SCHEMA_LOCK = 0x72616774  # "ragt": the advisory lock key taken while creating the schema
_PRUNE_LOCK = _SCHEMA_LOCK + 1  # one replica prunes at a time; the others skip that round
_LABELS_SQL = ("CREATE TABLE IF NOT EXISTS labels (seq BIGSERIAL PRIMARY KEY, interaction_id TEXT NOT NULL, "
               "verdict_right BOOLEAN NOT NULL, right_verdict TEXT, note TEXT NOT NULL, time DOUBLE PRECISION NOT NULL)")


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError:
        raise StoreError("[store] url is PostgreSQL but psycopg is not installed: pip install 'ragtap[postgres]'") from None
    return psycopg


class PostgresConnection(SqlConnection):
    placeholder = "%s"

    def __init__(self, url: str, connect_timeout_s: float) -> None:
        psycopg = _psycopg()
        connection = psycopg.connect(url, autocommit=True, connect_timeout=max(1, round(connect_timeout_s)))
        super().__init__(connection)
        try:
            self.ensure_schema()
        except BaseException:
            self.close()
            raise

    def ensure_schema(self) -> None:
        with self.transaction() as c:
            c.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
            c.execute(table_sql("DOUBLE PRECISION"))
            c.execute("ALTER TABLE interactions ADD COLUMN IF NOT EXISTS search tsvector")
            for column in ADDED_COLUMNS:  # a store written by an earlier ragtap
                c.execute(add_column_sql(column).replace("ADD COLUMN", "ADD COLUMN IF NOT EXISTS"))
            c.execute(_LABELS_SQL)
            for statement in INDEX_SQL:
                c.execute(statement)
            c.execute("CREATE INDEX IF NOT EXISTS interactions_search ON interactions USING GIN (search)")

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Any]:
        with self.connection.transaction():
            yield self.connection

    def prune(self, max_rows: int, max_age_s: float, now: float) -> int:
        with self.transaction() as c:
            if not c.execute("SELECT pg_try_advisory_xact_lock(%s)", (_PRUNE_LOCK,)).fetchone()[0]:
                return 0
            return super().prune(max_rows, max_age_s, now)

    def insert_rows(self, items: Sequence[CapturedInteraction]) -> None:
        marks = ", ".join("%s" for _ in COLUMNS)
        with self.connection.cursor() as cursor:
            cursor.executemany(
                f"INSERT INTO interactions ({', '.join(COLUMNS)}, search) VALUES ({marks}, to_tsvector('simple', %s)) "
                "ON CONFLICT (id) DO NOTHING",
                # PostgreSQL text cannot hold NUL characters; an app may send them.
                [tuple(v.replace("\x00", "") if isinstance(v, str) else v
                       for v in (*row_values(item), search_text(item)[:MAX_SEARCH_CHARS]))
                 for item in items])

    def row_error(self, error: BaseException) -> bool:
        errors = _psycopg().errors
        # class 22 (data exception: a value the column cannot hold), 23 (integrity), 54 (a program limit: a
        # tsvector over 1 MB, a row too big to index)
        return isinstance(error, (errors.DataError, errors.IntegrityError, errors.ProgramLimitExceeded))

    def text_filter(self, text: str) -> tuple[str, list[Any]] | None:
        found = words(text)
        if not found:
            return None
        return "search @@ plainto_tsquery('simple', ?)", [" ".join(found)]
