"""MutatingAdmissionPolicy against the in-tree plugin: ApplyConfiguration and JSONPatch mutations loaded into the
real API server and into Quartermaster, the same pods created; the object the API server would store is the one
Quartermaster's patch makes (the API server's defaults for fields a mutation added aside)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cluster.kube import Kube
from tests.cluster.map_oracle import mutating_policy, mutation_differences, pod

pytestmark = [pytest.mark.cluster, pytest.mark.oracle, pytest.mark.xdist_group("cluster")]

POLICIES = [
    mutating_policy("map-label", "ApplyConfiguration",
                    "Object{metadata: Object.metadata{labels: {'quartermaster.dev/mutated': 'yes'}}}"),
    mutating_policy("map-no-escalation", "ApplyConfiguration",
                    "Object{spec: Object.spec{containers: object.spec.containers.map(c, Object.spec.containers{"
                    "name: c.name, securityContext: Object.spec.containers.securityContext{allowPrivilegeEscalation: false}})}}"),
    mutating_policy("map-tolerations", "ApplyConfiguration",
                    "Object{spec: Object.spec{tolerations: [Object.spec.tolerations{key: 'gpu', operator: 'Exists', "
                    "effect: 'NoSchedule'}]}}"),
    mutating_policy("map-sidecar", "JSONPatch",
                    "[JSONPatch{op: 'add', path: '/spec/containers/-', value: Object.spec.containers{name: 'sidecar', "
                    "image: 'busybox:1.36', args: ['sleep', 'infinity']}}]"),
    mutating_policy("map-escaped-label", "JSONPatch",
                    "[JSONPatch{op: 'add', path: '/metadata/labels/' + jsonpatch.escapeKey('example.com/team'), "
                    "value: 'ml'}]"),
    mutating_policy("map-plain-or-value", "JSONPatch",
                    "object.metadata.labels.orValue({}).size() > 2 ? [] : [JSONPatch{op: 'add', "
                    "path: '/metadata/annotations', value: {'labels': string(object.metadata.labels.size())}}]",
                    matchConditions=[{"name": "no-annotations", "expression": "!has(object.metadata.annotations)"}]),
]

PODS = [
    pod("plain", metadata={"labels": {"app": "web"}}),
    pod("two", containers=[{"name": "app", "image": "nginx:1.27"},
                           {"name": "log", "image": "busybox:1.36", "securityContext": {"runAsNonRoot": True}}],
        tolerations=[{"key": "spot", "operator": "Exists"}], metadata={"labels": {"app": "web", "tier": "a"}}),
    pod("annotated", metadata={"labels": {"app": "web"}, "annotations": {"owner": "jdoe"}}),
]


def test_mutating_policies_store_what_quartermaster_makes(admin: Kube, tmp_path: Path) -> None:
    documents = [d for policy in POLICIES for d in policy]
    names = [policy[0]["metadata"]["name"] for policy in POLICIES]
    objects = [(name, p) for name in names for p in PODS]
    differences = mutation_differences(admin, tmp_path, documents, objects)
    agree = [n for n, problems in differences.items() if not problems]
    print(f"\nMAP: {len(differences)} cases, {len(agree)} agree")
    assert len(differences) == len(objects)
    failed = {n: p for n, p in differences.items() if p}
    assert not failed, "\n".join(f"{n}: {'; '.join(p)}" for n, p in failed.items())


def test_an_apply_configuration_setting_an_atomic_list_is_refused(admin: Kube, tmp_path: Path) -> None:
    """The API server refuses an ApplyConfiguration that sets an atomic list (the tolerations the user wrote would
    silently go); Quartermaster replaced the list and admitted."""
    documents = mutating_policy("map-atomic-args", "ApplyConfiguration",
                                "Object{spec: Object.spec{containers: [Object.spec.containers{name: 'app', "
                                "args: ['--safe']}]}}")
    differences = mutation_differences(admin, tmp_path, documents, [("map-atomic-args", pod("atomic"))])
    assert differences == {"map-atomic-args atomic": []}
