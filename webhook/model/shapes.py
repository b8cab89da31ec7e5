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


def _is_scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)


def _leaf_types(shape: Any) -> tuple[type, ...] | None:
    """The types a leaf shape accepts besides None (a scalar also refuses bool), or None for an object or
    list shape."""
    return None if isinstance(shape, (Mapping, list)) else _TYPES[shape]


def _checker(shape: Any) -> Check:
    """A predicate that is True exactly when `_problem` finds nothing: the same walk without building a
    field path per node, which is most of `_problem`'s cost on a well-formed object (every admission).
    Leaves (most fields: names, images, lists of objects) are checked inline by their parent, not by a
    call each: a pod has a few dozen of them and the calls were most of what remained."""
    if isinstance(shape, list):
        return _each(list, shape[0])
    if isinstance(shape, Mapping):
        if "*" in shape:
            if len(shape) > 1:
                raise ValueError("a shape is either {'*': shape} or named fields, not both")
            return _each(dict, shape["*"])
        # per field: (name, leaf types or None, sub-checker or None)
        plan = tuple((key, _leaf_types(sub), None if _leaf_types(sub) is not None else _checker(sub))
                     for key, sub in shape.items())
        scalar_types = _TYPES[SCALAR]

        def check(value: Any) -> bool:
            if value is None:
                return True
            if not isinstance(value, dict):
                return False
            # the shape's fields looked up (fewer than a pod's or a container's keys): absent or null is never wrong
            get = value.get
            for key, leaf, sub in plan:
                item = get(key)
                if item is None:
                    continue
                if leaf is not None:
                    if not isinstance(item, leaf) or leaf is scalar_types and item.__class__ is bool:
                        return False
                elif not sub(item):  # type: ignore[misc]
                    return False
            return True
        return check
    types = _TYPES[shape]
    if shape == SCALAR:
        return lambda value: value is None or _is_scalar(value)
    return lambda value: value is None or isinstance(value, types)


def _each(container: type, shape: Any) -> Check:
    """A list whose every item has `shape` (container list), or an object whose every value has it
    ({'*': shape}, container dict: a map of quantities)."""
    leaf = _leaf_types(shape)
    sub = None if leaf is not None else _checker(shape)
    scalar = leaf is _TYPES[SCALAR]
    of_object = container is dict

    def check(value: Any) -> bool:
        if value is None:
            return True
        if not isinstance(value, container):
            return False
        for item in value.values() if of_object else value:
            if item is None:
                continue
            if leaf is not None:
                if not isinstance(item, leaf) or scalar and item.__class__ is bool:
                    return False
            elif not sub(item):  # type: ignore[misc]
                return False
        return True
    return check


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
