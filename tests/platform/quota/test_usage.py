"""What each object of a profile is charged: terminal pods, shared and generated claims, volumes."""

from webhook.platform.quota.objects import ProfileObjects
from webhook.platform.quota.usage import measure
from webhook.state.memory import InMemoryClusterState
from tests.platform.quota.builders import claim, compiled, device_request, pod, pvc, template
from tests.support import assert_valid_k8s

RULES = compiled().settings.rules


def usage(*objects, rules=RULES):
    for obj in objects:
        assert_valid_k8s(obj)
    view = ProfileObjects.read(InMemoryClusterState(list(objects)), "jdoe")
    return measure(view, rules)


def test_terminal_pods_free_their_gpus():
    result = usage(pod("running", gpus=1), pod("done", gpus=1, phase="Succeeded"), pod("crashed", gpus=2, phase="Failed"),
                   pod("pending", gpus=1, phase="Pending"))
    assert result.gpus == 2
    assert result.charge("Pod", "done").gpus == 0


def test_a_shared_claim_counts_once_however_many_pods_use_it():
    result = usage(claim("shared", "jdoe", device_request(2)),
                   pod("a", claims={"gpu": "shared"}), pod("b", claims={"gpu": "shared"}))
    assert result.gpus == 2
    assert result.charge("ResourceClaim", "shared").gpus == 2


def test_a_pod_is_charged_its_template_until_its_claim_is_generated():
    assert usage(template("two", "jdoe", device_request(2)), pod("p", templates={"gpu": "two"}, uid="u-p")).gpus == 2
    p = pod("p", templates={"gpu": "two"}, uid="u-p")
    generated = claim("p-gpu-x7k2q", "jdoe", device_request(2), owner_pod=p, pod_claim="gpu")
    result = usage(template("two", "jdoe", device_request(2)), p, generated)
    assert result.gpus == 2  # once, as the claim
    assert result.charge("Pod", "p").gpus == 0 and result.charge("ResourceClaim", "p-gpu-x7k2q").gpus == 2


def test_the_pod_status_also_names_its_generated_claim():
    p = pod("p", templates={"gpu": "two"})
    p["status"] = {"phase": "Running", "resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "p-gpu-abc"}]}
    result = usage(template("two", "jdoe", device_request(2)), p, claim("p-gpu-abc", "jdoe", device_request(2)))
    assert result.gpus == 2


def test_the_claim_of_a_terminal_pod_is_free():
    p = pod("p", templates={"gpu": "two"}, uid="u-p", phase="Succeeded")
    generated = claim("p-gpu-1", "jdoe", device_request(2), owner_pod=p, pod_claim="gpu")
    assert usage(template("two", "jdoe", device_request(2)), p, generated).gpus == 0


def test_a_claim_owned_by_a_pod_that_is_not_there_still_counts():
    ghost = pod("ghost", uid="u-ghost")
    assert usage(claim("forged", "jdoe", device_request(4), owner_pod=ghost, pod_claim="gpu")).gpus == 4


def test_a_missing_template_counts_nothing_with_a_note():
    result = usage(pod("p", gpus=1, templates={"gpu": "nowhere"}))
    assert result.gpus == 1
    assert "nowhere not found" in result.charge("Pod", "p").notes[0]


def test_pvc_storage_counts_the_request_or_what_was_allocated():
    result = usage(pvc("a", size="10Gi"), pvc("b", size="5Gi", allocated="20Gi"))
    assert result.storage == 30 * 2**30


def test_only_listed_storage_classes_count():
    rules = compiled(storage={"storageClassNames": ["block"], "defaultStorageClassName": "block"}).settings.rules
    result = usage(pvc("block", size="10Gi", storage_class="block"), pvc("nfs", size="50Gi", storage_class="nfs"),
                   pvc("default", size="1Gi"), pvc("static", size="7Gi", storage_class=""), rules=rules)
    assert result.storage == 11 * 2**30
    no_default = compiled(storage={"storageClassNames": ["block"]}).settings.rules
    assert usage(pvc("default", size="1Gi"), rules=no_default).storage == 0


def test_ephemeral_volumes_count_until_their_pvc_exists():
    p = pod("nb", ephemeral={"scratch": "5Gi", "cache": "1Gi"}, uid="u-nb")
    assert usage(p).storage == 6 * 2**30
    created = pvc("nb-scratch", size="5Gi", owner_pod=p)
    result = usage(p, created)
    assert result.storage == 6 * 2**30  # 5Gi as the PVC, 1Gi still as the pod's template
    assert result.charge("Pod", "nb").storage == 2**30
    not_its_own = pvc("nb-cache", size="3Gi")  # same name, not owned: Kubernetes would not use it
    assert usage(p, not_its_own).storage == 9 * 2**30


def test_ephemeral_volumes_can_be_left_out():
    rules = compiled(storage={"ephemeralVolumes": False}).settings.rules
    p = pod("nb", ephemeral={"scratch": "5Gi"}, uid="u")
    assert usage(p, pvc("nb-scratch", size="5Gi", owner_pod=p), pvc("data", size="1Gi"), rules=rules).storage == 2**30
