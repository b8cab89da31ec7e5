"""A claim template another replica created, judged before this replica's informer delivers it.

With two replicas, the one that answers the mutating call creates the pod's claim template; the validating call
may reach the other one first. The real control plane opens that window only by chance of scheduling (the 20-way
test of tests/cluster/test_quota.py meets it now and then); here the template informer is stopped, so its cache
cannot show the template, and everything else is real: the live state, the `kubernetes` client, HTTP."""

from tests.kube.conftest import eventually
from tests.kube.objects import namespace
from tests.platform.quota.builders import compiled, device_request, pod, request, template
from webhook.model.policy import EvalContext

TEMPLATE = "ResourceClaimTemplate"


def lagging_templates(apiserver, live_state):
    apiserver.put(namespace("jdoe"))
    state = live_state()
    state.start()
    eventually(lambda: state.synced, message="the live state never synced")
    state.informers[TEMPLATE].stop(timeout=5)  # from here on, the cache shows no new template
    return state


async def judge(policy, state, obj):
    req = request(obj)
    ctx = EvalContext(state=state, namespace=state.get("Namespace", "", "jdoe"), dry_run=False)
    return await policy.validate(req, req.object, ctx)


def blocked(outcome) -> bool:
    return any(r.blocks for r in outcome.results)


async def test_a_template_the_cache_does_not_show_is_read_through_and_charged(apiserver, live_state):
    state = lagging_templates(apiserver, live_state)
    apiserver.put(template("two-gpus", "jdoe", device_request(2)))  # created by "the other replica"
    assert state.get(TEMPLATE, "jdoe", "two-gpus") is None
    policy = compiled()  # one GPU per personal profile
    outcome = await judge(policy, state, pod("a", templates={"gpu": "two-gpus"}))
    assert blocked(outcome), [r.message for r in outcome.results]
    assert "2" in outcome.results[0].message
    # kept as a hint (the index heard of it): the next decision needs no second read
    assert state.get(TEMPLATE, "jdoe", "two-gpus") is not None
    reads = len(apiserver.seen("GET", "resourceclaimtemplates", watch=False))
    assert blocked(await judge(policy, state, pod("b", templates={"gpu": "two-gpus"})))
    assert len(apiserver.seen("GET", "resourceclaimtemplates", watch=False)) == reads


async def test_one_gpu_from_another_replicas_template_fills_the_profile(apiserver, live_state):
    state = lagging_templates(apiserver, live_state)
    apiserver.put(template("one-gpu", "jdoe", device_request(1)))
    policy = compiled()
    first = await judge(policy, state, pod("a", templates={"gpu": "one-gpu"}, uid="uid-a"))
    assert not blocked(first), [r.message for r in first.results]
    second = await judge(policy, state, pod("b", templates={"gpu": "one-gpu"}, uid="uid-b"))
    assert blocked(second), "the first pod's template was charged nothing: the second GPU was admitted"


async def test_a_template_that_does_not_exist_anywhere_still_counts_nothing(apiserver, live_state):
    state = lagging_templates(apiserver, live_state)
    outcome = await judge(compiled(), state, pod("a", templates={"gpu": "nowhere"}))
    assert not blocked(outcome)
    assert any("nowhere not found" in note for note in outcome.warnings)
    assert state.get(TEMPLATE, "jdoe", "nowhere") is None
