"""PolicyReports and Events stay bounded per namespace under a flood (of denials, of audit failures); what
is cut is dropped and counted, and other namespaces are not affected."""

from tests.kube.conftest import async_eventually, eventually
from tests.kube.objects import namespace, pod
from tests.kube.test_report_writer import writer_for
from tests.support import pid
from webhook.model.results import Action, failed
from webhook.observability.metrics import Metrics
from webhook.reports.sink import ResourceRef

CAPS = dict(report_pending_per_namespace=50, events_per_namespace=5, reports_per_namespace=20,
            report_message_bytes=100, report_resolve_seconds=1.0, events_per_batch=1000)


def reports(apiserver, ns):
    return apiserver.list("wgpolicyk8s.io/v1alpha2", "PolicyReport", ns)


async def test_a_flood_in_one_namespace_is_capped_and_counted(apiserver, kube_api, calls, live_state):
    for ns in ("jdoe", "alice"):
        apiserver.put(namespace(ns))
    for i in range(30):
        apiserver.put(pod(f"p{i}"))
    apiserver.put(pod("quiet", ns="alice"))
    state = live_state()
    state.start()
    eventually(lambda: state.synced and len(state.list("Pod", "jdoe")) == 30)
    metrics = Metrics()
    async with writer_for(state, kube_api, calls, metrics=metrics, **CAPS) as writer:
        # audit failures of 30 real pods, each with a long message: 20 new reports per window in a namespace
        for i in range(30):
            writer.submit(ResourceRef("v1", "Pod", "jdoe", f"p{i}", ""),
                          (failed(pid("labels"), "team-label", "x" * 10_000, Action.AUDIT),))
        await async_eventually(lambda: len(reports(apiserver, "jdoe")) >= 20 and not writer._pending, timeout=20)
        # then 2,000 denials, of pods that never get created and of the existing ones (an UPDATE refused);
        # the audited policy asks for an Event on each
        for i in range(2_000):
            writer.submit(ResourceRef("v1", "Pod", "jdoe", f"p{i % 30}" if i % 2 else f"denied-{i}", ""),
                          (failed(pid("audited"), "gpu-quota", "over quota"),))
        writer.submit(ResourceRef("v1", "Pod", "alice", "quiet", ""),
                      (failed(pid("labels"), "team-label", "add the label team", Action.AUDIT),))
        await async_eventually(lambda: reports(apiserver, "alice"), timeout=15, message="another namespace starved")
        await async_eventually(lambda: not writer.queued and not writer._pending, timeout=20)
    written = reports(apiserver, "jdoe")
    assert len(written) == 20  # reports_per_namespace
    assert all(len(r["results"][0]["message"].encode()) <= 100 for r in written)
    events = [e for e in apiserver.list("events.k8s.io/v1", "Event", "jdoe")]
    assert 1 <= len(events) <= 5
    assert len(writer._pending) == 0 and max(writer._pending_per_namespace.values(), default=0) == 0
    assert writer.dropped >= 1_000  # pending beyond 50 per namespace, reports beyond 20, Events beyond 5
    assert "quartermaster_reports_dropped_total" in metrics.exposition().decode()
