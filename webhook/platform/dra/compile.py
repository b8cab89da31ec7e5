"""Compile a `DeviceClaimRewrite` document (already schema-checked) into a RewriteConfig and a Mutator.

Defaults live here, next to the schema, so a short policy YAML is a complete one.
"""

from __future__ import annotations

from typing import Any, Mapping

from webhook.cel import CelCompiler, CelError
from webhook.model.errors import PolicyCompileError
from webhook.platform.base import API_VERSION, DEFAULT_PROFILE_SELECTOR
from webhook.platform.dra.config import (MEMORY, PROFILE, DeviceMapping, DriverConfig, InitClaims, ModelOption,
                                         RewriteConfig, RewriteStrategy, TemplateSettings, UserChoices, dns_label, fill)
from webhook.platform.dra import nvidia
from webhook.platform.dra.mutator import DeviceClaimRewrite
from webhook.platform.dra.schema import KIND_NAME, SCHEMA
from webhook.platform.dra.templates import MANAGED_BY_LABEL, MANAGED_BY_VALUE
from webhook.policy.common import action, compile_match, failure_policy
from webhook.policy.family import CompileEnv, PolicyKind
from webhook.policy.perdocument import DocumentKind, PolicyHeader

DEFAULT_MODEL_ANNOTATION = "quartermaster.dev/gpu-model"
DEFAULT_MEMORY_ANNOTATION = "quartermaster.dev/gpu-memory"
DEFAULT_TEMPLATE_PREFIX = "quartermaster-gpu"
DEFAULT_CLAIM_PREFIX = "gpu"
# values substituted for placeholders when checking that a CEL selector compiles
_SAMPLE_PROFILE = "1g.5gb"
_SAMPLE_MEMORY = "1Gi"


def _check_cel(cel: CelCompiler, expression: str, field: str) -> None:
    try:
        cel.compile(expression, env="dra")
    except CelError as exc:
        raise PolicyCompileError(field, str(exc)) from None


def _driver_config(raw: Mapping[str, Any], field: str) -> DriverConfig | None:
    """The claim's opaque config for the driver, checked against the driver's own types now rather than
    when the kubelet plugin prepares the device (a pod would be scheduled, then fail to start)."""
    options = raw.get("driverConfig") or {}
    if "sharing" not in raw:
        if options:
            raise PolicyCompileError(f"{field}.driverConfig", "only used together with sharing; add sharing or remove it")
        return None
    driver = options.get("driver", nvidia.DRIVER)
    api_version = options.get("apiVersion", nvidia.API_VERSION)
    kind = options.get("kind", nvidia.default_kind(raw["deviceClassName"]))
    if driver == nvidia.DRIVER and api_version == nvidia.API_VERSION:
        nvidia.check_kind(kind, raw["deviceClassName"], f"{field}.driverConfig.kind")
        nvidia.check_sharing(kind, raw["sharing"], f"{field}.sharing")
    return DriverConfig(driver=driver, api_version=api_version, kind=kind, sharing=dict(raw["sharing"]))


def _names(raw: Mapping[str, Any], field: str) -> tuple[str, str, str]:
    """(resourceName, resourcePrefix, default request name); exactly one of the first two is set."""
    exact, prefix = raw.get("resourceName", ""), raw.get("resourcePrefix", "")
    if bool(exact) == bool(prefix):
        raise PolicyCompileError(field, "set exactly one of resourceName (one resource) or resourcePrefix "
                                        "(a family, e.g. nvidia.com/mig-)")
    if prefix:
        if "profileSuffixes" in raw and not raw["profileSuffixes"]:
            raise PolicyCompileError(f"{field}.profileSuffixes", "must not be empty; remove it instead")
        return "", prefix, (dns_label(prefix.rsplit("/", 1)[-1]) or "device") + "-" + PROFILE
    if "profileSuffixes" in raw:
        raise PolicyCompileError(f"{field}.profileSuffixes", "only allowed with resourcePrefix")
    return exact, "", dns_label(exact.rsplit("/", 1)[-1]) or "device"


def _device(raw: Mapping[str, Any], index: int, cel: CelCompiler) -> DeviceMapping:
    field = f"spec.devices[{index}]"
    exact, prefix, default_request = _names(raw, field)
    request = raw.get("requestName", default_request)
    for i, selector in enumerate(raw.get("selectors") or []):
        if exact and PROFILE in selector:
            raise PolicyCompileError(f"{field}.selectors[{i}]", f"{PROFILE} is only known for a resourcePrefix mapping")
        _check_cel(cel, fill(selector, PROFILE, _SAMPLE_PROFILE), f"{field}.selectors[{i}]")
    if exact and PROFILE in request:
        raise PolicyCompileError(f"{field}.requestName", f"{PROFILE} is only known for a resourcePrefix mapping")
    if not dns_label(fill(request, PROFILE, _SAMPLE_PROFILE)):
        raise PolicyCompileError(f"{field}.requestName", f"{request!r} leaves no letters or digits for a request name")
    return DeviceMapping(
        resource_name=exact, resource_prefix=prefix, device_class=raw["deviceClassName"], request_name=request,
        selectors=tuple(raw.get("selectors") or ()),
        # longest first: ".me.all" must win over ".me", or 1g.10gb.me.all would become 1g.10gb.me+me
        profile_suffixes=tuple(sorted((raw.get("profileSuffixes") or {}).items(), key=lambda kv: -len(kv[0]))),
        driver_config=_driver_config(raw, field), user_choices=bool(raw.get("userChoices", False)))


def _devices(spec: Mapping[str, Any], cel: CelCompiler) -> tuple[DeviceMapping, ...]:
    devices = tuple(_device(raw, i, cel) for i, raw in enumerate(spec["devices"]))
    seen: dict[str, int] = {}
    for i, device in enumerate(devices):
        key = device.resource_name or device.resource_prefix + "*"
        if key in seen:
            raise PolicyCompileError(f"spec.devices[{i}]", f"{key} is already mapped by spec.devices[{seen[key]}]")
        seen[key] = i
    return devices


def _models(raw: Mapping[str, Any], cel: CelCompiler) -> tuple[ModelOption, ...]:
    models, seen = [], set()
    for i, option in enumerate(raw["options"]):
        field = f"spec.userChoices.model.options[{i}]"
        if option["name"].lower() in seen:
            raise PolicyCompileError(f"{field}.name", f"model {option['name']!r} is listed twice")
        seen.add(option["name"].lower())
        for j, selector in enumerate(option["selectors"]):
            _check_cel(cel, selector, f"{field}.selectors[{j}]")
        memory = nvidia.positive_quantity(option["memory"], f"{field}.memory") if "memory" in option else None
        models.append(ModelOption(option["name"], option.get("description", ""), tuple(option["selectors"]), memory))
    return tuple(models)


def _choices(spec: Mapping[str, Any], devices: tuple[DeviceMapping, ...], cel: CelCompiler) -> UserChoices:
    """Without a userChoices section the annotations are still recognised, to refuse them clearly."""
    raw = spec.get("userChoices") or {}
    if raw and not any(d.user_choices for d in devices):
        raise PolicyCompileError("spec.userChoices", "no entry of spec.devices accepts them; set userChoices: true on one")
    model, memory = raw.get("model") or {}, raw.get("minimumMemory") or {}
    selector, maximum = "", None
    if memory:
        selector = memory["selector"]
        if MEMORY not in selector:
            raise PolicyCompileError("spec.userChoices.minimumMemory.selector", f"must use {MEMORY} where the quantity goes")
        _check_cel(cel, fill(selector, MEMORY, _SAMPLE_MEMORY), "spec.userChoices.minimumMemory.selector")
        if "maximum" in memory:
            maximum = nvidia.positive_quantity(memory["maximum"], "spec.userChoices.minimumMemory.maximum")
    model_key = model.get("annotation", DEFAULT_MODEL_ANNOTATION)
    memory_key = memory.get("annotation", DEFAULT_MEMORY_ANNOTATION)
    if model_key == memory_key:
        raise PolicyCompileError("spec.userChoices.minimumMemory.annotation", "must differ from the model annotation")
    return UserChoices(model_annotation=model_key, models=_models(model, cel) if model else (),
                       memory_annotation=memory_key, memory_selector=selector, memory_maximum=maximum)


def _templates(spec: Mapping[str, Any]) -> TemplateSettings:
    raw = spec.get("templates") or {}
    labels = dict(raw.get("labels") or {})
    if labels.get(MANAGED_BY_LABEL, MANAGED_BY_VALUE) != MANAGED_BY_VALUE:
        raise PolicyCompileError(f"spec.templates.labels.{MANAGED_BY_LABEL}",
                                 f"must be {MANAGED_BY_VALUE!r}: other batteries find Quartermaster's templates by it")
    labels[MANAGED_BY_LABEL] = MANAGED_BY_VALUE
    return TemplateSettings(name_prefix=raw.get("namePrefix", DEFAULT_TEMPLATE_PREFIX), labels=labels)


def compile_config(spec: Mapping[str, Any], cel: CelCompiler) -> RewriteConfig:
    devices = _devices(spec, cel)
    return RewriteConfig(
        strategy=RewriteStrategy(spec.get("strategy", RewriteStrategy.CLAIMS.value)),
        devices=devices,
        choices=_choices(spec, devices, cel),
        templates=_templates(spec),
        claim_prefix=spec.get("claimNamePrefix", DEFAULT_CLAIM_PREFIX),
        init_claims=InitClaims(spec.get("initContainerClaims", InitClaims.REUSE.value)),
    )


def compile_policy(doc: Mapping[str, Any], header: PolicyHeader, env: CompileEnv) -> DeviceClaimRewrite:
    spec = doc["spec"]
    # Pods only, CREATE only: a pod's containers and resource claims are immutable after creation
    match = compile_match(spec, env.cel, frozenset({"Pod"}), frozenset({"CREATE"}), DEFAULT_PROFILE_SELECTOR)
    return DeviceClaimRewrite(id=header.id, source=header.source, match=match, failure_policy=failure_policy(spec),
                              action=action(spec), config=compile_config(spec, env.cel), annotations=header.annotations)


KIND = PolicyKind(API_VERSION, KIND_NAME, SCHEMA)
DOCUMENT_KIND = DocumentKind(KIND, compile_policy)
