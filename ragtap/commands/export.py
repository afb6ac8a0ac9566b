"""`ragtap export [--out FILE]`: capture-store rows as JSON lines in `ragtap score`'s input format.

Each line holds `id`, `model`, `question`, `documents` ({id, text} or text), `supporting`, `answer` (what
`ragtap score` reads), the capture's `scores` (so `ragtap calibrate` can use them without re-scoring), what
was captured with them (`captured`: verdict, poor retrieval, time, latency, tokens, user, session, trace id),
and the human `label` when there is one (`label.poor`: the answer was not grounded; usable as
`ragtap calibrate export.jsonl --label label.poor`).  Newest first, read page by page (bounded memory).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from datetime import UTC, datetime
from typing import IO, Any

import orjson

from ragtap.commands.common import CommandError, output_file, store_settings


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("export", help="write capture-store rows as JSONL (ragtap score's input format)")
    p.add_argument("--out", help="write here (default: stdout)")
    p.add_argument("--config", help="config.toml with the [store] section")
    p.add_argument("--store", help="the SQLite file or postgresql:// URL (default: [store] of --config)")
    p.add_argument("--verdict", action="append", default=[], help="only this verdict (repeatable)")
    p.add_argument("--labelled", action="store_true", help="only rows with a human label")
    p.add_argument("--since", help="only rows at or after this ISO time (e.g. 2026-11-24T00:00:00+00:00)")
    p.add_argument("--until", help="only rows before this ISO time")
    p.add_argument("--limit", type=int, default=None, help="at most this many rows")
    p.set_defaults(func=run)


def _epoch(text: str | None, option: str) -> float | None:
    if text is None:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise CommandError(f"{option}: not an ISO time: {text!r}") from None
    if moment.tzinfo is None:
        raise CommandError(f"{option}: give a time zone (e.g. {text}+00:00)")
    return moment.timestamp()


def export_record(row: Any) -> dict[str, Any]:
    """One store row in `ragtap score`'s input format, plus what was captured and labelled."""
    from ragtap.evaluation.from_store import is_poor

    record: dict[str, Any] = {
        "id": row.id,
        "model": row.model,
        "question": row.question,
        "documents": [{"id": d.id, "text": d.text} if d.id else d.text for d in row.documents],
        "supporting": row.supporting,
        "answer": row.answer,
        "scores": row.scores.as_dict(),
        "captured": {
            "time": datetime.fromtimestamp(row.time, UTC).isoformat(), "verdict": row.verdict,
            "poor_retrieval": row.poor_retrieval, "explanation": row.explanation, "unscored_reason": row.unscored_reason,
            "latency_ms": row.latency_ms, "prompt_tokens": row.prompt_tokens, "answer_tokens": row.answer_tokens,
            "supporting_tokens": row.supporting_tokens, "user": row.user, "session": row.session,
            "trace_id": row.trace_id, "span_id": row.span_id, "thresholds": {m: row.thresholds.of(m) for m in row.scores.as_dict()},
        },
    }
    if row.label is not None:
        record["label"] = {"verdict_right": row.label.verdict_right, "right_verdict": row.label.right_verdict,
                           "note": row.label.note, "poor": is_poor(row)}
    return record


def run(args: argparse.Namespace) -> int:
    import asyncio

    from ragtap.store.base import StoreError, StoreQuery
    from ragtap.store.factory import open_store

    settings = store_settings(args.config, args.store)
    query = StoreQuery(verdicts=tuple(args.verdict), labelled=True if args.labelled else None,
                       since=_epoch(args.since, "--since"), until=_epoch(args.until, "--until"), limit=500)
    if args.limit is not None and args.limit < 1:
        raise CommandError("--limit must be at least 1")

    async def export(out: IO[bytes]) -> int:
        store = open_store(settings)
        written = 0
        try:
            page_query = query
            while args.limit is None or written < args.limit:
                page = await store.query(page_query)
                for row in page.items[: None if args.limit is None else args.limit - written]:
                    out.write(orjson.dumps(export_record(row)) + b"\n")
                    written += 1
                if page.next_cursor is None:
                    break
                page_query = dataclasses.replace(query, cursor=page.next_cursor)
        finally:
            await store.close()
        return written

    out: IO[bytes] = output_file(args.out) if args.out else sys.stdout.buffer
    try:
        written = asyncio.run(export(out))
    except StoreError as error:
        raise CommandError(str(error)) from None
    finally:
        if args.out:
            out.close()
        else:
            out.flush()
    print(f"ragtap export: {written} interactions", file=sys.stderr)
    return 0
