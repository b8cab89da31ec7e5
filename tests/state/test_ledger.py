"""The reservation ledger: per-scope locks, reservations released when reflected, rolled back or expired."""

import asyncio

from webhook.model.cluster import ObjectKey
from webhook.state.ledger import ReservationLedger, ReservationLedgers, reflected
from webhook.state.memory import InMemoryClusterState


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def pod(name: str, uid: str | None = None, rv: str | None = None) -> dict:
    meta = {"name": name, "namespace": "jdoe"}
    if uid:
        meta["uid"] = uid
    if rv:
        meta["resourceVersion"] = rv
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"containers": [{"name": "c", "image": "x"}]}}


def test_create_reservation_is_pending_until_the_state_shows_it():
    state, ledger = InMemoryClusterState(), ReservationLedger(FakeClock())
    reservation = ledger.reserve("jdoe", pod("a", uid="u-1"), state, timeout=30)
    assert reservation.key == ObjectKey("Pod", "jdoe", "a")
    assert ledger.pending("jdoe", state) == (reservation,)
    state.record_admitted(pod("a", uid="u-1"), "CREATE")
    assert ledger.pending("jdoe", state) == ()
    assert ledger.count() == 0


def test_an_older_object_with_the_same_name_does_not_release_a_create():
    state, ledger = InMemoryClusterState([pod("a", uid="old")]), ReservationLedger(FakeClock())
    reservation = ledger.reserve("jdoe", pod("a", uid="new"), state, timeout=30)
    assert not reflected(reservation, state)
    state.record_admitted(pod("a", uid="new"), "CREATE")
    assert reflected(reservation, state)


def test_update_reservation_is_released_when_the_resource_version_moves():
    state = InMemoryClusterState([pod("a", uid="u")])
    current = state.get("Pod", "jdoe", "a")
    ledger = ReservationLedger(FakeClock())
    reservation = ledger.reserve("jdoe", pod("a", uid="u"), state, timeout=30, previous=current)
    assert ledger.pending("jdoe", state) == (reservation,)
    state.record_admitted(pod("a", uid="u"), "UPDATE")  # a new resourceVersion
    assert ledger.pending("jdoe", state) == ()


def test_update_reservation_is_released_when_the_object_is_deleted():
    state = InMemoryClusterState([pod("a")])
    ledger = ReservationLedger(FakeClock())
    ledger.reserve("jdoe", pod("a"), state, timeout=30, previous=state.get("Pod", "jdoe", "a"))
    state.record_deleted("Pod", "jdoe", "a")
    assert ledger.pending("jdoe", state) == ()


def test_reservations_expire_after_their_timeout():
    clock = FakeClock()
    state, ledger = InMemoryClusterState(), ReservationLedger(clock)
    first = ledger.reserve("jdoe", pod("a"), state, timeout=30)
    clock.now += 20
    second = ledger.reserve("jdoe", pod("b"), state, timeout=30)
    clock.now += 10  # the first is 30s old now
    assert ledger.pending("jdoe", state) == (second,)
    clock.now += 30
    assert ledger.pending("jdoe", state) == ()
    assert not ledger.release(first)  # releasing an expired reservation is harmless


def test_release_is_idempotent_and_scoped():
    state, ledger = InMemoryClusterState(), ReservationLedger(FakeClock())
    mine = ledger.reserve("jdoe", pod("a"), state, timeout=30)
    other = ledger.reserve("alice", {**pod("a"), "metadata": {"name": "a", "namespace": "alice"}}, state, timeout=30)
    assert ledger.release(mine) and not ledger.release(mine)
    assert ledger.pending("jdoe", state) == () and ledger.pending("alice", state) == (other,)


async def test_one_scope_serializes_and_other_scopes_do_not_wait():
    ledger = ReservationLedger()
    order: list[str] = []
    holding, finish = asyncio.Event(), asyncio.Event()

    async def slow_a() -> None:
        async with ledger.lock("a"):
            order.append("a1 in")
            holding.set()
            await finish.wait()
            order.append("a1 out")

    async def second_a() -> None:
        async with ledger.lock("a"):
            order.append("a2 in")

    async def b() -> None:
        async with ledger.lock("b"):
            order.append("b in")

    first = asyncio.create_task(slow_a())
    await holding.wait()
    waiting = asyncio.create_task(second_a())
    await asyncio.wait_for(b(), 5)  # profile b goes through while profile a is held
    assert order == ["a1 in", "b in"] and not waiting.done()
    finish.set()
    await asyncio.gather(first, waiting)
    assert order == ["a1 in", "b in", "a1 out", "a2 in"]


def test_ledgers_are_one_per_policy_name():
    ledgers, other = ReservationLedgers(), ReservationLedgers()
    assert ledgers.for_policy("q") is ledgers.for_policy("q")
    assert ledgers.for_policy("q") is not ledgers.for_policy("r")
    assert ledgers.for_policy("q") is not other.for_policy("q")


def test_a_deleted_object_releases_its_reservations():
    from webhook.model.cluster import ObjectKey

    state = InMemoryClusterState()
    obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "jdoe"}}
    ledgers = ReservationLedgers()
    ledger = ledgers.for_policy("quota")
    ledger.reserve("jdoe", obj, state, timeout=300)
    state.record_admitted(obj, "CREATE")
    state.record_deleted("Pod", "jdoe", "p")  # created and deleted before anyone asked for the scope again
    assert len(ledger.pending("jdoe", state)) == 1
    assert ledgers.release_deleted(ObjectKey("Pod", "jdoe", "p")) == 1
    assert ledger.pending("jdoe", state) == ()


def test_a_pod_is_held_until_the_state_shows_its_claim_template_too():
    """Watches of pods and claim templates keep no order between them: a pod the state shows before its template
    would be charged nothing once its reservation was released (on the real control plane two replicas then
    admitted two and three of twenty one-GPU pods)."""
    state = InMemoryClusterState()
    ledger = ReservationLedger()
    gpu_pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "train", "namespace": "jdoe", "uid": "u-1"},
               "spec": {"containers": [{"name": "main", "image": "x", "resources": {"claims": [{"name": "gpu"}]}}],
                        "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "quartermaster-gpu-1"}]}}
    ledger.reserve("jdoe", gpu_pod, state, 30.0)
    state.record_admitted(gpu_pod, "CREATE")
    assert len(ledger.pending("jdoe", state)) == 1, "released while the pod's template is not shown"
    state.record_admitted({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                           "metadata": {"name": "quartermaster-gpu-1", "namespace": "jdoe", "uid": "t-1"},
                           "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                               "deviceClassName": "gpu.nvidia.com"}}]}}}}, "CREATE")
    assert ledger.pending("jdoe", state) == ()
