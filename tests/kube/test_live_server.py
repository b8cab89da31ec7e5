"""The real HTTPS server in live mode: readiness follows the informers, the mutate phase creates
claim templates through the API, and a hung API server gives a clear denial within the deadline."""

import asyncio
import shutil
from dataclasses import replace

import pytest
import yaml

from tests.kube.conftest import FAST, async_eventually
from tests.kube.objects import namespace
from tests.support import REPO, apply_patch, assert_valid_k8s, decode_patch, review, running_server

GPU_POD = yaml.safe_load((REPO / "examples" / "gpu-pod.yaml").read_text())


@pytest.fixture
def policies(tmp_path):
    directory = tmp_path / "policies"
    directory.mkdir()
    shutil.copy(REPO / "policies" / "device-claim-rewrite.yaml", directory)
    return directory


def live(kubeconfig, **overrides):
    return replace(FAST, kubeconfig=kubeconfig, **overrides)


async def readyz(server):
    import json
    status, text = await server.get("/readyz")
    return status, json.loads(text)


async def test_unready_until_the_first_sync(apiserver, kubeconfig, policies, tmp_path):
    apiserver.put(namespace("jdoe"))
    apiserver.hang = lambda method, plural, query: plural == "pods"  # the pod list does not answer yet
    async with running_server(policies, tmp_path, live=live(kubeconfig)) as server:
        status, body = await readyz(server)
        assert status == 503 and body["status"] == "unready"
        assert body["stateDetails"]["Pod"]["synced"] is False
        apiserver.hang = None
        await async_eventually(lambda: server.qm.state.synced)
        status, body = await readyz(server)
        assert status == 200 and body["status"] == "ready" and body["stateSynced"] is True


async def test_readyz_reports_a_stalled_watch(apiserver, kubeconfig, policies, tmp_path):
    apiserver.put(namespace("jdoe"))
    async with running_server(policies, tmp_path, live=live(kubeconfig)) as server:
        await async_eventually(lambda: server.qm.state.synced)
        await async_eventually(lambda: apiserver.watching("persistentvolumeclaims"))
        apiserver.hang = lambda method, plural, query: plural == "persistentvolumeclaims"
        apiserver.drop_watches()
        await async_eventually(lambda: not server.qm.state.synced)
        status, body = await readyz(server)
        assert status == 503 and body["stateDetails"]["PersistentVolumeClaim"]["stalled"] is True
        apiserver.hang = None
        await async_eventually(lambda: server.qm.state.synced)
        assert (await readyz(server))[0] == 200


async def test_mutate_creates_the_claim_template_through_the_api(apiserver, kubeconfig, policies, tmp_path):
    apiserver.put(namespace("jdoe"))
    async with running_server(policies, tmp_path, live=live(kubeconfig)) as server:
        await async_eventually(lambda: server.qm.state.synced)
        response = await server.admit("/mutate", review(GPU_POD))
        assert response["allowed"], response
        patched = apply_patch(GPU_POD, decode_patch(response))
        assert_valid_k8s(patched)
        claims = patched["spec"]["resourceClaims"]
        names = {c["resourceClaimTemplateName"] for c in claims}
        created = [apiserver.get("resource.k8s.io/v1", "ResourceClaimTemplate", "jdoe", n) for n in names]
        assert all(created), names
        for template in created:
            assert_valid_k8s({k: v for k, v in template.items() if k != "status"})
        # the same pod again: the template already exists, which is success
        again = await server.admit("/mutate", review(GPU_POD))
        assert again["allowed"]
        assert len(apiserver.list("resource.k8s.io/v1", "ResourceClaimTemplate", "jdoe")) == len(names)


async def test_dry_run_creates_nothing(apiserver, kubeconfig, policies, tmp_path):
    apiserver.put(namespace("jdoe"))
    async with running_server(policies, tmp_path, live=live(kubeconfig)) as server:
        await async_eventually(lambda: server.qm.state.synced)
        response = await server.admit("/mutate", review(GPU_POD, dry_run=True))
        assert response["allowed"] and "patch" in response
        assert apiserver.seen("POST", "resourceclaimtemplates") == []


async def test_a_hung_api_server_denies_clearly_within_the_deadline(apiserver, kubeconfig, policies, tmp_path):
    apiserver.put(namespace("jdoe"))
    async with running_server(policies, tmp_path, live=live(kubeconfig)) as server:
        await async_eventually(lambda: server.qm.state.synced)
        apiserver.hang = lambda method, plural, query: method == "POST"
        # the API server gives the webhook 2s; the answer must come before that runs out
        status, answer = await asyncio.wait_for(server.post("/mutate", review(GPU_POD), query="?timeout=2s"), 2.0)
        assert status == 200
        response = answer["response"]
        assert response["allowed"] is False and response["status"]["code"] == 503
        message = response["status"]["message"]
        assert "could not create ResourceClaimTemplate jdoe/" in message
        assert "the Kubernetes API did not answer within" in message and "try again" in message
        assert "patch" not in response


async def test_quota_reservations_are_released_when_the_informer_shows_the_pod(apiserver, kubeconfig, tmp_path):
    policies = tmp_path / "policies"
    policies.mkdir()
    shutil.copy(REPO / "policies" / "profile-quota.yaml", policies)
    apiserver.put(namespace("jdoe"))

    def gpu_pod(name, uid):
        obj = pod_with_gpu(name)
        obj["metadata"]["uid"] = uid  # validating webhooks see the uid the API server assigned
        return obj

    async with running_server(policies, tmp_path, live=live(kubeconfig)) as server:
        await async_eventually(lambda: server.qm.state.synced)
        ledger = server.qm.ledgers.for_policy("profile-quota")
        first = gpu_pod("first", "uid-1")
        assert (await server.admit("/validate", review(first)))["allowed"]
        assert ledger.count("jdoe") == 1  # held: the informer does not show the pod yet
        second = await server.admit("/validate", review(gpu_pod("second", "uid-2")))
        assert not second["allowed"] and "GPU quota exceeded" in second["status"]["message"]
        apiserver.put(first)  # the API server persisted the first pod
        await async_eventually(lambda: server.qm.state.get("Pod", "jdoe", "first") is not None)
        ledger.pending("jdoe", server.qm.state)
        assert ledger.count("jdoe") == 0  # released: the informer shows it, the count reads it from there
        assert not (await server.admit("/validate", review(gpu_pod("third", "uid-3"))))["allowed"]
        apiserver.remove(first)
        await async_eventually(lambda: server.qm.state.get("Pod", "jdoe", "first") is None)
        assert (await server.admit("/validate", review(gpu_pod("fourth", "uid-4"))))["allowed"]


def pod_with_gpu(name):
    import copy
    obj = copy.deepcopy(GPU_POD)
    obj["metadata"]["name"] = name
    return obj


async def test_an_audited_admission_is_reported_with_the_events_the_policy_asks_for(apiserver, kubeconfig, tmp_path):
    policies = tmp_path / "policies"
    policies.mkdir()
    quota = (REPO / "policies" / "profile-quota.yaml").read_text().replace("mode: Enforce", "mode: Audit")
    # the default policy carries severity and category annotations already: ask for events beside them
    quota = quota.replace("    policies.kyverno.io/severity: high\n",
                          "    policies.kyverno.io/severity: high\n    quartermaster.dev/events: fail\n")
    assert "quartermaster.dev/events: fail" in quota
    (policies / "profile-quota.yaml").write_text(quota)
    apiserver.put(namespace("jdoe"))
    apiserver.put(dict(pod_with_gpu("running"), metadata={"name": "running", "namespace": "jdoe"}))
    async with running_server(policies, tmp_path, live=live(kubeconfig)) as server:
        await async_eventually(lambda: server.qm.state.synced)
        # the first background scan runs once the informers synced: on a busy machine it could come after the
        # admission below, see the new pod and report on it too (a second Event, or its own order of the two pods)
        await async_eventually(lambda: server.qm.live.background.scans)
        extra = pod_with_gpu("extra")
        extra["metadata"]["uid"] = "uid-extra"
        response = await server.admit("/validate", review(extra))
        assert response["allowed"] and response["warnings"]  # Audit: admitted, with a warning
        apiserver.put(extra)  # persisted by the API server: now the report can be owned by it
        report = await async_eventually(
            lambda: apiserver.get("wgpolicyk8s.io/v1alpha2", "PolicyReport", "jdoe", "pod-extra"))
        events = await async_eventually(lambda: apiserver.list("events.k8s.io/v1", "Event", "jdoe"))
    gpu = next(r for r in report["results"] if r["rule"] == "gpu-quota")
    assert gpu["result"] == "fail" and gpu["properties"] == {"mode": "Audit", "policyKind": "ProfileQuota"} and gpu["severity"] == "high"
    assert report["metadata"]["ownerReferences"][0]["uid"] == "uid-extra"
    assert [e["regarding"]["name"] for e in events] == ["extra"] and events[0]["reason"] == "PolicyViolation"


async def test_the_informers_objects_are_frozen_once_they_synced(apiserver, kubeconfig, policies, tmp_path):
    """A full collection would walk every cached object at each pass: once the informers have listed, what
    they hold is frozen (webhook.server.collector), and still served. Pods, the bulk, are kept packed
    (webhook/state/packed.py): text the collector never walks."""
    import gc

    from tests.kube.objects import pod

    apiserver.put(namespace("jdoe"))
    for i in range(50):
        apiserver.put(pod(f"stored-{i}"))

    def walked(obj):
        return any(o is obj for generation in range(3) for o in gc.get_objects(generation=generation))

    try:
        async with running_server(policies, tmp_path, live=live(kubeconfig)) as server:
            await async_eventually(lambda: server.qm.state.synced)
            stored = server.qm.state.get("Namespace", "", "jdoe")
            assert stored is not None and gc.is_tracked(stored)
            await async_eventually(lambda: not walked(stored))  # frozen: tracked, in no generation
            assert server.qm.state.get("Namespace", "", "jdoe") is stored
            kept = server.qm.state.caches["Pod"]._by_namespace["jdoe"]["stored-7"]
            assert type(kept) is bytes and not gc.is_tracked(kept)
            assert server.qm.state.get("Pod", "jdoe", "stored-7")["metadata"]["name"] == "stored-7"
            assert (await readyz(server))[0] == 200
    finally:
        gc.unfreeze()
