"""quick_init: a frozen dataclass's __init__ that writes __dict__ builds the very instances the generated one does."""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import FrozenInstanceError, InitVar, dataclass, field

import pytest

from webhook.model import cluster, policy, results, review, verdict
from webhook.model.quickinit import quick_init


def _both():
    """The same class twice: as dataclasses makes it, and with quick_init."""
    def make():
        @dataclass(frozen=True)
        class Sample:
            a: int
            b: tuple = ()
            c: dict = field(default_factory=dict, hash=False, compare=False)
            d: list = field(default_factory=list, init=False, compare=False)
            e: int = field(default=7, init=False)
            f: str = field(default="k", kw_only=True)
        return Sample
    return make(), quick_init(make())


@pytest.mark.parametrize("args, kwargs", [((1,), {}), ((1, (2,)), {}), ((1,), {"f": "z"}), ((), {"a": 3, "c": {"x": 1}}),
                                          ((1, (2,), {"y": 2}), {"f": ""})])
def test_the_same_instances_as_the_generated_init(args, kwargs):
    stock, quick = _both()
    made, fast = stock(*args, **kwargs), quick(*args, **kwargs)
    assert vars(made) == vars(fast) and repr(made).split("(", 1)[1] == repr(fast).split("(", 1)[1]
    assert hash(fast) == hash(quick(*args, **kwargs)) and fast == quick(*args, **kwargs)
    assert dataclasses.replace(fast, a=9).a == 9 and dataclasses.replace(fast, a=9).b == fast.b
    with pytest.raises(FrozenInstanceError):
        fast.a = 2  # type: ignore[misc]


def test_factories_run_per_instance_and_signature_and_errors_are_the_generated_ones():
    stock, quick = _both()
    assert quick(1).c is not quick(1).c and quick(1).d is not quick(1).d
    convention = [(p.name, p.kind, p.default) for p in inspect.signature(stock.__init__).parameters.values()]
    assert [(p.name, p.kind, p.default) for p in inspect.signature(quick.__init__).parameters.values()] == convention
    for call in (lambda cls: cls(), lambda cls: cls(1, 2, 3, 4), lambda cls: cls(1, g=2)):
        with pytest.raises(TypeError) as made:
            call(stock)
        with pytest.raises(TypeError) as fast:
            call(quick)
        assert str(made.value).split("(", 1)[1] == str(fast.value).split("(", 1)[1]


def test_classes_it_cannot_build_exactly_are_refused_when_made():
    @dataclass
    class Mutable:
        a: int

    @dataclass(frozen=True, slots=True)
    class Slotted:
        a: int

    @dataclass(frozen=True)
    class Posted:
        a: int

        def __post_init__(self) -> None: ...

    @dataclass(frozen=True)
    class WithInitVar:
        a: int
        b: InitVar[int] = 0

    for cls in (Mutable, Slotted, Posted, WithInitVar):
        with pytest.raises(TypeError):
            quick_init(cls)


def test_the_request_path_classes_use_it():
    """The classes a review builds by the dozen (a sample of them) carry quick_init's __init__."""
    for cls in (review.AdmissionRequest, review.UserInfo, review.GroupVersionKind, policy.EvalContext,
                policy.ValidationOutcome, results.RuleResult, verdict.Verdict, cluster.ObjectKey):
        assert cls.__init__.__code__.co_filename.startswith("<quick_init"), cls
