"""What the test API server shares with its parts: the resources it serves, metav1.Status bodies,
label selectors (merge patches: tests.support.merge_patch)."""

from __future__ import annotations

from typing import Any

GVR = tuple[str, str, str]  # group, version, plural

RESOURCES: dict[GVR, tuple[str, bool]] = {  # -> kind, namespaced
    ("", "v1", "namespaces"): ("Namespace", False),
    ("", "v1", "pods"): ("Pod", True),
    ("", "v1", "persistentvolumeclaims"): ("PersistentVolumeClaim", True),
    ("", "v1", "resourcequotas"): ("ResourceQuota", True),
    ("", "v1", "configmaps"): ("ConfigMap", True),
    ("resource.k8s.io", "v1", "resourceclaims"): ("ResourceClaim", True),
    ("resource.k8s.io", "v1", "resourceclaimtemplates"): ("ResourceClaimTemplate", True),
    ("kubeflow.org", "v1", "profiles"): ("Profile", False),
    ("apps", "v1", "statefulsets"): ("StatefulSet", True),
    ("kubeflow.org", "v1", "notebooks"): ("Notebook", True),
    ("wgpolicyk8s.io", "v1alpha2", "policyreports"): ("PolicyReport", True),
    ("wgpolicyk8s.io", "v1alpha2", "clusterpolicyreports"): ("ClusterPolicyReport", False),
    ("openreports.io", "v1alpha1", "reports"): ("Report", True),
    ("openreports.io", "v1alpha1", "clusterreports"): ("ClusterReport", False),
    ("events.k8s.io", "v1", "events"): ("Event", True),
    ("coordination.k8s.io", "v1", "leases"): ("Lease", True),
    # policy kinds kept as objects (webhook/kube/policy_objects.py); their status is a subresource
    ("quartermaster.dev", "v1alpha1", "profilequotas"): ("ProfileQuota", False),
    ("quartermaster.dev", "v1alpha1", "notebookinjections"): ("NotebookInjection", False),
    ("quartermaster.dev", "v1alpha1", "deviceclaimrewrites"): ("DeviceClaimRewrite", False),
    ("kyverno.io", "v1", "clusterpolicies"): ("ClusterPolicy", False),
    ("kyverno.io", "v1", "policies"): ("Policy", True),
    ("kyverno.io", "v2", "policyexceptions"): ("PolicyException", True),
    ("policies.kyverno.io", "v1", "validatingpolicies"): ("ValidatingPolicy", False),
    ("policies.kyverno.io", "v1", "mutatingpolicies"): ("MutatingPolicy", False),
    ("policies.kyverno.io", "v1", "policyexceptions"): ("PolicyException", True),
}
TOKEN = "test-token"


def gvr_of(obj: dict[str, Any]) -> GVR:
    group, _, version = obj["apiVersion"].rpartition("/")
    for key, (kind, _) in RESOURCES.items():
        if key[0] == group and key[1] == version and kind == obj["kind"]:
            return key
    raise KeyError(f"no resource for {obj['apiVersion']} {obj['kind']}")


def status(code: int, reason: str, message: str, **details: Any) -> dict[str, Any]:
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}
    if details:
        body["details"] = details
    return body




def is_watch(query: dict[str, str]) -> bool:
    return query.get("watch") in ("1", "true", "True")


def labels_match(obj: dict[str, Any], selector: str) -> bool:
    if not selector:
        return True  # objects a test planted with a broken metadata are listed, as a broken server would
    labels = (obj.get("metadata") or {}).get("labels") or {}
    for term in filter(None, selector.split(",")):
        key, _, value = term.partition("=")
        if labels.get(key.strip()) != value.strip().lstrip("="):
            return False
    return True
