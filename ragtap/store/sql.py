"""The store's schema and queries, written once for SQLite and PostgreSQL.

`SqlConnection` is one database connection used by one thread at a time (the store's writer thread or its
reader thread: `ragtap.store.threaded`).  Subclasses supply the dialect: how to connect, the column types,
the placeholders, the free-text index (SQLite FTS5 / PostgreSQL tsvector) and the transaction.

One table, `interactions`: the filterable fields as columns (indexed with `time, id` last, so that every filter
can be paged newest-first by keyset), the texts as columns, and what is only ever read whole (documents,
claims, thresholds) as JSON text.  The latest label is copied onto its interaction's row (`label_*`) so that
"labelled only" is a column test; `labels` keeps every label ever posted.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Sequence
from typing import Any

import orjson

from ragtap.store.base import CapturedInteraction, Label, Page, StoreQuery, UnknownInteraction, decode_cursor, encode_cursor
from ragtap.types import METRICS, ClaimOutcome, ClaimSupport, Document, Scores, Thresholds

COLUMNS: tuple[str, ...] = (
    "id", "time", "verdict", "poor_retrieval", "model", "user_id", "session_id", "latency_ms",
    "prompt_tokens", "answer_tokens", "supporting_tokens", "trace_id", "span_id", "rag_source", "unscored_reason",
    *METRICS, "attributed_document", "question", "answer", "supporting", "explanation",
    "documents", "claims", "thresholds", "label_right", "label_verdict", "label_note", "label_time",
    "guard_action", "guard_outcome", "delivered_answer",
)
# Columns added after the first schema: a store created before them gets them when it is opened.
ADDED_COLUMNS: tuple[str, ...] = ("guard_action", "guard_outcome", "delivered_answer")
# Filter columns that get an index `(column, time, id)`: equality on the column, then keyset paging by time.
INDEXED = ("verdict", "model", "user_id", "session_id", "poor_retrieval")


def table_sql(real: str, text: str = "TEXT") -> str:
    metrics = ", ".join(f"{m} {real}" for m in METRICS)
    return (
        f"CREATE TABLE IF NOT EXISTS interactions (id {text} PRIMARY KEY, time {real} NOT NULL, verdict {text} NOT NULL, "
        f"poor_retrieval BOOLEAN, model {text}, user_id {text}, session_id {text}, latency_ms {real}, "
        f"prompt_tokens INTEGER, answer_tokens INTEGER, supporting_tokens INTEGER, trace_id {text}, span_id {text}, "
        f"rag_source {text}, unscored_reason {text}, {metrics}, attributed_document INTEGER, question {text} NOT NULL, "
        f"answer {text}, supporting {text}, explanation {text} NOT NULL, documents {text} NOT NULL, claims {text} NOT NULL, "
        f"thresholds {text} NOT NULL, label_right BOOLEAN, label_verdict {text}, label_note {text}, label_time {real}, "
        f"{', '.join(f'{c} {text}' for c in ADDED_COLUMNS)})"
    )


def add_column_sql(column: str, text: str = "TEXT") -> str:
    """The statement that gives an older table one of `ADDED_COLUMNS` (every one is a nullable text)."""
    return f"ALTER TABLE interactions ADD COLUMN {column} {text}"


INDEX_SQL: tuple[str, ...] = (
    "CREATE INDEX IF NOT EXISTS interactions_by_time ON interactions (time, id)",
    *(f"CREATE INDEX IF NOT EXISTS interactions_by_{c} ON interactions ({c}, time, id)" for c in INDEXED),
    "CREATE INDEX IF NOT EXISTS interactions_by_label ON interactions (label_time)",
)


# ----------------------------------------------------------------------------------------------- rows <-> records
def _claim_json(claim: ClaimSupport) -> dict[str, Any]:
    return {
        "of": claim.of, "text": claim.text, "start": claim.start, "end": claim.end, "outcome": claim.outcome.value,
        "reason": claim.reason, "similarity": claim.similarity, "document": claim.document,
        "passage_start": claim.passage_start, "passage_end": claim.passage_end,
        "lexical_precision": claim.lexical_precision, "missing_numbers": list(claim.missing_numbers),
        "missing_names": list(claim.missing_names), "conflicts": list(claim.conflicts),
        "evidence_document": claim.evidence_document, "evidence_start": claim.evidence_start, "evidence_end": claim.evidence_end,
    }


def _claim(data: dict[str, Any]) -> ClaimSupport:
    data = dict(data)
    if "outcome" in data:
        outcome = ClaimOutcome(data.pop("outcome"))
    else:  # a row written before claims had outcomes (supported: true / false / null)
        outcome = ClaimOutcome.of_supported(data.pop("supported"))
    tuples = {key: tuple(data.get(key, ())) for key in ("missing_numbers", "missing_names", "conflicts")}
    return ClaimSupport(**{**data, **tuples, "outcome": outcome})


def row_values(item: CapturedInteraction) -> tuple[Any, ...]:
    """The row of one interaction, in COLUMNS order."""
    scores = item.scores.as_dict()
    label = item.label
    return (
        item.id, item.time, item.verdict, item.poor_retrieval, item.model, item.user, item.session, item.latency_ms,
        item.prompt_tokens, item.answer_tokens, item.supporting_tokens, item.trace_id, item.span_id, item.rag_source,
        item.unscored_reason, *(scores[m] for m in METRICS), item.scores.attributed_document, item.question,
        item.answer, item.supporting, item.explanation,
        orjson.dumps([{"id": d.id, "text": d.text} for d in item.documents]).decode(),
        orjson.dumps([_claim_json(c) for c in item.claims]).decode(),
        orjson.dumps({m: item.thresholds.of(m) for m in METRICS}).decode(),
        None if label is None else label.verdict_right, None if label is None else label.right_verdict,
        None if label is None else label.note, None if label is None else label.time,
        item.guard_action, item.guard_outcome, item.delivered_answer,
    )


def from_row(row: Sequence[Any]) -> CapturedInteraction:
    r = dict(zip(COLUMNS, row, strict=True))
    label = None
    if r["label_time"] is not None:
        label = Label(r["id"], bool(r["label_right"]), r["label_verdict"], r["label_note"] or "", float(r["label_time"]))
    return CapturedInteraction(
        id=r["id"], time=float(r["time"]), question=r["question"],
        documents=tuple(Document(d["text"], d["id"]) for d in orjson.loads(r["documents"])),
        supporting=r["supporting"], answer=r["answer"],
        scores=Scores(**{m: r[m] for m in METRICS}, attributed_document=r["attributed_document"]),
        thresholds=Thresholds(**orjson.loads(r["thresholds"])), verdict=r["verdict"],
        poor_retrieval=None if r["poor_retrieval"] is None else bool(r["poor_retrieval"]),
        explanation=r["explanation"], claims=tuple(_claim(c) for c in orjson.loads(r["claims"])),
        unscored_reason=r["unscored_reason"], latency_ms=r["latency_ms"], model=r["model"],
        prompt_tokens=r["prompt_tokens"], answer_tokens=r["answer_tokens"], supporting_tokens=r["supporting_tokens"],
        trace_id=r["trace_id"], span_id=r["span_id"], user=r["user_id"], session=r["session_id"],
        rag_source=r["rag_source"], label=label, guard_action=r["guard_action"], guard_outcome=r["guard_outcome"],
        delivered_answer=r["delivered_answer"],
    )


def search_text(item: CapturedInteraction) -> str:
    """What free-text search looks through."""
    return "\n".join([item.question, item.answer or "", item.supporting or "", *(d.text for d in item.documents)])


# ----------------------------------------------------------------------------------------------------- the SQL
class SqlConnection:
    """One connection and the store's operations on it.  Not thread-safe: one thread uses it at a time."""

    placeholder = "?"

    def __init__(self, connection: Any) -> None:
        self.connection = connection

    # --- dialect ---------------------------------------------------------------------------------------------
    def ensure_schema(self) -> None:
        raise NotImplementedError

    def transaction(self) -> contextlib.AbstractContextManager[Any]:
        raise NotImplementedError

    def insert_rows(self, items: Sequence[CapturedInteraction]) -> None:
        raise NotImplementedError

    def text_filter(self, text: str) -> tuple[str, list[Any]] | None:
        """The WHERE clause (and its parameters) for free text, None when the text has no words."""
        raise NotImplementedError

    def maintain(self) -> None:
        """Keep the planner's statistics current (after pruning); PostgreSQL's autovacuum does it by itself."""

    def gone(self) -> tuple[str, tuple[int, int]] | None:
        """("deleted" | "replaced", the file's (device, inode)) when the database file this connection writes to is
        no longer the one at its path; None while it is (and always for a server database)."""
        return None

    def row_error(self, error: BaseException) -> bool:
        """True when `error` is the database refusing a row's values (not a lost connection, a lock or a full disk):
        the other rows of its batch can still be written."""
        return False

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.connection.close()

    # --- helpers ---------------------------------------------------------------------------------------------
    def sql(self, statement: str) -> str:
        return statement if self.placeholder == "?" else statement.replace("?", self.placeholder)

    def execute(self, statement: str, params: Sequence[Any] = ()) -> Any:
        return self.connection.execute(self.sql(statement), tuple(params))

    def fetchall(self, statement: str, params: Sequence[Any] = ()) -> list[Any]:
        return list(self.execute(statement, params).fetchall())

    # --- operations ------------------------------------------------------------------------------------------
    def add_many(self, items: Sequence[CapturedInteraction]) -> int:
        if not items:
            return 0
        with self.transaction():
            self.insert_rows(items)
        return len(items)

    def _where(self, query: StoreQuery, *, paged: bool) -> tuple[str, list[Any]]:
        clauses: list[str] = []
        params: list[Any] = []
        if query.verdicts:
            clauses.append(f"verdict IN ({', '.join('?' for _ in query.verdicts)})")
            params.extend(query.verdicts)
        for column, value in (("model", query.model), ("user_id", query.user), ("session_id", query.session)):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        if query.poor_retrieval is not None:
            clauses.append("poor_retrieval = ?")
            params.append(query.poor_retrieval)
        if query.since is not None:
            clauses.append("time >= ?")
            params.append(query.since)
        if query.until is not None:
            clauses.append("time < ?")
            params.append(query.until)
        if query.labelled is not None:
            clauses.append("label_time IS NOT NULL" if query.labelled else "label_time IS NULL")
        if query.text and query.text.strip():
            found = self.text_filter(query.text)
            if found is not None:
                clauses.append(found[0])
                params.extend(found[1])
        if paged and query.cursor is not None:
            at, after_id = decode_cursor(query.cursor)
            clauses.append("(time, id) < (?, ?)")  # row values: both SQLite and PostgreSQL walk the index
            params.extend((at, after_id))
        return (" WHERE " + " AND ".join(clauses)) if clauses else "", params

    def query(self, query: StoreQuery) -> Page:
        query.check()
        where, params = self._where(query, paged=True)
        rows = self.fetchall(f"SELECT {', '.join(COLUMNS)} FROM interactions{where} ORDER BY time DESC, id DESC LIMIT ?",
                             [*params, query.limit + 1])
        items = tuple(from_row(r) for r in rows[: query.limit])
        more = len(rows) > query.limit
        return Page(items, encode_cursor(items[-1].time, items[-1].id) if more and items else None)

    def count(self, query: StoreQuery | None) -> int:
        query = query or StoreQuery()
        query.check()
        where, params = self._where(query, paged=False)
        return int(self.fetchall(f"SELECT count(*) FROM interactions{where}", params)[0][0])

    def get(self, interaction_id: str) -> CapturedInteraction | None:
        if "\x00" in interaction_id:  # no id holds one (PostgreSQL would refuse the query)
            return None
        rows = self.fetchall(f"SELECT {', '.join(COLUMNS)} FROM interactions WHERE id = ?", [interaction_id])
        return from_row(rows[0]) if rows else None

    def add_label(self, label: Label) -> Label:
        if label.time <= 0:
            label = Label(label.interaction_id, label.verdict_right, label.right_verdict, label.note, time.time())
        with self.transaction():
            found = self.fetchall("SELECT verdict FROM interactions WHERE id = ?", [label.interaction_id])
            if not found:
                raise UnknownInteraction(f"no captured interaction {label.interaction_id[:80]!r}")
            label.check(found[0][0])
            self.execute("INSERT INTO labels (interaction_id, verdict_right, right_verdict, note, time) VALUES (?, ?, ?, ?, ?)",
                         [label.interaction_id, label.verdict_right, label.right_verdict, label.note, label.time])
            self.execute("UPDATE interactions SET label_right = ?, label_verdict = ?, label_note = ?, label_time = ? WHERE id = ?",
                         [label.verdict_right, label.right_verdict, label.note, label.time, label.interaction_id])
        return label

    def labelled(self, limit: int) -> list[CapturedInteraction]:
        rows = self.fetchall(f"SELECT {', '.join(COLUMNS)} FROM interactions WHERE label_time IS NOT NULL "
                             "ORDER BY time DESC, id DESC LIMIT ?", [limit])
        return [from_row(r) for r in rows]

    def prune(self, max_rows: int, max_age_s: float, now: float) -> int:
        """Delete unlabelled rows older than `max_age_s`, then the oldest unlabelled rows beyond `max_rows`."""
        deleted = 0
        with self.transaction():
            cursor = self.execute("DELETE FROM interactions WHERE time < ? AND label_time IS NULL", [now - max_age_s])
            deleted += max(cursor.rowcount, 0)
            excess = int(self.fetchall("SELECT count(*) FROM interactions")[0][0]) - max_rows
            if excess > 0:
                cursor = self.execute(
                    "DELETE FROM interactions WHERE id IN (SELECT id FROM interactions WHERE label_time IS NULL "
                    "ORDER BY time, id LIMIT ?)", [excess])
                deleted += max(cursor.rowcount, 0)
        self.maintain()
        return deleted


def words(text: str) -> list[str]:
    """The words of a free-text query (bounded: a page cannot send an unbounded expression to the database)."""
    return [w for w in text.split() if w][:16]


def iter_chunks(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]
