"""out_of_range's shortcut (a plainly valid quantity is in range: not parsed) answers as parsing every
quantity does, on random pods and PVCs, odd shapes included (an answer is a message, None, or the same
exception)."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from webhook.model.quantity import MAX_VALUE, parse_quantity, plainly_valid
from webhook.platform.quota import quantities
from webhook.platform.quota.quantities import out_of_range

VALUES = ["1", "500m", "2Gi", "30Gi", "0", "1e3", "1.5", " 1 ", "+1", "1Ki", "10u", "1e99999999",
          "99999999999999999999", "9223372036854775807", "9223372036854775808", "8Ei", "16Ei", "abc", "",
          1, 2.5, None, True, [], {}, "1E", "1.5Gi"]
NAMES = ["cpu", "memory", "nvidia.com/gpu", "storage", "ephemeral-storage"]


def _answer(call: Any, kind: str, obj: Any) -> str:
    try:
        return repr(call(kind, obj))
    except Exception as exc:  # the same error, raised at the same place, as before
        return f"{type(exc).__name__}: {exc}"


def _values(rng: random.Random) -> Any:
    if rng.random() < 0.05:
        return rng.choice([None, "x", [], 3])
    pool = VALUES if rng.random() < 0.4 else VALUES[:5]
    return {rng.choice(NAMES): rng.choice(pool) for _ in range(rng.randint(0, 4))}


def _resources(rng: random.Random) -> Any:
    if rng.random() < 0.05:
        return rng.choice([None, "x", [], 7])
    return {section: _values(rng) for section in ("limits", "requests", "claims") if rng.random() < 0.7}


def _pod(rng: random.Random) -> Any:
    spec: dict[str, Any] = {}
    for field in ("initContainers", "containers"):
        if rng.random() < 0.9:
            spec[field] = [{"name": f"c{i}", "resources": _resources(rng)} if rng.random() < 0.95 else rng.choice(["x", None, 1])
                           for i in range(rng.randint(0, 3))]
        elif rng.random() < 0.5:
            spec[field] = rng.choice([{"a": 1}, "abc", None])
    if rng.random() < 0.3:
        spec["resources"] = _resources(rng)
    volumes = []
    for i in range(rng.randint(0, 3)):
        roll = rng.random()
        if roll < 0.5:
            volumes.append({"name": f"v{i}", "ephemeral": {"volumeClaimTemplate": {"spec": {"resources": _resources(rng)}}}})
        elif roll < 0.6:
            volumes.append({"name": f"v{i}", "ephemeral": rng.choice([None, {}, {"volumeClaimTemplate": "x"}, "odd"])})
        elif roll < 0.7:
            volumes.append(rng.choice(["x", None, 5]))
        else:
            volumes.append({"name": f"v{i}", "emptyDir": {}})
    if volumes:
        spec["volumes"] = volumes
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec if rng.random() < 0.97 else None}


def _every_quantity_parsed(kind: str, obj: Any) -> Any:
    """The reference: out_of_range with no value taken as plainly valid."""
    saved = quantities.plainly_valid, quantities._SURELY_IN_RANGE
    quantities.plainly_valid = lambda value: False
    quantities._SURELY_IN_RANGE = lambda value: None
    try:
        return out_of_range(kind, obj)
    finally:
        quantities.plainly_valid, quantities._SURELY_IN_RANGE = saved



@pytest.mark.parametrize("seed", range(40))
def test_shortcut_answers_as_parsing_every_quantity(seed):
    rng = random.Random(seed)
    for _ in range(100):
        pod = _pod(rng)
        assert _answer(out_of_range, "Pod", pod) == _answer(_every_quantity_parsed, "Pod", pod)
        pvc = {"kind": "PersistentVolumeClaim", "spec": {"resources": _resources(rng)} if rng.random() < 0.95 else None}
        assert _answer(out_of_range, "PersistentVolumeClaim", pvc) == _answer(_every_quantity_parsed, "PersistentVolumeClaim", pvc)
        assert _answer(out_of_range, "ResourceClaim", pod) == _answer(_every_quantity_parsed, "ResourceClaim", pod)


def test_the_cases_include_problems_and_errors():
    rng = random.Random(1)
    answers = [_answer(_every_quantity_parsed, "Pod", _pod(rng)) for _ in range(2000)]
    assert any("out of range" in a for a in answers)
    assert any(a == "None" for a in answers)
    assert any("Error" in a for a in answers)


def test_the_one_pass_check_of_usual_pods_answers_as_the_general_walk():
    """Usual pods (plain quantities, no pod-level resources, no ephemeral volume) skip the general walk;
    near-usual ones (one odd value, shape or volume) take it: both answer as parsing every quantity."""
    rng = random.Random(3)
    fast = 0
    for _ in range(3000):
        spec: dict[str, Any] = {"containers": [{"name": f"c{i}", "resources": {
            s: {n: rng.choice(VALUES[:5]) for n in rng.sample(NAMES, rng.randint(0, 3))} for s in ("limits", "requests")
            if rng.random() < 0.8}} for i in range(rng.randint(1, 3))],
            "volumes": [{"name": "v", "emptyDir": {}}]}
        roll = rng.random()
        if roll < 0.1:
            spec["containers"][0]["resources"]["limits"] = {"cpu": rng.choice(VALUES)}
        elif roll < 0.15:
            spec["volumes"].append(rng.choice([{"name": "e", "ephemeral": {"volumeClaimTemplate": {"spec": {
                "resources": {"requests": {"storage": rng.choice(VALUES)}}}}}}, "x", {"name": "e", "ephemeral": "odd"}]))
        elif roll < 0.2:
            spec[rng.choice(["initContainers", "containers", "resources", "volumes"])] = rng.choice(
                [{"a": 1}, "abc", 3, [], {}, [None], {"limits": {"cpu": "1e99999999"}}])
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}
        fast += quantities._plainly_in_range("Pod", pod)
        assert _answer(out_of_range, "Pod", pod) == _answer(_every_quantity_parsed, "Pod", pod)
    assert 2000 < fast < 3000


SUFFIXES = ["", "m", "u", "n", "k", "K", "Ki", "M", "Mi", "G", "Gi", "T", "Ti", "P", "Pi", "E", "Ei", "e", "i", "Kib"]


@settings(max_examples=3000, deadline=None)
@given(st.text(alphabet="0123456789", min_size=0, max_size=21), st.sampled_from(SUFFIXES),
       st.sampled_from(["", " ", "+", "-", "."]))
def test_what_the_one_regex_takes_is_plainly_valid_and_in_range(digits, suffix, extra):
    """The regex of _plainly_in_range takes only plain quantities in range: a subset of plainly_valid."""
    for text in (digits + suffix, extra + digits + suffix, digits + extra + suffix, digits + suffix + extra):
        if quantities._SURELY_IN_RANGE(text):
            assert plainly_valid(text), text
            assert parse_quantity(text) <= MAX_VALUE, text


@pytest.mark.parametrize("text", ["999999999999999999", "999999999999999Ki", "999999999999999k", "999999999999Mi",
                                  "999999999Gi", "999999Ti", "999Pi", "9E", "7Ei", "500m", "1"])
def test_the_regex_takes_the_largest_of_each_suffix(text):
    assert quantities._SURELY_IN_RANGE(text) and plainly_valid(text)
