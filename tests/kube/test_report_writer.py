"""PolicyReports and Events written off the request path: per resource, owned by it, merged,
batched, bounded (drop and count on overflow), retried on conflicts between replicas."""

import asyncio
import contextlib
from dataclasses import replace

import pytest

from tests.kube.conftest import FAST, async_eventually, eventually
from tests.kube.objects import namespace, pod
from tests.kube.policyreport_schema import assert_valid_report
from tests.support import pid, assert_valid_k8s
from webhook.kube.report_writer import PolicyReportWriter
from webhook.kube.runtime import resolver
from webhook.model.results import Action, errored, failed, passed
from webhook.observability.metrics import Metrics
from webhook.reports.policyreport import PolicyMeta
from webhook.reports.report_format import OPENREPORTS, WGPOLICY
from webhook.reports.sink import ResourceRef

POLICIES = frozenset({"quota", "labels", "audited", "other-replica"})


def ref(name, uid=""):
    return ResourceRef("v1", "Pod", "jdoe", name, uid)


@pytest.fixture
def cluster(apiserver, live_state):
    apiserver.put(namespace("jdoe"))
    pods = {name: apiserver.put(pod(name)) for name in ("a", "b")}
    state = live_state()
    state.start()
    eventually(lambda: state.synced)
    return state, pods


@contextlib.asynccontextmanager
async def writer_for(state, kube_api, calls, metrics=None, start=True, **overrides):
    metas = {pid("audited"): PolicyMeta(events="fail", severity="high", category="GPU")}
    writer = PolicyReportWriter(kube_api, calls, replace(FAST, **overrides), metrics or Metrics(),
                                lambda name: metas.get(name, PolicyMeta()), lambda: POLICIES, resolver(state))
    task = asyncio.create_task(writer.run()) if start else None
    try:
        yield writer
    finally:
        if task:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


def report(apiserver, name="pod-a"):
    return apiserver.get("wgpolicyk8s.io/v1alpha2", "PolicyReport", "jdoe", name)


async def test_one_report_per_resource_owned_by_it(apiserver, kube_api, calls, cluster):
    state, pods = cluster
    async with writer_for(state, kube_api, calls) as writer:
        writer.submit(ref("a"), (passed(pid("quota"), "gpu-quota", "1 of 1 GPU in use"),
                                 failed(pid("labels"), "team-label", "add the label team", Action.AUDIT)))
        written = await async_eventually(lambda: report(apiserver))
    assert_valid_report(written)
    assert written["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Pod", "name": "a", "uid": pods["a"]["metadata"]["uid"]}]
    assert written["scope"] == {"apiVersion": "v1", "kind": "Pod", "name": "a", "namespace": "jdoe",
                                "uid": pods["a"]["metadata"]["uid"]}
    assert written["summary"] == {"pass": 1, "fail": 1, "warn": 0, "error": 0, "skip": 0}
    by_rule = {r["rule"]: r for r in written["results"]}
    assert by_rule["team-label"]["result"] == "fail" and by_rule["team-label"]["properties"] == {"mode": "Audit", "policyKind": "ProfileQuota"}
    assert by_rule["gpu-quota"]["message"] == "1 of 1 GPU in use" and by_rule["gpu-quota"]["source"] == "quartermaster"


async def test_newer_results_replace_older_ones_of_the_same_rule(apiserver, kube_api, calls, cluster):
    state, _ = cluster
    async with writer_for(state, kube_api, calls) as writer:
        writer.submit(ref("a"), (failed(pid("labels"), "team-label", "add the label team", Action.AUDIT),))
        await async_eventually(lambda: report(apiserver))
        writer.submit(ref("a"), (passed(pid("labels"), "team-label"), passed(pid("quota"), "gpu-quota")))
        await async_eventually(lambda: report(apiserver)["summary"]["pass"] == 2)
    assert report(apiserver)["summary"] == {"pass": 2, "fail": 0, "warn": 0, "error": 0, "skip": 0}
    assert len(apiserver.seen("POST", "policyreports")) == 1 and len(apiserver.seen("PUT", "policyreports")) == 1


async def test_denied_requests_and_resources_that_never_appear_leave_no_report(apiserver, kube_api, calls, cluster):
    state, _ = cluster
    async with writer_for(state, kube_api, calls, report_resolve_seconds=0.3) as writer:
        writer.submit(ref("b"), (failed(pid("quota"), "gpu-quota", "GPU quota exceeded"),))  # enforced: the request was denied
        writer.submit(ref("ghost"), (passed(pid("labels"), "team-label"),))  # mutated, then denied by someone else
        writer.submit(ref("a"), (passed(pid("labels"), "team-label"),))
        await async_eventually(lambda: report(apiserver))
        await async_eventually(lambda: not writer._pending)
    assert report(apiserver, "pod-b") is None and report(apiserver, "pod-ghost") is None


async def test_a_flood_is_coalesced_per_resource_bounded_dropped_and_counted(apiserver, kube_api, calls, cluster):
    state, _ = cluster
    for index in range(10):
        apiserver.put(pod(f"p{index}"))
    eventually(lambda: len(state.list("Pod", "jdoe")) == 12)
    metrics = Metrics()
    async with writer_for(state, kube_api, calls, metrics, start=False, report_queue=10) as writer:
        for round_ in range(100):  # 1000 submissions for 10 resources while nothing drains: one waits per resource
            for index in range(10):
                writer.submit(ref(f"p{index}"), (passed(pid("quota"), "gpu-quota", f"round {round_}"),))
        assert writer.queued == 10 and writer.dropped == 0
        for index in range(5):  # resources beyond the bound: their results are dropped and counted
            writer.submit(ref(f"other-{index}"), (passed(pid("quota"), "gpu-quota"), passed(pid("labels"), "team-label")))
        assert writer.queued == 10 and writer.dropped == 10
        assert b"quartermaster_reports_dropped_total 10.0" in metrics.exposition()
        await writer.flush()
    assert len(apiserver.seen("POST", "policyreports")) == 10 and apiserver.seen("PUT", "policyreports") == []
    assert writer.writes == 10 and writer.batches == 1
    latest = report(apiserver, "pod-p3")
    assert_valid_report(latest)
    assert [r["message"] for r in latest["results"]] == ["round 99"]  # the newest


async def test_a_batch_looks_at_the_longest_waiting_resources_first(apiserver, kube_api, calls, cluster):
    state, _ = cluster
    async with writer_for(state, kube_api, calls, start=False, report_batch=2) as writer:
        writer.submit(ref("not-yet"), (passed(pid("quota"), "gpu-quota"),))  # not in the informer: waits
        writer.submit(ref("a"), (passed(pid("quota"), "gpu-quota"),))
        writer.submit(ref("b"), (passed(pid("quota"), "gpu-quota"),))
        await writer.flush()  # not-yet (still waiting, goes behind), a (written)
        assert report(apiserver, "pod-a") is not None and report(apiserver, "pod-b") is None
        await writer.flush()  # b, then not-yet again
        assert report(apiserver, "pod-b") is not None and writer.queued == 1


async def test_submit_never_waits_for_a_hung_api_server(apiserver, kube_api, calls, cluster):
    state, _ = cluster
    apiserver.hang = lambda method, plural, query: plural == "policyreports"
    async with writer_for(state, kube_api, calls, report_queue=50, api_timeout=0.5, report_attempts=2) as writer:
        writer.submit(ref("a"), (passed(pid("quota"), "gpu-quota"),))
        await async_eventually(lambda: writer.queued == 0)  # taken by the writer, now stuck on the API
        for index in range(200):
            writer.submit(ref(f"b{index}"), (passed(pid("quota"), "gpu-quota"),))
        assert writer.queued == 50 and writer.dropped == 150
        apiserver.hang = None
        await async_eventually(lambda: report(apiserver, "pod-a") is not None)


async def test_conflicting_writes_of_two_replicas_are_merged(apiserver, kube_api, calls, cluster):
    state, _ = cluster
    async with writer_for(state, kube_api, calls) as writer:
        writer.submit(ref("a"), (passed(pid("quota"), "gpu-quota"),))
        first = await async_eventually(lambda: report(apiserver))
        # another replica adds its result meanwhile (our cached copy is now stale)
        other = dict(first, results=first["results"] + [{"policy": "other-replica", "rule": "r", "result": "warn",
                                                          "source": "quartermaster", "scored": True}])
        apiserver.put(other)
        writer.submit(ref("a"), (passed(pid("labels"), "team-label"),))
        await async_eventually(lambda: len(report(apiserver)["results"]) == 3)
    merged = report(apiserver)
    assert {r["policy"] for r in merged["results"]} == {"quota", "labels", "other-replica"}
    assert merged["summary"]["warn"] == 1
    assert any(s.method == "PUT" for s in apiserver.seen(plural="policyreports"))


async def test_events_for_policies_that_ask(apiserver, kube_api, calls, cluster):
    state, pods = cluster
    async with writer_for(state, kube_api, calls) as writer:
        writer.submit(ref("a"), (failed(pid("audited"), "gpu-model", "pick a GPU model", Action.AUDIT),
                                 passed(pid("audited"), "gpu-memory"), errored(pid("labels"), "x", "boom", Action.AUDIT)))
        events = await async_eventually(lambda: apiserver.list("events.k8s.io/v1", "Event", "jdoe"))
        await async_eventually(lambda: report(apiserver))
    assert len(events) == 1  # only the failing result of the policy that asks for events
    (event,) = events
    assert_valid_k8s({k: v for k, v in event.items()})
    assert event["type"] == "Warning" and event["reason"] == "PolicyViolation"
    assert event["regarding"]["uid"] == pods["a"]["metadata"]["uid"]
    assert event["note"] == "audited/gpu-model fail (audit): pick a GPU model"
    by_rule = {r["rule"]: r for r in report(apiserver)["results"]}
    assert by_rule["gpu-model"]["severity"] == "high" and by_rule["gpu-model"]["category"] == "GPU"


async def test_openreports_format_writes_reports_and_cluster_reports(apiserver, kube_api, calls, cluster):
    """report_format=openreports: the same per-resource reports as openreports.io/v1alpha1 Report (a ClusterReport
    for a cluster-scoped resource), each with its own `source`; nothing is written to wgpolicyk8s.io."""
    state, pods = cluster
    jdoe = apiserver.get("v1", "Namespace", "", "jdoe")
    async with writer_for(state, kube_api, calls, report_format=OPENREPORTS) as writer:
        writer.submit(ref("a"), (failed(pid("labels"), "team-label", "add the label team", Action.AUDIT),))
        writer.submit(ResourceRef("v1", "Namespace", "", "jdoe", jdoe["metadata"]["uid"]), (passed(pid("quota"), "owner"),))
        written = await async_eventually(lambda: apiserver.get("openreports.io/v1alpha1", "Report", "jdoe", "pod-a"))
        cluster_report = await async_eventually(
            lambda: apiserver.get("openreports.io/v1alpha1", "ClusterReport", "", "namespace-jdoe"))
        writer.submit(ref("a"), (passed(pid("labels"), "team-label"),))  # read-merge-PUT in this format too
        await async_eventually(lambda: apiserver.get("openreports.io/v1alpha1", "Report", "jdoe", "pod-a")
                               ["summary"]["pass"] == 1)
    for stored in (written, cluster_report):
        assert_valid_report(stored)
        assert stored["source"] == "quartermaster" and all(r["source"] == "quartermaster" for r in stored["results"])
    assert written["kind"] == "Report" and written["scope"]["uid"] == pods["a"]["metadata"]["uid"]
    assert written["metadata"]["ownerReferences"][0]["uid"] == pods["a"]["metadata"]["uid"]
    assert cluster_report["kind"] == "ClusterReport" and cluster_report["scope"]["name"] == "jdoe"
    assert report(apiserver) is None and not apiserver.seen(plural="policyreports")
    assert any(s.method == "PUT" for s in apiserver.seen(plural="reports"))


def test_serve_takes_the_report_format_into_live_settings(tmp_path):
    from webhook.cli import build_parser
    from webhook.kube.settings import live_settings

    argv = ["serve", "--kubeconfig", str(tmp_path)]
    assert live_settings(build_parser(argv).parse_args(argv), "qm").report_format is WGPOLICY
    argv += ["--report-format", "openreports"]
    assert live_settings(build_parser(argv).parse_args(argv), "qm").report_format is OPENREPORTS
    with pytest.raises(SystemExit):
        build_parser(argv).parse_args([*argv[:-1], "openreport"])
