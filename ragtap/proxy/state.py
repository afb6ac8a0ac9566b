"""What the request handlers share: settings, the upstream client, the scoring queue and the exporters."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiohttp import web

from ragtap.config import Config
from ragtap.cost import PriceTable
from ragtap.exporters.base import ExporterSet
from ragtap.pipeline.queue import ScoringQueue
from ragtap.pipeline.redis_handoff import RedisHandoff
from ragtap.proxy.upstream import Upstream
from ragtap.recognise import CustomPattern

if TYPE_CHECKING:
    from ragtap.proxy.exchange_path.seams import GateFactory, WholeReplyStep


@dataclass(frozen=True, slots=True)
class ExchangeSteps:
    """What is plugged into the exchange path's two seams (`proxy/exchange_path/seams.py`), in order; empty by
    default, and then the path does no extra work."""

    whole_reply: tuple[WholeReplyStep, ...] = ()  # seam (a): whole replies, before the body is built
    stream_gates: tuple[GateFactory, ...] = ()  # seam (b): each builds one stream's `AnswerGate` (or None)


@dataclass(slots=True)
class ProxyState:
    config: Config
    upstream: Upstream
    exporter: ExporterSet
    scoring: ScoringQueue | RedisHandoff | None  # None when scoring is disabled; RedisHandoff: `[scoring] queue = "redis://..."`
    patterns: tuple[CustomPattern, ...]
    prices: PriceTable | None = None  # ragtap's own overhead cost ([cost]); built from `config` when not given
    steps: ExchangeSteps = field(default_factory=ExchangeSteps)

    def __post_init__(self) -> None:
        if self.prices is None:
            self.prices = PriceTable(self.config.cost)

    @property
    def keep_messages(self) -> bool:
        """Copy the app's messages onto the exchange record: only when an exporter reads them (span content)."""
        return self.exporter.wants_messages


STATE: web.AppKey[ProxyState] = web.AppKey("ragtap_state", ProxyState)
# The capture store (ragtap.store.threaded.ThreadedStore) or None when [store] is off: for the triage page.
CAPTURE_STORE: web.AppKey[Any] = web.AppKey("ragtap_capture_store", object)
