"""The CEL environments: which variables are declared and which libraries are loaded in each."""

from __future__ import annotations

from functools import cached_property

from webhook.cel.functions import Library
from webhook.cel.lib_admission import AUTHORIZER, AUTHZ, JSONPATCH
from webhook.cel.lib_kyverno import KYVERNO
from webhook.cel.lib_lists import LISTS, REGEX, REGEX_EXT, SETS
from webhook.cel.lib_named_formats import NAMED_FORMATS
from webhook.cel.lib_net import CIDR, IP
from webhook.cel.lib_url import URLS
from webhook.cel.lib_quantity import QUANTITY, SEMVER
from webhook.cel.lib_strings import STRINGS
from webhook.cel.lib_time import TIME
from webhook.model.quickinit import frozen_dataclass


@frozen_dataclass
class EnvSpec:
    name: str
    variables: tuple[str, ...]
    libraries: tuple[Library, ...]
    constructions: bool = False          # typed object construction rewritten into map literals
    defaults: tuple[tuple[str, object], ...] = ()   # activation values supplied when the caller has none
    typed_device: bool = False           # DRA: `device` fields type-checked at compile time
    or_value_compat: bool = False        # Kyverno's x.orValue(y) on a plain x and on a plain variable (webhook.cel.orvalue)
    plain_or_value: bool = False         # cel-go's x.orValue(y) on a plain x: x (orvalue.rewrite_plain_or_value)
    bindings: bool = False               # cel-go's bindings extension (`cel.bind`): Kyverno declares it, Kubernetes not

    @cached_property
    def function_names(self) -> frozenset[str]:
        """The names of the functions its libraries declare (ours, implemented in Python), dotted names whole."""
        return frozenset(o.name for lib in self.libraries for o in lib.overloads)


_ADMISSION_VARS = ("object", "oldObject", "request", "params", "namespaceObject", "variables", "authorizer")
_KUBERNETES = (STRINGS, LISTS, SETS, REGEX, URLS, IP, CIDR, QUANTITY, SEMVER, AUTHZ, NAMED_FORMATS, TIME)
# jsonpatch.escapeKey comes with the patch types, declared only where MAP mutations compile (plugin/cel/compile.go)
_MUTATING = _KUBERNETES + (JSONPATCH,)
_DEFAULTS = (("authorizer", AUTHORIZER),)

ENVS: dict[str, EnvSpec] = {
    "admission": EnvSpec("admission", _ADMISSION_VARS, _KUBERNETES, defaults=_DEFAULTS, plain_or_value=True),
    "mutating": EnvSpec("mutating", _ADMISSION_VARS, _MUTATING, constructions=True, defaults=_DEFAULTS,
                        plain_or_value=True),
    # Kyverno's environment adds cel-go's regex extension to the Kubernetes libraries (pkg/cel/compiler/env.go)
    "kyverno": EnvSpec("kyverno", _ADMISSION_VARS + ("exceptions",), _MUTATING + (REGEX_EXT, KYVERNO),
                       constructions=True, defaults=_DEFAULTS, or_value_compat=True, bindings=True),
    "dra": EnvSpec("dra", ("device",), (STRINGS, LISTS, SETS, REGEX, QUANTITY, SEMVER, NAMED_FORMATS, TIME),
                   typed_device=True),
}


def env_spec(name: str) -> EnvSpec:
    try:
        return ENVS[name]
    except KeyError:
        raise ValueError(f"unknown CEL environment {name!r}; expected one of {', '.join(ENVS)}") from None
