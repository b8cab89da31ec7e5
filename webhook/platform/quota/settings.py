"""ProfileQuota: the policy document's schema, and compiling it into settings the counting reads.

Every number, name and text of the quota lives here with a default, so a policy file may say as
little as `kind: ProfileQuota` with an empty spec and get the platform conventions of design section 2.
"""

from __future__ import annotations

from dataclasses import field
from fractions import Fraction
from typing import Any, Mapping, Protocol

from webhook.model.errors import PolicyCompileError
from webhook.model.quantity import parse_quantity
from webhook.model.quickinit import frozen_dataclass
from webhook.platform.base import CLASS_LABEL, document_schema
from webhook.platform.quota.accelerators import (DEFAULT_CLASS_PATTERNS, DEFAULT_PATTERNS, DEVICE_CLASS_RESOURCE_PREFIX,
                                                  AcceleratorRule)

KIND_NAME = "ProfileQuota"

DEFAULT_CLASSES: dict[str, dict[str, Any]] = {"personal": {"gpus": 1, "storage": "30Gi"},
                                              "team": {"gpus": 8, "storage": "1Ti"}}
# every accelerator of the platform: NVIDIA (GPUs, MIG slices) and AMD (device plugin and DRA driver); the
# device class of a legacy resource is the one whose devices the scheduler allocates for it (KEP-5004)
DEFAULT_LEGACY = [{"name": "nvidia.com/gpu", "weight": 1, "deviceClass": "gpu.nvidia.com"},
                  {"prefix": "nvidia.com/mig-", "weight": 1, "deviceClass": "mig.nvidia.com"},
                  {"name": "amd.com/gpu", "weight": 1, "deviceClass": "gpu.amd.com"}]
# the class of a default legacy entry that a policy lists without `deviceClass`
KNOWN_CLASSES = {entry.get("name", entry.get("prefix")): entry["deviceClass"] for entry in DEFAULT_LEGACY}
# every DeviceClass the GPU drivers ship: NVIDIA's DRA driver (whole GPUs, MIG slices, GPUs handed to VMs
# through VFIO) and AMD's
DEFAULT_DEVICE_CLASSES = [{"name": "gpu.nvidia.com", "weight": 1}, {"name": "mig.nvidia.com", "weight": 1},
                          {"name": "vfio.gpu.nvidia.com", "weight": 1}, {"name": "gpu.amd.com", "weight": 1}]
DEFAULT_SCHEDULER_USERNAMES = ["system:kube-scheduler"]
DEFAULT_PROFILE_GPU_KEYS = ["requests.nvidia.com/gpu"]
DEFAULT_PROFILE_STORAGE_KEYS = ["requests.storage"]
DEFAULT_RESERVATION_SECONDS = 30.0
DEFAULT_MAX_LISTED = 3
DEFAULT_GPU_ADVICE = ("Stop a notebook or delete pods and ResourceClaims you no longer need "
                      "(kubectl get pods,resourceclaims -n {namespace}), or ask the platform team to raise the limit.")
DEFAULT_STORAGE_ADVICE = ("Delete volumes you no longer need (kubectl get pvc -n {namespace}), "
                          "or ask the platform team to raise the limit.")
ADVICE_FIELDS = ("namespace", "profile_class", "owner")

# --- schema ----------------------------------------------------------------------------------------
_AMOUNT = {"type": ["integer", "number", "string"]}
_LIMITS = {
    "type": "object",
    "additionalProperties": False,
    "properties": {"gpus": _AMOUNT, "storage": {"type": ["integer", "string"]}},
}
_WEIGHT = {
    "type": "object",
    "additionalProperties": False,
    "properties": {"name": {"type": "string", "minLength": 1}, "prefix": {"type": "string", "minLength": 1},
                   "weight": _AMOUNT},
    "oneOf": [{"required": ["name"]}, {"required": ["prefix"]}],
}
_LEGACY_WEIGHT = {**_WEIGHT, "properties": {**_WEIGHT["properties"], "deviceClass": {"type": "string", "minLength": 1}}}
_STRINGS = {"type": "array", "items": {"type": "string"}}

SPEC_PROPERTIES: dict[str, Any] = {
    "classLabel": {"type": "string", "minLength": 1},
    "defaultClass": {"type": "string", "minLength": 1},
    "classes": {"type": "object", "minProperties": 1, "additionalProperties": _LIMITS},
    "overrides": {"type": "object", "additionalProperties": _LIMITS},
    "profileOverride": {
        "type": "object",
        "additionalProperties": False,
        "properties": {"enabled": {"type": "boolean"}, "gpuKeys": _STRINGS, "storageKeys": _STRINGS},
    },
    "gpus": {
        "type": "object",
        "additionalProperties": False,
        "properties": {"legacyResources": {"type": "array", "items": _LEGACY_WEIGHT},
                       "deviceClasses": {"type": "array", "items": _WEIGHT},
                       # extended resources and device classes that look like accelerators but are not counted: refused
                       "unknownAccelerators": {"type": "object", "additionalProperties": False,
                                               "properties": {"patterns": _STRINGS, "deviceClassPatterns": _STRINGS,
                                                              "allowed": _STRINGS}},
                       # who creates KEP-5004 extended-resource claims (the review's userInfo.username)
                       "schedulerUsernames": {"type": "array", "items": {"type": "string", "minLength": 1}}},
    },
    "storage": {
        "type": "object",
        "additionalProperties": False,
        "properties": {"storageClassNames": _STRINGS, "defaultStorageClassName": {"type": "string"},
                       "ephemeralVolumes": {"type": "boolean"}},
    },
    "reservationSeconds": {"type": "number", "exclusiveMinimum": 0, "maximum": 3600},
    "messages": {
        "type": "object",
        "additionalProperties": False,
        "properties": {"maxObjectsListed": {"type": "integer", "minimum": 1, "maximum": 50},
                       "gpuAdvice": {"type": "string"}, "storageAdvice": {"type": "string"}},
    },
}

SCHEMA = document_schema(KIND_NAME, SPEC_PROPERTIES)


# --- compiled settings -----------------------------------------------------------------------------
@frozen_dataclass
class LimitSpec:
    """A class's or an override's limits; None: that dimension is not limited."""

    gpus: Fraction | None = None
    storage: Fraction | None = None


@frozen_dataclass
class WeightTable:
    """GPU weight per resource or device-class name: exact names first, then the longest matching prefix.
    For legacy resources also the device class each maps to (KEP-5004: the class the scheduler allocates from)."""

    exact: Mapping[str, Fraction]
    prefixes: tuple[tuple[str, Fraction], ...]  # longest first
    exact_classes: Mapping[str, str] = field(default_factory=dict)
    prefix_classes: tuple[tuple[str, str], ...] = ()  # longest first
    # every prefix at once, for str.startswith: most names (cpu, memory) match none and are refused in one call
    prefix_starts: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "prefix_starts", tuple(prefix for prefix, _ in self.prefixes))

    def weight(self, name: str) -> Fraction | None:
        if name in self.exact:
            return self.exact[name]
        if type(name) is str and not name.startswith(self.prefix_starts):
            return None
        for prefix, weight in self.prefixes:
            if name.startswith(prefix):
                return weight
        return None

    def device_class(self, name: str) -> str | None:
        """The device class a legacy resource's devices come from; None: no class known."""
        if name in self.exact_classes:
            return self.exact_classes[name]
        for prefix, device_class in self.prefix_classes:
            if name.startswith(prefix):
                return device_class
        if name.startswith(DEVICE_CLASS_RESOURCE_PREFIX):
            return name[len(DEVICE_CLASS_RESOURCE_PREFIX):]
        return None


class SchedulerClaims(Protocol):
    """Which KEP-5004 claims the scheduler itself created, as the reviews' userInfo showed (state.claim_authors)."""

    def created_by_scheduler(self, namespace: str, name: str, uid: str) -> bool: ...


class _NoSchedulerClaims:
    def created_by_scheduler(self, namespace: str, name: str, uid: str) -> bool:
        return False


@frozen_dataclass
class CountingRules:
    """What counts and how much: read by quota_usage, in a worker thread, so immutable."""

    legacy: WeightTable
    device_classes: WeightTable
    storage_classes: frozenset[str]  # empty: every class counts
    default_storage_class: str | None  # the class a PVC without storageClassName gets; None: unknown
    ephemeral_volumes: bool
    # stored pods' legacy GPUs by (uid, resourceVersion): a profile is recounted on every admission,
    # and a stored pod's spec cannot change without a new resourceVersion; lives and dies with the policy
    legacy_memo: dict[tuple[str, str], Fraction] = field(default_factory=dict, compare=False, repr=False)
    # claim templates' GPUs by the stored template object (kept in the entry, so its id stays its own): every pod
    # of a notebook reads the same template, and a state replaces an object whole, never edits it
    template_memo: dict[int, tuple[Any, Any]] = field(default_factory=dict, compare=False, repr=False)
    # claims whose CREATE came from the scheduler's own identity: a record kept for the life of the process
    scheduler_claims: SchedulerClaims = field(default_factory=_NoSchedulerClaims, compare=False, repr=False)

    def counts_storage_class(self, name: str | None) -> bool:
        return not self.storage_classes or (name is not None and name in self.storage_classes)


@frozen_dataclass
class QuotaSettings:
    class_label: str
    default_class: str
    classes: Mapping[str, LimitSpec]
    overrides: Mapping[str, LimitSpec]
    profile_override: bool
    profile_gpu_keys: tuple[str, ...]
    profile_storage_keys: tuple[str, ...]
    rules: CountingRules
    accelerators: AcceleratorRule
    scheduler_usernames: frozenset[str]
    reservation_seconds: float
    max_listed: int
    gpu_advice: str
    storage_advice: str


def _amount(value: Any, field: str, minimum: Fraction = Fraction(0)) -> Fraction:
    try:
        # YAML floats become decimal text first, so 0.1 is one tenth and not its binary neighbour
        amount = parse_quantity(repr(value) if isinstance(value, float) else value)
    except ValueError as exc:
        raise PolicyCompileError(field, str(exc)) from None
    if amount < minimum:
        raise PolicyCompileError(field, f"must not be negative, got {value!r}")
    return amount


def _limits(raw: Mapping[str, Any], field: str) -> LimitSpec:
    gpus = _amount(raw["gpus"], f"{field}.gpus") if "gpus" in raw else None
    storage = _amount(raw["storage"], f"{field}.storage") if "storage" in raw else None
    return LimitSpec(gpus, storage)


def _weights(items: list[Mapping[str, Any]], field: str, known: Mapping[str, str] | None = None) -> WeightTable:
    """`known`: the device class of a name listed without `deviceClass` (legacy resources only)."""
    exact: dict[str, Fraction] = {}
    prefixes: dict[str, Fraction] = {}
    classes: dict[str, str] = {}
    prefix_classes: dict[str, str] = {}
    for index, item in enumerate(items):
        weight = _amount(item.get("weight", 1), f"{field}[{index}].weight")
        key = item["name"] if "name" in item else item["prefix"]
        (exact if "name" in item else prefixes)[key] = weight
        device_class = item.get("deviceClass", (known or {}).get(key))
        if device_class:
            (classes if "name" in item else prefix_classes)[key] = device_class
    return WeightTable(exact, _longest_first(prefixes), classes, _longest_first(prefix_classes))


def _longest_first(prefixes: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted(prefixes.items(), key=lambda kv: -len(kv[0])))


def _legacy_weights(legacy: WeightTable, classes: WeightTable) -> WeightTable:
    """The legacy table with KEP-5004's `deviceclass.resource.kubernetes.io/<class>` for every counted class, at
    that class's weight: the scheduler serves that name for any DeviceClass, so a pod may ask for GPUs by it.
    A name the policy lists itself keeps its own weight."""
    exact = {DEVICE_CLASS_RESOURCE_PREFIX + name: weight for name, weight in classes.exact.items()}
    exact.update(legacy.exact)
    prefixes = {DEVICE_CLASS_RESOURCE_PREFIX + prefix: weight for prefix, weight in classes.prefixes}
    prefixes.update(legacy.prefixes)
    return WeightTable(exact, _longest_first(prefixes), legacy.exact_classes, legacy.prefix_classes)


def _advice(text: str, field: str) -> str:
    try:
        text.format(**{name: "x" for name in ADVICE_FIELDS})
    except (KeyError, IndexError, ValueError) as exc:
        raise PolicyCompileError(field, f"unknown or malformed placeholder ({exc}); use {{namespace}}, "
                                        f"{{profile_class}} or {{owner}}, and {{{{ }}}} for literal braces") from None
    return text


def compile_settings(spec: Mapping[str, Any]) -> QuotaSettings:
    classes_raw = spec.get("classes", DEFAULT_CLASSES)
    classes = {name: _limits(raw, f"spec.classes.{name}") for name, raw in classes_raw.items()}
    default_class = spec.get("defaultClass", "personal")
    if default_class not in classes:
        raise PolicyCompileError("spec.defaultClass", f"{default_class!r} is not one of the classes "
                                                      f"({', '.join(sorted(classes))})")
    overrides = {ns: _limits(raw, f"spec.overrides.{ns}") for ns, raw in (spec.get("overrides") or {}).items()}
    profile = spec.get("profileOverride") or {}
    gpus = spec.get("gpus") or {}
    storage = spec.get("storage") or {}
    messages = spec.get("messages") or {}
    unknown = gpus.get("unknownAccelerators") or {}
    device_classes = _weights(gpus.get("deviceClasses", DEFAULT_DEVICE_CLASSES), "spec.gpus.deviceClasses")
    legacy = _weights(gpus.get("legacyResources", DEFAULT_LEGACY), "spec.gpus.legacyResources", KNOWN_CLASSES)
    rules = CountingRules(
        legacy=_legacy_weights(legacy, device_classes),
        device_classes=device_classes,
        storage_classes=frozenset(storage.get("storageClassNames") or ()),
        default_storage_class=storage.get("defaultStorageClassName"),
        ephemeral_volumes=storage.get("ephemeralVolumes", True),
    )
    return QuotaSettings(
        class_label=spec.get("classLabel", CLASS_LABEL),
        default_class=default_class,
        classes=classes,
        overrides=overrides,
        profile_override=profile.get("enabled", True),
        profile_gpu_keys=tuple(profile.get("gpuKeys", DEFAULT_PROFILE_GPU_KEYS)),
        profile_storage_keys=tuple(profile.get("storageKeys", DEFAULT_PROFILE_STORAGE_KEYS)),
        rules=rules,
        accelerators=AcceleratorRule(tuple(unknown.get("patterns", DEFAULT_PATTERNS)), frozenset(unknown.get("allowed", ())),
                                     tuple(unknown.get("deviceClassPatterns", DEFAULT_CLASS_PATTERNS))),
        scheduler_usernames=frozenset(gpus.get("schedulerUsernames", DEFAULT_SCHEDULER_USERNAMES)),
        reservation_seconds=float(spec.get("reservationSeconds", DEFAULT_RESERVATION_SECONDS)),
        max_listed=int(messages.get("maxObjectsListed", DEFAULT_MAX_LISTED)),
        gpu_advice=_advice(messages.get("gpuAdvice", DEFAULT_GPU_ADVICE), "spec.messages.gpuAdvice"),
        storage_advice=_advice(messages.get("storageAdvice", DEFAULT_STORAGE_ADVICE), "spec.messages.storageAdvice"),
    )
