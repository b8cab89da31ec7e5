"""The roles and cluster roles a user holds, from the RoleBindings and ClusterRoleBindings in cluster state
(Kyverno's ``roles``/``clusterRoles`` match conditions)."""

from __future__ import annotations

from typing import Any


def _bound(subjects: Any, username: str, groups: tuple[str, ...]) -> bool:
    for subject in subjects or []:
        kind, name = subject.get("kind"), subject.get("name")
        if kind == "User" and name == username:
            return True
        if kind == "Group" and name in groups:
            return True
        if kind == "ServiceAccount" and username == f"system:serviceaccount:{subject.get('namespace')}:{name}":
            return True
    return False


def roles_of(username: str, groups: tuple[str, ...], namespace: str, lookups: Any) -> tuple[tuple[str, ...], tuple[str, ...]]:
    roles: list[str] = []
    cluster_roles: list[str] = []
    try:
        bindings = list(lookups.list("rbac.authorization.k8s.io/v1", "RoleBinding", namespace)) if namespace else []
        cluster_bindings = list(lookups.list("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"))
    except Exception:  # no cluster state (LookupRefused): the user holds no known roles
        return (), ()
    for binding in bindings:
        if _bound(binding.get("subjects"), username, groups):
            ref = binding.get("roleRef") or {}
            if ref.get("kind") == "Role":
                roles.append(f"{namespace}:{ref.get('name')}")
            else:
                cluster_roles.append(str(ref.get("name")))
    for binding in cluster_bindings:
        if _bound(binding.get("subjects"), username, groups):
            cluster_roles.append(str((binding.get("roleRef") or {}).get("name")))
    return tuple(dict.fromkeys(roles)), tuple(dict.fromkeys(cluster_roles))
