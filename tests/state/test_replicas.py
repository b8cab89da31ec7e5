"""Standalone's SharedReservations: one process is the whole truth, so the first ruling stands and nothing is asked."""

import time
from fractions import Fraction

from webhook.state.ledger import ReservationLedgers
from webhook.state.replicas import Hold, HoldScope, ProcessReservations, Ruling, SharedReservations


async def test_one_process_keeps_the_first_ruling_and_never_judges_again():
    async def judge(holds):
        raise AssertionError("nothing to judge: no other replica")

    first = Ruling("admitted", Hold("uid-1", "Pod", "nb", Fraction(1), Fraction(0), False))
    scope = HoldScope("profile-quota", "jdoe", frozenset(), 30.0, time.monotonic() + 5)
    shared: SharedReservations = ProcessReservations()
    assert await shared.hold(scope, first, judge) is first
    shared.withdraw(scope, first.hold)  # nothing shared, nothing to withdraw


def test_the_ledgers_share_one_process_until_live_mode_says_otherwise():
    ledgers = ReservationLedgers()
    assert isinstance(ledgers.shared, ProcessReservations)
