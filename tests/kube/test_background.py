"""Background work: one replica (the Lease holder) scans and keeps the ResourceQuota backstop."""

import contextlib
import shutil
from dataclasses import replace


from tests.kube.conftest import FAST, async_eventually
from tests.kube.objects import namespace, pod, profile, pvc
from tests.kube.policyreport_schema import assert_valid_report
from tests.support import REPO, assert_valid_k8s
from webhook.app import Quartermaster, Settings
from webhook.kube.lease import LeaderElector

QUOTA = (REPO / "policies" / "profile-quota.yaml").read_text()


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def lease(apiserver):
    return apiserver.get("coordination.k8s.io/v1", "Lease", "quartermaster", "quartermaster-background")


def test_one_replica_holds_the_lease(kube_api, calls, apiserver):
    clock_a, clock_b = Clock(), Clock()
    a = LeaderElector(kube_api, calls, replace(FAST, identity="replica-a", lease_seconds=15), clock_a)
    b = LeaderElector(kube_api, calls, replace(FAST, identity="replica-b", lease_seconds=15), clock_b)
    assert a.try_acquire_or_renew() and a.is_leader
    assert not b.try_acquire_or_renew() and not b.is_leader
    held = lease(apiserver)
    assert_valid_k8s(held)
    assert held["spec"]["holderIdentity"] == "replica-a" and held["spec"]["leaseDurationSeconds"] == 15
    clock_a.now += 5
    assert a.try_acquire_or_renew()  # renewed: b's view of the record changes, its wait starts over
    clock_b.now += 10
    assert not b.try_acquire_or_renew()
    clock_b.now += 14
    assert not b.try_acquire_or_renew()  # 14s since it saw the last renewal: not expired yet
    clock_b.now += 2
    assert b.try_acquire_or_renew() and b.is_leader  # a stopped renewing for longer than the lease
    assert lease(apiserver)["spec"]["leaseTransitions"] == 1
    clock_a.now += 20
    assert not a.is_leader  # its own renewal is too old to act on
    assert not a.try_acquire_or_renew()


def test_a_released_lease_is_taken_at_once(kube_api, calls, apiserver):
    a = LeaderElector(kube_api, calls, replace(FAST, identity="replica-a", lease_seconds=15), Clock())
    b = LeaderElector(kube_api, calls, replace(FAST, identity="replica-b", lease_seconds=15), Clock())
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()
    a.release()
    assert not a.is_leader and lease(apiserver)["spec"]["holderIdentity"] == ""
    assert b.try_acquire_or_renew()


@contextlib.asynccontextmanager
async def replicas(tmp_path, kubeconfig, identities, quota=QUOTA, **overrides):
    policies = tmp_path / "policies"
    policies.mkdir(exist_ok=True)
    (policies / "profile-quota.yaml").write_text(quota)
    shutil.copy(REPO / "policies" / "device-claim-rewrite.yaml", policies)
    started = []
    try:
        for identity in identities:
            qm = Quartermaster.build(Settings(policies=policies, live=replace(
                FAST, kubeconfig=kubeconfig, identity=identity, **overrides)))
            qm.load_policies()
            await qm.live.start()
            started.append(qm)
        yield started
    finally:
        for qm in started:
            await qm.live.stop()
            qm.metrics.shutdown()


def policy_report(apiserver, name):
    return apiserver.get("wgpolicyk8s.io/v1alpha2", "PolicyReport", "jdoe", name)


def gpu_results(apiserver, name):
    report = policy_report(apiserver, name)
    return {r["rule"]: r for r in (report or {}).get("results", [])}


async def test_the_lease_holder_scans_and_rescans_when_policies_change(apiserver, kubeconfig, tmp_path):
    apiserver.put(namespace("jdoe"))
    for name in ("a", "b"):
        apiserver.put(pod(name, gpus=1))  # two GPUs in a profile whose limit is one: admitted before a change
    async with replicas(tmp_path, kubeconfig, ["replica-a", "replica-b"]) as (first, second):
        await async_eventually(lambda: policy_report(apiserver, "pod-a") and policy_report(apiserver, "pod-b"))
        leader = lease(apiserver)["spec"]["holderIdentity"]
        for name in ("a", "b"):
            assert_valid_report(policy_report(apiserver, f"pod-{name}"))
        # the excess is blamed once, on the newer pod; the older one fits on its own
        older, newer = sorted(("a", "b"), key=lambda n: (apiserver.get("v1", "Pod", "jdoe", n)["metadata"]
                                                         .get("creationTimestamp", ""), n))
        assert gpu_results(apiserver, f"pod-{older}")["gpu-quota"]["result"] == "pass"
        result = gpu_results(apiserver, f"pod-{newer}")["gpu-quota"]
        assert result["result"] == "fail" and "GPU quota exceeded in profile 'jdoe'" in result["message"]
        # the other replica keeps trying for the lease, and never scans
        renewals = len(apiserver.seen("GET", "leases"))
        await async_eventually(lambda: len(apiserver.seen("GET", "leases")) > renewals + 4)
        scans = {qm.settings.live.identity: len(qm.live.background.scans) for qm in (first, second)}
        assert scans[leader] == 1 and sum(scans.values()) == 1, scans
        # a scan never mutates: no template created, no pod written
        assert apiserver.seen("POST", "resourceclaimtemplates") == []
        assert [s for s in apiserver.seen(plural="pods") if s.method != "GET"] == []
        # the platform team raises the limit: the policy reloads, the leader scans again
        policy_file = tmp_path / "policies" / "profile-quota.yaml"
        policy_file.write_text(QUOTA.replace("      gpus: 1\n", "      gpus: 2\n"))
        holder = first if first.settings.live.identity == leader else second
        assert holder.source.reload().ok
        await async_eventually(lambda: gpu_results(apiserver, f"pod-{newer}")["gpu-quota"]["result"] == "pass")
        assert len(holder.live.background.scans) == 2


async def test_the_backstop_keeps_a_resource_quota_per_profile(apiserver, kubeconfig, tmp_path):
    apiserver.put(namespace("jdoe"))
    apiserver.put(namespace("ml-team", klass="team"))
    apiserver.put(namespace("default", profile=False))
    apiserver.put(profile("ml-team", gpus="4"))  # the Kubeflow Profile lowers the team's GPUs

    def quota(ns):
        return apiserver.get("v1", "ResourceQuota", ns, "quartermaster-profile-quota")

    async with replicas(tmp_path, kubeconfig, ["replica-a"]):
        personal = await async_eventually(lambda: quota("jdoe"))
        team = await async_eventually(lambda: quota("ml-team"))
        assert_valid_k8s(personal)
        assert personal["spec"]["hard"] == {
            "gpu.nvidia.com.deviceclass.resource.k8s.io/devices": "1",
            "mig.nvidia.com.deviceclass.resource.k8s.io/devices": "1",
            "vfio.gpu.nvidia.com.deviceclass.resource.k8s.io/devices": "1",
            "gpu.amd.com.deviceclass.resource.k8s.io/devices": "1",
            "requests.nvidia.com/gpu": "1",
            "requests.amd.com/gpu": "1",
            "requests.storage": "30Gi"}
        assert team["spec"]["hard"]["requests.nvidia.com/gpu"] == "4" and team["spec"]["hard"]["requests.storage"] == "1Ti"
        assert quota("default") is None
        # jdoe becomes a team profile: raised; ml-team stops being a profile: removed
        apiserver.put(namespace("jdoe", klass="team"))
        apiserver.put(namespace("ml-team", profile=False))
        await async_eventually(lambda: quota("jdoe")["spec"]["hard"]["requests.nvidia.com/gpu"] == "8")
        await async_eventually(lambda: quota("ml-team") is None)
        # somebody edits the quota by hand: put back
        edited = quota("jdoe")
        edited["spec"]["hard"]["requests.storage"] = "100Ti"
        apiserver.put(edited)
        await async_eventually(lambda: quota("jdoe")["spec"]["hard"]["requests.storage"] == "1Ti")


async def test_an_audit_mode_quota_gets_no_backstop(apiserver, kubeconfig, tmp_path):
    apiserver.put(namespace("jdoe"))
    async with replicas(tmp_path, kubeconfig, ["replica-a"], quota=QUOTA.replace("mode: Enforce", "mode: Audit")) as (qm,):
        await async_eventually(lambda: qm.live.background.backstops)
        assert apiserver.list("v1", "ResourceQuota") == []


async def test_storage_classes_get_their_own_keys(apiserver, kubeconfig, tmp_path):
    apiserver.put(namespace("jdoe"))
    apiserver.put(pvc("data"))
    limited = QUOTA.replace("storageClassNames: []", "storageClassNames: [ceph-rbd, cephfs]")
    async with replicas(tmp_path, kubeconfig, ["replica-a"], quota=limited):
        quota = await async_eventually(lambda: apiserver.get("v1", "ResourceQuota", "jdoe", "quartermaster-profile-quota"))
    hard = quota["spec"]["hard"]
    assert "requests.storage" not in hard
    assert hard["ceph-rbd.storageclass.storage.k8s.io/requests.storage"] == "30Gi"
    assert hard["cephfs.storageclass.storage.k8s.io/requests.storage"] == "30Gi"
