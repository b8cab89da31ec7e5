"""Kubeflow's side, as its components write objects: the Notebook CRD, the notebook web app and the notebook
controller (each a ServiceAccount of the `kubeflow` namespace with its own token), profile users with client
certificates and the `admin` role in their profile. The notebook controller's StatefulSet is built exactly as its
source builds it (kubeflow/kubeflow components/notebook-controller, generateStatefulSet); the pods then come from
Kubernetes' own StatefulSet controller."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.cluster.control import ClusterRecord
from tests.cluster.kube import Kube
from tests.cluster.quartermaster import apply_crds
from tests.cluster.pki import ClientIdentity, issue_client, kubeconfig_text

KUBEFLOW = "kubeflow"
WEB_APP = "jupyter-web-app-service-account"
CONTROLLER = "notebook-controller-service-account"
CREATOR_ANNOTATION = "notebooks.kubeflow.org/creator"

NOTEBOOK_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "notebooks.kubeflow.org"},
    "spec": {
        "group": "kubeflow.org", "scope": "Namespaced",
        "names": {"kind": "Notebook", "plural": "notebooks", "singular": "notebook", "listKind": "NotebookList"},
        "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                      "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                          "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                          "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}}],
    },
}


def _cluster_role(name: str, rules: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name},
             "rules": rules},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
             "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": KUBEFLOW}]}]


def install_notebook_crd(admin: Kube) -> None:
    """Kubeflow is installed before Quartermaster, as on a platform: its informers find the CRD at start."""
    apply_crds(admin, [NOTEBOOK_CRD])


def install_kubeflow(admin: Kube, record: ClusterRecord, workdir: Path) -> dict[str, Kube]:
    """The two Kubeflow identities (the web app, the notebook controller): their clients by ServiceAccount name."""
    if admin.get("v1", "Namespace", KUBEFLOW) is None:
        admin.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": KUBEFLOW}})
    objects: list[dict[str, Any]] = []
    for name in (WEB_APP, CONTROLLER):
        objects.append({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": KUBEFLOW}})
    objects += _cluster_role(WEB_APP, [{"apiGroups": ["kubeflow.org"], "resources": ["notebooks"],
                                        "verbs": ["create", "get", "list", "delete"]}])
    objects += _cluster_role(CONTROLLER, [
        {"apiGroups": ["kubeflow.org"], "resources": ["notebooks", "notebooks/status"], "verbs": ["*"]},
        {"apiGroups": ["apps"], "resources": ["statefulsets"], "verbs": ["*"]},
        {"apiGroups": [""], "resources": ["services", "pods", "events"], "verbs": ["*"]}])
    admin.apply_all(objects)
    clients = {}
    for name in (WEB_APP, CONTROLLER):
        path = workdir / f"{name}.kubeconfig"
        path.write_text(kubeconfig_text(record.server, record.pki, user_name=name,
                                        token=admin.token_for(KUBEFLOW, name)))
        clients[name] = Kube(record, path, admin._qmcluster)
    return clients


def profile_user(admin: Kube, record: ClusterRecord, workdir: Path, email: str, namespace: str) -> Kube:
    """A person with a client certificate and Kubernetes' `admin` role in the profile (Kubeflow's kubeflow-admin
    aggregates it), Notebooks included."""
    who = ClientIdentity(email.replace("@", "_at_"), email)
    issue_client(record.pki, who)
    admin.apply_all([
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "notebooks-edit"},
         "rules": [{"apiGroups": ["kubeflow.org"], "resources": ["notebooks"], "verbs": ["*"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": {"name": f"user-{who.file_stem}", "namespace": namespace},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
         "subjects": [{"kind": "User", "name": email, "apiGroup": "rbac.authorization.k8s.io"}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": {"name": f"notebooks-{who.file_stem}", "namespace": namespace},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "notebooks-edit"},
         "subjects": [{"kind": "User", "name": email, "apiGroup": "rbac.authorization.k8s.io"}]},
    ])
    path = workdir / f"{who.file_stem}.kubeconfig"
    path.write_text(kubeconfig_text(record.server, record.pki, user_name=email, client=who))
    return Kube(record, path, admin._qmcluster)


def notebook(name: str, namespace: str, creator: str, limits: dict[str, Any] | None = None) -> dict[str, Any]:
    """A Notebook as Kubeflow 1.10's jupyter web app posts it."""
    container = {"name": name, "image": "ghcr.io/kubeflow/kubeflow/notebook-servers/jupyter-scipy:v1.10.0",
                 "imagePullPolicy": "IfNotPresent",
                 "resources": {"requests": {"cpu": "500m", "memory": "1Gi"},
                               "limits": {"cpu": "600m", "memory": "2Gi", **(limits or {})}},
                 "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}]}
    return {"apiVersion": "kubeflow.org/v1", "kind": "Notebook",
            "metadata": {"name": name, "namespace": namespace, "labels": {"app": name},
                         "annotations": {CREATOR_ANNOTATION: creator,
                                         "notebooks.kubeflow.org/server-type": "jupyter"}},
            "spec": {"template": {"spec": {"serviceAccountName": "default-editor", "containers": [container],
                                           "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]}}}}


def statefulset_for(nb: dict[str, Any]) -> dict[str, Any]:
    """generateStatefulSet of Kubeflow's notebook controller, field by field."""
    name, namespace = nb["metadata"]["name"], nb["metadata"]["namespace"]
    pod_spec = dict(nb["spec"]["template"]["spec"])
    containers = [dict(c) for c in pod_spec["containers"]]
    first = containers[0]
    first.setdefault("workingDir", "/home/jovyan")
    first.setdefault("ports", [{"containerPort": 8888, "name": "notebook-port", "protocol": "TCP"}])
    first["env"] = list(first.get("env") or []) + [{"name": "NB_PREFIX", "value": f"/notebook/{namespace}/{name}"}]
    pod_spec["containers"] = containers
    pod_spec.setdefault("securityContext", {"fsGroup": 100})
    labels = {"statefulset": name, "notebook-name": name, **(nb["metadata"].get("labels") or {})}
    # annotations are copied to the pod except those whose key mentions kubectl or notebook
    annotations = {k: v for k, v in (nb["metadata"].get("annotations") or {}).items()
                   if "kubectl" not in k and "notebook" not in k}
    template_meta: dict[str, Any] = {"labels": labels}
    if annotations:
        template_meta["annotations"] = annotations
    return {"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": name, "namespace": namespace,
                         "ownerReferences": [{"apiVersion": "kubeflow.org/v1", "kind": "Notebook", "name": name,
                                              "uid": nb["metadata"]["uid"], "controller": True,
                                              "blockOwnerDeletion": True}]},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"statefulset": name}},
                     "template": {"metadata": template_meta, "spec": pod_spec}}}
