import json
import logging

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from webhook.observability.logs import JsonFormatter
from webhook.observability.tracing import Tracing


def test_span_per_admission_when_exporter_configured():
    exporter = InMemorySpanExporter()
    tracing = Tracing(exporter=exporter)
    with tracing.span("admission.validate", uid="u-1", kind="Pod", namespace=None):
        pass
    tracing.shutdown()
    (span,) = exporter.get_finished_spans()
    assert span.name == "admission.validate" and span.attributes["uid"] == "u-1" and "namespace" not in span.attributes


def test_no_exporter_no_spans(monkeypatch):
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    with Tracing().span("x", uid="u"):
        pass


def test_json_log_line_carries_uid():
    record = logging.LogRecord("quartermaster.admission", logging.INFO, __file__, 1, "validate %s", ("allowed",), None)
    record.uid = "u-9"
    line = json.loads(JsonFormatter().format(record))
    assert line["msg"] == "validate allowed" and line["uid"] == "u-9" and line["level"] == "info" and line["ts"].endswith("Z")
