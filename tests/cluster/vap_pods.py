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
_SCALES = {"cpu": ["100m", "1", "1.5", "2"], "memory": ["64Mi", "1Gi", "2Gi"], "ephemeral-storage": ["1Gi", "2Gi"]}


def _drop_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None and v != {} and v != []}


@st.composite
def security_context(draw: Any) -> dict[str, Any] | None:
    if draw(st.booleans()):
        return None
    privileged, add = draw(_MAYBE_BOOL), draw(_CAPS)
    escalation = draw(_MAYBE_BOOL)
    if escalation is False and (privileged or "SYS_ADMIN" in add):
        escalation = None  # the API server refuses that pair before admission
    return _drop_none({
        "privileged": privileged, "allowPrivilegeEscalation": escalation,
        "runAsNonRoot": draw(_MAYBE_BOOL), "runAsUser": draw(st.sampled_from([None, 0, 1000])),
        "readOnlyRootFilesystem": draw(_MAYBE_BOOL),
        "capabilities": _drop_none({"add": add, "drop": draw(_CAPS)}),
        "seccompProfile": draw(st.sampled_from([None, {"type": "RuntimeDefault"}, {"type": "Unconfined"}])),
        "procMount": draw(st.sampled_from([None, "Default"])),  # Unmasked needs hostUsers: false
    })


@st.composite
def container(draw: Any, index: int) -> dict[str, Any]:
    resources: dict[str, dict[str, str]] = {"requests": {}, "limits": {}}
    for name, scale in _SCALES.items():  # a request never above its limit (the API server refuses that)
        low = draw(st.integers(0, len(scale) - 1))
        if draw(st.booleans()):
            resources["requests"][name] = scale[low]
        if draw(st.booleans()):
            resources["limits"][name] = scale[draw(st.integers(low, len(scale) - 1))]
    port = 8080 + index
    ports = [] if draw(st.booleans()) else [_drop_none({"containerPort": port, "hostPort": draw(st.sampled_from([None, port])),
                                                        "name": draw(st.sampled_from([None, f"http-{index}"]))})]
    probe = draw(st.sampled_from([None, {"httpGet": {"path": "/", "port": 8080}}, {"exec": {"command": ["true"]}}]))
    return _drop_none({
        "name": f"c{index}", "image": draw(_IMAGES), "securityContext": draw(security_context()),
        "resources": _drop_none(resources), "ports": ports, "livenessProbe": probe,
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
    init = draw(container(9)) if draw(st.integers(0, 4)) == 0 else None
    if init is not None:  # probes only on sidecars (restartPolicy Always)
        init.pop("livenessProbe", None)
        init.pop("readinessProbe", None)
    if not any("volumeMounts" in c for c in containers + ([init] if init else [])):
        volume = None
    labels = draw(st.dictionaries(st.sampled_from(["app.kubernetes.io/name", "app", "team"]),
                                  st.sampled_from(["web", ""]), max_size=2))
    return {"apiVersion": "v1", "kind": "Pod", "metadata": _drop_none({"labels": labels}), "spec": _drop_none({
        "containers": containers,
        "initContainers": [init] if init else None,
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
