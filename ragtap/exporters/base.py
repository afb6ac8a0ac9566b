"""The hook interface every exporter implements.

Modelled on mitmproxy's addons: the proxy and the scoring service call these hooks at fixed points, and an
exporter overrides only the ones it needs.  Hooks run on the event loop and must be quick and must not raise
into the caller: `ExporterSet` catches and counts what an exporter throws.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ragtap.exchange import ExchangeRecord
from ragtap.types import Assessment, Interaction

if TYPE_CHECKING:
    from ragtap.judgement import Judgement

log = logging.getLogger("ragtap.exporters")


class Exporter:
    """Base class with no-op hooks; subclasses override what they export."""

    # True when `shutdown()` is network I/O that may retry against a dead receiver: the server then runs it in a
    # thread bounded by what is left of the grace period, after the local exporters have closed.
    flushes_over_network: bool = False
    # True when the exporter reads `ExchangeRecord.input_messages` (the app's messages, e.g. the spans' content
    # capture): the proxy copies them onto the record only then.
    wants_messages: bool = False

    def exchange_started(self, exchange: ExchangeRecord) -> None:
        """A chat request arrived (before it is forwarded)."""

    def exchange_finished(self, exchange: ExchangeRecord) -> None:
        """The app has received the whole response (or the exchange ended otherwise; see `outcome`)."""

    def passthrough_finished(self, exchange: ExchangeRecord) -> None:
        """A non-chat `/v1/*` request was forwarded untouched."""

    def interaction_scored(self, interaction: Interaction, assessment: Assessment, seconds: float) -> None:
        """Scoring finished; `interaction.exchange` is the ExchangeRecord when online (None offline)."""

    def interaction_judged(self, interaction: Interaction, judgement: Judgement) -> None:
        """The LLM judge (ragtap.pipeline.online_judge) finished the Ragas metrics of a scored interaction."""

    def scoring_dropped(self, reason: str) -> None:
        """An interaction was not scored because the queue was full (or ragtap is shutting down)."""

    def scoring_failed(self, interaction: Interaction, error: BaseException) -> None:
        """The embedder or the scoring core raised."""

    def queue_depth(self, depth: int) -> None:
        """The scoring queue's length after a change."""

    def client_rejected(self, reason: str) -> None:
        """ragtap closed a client's connection or refused its request: a timeout, the connection limit (reason
        codes in ragtap/proxy/clients.py)."""

    def shutdown(self) -> None:
        """Flush and close (called once, at exit)."""


class ExporterSet(Exporter):
    """Fans every hook out to several exporters; an exporter that raises is logged and skipped.  A hook is called
    only on the exporters whose class overrides it (the others' is the base class's no-op): most exporters
    implement two or three of the hooks, and the proxy calls several per request."""

    def __init__(self, exporters: list[Exporter] | None = None) -> None:
        self._exporters: tuple[Exporter, ...] = tuple(exporters or [])
        self._hooked: dict[str, tuple[Callable[..., None], ...]] = {}  # hook -> the bound hooks that are not no-ops
        self.errors = 0

    @property
    def exporters(self) -> tuple[Exporter, ...]:
        return self._exporters

    def add(self, exporter: Exporter) -> None:
        self._exporters = (*self._exporters, exporter)
        self._hooked.clear()

    @property  # type: ignore[override]
    def wants_messages(self) -> bool:
        for exporter in self._exporters:
            if exporter.wants_messages:
                return True
        return False

    def _each(self, hook: str, *args: Any) -> None:
        methods = self._hooked.get(hook)
        if methods is None:
            base = getattr(Exporter, hook)
            methods = self._hooked[hook] = tuple(getattr(e, hook) for e in self._exporters if getattr(type(e), hook, None) is not base)
        for method in methods:
            try:
                method(*args)
            except Exception:  # an exporter must never break a request
                self.errors += 1
                log.exception("exporter %s failed in %s", type(method.__self__).__name__, hook)

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

    def client_rejected(self, reason: str) -> None:
        self._each("client_rejected", reason)

    def shutdown(self) -> None:
        self._each("shutdown")
