"""Kueue admits a workload whose claims use a DeviceClass only when its Configuration maps that class to a
resource (`resources.deviceClassMappings`); any other claim makes the workload Inadmissible, and a queued pod
then stays gated for good. The DRA rewrite turns legacy GPUs into claims on its DeviceClasses, so a
QueueAssignment that queues pods must say which classes Kueue maps (`spec.mappedDeviceClasses`), and every class
the loaded rewrite uses must be among them: otherwise the QueueAssignment is refused at load, naming the classes.
docs/kueue.md shows the Kueue configuration, exercised end to end by tests/cluster/test_kueue.py.
"""

from __future__ import annotations

from typing import Iterator, Sequence

from webhook.model.errors import PolicyCompileError
from webhook.model.policy import CompiledPolicy
from webhook.platform.dra.config import RewriteStrategy
from webhook.platform.dra.mutator import DeviceClaimRewrite
from webhook.platform.queue.policy import QueueAssignment

FIELD = "spec.mappedDeviceClasses"


def unmapped_device_classes(policies: Sequence[CompiledPolicy]) -> Iterator[tuple[CompiledPolicy, PolicyCompileError]]:
    """Each QueueAssignment that queues pods the rewrite gives claims on classes Kueue is not said to map."""
    rewrites = [p for p in policies if isinstance(p, DeviceClaimRewrite)
                and p.config.strategy is not RewriteStrategy.PASSTHROUGH]  # passthrough pods keep their limits
    used = {device.device_class: rewrite.id.name for rewrite in rewrites for device in rewrite.config.devices}
    if not used:
        return
    for policy in policies:
        if not isinstance(policy, QueueAssignment) or policy.spec.workload("v1", "Pod") is None:
            continue
        mapped = policy.spec.mapped_device_classes or frozenset()
        missing = sorted(set(used) - mapped)
        if not missing:
            continue
        named = ", ".join(f"{name} (DeviceClaimRewrite {used[name]})" for name in missing)
        said = "does not say which DeviceClasses Kueue maps" if policy.spec.mapped_device_classes is None \
            else "does not list " + ", ".join(missing)
        yield policy, PolicyCompileError(FIELD, (
            f"{said}: the pods it queues get claims on {named}, and Kueue admits a claim only on a DeviceClass "
            "its Configuration maps (resources.deviceClassMappings), else the pod stays gated for good. Map each "
            f"class there and list it here (docs/kueue.md), or leave Pod out of spec.workloads"))
