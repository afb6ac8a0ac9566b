"""What the request handlers share: settings, the upstream client, the scoring queue and the exporters."""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import web

from ragtap.config import Config
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


STATE: web.AppKey[ProxyState] = web.AppKey("ragtap_state", ProxyState)
