"""A deep copy for JSON-shaped values (dicts, lists, scalars), several times faster than copy.deepcopy.

Admission objects come from JSON (or YAML of the same shape): no cycles, no custom classes. Anything
else (a tuple, a datetime from a YAML state file) is handed to copy.deepcopy, so the result is always
a deep copy. Shared sub-objects (YAML aliases) become separate copies, which only matters to code
that compares identities.
"""

from __future__ import annotations

import copy
from typing import Any

_SCALARS = (str, int, float, bool, type(None))


def clone(value: Any) -> Any:
    kind = type(value)
    if kind is dict:
        return {key: item if type(item) in _SCALARS else clone(item) for key, item in value.items()}
    if kind is list:
        return [item if type(item) in _SCALARS else clone(item) for item in value]
    if kind in _SCALARS:
        return value
    return copy.deepcopy(value)
