"""Frozen dataclasses, made at the cost of plain ones.

`@frozen_dataclass` is `@dataclass(frozen=True)`: the same fields, `__init__` signature, `==`, hash, repr and
`dataclasses.replace`, and FrozenInstanceError on assignment or deletion. Two costs differ:
- Making the class. On Python 3.11, `dataclass` compiles each method it generates on its own; a frozen class
  gets six, and compiling them was a large share of the instructions of `quartermaster apply`, which imports
  ~110 such classes. Here `__setattr__` and `__delattr__` are two functions shared by every
  class: four compilations a class instead of six.
- Constructing an instance, with `dict_init=True`. The generated frozen `__init__` sets each field through
  `object.__setattr__` (its own `__setattr__` refuses), a call per field; a GPU notebook's review
  builds ~25 objects of a few classes. Their `__init__` writes the new instance's `__dict__` instead. That makes
  CPython keep a dict per instance rather than its values inline, so each later read of a field costs a little
  more: right for what a review builds and reads a few times, wrong for what a policy compiles once and every
  review reads (measured: the notebook pod's /mutate took more instructions with every class so made).

`QUARTERMASTER_QUICK_DATACLASSES=0` makes every class with `dataclasses.dataclass(frozen=True)` itself (the
reference route, for an operator or a test that suspects this module; docs/fast-paths.md says what it costs).
"""
from __future__ import annotations

import dataclasses
import inspect
import os
import typing
from dataclasses import MISSING, FrozenInstanceError
from typing import Any, Callable, TypeVar, overload

T = TypeVar("T")
SWITCH = "QUARTERMASTER_QUICK_DATACLASSES"
# read once, at import: every class of the package is made the same way
QUICK = os.environ.get(SWITCH, "1").strip().lower() not in ("0", "false", "off", "no")


class _Factory:
    """The default an `__init__` parameter shows for a field made by a default_factory, as dataclasses shows it."""

    def __repr__(self) -> str:
        return "<factory>"


FACTORY = _Factory()


def _frozen_setattr(self: Any, name: str, value: Any) -> None:
    # as the generated one: a frozen class refuses every name, a plain subclass of it only the fields
    if type(self).__dict__.get("__setattr__") is _frozen_setattr or name in self.__dataclass_fields__:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")
    object.__setattr__(self, name, value)


def _frozen_delattr(self: Any, name: str) -> None:
    if type(self).__dict__.get("__delattr__") is _frozen_delattr or name in self.__dataclass_fields__:
        raise FrozenInstanceError(f"cannot delete field {name!r}")
    object.__delattr__(self, name)


def _init_for(cls: type, dict_init: bool) -> Callable[..., None]:
    """The `__init__` dataclasses would generate for `cls`; with `dict_init`, one that writes `__dict__` instead
    of calling object.__setattr__ per field. Its source holds field names only, never input."""
    fields = dataclasses.fields(cls)
    # an InitVar is a parameter of __init__ that fields() leaves out (dataclasses marks it so since 3.8)
    declared = vars(cls)["__dataclass_fields__"].values()
    if any(f._field_type is dataclasses._FIELD_INITVAR for f in declared):  # type: ignore[attr-defined]
        raise TypeError(f"{cls.__name__}: frozen_dataclass takes no InitVar fields; use @dataclass(frozen=True)")
    namespace: dict[str, Any] = {"_FACTORY": FACTORY, "_set": object.__setattr__}
    positional: list[str] = []
    keyword: list[str] = []
    body = ["    d = self.__dict__"] if dict_init else []
    seen_default = False

    def assign(name: str, value: str) -> str:
        return f"    d[{name!r}] = {value}" if dict_init else f"    _set(self, {name!r}, {value})"

    for f in fields:
        if not f.init:
            if f.default_factory is not MISSING:  # as the generated one; a plain default is the class's attribute
                namespace[f"_factory_{f.name}"] = f.default_factory
                body.append(assign(f.name, f"_factory_{f.name}()"))
            continue
        if f.default_factory is not MISSING:
            namespace[f"_factory_{f.name}"] = f.default_factory
            parameter = f"{f.name}=_FACTORY"
            body.append(assign(f.name, f"_factory_{f.name}() if {f.name} is _FACTORY else {f.name}"))
        else:
            if f.default is not MISSING:
                namespace[f"_default_{f.name}"] = f.default
                parameter = f"{f.name}=_default_{f.name}"
            else:
                parameter = f.name
            body.append(assign(f.name, f.name))
        if f.kw_only:
            keyword.append(parameter)
            continue
        if parameter == f.name and seen_default:
            raise TypeError(f"non-default argument {f.name!r} follows default argument")
        seen_default = seen_default or parameter != f.name
        positional.append(parameter)
    if hasattr(cls, "__post_init__"):
        body.append("    self.__post_init__()")
    signature = ", ".join(["self", *positional, *(["*", *keyword] if keyword else [])])
    source = f"def __init__({signature}):\n" + "\n".join(body or ["    pass"]) + "\n"
    exec(compile(source, f"<frozen_dataclass {cls.__qualname__}>", "exec"), namespace)
    init: Callable[..., None] = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__annotations__ = {**{f.name: f.type for f in fields if f.init}, "return": None}
    return init


def _make(cls: type[T], options: dict[str, Any]) -> type[T]:
    if not QUICK:  # the reference: what the decorator stands for
        options.pop("dict_init", None)
        return dataclasses.dataclass(cls, frozen=True, **options)
    if "__slots__" in vars(cls) or options.get("slots"):
        raise TypeError(f"{cls.__name__}: frozen_dataclass writes __dict__; use @dataclass(frozen=True, slots=True)")
    init = options.pop("init", True)
    dict_init = options.pop("dict_init", False)
    # dataclasses would add a hash of the fields to a frozen class that compares them and defines none
    unsafe_hash = options.pop("unsafe_hash", False) or (options.get("eq", True) and "__hash__" not in vars(cls))
    documented = bool(vars(cls).get("__doc__"))
    if not documented:
        cls.__doc__ = "(written below)"  # dataclasses would write it from the __init__ that is not there yet
    made = dataclasses.dataclass(cls, init=False, frozen=False, unsafe_hash=unsafe_hash, **options)
    if init and "__init__" not in vars(cls):
        made.__init__ = _init_for(made, dict_init)  # type: ignore[misc]
    made.__setattr__ = _frozen_setattr  # type: ignore[method-assign, assignment]
    made.__delattr__ = _frozen_delattr  # type: ignore[method-assign, assignment]
    if not documented:  # as dataclasses words it
        made.__doc__ = made.__name__ + str(inspect.signature(made)).replace(" -> None", "")
    return made


@overload
def frozen_dataclass(cls: type[T], /) -> type[T]: ...


@overload
def frozen_dataclass(*, init: bool = True, repr: bool = True, eq: bool = True, order: bool = False,
                     unsafe_hash: bool = False, match_args: bool = True, kw_only: bool = False,
                     dict_init: bool = False) -> Callable[[type[T]], type[T]]: ...


@typing.dataclass_transform(frozen_default=True)
def frozen_dataclass(cls: type[T] | None = None, /, **options: Any) -> type[T] | Callable[[type[T]], type[T]]:
    """`@dataclass(frozen=True, **options)`; bare or with dataclass's own options (no slots, no InitVar), and
    `dict_init=True` for the classes a review builds by the dozen."""
    if cls is None:
        return lambda c: _make(c, dict(options))
    return _make(cls, dict(options))
