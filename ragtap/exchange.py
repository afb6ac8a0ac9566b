"""The record of one proxied HTTP exchange, filled in by the proxy as the exchange goes on.

It is created by `ragtap.proxy` and read by the exporters (hooks) and, through `Interaction.exchange`, by the
scoring side.  It depends on nothing else in ragtap, so every layer may import it.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# Identifiers are copied into stores and spans: cap them, the app may send anything.
MAX_IDENTITY_CHARS = 256
USER_HEADER = "x-ragtap-user"
SESSION_HEADER = "x-ragtap-session"


@dataclass(slots=True)
class ExchangeRecord:
    """What the proxy knows about one request/response, filled in as the exchange goes on.

    Times are `time.perf_counter()` readings.  Never holds credentials: `trace_headers` keeps only the W3C
    trace-context headers of the incoming request.
    """

    route: str
    method: str = "POST"
    request_model: str | None = None
    # Who asked, when the app says so (the OpenAI `user` field, `metadata`, or x-ragtap-* headers): for the
    # capture store and spans, never Prometheus labels (unbounded cardinality).
    user: str | None = None
    session: str | None = None
    stream: bool = False
    rag_source: str | None = None  # the recognition rule that matched, None for non-RAG
    # Why recognition decided as it did: the rule, the client setting that forbids injection, or why not RAG
    # ("no_context", "no_question", ...); a closed set (ragtap.recognise.REASONS), safe as a metrics label.
    recognition: str | None = None
    # What was wrong with a malformed `ragtap` field (ragtap.recognise.FIELD_PROBLEMS), None when it was fine or
    # absent: counted and logged whatever recognition decided.
    ragtap_field_problem: str | None = None
    injected: bool = False
    trace_headers: dict[str, str] = field(default_factory=dict)
    upstream_host: str | None = None
    upstream_port: int | None = None
    started_at: float = field(default_factory=time.perf_counter)
    upstream_sent_at: float | None = None
    upstream_headers_at: float | None = None
    upstream_done_at: float | None = None
    first_token_at: float | None = None  # first answer text forwarded to the app (streams)
    finished_at: float | None = None
    status: int | None = None
    error_type: str | None = None
    outcome: str = "complete"  # complete | incomplete (client went away) | upstream_error
    response_id: str | None = None
    response_model: str | None = None
    finish_reasons: tuple[str, ...] = ()
    input_tokens: int | None = None
    output_tokens: int | None = None
    supporting_tokens: int | None = None  # tokens the model spent on the supporting content
    extras: dict[str, Any] = field(default_factory=dict)  # per-exporter state (e.g. the OTel span)

    @property
    def total_seconds(self) -> float | None:
        if self.finished_at is None:
            return None
        return self.finished_at - self.started_at

    @property
    def upstream_seconds(self) -> float | None:
        if self.upstream_sent_at is None or self.upstream_done_at is None:
            return None
        return self.upstream_done_at - self.upstream_sent_at

    @property
    def added_seconds(self) -> float | None:
        """ragtap's own share of the wall time: everything that was not waiting for the upstream."""
        total, upstream = self.total_seconds, self.upstream_seconds
        if total is None or upstream is None:
            return None
        return max(0.0, total - upstream)


def _identity(value: Any) -> str | None:
    if isinstance(value, str) and value.strip():
        return value.strip()[:MAX_IDENTITY_CHARS]
    return None


def request_identity(body: Mapping[str, Any] | None, headers: Mapping[str, str]) -> tuple[str | None, str | None]:
    """(user, session) of a request: the x-ragtap-* headers first (set by a gateway the app trusts), then the
    body's OpenAI fields: `user` (or its successor `safety_identifier`) and `metadata.user_id` /
    `metadata.session_id` (OpenAI's free-form metadata; LangChain and the Agents SDK pass it through)."""
    metadata = body.get("metadata") if body is not None else None
    metadata = metadata if isinstance(metadata, Mapping) else {}
    user = _identity(headers.get(USER_HEADER))
    if user is None and body is not None:
        user = _identity(body.get("user")) or _identity(body.get("safety_identifier")) or _identity(metadata.get("user_id"))
    session = _identity(headers.get(SESSION_HEADER)) or _identity(metadata.get("session_id"))
    return user, session
