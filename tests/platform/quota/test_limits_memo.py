"""LimitsMemo answers as resolve_limits whatever the state did to the Namespace and the Profile since."""

from __future__ import annotations

import random

from webhook.platform.quota.limits import LimitsMemo, resolve_limits
from webhook.state.memory import InMemoryClusterState
from tests.platform.quota.builders import compiled, kf_profile, namespace


def test_the_memo_follows_every_namespace_and_profile_change():
    rng = random.Random(4)
    settings = compiled(overrides={"beta": {"gpus": 3}}).settings
    state = InMemoryClusterState([namespace(n) for n in ("alpha", "beta")])
    memo = LimitsMemo(settings)
    for step in range(500):
        name = rng.choice(["alpha", "beta", "gamma"])
        roll = rng.random()
        if roll < 0.3:
            state.record_admitted(namespace(name, rng.choice([None, "team", "personal", "unknown"])), "CREATE")
        elif roll < 0.6:
            hard = {k: rng.choice(["2", "5Gi", "nonsense"]) for k in rng.sample(
                ["requests.nvidia.com/gpu", "requests.storage", "limits.cpu"], rng.randint(0, 2))}
            state.record_admitted(kf_profile(name, hard), "CREATE")
        elif roll < 0.7:
            state.record_deleted("Profile", "", name)
        elif roll < 0.75:
            state.record_deleted("Namespace", "", name)
        for ns in ("alpha", "beta", "gamma"):
            obj = state.get("Namespace", "", ns)
            assert memo.resolve(obj, ns, state) == resolve_limits(settings, obj, ns, state), (step, ns)


def test_a_policy_without_profile_overrides_reads_no_profile():
    settings = compiled(profileOverride={"enabled": False}).settings
    state = InMemoryClusterState([namespace("alpha"), kf_profile("alpha", {"requests.nvidia.com/gpu": "4"})])
    memo = LimitsMemo(settings)
    obj = state.get("Namespace", "", "alpha")
    assert memo.resolve(obj, "alpha", state).gpus.amount == 1
    assert memo.resolve(obj, "alpha", state) is memo.resolve(obj, "alpha", state)
