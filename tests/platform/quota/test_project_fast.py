"""ProfileUsage.project_pod (a pod created with nothing in flight, decided without laying it over) decides as
the general path does (the stored pod taken away, the request laid over, both undone): the same decision,
message for message, and the profile left as the general path leaves it (totals, charges, readers, the kept
charge), on random profile histories and on odd pod shapes; the same exception where the general path raises.
Both run side by side on two copies of the same history."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from webhook.platform.quota.check import Subject
from webhook.platform.quota.index import UsageIndex
from webhook.platform.quota.totals import ProfileUsage
from tests.platform.quota.builders import claim, compiled, device_request, pod, seeded_state, template
from tests.platform.quota.test_totals import random_object

POLICY = compiled()
RULES = POLICY.settings.rules


def _general(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ProfileUsage, "project_pod", lambda self, name, obj: None)


def _answer(policy: Any, state: Any, profile: ProfileUsage, obj: Any, name: str, class_name: str) -> str:
    limits = policy.limits.resolve(state.get("Namespace", "", class_name), class_name, state)
    try:
        decision = policy._decide(profile, (), Subject("Pod", name, "CREATE"), obj, (None,), limits)
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return repr((decision.outcomes, decision.adds, decision.notes))


def _spy(project: Any, taken: list[bool]) -> Any:
    def spy(self: ProfileUsage, name: str, obj: Any) -> Any:
        answer = project(self, name, obj)
        taken.append(answer is not None)
        return answer
    return spy


def _stable(found: Any) -> Any:
    """What a kept charge found, without what each state made up when it stored the object (uid, version, time)."""
    if isinstance(found, tuple):
        return tuple(_stable(f) for f in found)
    if isinstance(found, dict):
        meta = {k: v for k, v in found.get("metadata", {}).items() if k not in ("uid", "resourceVersion", "creationTimestamp")}
        return {**found, "metadata": meta}
    return found


def _state_of(profile: ProfileUsage) -> tuple:
    spare = profile._spare
    kept = None if spare is None else (spare.key, spare.charge, spare.charge.notes, spare.reads, spare.name, spare.uid,
                                       spare.uid_blind, tuple((read, _stable(found)) for read, found in spare.seen))
    return (profile.gpus, profile.storage, {k: (c, c.notes) for k, c in profile.charges.items()},
            dict(profile.unbounded), profile._reads, profile._readers, kept)


def _object(rng: random.Random, generated: bool = True) -> dict[str, Any]:
    """random_object, or (generated False) one that is not a claim generated for a pod: such a claim reads its
    pod and scans the pods, so while one exists the shortcut stands aside."""
    while True:
        if rng.random() < 0.05:  # every matching device: the pods that use it are charged without bound
            return template(rng.choice(["t1", "t2"]), "jdoe", device_request(None, mode="All"))
        obj = random_object(rng)
        if generated or not (obj["kind"] == "ResourceClaim" and obj["metadata"].get("ownerReferences")):
            return obj


def _request(rng: random.Random) -> dict[str, Any]:
    """A pod as a CREATE brings it (no uid), often of a name the profile holds already."""
    while True:
        obj = random_object(rng)
        if obj["kind"] == "Pod":
            obj["metadata"].pop("uid", None)
            return obj


def _write(state: Any, obj: dict[str, Any], rng: random.Random) -> None:
    if rng.random() < 0.2:
        state.record_deleted(obj["kind"], "jdoe", obj["metadata"]["name"])
    else:
        state.record_admitted(obj, "CREATE")


def _twins(seed: int, count: int, generated: bool = True) -> tuple[Any, Any, Any, Any]:
    rng = random.Random(seed)
    objects = [_object(rng, generated) for _ in range(count)]
    fast, general = seeded_state(*copy.deepcopy(objects)), seeded_state(*copy.deepcopy(objects))
    policies = compiled(), compiled()  # one each: the memos and indexes stay apart
    return fast, general, policies[0], policies[1]


@pytest.mark.parametrize("seed", range(12))
def test_the_shortcut_decides_and_leaves_the_profile_as_laying_over_does(seed, monkeypatch):
    generated = seed % 2 == 1  # claims generated for pods now and then, or never
    fast_state, general_state, fast_policy, general_policy = _twins(seed, 25, generated)
    fast_index, general_index = fast_policy.usage, general_policy.usage
    rng = random.Random(1000 + seed)
    taken: list[bool] = []
    project = ProfileUsage.project_pod
    for step in range(150):
        obj = _request(rng)
        general_obj = copy.deepcopy(obj)
        name = obj["metadata"]["name"]
        fast_profile = fast_index.profile(fast_state, "jdoe")
        with monkeypatch.context() as m:
            m.setattr(ProfileUsage, "project_pod", _spy(project, taken))
            fast = _answer(fast_policy, fast_state, fast_profile, obj, name, "jdoe")
        with monkeypatch.context() as m:
            _general(m)
            general_profile = general_index.profile(general_state, "jdoe")
            general = _answer(general_policy, general_state, general_profile, general_obj, name, "jdoe")
        assert fast == general, step
        assert _state_of(fast_profile) == _state_of(general_profile), step
        # the engine records the admitted pod (the kept charge is then used, or not, the same way), and the
        # profile changes in between
        for state, admitted in ((fast_state, obj), (general_state, general_obj)):
            write = random.Random(step)
            stored = dict(admitted)
            stored["metadata"] = dict(admitted["metadata"])
            if write.random() < 0.5:
                stored["metadata"]["uid"] = f"u-{name}"
            if write.random() < 0.7:
                state.record_admitted(stored, "CREATE")
            for _ in range(write.randrange(3)):
                _write(state, _object(write, generated), write)
    assert sum(taken) >= (3 if generated else 100)  # claims generated for pods keep the shortcut aside, while they exist


@pytest.mark.parametrize("seed", range(4))
def test_the_shortcut_stands_aside_when_another_charge_reads_the_pod(seed):
    """A generated claim reads its owner pod (and claims shared by pods scan the pods): laid over, as before."""
    owner = pod("nb", uid="u-nb", templates={"gpu": "t1"})
    state = seeded_state(template("t1", "jdoe", device_request(1)), owner,
                         claim("nb-gpu-x1", "jdoe", device_request(2), owner_pod=owner, pod_claim="gpu"))
    profile = UsageIndex(RULES).profile(state, "jdoe")
    assert profile.project_pod("nb", pod("nb", templates={"gpu": "t1"})) is None
    assert profile.project_pod("other", pod("other", gpus=1)) is None  # the generated claim scanned the pods


ODD_SPECS = st.one_of(
    st.none(), st.just("x"), st.just([]), st.integers(),
    st.fixed_dictionaries({}, optional={
        "containers": st.one_of(st.none(), st.just("x"), st.lists(st.one_of(
            st.none(), st.just(3), st.fixed_dictionaries({"name": st.just("c")}, optional={"resources": st.one_of(
                st.none(), st.just([]), st.fixed_dictionaries({}, optional={"limits": st.one_of(st.none(), st.just("x"), st.dictionaries(
                    st.sampled_from(["cpu", "nvidia.com/gpu", "nvidia.com/mig-1g.5gb", "amd.com/gpu", "memory"]),
                    st.one_of(st.sampled_from(["1", "2", "500m", "1e3", "-1", "x", ""]), st.integers(-2, 3), st.none()),
                    max_size=3))})), "restartPolicy": st.sampled_from(["Always", "Never"])})), max_size=3)),
        "resourceClaims": st.one_of(st.none(), st.just("x"), st.lists(st.one_of(
            st.none(), st.just("x"), st.fixed_dictionaries({"name": st.sampled_from(["gpu", "x", ""])}, optional={
                "resourceClaimTemplateName": st.sampled_from(["t1", "t2", "missing", "", None]),
                "resourceClaimName": st.sampled_from(["shared", "solo", "missing"])})), max_size=3)),
        "volumes": st.one_of(st.none(), st.just("x"), st.lists(st.one_of(
            st.none(), st.just(5), st.fixed_dictionaries({"name": st.sampled_from(["scratch", "data"])}, optional={
                "ephemeral": st.one_of(st.none(), st.just("odd"), st.just({}), st.just({"volumeClaimTemplate": "x"}),
                                       st.just({"volumeClaimTemplate": {"spec": {"resources": {"requests": {
                                           "storage": "2Gi"}}}}}))})), max_size=3)),
    }))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spec=ODD_SPECS, status=st.one_of(st.none(), st.just("x"), st.fixed_dictionaries({}, optional={
    "phase": st.sampled_from(["Running", "Succeeded", "Failed", None]),
    "resourceClaimStatuses": st.one_of(st.just("x"), st.lists(st.fixed_dictionaries(
        {"name": st.sampled_from(["gpu", "x"]), "resourceClaimName": st.sampled_from(["shared", "p1-gpu-x1"])}), max_size=2))})),
    name=st.sampled_from(["p0", "p1", "p5", "new"]), seed=st.integers(0, 5))
def test_odd_pods_decide_as_laid_over(spec, status, name, seed, monkeypatch):
    fast_state, general_state, fast_policy, general_policy = _twins(seed, 12)
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "jdoe"}, "spec": spec}
    if status is not None:
        obj["status"] = status
    fast_profile = fast_policy.usage.profile(fast_state, "jdoe")
    fast = _answer(fast_policy, fast_state, fast_profile, obj, name, "jdoe")
    with monkeypatch.context() as m:
        _general(m)
        general_profile = general_policy.usage.profile(general_state, "jdoe")
        general = _answer(general_policy, general_state, general_profile, copy.deepcopy(obj), name, "jdoe")
    assert fast == general
    assert _state_of(fast_profile) == _state_of(general_profile)


def test_the_random_requests_reach_admissions_and_denials_of_both_rules():
    """The histories above reach both verdicts of both rules, and denial messages that list the holders."""
    answers = []
    for seed in range(12):
        state, _, policy, _ = _twins(seed, 8, generated=False)
        profile = policy.usage.profile(state, "jdoe")
        rng = random.Random(seed)
        answers += [_answer(policy, state, profile, obj, obj["metadata"]["name"], "jdoe")
                    for obj in (_request(rng) for _ in range(60))]
    for phrase in ("GPU quota exceeded", "Storage quota exceeded", "fits: profile", "adds no GPUs", "adds no storage"):
        assert any(phrase in a for a in answers), phrase
