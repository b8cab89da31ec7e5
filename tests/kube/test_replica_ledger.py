"""Two live replicas behind one API server make the quota exact: the reservation ledger they share (a ConfigMap per
profile in the webhook's namespace, written with a resourceVersion precondition) lets only one of them take the
last GPU. The reviews are AdmissionReviews as kube-apiserver sends them, with the uid it assigned to the pod."""

import asyncio
import contextlib
import copy
import json
import shutil
import time
import uuid
from dataclasses import replace

import pytest
import yaml

from tests.kube.conftest import FAST, async_eventually
from tests.kube.objects import namespace
from tests.support import REPO, apply_patch, decode_patch, review, running_server

GPU_POD = yaml.safe_load((REPO / "examples" / "gpu-pod.yaml").read_text())
OWN = FAST.namespace  # the webhook's namespace, where the ledger lives
LEDGER = "quartermaster-quota-ledger"


@pytest.fixture
def policies(tmp_path):
    directory = tmp_path / "policies"
    directory.mkdir()
    for name in ("device-claim-rewrite.yaml", "profile-quota.yaml"):
        shutil.copy(REPO / "policies" / name, directory)
    return directory


@contextlib.asynccontextmanager
async def replicas(kubeconfig, policies, tmp_path, names=("replica-a", "replica-b")):
    """Servers sharing one API server, each with its own informers, locks and in-process reservations."""
    async with contextlib.AsyncExitStack() as stack:
        servers = []
        for name in names:
            (tmp_path / name).mkdir(exist_ok=True)
            settings = replace(FAST, kubeconfig=kubeconfig, identity=name, backstop=False)
            servers.append(await stack.enter_async_context(running_server(policies, tmp_path / name, live=settings)))
        for server in servers:
            await async_eventually(lambda s=server: s.qm.state.synced, timeout=20)
        yield servers


async def dra_pod(servers, ns):
    """The 1-GPU pod after the mutating webhook rewrote it into a claim template (created through the API), as the
    validating webhook receives it, once every replica's informer shows the template."""
    pod = copy.deepcopy(GPU_POD)
    pod["metadata"]["namespace"] = ns
    response = await servers[0].admit("/mutate", review(pod))
    assert response["allowed"], response
    patched = apply_patch(pod, decode_patch(response))
    names = [c["resourceClaimTemplateName"] for c in patched["spec"]["resourceClaims"]]
    for server in servers:
        await async_eventually(lambda s=server: all(s.qm.state.get("ResourceClaimTemplate", ns, n) for n in names))
    return patched


def persisted(pod, name, uid=None):
    """As the API server hands it to validating admission: BeforeCreate already set uid and creationTimestamp."""
    obj = copy.deepcopy(pod)
    obj["metadata"].update(name=name, uid=uid or str(uuid.uuid4()), creationTimestamp="2026-01-01T00:00:00Z")
    return obj


def ledger_entries(apiserver, ns):
    found = apiserver.get("v1", "ConfigMap", OWN, f"{LEDGER}.{ns}")
    return {k: json.loads(v) for k, v in ((found or {}).get("data") or {}).items()}


async def race(servers, pod, count=20):
    """`count` creates of the same 1-GPU pod at once, split between the replicas."""
    reviews = [review(persisted(pod, f"nb-{i}")) for i in range(count)]
    return await asyncio.gather(*(servers[i % len(servers)].admit("/validate", r) for i, r in enumerate(reviews)))


async def test_two_replicas_admit_exactly_one_of_twenty_gpu_pods_ten_times_out_of_ten(apiserver, kubeconfig, policies,
                                                                                     tmp_path):
    rounds = [f"team-{i}" for i in range(10)]
    for ns in rounds:
        apiserver.put(namespace(ns))
    async with replicas(kubeconfig, policies, tmp_path) as servers:
        for ns in rounds:
            answers = await race(servers, await dra_pod(servers, ns))
            admitted = [a for a in answers if a["allowed"]]
            assert len(admitted) == 1, (ns, [a.get("status", {}).get("message") for a in answers])
            refusals = [a["status"]["message"] for a in answers if not a["allowed"]]
            assert all("GPU quota exceeded in profile" in m for m in refusals), refusals
            (entry,) = ledger_entries(apiserver, ns).values()
            assert entry["kind"] == "Pod" and entry["gpus"] == "1"
    # the ledger is only ever read and written in the webhook's own namespace
    assert {s.path.split("/")[4] for s in apiserver.seen(plural="configmaps")} == {OWN}


async def test_a_restarted_replica_reads_the_ledger_and_counts_each_pod_once(apiserver, kubeconfig, policies, tmp_path):
    apiserver.put(namespace("jdoe"))
    async with replicas(kubeconfig, policies, tmp_path, ("replica-a",)) as (first,):
        pod = await dra_pod([first], "jdoe")
        admitted = persisted(pod, "nb-admitted")
        assert (await first.admit("/validate", review(admitted)))["allowed"]
    # a new process: no lock, no in-process reservation; the pod is not in the API yet (other webhooks still run)
    async with replicas(kubeconfig, policies, tmp_path, ("replica-a2",)) as (again,):
        refused = await again.admit("/validate", review(persisted(pod, "nb-second")))
        assert not refused["allowed"]
        assert "Pod nb-admitted (being admitted): 1" in refused["status"]["message"]
        apiserver.put(admitted)  # persisted: the informer counts it now, and the ledger entry no longer
        await async_eventually(lambda: again.qm.state.get("Pod", "jdoe", "nb-admitted") is not None)
        message = (await again.admit("/validate", review(persisted(pod, "nb-third"))))["status"]["message"]
        assert "in use 1 (Pod nb-admitted: 1)" in message  # once, not twice
        apiserver.remove(admitted)  # deleted within its reservation: the informer saw it go, nothing is held
        await async_eventually(lambda: again.qm.state.get("Pod", "jdoe", "nb-admitted") is None)
        assert (await again.admit("/validate", review(persisted(pod, "nb-fourth"))))["allowed"]


async def test_a_reservation_whose_pod_never_appears_expires(apiserver, kubeconfig, policies, tmp_path):
    apiserver.put(namespace("jdoe"))
    async with replicas(kubeconfig, policies, tmp_path) as (a, b):
        pod = await dra_pod([a, b], "jdoe")
        lost = persisted(pod, "nb-lost")  # admitted here, then refused by a later webhook: never stored
        assert (await a.admit("/validate", review(lost)))["allowed"]
        assert not (await b.admit("/validate", review(persisted(pod, "nb-next"))))["allowed"]
        # reservationSeconds (30) later, by replica b's clock
        b.qm.live.reservations.clock = lambda: time.time() + 31
        assert (await b.admit("/validate", review(persisted(pod, "nb-later"))))["allowed"]
        entries = ledger_entries(apiserver, "jdoe")
        assert [e["name"] for e in entries.values()] == ["nb-later"]  # the expired entry was dropped on the write


async def test_a_ledger_a_tenant_writes_in_the_profile_namespace_changes_nothing(apiserver, kubeconfig, policies,
                                                                                tmp_path):
    apiserver.put(namespace("jdoe"))
    # the tenant may create ConfigMaps in their profile: one named as the ledger, with entries that would count
    # a GPU against them (or would, if the webhook read this one, let them reset it)
    forged = {"uid": "forged", "kind": "Pod", "name": "ghost", "gpus": "1", "storage": "0", "unbounded": False,
              "replaces": "", "expires": "2999-01-01T00:00:00.000000Z"}
    apiserver.put({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{LEDGER}.jdoe", "namespace": "jdoe"},
                   "data": {"profile-quota.forged": json.dumps(forged)}})
    async with replicas(kubeconfig, policies, tmp_path) as servers:
        answers = await race(servers, await dra_pod(servers, "jdoe"))
        assert sum(a["allowed"] for a in answers) == 1  # the ghost is not counted, and the race is still exact
    assert apiserver.get("v1", "ConfigMap", "jdoe", f"{LEDGER}.jdoe")["data"] == {"profile-quota.forged": json.dumps(forged)}
    assert all(f"/namespaces/{OWN}/" in s.path for s in apiserver.seen(plural="configmaps"))


async def test_a_dry_run_counts_the_other_replicas_and_records_nothing(apiserver, kubeconfig, policies, tmp_path):
    apiserver.put(namespace("jdoe"))
    async with replicas(kubeconfig, policies, tmp_path) as (a, b):
        pod = await dra_pod([a, b], "jdoe")
        assert (await a.admit("/validate", review(persisted(pod, "nb-1"))))["allowed"]
        probe = await b.admit("/validate", review(persisted(pod, "nb-probe"), dry_run=True))
        assert not probe["allowed"] and "GPU quota exceeded" in probe["status"]["message"]
        assert [e["name"] for e in ledger_entries(apiserver, "jdoe").values()] == ["nb-1"]


async def test_a_ledger_the_api_does_not_answer_for_denies_clearly_within_the_deadline(apiserver, kubeconfig, policies,
                                                                                      tmp_path):
    apiserver.put(namespace("jdoe"))
    async with replicas(kubeconfig, policies, tmp_path, ("replica-a",)) as (server,):
        pod = await dra_pod([server], "jdoe")
        apiserver.hang = lambda method, plural, query: plural == "configmaps"
        body = review(persisted(pod, "nb-1"))
        status, answer = await asyncio.wait_for(server.post("/validate", body, query="?timeout=2s"), 30)
        apiserver.hang = None
        response = answer["response"]
        assert status == 200 and response["allowed"] is False  # failurePolicy: Fail
        message = response["status"]["message"]
        assert "did not answer in time to record this reservation in the quota ledger" in message, message
        assert f"{OWN}/{LEDGER}.jdoe" in message
        # nothing is held for a request that was refused: the next one fits
        assert (await server.admit("/validate", review(persisted(pod, "nb-2"))))["allowed"]


async def test_a_ledger_the_api_refuses_denies_with_what_it_said(apiserver, kubeconfig, policies, tmp_path):
    apiserver.put(namespace("jdoe"))
    async with replicas(kubeconfig, policies, tmp_path, ("replica-a",)) as (server,):
        pod = await dra_pod([server], "jdoe")
        apiserver.fail_next("GET", "configmaps", 403, "Forbidden")
        refused = await server.admit("/validate", review(persisted(pod, "nb-1")))
        assert not refused["allowed"] and "refused the quota ledger" in refused["status"]["message"]
        assert "403 Forbidden" in refused["status"]["message"]


REQUIRE_TEAM = """\
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata: {name: require-team}
spec:
  validationActions: [Deny]
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  validations:
  - expression: "has(object.metadata.labels) && 'team' in object.metadata.labels"
    message: add the label team
"""


async def test_a_request_another_policy_refuses_holds_nothing_on_its_replica(apiserver, kubeconfig, policies, tmp_path):
    (policies / "require-team.yaml").write_text(REQUIRE_TEAM)
    apiserver.put(namespace("jdoe"))
    async with replicas(kubeconfig, policies, tmp_path, ("replica-a",)) as (server,):
        pod = await dra_pod([server], "jdoe")
        refused = await server.admit("/validate", review(persisted(pod, "nb-unlabelled")))
        assert not refused["allowed"] and "add the label team" in refused["status"]["message"]
        labelled = persisted(pod, "nb-team")
        labelled["metadata"]["labels"] = {"team": "ml"}
        assert (await server.admit("/validate", review(labelled)))["allowed"]  # the refused pod's GPU was not held
        assert [e["name"] for e in ledger_entries(apiserver, "jdoe").values()] == ["nb-team"]  # and is gone from the ledger


def generated_claim(pod, entry=0):
    """The ResourceClaim the resourceclaim controller makes from the pod's template, as it sends it to admission."""
    pod_claim = pod["spec"]["resourceClaims"][entry]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": f"{pod['metadata']['name']}-{pod_claim['name']}-x7k2q", "namespace": pod["metadata"]["namespace"],
                         "uid": str(uuid.uuid4()),
                         "annotations": {"resource.kubernetes.io/pod-claim-name": pod_claim["name"]},
                         "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": pod["metadata"]["name"],
                                              "uid": pod["metadata"]["uid"], "controller": True,
                                              "blockOwnerDeletion": True}]},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com",
                                                                            "count": 1}}]}}}


async def test_the_claim_made_for_a_pod_another_replica_admitted_is_that_pods_charge(apiserver, kubeconfig, policies,
                                                                                   tmp_path):
    apiserver.put(namespace("jdoe"))
    async with replicas(kubeconfig, policies, tmp_path) as (a, b):
        pod = persisted(await dra_pod([a, b], "jdoe"), "nb-1")
        assert (await a.admit("/validate", review(pod)))["allowed"]
        # the resourceclaim controller saw the pod before replica b's informer did: the claim is the pod's GPU
        claim = generated_claim(pod)
        assert (await b.admit("/validate", review(claim)))["allowed"]
        # a claim of the tenant's own, though, is one GPU more
        own = generated_claim(pod)
        own["metadata"].update(name="mine", annotations={}, ownerReferences=[])
        refused = await b.admit("/validate", review(own))
        assert not refused["allowed"] and "GPU quota exceeded" in refused["status"]["message"]


async def test_an_update_that_adds_storage_is_held_until_the_informer_shows_the_new_version(apiserver, kubeconfig,
                                                                                          policies, tmp_path):
    from tests.kube.objects import pvc

    apiserver.put(namespace("jdoe"))
    stored = apiserver.put(pvc("data", size="10Gi"))
    async with replicas(kubeconfig, policies, tmp_path) as (a, b):
        grown = copy.deepcopy(stored)
        grown["spec"]["resources"]["requests"]["storage"] = "25Gi"
        assert (await a.admit("/validate", review(grown, operation="UPDATE", old=stored)))["allowed"]
        # replica b still shows 10Gi: the 15Gi the update added are held, so 10Gi more do not fit in 30Gi
        extra = persisted(pvc("scratch", size="10Gi"), "scratch")
        refused = await b.admit("/validate", review(extra))
        assert not refused["allowed"] and "Storage quota exceeded" in refused["status"]["message"]
        apiserver.put(grown)  # persisted: a new resourceVersion, counted by the informers at 25Gi, the hold no more
        await async_eventually(lambda: b.qm.state.get("PersistentVolumeClaim", "jdoe", "data")["spec"]["resources"]
                               ["requests"]["storage"] == "25Gi")
        small = persisted(pvc("small", size="5Gi"), "small")
        assert (await b.admit("/validate", review(small)))["allowed"]  # 25 + 5: the update is counted once
