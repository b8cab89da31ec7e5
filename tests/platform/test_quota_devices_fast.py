"""legacy_gpus' one-pass check (no container names a counted resource: zero) answers as the general path
(effective requests, weights) on random container specs, odd shapes included: the same value or the same error."""

from __future__ import annotations

import random
from typing import Any

import pytest

from webhook.platform.quota import devices
from webhook.platform.quota.devices import legacy_gpus
from tests.platform.quota_builders import compiled

TABLE = compiled().settings.rules.legacy
NAMES = ["cpu", "memory", "nvidia.com/gpu", "nvidia.com/mig-1g.5gb", "amd.com/gpu", "example.com/fpga", "nvidia.com/mig"]
ODD = [None, "x", 3, [], {}, [None], ["x"], {"a": 1}]


def _general(spec: Any) -> Any:
    saved = devices._counts_nothing
    devices._counts_nothing = lambda spec, table: False
    try:
        return legacy_gpus(spec, TABLE)
    finally:
        devices._counts_nothing = saved


def _answer(call: Any, spec: Any) -> str:
    try:
        return repr(call(spec))
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"


def _resources(rng: random.Random) -> Any:
    if rng.random() < 0.05:
        return rng.choice(ODD)
    out: dict[str, Any] = {}
    for section in ("limits", "requests", "claims"):
        if rng.random() < 0.6:
            out[section] = (rng.choice(ODD) if rng.random() < 0.05 else
                            {rng.choice(NAMES[:2] if rng.random() < 0.7 else NAMES): rng.choice(["1", "2", "500m", "x"])
                             for _ in range(rng.randint(0, 3))})
    return out


def _spec(rng: random.Random) -> Any:
    if rng.random() < 0.03:
        return rng.choice(ODD)
    spec: dict[str, Any] = {}
    for field in ("initContainers", "containers"):
        if rng.random() < 0.05:
            spec[field] = rng.choice(ODD)
        elif rng.random() < 0.9:
            spec[field] = [rng.choice(ODD) if rng.random() < 0.03 else
                           {"name": f"c{i}", "resources": _resources(rng),
                            **({"restartPolicy": "Always"} if rng.random() < 0.2 else {})}
                           for i in range(rng.randint(0, 3))]
    return spec


@pytest.mark.parametrize("seed", range(20))
def test_the_one_pass_check_answers_as_the_general_path(seed):
    rng = random.Random(seed)
    for _ in range(200):
        spec = _spec(rng)
        assert _answer(lambda s: legacy_gpus(s, TABLE), spec) == _answer(_general, spec)


def test_the_cases_cover_both_paths_and_errors():
    rng = random.Random(1)
    specs = [_spec(rng) for _ in range(3000)]
    fast = sum(devices._counts_nothing(s, TABLE) for s in specs)
    answers = [_answer(_general, s) for s in specs]
    assert 500 < fast < 2500
    assert any("Error" in a for a in answers) and any(a not in ("Fraction(0, 1)",) and "Error" not in a for a in answers)
