"""The API resources live mode reads and writes: where each kind lives in the REST API."""

from __future__ import annotations


from webhook.model.cluster import NAMESPACE, POD, PROFILE, PVC, RESOURCE_CLAIM, RESOURCE_CLAIM_TEMPLATE
from webhook.model.quickinit import frozen_dataclass
from webhook.reports.report_format import OPENREPORTS, WGPOLICY, ReportFormat


@frozen_dataclass
class ResourceType:
    kind: str
    group: str  # "" for the core API (/api/v1)
    version: str
    plural: str
    namespaced: bool
    optional: bool = False  # a CRD that may not be installed (Kubeflow Profiles): absent is not an error

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def core(self) -> bool:
        return not self.group

    def __str__(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural


NAMESPACES = ResourceType(NAMESPACE, "", "v1", "namespaces", namespaced=False)
PODS = ResourceType(POD, "", "v1", "pods", namespaced=True)
PVCS = ResourceType(PVC, "", "v1", "persistentvolumeclaims", namespaced=True)
RESOURCE_QUOTAS = ResourceType("ResourceQuota", "", "v1", "resourcequotas", namespaced=True)
RESOURCE_CLAIMS = ResourceType(RESOURCE_CLAIM, "resource.k8s.io", "v1", "resourceclaims", namespaced=True)
RESOURCE_CLAIM_TEMPLATES = ResourceType(RESOURCE_CLAIM_TEMPLATE, "resource.k8s.io", "v1", "resourceclaimtemplates",
                                        namespaced=True)
PROFILES = ResourceType(PROFILE, "kubeflow.org", "v1", "profiles", namespaced=False, optional=True)
# the owner chain of a notebook pod (Pod -> StatefulSet -> Notebook), whose creator a team profile's
# notebook gets its identity from (NotebookInjection spec.identity); optional: informers tolerate an
# API server or RBAC without them, and the identity is then unknown (refused, never guessed)
STATEFULSETS = ResourceType("StatefulSet", "apps", "v1", "statefulsets", namespaced=True, optional=True)
NOTEBOOKS = ResourceType("Notebook", "kubeflow.org", "v1", "notebooks", namespaced=True, optional=True)


def report_type(fmt: ReportFormat, namespaced: bool) -> ResourceType:
    """Where the reports of this format live: the namespaced kind, or the cluster-scoped one."""
    return ResourceType(fmt.kind_for(namespaced), fmt.group, fmt.version, fmt.plural_for(namespaced), namespaced)


POLICY_REPORTS = report_type(WGPOLICY, namespaced=True)
CLUSTER_POLICY_REPORTS = report_type(WGPOLICY, namespaced=False)
OPEN_REPORTS = report_type(OPENREPORTS, namespaced=True)
CLUSTER_OPEN_REPORTS = report_type(OPENREPORTS, namespaced=False)
EVENTS = ResourceType("Event", "events.k8s.io", "v1", "events", namespaced=True)
LEASES = ResourceType("Lease", "coordination.k8s.io", "v1", "leases", namespaced=True)
CONFIG_MAPS = ResourceType("ConfigMap", "", "v1", "configmaps", namespaced=True)  # the quota ledger (reservations.py)

# What the informers watch: every kind of the ClusterState protocol.
WATCHED = (NAMESPACES, PODS, PVCS, RESOURCE_CLAIMS, RESOURCE_CLAIM_TEMPLATES, PROFILES, STATEFULSETS, NOTEBOOKS)
KNOWN = WATCHED + (RESOURCE_QUOTAS, POLICY_REPORTS, CLUSTER_POLICY_REPORTS, OPEN_REPORTS, CLUSTER_OPEN_REPORTS, EVENTS,
                   LEASES, CONFIG_MAPS)
_BY_KIND = {(r.api_version, r.kind): r for r in KNOWN}


def _plural(kind: str) -> str:
    lower = kind.lower()
    if lower.endswith("y") and lower[-2:-1] not in "aeiou":
        return lower[:-1] + "ies"
    return lower + ("es" if lower.endswith(("s", "x", "ch", "sh")) else "s")


def resource_for(api_version: str, kind: str, namespaced: bool = True) -> ResourceType:
    """The known resource, else the plural Kubernetes would give a CRD kind by default."""
    known = _BY_KIND.get((api_version, kind))
    if known is not None:
        return known
    group, _, version = api_version.rpartition("/")
    return ResourceType(kind, group, version, _plural(kind), namespaced)


def watched(kind: str) -> ResourceType | None:
    return next((r for r in WATCHED if r.kind == kind), None)
