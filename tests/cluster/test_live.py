"""Live mode against the real REST and watch semantics: the backstop ResourceQuota, PolicyReports in the real CRDs,
the background Lease between two replicas, and informers that survive an API server restart."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cluster.control import ClusterRecord, restart_component
from tests.cluster.kube import Kube, eventually
from tests.cluster.quartermaster import NAMESPACE, Installation
from tests.cluster.workloads import make_profile, pod

pytestmark = [pytest.mark.cluster, pytest.mark.xdist_group("cluster")]

REPORTS = "wgpolicyk8s.io/v1alpha2"


def test_each_profile_gets_the_backstop_resource_quota(admin: Kube, quartermaster: Installation) -> None:
    namespace = make_profile(admin)["metadata"]["name"]

    def backstop() -> dict | None:
        quotas = admin.list("v1", "ResourceQuota", namespace)
        return quotas[0] if quotas else None
    quota = eventually(backstop, 90, interval=1, message="the backstop ResourceQuota")
    assert quota["spec"]["hard"]["gpu.nvidia.com.deviceclass.resource.k8s.io/devices"] == "1"
    assert quota["spec"]["hard"]["requests.storage"] == "30Gi"


def test_admissions_are_reported_in_policy_reports(admin: Kube, quartermaster: Installation) -> None:
    namespace = make_profile(admin)["metadata"]["name"]
    admin.kubectl_create(pod("reported", namespace, limits={"nvidia.com/gpu": 1}))
    stored = admin.wait_pod(namespace, "reported")

    def report() -> dict | None:
        found = admin.get(REPORTS, "PolicyReport", "pod-reported", namespace)
        return found if found and found.get("results") else None
    found = eventually(report, 60, interval=1, message="the pod's PolicyReport")
    assert found["scope"]["uid"] == stored["metadata"]["uid"]
    assert found["metadata"]["ownerReferences"][0]["uid"] == stored["metadata"]["uid"]
    assert {r["policy"] for r in found["results"]} >= {"profile-quota"}
    assert all(r["source"] == "quartermaster" for r in found["results"])


def test_one_replica_holds_the_background_lease(admin: Kube, quartermaster: Installation) -> None:
    lease = eventually(lambda: admin.get("coordination.k8s.io/v1", "Lease", "quartermaster-background", NAMESPACE),
                       60, message="the background Lease")
    assert lease["spec"]["holderIdentity"] in {r.name for r in quartermaster.replicas}


def test_informers_resume_after_the_api_server_restarts(admin: Kube, quartermaster: Installation,
                                                        control_plane: ClusterRecord) -> None:
    namespace = make_profile(admin)["metadata"]["name"]
    restart_component(ClusterRecord.read(Path(control_plane.directory)), "kube-apiserver")
    # a pod created after the restart must be seen by both replicas' informers: the next GPU pod is refused
    # whichever replica answers
    eventually(lambda: admin.kubectl_create(pod("after", namespace, limits={"nvidia.com/gpu": 1}),
                                            check=False).returncode == 0, 90, interval=2,
               message="admission works again after the API server restart")
    admin.wait_pod(namespace, "after")
    for attempt in range(4):
        refused = admin.kubectl_create(pod(f"second-{attempt}", namespace, limits={"nvidia.com/gpu": 1}),
                                       check=False)
        assert refused.returncode != 0 and "denied the request" in refused.stderr, refused.stderr
