"""Pod Security Standards for what the injection adds: never inject a volume the namespace forbids.

Kubeflow's manifests label profile namespaces `pod-security.kubernetes.io/enforce: baseline`; the
PodSecurity admission plugin runs after the mutating webhooks, so a forbidden volume injected here
would make every notebook pod fail there, with a message about a volume the user never asked for.
Refusing here says what is wrong and who can fix it.
Volume rules from the Pod Security Standards: baseline forbids hostPath; restricted allows only the
volume types listed below.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

ENFORCE_LABEL = "pod-security.kubernetes.io/enforce"
LEVELS = ("privileged", "baseline", "restricted")
RESTRICTED_VOLUMES = frozenset({"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
                                "projected", "secret"})


def enforced_level(namespace: Mapping[str, Any] | None, default: str) -> str:
    labels = ((namespace or {}).get("metadata") or {}).get("labels") or {}
    level = str(labels.get(ENFORCE_LABEL, default))
    # an unknown value is treated as restricted, as the PodSecurity plugin refuses to guess either
    return level if level in LEVELS else "restricted"


def forbidden_volumes(volumes: Iterable[Mapping[str, Any]], level: str) -> list[str]:
    """`name (type)` of each volume the level forbids."""
    out: list[str] = []
    if level == "privileged":
        return out  # forbids no volume: nothing to look at
    for volume in volumes:
        kinds = [k for k in volume if k != "name"]
        for kind in kinds:
            if (level == "baseline" and kind == "hostPath") or (level == "restricted" and kind not in RESTRICTED_VOLUMES):
                out.append(f"{volume.get('name')} ({kind})")
    return out
