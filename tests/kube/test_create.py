"""Admission-time creates through the API: already-exists is success, conflicts are retried,
a hung API server is a clear error within the deadline, and a refusal is not retried."""

import asyncio

import pytest

from tests.kube.conftest import eventually
from tests.kube.objects import claim_template, namespace
from tests.support import assert_valid_k8s
from webhook.kube.state import ApiRefused
from webhook.model.cluster import StateUnavailable


@pytest.fixture
def synced(apiserver, live_state):
    apiserver.put(namespace("jdoe"))
    state = live_state()
    state.start()
    eventually(lambda: state.synced)
    return state


async def test_create_goes_through_the_api(apiserver, synced):
    wanted = claim_template("quartermaster-gpu-abc")
    assert_valid_k8s(wanted)
    result = await synced.create(wanted, timeout=3.0)
    stored = apiserver.get("resource.k8s.io/v1", "ResourceClaimTemplate", "jdoe", "quartermaster-gpu-abc")
    assert result.created and stored is not None
    assert result.object["metadata"]["uid"] == stored["metadata"]["uid"]
    assert stored["spec"] == wanted["spec"]  # nothing lost on the way (no typed model in between)
    # readable at once (a hint in the cache), then confirmed by the watch
    assert synced.get("ResourceClaimTemplate", "jdoe", "quartermaster-gpu-abc") is not None


async def test_already_exists_is_success_with_the_existing_object(apiserver, synced):
    existing = apiserver.put(claim_template("quartermaster-gpu-abc"))
    result = await synced.create(claim_template("quartermaster-gpu-abc"), timeout=3.0)
    assert not result.created
    assert result.object["metadata"]["uid"] == existing["metadata"]["uid"]
    assert len(apiserver.seen("POST", "resourceclaimtemplates")) == 1


async def test_conflicts_and_overload_are_retried(apiserver, synced):
    apiserver.fail_next("POST", "resourceclaimtemplates", 409, "Conflict", count=2)
    apiserver.fail_next("POST", "resourceclaimtemplates", 503, "ServiceUnavailable", count=1)
    result = await synced.create(claim_template("retried"), timeout=5.0)
    assert result.created
    assert len(apiserver.seen("POST", "resourceclaimtemplates")) == 4
    assert apiserver.get("resource.k8s.io/v1", "ResourceClaimTemplate", "jdoe", "retried") is not None


async def test_a_refusal_is_not_retried(apiserver, synced):
    apiserver.fail_next("POST", "resourceclaimtemplates", 403, "Forbidden", count=5)
    with pytest.raises(ApiRefused, match="403 Forbidden"):
        await synced.create(claim_template("forbidden"), timeout=3.0)
    assert len(apiserver.seen("POST", "resourceclaimtemplates")) == 1


async def test_a_hung_api_server_is_a_clear_error_within_the_deadline(apiserver, synced):
    apiserver.hang = lambda method, plural, query: method == "POST"
    # the bound on wait_for is the test: create must give up by itself at its own deadline
    with pytest.raises(StateUnavailable, match=r"the Kubernetes API did not answer within 0\.5s"):
        await asyncio.wait_for(synced.create(claim_template("slow"), timeout=0.5), timeout=3.0)


async def test_conflicts_that_last_past_the_deadline_say_so(apiserver, synced):
    apiserver.fail_next("POST", "resourceclaimtemplates", 409, "Conflict", count=1000)
    with pytest.raises(StateUnavailable, match="last answer: 409 Conflict"):
        await asyncio.wait_for(synced.create(claim_template("contended"), timeout=0.4), timeout=3.0)
