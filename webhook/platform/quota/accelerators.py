"""Extended resources that look like accelerators but that the quota does not count.

A device plugin the platform team has not listed (a new vendor, a renamed time-sliced resource such as
nvidia.com/gpu.shared) would otherwise let a pod take GPUs past the profile's quota. In Enforce mode
such a pod is refused with a message that says what to list; names the policy counts or allows pass.
"""

from __future__ import annotations

import fnmatch
from typing import Any, Iterable, Mapping, Protocol

from webhook.model.quickinit import frozen_dataclass


class Counted(Protocol):
    def weight(self, name: str) -> Any: ...  # settings.WeightTable: None when the quota does not count it

# resource-name patterns (fnmatch) of the accelerator device plugins in use on Kubernetes
DEFAULT_PATTERNS = ("*/gpu", "*/gpu.*", "*/gpu-*", "*/*-gpu", "*/mig-*", "*/vgpu*", "gpu.intel.com/*",
                    "habana.ai/*", "aws.amazon.com/neuron*", "google.com/tpu*", "xilinx.com/*", "amd.com/*",
                    "qualcomm.com/qaic*", "tenstorrent.com/*")
# DRA DeviceClass names that look like accelerators: NVIDIA's and AMD's classes (gpu., mig., vfio.gpu.) and those of
# drivers to come; NVIDIA's compute-domain classes (IMEX channels, no GPUs) match none of them
DEFAULT_CLASS_PATTERNS = ("*gpu*", "mig.*", "*.mig.*", "vfio.*", "*tpu*", "*neuron*", "*gaudi*", "*habana*")
# KEP-5004: with DRAExtendedResource on, the scheduler serves this resource name for every DeviceClass <name>
DEVICE_CLASS_RESOURCE_PREFIX = "deviceclass.resource.kubernetes.io/"


@frozen_dataclass
class AcceleratorRule:
    patterns: tuple[str, ...]
    allowed: frozenset[str]  # names that may pass uncounted (not GPUs, or counted elsewhere)
    class_patterns: tuple[str, ...] = DEFAULT_CLASS_PATTERNS  # DeviceClass names

    def unknown(self, names: Iterable[str], counted: Counted) -> list[str]:
        """Extended resources a pod asks for that look like accelerators and are not counted."""
        out = []
        for name in names:
            if name in self.allowed or counted.weight(name) is not None:
                continue
            if name.startswith(DEVICE_CLASS_RESOURCE_PREFIX) and self._gpu_like_class(name[len(DEVICE_CLASS_RESOURCE_PREFIX):]):
                out.append(name)  # any DeviceClass by its KEP-5004 name: judged as that class
            elif any(fnmatch.fnmatchcase(name, pattern) for pattern in self.patterns):
                out.append(name)
        return sorted(set(out))

    def unknown_classes(self, classes: Iterable[str], counted: Counted) -> list[str]:
        """DeviceClasses a claim or template asks for that look like accelerators and are not counted."""
        return sorted({c for c in classes if c not in self.allowed and counted.weight(c) is None
                       and self._gpu_like_class(c)})

    def _gpu_like_class(self, name: str) -> bool:
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in self.class_patterns)


def pod_resource_names(pod: Mapping[str, Any]) -> set[str]:
    """Every extended resource any container of the pod requests or limits (native and plain ones)."""
    spec = pod.get("spec") or {}
    names: set[str] = set()
    for key in ("containers", "initContainers", "ephemeralContainers"):
        for container in spec.get(key) or ():
            resources = container.get("resources") or {}
            for section in ("limits", "requests"):
                for n in resources.get(section) or {}:  # a plain loop: most sections hold no such name
                    if "/" in n and not n.startswith("kubernetes.io/"):
                        names.add(n)
    return names


def requested_classes(spec: Mapping[str, Any] | None) -> set[str]:
    """Every deviceClassName of a ResourceClaimSpec's requests and their firstAvailable alternatives
    (v1 and v1beta2 under `exactly`, v1beta1 on the request itself)."""
    names: set[str] = set()
    for request in ((spec or {}).get("devices") or {}).get("requests") or ():
        if not isinstance(request, Mapping):
            continue
        exactly = request.get("exactly")
        for part in [exactly if isinstance(exactly, Mapping) else request, *(request.get("firstAvailable") or ())]:
            if isinstance(part, Mapping) and part.get("deviceClassName"):
                names.add(str(part["deviceClassName"]))
    return names


def unknown_class_message(classes: list[str]) -> str:
    listed = ", ".join(classes)
    return (f"device class {listed} looks like an accelerator that the profile quota does not count, so it would "
            f"escape the GPU limit; ask the platform team to list it in the ProfileQuota (spec.gpus.deviceClasses "
            f"with its weight, or in spec.gpus.unknownAccelerators.allowed if it is not a GPU)")


def unknown_message(names: list[str], field: str) -> str:
    listed = ", ".join(names)
    return (f"{listed} looks like an accelerator that the profile quota does not count, so it would escape "
            f"the GPU limit; ask the platform team to list it in the ProfileQuota ({field}: in legacyResources "
            f"with its weight, or in unknownAccelerators.allowed if it is not a GPU)")
