"""Metrics (OpenTelemetry SDK, Prometheus text), traces (OTLP when configured), JSON logs."""
