"""The API server's side of the webhook protocol with the chart's registrations: failure policies while
Quartermaster cannot be reached, reinvocation after another mutating webhook, warnings that kubectl prints, and
policy objects applied with kubectl taking effect in live mode."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import signal
import ssl
import threading
from contextlib import contextmanager
from typing import Any, Iterator

import pytest
from aiohttp import web

from tests.cluster.kube import Kube, eventually
from tests.cluster.quartermaster import Installation, free_port
from tests.cluster.workloads import container, make_profile, pod, unique

pytestmark = [pytest.mark.cluster, pytest.mark.xdist_group("cluster")]


@contextmanager
def _registered_at(quartermaster: Installation, url: str, values: dict[str, Any] | None = None) -> Iterator[None]:
    """The chart's registrations pointed elsewhere for the duration, then restored."""
    real_url = quartermaster.url
    quartermaster.url = url
    try:
        quartermaster.register(values)
        yield
    finally:
        quartermaster.url = real_url
        quartermaster.register()


def test_with_failure_policy_fail_an_unreachable_webhook_refuses_gpu_pods(admin: Kube,
                                                                          quartermaster: Installation) -> None:
    namespace = make_profile(admin)["metadata"]["name"]
    with _registered_at(quartermaster, f"https://127.0.0.1:{free_port()}"):
        refused = admin.kubectl_create(pod("blocked", namespace, limits={"nvidia.com/gpu": 1}), check=False)
        assert refused.returncode != 0
        assert 'failed calling webhook "mutate.quartermaster.dev"' in refused.stderr, refused.stderr
        # pods the relevance filter does not send are not affected by the outage
        admin.kubectl_create(pod("cpu-only", namespace))
    assert admin.get("v1", "Pod", "blocked", namespace) is None


def test_with_failure_policy_ignore_an_unreachable_webhook_admits_unmodified(admin: Kube,
                                                                             quartermaster: Installation) -> None:
    namespace = make_profile(admin)["metadata"]["name"]
    ignore = {"webhooks": {"mutate": {"failurePolicy": "Ignore"}, "validate": {"failurePolicy": "Ignore"}}}
    with _registered_at(quartermaster, f"https://127.0.0.1:{free_port()}", ignore):
        admin.kubectl_create(pod("through", namespace, limits={"nvidia.com/gpu": 1}))
    stored = admin.get("v1", "Pod", "through", namespace)
    assert stored["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert not stored["spec"].get("resourceClaims")


@contextmanager
def _frozen(quartermaster: Installation) -> Iterator[None]:
    """Every replica stopped in its tracks (SIGSTOP): the kernel still accepts connections, nothing answers, so
    the API server waits its timeoutSeconds, as for a webhook slower than that."""
    for replica in quartermaster.replicas:
        os.kill(replica.process.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for replica in quartermaster.replicas:
            os.kill(replica.process.pid, signal.SIGCONT)


@pytest.mark.parametrize("failure_policy", ["Fail", "Ignore"])
def test_a_webhook_slower_than_timeout_seconds_is_governed_by_the_failure_policy(admin: Kube,
                                                                                quartermaster: Installation,
                                                                                failure_policy: str) -> None:
    namespace = make_profile(admin)["metadata"]["name"]
    values = {"webhooks": {"timeoutSeconds": 2, "mutate": {"failurePolicy": failure_policy},
                           "validate": {"failurePolicy": failure_policy}}}
    with _registered_at(quartermaster, quartermaster.url, values), _frozen(quartermaster):
        result = admin.kubectl_create(pod("slow", namespace, limits={"nvidia.com/gpu": 1}), check=False)
    if failure_policy == "Fail":
        assert result.returncode != 0
        assert 'failed calling webhook "mutate.quartermaster.dev"' in result.stderr, result.stderr
        assert "deadline exceeded" in result.stderr or "timeout" in result.stderr.lower(), result.stderr
        assert admin.get("v1", "Pod", "slow", namespace) is None
    else:
        assert result.returncode == 0, result.stderr
        stored = admin.get("v1", "Pod", "slow", namespace)
        assert stored["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "1"  # unmodified
    # thawed, the replicas answer again; the pod admitted unmodified meanwhile is charged like any other
    def answered() -> bool:
        again = admin.kubectl_create(pod("thawed", namespace, limits={"nvidia.com/gpu": 1}), check=False)
        if failure_policy == "Fail":
            return again.returncode == 0
        return again.returncode != 0 and 'admission webhook "validate.quartermaster.dev" denied' in again.stderr
    eventually(answered, 60, interval=1, message="Quartermaster answering after the replicas resumed")
    admin.delete("v1", "Namespace", namespace)  # its GPU pods go back to the pool


class _SecondMutator:
    """Another mutating webhook, registered after Quartermaster's (names sort after it), that adds a GPU to a
    container: the API server must call Quartermaster again (reinvocationPolicy IfNeeded) so that it is rewritten."""

    def __init__(self, cert_dir) -> None:
        self.port = free_port()
        self.calls = 0
        self._context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._context.load_cert_chain(str(cert_dir / "tls.crt"), str(cert_dir / "tls.key"))
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None

    async def _mutate(self, request: web.Request) -> web.Response:
        review = await request.json()
        self.calls += 1
        req = review["request"]
        obj = req["object"]
        patch = []
        if not any(c["name"] == "helper" for c in obj["spec"]["containers"]):
            patch = [{"op": "add", "path": "/spec/containers/-",
                      "value": container("helper", limits={"nvidia.com/gpu": 1})}]
        response: dict[str, Any] = {"uid": req["uid"], "allowed": True}
        if patch:
            response["patchType"] = "JSONPatch"
            response["patch"] = base64.b64encode(json.dumps(patch).encode()).decode()
        return web.json_response({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                                  "response": response})

    def start(self) -> None:
        app = web.Application()
        app.router.add_post("/mutate", self._mutate)
        self._runner = web.AppRunner(app)
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._runner.setup(), self._loop).result(10)
        site = web.TCPSite(self._runner, "127.0.0.1", self.port, ssl_context=self._context)
        asyncio.run_coroutine_threadsafe(site.start(), self._loop).result(10)

    def stop(self) -> None:
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)


def test_quartermaster_is_reinvoked_after_another_webhook_adds_a_gpu(admin: Kube, quartermaster: Installation) -> None:
    # a team profile: the pod ends up with two GPUs
    namespace = make_profile(admin, profile_class="team")["metadata"]["name"]
    mutator = _SecondMutator(quartermaster.cert_dir)
    mutator.start()
    config = {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "zz-second-mutator"},
        "webhooks": [{
            "name": "second.mutator.test", "admissionReviewVersions": ["v1"], "sideEffects": "None",
            "clientConfig": {"url": f"https://127.0.0.1:{mutator.port}/mutate", "caBundle": quartermaster.ca_bundle},
            "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}],
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
            "failurePolicy": "Fail", "reinvocationPolicy": "Never", "timeoutSeconds": 5,
        }],
    }
    try:
        admin.apply_all([config])
        admin.kubectl_create(pod("notebookish", namespace, limits={"nvidia.com/gpu": 1}))
    finally:
        admin.delete("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", "zz-second-mutator")
        mutator.stop()
    stored = admin.get("v1", "Pod", "notebookish", namespace)
    assert mutator.calls >= 1
    names = [c["name"] for c in stored["spec"]["containers"]]
    assert names == ["main", "helper"]
    for c in stored["spec"]["containers"]:
        assert "nvidia.com/gpu" not in c["resources"].get("limits", {}), f"{c['name']} kept its legacy GPU"
        assert c["resources"].get("claims"), f"{c['name']} got no claim"
    assert len(stored["spec"]["resourceClaims"]) == 2


def test_an_audit_quota_applied_with_kubectl_warns_through_kubectl(admin: Kube, quartermaster: Installation) -> None:
    label = unique("audit-class")
    # not a Kubeflow profile, so that only this policy's quota applies to it
    namespace = label
    admin.create({"apiVersion": "v1", "kind": "Namespace",
                  "metadata": {"name": namespace, "labels": {"quartermaster.dev/profile-class": label}}})
    eventually(lambda: admin.get("v1", "ServiceAccount", "default", namespace), 30, message="default SA")
    policy = {
        "apiVersion": "quartermaster.dev/v1alpha1", "kind": "ProfileQuota",
        "metadata": {"name": label},
        "spec": {"mode": "Audit", "failurePolicy": "Fail",
                 "namespaceSelector": {"matchLabels": {"quartermaster.dev/profile-class": label}},
                 "classLabel": "quartermaster.dev/profile-class", "defaultClass": label,
                 "classes": {label: {"gpus": 0, "storage": "30Gi"}}},
    }
    admin.kubectl("apply", "-f", "-", stdin=json.dumps(policy))

    def warned() -> str | None:
        name = unique("warned")
        created = admin.kubectl_create(pod(name, namespace, limits={"nvidia.com/gpu": 1}), check=False)
        return created.stderr if "Warning:" in created.stderr and label in created.stderr else None
    warning = eventually(warned, 60, interval=2, message="the audit policy object loaded and warning")
    assert "GPU" in warning
