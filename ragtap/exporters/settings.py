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


OTLP_PROTOCOLS = ("grpc", "http/protobuf")


@dataclass(frozen=True)
class OtelSettings:
    """How ragtap exports OpenTelemetry traces, metrics and log-based events (GenAI semantic conventions).

    Every unset value falls back to the standard OpenTelemetry environment variables, read by the SDK:
    `endpoint` to OTEL_EXPORTER_OTLP_<SIGNAL>_ENDPOINT / OTEL_EXPORTER_OTLP_ENDPOINT, `headers` to
    OTEL_EXPORTER_OTLP_(<SIGNAL>_)HEADERS, `protocol` to OTEL_EXPORTER_OTLP_(<SIGNAL>_)PROTOCOL (default
    http/protobuf), `service_name` to OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES (default "ragtap").  An HTTP
    endpoint without a path gets `/v1/traces`, `/v1/metrics`, `/v1/logs` appended; a gRPC endpoint is used as is.
    Message content (question, documents, messages, supporting content, answer) is recorded only when
    `capture_content` is on, each text capped at `content_max_chars` characters.
    """

    enabled: bool = False
    exporter: str = "otlp"  # "otlp" | "console" | "none"
    protocol: str | None = None  # "grpc" | "http/protobuf"; None: OTEL_EXPORTER_OTLP_(<SIGNAL>_)PROTOCOL
    endpoint: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    service_name: str | None = None  # None: OTEL_SERVICE_NAME, else service.name of OTEL_RESOURCE_ATTRIBUTES, else "ragtap"
    capture_content: bool = False
    content_max_chars: int = 4096
    provider_name: str = "openai"  # gen_ai.provider.name of the upstream
    export_timeout: float = 10.0  # seconds per OTLP export, retries included
    metrics: bool = True  # gen_ai.client.* metrics through the OTel metrics SDK
    metrics_interval_s: float | None = None  # None: OTEL_METRIC_EXPORT_INTERVAL (SDK default 60 s)
    logs: bool = True  # evaluation results also as log-based `gen_ai.evaluation.result` events
    evaluation_span: bool = True  # the `evaluate ragtap` child span (for trace-only backends)

    def __hash__(self) -> int:  # `headers` is a dict; hash the rest so the settings stay usable as keys
        return hash((self.enabled, self.exporter, self.protocol, self.endpoint, tuple(sorted(self.headers.items())),
                     self.service_name, self.capture_content, self.content_max_chars, self.provider_name,
                     self.export_timeout, self.metrics, self.metrics_interval_s, self.logs, self.evaluation_span))


def headers_from_config(value: object) -> dict[str, str]:
    """`headers` as a TOML table, or as the OTLP environment format `key=value,key2=value2` (RAGTAP_OTEL_HEADERS)."""
    if isinstance(value, dict):
        return {str(k): str(v) for k, v in value.items()}
    if isinstance(value, str):
        headers = {}
        for item in value.split(","):
            if not item.strip():
                continue
            key, sep, val = item.partition("=")
            if not sep or not key.strip():
                raise ValueError(f"expected key=value pairs separated by commas (got {item.strip()!r})")
            from urllib.parse import unquote

            headers[unquote(key.strip())] = unquote(val.strip())
        return headers
    raise ValueError(f"expected a table or 'key=value,...' (got {type(value).__name__})")
