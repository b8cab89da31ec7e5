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
