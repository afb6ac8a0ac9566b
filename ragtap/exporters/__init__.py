"""Exporters: where ragtap's findings go (OpenTelemetry, Prometheus, logs)."""
