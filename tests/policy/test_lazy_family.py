"""Families imported on first use (LazyFamily): same kinds, same owners, same errors as eager ones."""

from __future__ import annotations

import threading

import pytest

from webhook.app import build_registry
from webhook.families.cel.family import CelFamily
from webhook.families.kyverno.family import KyvernoFamily
from webhook.platform import platform_family
from webhook.policy.family import FamilyRegistry, LazyFamily, PolicyKind
from webhook.state.ledger import ReservationLedgers


def _eager() -> FamilyRegistry:
    return FamilyRegistry([platform_family(ReservationLedgers()), CelFamily(), KyvernoFamily()])


def test_lazy_registry_knows_what_the_eager_one_knows():
    eager, lazy = _eager(), build_registry()
    assert lazy.known() == eager.known()
    assert [k.key for k in lazy.kinds()] == [k.key for k in eager.kinds()]
    for kind in eager.kinds():
        assert lazy.owner(*kind.key).name == eager.owner(*kind.key).name  # type: ignore[union-attr]


@pytest.mark.parametrize("api_version, kind, family", [
    ("kyverno.io/v1", "ClusterPolicy", "kyverno"), ("policies.kyverno.io/v1", "ValidatingPolicy", "cel"),
    ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy", "cel"),
    ("quartermaster.dev/v1alpha1", "ProfileQuota", "platform"), ("kyverno.io/v1", "NoSuchKind", None),
    ("example.com/v1", "ClusterPolicy", None), ("v1", "Pod", None)])
def test_owner_resolves_on_first_use(api_version, kind, family):
    registry = build_registry()
    owner = registry.owner(api_version, kind)
    assert (owner.name if owner else None) == family


def test_only_the_family_asked_for_is_imported():
    loaded: list[str] = []
    registry = FamilyRegistry([LazyFamily("cel", ("policies.kyverno.io", "admissionregistration.k8s.io"),
                                          lambda: loaded.append("cel") or CelFamily()),
                               LazyFamily("kyverno", ("kyverno.io",), lambda: loaded.append("kyverno") or KyvernoFamily())])
    registry.owner("kyverno.io/v1", "ClusterPolicy")
    registry.owner("kyverno.io/v1", "Policy")
    assert loaded == ["kyverno"]
    registry.known()
    assert loaded == ["kyverno", "cel"]


def test_a_family_outside_its_declared_groups_is_refused():
    registry = FamilyRegistry([LazyFamily("cel", ("policies.kyverno.io",), CelFamily)])
    with pytest.raises(ValueError, match="admissionregistration.k8s.io"):
        registry.owner("policies.kyverno.io/v1", "ValidatingPolicy")


def test_a_kind_claimed_twice_is_still_refused():
    other = type("Other", (), {"name": "other", "kinds": (PolicyKind("kyverno.io/v1", "ClusterPolicy", None),)})()
    registry = FamilyRegistry([other, LazyFamily("kyverno", ("kyverno.io",), KyvernoFamily)])
    with pytest.raises(ValueError, match="claimed by families other and kyverno"):
        registry.known()


def test_concurrent_first_use_resolves_once():
    loaded: list[str] = []
    registry = FamilyRegistry([LazyFamily("kyverno", ("kyverno.io",), lambda: loaded.append("k") or KyvernoFamily())])
    threads = [threading.Thread(target=registry.owner, args=("kyverno.io/v1", "ClusterPolicy")) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert loaded == ["k"] and registry.owner("kyverno.io/v1", "ClusterPolicy") is not None
