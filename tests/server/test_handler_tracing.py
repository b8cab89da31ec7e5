"""The admission handler opens a span per review when tracing is on, and builds none when it is off."""

from __future__ import annotations

import json

from aiohttp.test_utils import TestClient, TestServer
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from webhook.model.verdict import Verdict
from webhook.observability.metrics import Metrics
from webhook.observability.tracing import Tracing
from webhook.server.app import build_app
from webhook.server.handlers import Services
from tests.support import review

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "apps"},
       "spec": {"containers": [{"name": "c", "image": "nginx"}]}}


class _Engine:
    async def validate(self, request, budget):
        return Verdict(allowed=True)


async def _post(tracing: Tracing) -> dict:
    services = Services(_Engine(), None, None, Metrics(), tracing, None)  # type: ignore[arg-type]
    async with TestClient(TestServer(build_app(services))) as client:
        answer = await client.post("/validate", data=json.dumps(review(POD, uid="u-7")))
        assert answer.status == 200
        return (await answer.json())["response"]


async def test_a_span_per_review_with_its_attributes_when_tracing_is_on():
    exporter = InMemorySpanExporter()
    tracing = Tracing(exporter=exporter)
    assert tracing.enabled
    assert await _post(tracing) == {"uid": "u-7", "allowed": True}
    tracing.shutdown()
    (span,) = exporter.get_finished_spans()
    assert span.name == "admission.validate"
    assert dict(span.attributes) == {"uid": "u-7", "kind": "Pod", "operation": "CREATE", "namespace": "apps"}


async def test_no_span_is_built_when_tracing_is_off(monkeypatch):
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    tracing = Tracing()
    assert not tracing.enabled

    def no_span(*args, **kwargs):
        raise AssertionError("span() called with tracing off")
    monkeypatch.setattr(tracing, "span", no_span)
    assert await _post(tracing) == {"uid": "u-7", "allowed": True}
