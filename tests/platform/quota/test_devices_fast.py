"""legacy_gpus' one-pass check (no container names a counted resource: zero) answers as the general path
(effective requests, weights) on random container specs, odd shapes included: the same value or the same error."""

from __future__ import annotations

import random
from fractions import Fraction
from typing import Any

import pytest

from webhook.platform.quota import devices
from webhook.platform.quota.devices import legacy_gpus
from tests.platform.quota.builders import compiled

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


# --- the general path against the arithmetic as first written (every zero added, every max taken) ------
def _reference_effective(spec: Any, table: Any) -> dict:
    init = [(c, devices._container_amounts(c, table)) for c in spec.get("initContainers") or []]
    app = [devices._container_amounts(c, table) for c in spec.get("containers") or []]
    names = {name for _, amounts in init for name in amounts} | {name for amounts in app for name in amounts}
    effective = {}
    for name in names:
        sidecars = init_peak = Fraction(0)
        for container, amounts in init:
            amount = amounts.get(name, Fraction(0))
            if container.get("restartPolicy") == "Always":
                sidecars += amount
                init_peak = max(init_peak, sidecars)
            else:
                init_peak = max(init_peak, sidecars + amount)
        running = sum((amounts.get(name, Fraction(0)) for amounts in app), Fraction(0)) + sidecars
        effective[name] = max(running, init_peak)
    return effective


def _reference_legacy(spec: Any, table: Any) -> Fraction:
    return sum((amount * (table.weight(name) or Fraction(0))
                for name, amount in _reference_effective(spec, table).items()), Fraction(0))


WEIGHTED = compiled(gpus={"legacyResources": [{"name": "nvidia.com/gpu", "weight": 1}, {"prefix": "nvidia.com/mig-", "weight": "0.25"},
                                              {"name": "amd.com/gpu", "weight": 2}, {"name": "example.com/fpga", "weight": 0}]}
                    ).settings.rules.legacy


def _counted_spec(rng: random.Random) -> dict:
    def resources() -> dict:
        return {section: {rng.choice(NAMES): rng.choice(["0", "1", "2", "3", "-1", "500m", "x", "1e99999999", 2, None])
                          for _ in range(rng.randint(0, 3))} for section in ("limits", "requests") if rng.random() < 0.8}
    spec: dict[str, Any] = {}
    for field in ("initContainers", "containers"):
        spec[field] = [{"name": f"c{i}", "resources": resources(),
                        **({"restartPolicy": rng.choice(["Always", "Never"])} if rng.random() < 0.5 else {})}
                       for i in range(rng.randint(0, 4))]
    return spec


@pytest.mark.parametrize("seed", range(20))
def test_the_general_path_skips_only_arithmetic_that_changes_nothing(seed):
    rng = random.Random(seed)
    for table in (TABLE, WEIGHTED):
        for _ in range(100):
            spec = _counted_spec(rng)
            assert devices.effective_requests(spec, table) == _reference_effective(spec, table)
            assert legacy_gpus(spec, table) == _reference_legacy(spec, table)
            assert type(legacy_gpus(spec, table)) is Fraction
