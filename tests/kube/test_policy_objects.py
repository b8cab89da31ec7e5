"""Live mode reads policies kept as cluster objects beside the --policies directory: an applied object
takes effect, a broken one is refused alone (status condition Ready=False and a Warning Event), a name
already defined in the files is refused (files win), and a fixed object loads."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from dataclasses import replace

from tests.kube.conftest import FAST
from tests.kube.objects import namespace
from tests.support import REPO, eventually
from webhook.app import Quartermaster, Settings

API = "quartermaster.dev/v1alpha1"


def quota(name: str, gpus) -> dict:
    return {"apiVersion": API, "kind": "ProfileQuota", "metadata": {"name": name},
            "spec": {"namespaceSelector": {"matchLabels": {"quartermaster.dev/profile-class": "team"}},
                     "classes": {"team": {"gpus": gpus, "storage": "2Ti"}}, "defaultClass": "team"}}


def ready(apiserver, name):
    obj = apiserver.get(API, "ProfileQuota", "", name) or {}
    conditions = (obj.get("status") or {}).get("conditions") or []
    return conditions[0] if conditions else None


@contextlib.asynccontextmanager
async def live_quartermaster(tmp_path, kubeconfig):
    policies = tmp_path / "policies"
    policies.mkdir()
    shutil.copy(REPO / "policies" / "profile-quota.yaml", policies)
    qm = Quartermaster.build(Settings(policies=policies, live=replace(FAST, kubeconfig=kubeconfig)))
    qm.load_policies()
    await qm.live.start()
    watch = asyncio.create_task(qm.source.watch(0.1))
    try:
        yield qm
    finally:
        watch.cancel()
        await asyncio.gather(watch, return_exceptions=True)
        await qm.live.stop()


def names(qm):
    return {(p.id.kind, p.id.name) for p in qm.store.snapshot.policies}


async def test_policy_objects_load_beside_the_files_and_refusals_are_told(apiserver, kubeconfig, tmp_path):
    apiserver.put(namespace("jdoe"))
    apiserver.put(quota("team-quota", 16))
    apiserver.put(quota("broken", "one"))
    apiserver.put(quota("profile-quota", 4))  # the file policies/profile-quota.yaml defines this name
    async with live_quartermaster(tmp_path, kubeconfig) as qm:
        await eventually(lambda: ("ProfileQuota", "team-quota") in names(qm), message="object never loaded")
        assert ("ProfileQuota", "broken") not in names(qm)
        assert qm.store.status.errors == ()  # an object's error never refuses the set: the files still serve
        broken = await eventually(lambda: ready(apiserver, "broken"))
        assert broken["status"] == "False" and broken["reason"] == "Refused"
        assert "field spec.classes.team.gpus" in broken["message"] and "'one'" in broken["message"]
        duplicate = await eventually(lambda: ready(apiserver, "profile-quota"))
        assert duplicate["status"] == "False" and "already defined in profile-quota.yaml" in duplicate["message"]
        assert (await eventually(lambda: ready(apiserver, "team-quota")))["status"] == "True"
        events = [e for e in apiserver.list("events.k8s.io/v1", "Event", "default") if e["reason"] == "PolicyRefused"]
        assert {e["regarding"]["name"] for e in events} == {"broken", "profile-quota"}
        assert all(e["type"] == "Warning" and e["regarding"]["kind"] == "ProfileQuota" for e in events)

        apiserver.put(quota("broken", 2))  # fixed with kubectl apply
        await eventually(lambda: ("ProfileQuota", "broken") in names(qm), message="fixed object never loaded")
        await eventually(lambda: (ready(apiserver, "broken") or {}).get("status") == "True")
        # status writes are ours: they change no policy and cause no further events
        await asyncio.sleep(0.5)
        again = [e for e in apiserver.list("events.k8s.io/v1", "Event", "default") if e["reason"] == "PolicyRefused"]
        assert len(again) == len(events)
