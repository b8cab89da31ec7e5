"""The compiled settings of a `DeviceClaimRewrite` policy: what maps to what, as frozen values.

Built once per policy load by dra_policy.compile_config; the request path only reads them.
"""

from __future__ import annotations

import re
from dataclasses import field
from enum import Enum
from fractions import Fraction
from typing import Any, Mapping

from webhook.model.quickinit import frozen_dataclass
from webhook.model.shapes import plain

PROFILE = "${profile}"
MEMORY = "${memory}"
# what may follow a resourcePrefix: the name part of a Kubernetes resource name
_PROFILE_TEXT = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_NOT_DNS = re.compile(r"[^a-z0-9-]+")


class RewriteStrategy(str, Enum):
    CLAIMS = "Claims"  # rewrite legacy limits into ResourceClaimTemplates
    PASSTHROUGH = "Passthrough"  # the DeviceClass maps the extended resource name itself (extendedResourceName)


class InitClaims(str, Enum):
    REUSE = "Reuse"  # a regular init container borrows an identical claim, as the device plugin reuses devices
    DEDICATED = "Dedicated"  # every container gets claims of its own


def dns_label(text: str, limit: int = 63) -> str:
    """Lower-case, anything else than [a-z0-9-] becomes '-', trimmed to a valid DNS label (may be '')."""
    label = _NOT_DNS.sub("-", text.lower()).strip("-")
    return label[:limit].rstrip("-")


def fill(template: str, placeholder: str, value: str) -> str:
    return template.replace(placeholder, value)


@frozen_dataclass
class DriverConfig:
    """One opaque config entry of the claim: NVIDIA's GpuConfig (or MigDeviceConfig) with a sharing strategy."""

    driver: str
    api_version: str
    kind: str
    sharing: Mapping[str, Any]

    def parameters(self) -> dict[str, Any]:
        return {"apiVersion": self.api_version, "kind": self.kind, "sharing": plain(self.sharing)}


@frozen_dataclass
class DeviceMapping:
    """A legacy extended resource (exact name or name prefix) and the DRA request it becomes."""

    resource_name: str  # exact name, or "" when resource_prefix is used
    resource_prefix: str
    device_class: str
    request_name: str  # may hold ${profile}
    selectors: tuple[str, ...]  # CEL, may hold ${profile}
    profile_suffixes: tuple[tuple[str, str], ...]  # ".me" -> "+me": the device plugin's spelling to the driver's
    driver_config: DriverConfig | None
    user_choices: bool
    # request_for("") and selectors_for(""), asked for every legacy key of an exact name: made once
    _plain: tuple[str, tuple[str, ...]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_plain", (self._request_for(""), self._selectors_for("")))

    def profile_of(self, resource: str) -> str | None:
        """None: not this mapping's resource. "" for an exact name; the driver's profile name for a prefix."""
        if self.resource_name:
            return "" if resource == self.resource_name else None
        if not resource.startswith(self.resource_prefix):
            return None
        rest = resource[len(self.resource_prefix):]
        if not _PROFILE_TEXT.match(rest):
            return None
        for suffix, replacement in self.profile_suffixes:
            if rest.endswith(suffix) and len(rest) > len(suffix):
                return rest[: -len(suffix)] + replacement
        return rest

    def request_for(self, profile: str) -> str:
        return self._plain[0] if profile == "" else self._request_for(profile)

    def selectors_for(self, profile: str) -> tuple[str, ...]:
        return self._plain[1] if profile == "" else self._selectors_for(profile)

    def _request_for(self, profile: str) -> str:
        return dns_label(fill(self.request_name, PROFILE, profile)) or "device"

    def _selectors_for(self, profile: str) -> tuple[str, ...]:
        return tuple(fill(s, PROFILE, profile) for s in self.selectors)


@frozen_dataclass
class ModelOption:
    name: str
    description: str
    selectors: tuple[str, ...]
    memory: Fraction | None  # how much memory this model has, to refuse a minimum it cannot meet


@frozen_dataclass
class UserChoices:
    """What a user may ask for on a legacy pod, through annotations the policy names."""

    model_annotation: str = ""
    models: tuple[ModelOption, ...] = ()
    memory_annotation: str = ""
    memory_selector: str = ""  # CEL with ${memory}
    memory_maximum: Fraction | None = None
    # the annotations the policy names, looked for on every legacy pod
    annotations: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "annotations", tuple(a for a in (self.model_annotation, self.memory_annotation) if a))


_PLAIN_SCALARS = (str, int, bool, type(None))


def plain_json(value: Any) -> bool:
    """Text, integers, booleans, null, and lists and string-keyed maps of them: no float (whose text the
    encoders write differently), no YAML date (which only one of them accepts)."""
    kind = type(value)
    if kind is dict:
        return all(type(k) is str and plain_json(v) for k, v in value.items())
    if kind is list or kind is tuple:
        return all(plain_json(v) for v in value)
    return kind in _PLAIN_SCALARS


@frozen_dataclass
class TemplateSettings:
    name_prefix: str
    labels: Mapping[str, str]
    # plain_json(dict(labels)), which every template name asks (templates.build_template): told once
    plain_labels: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "plain_labels", plain_json(dict(self.labels)))


@frozen_dataclass
class RewriteConfig:
    strategy: RewriteStrategy
    devices: tuple[DeviceMapping, ...]
    choices: UserChoices
    templates: TemplateSettings
    claim_prefix: str
    init_claims: InitClaims
    # the devices by exact name (the first in the YAML for each) and those matched by prefix, in YAML order:
    # every key of every container is looked up here
    _exact: Mapping[str, DeviceMapping] = field(init=False, repr=False, compare=False)
    _prefixed: tuple[DeviceMapping, ...] = field(init=False, repr=False, compare=False)
    _prefixes: tuple[str, ...] = field(init=False, repr=False, compare=False)  # theirs: cpu, memory fail in C
    # rewrite.template_for's templates made so far, by the amounts and choices they were made for (bounded)
    templates_made: dict[Any, Any] = field(init=False, default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        exact: dict[str, DeviceMapping] = {}
        for mapping in self.devices:
            if mapping.resource_name:
                exact.setdefault(mapping.resource_name, mapping)
        object.__setattr__(self, "_exact", exact)
        object.__setattr__(self, "_prefixed", tuple(m for m in self.devices if not m.resource_name))
        object.__setattr__(self, "_prefixes", tuple(m.resource_prefix for m in self._prefixed))

    def mapping_for(self, resource: str) -> tuple[DeviceMapping, str] | None:
        """Exact names win over prefixes; among either, the first in the YAML wins."""
        mapping = self._exact.get(resource)
        if mapping is not None:
            return mapping, ""
        if type(resource) is str and not resource.startswith(self._prefixes):  # profile_of's first test, at once
            return None
        for mapping in self._prefixed:
            profile = mapping.profile_of(resource)
            if profile is not None:
                return mapping, profile
        return None
