"""QUARTERMASTER_CEL_FAST_PATHS_OFF (webhook/families/cel/tiers.py): each CEL fast-path tier behind its own switch;
with any of them off the results stay the reference route's (every evaluation here is shadowed: conftest.py)."""

import pytest

from tests.families.cel.test_fused import engine, pod, results
from tests.families.cel.test_fused_group import GROUP, Calls
from webhook.engine.offline import admit_offline
from webhook.families.cel.fusedgroup import FusedGroup
from webhook.families.cel.tiers import ENVIRONMENT, FastPaths

PASSING = [("pass", "success")] * 4


def _off(monkeypatch, names):
    monkeypatch.setenv(ENVIRONMENT, names)


async def test_group_off_leaves_each_policy_its_own_fused_program(monkeypatch):
    _off(monkeypatch, "group")
    eng = engine(GROUP)
    assert {p.traits.route for p in eng.store.snapshot.policies} == {"fused"}
    assert all("the group is switched off" in p.traits.why for p in eng.store.snapshot.policies)
    calls = Calls(monkeypatch)
    assert results(await admit_offline(eng, pod(labels={"team": "a"}))) == PASSING
    assert len(calls.values) == 4  # one program per policy


async def test_python_off_evaluates_on_the_runtime(monkeypatch):
    _off(monkeypatch, "python")
    eng = engine(GROUP)
    calls = Calls(monkeypatch)
    assert results(await admit_offline(eng, pod(labels={"team": "a"}))) == PASSING
    assert calls.tiers == ["runtime"] and calls.values == [[0, 0, 0, 0]]


async def test_memo_off_decides_the_group_for_each_member(monkeypatch):
    _off(monkeypatch, "memo")
    eng = engine(GROUP)
    decisions = []
    decide = FusedGroup.decide
    monkeypatch.setattr(FusedGroup, "decide", lambda self, *args: decisions.append(1) or decide(self, *args))
    assert results(await admit_offline(eng, pod(labels={"team": "a"}))) == PASSING
    assert len(decisions) == 4


def test_an_unknown_switch_is_refused_naming_the_variable(monkeypatch):
    _off(monkeypatch, "group,fast")
    with pytest.raises(ValueError, match="'trim' is no CEL fast path"):  # removed: it gave nothing measurable
        _off(monkeypatch, "trim")
        FastPaths.from_environment()
    _off(monkeypatch, "group,fast")
    with pytest.raises(ValueError, match=f"{ENVIRONMENT}: 'fast' is no CEL fast path"):
        FastPaths.from_environment()
    monkeypatch.setenv(ENVIRONMENT, "")
    assert FastPaths.from_environment() == FastPaths()
