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


@frozen_dataclass
class AcceleratorRule:
    patterns: tuple[str, ...]
    allowed: frozenset[str]  # names that may pass uncounted (not GPUs, or counted elsewhere)

    def unknown(self, names: Iterable[str], counted: Counted) -> list[str]:
        out = []
        for name in names:
            if name in self.allowed or counted.weight(name) is not None:
                continue
            if any(fnmatch.fnmatchcase(name, pattern) for pattern in self.patterns):
                out.append(name)
        return sorted(set(out))


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


def unknown_message(names: list[str], field: str) -> str:
    listed = ", ".join(names)
    return (f"{listed} looks like an accelerator that the profile quota does not count, so it would escape "
            f"the GPU limit; ask the platform team to list it in the ProfileQuota ({field}: in legacyResources "
            f"with its weight, or in unknownAccelerators.allowed if it is not a GPU)")
