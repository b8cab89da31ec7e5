"""Incremental usage totals always equal a recount (`measure`), whatever happened in the profile, and
a decision laid over them (reservations, the request) leaves them exactly as they were."""

from __future__ import annotations

import random

from webhook.platform.quota.objects import ProfileObjects
from webhook.platform.quota.index import UsageIndex
from webhook.platform.quota.usage import measure, pod_charge
from tests.platform.quota.builders import claim, compiled, device_request, pod, pvc, seeded_state, template

RULES = compiled().settings.rules
POD_NAMES = [f"p{i}" for i in range(6)]
TEMPLATES = ["t1", "t2"]
CLAIMS = ["shared", "solo"]


def random_object(rng: random.Random) -> dict:
    """A pod, claim, template or PVC whose charge may depend on the others (templates, owners, ephemeral PVCs)."""
    name = rng.choice(POD_NAMES)
    choice = rng.randrange(6)
    if choice == 0:
        return pod(name, gpus=rng.randrange(3), phase=rng.choice([None, "Running", "Succeeded"]), uid=f"u-{name}",
                   templates={"gpu": rng.choice(TEMPLATES)} if rng.random() < 0.5 else None,
                   claims={"shared": rng.choice(CLAIMS)} if rng.random() < 0.3 else None,
                   ephemeral={"scratch": f"{rng.randrange(1, 4)}Gi"} if rng.random() < 0.3 else None)
    if choice == 1:
        return template(rng.choice(TEMPLATES), "jdoe", device_request(rng.randrange(1, 3)))
    if choice == 2:
        return claim(rng.choice(CLAIMS), "jdoe", device_request(rng.choice([1, 2, None]), mode=rng.choice([None, "All"])))
    if choice == 3:  # generated from a pod's template, maybe named by the pod's status
        owner = pod(name, uid=f"u-{name}")
        return claim(f"{name}-gpu-x1", "jdoe", device_request(2), owner_pod=owner, pod_claim="gpu")
    if choice == 4:
        return pvc(f"{name}-scratch", size=f"{rng.randrange(1, 5)}Gi", owner_pod=pod(name, uid=f"u-{name}"))
    return pvc(f"data-{rng.randrange(3)}", size=f"{rng.randrange(1, 50)}Gi")


def snapshot(profile) -> tuple:
    return (profile.gpus, profile.storage, dict(profile.charges), sorted(profile.unbounded))


def test_totals_follow_every_write_and_equal_a_recount():
    rng = random.Random(12)
    state = seeded_state()
    index = UsageIndex(RULES)
    for step in range(400):
        obj = random_object(rng)
        meta = obj["metadata"]
        if rng.random() < 0.2:
            state.record_deleted(obj["kind"], "jdoe", meta["name"])
        else:
            state.record_admitted(obj, "CREATE")
        if step % 3:
            continue  # several writes between decisions: the index catches up on what it was told
        profile = index.profile(state, "jdoe")
        expected = measure(ProfileObjects.read(state, "jdoe"), RULES)
        assert profile.gpus == expected.gpus and profile.storage == expected.storage, step
        assert dict(profile.charges) == dict(expected.charges), step
        assert len(profile.unbounded) == len(expected.unbounded), step


def test_laying_changes_over_the_totals_counts_them_and_undoes_them_exactly():
    rng = random.Random(7)
    state = seeded_state(*(random_object(rng) for _ in range(30)))
    profile = UsageIndex(RULES).profile(state, "jdoe")
    for _ in range(100):
        before = snapshot(profile)
        changes = [random_object(rng) for _ in range(rng.randrange(1, 4))]
        layers = [(o["kind"], o["metadata"]["name"], None if rng.random() < 0.2 else o) for o in changes]
        with profile.laid_over(layers):
            view = ProfileObjects.read(state, "jdoe")
            for kind, name, obj in layers:
                view = view.with_object(kind, name, obj)
            expected = measure(view, RULES)
            assert (profile.gpus, profile.storage, dict(profile.charges)) == \
                   (expected.gpus, expected.storage, dict(expected.charges))
        assert snapshot(profile) == before


def test_a_state_that_tells_no_changes_is_recounted():
    from webhook.state.overlay import OverlaidState

    index = UsageIndex(RULES)
    dry_run = OverlaidState(seeded_state(pod("a", gpus=1)), [])  # a dry run's overlay changes nothing, tells no one
    assert index.profile(dry_run, "jdoe") is None
    assert index.current(dry_run, "jdoe") is None


def test_a_relist_reloads_the_profile():
    state = seeded_state(pod("a", gpus=1))
    index = UsageIndex(RULES)
    assert index.profile(state, "jdoe").gpus == 1
    state._scopes[("Pod", "jdoe")].clear()  # as a live cache replaced after a relist
    state._notify("Pod", "RELIST", None)
    assert index.profile(state, "jdoe").gpus == 0


# --- the request's charge kept for the pod the state then records ------------------------------------
def _charges_with_notes(charges) -> dict:
    return {key: (charge, charge.notes) for key, charge in charges.items()}


def _admit(profile, state, obj: dict, rng: random.Random) -> None:
    """As the policy and the engine do: the request laid over (its charge kept), then stored as a new dict
    sharing the request's spec and status (sometimes with a uid that objects already in the profile name)."""
    name = obj["metadata"]["name"]
    with profile.laid_over([("Pod", name, obj)], {}, spare=True):
        pass
    stored = dict(obj)
    stored["metadata"] = dict(obj["metadata"])
    if rng.random() < 0.5:
        stored["metadata"]["uid"] = f"u-{name}"  # the uid the random generated claims and PVCs are owned by
    if rng.random() < 0.15:  # something else changes before the record: a template, a claim, a PVC
        other = random_object(rng)
        state.record_admitted(other, "CREATE")
    state.record_admitted(stored, "CREATE")


def test_a_kept_request_charge_reused_on_record_equals_a_recount():
    rng = random.Random(5)
    state = seeded_state(*(random_object(rng) for _ in range(20)))
    index = UsageIndex(RULES)
    for step in range(600):
        profile = index.profile(state, "jdoe")
        expected = measure(ProfileObjects.read(state, "jdoe"), RULES)
        assert (profile.gpus, profile.storage) == (expected.gpus, expected.storage), step
        assert _charges_with_notes(profile.charges) == _charges_with_notes(expected.charges), step
        assert len(profile.unbounded) == len(expected.unbounded), step
        obj = random_object(rng)
        if obj["kind"] == "Pod":
            meta = obj["metadata"]
            meta.pop("uid", None)  # a CREATE carries none; the state gives one
            _admit(profile, state, obj, rng)
        elif rng.random() < 0.2:
            state.record_deleted(obj["kind"], "jdoe", obj["metadata"]["name"])
        else:
            state.record_admitted(obj, "CREATE")


def test_the_admitted_pod_is_charged_once_per_request():
    """The charge computed when the request is laid over is the very one the recorded pod gets: not computed
    again (a computed charge is a new object)."""
    state = seeded_state(template("t1", "jdoe", device_request(1)))
    index = UsageIndex(RULES)
    profile = index.profile(state, "jdoe")
    for i in range(3):
        name = f"nb-{i}"
        obj = pod(name, templates={"gpu": "t1"})
        with profile.laid_over([("Pod", name, obj)], {}, spare=True):
            laid = profile.charges[("Pod", name)]
        assert ("Pod", name) not in profile.charges  # taken off again after the decision
        state.record_admitted({**obj, "metadata": dict(obj["metadata"])}, "CREATE")  # as the engine stores it
        profile = index.profile(state, "jdoe")
        assert profile.charges[("Pod", name)] is laid
    assert profile.gpus == measure(ProfileObjects.read(state, "jdoe"), RULES).gpus == 3


def test_a_kept_charge_is_not_reused_for_another_object_or_a_changed_read():
    state = seeded_state(template("t1", "jdoe", device_request(1)))
    index = UsageIndex(RULES)
    profile = index.profile(state, "jdoe")
    obj = pod("nb", templates={"gpu": "t1"})
    with profile.laid_over([("Pod", "nb", obj)], {}, spare=True):
        pass
    state.record_admitted(template("t1", "jdoe", device_request(2)), "CREATE")  # what the charge read changed
    state.record_admitted(obj, "CREATE")
    assert index.profile(state, "jdoe").gpus == 2
    live = pod("nb2", templates={"gpu": "t1"})
    with profile.laid_over([("Pod", "nb2", live)], {}, spare=True):
        pass
    state.record_admitted(pod("nb2", templates={"gpu": "t2"}), "CREATE")  # live mode: another object arrives
    assert index.profile(state, "jdoe").gpus == measure(ProfileObjects.read(state, "jdoe"), RULES).gpus == 2


class _Noting(dict):
    """A dict that notes the keys read through get/[] (what pod_charge reads of a pod and its metadata)."""

    def __init__(self, data: dict, seen: set, prefix: str = "") -> None:
        super().__init__(data)
        self.seen, self.prefix = seen, prefix

    def get(self, key, default=None):
        self.seen.add(self.prefix + key)
        return super().get(key, default)

    def __getitem__(self, key):
        self.seen.add(self.prefix + key)
        return super().__getitem__(key)


def test_pod_charge_reads_of_the_pod_only_what_a_kept_charge_compares():
    """The spare (records.SpareCharge) compares spec, status, name and uid: pod_charge must read nothing else of
    the pod (resourceVersion only keys the legacy memo, whose value is the same for the same spec)."""
    rng = random.Random(9)
    objects = [random_object(rng) for _ in range(40)]
    view = ProfileObjects.read(seeded_state(*objects), "jdoe")
    seen: set = set()
    for obj in objects:
        if obj["kind"] == "Pod":
            noted = _Noting({**obj, "metadata": _Noting(obj["metadata"], seen, "metadata.")}, seen)
            pod_charge(view, obj["metadata"]["name"], noted, RULES)
    assert seen <= {"spec", "status", "metadata", "metadata.name", "metadata.uid", "metadata.resourceVersion"}
    assert {"spec", "status", "metadata.name", "metadata.uid"} <= seen
