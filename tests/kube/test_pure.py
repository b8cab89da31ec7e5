"""The parts of live mode that need no API: backoff, resource paths, backstop quantities and keys."""

from fractions import Fraction

from webhook.kube.backstop import quantity_text, quota_object, same_hard
from webhook.platform.quota.backstop import quota_keys
from webhook.kube.informer import backoff_delay
from webhook.kube.resources import resource_for
from webhook.platform.quota.limits import Limit, ProfileLimits
from webhook.platform.quota.settings import compile_settings
from tests.support import assert_valid_k8s


def test_backoff_is_exponential_capped_and_jittered():
    assert backoff_delay(1, 0.5, 30, rng=lambda: 1.0) == 0.5
    assert backoff_delay(3, 0.5, 30, rng=lambda: 1.0) == 2.0
    assert backoff_delay(3, 0.5, 30, rng=lambda: 0.0) == 1.0  # at least half
    assert backoff_delay(50, 0.5, 30, rng=lambda: 1.0) == 30


def test_resource_paths():
    assert str(resource_for("resource.k8s.io/v1", "ResourceClaimTemplate")) == "resourceclaimtemplates.resource.k8s.io"
    assert resource_for("example.org/v1", "Policy").plural == "policies"
    assert resource_for("example.org/v1", "Ingress").plural == "ingresses"
    assert resource_for("v1", "ConfigMap").plural == "configmaps" and resource_for("v1", "ConfigMap").core


def test_quantities_as_users_write_them():
    assert quantity_text(Fraction(30 * 2**30)) == "30Gi"
    assert quantity_text(Fraction(2**40)) == "1Ti"
    assert quantity_text(Fraction(1536 * 2**20)) == "1536Mi"
    assert quantity_text(Fraction(8)) == "8" and quantity_text(Fraction(1000)) == "1000"
    assert same_hard({"requests.storage": "32212254720"}, {"requests.storage": Fraction(30 * 2**30)})
    assert not same_hard({"requests.storage": "30Gi"}, {"requests.storage": Fraction(30 * 2**30), "x": Fraction(1)})
    assert not same_hard({"requests.storage": "lots"}, {"requests.storage": Fraction(1)})


def limits(gpus, storage):
    return ProfileLimits("jdoe", "personal", "", Limit(gpus, "test"), Limit(storage, "test"))


def test_quota_keys_bound_each_resource_by_the_gpu_sum():
    settings = compile_settings({"gpus": {"legacyResources": [{"name": "nvidia.com/gpu", "weight": 1},
                                                              {"prefix": "nvidia.com/mig-", "weight": 1}],
                                          "deviceClasses": [{"name": "gpu.nvidia.com", "weight": 1},
                                                            {"name": "mig.nvidia.com", "weight": "0.5"},
                                                            {"name": "nic.example.org", "weight": 0}]}})
    hard = quota_keys(limits(Fraction(3), Fraction(30 * 2**30)), settings)
    assert hard == {"gpu.nvidia.com.deviceclass.resource.k8s.io/devices": 3,
                    "mig.nvidia.com.deviceclass.resource.k8s.io/devices": 6,  # half a GPU each
                    "requests.nvidia.com/gpu": 3,
                    "requests.storage": 30 * 2**30}
    assert quota_keys(limits(None, None), settings) == {}
    rq = quota_object("jdoe", "quartermaster-profile-quota", hard)
    assert_valid_k8s(rq)
    assert rq["spec"]["hard"]["requests.storage"] == "30Gi"
