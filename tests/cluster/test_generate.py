"""Kyverno `generate` rules and GeneratingPolicies creating objects through the real API server, with the webhook's
own identity and the RBAC the chart grants (`live.generateKinds`): stored as `quartermaster apply` predicts, only
once the trigger is admitted, never for a dry run. The policies are tests/cluster/policies/e2e-generate.yaml,
loaded beside the default ones. The chart's relevance filter sends the webhook only pods that ask for GPUs (or are
notebooks, or read Secrets): the triggers ask for a GPU, in namespaces that are no profile (not rewritten, no
quota)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.cluster.kube import Kube, eventually
from tests.cluster.predict import assert_stored_as_predicted, predict
from tests.cluster.quartermaster import Installation
from tests.cluster.workloads import pod, unique

pytestmark = [pytest.mark.cluster, pytest.mark.xdist_group("cluster")]

LABEL = "quartermaster.dev/e2e-generate"


def trigger(name: str, namespace: str) -> dict[str, Any]:
    return pod(name, namespace, limits={"nvidia.com/gpu": 1})


def labelled_namespace(admin: Kube, labelled: bool = True) -> dict[str, Any]:
    name = unique("generate")
    namespace = {"apiVersion": "v1", "kind": "Namespace",
                 "metadata": {"name": name, "labels": {LABEL: "true"} if labelled else {}}}
    admin.create(namespace)
    eventually(lambda: admin.get("v1", "ServiceAccount", "default", name), 30, message=f"{name}/default SA")
    return namespace


def test_generated_objects_are_created_through_the_api_as_predicted(admin: Kube, quartermaster: Installation,
                                                                    tmp_path) -> None:
    namespace = labelled_namespace(admin)
    name = namespace["metadata"]["name"]
    trigger_pod = trigger("trigger", name)
    predicted = predict(tmp_path, namespace, trigger_pod, policies=quartermaster.policies)
    expected = predicted.created("ConfigMap")
    assert sorted(c["metadata"]["name"] for c in expected) == ["gpol-trigger", "note-trigger"], predicted.table
    admin.kubectl_create(trigger_pod)
    for config_map in expected:
        stored = eventually(lambda c=config_map: admin.get("v1", "ConfigMap", c["metadata"]["name"], name), 30,
                            message=f"ConfigMap {config_map['metadata']['name']} generated")
        assert_stored_as_predicted(config_map, stored, fields=("data",))
        # written by the webhook (its ServiceAccount, whose RBAC the chart widened for ConfigMaps), not by kubectl
        managers = {entry.get("manager") for entry in stored["metadata"].get("managedFields") or ()}
        assert managers == {"quartermaster"}, managers


def test_a_dry_run_and_an_unmatched_namespace_generate_nothing(admin: Kube, quartermaster: Installation) -> None:
    namespace = labelled_namespace(admin)["metadata"]["name"]
    admin.kubectl_create(trigger("dry", namespace), extra=("--dry-run=server",))
    other = labelled_namespace(admin, labelled=False)["metadata"]["name"]
    admin.kubectl_create(trigger("plain", other))
    # a real trigger afterwards: once its objects exist, the earlier ones would have too
    admin.kubectl_create(trigger("after", namespace))
    eventually(lambda: admin.get("v1", "ConfigMap", "gpol-after", namespace), 30, message="the later trigger's object")
    eventually(lambda: admin.get("v1", "ConfigMap", "note-after", namespace), 30, message="the later trigger's object")
    names = {c["metadata"]["name"] for c in admin.list("v1", "ConfigMap", namespace)}
    assert not names & {"gpol-dry", "note-dry"}, names
    assert not {c["metadata"]["name"] for c in admin.list("v1", "ConfigMap", other)} & {"gpol-plain", "note-plain"}
