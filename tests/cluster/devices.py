"""The devices of the simulated GPU pool, published as NVIDIA's DRA driver (k8s-dra-driver-gpu, v25.x)
publishes them: one ResourceSlice per node and driver, pool named after the node, devices named `gpu-<minor>`
and `gpu-<minor>-mig-<gi profile id>-<placement start>-<placement size>`, attributes in the driver's domain
(`type`, `uuid`, `productName`, `brand`, `architecture`, `cudaComputeCapability`, `driverVersion`,
`cudaDriverVersion`, `pcieBusID`, `addressingMode`; MIG devices add `profile` and `parentUUID`), capacity
`memory` (MIG devices add multiprocessors, engines and `memorySlice<i>`). The DeviceClasses are those of the
driver's chart, `gpu.nvidia.com` with `extendedResourceName: nvidia.com/gpu` as v25.12 sets it where
`resource.k8s.io/v1` is served."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

DRIVER = "gpu.nvidia.com"
DRIVER_VERSION = "580.95.5"
CUDA_DRIVER_VERSION = "13.0.0"


@dataclass(frozen=True)
class GpuModel:
    product_name: str
    architecture: str
    compute_capability: str
    memory_mib: int


T4 = GpuModel("Tesla T4", "Turing", "7.5.0", 15360)
A100_40 = GpuModel("NVIDIA A100-PCIE-40GB", "Ampere", "8.0.0", 40960)
A100_80 = GpuModel("NVIDIA A100 80GB PCIe", "Ampere", "8.0.0", 81920)
H100 = GpuModel("NVIDIA H100 PCIe", "Hopper", "9.0.0", 81559)


@dataclass(frozen=True)
class MigProfile:
    """One MIG profile as NVML names it, with its GPU-instance profile id, placement size, memory and SMs."""
    name: str
    gi_profile_id: int
    size: int
    memory_mib: int
    multiprocessors: int


A100_40_1G5GB = MigProfile("1g.5gb", 19, 1, 4864, 14)
A100_40_3G20GB = MigProfile("3g.20gb", 9, 4, 19968, 42)
H100_1G10GB = MigProfile("1g.10gb", 19, 1, 9856, 16)
H100_3G40GB = MigProfile("3g.40gb", 9, 4, 40192, 60)


def _uuid(kind: str, node: str, name: str) -> str:
    return f"{kind}-{uuid.uuid5(uuid.NAMESPACE_URL, f'{node}/{name}')}"


def _common(model: GpuModel, bus: str) -> dict[str, Any]:
    return {
        "productName": {"string": model.product_name},
        "brand": {"string": "Nvidia"},
        "architecture": {"string": model.architecture},
        "cudaComputeCapability": {"version": model.compute_capability},
        "driverVersion": {"version": DRIVER_VERSION},
        "cudaDriverVersion": {"version": CUDA_DRIVER_VERSION},
        "pcieBusID": {"string": bus},
        "addressingMode": {"string": "None"},
    }


def gpu_device(node: str, minor: int, model: GpuModel) -> dict[str, Any]:
    name = f"gpu-{minor}"
    attributes = {"type": {"string": "gpu"}, "uuid": {"string": _uuid("GPU", node, name)},
                  **_common(model, f"0000:{0x17 + minor:02x}:00.0")}
    return {"name": name, "attributes": attributes, "capacity": {"memory": {"value": f"{model.memory_mib}Mi"}}}


def mig_devices(node: str, minor: int, model: GpuModel, profile: MigProfile, count: int) -> list[dict[str, Any]]:
    parent = _uuid("GPU", node, f"gpu-{minor}")
    devices = []
    for index in range(count):
        start = index * profile.size
        name = f"gpu-{minor}-mig-{profile.gi_profile_id}-{start}-{profile.size}"
        attributes = {"type": {"string": "mig"}, "uuid": {"string": _uuid("MIG", node, name)},
                      "parentUUID": {"string": parent}, "profile": {"string": profile.name},
                      **_common(model, f"0000:{0x17 + minor:02x}:00.0")}
        capacity = {"memory": {"value": f"{profile.memory_mib}Mi"},
                    "multiprocessors": {"value": str(profile.multiprocessors)},
                    "copyEngines": {"value": str(profile.size)}, "decoders": {"value": "1" if profile.size > 1 else "0"},
                    "encoders": {"value": "0"}, "jpegEngines": {"value": "0"}, "ofaEngines": {"value": "0"}}
        for slot in range(start, start + profile.size):
            capacity[f"memorySlice{slot}"] = {"value": "1"}
        devices.append({"name": name, "attributes": attributes, "capacity": capacity})
    return devices


def node_devices() -> dict[str, list[dict[str, Any]]]:
    """Each GPU node of tests.cluster.control.DEFAULT_NODES with the devices its driver would publish."""
    return {
        # as many GPUs as such servers carry (HGX A100/H100: 8; T4 inference servers: 4), so that the whole
        # suite's running pods never exhaust the pool and leave a later test's pod Pending
        "gpu-t4-0": [gpu_device("gpu-t4-0", i, T4) for i in range(4)],
        "gpu-a100-40-0": [gpu_device("gpu-a100-40-0", i, A100_40) for i in range(8)],
        "gpu-a100-80-0": [gpu_device("gpu-a100-80-0", i, A100_80) for i in range(8)],
        "gpu-h100-0": [gpu_device("gpu-h100-0", i, H100) for i in range(8)],
        # MIG-enabled GPUs publish their MIG devices, not themselves
        "gpu-a100-mig-0": (mig_devices("gpu-a100-mig-0", 0, A100_40, A100_40_1G5GB, 7)
                           + mig_devices("gpu-a100-mig-0", 1, A100_40, A100_40_3G20GB, 2)),
        "gpu-h100-mig-0": (mig_devices("gpu-h100-mig-0", 0, H100, H100_1G10GB, 7)
                           + mig_devices("gpu-h100-mig-0", 1, H100, H100_3G40GB, 2)),
    }


def resource_slices() -> list[dict[str, Any]]:
    return [{
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{DRIVER}"},
        "spec": {"driver": DRIVER, "nodeName": node, "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                 "devices": devices},
    } for node, devices in node_devices().items()]


def device_classes() -> list[dict[str, Any]]:
    def device_class(name: str, device_type: str, extended: str | None = None) -> dict[str, Any]:
        spec: dict[str, Any] = {"selectors": [{"cel": {"expression":
            f"device.driver == '{DRIVER}' && device.attributes['{DRIVER}'].type == '{device_type}'"}}]}
        if extended:
            spec["extendedResourceName"] = extended
        return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name}, "spec": spec}
    return [device_class("gpu.nvidia.com", "gpu", "nvidia.com/gpu"), device_class("mig.nvidia.com", "mig"),
            device_class("vfio.gpu.nvidia.com", "vfio")]
