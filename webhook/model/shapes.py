"""The JSON types of the fields policies read, for the kinds the webhook is registered for.

The API server never sends `spec: nope` or a container that is a string, but `apply` reads files and
anyone can POST to the webhook: checking these types once, at the edge, turns what would be an
AttributeError deep inside a policy into one line naming the field. Only the types are checked (not
the values, not unknown fields): that is the API server's job.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

OBJ, LIST, STR, SCALAR = "object", "list", "string", "scalar"
# a shape: a type name, or a mapping of field -> shape (an object with those fields), or a 1-list [shape]
# (a list of that shape)
_QUANTITIES: Any = {"*": SCALAR}
_RESOURCES = {"limits": _QUANTITIES, "requests": _QUANTITIES, "claims": [OBJ]}
_CONTAINER = {"name": STR, "image": STR, "resources": _RESOURCES, "volumeMounts": [OBJ], "env": [OBJ],
              "envFrom": [OBJ], "command": [STR], "args": [STR], "lifecycle": OBJ, "securityContext": OBJ}
_PVC_SPEC = {"resources": _RESOURCES, "storageClassName": STR, "accessModes": [STR]}
_VOLUME = {"name": STR, "secret": OBJ, "projected": OBJ,
           "ephemeral": {"volumeClaimTemplate": {"metadata": OBJ, "spec": _PVC_SPEC}}}
_DEVICE_REQUEST = {"name": STR, "exactly": OBJ, "firstAvailable": [OBJ], "deviceClassName": STR}
_CLAIM_SPEC = {"devices": {"requests": [_DEVICE_REQUEST], "config": [OBJ], "constraints": [OBJ]}}
SHAPES: Mapping[str, Any] = {
    "Pod": {"spec": {"containers": [_CONTAINER], "initContainers": [_CONTAINER], "ephemeralContainers": [_CONTAINER],
                     "volumes": [_VOLUME], "resourceClaims": [OBJ], "resources": _RESOURCES},
            "status": {"phase": STR, "resourceClaimStatuses": [OBJ]}},
    "PersistentVolumeClaim": {"spec": _PVC_SPEC, "status": {"allocatedResources": _QUANTITIES}},
    "ResourceClaim": {"spec": _CLAIM_SPEC},
    "ResourceClaimTemplate": {"spec": {"metadata": OBJ, "spec": _CLAIM_SPEC}},
}
_TYPES = {OBJ: (dict,), LIST: (list,), STR: (str,), SCALAR: (str, int, float)}


def _kind_of(shape: Any) -> str:
    return OBJ if isinstance(shape, Mapping) else LIST if isinstance(shape, list) else shape


def _problem(value: Any, shape: Any, where: str) -> str | None:
    expected = _kind_of(shape)
    if value is None:
        return None  # absent and null are the same to every reader
    if not isinstance(value, _TYPES[expected]) or isinstance(value, bool) and expected == SCALAR:
        return f"{where} must be {'an' if expected == OBJ else 'a'} {expected}, got {type(value).__name__}"
    if isinstance(shape, list):
        for index, item in enumerate(value):
            problem = _problem(item, shape[0], f"{where}[{index}]")
            if problem:
                return problem
    elif isinstance(shape, Mapping):
        for key, sub in shape.items():
            items = value.items() if key == "*" else ((key, value.get(key)),)
            for name, item in items:
                problem = _problem(item, sub, f"{where}.{name}" if key != "*" else f"{where}[{name}]")
                if problem:
                    return problem
    return None


Check = Callable[[Any], bool]


def _checker(shape: Any) -> Check:
    """A predicate that is True exactly when `_problem` finds nothing: the same walk as straight-line code
    generated from the shape, without a field path per node (most of `_problem`'s cost on a well-formed
    object, which every admission is) and without a call or a loop over a plan per object (most of what
    remained: a pod has a few dozen fields to look at). The source comes from the shapes above alone, never
    from input."""
    lines = ["def check(v0):", " if v0 is None: return True"]
    _emit(shape, "v0", 1, lines, [0])
    lines.append(" return True")
    namespace: dict[str, Any] = {"_SCALAR": _TYPES[SCALAR]}
    exec(compile("\n".join(lines), f"<shape checker {_kind_of(shape)}>", "exec"), namespace)
    return namespace["check"]  # type: ignore[no-any-return]


def _emit(shape: Any, var: str, depth: int, lines: list[str], names: list[int]) -> None:
    """Lines (at `depth` spaces) that return False when `var`, known not to be None, does not have `shape`."""
    pad, kind = " " * depth, _kind_of(shape)
    if kind == SCALAR:
        lines.append(f"{pad}if {var}.__class__ is bool or not isinstance({var}, _SCALAR): return False")
        return
    lines.append(f"{pad}if not isinstance({var}, {_TYPES[kind][0].__name__}): return False")
    if not isinstance(shape, (Mapping, list)):  # a leaf: its type is all there is to check
        return
    names[0] += 1
    item = f"v{names[0]}"
    if isinstance(shape, list) or "*" in shape:  # every item (list) or every value ({'*': shape}) has the shape
        if isinstance(shape, Mapping) and len(shape) > 1:
            raise ValueError("a shape is either {'*': shape} or named fields, not both")
        each = shape[0] if isinstance(shape, list) else shape["*"]
        lines.append(f"{pad}for {item} in {var}{'.values()' if kind == OBJ else ''}:")
        lines.append(f"{pad} if {item} is not None:")
        _emit(each, item, depth + 2, lines, names)
        return
    for key, sub in shape.items():  # the shape's fields looked up (fewer than an object's keys)
        lines.append(f"{pad}{item} = {var}.get({key!r})")  # absent or null is never wrong
        lines.append(f"{pad}if {item} is not None:")
        _emit(sub, item, depth + 1, lines, names)


_CHECKERS: Mapping[str, Check] = {kind: _checker(shape) for kind, shape in SHAPES.items()}


def shape_problem(kind: str, obj: Mapping[str, Any], where: str) -> str | None:
    """The first field of a known kind with the wrong JSON type, as "<where>.spec.containers[0] must be ..."."""
    check = _CHECKERS.get(kind)
    if check is None or check(obj):
        return None
    return _problem(obj, SHAPES[kind], where)  # the reference walk names the field


def plain(value: Any) -> Any:
    """A JSON-ready copy: frozen mappings and tuples (as the request view and compiled policies hold them)
    become dicts with string keys and lists, so YAML and JSON dumpers accept them."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value
