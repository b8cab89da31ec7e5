"""Quantities no quota can count: refused in the request (naming the field), the largest quantity in the state."""

from tests.platform.quota.builders import build, pod, pvc, request, seeded_state
from webhook.platform.quota.quantities import out_of_range


def test_the_first_out_of_range_field_is_named():
    p = pod("p")
    p["spec"]["initContainers"] = [{"name": "init", "image": "x", "resources": {"requests": {"memory": "1e40"}}}]
    assert "spec.initContainers[0].resources.requests[memory]" in out_of_range("Pod", p)
    claim = pvc("v", size="99999999999999999999Ei")  # binary SI: capped at 2^63-1 by the API server, in range
    assert out_of_range("PersistentVolumeClaim", claim) is None
    assert "spec.resources.requests[storage]" in out_of_range("PersistentVolumeClaim", pvc("v", size="1e19"))
    assert out_of_range("Pod", pod("fine", gpus=1)) is None


async def test_a_stored_object_with_one_fills_the_quota(tmp_path):
    state = seeded_state(pvc("huge", size="1e30"))
    qm = build(tmp_path, state=state)
    verdict = await qm.engine.validate(request(pvc("small", size="1Gi")))
    assert verdict.allowed is False and "huge" in verdict.message
