"""Frozen dataclasses that a review builds by the dozen, constructed at the cost of plain ones.

A frozen dataclass's generated `__init__` sets each field through `object.__setattr__` (its own `__setattr__`
refuses), a call per field: ~0.2 us a field, ~2.5 us for a nine-field Verdict, and a GPU notebook's review
builds ~25 such objects (~100 fields). `quick_init` gives the class an `__init__` that writes the new
instance's `__dict__` instead, which is what `object.__setattr__` does for them in the end: the same
signature (checked against the generated one when the class is made), the same defaults and factories,
the same instances (`==`, hash, repr, `dataclasses.replace`, still frozen after construction).
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any, TypeVar

T = TypeVar("T")


def quick_init(cls: type[T]) -> type[T]:
    """Use above `@dataclass(frozen=True)` on a class without slots, `__post_init__` or InitVar fields."""
    if not dataclasses.is_dataclass(cls) or not cls.__dataclass_params__.frozen:  # type: ignore[attr-defined]
        raise TypeError(f"{cls.__name__}: quick_init is for frozen dataclasses")
    if "__slots__" in vars(cls) or hasattr(cls, "__post_init__"):
        raise TypeError(f"{cls.__name__}: quick_init writes __dict__ and calls no __post_init__")
    generated = inspect.signature(cls.__init__)
    fields = dataclasses.fields(cls)
    init_fields = [f for f in fields if f.init]
    parameters = [p for name, p in generated.parameters.items() if name != "self"]
    if [p.name for p in parameters] != [f.name for f in init_fields]:
        raise TypeError(f"{cls.__name__}: quick_init needs the fields as the only parameters (no InitVar)")
    namespace: dict[str, Any] = {}
    signature, body, keyword_only = ["self"], ["    d = self.__dict__"], False
    for field, parameter in zip(init_fields, parameters):
        name = field.name
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY and not keyword_only:
            signature.append("*")
            keyword_only = True
        if parameter.default is inspect.Parameter.empty:
            signature.append(name)
        else:
            namespace[f"_default_{name}"] = parameter.default  # the generated __init__'s own default object
            signature.append(f"{name}=_default_{name}")
        if field.default_factory is not dataclasses.MISSING:  # the default is the factory's marker
            namespace[f"_factory_{name}"] = field.default_factory
            body.append(f"    d[{name!r}] = _factory_{name}() if {name} is _default_{name} else {name}")
        else:
            body.append(f"    d[{name!r}] = {name}")
    for field in fields:  # as the generated __init__: a factory's value is the instance's, a default the class's
        if not field.init and field.default_factory is not dataclasses.MISSING:
            namespace[f"_factory_{field.name}"] = field.default_factory
            body.append(f"    d[{field.name!r}] = _factory_{field.name}()")
    source = f"def __init__({', '.join(signature)}):\n" + "\n".join(body) + "\n"
    exec(compile(source, f"<quick_init {cls.__qualname__}>", "exec"), namespace)  # field names only, no input
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__doc__ = cls.__init__.__doc__
    if _calling_convention(inspect.signature(init)) != _calling_convention(generated):
        raise TypeError(f"{cls.__name__}: quick_init's signature {inspect.signature(init)} is not {generated}")
    cls.__init__ = init  # type: ignore[misc]
    return cls


def _calling_convention(signature: inspect.Signature) -> list[tuple[str, Any, Any]]:
    """What a caller sees of a signature: names, kinds and default objects (annotations aside)."""
    return [(p.name, p.kind, p.default) for p in signature.parameters.values()]
