"""Apply what notebook_render produced to one pod, under the policy's merge rules.

Idempotent by construction: every step first looks for its own result (by name, by content) and only
adds what is missing, so a pod that was injected already, before or after another webhook (Istio's
proxy, the DRA rewrite) changed it, comes out unchanged.
"""

from __future__ import annotations

from typing import Any, Mapping

from webhook.model.quickinit import frozen_dataclass
from webhook.platform.notebook.config import HomeSpec, NotebookSpec, SidecarMode
from webhook.platform.notebook.credentials import credential_conflicts, refresher_mismatch, without_api_token_mount
from webhook.platform.notebook.merge import (Conflict, MergeLog, covers, merge_mount, merge_named, merge_scalar,
                                             same_path)
from webhook.platform.notebook.render import Desired

# Kubernetes' own annotation: which container `kubectl exec/logs` pick when none is named.
DEFAULT_CONTAINER_ANNOTATION = "kubectl.kubernetes.io/default-container"


@frozen_dataclass(dict_init=True)
class Injection:
    pod: Mapping[str, Any]  # the injected pod; the original when nothing changed or something conflicts
    changed: bool
    containers: tuple[str, ...]  # the notebook containers it found
    conflicts: tuple[Conflict, ...] = ()
    kept: tuple[str, ...] = ()


def notebook_indices(spec: NotebookSpec, pod: Mapping[str, Any]) -> list[int]:
    """Where the notebook containers are in spec.containers: never another injector's, never our own sidecar."""
    rule = spec.containers
    own = spec.refresher.name if spec.refresher else None
    candidates = [i for i, c in enumerate((pod.get("spec") or {}).get("containers") or [])
                  if c.get("name") not in rule.ignore and c.get("name") != own]
    if rule.all_containers:
        return candidates
    containers = pod["spec"]["containers"] if candidates else []
    notebook = ((pod.get("metadata") or {}).get("labels") or {}).get(rule.notebook_label)
    named = [i for i in candidates if containers[i].get("name") == notebook]
    # Kubeflow names the container after the notebook; a hand-made pod may not, so fall back to the first
    return named or candidates[:1]


def _own_copy(pod: Mapping[str, Any], spec: NotebookSpec, targets: list[int]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Copy on write: the pod, its spec, and exactly the lists and maps the injection edits in place (the
    volume list, the container list, the notebook containers with their env and mounts); everything
    else is shared with the input, which is never edited."""
    out = dict(pod)
    pod_spec = out["spec"] = dict(out["spec"])
    if isinstance(pod_spec.get("volumes"), list):
        pod_spec["volumes"] = list(pod_spec["volumes"])
    containers = pod_spec["containers"] = list(pod_spec["containers"])
    relocate = bool(spec.home and spec.home.relocate_workspace_to)
    for index in dict.fromkeys(targets):
        container = containers[index] = dict(containers[index])
        if isinstance(container.get("env"), list):
            container["env"] = list(container["env"])
        mounts = container.get("volumeMounts")
        if isinstance(mounts, list):
            container["volumeMounts"] = [dict(m) if isinstance(m, dict) else m for m in mounts] if relocate else list(mounts)
    return out, [containers[i] for i in targets]


def _annotations(out: dict[str, Any]) -> Any:
    """out.metadata.annotations, copied on write (setdefault on the copies, as on the pod itself)."""
    meta = out.get("metadata")
    if isinstance(meta, dict):
        meta = out["metadata"] = dict(meta)
        if isinstance(meta.get("annotations"), dict):
            meta["annotations"] = dict(meta["annotations"])
    return out.setdefault("metadata", {}).setdefault("annotations", {})


def inject(spec: NotebookSpec, desired: Desired, pod: Mapping[str, Any], indices: list[int] | None = None) -> Injection:
    """`indices`: notebook_indices(spec, pod), when the caller has them already."""
    if indices is None:
        indices = notebook_indices(spec, pod)
    if not indices:
        return Injection(pod, False, ())
    out, targets = _own_copy(pod, spec, indices)
    log = MergeLog()
    pod_spec = out["spec"]
    names = tuple(str(c.get("name", "")) for c in targets)
    for volume in desired.volumes:
        merge_named(pod_spec, "volumes", volume, spec.merge.volumes, f"volume {volume['name']!r}",
                    "spec.merge.volumes", log)
    if desired.sidecar is not None and spec.refresher is not None:
        _place_sidecar(pod_spec, desired.sidecar, spec.refresher.mode, spec.containers.ignore, names, log)
        log.conflicts.extend(pod_credential_conflicts(spec, desired, pod_spec))
        if spec.refresher.mode is SidecarMode.PLAIN:
            _annotations(out).setdefault(DEFAULT_CONTAINER_ANNOTATION, names[0])
    for container in targets:
        _inject_container(spec, desired, container, log)
    if log.conflicts:
        return Injection(pod, False, names, tuple(log.conflicts), tuple(log.kept))
    changed = out != pod
    return Injection(out if changed else pod, changed, names, (), tuple(log.kept))


def _place_sidecar(pod_spec: dict[str, Any], sidecar: Mapping[str, Any], mode: SidecarMode,
                   ignore: frozenset[str], notebooks: tuple[str, ...], log: MergeLog) -> None:
    own_list = "initContainers" if mode is SidecarMode.NATIVE else "containers"
    for key in ("initContainers", "containers"):
        for existing in pod_spec.get(key) or []:
            if existing.get("name") != sidecar["name"]:
                continue
            existing = without_api_token_mount(existing)
            ours = key == own_list and covers(existing, sidecar)
            mismatch = refresher_mismatch(existing, sidecar) if ours else None
            if not ours or mismatch:
                # a container of that name that is not ours (or from another version of the policy), or ours
                # with something more that can run code beside the credentials
                where = f" (its {mismatch} is not the refresher's: it could run code beside the credentials)" \
                    if mismatch else ""
                log.conflicts.append(Conflict(f"container {sidecar['name']!r} in spec.{key}{where}", existing, sidecar,
                                              "spec.tokenRefresher"))
            return
    items = list(pod_spec.get(own_list) or [])
    items.insert(_sidecar_index(items, mode, ignore, notebooks), dict(sidecar))
    pod_spec[own_list] = items


def credentials_secret(spec: NotebookSpec, desired: Desired) -> str:
    """The credentials Secret the rendering mounts into the refresher ("" without a refresher)."""
    name = spec.refresher.credentials_volume if spec.refresher else None
    volume = next((v for v in desired.volumes if v.get("name") == name), {})
    return str((volume.get("secret") or {}).get("secretName", ""))


def credential_problems(spec: NotebookSpec, desired: Desired, pod_spec: Mapping[str, Any]) -> list[Conflict]:
    """The pod as admission validates it (after every mutating webhook): a refresher other than ours, or
    anything besides it that could read the credentials. The pod is only looked at: the sidecar is
    placed on a copy of the spec, for its checks."""
    assert spec.refresher is not None and desired.sidecar is not None
    log = MergeLog()
    _place_sidecar(dict(pod_spec), desired.sidecar, spec.refresher.mode, spec.containers.ignore, (), log)
    return [*log.conflicts, *pod_credential_conflicts(spec, desired, pod_spec)]


def pod_credential_conflicts(spec: NotebookSpec, desired: Desired, pod_spec: Mapping[str, Any]) -> list[Conflict]:
    """What, besides the refresher, could read the user's credentials in this pod."""
    refresher = spec.refresher
    assert refresher is not None and desired.sidecar is not None
    secret = credentials_secret(spec, desired)
    own_list = "initContainers" if refresher.mode is SidecarMode.NATIVE else "containers"
    return credential_conflicts(pod_spec, desired.sidecar, own_list, refresher.credentials_volume, secret)


def _sidecar_index(items: list[dict[str, Any]], mode: SidecarMode, ignore: frozenset[str],
                   notebooks: tuple[str, ...]) -> int:
    if mode is SidecarMode.NATIVE:
        # Right after another injector's native sidecar (Istio's proxy must run for the refresher to reach
        # the issuer); otherwise first: before istio-init redirects traffic to a proxy that is not running
        # yet, and before the pod's own init containers, which may need the token too.
        proxies = [i for i, c in enumerate(items) if c.get("name") in ignore and c.get("restartPolicy") == "Always"]
        return proxies[-1] + 1 if proxies else 0
    # Right before the first notebook container: kubelet starts containers in order and holds the next one
    # until our postStart hook returns. Containers in front (Istio's proxy under holdApplicationUntilProxyStarts)
    # stay in front.
    return next((i for i, c in enumerate(items) if c.get("name") in notebooks), len(items))


def _inject_container(spec: NotebookSpec, desired: Desired, container: dict[str, Any], log: MergeLog) -> None:
    name = container.get("name")
    if spec.home and spec.home.relocate_workspace_to:
        _relocate_workspace(spec.home, container, log)
    for mount in desired.mounts:
        merge_mount(container, mount, spec.merge.volume_mounts, _mount_setting(spec.home, mount), log)
    for env in desired.env:
        merge_named(container, "env", env, spec.merge.env, f"env {env['name']} of container {name!r}",
                    "spec.merge.env", log)
    if spec.home and spec.home.set_working_dir and desired.home_path:
        merge_scalar(container, "workingDir", desired.home_path, spec.merge.working_dir,
                     f"workingDir of container {name!r}", "spec.merge.workingDir", log,
                     replaceable=(spec.home.workspace_path,))


def _mount_setting(home: HomeSpec | None, mount: Mapping[str, Any]) -> str:
    """The policy field to point at when a mount conflicts: a home on the workspace path has a better fix."""
    if home and mount["name"] == home.volume_name and same_path(mount["mountPath"], home.workspace_path):
        return "spec.home.workspace.action (Relocate moves the workspace out of the way)"
    return "spec.merge.volumeMounts"


def _relocate_workspace(home: HomeSpec, container: dict[str, Any], log: MergeLog) -> None:
    """Move Kubeflow's workspace mount out of the way; the home mount itself is never moved."""
    target = home.relocate_workspace_to or ""
    mounts = container.get("volumeMounts") or []
    for mount in mounts:
        if mount.get("name") == home.volume_name or not same_path(mount.get("mountPath"), home.workspace_path):
            continue
        clash = next((m for m in mounts if m is not mount and same_path(m.get("mountPath"), target)), None)
        if clash is not None:
            log.conflicts.append(Conflict(f"mount {target} of container {container.get('name')!r}", clash,
                                          {**mount, "mountPath": target}, "spec.home.workspace.relocateTo"))
            continue
        mount["mountPath"] = target
