"""The triage page's JSON: query strings to `StoreQuery`, captured interactions to JSON, label posts to `Label`.

Pure functions (no I/O, no aiohttp): the handlers in `routes.py` call them and turn `BadRequest` into a 400 with
its one-line message.  Every text in the JSON is data for the page's `textContent`, never markup.

Query parameters of `GET api/interactions` (all optional, combined with AND):

    verdict=refusal,parametric   one or more verdicts (comma-separated or repeated)
    poor_retrieval=true|false
    model=, user=, session=      exact match
    q=                           free text over question, answer, supporting content and documents
    from=, to=                   time range: epoch milliseconds (what Grafana's ${__from}/${__to} give),
                                 Grafana's now-15m / now, or ISO 8601 (2026-11-24T10:00:00Z); `from` inclusive,
                                 `to` exclusive
    labelled=true|false
    cursor=                      the `next_cursor` of the previous page (keyset paging, newest first)
    limit=                       rows per page (1..500)
"""

from __future__ import annotations

import json
import math
import re
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any
from urllib.parse import quote

from ragtap.store.base import (
    MAX_NOTE_CHARS,
    MAX_PAGE_SIZE,
    VERDICTS,
    CapturedInteraction,
    Label,
    StoreError,
    StoreQuery,
    encode_cursor,
)
from ragtap.types import METRICS, ClaimSupport

QUESTION_PREVIEW_CHARS = 300  # the table shows the start of the question; the detail view shows all of it
MAX_FILTER_CHARS = 512
MAX_LABEL_BODY_BYTES = 16 * 1024
_TRACE_ID = re.compile(r"[0-9a-f]{32}")
_SPAN_ID = re.compile(r"[0-9a-f]{16}")
_BOOLEANS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}
_KNOWN_PARAMS = {"verdict", "poor_retrieval", "model", "user", "session", "q", "from", "to", "labelled", "cursor", "limit"}


class BadRequest(ValueError):
    """A request the API cannot serve; the message is one line for the client."""


def no_nul(value: str, name: str) -> str:
    """`value`, or BadRequest when it holds a NUL character (no stored text can contain one, and PostgreSQL refuses
    it in a query: it would read as the store failing)."""
    if "\x00" in value:
        raise BadRequest(f"{name}: contains a NUL character")
    return value


@dataclass(frozen=True, slots=True)
class QueryParams:
    """The query string of a request: (name, value) pairs in order (repeated names allowed)."""

    pairs: tuple[tuple[str, str], ...]

    def all(self, name: str) -> list[str]:
        return [value for key, value in self.pairs if key == name]

    def one(self, name: str) -> str | None:
        values = [v for v in self.all(name) if v.strip()]
        if len(values) > 1:
            raise BadRequest(f"{name}: given {len(values)} times, expected once")
        if values and len(values[0]) > MAX_FILTER_CHARS:
            raise BadRequest(f"{name}: longer than {MAX_FILTER_CHARS} characters")
        return values[0].strip() if values else None


def _boolean(params: QueryParams, name: str) -> bool | None:
    value = params.one(name)
    if value is None:
        return None
    try:
        return _BOOLEANS[value.lower()]
    except KeyError:
        raise BadRequest(f"{name}: expected true or false (got {value[:40]!r})") from None


_RELATIVE = re.compile(r"now(?:-(\d+)([smhdw]))?")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_time(value: str, name: str, now: float | None = None) -> float:
    """Epoch seconds from epoch milliseconds (Grafana's ${__from}), Grafana's relative `now-15m` / `now`, or ISO 8601
    (a naive time is UTC)."""
    relative = _RELATIVE.fullmatch(value)
    if relative:
        amount, unit = relative.groups()
        return (time.time() if now is None else now) - (int(amount) * _UNIT_SECONDS[unit] if amount else 0)
    try:
        millis = float(value)
    except ValueError:
        pass
    else:
        if not math.isfinite(millis) or millis < 0:
            raise BadRequest(f"{name}: expected epoch milliseconds >= 0 or ISO 8601 (got {value[:40]!r})")
        return millis / 1000.0
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise BadRequest(f"{name}: expected epoch milliseconds, now-15m or ISO 8601 such as 2026-11-24T10:00:00Z (got {value[:40]!r})") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


def store_query(params: QueryParams, default_limit: int) -> StoreQuery:
    """The store query a request asks for (BadRequest with one line when a parameter makes no sense)."""
    unknown = sorted({key for key, _ in params.pairs} - _KNOWN_PARAMS)
    if unknown:
        raise BadRequest(f"unknown parameter(s) {', '.join(unknown)}: expected {', '.join(sorted(_KNOWN_PARAMS))}")
    for key, value in params.pairs:
        no_nul(value, key)
    verdicts = tuple(dict.fromkeys(v.strip() for raw in params.all("verdict") for v in raw.split(",") if v.strip()))
    wrong = [v for v in verdicts if v not in VERDICTS]
    if wrong:
        raise BadRequest(f"verdict: unknown {', '.join(repr(v[:40]) for v in wrong)}: expected {', '.join(VERDICTS)}")
    since = parse_time(v, "from") if (v := params.one("from")) is not None else None
    until = parse_time(v, "to") if (v := params.one("to")) is not None else None
    if since is not None and until is not None and until <= since:
        raise BadRequest("to: must be later than from")
    limit_text = params.one("limit")
    try:
        limit = int(limit_text) if limit_text is not None else default_limit
    except ValueError:
        raise BadRequest(f"limit: expected a whole number (got {limit_text[:40]!r})") from None
    if not 1 <= limit <= MAX_PAGE_SIZE:
        raise BadRequest(f"limit: expected 1 to {MAX_PAGE_SIZE} (got {limit})")
    query = StoreQuery(
        verdicts=verdicts,
        poor_retrieval=_boolean(params, "poor_retrieval"),
        model=params.one("model"),
        since=since,
        until=until,
        user=params.one("user"),
        session=params.one("session"),
        text=params.one("q"),
        labelled=_boolean(params, "labelled"),
        cursor=params.one("cursor"),
        limit=limit,
    )
    try:
        query.check()
    except StoreError as error:
        raise BadRequest(str(error)) from None
    return query


# ---------------------------------------------------------------------------------------------------- to JSON
def _label_json(label: Label | None) -> dict[str, Any] | None:
    if label is None:
        return None
    return {"verdict_right": label.verdict_right, "right_verdict": label.right_verdict, "note": label.note, "time": label.time}


def row_json(item: CapturedInteraction) -> dict[str, Any]:
    """One row of the table: the thesis's Fig 3.2 columns, each score with the threshold it was judged against."""
    question = item.question
    return {
        "id": item.id,
        "cursor": encode_cursor(item.time, item.id),  # resume paging after this row (the live view drops old rows)
        "time": item.time,
        "question": question[:QUESTION_PREVIEW_CHARS],
        "question_clipped": len(question) > QUESTION_PREVIEW_CHARS,
        "scores": item.scores.as_dict(),
        "thresholds": {m: item.thresholds.of(m) for m in METRICS},
        "passed": item.passed(),
        "verdict": item.verdict,
        "poor_retrieval": item.poor_retrieval,
        "model": item.model,
        "user": item.user,
        "session": item.session,
        "unsupported_claims": len(item.unsupported_claims),
        "guard_changed": item.delivered_answer is not None,
        "label": _label_json(item.label),
    }


def _claim_json(claim: ClaimSupport) -> dict[str, Any]:
    return {
        "of": claim.of,
        "start": claim.start,
        "end": claim.end,
        "text": claim.text,
        "supported": claim.supported,
        "outcome": claim.outcome.value,
        "reason": claim.reason,
        "similarity": claim.similarity,
        "document": claim.document,
        "missing_numbers": list(claim.missing_numbers),
        "missing_names": list(claim.missing_names),
        "conflicts": list(claim.conflicts),
        "evidence": None if claim.evidence_document is None else [claim.evidence_document, claim.evidence_start, claim.evidence_end],
    }


def trace_url(template: str | None, trace_id: str | None, span_id: str | None) -> str | None:
    """The template with the ids filled in; None without a template or a well-formed trace id (W3C hex)."""
    if not template or not trace_id or not _TRACE_ID.fullmatch(trace_id):
        return None
    span = span_id if span_id and _SPAN_ID.fullmatch(span_id) else ""
    if "{span_id}" in template and not span:
        return None
    return template.replace("{trace_id}", quote(trace_id, safe="")).replace("{span_id}", quote(span, safe=""))


def detail_json(item: CapturedInteraction, trace_template: str | None) -> dict[str, Any]:
    """Everything the detail view shows: the texts, the claims (offsets into the answer / support), the rule."""
    attributed = item.scores.attributed_document
    return {
        **row_json(item),
        "question": item.question,
        "question_clipped": False,
        "documents": [
            {"index": i, "id": doc.id, "text": doc.text, "attributed": i == attributed} for i, doc in enumerate(item.documents)
        ],
        "attributed_document": attributed,
        "supporting": item.supporting,
        "answer": item.answer,
        # The guard (docs/guard.md): what it did, and the answer the app received when that is not `answer`.
        "guard": None if item.guard_action is None else {
            "action": item.guard_action, "outcome": item.guard_outcome, "delivered_answer": item.delivered_answer,
        },
        "claims": [_claim_json(c) for c in item.claims],
        "explanation": item.explanation,
        "unscored_reason": item.unscored_reason,
        "rag_source": item.rag_source,
        "latency_ms": item.latency_ms,
        "tokens": {"prompt": item.prompt_tokens, "answer": item.answer_tokens, "supporting": item.supporting_tokens},
        "trace": {"trace_id": item.trace_id, "span_id": item.span_id, "url": trace_url(trace_template, item.trace_id, item.span_id)},
    }


# ------------------------------------------------------------------------------------------------- from JSON
def parse_label(interaction_id: str, body: bytes) -> Label:
    """A label from a posted JSON object {"verdict_right": bool, "right_verdict": str|null, "note": str}."""
    if len(body) > MAX_LABEL_BODY_BYTES:
        raise BadRequest(f"label body larger than {MAX_LABEL_BODY_BYTES} bytes")
    try:
        data = json.loads(body)
    except RecursionError:  # 16 KB of "[[[[..." is valid JSON too deep for the parser
        raise BadRequest("label body is nested too deeply: expected a flat JSON object") from None
    except (ValueError, UnicodeDecodeError):
        raise BadRequest("label body is not JSON: expected {\"verdict_right\": true|false, \"right_verdict\": ..., \"note\": ...}") from None
    if not isinstance(data, dict):
        raise BadRequest(f"label body must be a JSON object (got {type(data).__name__})")
    unknown = sorted(set(data) - {"verdict_right", "right_verdict", "note"})
    if unknown:
        raise BadRequest(f"label: unknown field(s) {', '.join(map(repr, unknown))}: expected verdict_right, right_verdict, note")
    right = data.get("verdict_right")
    if not isinstance(right, bool):
        raise BadRequest(f"verdict_right: expected true or false (got {json.dumps(right)[:40]})")
    verdict = data.get("right_verdict")
    if verdict is not None and (not isinstance(verdict, str) or verdict not in VERDICTS):
        raise BadRequest(f"right_verdict: expected one of {', '.join(VERDICTS)} or null (got {json.dumps(verdict)[:40]})")
    note = data.get("note", "")
    if note is None:
        note = ""
    if not isinstance(note, str):
        raise BadRequest(f"note: expected a string (got {type(note).__name__})")
    if len(note) > MAX_NOTE_CHARS:
        raise BadRequest(f"note: longer than {MAX_NOTE_CHARS} characters")
    no_nul(note, "note")
    return Label(interaction_id=interaction_id, verdict_right=right, right_verdict=verdict, note=note)
