"""The hook interface every exporter implements, and the record of one proxied exchange.

Modelled on mitmproxy's addons: the proxy and the scoring service call these hooks at fixed points, and an
exporter overrides only the ones it needs.  Hooks run on the event loop and must be quick and must not raise
into the caller: `ExporterSet` catches and counts what an exporter throws.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ragtap.types import Assessment, Interaction

if TYPE_CHECKING:
    from ragtap.judge.ragas import Judgement

log = logging.getLogger("ragtap.exporters")


@dataclass(slots=True)
class ExchangeRecord:
    """What the proxy knows about one request/response, filled in as the exchange goes on.

    Times are `time.perf_counter()` readings.  Never holds credentials: `trace_headers` keeps only the W3C
    trace-context headers of the incoming request.
    """

    route: str
    method: str = "POST"
    request_model: str | None = None
    stream: bool = False
    rag_source: str | None = None  # the recognition rule that matched, None for non-RAG
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


class Exporter:
    """Base class with no-op hooks; subclasses override what they export."""

    def exchange_started(self, exchange: ExchangeRecord) -> None:
        """A chat request arrived (before it is forwarded)."""

    def exchange_finished(self, exchange: ExchangeRecord) -> None:
        """The app has received the whole response (or the exchange ended otherwise; see `outcome`)."""

    def passthrough_finished(self, exchange: ExchangeRecord) -> None:
        """A non-chat `/v1/*` request was forwarded untouched."""

    def interaction_scored(self, interaction: Interaction, assessment: Assessment, seconds: float) -> None:
        """Scoring finished; `interaction.meta.get("exchange")` is the ExchangeRecord when online."""

    def interaction_judged(self, interaction: Interaction, judgement: Judgement) -> None:
        """The LLM judge (ragtap.judge.online) finished the Ragas metrics of a scored interaction."""

    def scoring_dropped(self, reason: str) -> None:
        """An interaction was not scored because the queue was full (or ragtap is shutting down)."""

    def scoring_failed(self, interaction: Interaction, error: BaseException) -> None:
        """The embedder or the scoring core raised."""

    def queue_depth(self, depth: int) -> None:
        """The scoring queue's length after a change."""

    def shutdown(self) -> None:
        """Flush and close (called once, at exit)."""


class ExporterSet(Exporter):
    """Fans every hook out to several exporters; an exporter that raises is logged and skipped."""

    def __init__(self, exporters: list[Exporter] | None = None) -> None:
        self.exporters: list[Exporter] = list(exporters or [])
        self.errors = 0

    def add(self, exporter: Exporter) -> None:
        self.exporters.append(exporter)

    def _each(self, hook: str, *args: Any) -> None:
        for exporter in self.exporters:
            try:
                getattr(exporter, hook)(*args)
            except Exception:  # an exporter must never break a request
                self.errors += 1
                log.exception("exporter %s failed in %s", type(exporter).__name__, hook)

    def exchange_started(self, exchange: ExchangeRecord) -> None:
        self._each("exchange_started", exchange)

    def exchange_finished(self, exchange: ExchangeRecord) -> None:
        self._each("exchange_finished", exchange)

    def passthrough_finished(self, exchange: ExchangeRecord) -> None:
        self._each("passthrough_finished", exchange)

    def interaction_scored(self, interaction: Interaction, assessment: Assessment, seconds: float) -> None:
        self._each("interaction_scored", interaction, assessment, seconds)

    def interaction_judged(self, interaction: Interaction, judgement: Judgement) -> None:
        self._each("interaction_judged", interaction, judgement)

    def scoring_dropped(self, reason: str) -> None:
        self._each("scoring_dropped", reason)

    def scoring_failed(self, interaction: Interaction, error: BaseException) -> None:
        self._each("scoring_failed", interaction, error)

    def queue_depth(self, depth: int) -> None:
        self._each("queue_depth", depth)

    def shutdown(self) -> None:
        self._each("shutdown")
