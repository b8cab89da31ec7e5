"""_verdict_with (the engine's last field set on a verdict) builds what dataclasses.replace builds."""

from __future__ import annotations

import itertools
from dataclasses import fields, replace

from webhook.engine import dispatch
from webhook.engine.dispatch import _verdict_with
from webhook.model.verdict import Verdict, deny


def _verdicts() -> list[Verdict]:
    return [Verdict(True), Verdict(True, warnings=("w",), audit_annotations={"a": "b"}),
            deny("no", code=403), deny("later", code=503), Verdict(False, 422, "bad", "Invalid", patch=({"op": "add"},))]


def test_same_as_replace():
    assert dispatch._VERDICT_PLAIN
    for verdict, (name, value) in itertools.product(_verdicts(), [("patch", ()), ("patch", ({"op": "remove", "path": "/a"},)),
                                                                   ("generated", ()), ("generated", ({"kind": "X"},))]):
        fast, slow = _verdict_with(verdict, name, value), replace(verdict, **{name: value})
        assert fast == slow and repr(fast) == repr(slow) and type(fast) is Verdict
        assert [getattr(fast, f.name) for f in fields(Verdict)] == [getattr(slow, f.name) for f in fields(Verdict)]
        try:
            fast.allowed = True  # still frozen
        except AttributeError:
            pass
        else:
            raise AssertionError("a verdict must stay frozen")


def test_anything_else_goes_through_replace(monkeypatch):
    monkeypatch.setattr(dispatch, "_VERDICT_PLAIN", False)
    verdict = Verdict(True, warnings=("w",))
    assert _verdict_with(verdict, "patch", ({"op": "add"},)) == replace(verdict, patch=({"op": "add"},))
