"""NVIDIA's DRA driver config types (resource.nvidia.com/v1beta1), checked when a policy loads.

The driver's kubelet plugin decodes a claim's opaque config strictly (unknown fields are errors) and
refuses a config that does not fit the device at prepare time: a pod would be scheduled, then fail to
start. The rules here follow the driver's Go types (api/nvidia.com/resource/v1beta1 in
NVIDIA/k8s-dra-driver-gpu): GpuConfig{sharing: GpuSharing{strategy, timeSlicingConfig, mpsConfig}} for
full GPUs, MigDeviceConfig{sharing: MigDeviceSharing{strategy, mpsConfig}} for MIG devices (strategy
TimeSlicing is accepted there and changes nothing: the driver has no time-slicing settings for a MIG device).
Both strategies need the driver's feature gates, TimeSlicingSettings and MPSSupport. MPS pinned-memory limits
are whole megabytes of at least 1Mi, and a per-device limit's key is a device index or a GPU/MIG UUID, as the
driver's MpsPerDevicePinnedMemoryLimit.Normalize requires when it prepares the device.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any, Callable, Mapping

from webhook.model.errors import PolicyCompileError
from webhook.model.quantity import parse_quantity

API_VERSION = "resource.nvidia.com/v1beta1"
DRIVER = "gpu.nvidia.com"
GPU_CONFIG, MIG_CONFIG = "GpuConfig", "MigDeviceConfig"
TIME_SLICING, MPS = "TimeSlicing", "MPS"
INTERVALS = ("Default", "Short", "Medium", "Long")
MPS_FIELDS = frozenset({"defaultActiveThreadPercentage", "defaultPinnedDeviceMemoryLimit", "defaultPerDevicePinnedMemoryLimit"})
# which config kind a device class's devices take (the driver's DeviceClasses select by device type)
KIND_FOR_CLASS = {"gpu.nvidia.com": GPU_CONFIG, "mig.nvidia.com": MIG_CONFIG}
FEATURE_GATE = {TIME_SLICING: "TimeSlicingSettings", MPS: "MPSSupport"}
MEBIBYTE = 2**20
DEVICE_INDEX = re.compile(r"0|[1-9][0-9]*")
DEVICE_UUID = re.compile(r"(GPU|MIG)-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def default_kind(device_class: str) -> str:
    return KIND_FOR_CLASS.get(device_class, GPU_CONFIG)


def check_kind(kind: str, device_class: str, field: str) -> None:
    expected = KIND_FOR_CLASS.get(device_class)
    if expected and kind != expected:
        raise PolicyCompileError(field, f"{kind} does not apply to {device_class} devices: the driver refuses it when "
                                        f"it prepares the device; use {expected}")
    if kind not in (GPU_CONFIG, MIG_CONFIG):
        raise PolicyCompileError(field, f"{kind!r} is not a sharing config of NVIDIA's driver ({GPU_CONFIG}, {MIG_CONFIG})")


def check_sharing(kind: str, sharing: Mapping[str, Any], field: str) -> None:
    """As the driver's strict decoder and Validate() would, so that a bad config fails at load, not at prepare."""
    strategy = sharing.get("strategy")
    allowed = {"strategy", "mpsConfig"} | ({"timeSlicingConfig"} if kind == GPU_CONFIG else set())
    for key in sharing:
        if key not in allowed:
            why = " (time-slicing cannot be configured on a MIG device)" if key == "timeSlicingConfig" else ""
            raise PolicyCompileError(f"{field}.{key}", f"{kind}.sharing has no field {key!r}{why}")
    if strategy not in (TIME_SLICING, MPS):
        raise PolicyCompileError(f"{field}.strategy", f"{strategy!r}: the driver knows {TIME_SLICING} and {MPS}")
    for key, owner in (("timeSlicingConfig", TIME_SLICING), ("mpsConfig", MPS)):
        if key in sharing and strategy != owner:
            raise PolicyCompileError(f"{field}.{key}", f"only allowed with strategy {owner}, the strategy is {strategy}")
    _CHECKS[strategy](sharing, field)


def _time_slicing(sharing: Mapping[str, Any], field: str) -> None:
    config = sharing.get("timeSlicingConfig") or {}
    for key in config:
        if key != "interval":
            raise PolicyCompileError(f"{field}.timeSlicingConfig.{key}", "TimeSlicingConfig has only 'interval'")
    if "interval" in config and config["interval"] not in INTERVALS:
        raise PolicyCompileError(f"{field}.timeSlicingConfig.interval",
                                 f"{config['interval']!r}: one of {', '.join(INTERVALS)}")


def _mps(sharing: Mapping[str, Any], field: str) -> None:
    config = sharing.get("mpsConfig") or {}
    for key in config:
        if key not in MPS_FIELDS:
            raise PolicyCompileError(f"{field}.mpsConfig.{key}", f"MpsConfig has no field {key!r} ({', '.join(sorted(MPS_FIELDS))})")
    percentage = config.get("defaultActiveThreadPercentage")
    if percentage is not None and (not isinstance(percentage, int) or isinstance(percentage, bool) or not 0 <= percentage <= 100):
        raise PolicyCompileError(f"{field}.mpsConfig.defaultActiveThreadPercentage", f"{percentage!r}: an integer from 0 to 100")
    if "defaultPinnedDeviceMemoryLimit" in config:
        _pinned_limit(config["defaultPinnedDeviceMemoryLimit"], f"{field}.mpsConfig.defaultPinnedDeviceMemoryLimit")
    for device, limit in (config.get("defaultPerDevicePinnedMemoryLimit") or {}).items():
        where = f"{field}.mpsConfig.defaultPerDevicePinnedMemoryLimit.{device}"
        if not (DEVICE_INDEX.fullmatch(str(device)) or DEVICE_UUID.fullmatch(str(device))):
            raise PolicyCompileError(where, f"{device!r} names no device: the driver takes a device index (0, 1, ...) "
                                            "or a GPU-/MIG- UUID")
        _pinned_limit(limit, where)


def _pinned_limit(value: Any, field: str) -> None:
    """The driver passes MPS the limit in whole megabytes and refuses one that rounds down to none."""
    if positive_quantity(value, field) < MEBIBYTE:
        raise PolicyCompileError(field, f"{value!r} is under 1Mi: the driver refuses a pinned-memory limit below one "
                                        "megabyte")


def positive_quantity(value: Any, field: str) -> Fraction:
    """A quantity a policy field gives, refused (naming the field) unless it parses and is above zero."""
    try:
        amount = parse_quantity(value)
    except ValueError as exc:
        raise PolicyCompileError(field, str(exc)) from None
    if amount <= 0:
        raise PolicyCompileError(field, f"must be more than zero, got {value!r}")
    return amount


_CHECKS: dict[str, Callable[[Mapping[str, Any], str], None]] = {TIME_SLICING: _time_slicing, MPS: _mps}
