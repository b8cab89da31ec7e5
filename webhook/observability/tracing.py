"""A span per admission when an OTLP endpoint is configured (OTEL_EXPORTER_OTLP_ENDPOINT); otherwise no-op."""

from __future__ import annotations

import os
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # OpenTelemetry (slow to import) only when an exporter is configured: `apply` starts faster
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter


class Tracing:
    def __init__(self, exporter: SpanExporter | None = None) -> None:
        if exporter is None and (os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")):
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            exporter = OTLPSpanExporter()
        self._provider: TracerProvider | None = None
        self._tracer: Any = None
        if exporter is not None:
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor

            self._provider = TracerProvider(resource=Resource.create({"service.name": "quartermaster"}))
            self._provider.add_span_processor(BatchSpanProcessor(exporter))
            self._tracer = self._provider.get_tracer("quartermaster")

    @property
    def enabled(self) -> bool:
        """False: `span` is a no-op; callers on the request path skip building its attributes."""
        return self._tracer is not None

    def span(self, name: str, **attributes: Any) -> AbstractContextManager[Any]:
        if self._tracer is None:
            return nullcontext()
        from opentelemetry import trace  # imported by __init__ already, when there is a tracer

        return self._tracer.start_as_current_span(name, attributes={k: v for k, v in attributes.items() if v is not None},
                                                  kind=trace.SpanKind.SERVER)

    def shutdown(self) -> None:
        if self._provider is not None:
            self._provider.shutdown()
