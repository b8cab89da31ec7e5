"""frozen_dataclass: the classes and instances `@dataclass(frozen=True)` makes, made at the cost of plain ones."""

from __future__ import annotations

import copy
import dataclasses
import importlib
import inspect
import pickle
import pkgutil
from dataclasses import FrozenInstanceError, InitVar, dataclass, field
from typing import ClassVar

import pytest

import webhook
from webhook.model import cluster, policy, results, review, verdict
from webhook.model.quickinit import frozen_dataclass


def _sample(decorate, name):
    @decorate
    class Sample:
        """A sample."""

        a: int
        b: tuple = ()
        c: dict = field(default_factory=dict, hash=False, compare=False)
        d: list = field(default_factory=list, init=False, compare=False)
        e: int = field(default=7, init=False)
        f: str = field(default="k", kw_only=True)
        g: ClassVar[int] = 3
    Sample.__qualname__ = Sample.__name__ = name  # found by pickle under that name, in this module
    return Sample


STOCK = _sample(dataclass(frozen=True), "STOCK")
OURS = _sample(frozen_dataclass, "OURS")
OURS_DICT = _sample(frozen_dataclass(dict_init=True), "OURS_DICT")


def _convention(function) -> list[tuple[str, object, str]]:
    return [(p.name, p.kind, repr(p.default)) for p in inspect.signature(function).parameters.values()]


@pytest.mark.parametrize("OURS", [OURS, OURS_DICT])
@pytest.mark.parametrize("args, kwargs", [((1,), {}), ((1, (2,)), {}), ((1,), {"f": "z"}), ((), {"a": 3, "c": {"x": 1}}),
                                          ((1, (2,), {"y": 2}), {"f": ""})])
def test_the_same_instances_as_dataclasses_makes(OURS, args, kwargs):
    made, ours = STOCK(*args, **kwargs), OURS(*args, **kwargs)
    assert vars(made) == vars(ours) and repr(made).split("(", 1)[1] == repr(ours).split("(", 1)[1]
    assert ours == OURS(*args, **kwargs) and hash(ours) == hash(OURS(*args, **kwargs))
    assert hash(ours) == hash(made)  # the same fields hashed the same way
    assert ours != made  # another class, as between two stock classes
    changed = dataclasses.replace(ours, a=9)
    assert type(changed) is OURS and changed.a == 9 and changed.b == ours.b and changed.f == ours.f
    assert pickle.loads(pickle.dumps(ours)) == ours and copy.deepcopy(ours) == ours and copy.copy(ours) == ours
    assert ours.e == 7 and "e" not in vars(ours) and OURS.g == 3  # a plain default of an init=False field: the class's


def test_assignment_and_deletion_are_refused_as_dataclasses_refuses_them():
    for cls in (STOCK, OURS, OURS_DICT):
        instance = cls(1)
        for attempt in (lambda: setattr(instance, "a", 2), lambda: setattr(instance, "other", 2),
                        lambda: delattr(instance, "a"), lambda: delattr(instance, "other")):
            with pytest.raises(FrozenInstanceError) as refused:
                attempt()
            assert str(refused.value).startswith(("cannot assign to field", "cannot delete field"))
    for cls in (STOCK, OURS, OURS_DICT):  # a plain subclass may hold more than the fields, never change them
        sub = type("Sub", (cls,), {})(1)
        sub.other = 2
        assert sub.other == 2
        with pytest.raises(FrozenInstanceError):
            sub.a = 2


@pytest.mark.parametrize("OURS", [OURS, OURS_DICT])
def test_factories_run_per_instance_and_the_signature_and_call_errors_are_dataclasses(OURS):
    assert OURS(1).c is not OURS(1).c and OURS(1).d is not OURS(1).d
    assert _convention(OURS.__init__) == _convention(STOCK.__init__)
    assert str(inspect.signature(OURS)) == str(inspect.signature(STOCK))
    assert OURS.__doc__ == STOCK.__doc__ == "A sample." and OURS.__init__.__doc__ is STOCK.__init__.__doc__ is None
    undocumented = [decorate(type("Plain", (), {"__annotations__": {"a": "int"}, "__module__": __name__, "b": 1}))
                    for decorate in (dataclass(frozen=True), frozen_dataclass)]
    assert undocumented[0].__doc__ == undocumented[1].__doc__ == "Plain(a: 'int')"
    for call in (lambda cls: cls(), lambda cls: cls(1, 2, 3, 4), lambda cls: cls(1, g=2), lambda cls: cls(1, e=2)):
        with pytest.raises(TypeError) as made:
            call(STOCK)
        with pytest.raises(TypeError) as ours:
            call(OURS)
        assert str(made.value).split("(", 1)[1] == str(ours.value).split("(", 1)[1]


def test_options_inheritance_hash_and_post_init_as_dataclasses():
    calls = []

    def family(decorate, decorate_with):
        @decorate
        class Base:
            a: int
            b: int = 2

        @decorate_with(kw_only=True, **({"dict_init": True} if decorate is decorate_with else {}))
        class Child(Base):
            c: int = 0

            def __post_init__(self) -> None:
                calls.append(self.c)

        @decorate_with(eq=False)
        class ByIdentity:
            a: int

        @decorate_with(order=True)
        class Ordered:
            a: int

        @decorate
        class OwnHash:
            a: int

            def __hash__(self) -> int:
                return 42
        return Base, Child, ByIdentity, Ordered, OwnHash

    stock = family(dataclass(frozen=True), lambda **options: dataclass(frozen=True, **options))
    ours = family(frozen_dataclass, frozen_dataclass)
    for made, mine in zip(stock, ours):
        assert _convention(made.__init__) == _convention(mine.__init__)
        assert [f.name for f in dataclasses.fields(made)] == [f.name for f in dataclasses.fields(mine)]
    assert ours[1](1, c=5) == ours[1](1, 2, c=5) and calls == [5, 5]
    first, second = ours[2](1), ours[2](1)
    assert first != second and first == first  # eq=False: identity, as object's
    assert ours[3](1) < ours[3](2) and sorted([ours[3](2), ours[3](1)])[0].a == 1
    assert hash(ours[4](1)) == 42 == hash(stock[4](1))
    with pytest.raises(FrozenInstanceError):
        ours[1](1).c = 2


def test_classes_it_cannot_build_as_dataclasses_would_are_refused_when_made():
    with pytest.raises(TypeError, match="slots"):
        frozen_dataclass(slots=True)(type("Slotted", (), {"__annotations__": {"a": "int"}}))
    with pytest.raises(TypeError, match="InitVar"):
        @frozen_dataclass
        class WithInitVar:
            a: int
            b: InitVar[int] = 0
    with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):
        @frozen_dataclass
        class Misordered:
            a: int = 0
            b: int


def _webhook_classes():
    for module in pkgutil.walk_packages(webhook.__path__, "webhook."):
        if module.name == "webhook.__main__":  # runs the command line
            continue
        loaded = importlib.import_module(module.name)
        for value in vars(loaded).values():
            if isinstance(value, type) and value.__module__ == module.name and dataclasses.is_dataclass(value):
                yield value


def test_every_frozen_class_of_the_package_takes_what_dataclasses_would_generate():
    """Each class made by frozen_dataclass, against the same fields made into a stock frozen dataclass."""
    checked = 0
    for cls in _webhook_classes():
        if vars(cls).get("__setattr__") is None or "frozen_dataclass" not in cls.__init__.__code__.co_filename:
            continue
        fields = [(f.name, f.type, copy.copy(f)) for f in dataclasses.fields(cls)]
        stock = dataclasses.make_dataclass(cls.__name__, fields, frozen=True, namespace={"__module__": cls.__module__})
        assert _convention(cls.__init__) == _convention(stock.__init__), cls
        checked += 1
    assert checked > 150


def test_the_package_makes_its_frozen_classes_with_it():
    """A stock frozen dataclass costs twice the compilations to make and a call per field to construct: the classes
    built per review are made with frozen_dataclass (those built once at load, such as compiled policies, need not)."""
    for cls in (review.AdmissionRequest, review.UserInfo, review.GroupVersionKind, policy.EvalContext,
                policy.ValidationOutcome, results.RuleResult, verdict.Verdict, cluster.ObjectKey):
        code = cls.__init__.__code__  # built by the dozen per review: dict_init
        assert code.co_filename.startswith("<frozen_dataclass") and "d" in code.co_varnames, cls
    from webhook.platform.notebook.config import NotebookSpec, RefresherSpec
    for cls in (NotebookSpec, RefresherSpec):  # compiled once, read by every review: values kept inline
        assert "d" not in cls.__init__.__code__.co_varnames, cls


def test_the_switch_makes_every_class_with_dataclasses_and_apply_says_the_same():
    """QUARTERMASTER_QUICK_DATACLASSES=0, the reference route: the package's classes come from dataclasses itself,
    and `apply` of the notebook pod prints the same objects and results."""
    import os
    import subprocess
    import sys

    from tests.support import REPO

    argv = [sys.executable, "-m", "webhook", "apply", "--policies", "policies", "--state", "examples/state", "--user",
            "system:serviceaccount:kube-system:statefulset-controller", "examples/notebook-pod.yaml"]
    probe = [sys.executable, "-c", "from webhook.model import results; print(results.RuleResult.__init__.__code__.co_filename)"]
    runs = {}
    for value in ("1", "0"):
        env = {**os.environ, "QUARTERMASTER_QUICK_DATACLASSES": value}
        runs[value] = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
        made_by = subprocess.run(probe, cwd=REPO, env=env, capture_output=True, text=True, timeout=60).stdout.strip()
        assert made_by == ("<frozen_dataclass RuleResult>" if value == "1" else "<string>"), made_by
    assert runs["1"].returncode == runs["0"].returncode == 0
    assert runs["1"].stdout == runs["0"].stdout and runs["1"].stdout
    assert runs["1"].stderr == runs["0"].stderr
