"""The ledger's optimistic concurrency against the test API server: a replica whose write lost the race (409 Conflict on
the resourceVersion it read) reads again and decides again with the winner's hold; it never overwrites it."""

import time
from dataclasses import replace
from fractions import Fraction

from tests.kube.conftest import FAST
from webhook.kube.ledger_page import LedgerPage, ledger_name
from webhook.kube.reservations import ApiReservations
from webhook.state.replicas import Hold, HoldScope, Ruling

NAME = ledger_name("quartermaster-quota-ledger", "jdoe")


class NoObjects:
    """A state whose informers show nothing yet, and report no events."""

    def get(self, kind, namespace, name):
        return None

    def add_listener(self, hook):
        pass


def gpu(uid, name):
    return Hold(uid, "Pod", name, Fraction(1), Fraction(0), False)


def scope():
    return HoldScope("profile-quota", "jdoe", frozenset(), 30.0, time.monotonic() + 5)


async def test_a_write_that_lost_the_race_reads_again_and_counts_the_winner(apiserver, kube_api, calls):
    ledger = ApiReservations(kube_api, calls, NoObjects(), replace(FAST, namespace="quartermaster"))
    winner = gpu("uid-winner", "nb-winner")
    read = kube_api.get

    def get_then_lose(*args, **kwargs):
        found = read(*args, **kwargs)
        if ledger.conflicts == 0:  # another replica writes between this replica's read and its write
            page = LedgerPage.of("quartermaster", NAME, found)
            apiserver.put(page.written("profile-quota", replace(winner, expires=time.time() + 30), time.time(), "jdoe"))
        return found

    kube_api.get = get_then_lose
    judged = []

    async def judge(holds):
        judged.append(holds)
        return Ruling("refused", None)  # the last GPU is the winner's

    ruling = await ledger.hold(scope(), Ruling("admitted", gpu("uid-loser", "nb-loser")), judge)
    assert ruling.decision == "refused" and ledger.conflicts == 1
    assert [[h.uid for h in holds] for holds in judged] == [["uid-winner"]]
    stored = apiserver.get("v1", "ConfigMap", "quartermaster", NAME)
    assert list(stored["data"]) == ["profile-quota.uid-winner"]  # the winner's hold, not overwritten


async def test_two_first_writes_create_one_ledger(apiserver, kube_api, calls):
    """No ledger yet: both replicas POST; the second gets AlreadyExists, reads, and adds its hold beside the first."""
    ledger = ApiReservations(kube_api, calls, NoObjects(), replace(FAST, namespace="quartermaster"))
    read = kube_api.get

    def get_then_lose(*args, **kwargs):
        found = read(*args, **kwargs)
        if ledger.conflicts == 0:
            page = LedgerPage.of("quartermaster", NAME, None)
            apiserver.put(page.written("profile-quota", replace(gpu("uid-a", "nb-a"), expires=time.time() + 30),
                                       time.time(), "jdoe"))
        return found

    kube_api.get = get_then_lose

    async def judge(holds):
        return Ruling("fits beside them", gpu("uid-b", "nb-b"))  # a profile with room for both

    ruling = await ledger.hold(scope(), Ruling("admitted", gpu("uid-b", "nb-b")), judge)
    assert ruling.decision == "fits beside them" and ledger.conflicts == 1
    stored = apiserver.get("v1", "ConfigMap", "quartermaster", NAME)
    assert sorted(stored["data"]) == ["profile-quota.uid-a", "profile-quota.uid-b"]


async def test_another_replicas_hold_counts_until_this_replicas_count_includes_its_pod(apiserver, kube_api, calls):
    """Replica B's informer shows replica A's pod in its cache before B's usage index hears of it: A's Hold must
    still count then, or B admits a second GPU in a one-GPU profile."""
    from tests.platform.quota.builders import compiled, lagging_state, pod, request
    from webhook.model.policy import EvalContext
    from webhook.state.ledger import ReservationLedgers

    def replica(state):
        ledgers = ReservationLedgers()
        ledgers.share(ApiReservations(kube_api, calls, state, replace(FAST, namespace="quartermaster")))
        return compiled(ledgers)

    async def admitted(policy, state, obj):
        req = request(obj)
        ctx = EvalContext(state=state, namespace=state.get("Namespace", "", "jdoe"), dry_run=False,
                          deadline=time.monotonic() + 5)
        outcome = await policy.validate(req, req.object, ctx)
        return not any(r.blocks for r in outcome.results), outcome

    state_a, state_b = lagging_state(), lagging_state()
    a, b = replica(state_a), replica(state_b)
    assert (await admitted(b, state_b, pod("cpu-only", uid="uid-cpu")))[0]  # B has counted the profile once
    assert (await admitted(a, state_a, pod("first", gpus=1, uid="uid-first")))[0]
    state_b.late = True
    state_b.record_admitted(pod("first", gpus=1, uid="uid-first"), "CREATE")  # in B's cache, B's listener not called
    fits, outcome = await admitted(b, state_b, pod("second", gpus=1, uid="uid-second"))
    assert not fits, outcome.results[0].message
    state_b.flush()
    fits, outcome = await admitted(b, state_b, pod("third", gpus=1, uid="uid-third"))
    assert not fits and "first" in outcome.results[0].message
