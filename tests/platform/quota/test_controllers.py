"""Controllers whose pod template can never fit the profile's quota are refused when they are created
(Enforce) or warned about (Audit), through the real `quartermaster apply`."""

from __future__ import annotations

import shutil

import pytest
import yaml

from tests.support import REPO, assert_valid_k8s
from webhook.cli import main

STATE = str(REPO / "examples" / "state")
TEMPLATE = {"metadata": {"labels": {"app": "train"}},
            "spec": {"containers": [{"name": "main", "image": "nvcr.io/nvidia/pytorch:25.01-py3",
                                     "resources": {"limits": {"nvidia.com/gpu": 2}}}]}}


def controller(kind: str, gpus: int = 2) -> dict:
    template = yaml.safe_load(yaml.safe_dump(TEMPLATE))
    template["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = gpus
    api = {"CronJob": "batch/v1", "Job": "batch/v1", "Notebook": "kubeflow.org/v1"}.get(kind, "apps/v1")
    spec: dict = {"template": template}
    if kind in ("Deployment", "StatefulSet"):
        spec |= {"replicas": 1, "selector": {"matchLabels": {"app": "train"}}}
    if kind == "StatefulSet":
        spec["serviceName"] = "train"
    if kind == "Job":
        template["spec"]["restartPolicy"] = "Never"
    if kind == "CronJob":
        template["spec"]["restartPolicy"] = "Never"
        spec = {"schedule": "0 3 * * *", "jobTemplate": {"spec": {"template": template}}}
    obj = {"apiVersion": api, "kind": kind, "metadata": {"name": "train", "namespace": "jdoe"}, "spec": spec}
    if kind != "Notebook":
        assert_valid_k8s(obj)
    return obj


@pytest.mark.parametrize("kind", ["Deployment", "StatefulSet", "Job", "CronJob", "Notebook"])
def test_a_template_that_can_never_fit_is_refused_at_creation(kind, tmp_path, capsys):
    path = tmp_path / "controller.yaml"
    path.write_text(yaml.safe_dump(controller(kind)))
    assert main(["apply", "--policies", str(REPO / "policies"), "--state", STATE, str(path)]) == 1
    err = capsys.readouterr().err
    assert f"DENIED {kind} jdoe/train: [profile-quota/gpu-quota] each pod of {kind} train asks for 2 GPUs, more than " \
           "profile 'jdoe' may use at all (limit 1 GPU, class personal): none of its pods could ever start." in err
    path.write_text(yaml.safe_dump(controller(kind, gpus=1)))
    assert main(["apply", "--detailed-results", "--policies", str(REPO / "policies"), "--state", STATE, str(path)]) == 0
    assert f"each pod of {kind} train asks for 1 GPU, within the limit of 1 GPU (class personal)" in capsys.readouterr().err


def test_audit_mode_warns_and_a_statefulsets_claims_count(tmp_path, capsys):
    policies = tmp_path / "policies"
    shutil.copytree(REPO / "policies", policies)
    quota = policies / "profile-quota.yaml"
    quota.write_text(quota.read_text().replace("mode: Enforce", "mode: Audit"))
    sts = controller("StatefulSet", gpus=1)
    sts["spec"]["volumeClaimTemplates"] = [{"metadata": {"name": "data"}, "spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "40Gi"}}}}]
    assert_valid_k8s(sts)
    path = tmp_path / "sts.yaml"
    path.write_text(yaml.safe_dump(sts))
    assert main(["apply", "--policies", str(policies), "--state", STATE, "--policy-report", str(path)]) == 0
    report = yaml.safe_load(capsys.readouterr().out)
    (storage,) = [r for r in report["results"] if r["rule"] == "storage-quota"]
    assert storage["result"] == "fail" and storage["properties"]["mode"] == "Audit"
    assert storage["message"].startswith("each pod of StatefulSet train asks for 40Gi of storage, more than profile 'jdoe'")
