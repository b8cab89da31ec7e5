"""The quota ledger's ConfigMap: entries round-trip exactly, keys stay valid, a write drops only expired entries and
carries the resourceVersion it read; the replicas' Departed set forgets the oldest uids first."""

from fractions import Fraction

from tests.support import assert_valid_k8s
from webhook.kube.ledger_page import DATA_KEY, LedgerPage, decode, encode, entry_key
from webhook.kube.reservations import Departed
from webhook.state.replicas import Hold

NOW = 1_800_000_000.0


def hold(uid, expires=NOW + 30, name="nb-1", gpus=Fraction(1)):
    return Hold(uid, "Pod", name, gpus, Fraction(30 * 2**30), False, "", expires)


def test_an_entry_round_trips_exactly():
    original = hold("0d9f6c1e-2b4a-4c8e-9f1a-3b5c7d9e1f2a", gpus=Fraction(1, 7))
    assert decode(encode(original)) == original


def test_keys_stay_valid_configmap_keys():
    assert entry_key("profile-quota", "0d9f6c1e") == "profile-quota.0d9f6c1e"
    odd = entry_key("profile-quota", "review-../../x y")  # never from the API server; still a valid key
    assert DATA_KEY.fullmatch(odd) and odd.startswith("profile-quota.")
    assert DATA_KEY.fullmatch(entry_key("p" * 253, "uid"))


def test_a_write_drops_expired_entries_keeps_the_rest_and_carries_the_version_read():
    page = LedgerPage.of("quartermaster", "quartermaster-quota-ledger.jdoe", {
        "metadata": {"resourceVersion": "42"},
        "data": {"profile-quota.old": encode(hold("old", expires=NOW - 1)),
                 "profile-quota.live": encode(hold("live")),
                 "team-quota.other": encode(hold("other")),
                 "garbage": "not json"}})
    assert set(page.holds("profile-quota")) == {"profile-quota.old", "profile-quota.live"}
    body = page.written("profile-quota", hold("new", name="nb-2"), NOW, "jdoe")
    assert body["metadata"]["resourceVersion"] == "42"
    assert set(body["data"]) == {"profile-quota.live", "team-quota.other", "profile-quota.new"}
    assert body["metadata"]["labels"]["quartermaster.dev/profile"] == "jdoe"
    assert_valid_k8s(body)
    first = LedgerPage.of("quartermaster", "quartermaster-quota-ledger.jdoe", None).written(
        "profile-quota", hold("new"), NOW, "jdoe")
    assert "resourceVersion" not in first["metadata"]  # created, not replaced


def test_departed_uids_are_bounded_and_forgotten_oldest_first(monkeypatch):
    import webhook.kube.reservations as reservations

    monkeypatch.setattr(reservations, "DEPARTED_LIMIT", 3)
    clock = iter(range(100)).__next__
    departed = Departed(clock=lambda: float(clock()))
    for uid in ("a", "b", "c", "d"):
        departed("Pod", "DELETED", {"metadata": {"uid": uid}})
    departed("Pod", "MODIFIED", {"metadata": {"uid": "e"}})  # not a deletion
    assert "a" not in departed and all(u in departed for u in "bcd") and "e" not in departed
