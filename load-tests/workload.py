"""What the suite sends and seeds: AdmissionReviews of realistic pods, and standalone state files.

The GPU notebook pod is `examples/notebook-pod.yaml` (a pod as Kubeflow's notebook controller has it
created) with one `nvidia.com/gpu`; the plain pod is a small Deployment-made pod. Stored pods for the
quota and memory runs are ~4 KB each in block YAML, as `kubectl get -o yaml` prints them.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent
PROFILE_LABEL = {"app.kubernetes.io/part-of": "kubeflow-profile"}


def notebook_pod(name: str, namespace: str, gpus: int = 1) -> dict[str, Any]:
    pod = yaml.safe_load((REPO / "examples" / "notebook-pod.yaml").read_text())
    pod["metadata"].update(name=name, namespace=namespace)
    pod["metadata"]["labels"]["notebook-name"] = name
    pod["spec"]["hostname"] = name
    if gpus:
        pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = str(gpus)
    return pod


def plain_pod(name: str, namespace: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": {"app": "web", "pod-template-hash": "5d4f8"}},
            "spec": {"containers": [{"name": "web", "image": "registry.example.org/web:1.4.2",
                                     "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                                     "resources": {"requests": {"cpu": "100m", "memory": "128Mi"},
                                                   "limits": {"cpu": "500m", "memory": "256Mi"}}}],
                     "restartPolicy": "Always", "serviceAccountName": "default"}}


def review(pod: dict[str, Any], uid: str = "6b8ae4f4-0d54-4a7c-9a8f-1c2d3e4f5a6b") -> dict[str, Any]:
    meta = pod["metadata"]
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": uid, "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"},
        "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
        "requestResource": {"group": "", "version": "v1", "resource": "pods"},
        "name": meta["name"], "namespace": meta["namespace"], "operation": "CREATE",
        # pods are created by the StatefulSet controller (the notebook controller makes the StatefulSet)
        "userInfo": {"username": "system:serviceaccount:kube-system:statefulset-controller",
                     "uid": "b1c2", "groups": ["system:serviceaccounts", "system:authenticated"]},
        "object": pod, "oldObject": None, "dryRun": False,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}}}


def namespace(name: str, profile: bool, owner: str = "") -> dict[str, Any]:
    labels = {"kubernetes.io/metadata.name": name, **(PROFILE_LABEL if profile else {})}
    meta: dict[str, Any] = {"name": name, "labels": labels}
    if owner:
        meta["annotations"] = {"owner": owner}
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}


def _stored_pod_template(as_json: bool = False) -> str:
    """A running notebook pod as the API server returns it (status, managedFields): about 4 KB of YAML."""
    pod = notebook_pod("NAME", "NAMESPACE", gpus=0)
    pod["metadata"].update(uid="UID", resourceVersion="1", creationTimestamp="2026-11-30T09:00:00Z", managedFields=[
        {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1", "time": "2026-11-30T09:00:00Z",
         "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {k: {} for k in pod["metadata"]["labels"]}},
                                               "f:spec": {"f:containers": {}, "f:volumes": {}}}}])
    pod["spec"]["nodeName"] = "node-17.example.org"
    pod["status"] = {"phase": "Running", "qosClass": "Burstable", "hostIP": "10.0.3.17", "podIP": "10.244.7.12",
                     "startTime": "2026-11-30T09:00:02Z",
                     "conditions": [{"type": t, "status": "True", "lastTransitionTime": "2026-11-30T09:00:09Z"}
                                    for t in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady",
                                              "PodScheduled")],
                     "containerStatuses": [{"name": "NAME", "ready": True, "restartCount": 0, "started": True,
                                            "image": pod["spec"]["containers"][0]["image"],
                                            "imageID": "ghcr.io/kubeflow/notebook@sha256:" + "0" * 64,
                                            "containerID": "containerd://" + "f" * 64,
                                            "state": {"running": {"startedAt": "2026-11-30T09:00:08Z"}}}]}
    return json.dumps(pod, indent=1) if as_json else yaml.safe_dump(pod, sort_keys=False)


def write_state_json(path: Path, namespaces: list[dict[str, Any]], pods_per_namespace: dict[str, int]) -> Path:
    """The same, as `kubectl get -o json` writes it: one List."""
    template = _stored_pod_template(as_json=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        out.write('{"apiVersion": "v1", "kind": "List", "items": [\n')
        out.write(",\n".join(json.dumps(ns) for ns in namespaces))
        for ns_name, count in pods_per_namespace.items():
            for i in range(count):
                out.write(",\n" + template.replace("NAMESPACE", ns_name).replace("NAME", f"nb-{i:05d}-0")
                          .replace("UID", f"{ns_name}-{i:08d}"))
        out.write("\n]}\n")
    return path


def write_state(path: Path, namespaces: list[dict[str, Any]], pods_per_namespace: dict[str, int]) -> Path:
    """One YAML file: the namespaces, then `count` stored pods in each listed namespace (text-templated: fast)."""
    template = _stored_pod_template()
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        for ns in namespaces:
            out.write("---\n" + yaml.safe_dump(ns, sort_keys=False))
        for ns_name, count in pods_per_namespace.items():
            for i in range(count):
                name = f"nb-{i:05d}-0"
                out.write("---\n" + template.replace("NAMESPACE", ns_name).replace("NAME", name)
                          .replace("UID", f"{ns_name}-{i:08d}"))
    return path


def policies_dir(target: Path, with_pod_security: bool) -> tuple[Path, int]:
    """The default policies, plus the pod-security ValidatingPolicies when the CEL family can load them."""
    target.mkdir(parents=True, exist_ok=True)
    for source in sorted((REPO / "policies").glob("*.yaml")):
        (target / source.name).write_text(source.read_text())
    extra = 0
    if with_pod_security:
        corpus = REPO.parent.parent / "shared" / "conformance" / "kyverno-policies" / "pod-security-vpol"
        corpus = corpus if corpus.exists() else Path("/work/shared/conformance/kyverno-policies/pod-security-vpol")
        for policy in sorted(corpus.glob("*/*/*.yaml")):
            doc = yaml.safe_load(policy.read_text())
            if isinstance(doc, dict) and doc.get("kind") == "ValidatingPolicy":
                (target / f"psa-{policy.parent.name}.yaml").write_text(policy.read_text())
                extra += 1
    return target, extra


def dump(obj: Any, path: Path) -> Path:
    path.write_text(json.dumps(obj, separators=(",", ":")))
    return path


def deep(obj: Any) -> Any:
    return copy.deepcopy(obj)
