"""Race freedom without the server: reservations, rollbacks, timeouts, per-profile serialization."""

import asyncio

from webhook.model.policy import EvalContext
from webhook.state.ledger import ReservationLedgers
from tests.kinds import REQUIRE_TEAM
from tests.platform.quota.builders import build, compiled, lagging_state, pod, policy_text, request, seeded_state
from tests.state.test_ledger import FakeClock


def context(state, namespace="jdoe", dry_run=False):
    return EvalContext(state=state, namespace=state.get("Namespace", "", namespace), dry_run=dry_run)


async def check(policy, state, obj, **kw):
    req = request(obj, **{k: v for k, v in kw.items() if k == "dry_run"})
    return await policy.validate(req, req.object, context(state, obj["metadata"]["namespace"], kw.get("dry_run", False)))


def blocked(outcome) -> bool:
    return any(r.blocks for r in outcome.results)


async def test_an_admitted_pod_is_held_until_the_state_shows_it():
    policy, state = compiled(), seeded_state()
    first = await check(policy, state, pod("a", gpus=1))
    assert not blocked(first) and len(first.rollbacks) == 1
    assert state.get("Pod", "jdoe", "a") is None  # not recorded yet: other policies may still be running
    second = await check(policy, state, pod("b", gpus=1))
    assert blocked(second)
    assert "(Pod a (being admitted): 1)" in second.results[0].message
    state.record_admitted({**pod("a", gpus=1)}, "CREATE")  # the API server persisted it
    assert policy.ledger.pending("jdoe", state) == ()
    assert blocked(await check(policy, state, pod("b", gpus=1)))  # now counted from the state


async def test_a_pod_the_state_shows_before_its_listener_reports_it_is_still_counted():
    """Live mode's informer shows the admitted pod in its cache a moment before the usage index hears of it: the
    reservation must not be dropped on the cache's word while the count does not include the pod yet."""
    policy, state = compiled(), lagging_state()
    assert not blocked(await check(policy, state, pod("a", gpus=1, uid="uid-a")))
    state.late = True
    state.record_admitted(pod("a", gpus=1, uid="uid-a"), "CREATE")  # in the cache; the listener not called yet
    second = await check(policy, state, pod("b", gpus=1, uid="uid-b"))
    assert blocked(second), second.results[0].message
    state.flush()
    assert policy.ledger.pending("jdoe", state) == ()
    assert blocked(await check(policy, state, pod("c", gpus=1, uid="uid-c")))  # now counted from the state


async def test_a_rollback_releases_the_reservation():
    policy, state = compiled(), seeded_state()
    first = await check(policy, state, pod("a", gpus=1))
    first.rollbacks[0]()
    assert not blocked(await check(policy, state, pod("b", gpus=1)))


async def test_a_reservation_that_never_appears_expires():
    policy, state = compiled(reservationSeconds=5), seeded_state()
    clock = FakeClock()
    policy.ledger.clock = clock
    await check(policy, state, pod("a", gpus=1))
    assert blocked(await check(policy, state, pod("b", gpus=1)))
    clock.now += 5
    assert not blocked(await check(policy, state, pod("b", gpus=1)))


async def test_dry_run_reserves_nothing():
    policy, state = compiled(), seeded_state()
    outcome = await check(policy, state, pod("a", gpus=1), dry_run=True)
    assert not blocked(outcome) and outcome.rollbacks == ()
    assert policy.ledger.count() == 0


async def test_a_reload_keeps_the_reservations():
    state, ledgers = seeded_state(), ReservationLedgers()  # one per process, built by the composition root
    await check(compiled(ledgers), state, pod("a", gpus=1))
    reloaded = compiled(ledgers, reservationSeconds=10)  # a new policy object, as after a policy file change
    assert blocked(await check(reloaded, state, pod("b", gpus=1)))


async def test_when_another_policy_denies_the_engine_rolls_the_reservation_back(tmp_path):
    qm = build(tmp_path, policy_text(), REQUIRE_TEAM)
    denied = await qm.engine.validate(request(pod("a", gpus=1)))
    assert not denied.allowed and "add the label team" in denied.message
    assert qm.ledgers.for_policy("profile-quota").count() == 0
    assert (await qm.engine.validate(request(pod("b", gpus=1, labels={"team": "x"})))).allowed


async def test_profiles_do_not_wait_for_each_other():
    policy, state = compiled(), seeded_state()
    ledger = policy.ledger
    async with ledger.lock("jdoe"):  # a decision for jdoe is in progress
        waiting = asyncio.create_task(check(policy, state, pod("a", gpus=1)))
        other = await asyncio.wait_for(check(policy, state, pod("x", "alice", gpus=1)), 10)
        assert not blocked(other)
        assert not waiting.done()  # jdoe's request waits for jdoe's lock, alice's did not
    assert not blocked(await waiting)


async def test_requests_during_the_first_count_wait_for_it_and_see_its_reservation():
    """The first request of a profile counts it in a worker thread, holding the profile's lock; requests that
    arrive meanwhile wait for the lock, then decide one after another on the counted totals, each seeing the
    reservations of those before it."""
    policy, state = compiled(), seeded_state()
    outcomes = await asyncio.gather(*(check(policy, state, pod(f"nb-{i}", gpus=1)) for i in range(4)))
    assert [blocked(o) for o in outcomes] == [False, True, True, True]  # a personal profile: one GPU
    assert policy.ledger.count("jdoe") == 1
    later = await check(policy, state, pod("nb-9", gpus=1))  # counted already: decided on the kept totals
    assert blocked(later) and policy.ledger.count("jdoe") == 1


async def test_a_counted_profile_still_waits_while_its_lock_is_held():
    """Totals counted already do not let a decision skip the lock: while a first count or a recount is inside the
    profile's critical section, a decision for that profile waits."""
    policy, state = compiled(), seeded_state()
    assert not blocked(await check(policy, state, pod("no-gpu", gpus=0)))  # the profile is counted now
    async with policy.ledger.lock("jdoe"):
        waiting = asyncio.create_task(check(policy, state, pod("a", gpus=1)))
        for _ in range(5):
            await asyncio.sleep(0)
        assert not waiting.done()
    assert not blocked(await waiting)
