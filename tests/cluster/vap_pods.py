"""Generated pods for the VAP comparison (hypothesis): the fields the corpus's pod policies read (security
contexts, capabilities, host namespaces and ports, volumes, images, resources, probes, labels), each present,
absent or set to a value on either side of what the policies allow."""

from __future__ import annotations

from typing import Any

from hypothesis import Phase, given, settings
from hypothesis import strategies as st

_MAYBE_BOOL = st.sampled_from([None, True, False])
_CAPS = st.lists(st.sampled_from(["ALL", "NET_RAW", "NET_ADMIN", "CHOWN", "SYS_ADMIN", "KILL", ""]), max_size=2, unique=True)
_IMAGES = st.sampled_from(["nginx", "nginx:latest", "nginx:1.27", "docker.io/library/nginx:1.27", "ghcr.io/x/y@sha256:"
                           + "a" * 64, "registry.k8s.io/pause:3.10", "tiller:v2"])
_QUANTITIES = st.sampled_from(["100m", "1", "2", "64Mi", "1Gi", "1.5"])


def _drop_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None and v != {} and v != []}


@st.composite
def security_context(draw: Any) -> dict[str, Any] | None:
    if draw(st.booleans()):
        return None
    return _drop_none({
        "privileged": draw(_MAYBE_BOOL), "allowPrivilegeEscalation": draw(_MAYBE_BOOL),
        "runAsNonRoot": draw(_MAYBE_BOOL), "runAsUser": draw(st.sampled_from([None, 0, 1000])),
        "readOnlyRootFilesystem": draw(_MAYBE_BOOL),
        "capabilities": _drop_none({"add": draw(_CAPS), "drop": draw(_CAPS)}),
        "seccompProfile": draw(st.sampled_from([None, {"type": "RuntimeDefault"}, {"type": "Unconfined"}])),
        "procMount": draw(st.sampled_from([None, "Default", "Unmasked"])),
    })


@st.composite
def container(draw: Any, index: int) -> dict[str, Any]:
    resources = {}
    for kind in ("requests", "limits"):
        values = _drop_none({"cpu": draw(st.none() | _QUANTITIES), "memory": draw(st.none() | _QUANTITIES),
                             "ephemeral-storage": draw(st.none() | st.just("1Gi"))})
        if values:
            resources[kind] = values
    ports = [] if draw(st.booleans()) else [_drop_none({"containerPort": 8080, "hostPort": draw(st.sampled_from([None, 80])),
                                                        "name": draw(st.sampled_from([None, "http"]))})]
    probe = draw(st.sampled_from([None, {"httpGet": {"path": "/", "port": 8080}}, {"exec": {"command": ["true"]}}]))
    return _drop_none({
        "name": f"c{index}", "image": draw(_IMAGES), "securityContext": draw(security_context()),
        "resources": resources, "ports": ports, "livenessProbe": probe,
        "readinessProbe": draw(st.sampled_from([None, {"tcpSocket": {"port": 8080}}])),
        "volumeMounts": [{"name": "data", "mountPath": "/data", "readOnly": draw(_MAYBE_BOOL) or False}]
        if draw(st.booleans()) else None,
    })


@st.composite
def pod(draw: Any) -> dict[str, Any]:
    count = draw(st.integers(1, 2))
    containers = [draw(container(i)) for i in range(count)]
    volume = draw(st.sampled_from([{"emptyDir": {}}, {"emptyDir": {"sizeLimit": "1Gi"}}, {"hostPath": {"path": "/var/run/docker.sock"}},
                                   {"hostPath": {"path": "/data", "type": "Directory"}}]))
    if not any("volumeMounts" in c for c in containers):
        volume = None
    labels = draw(st.dictionaries(st.sampled_from(["app.kubernetes.io/name", "app", "team"]),
                                  st.sampled_from(["web", ""]), max_size=2))
    return {"apiVersion": "v1", "kind": "Pod", "metadata": _drop_none({"labels": labels}), "spec": _drop_none({
        "containers": containers,
        "initContainers": [draw(container(9))] if draw(st.integers(0, 4)) == 0 else None,
        "hostNetwork": draw(_MAYBE_BOOL), "hostPID": draw(_MAYBE_BOOL), "hostIPC": draw(_MAYBE_BOOL),
        "securityContext": _drop_none({"runAsNonRoot": draw(_MAYBE_BOOL), "runAsUser": draw(st.sampled_from([None, 0, 1000])),
                                       "fsGroup": draw(st.sampled_from([None, 0, 2000]))}),
        "volumes": [{"name": "data", **volume}] if volume else None,
        "automountServiceAccountToken": draw(_MAYBE_BOOL),
    })}


def generated_pods(count: int) -> list[dict[str, Any]]:
    """`count` pods drawn by hypothesis, the same ones every run (derandomized), each named for its index."""
    drawn: list[dict[str, Any]] = []

    @settings(max_examples=count, derandomize=True, database=None, phases=[Phase.generate], deadline=None)
    @given(pod())
    def collect(p: dict[str, Any]) -> None:
        drawn.append(p)

    collect()
    for index, p in enumerate(drawn):
        p["metadata"]["name"] = f"generated-{index}"
    return drawn
