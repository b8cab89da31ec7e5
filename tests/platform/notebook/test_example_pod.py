"""examples/notebook-pod.yaml (and the notebook cases' pods) are the pod Kubeflow 1.10 really has created.

Kubeflow 1.10's Jupyter web app writes the Notebook (labels `app`, annotations `notebooks.kubeflow.org/
server-type` and `.../creator`); its notebook controller builds the StatefulSet's pod template from it,
copying every label but only the annotations whose key contains neither "kubectl" nor "notebook", and
sets no `serviceName`; kube-controller-manager's StatefulSet controller then names the pod, adds its
identity labels and sets `hostname` to the pod's name and `subdomain` to the (empty) service name.
A test pod carrying what the controller strips would let a check pass that never meets a real pod.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.platform.notebook.test_cases import CASES
from tests.support import REPO, load_yaml

# the Notebook behind examples/notebook-pod.yaml as the Jupyter web app writes it (metadata only matters here)
NOTEBOOK = {"apiVersion": "kubeflow.org/v1beta1", "kind": "Notebook", "metadata": {
    "name": "analysis", "namespace": "jdoe", "labels": {"app": "analysis"},
    "annotations": {"notebooks.kubeflow.org/server-type": "jupyter", "notebooks.kubeflow.org/creator": "jdoe@example.org"}}}
STATEFULSET_IDENTITY = {"controller-revision-hash", "statefulset.kubernetes.io/pod-name", "apps.kubernetes.io/pod-index"}


def controller_metadata(notebook: dict[str, Any]) -> dict[str, Any]:
    """The pod metadata Kubeflow 1.10's notebook controller puts in the StatefulSet's template."""
    meta = notebook["metadata"]
    labels = {"statefulset": meta["name"], "notebook-name": meta["name"], **meta.get("labels", {})}
    annotations = {k: v for k, v in meta.get("annotations", {}).items() if "kubectl" not in k and "notebook" not in k}
    return {"labels": labels, "annotations": annotations}


def created_by_the_statefulset_controller(pod: dict[str, Any]) -> bool:
    return any(ref.get("kind") == "StatefulSet" and ref.get("controller")
               for ref in pod["metadata"].get("ownerReferences", ()))


def test_the_example_is_the_pod_the_controllers_create() -> None:
    pod = load_yaml(REPO / "examples" / "notebook-pod.yaml")[0]
    expected = controller_metadata(NOTEBOOK)
    meta = pod["metadata"]
    assert meta.get("annotations", {}) == expected["annotations"] == {}
    assert {k: v for k, v in meta["labels"].items() if k not in STATEFULSET_IDENTITY} == expected["labels"]
    assert set(meta["labels"]) - set(expected["labels"]) == STATEFULSET_IDENTITY
    assert meta["labels"]["statefulset.kubernetes.io/pod-name"] == meta["name"] == "analysis-0"
    assert pod["spec"]["hostname"] == meta["name"]
    assert "subdomain" not in pod["spec"]  # the notebook controller's StatefulSet has no serviceName
    notebook = pod["spec"]["containers"][0]
    assert notebook["workingDir"] == "/home/jovyan"
    assert {"name": "NB_PREFIX", "value": "/notebook/jdoe/analysis"} in notebook["env"]


def test_the_kyverno_example_tests_the_same_pod() -> None:
    example = load_yaml(REPO / "examples" / "notebook-pod.yaml")[0]
    assert load_yaml(REPO / "examples" / "kyverno" / "notebook-home" / ".kyverno-test" / "resource.yaml")[0] == example


@pytest.mark.parametrize("resource", sorted(CASES.glob("*/resource.yaml")), ids=lambda p: p.parent.name)
def test_case_pods_carry_nothing_the_notebook_controller_strips(resource: Path) -> None:
    pod = load_yaml(resource)[0]
    if not created_by_the_statefulset_controller(pod):
        return
    # other admission webhooks (Istio) add kubectl.kubernetes.io/* later; none adds a notebook annotation
    assert not [k for k in pod["metadata"].get("annotations", {}) if "notebook" in k]
    assert "subdomain" not in pod["spec"]
