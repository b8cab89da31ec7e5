"""The ProfileQuota document: the default file, schema errors, compile errors, class and override selection."""

from fractions import Fraction
from pathlib import Path

import pytest

from webhook.app import build_registry
from webhook.cel import CelCompiler
from webhook.model.policy import Phase
from webhook.policy.loader import PolicyLoader
from webhook.platform.quota.limits import resolve_limits
from webhook.state.memory import InMemoryClusterState
from tests.platform.quota.builders import DEFAULT_POLICY, compiled, kf_profile, namespace, policy_text
from tests.platform.support import load as load_file
from tests.support import assert_valid_k8s

GI = 2**30


def load(tmp_path: Path, text: str):
    return load_file(tmp_path, text, name="quota.yaml")


def test_the_default_policy_loads_with_the_platform_registry():
    result = PolicyLoader(build_registry(), CelCompiler()).load(DEFAULT_POLICY)
    assert result.ok, result.errors
    (policy,) = result.policies
    assert policy.id.kind == "ProfileQuota" and policy.phases == {Phase.VALIDATE}
    assert policy.match.kinds == {"Pod", "PersistentVolumeClaim", "ResourceClaim", "ResourceClaimTemplate", "Deployment",
                                  "StatefulSet", "ReplicaSet", "DaemonSet", "Job", "CronJob", "Notebook"}
    assert policy.match.operations == {"CREATE", "UPDATE"}
    assert policy.settings.classes["personal"].gpus == 1 and policy.settings.classes["personal"].storage == 30 * GI
    assert policy.settings.classes["team"].gpus == 8 and policy.settings.classes["team"].storage == 1024 * GI


def test_an_empty_spec_gets_the_platform_defaults(tmp_path):
    result = load(tmp_path, "apiVersion: quartermaster.dev/v1alpha1\nkind: ProfileQuota\nmetadata: {name: q}\nspec: {}\n")
    assert result.ok, result.errors
    settings = result.policies[0].settings
    assert settings == compiled().settings
    assert result.policies[0].match.namespace_selector.matches({"app.kubernetes.io/part-of": "kubeflow-profile"})
    assert not result.policies[0].match.namespace_selector.matches({"kubernetes.io/metadata.name": "default"})


def test_unknown_field_is_refused_with_file_line_and_field(tmp_path):
    text = policy_text().replace("  reservationSeconds: 30\n", "  reservationSeconds: 30\n  gpuLimit: 3\n")
    assert "gpuLimit" in text
    (error,) = load(tmp_path, text).errors
    assert error.file == "quota.yaml" and error.field == "spec.gpuLimit"
    assert error.line == text.splitlines().index("  gpuLimit: 3") + 1
    assert "allowed fields" in error.message


@pytest.mark.parametrize("spec, field, words", [
    ({"classes": {"personal": {"gpus": "lots"}}}, "spec.classes.personal.gpus", "not a Kubernetes quantity"),
    ({"classes": {"team": {"storage": "-1Gi"}}, "defaultClass": "team"}, "spec.classes.team.storage", "negative"),
    ({"defaultClass": "gold"}, "spec.defaultClass", "not one of the classes"),
    ({"gpus": {"deviceClasses": [{"name": "gpu.nvidia.com", "weight": "1x"}]}}, "spec.gpus.deviceClasses[0].weight", "quantity"),
    ({"messages": {"gpuAdvice": "ask {admin}"}}, "spec.messages.gpuAdvice", "placeholder"),
])
def test_compile_errors_name_the_field(tmp_path, spec, field, words):
    text = policy_text(**spec)
    (error,) = load(tmp_path, text).errors
    assert error.field == field and words in error.message
    assert error.line is not None


def test_a_weight_needs_a_name_or_a_prefix(tmp_path):
    (error,) = load(tmp_path, policy_text(gpus={"legacyResources": [{"weight": 1}]})).errors
    assert error.field.startswith("spec.gpus.legacyResources[0]")


# --- which limits apply ----------------------------------------------------------------------------
def limits_for(ns: dict, *objects, **spec):
    settings = compiled(**spec).settings
    return resolve_limits(settings, ns, ns["metadata"]["name"], InMemoryClusterState([ns, *objects]))


def test_class_comes_from_the_namespace_label():
    personal = limits_for(namespace("jdoe"))
    assert (personal.profile_class, personal.gpus.amount, personal.storage.amount) == ("personal", 1, 30 * GI)
    assert personal.gpus.origin == "class personal"
    team = limits_for(namespace("ml", "team"))
    assert (team.profile_class, team.gpus.amount, team.storage.amount) == ("team", 8, 1024 * GI)


def test_an_unknown_class_falls_back_to_the_default_with_a_note():
    limits = limits_for(namespace("x", "platinum"))
    assert limits.profile_class == "personal" and limits.gpus.amount == 1
    assert "'platinum'" in limits.notes[0]


def test_the_class_label_is_configurable():
    ns = namespace("x")
    ns["metadata"]["labels"]["example.org/tier"] = "team"
    assert limits_for(ns, classLabel="example.org/tier").gpus.amount == 8


def test_the_kubeflow_profile_overrides_its_class():
    profile = kf_profile("jdoe", {"requests.nvidia.com/gpu": "2", "requests.storage": "100Gi", "requests.cpu": "8"})
    assert_valid_k8s(namespace("jdoe"))
    limits = limits_for(namespace("jdoe"), profile)
    assert (limits.gpus.amount, limits.storage.amount) == (2, 100 * GI)
    assert limits.gpus.origin == "Profile jdoe"
    only_gpus = limits_for(namespace("jdoe"), kf_profile("jdoe", {"requests.nvidia.com/gpu": "0"}))
    assert (only_gpus.gpus.amount, only_gpus.storage.amount) == (0, 30 * GI)
    ignored = limits_for(namespace("jdoe"), profile, profileOverride={"enabled": False})
    assert ignored.gpus.amount == 1


def test_the_policy_override_wins_over_profile_and_class():
    profile = kf_profile("jdoe", {"requests.nvidia.com/gpu": "2", "requests.storage": "100Gi"})
    limits = limits_for(namespace("jdoe"), profile, overrides={"jdoe": {"gpus": "0.5"}})
    assert limits.gpus.amount == Fraction(1, 2) and limits.gpus.origin == "policy override for jdoe"
    assert limits.storage.amount == 100 * GI


def test_a_bad_profile_quantity_is_ignored_with_a_note():
    limits = limits_for(namespace("jdoe"), kf_profile("jdoe", {"requests.nvidia.com/gpu": "two"}))
    assert limits.gpus.amount == 1 and "is not a quantity" in limits.notes[0]


def test_a_class_without_a_gpu_limit_is_unlimited_there():
    limits = limits_for(namespace("jdoe", "cpu-only"), classes={"personal": {"gpus": 1}, "cpu-only": {"storage": "5Gi"}})
    assert limits.gpus.amount is None and limits.storage.amount == 5 * GI
