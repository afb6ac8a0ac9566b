"""Settings of the observability exporters (Prometheus metrics, OpenTelemetry traces).

Plain frozen dataclasses with safe defaults: Prometheus on (served on the proxy's own port at /metrics),
OpenTelemetry off.  The config loader fills them from config.toml / environment; nothing here reads either.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class PrometheusSettings:
    """How ragtap exposes Prometheus metrics.

    `listen_port` None serves `path` on the proxy's own listener; a port starts a separate listener (useful to
    keep /metrics off the port apps can reach).  `token`, when set, must be sent as `Authorization: Bearer <token>`
    by the scraper.  The `model` label only ever takes the values in `models` (when given) or the first
    `max_models` models seen; everything else is reported as "other", so label cardinality stays bounded.
    """

    enabled: bool = True
    path: str = "/metrics"
    listen_host: str | None = None  # None: the proxy's host (for a separate listener: 0.0.0.0 is not assumed)
    listen_port: int | None = None  # None: serve on the proxy's port
    token: str | None = None
    models: tuple[str, ...] = ()
    max_models: int = 20


@dataclass(frozen=True)
class OtelSettings:
    """How ragtap exports OpenTelemetry traces (GenAI semantic conventions).

    `endpoint` None falls back to the standard OTEL_EXPORTER_OTLP_TRACES_ENDPOINT / OTEL_EXPORTER_OTLP_ENDPOINT
    environment variables (the SDK's own resolution); an endpoint without a path gets `/v1/traces` appended.
    `headers` empty falls back to OTEL_EXPORTER_OTLP_(TRACES_)HEADERS.  Message content (question, documents,
    supporting content, answer) is recorded only when `capture_content` is on, each text capped at
    `content_max_chars` characters.
    """

    enabled: bool = False
    exporter: str = "otlp"  # "otlp" (HTTP/protobuf) | "console" | "none"
    endpoint: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    service_name: str = "ragtap"
    capture_content: bool = False
    content_max_chars: int = 4096
    provider_name: str = "openai"  # gen_ai.provider.name of the upstream
    export_timeout: float = 10.0  # seconds per OTLP export, retries included

    def __hash__(self) -> int:  # `headers` is a dict; hash the rest so the settings stay usable as keys
        return hash((self.enabled, self.exporter, self.endpoint, tuple(sorted(self.headers.items())),
                     self.service_name, self.capture_content, self.content_max_chars, self.provider_name,
                     self.export_timeout))
