"""Building the OpenTelemetry SDK pieces from `OtelSettings` and the standard `OTEL_*` environment variables:
the OTLP protocol and endpoint of each signal, the span/metric/log exporters `settings.exporter` names, the
resource (service.name), and the `OTEL_SDK_DISABLED` switch."""

from __future__ import annotations

import os
import sys
from typing import Any
from urllib.parse import urlsplit

from opentelemetry.sdk._logs.export import ConsoleLogRecordExporter, LogRecordExporter
from opentelemetry.sdk.metrics.export import ConsoleMetricExporter, MetricExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SpanExporter

from ragtap.exporters.settings import OTLP_PROTOCOLS, OtelSettings

DEFAULT_SERVICE_NAME = "ragtap"
SIGNALS = ("traces", "metrics", "logs")


def otlp_protocol(settings: OtelSettings, signal: str, environ: Any = None) -> str:
    """The OTLP protocol of one signal: the setting, else OTEL_EXPORTER_OTLP_<SIGNAL>_PROTOCOL, else
    OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf (the specification's default)."""
    env = os.environ if environ is None else environ
    protocol = (settings.protocol or env.get(f"OTEL_EXPORTER_OTLP_{signal.upper()}_PROTOCOL")
                or env.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "http/protobuf").strip().lower()
    if protocol not in OTLP_PROTOCOLS:
        raise ValueError(f"OTLP protocol {protocol!r} for {signal} is not supported by ragtap (grpc or http/protobuf)")
    return protocol


def _signal_endpoint(endpoint: str | None, signal: str, protocol: str) -> str | None:
    """HTTP: a base URL (no path) gets `/v1/<signal>`; gRPC: the URL as is; None leaves the SDK to read the
    standard environment variables (which it resolves per signal itself)."""
    if not endpoint:
        return None
    if protocol == "grpc":
        return endpoint
    if urlsplit(endpoint).path in ("", "/"):
        return endpoint.rstrip("/") + f"/v1/{signal}"
    return endpoint


def _otlp_arguments(settings: OtelSettings, signal: str, protocol: str) -> dict[str, Any]:
    return {"endpoint": _signal_endpoint(settings.endpoint, signal, protocol),
            "headers": dict(settings.headers) or None,  # None: OTEL_EXPORTER_OTLP_(<SIGNAL>_)HEADERS
            "timeout": settings.export_timeout}


def build_span_exporter(settings: OtelSettings) -> SpanExporter | None:
    """The span exporter `settings.exporter` names (None for "none")."""
    kind = (settings.exporter or "none").lower()
    if kind == "none":
        return None
    if kind == "console":
        return ConsoleSpanExporter(service_name=settings.service_name, out=sys.stderr)  # keep stdout for CLI output
    if kind == "otlp":
        protocol = otlp_protocol(settings, "traces")
        if protocol == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter

            return GrpcSpanExporter(**_otlp_arguments(settings, "traces", protocol))
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter(**_otlp_arguments(settings, "traces", protocol))
    raise ValueError(f"unknown OpenTelemetry exporter {settings.exporter!r} (otlp, console or none)")


def build_metric_exporter(settings: OtelSettings) -> MetricExporter | None:
    kind = (settings.exporter or "none").lower()
    if kind == "none":
        return None
    if kind == "console":
        return ConsoleMetricExporter(out=sys.stderr)
    protocol = otlp_protocol(settings, "metrics")
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter as GrpcMetricExporter

        return GrpcMetricExporter(**_otlp_arguments(settings, "metrics", protocol))
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

    return OTLPMetricExporter(**_otlp_arguments(settings, "metrics", protocol))


def build_log_exporter(settings: OtelSettings) -> LogRecordExporter | None:
    kind = (settings.exporter or "none").lower()
    if kind == "none":
        return None
    if kind == "console":
        return ConsoleLogRecordExporter(out=sys.stderr)
    protocol = otlp_protocol(settings, "logs")
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcLogExporter

        return GrpcLogExporter(**_otlp_arguments(settings, "logs", protocol))
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter

    return OTLPLogExporter(**_otlp_arguments(settings, "logs", protocol))


def _traces_endpoint(endpoint: str | None) -> str | None:
    """A base URL (no path) gets the OTLP/HTTP traces path; None leaves the SDK to read the standard env vars."""
    return _signal_endpoint(endpoint, "traces", "http/protobuf")


def build_resource(settings: OtelSettings) -> Resource:
    """service.name: the setting, else OTEL_SERVICE_NAME, else OTEL_RESOURCE_ATTRIBUTES' service.name, else
    "ragtap" (`Resource.create` reads both variables; the SDK's own fallback is "unknown_service")."""
    resource = Resource.create({"service.name": settings.service_name} if settings.service_name else {})
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": DEFAULT_SERVICE_NAME}))
    return resource


def sdk_disabled(environ: Any = None) -> bool:
    """OTEL_SDK_DISABLED=true: the standard switch that turns every OpenTelemetry signal off."""
    env = os.environ if environ is None else environ
    return str(env.get("OTEL_SDK_DISABLED", "")).strip().lower() == "true"
