"""A request's activation, shared by every expression evaluated on it.

Callers that evaluate several expressions on the same values (a policy's validations, many policies on
one request) wrap them once: each backend converts them into its own form once per environment.
The values must not change after the first evaluation (compute the variables an expression needs,
`program.variable_refs`, before building the Activation it is evaluated on).
"""

from __future__ import annotations

from typing import Any, Callable, Hashable, Mapping


class Activation:
    __slots__ = ("values", "_cache")

    def __init__(self, values: Mapping[str, Any]) -> None:
        self.values = values
        self._cache: dict[Hashable, Any] = {}

    def cached(self, key: Hashable, build: Callable[[], Any]) -> Any:
        found = self._cache.get(key)
        if found is None:
            found = self._cache[key] = build()
        return found

    def cached_with(self, key: Hashable, build: Callable[[Any], Any], arg: Any) -> Any:
        """`cached(key, lambda: build(arg))` without making the lambda on every call (hot paths)."""
        found = self._cache.get(key)
        if found is None:
            found = self._cache[key] = build(arg)
        return found

    def replace(self, key: Hashable, value: Any) -> Any:
        self._cache[key] = value
        return value
