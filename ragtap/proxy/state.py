"""What the request handlers share: settings, the upstream client, the scoring queue and the exporters."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aiohttp import web

from ragtap.config import Config
from ragtap.cost import PriceTable
from ragtap.exporters.base import ExporterSet
from ragtap.pipeline.queue import ScoringQueue
from ragtap.pipeline.redis_handoff import RedisHandoff
from ragtap.proxy.upstream import Upstream
from ragtap.recognise import CustomPattern


@dataclass(slots=True)
class ProxyState:
    config: Config
    upstream: Upstream
    exporter: ExporterSet
    scoring: ScoringQueue | RedisHandoff | None  # None when scoring is disabled; RedisHandoff: `[scoring] queue = "redis://..."`
    patterns: tuple[CustomPattern, ...]
    prices: PriceTable | None = None  # ragtap's own overhead cost ([cost]); built from `config` when not given
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
