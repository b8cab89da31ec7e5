"""Where each built-in Kubernetes (1.34) kind lives in the API: group, version, plural resource, scope.

Offline paths (`apply`, `test`) have no discovery endpoint to ask, yet policies match on resources
(`pods`, `deployments`) and on scope, and a namespaced object without a namespace lands in `default`.
Unknown kinds (CRDs) get the plural Kubernetes would give them and are taken as namespaced.
"""

from __future__ import annotations

from webhook.model.quickinit import frozen_dataclass


@frozen_dataclass
class APIResource:
    group: str  # "" for the core API
    version: str
    kind: str
    resource: str  # plural, lower case
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


# group/version: (Kind plural namespaced?) triples; "!" marks a cluster-scoped kind
_TABLE = {
    "v1": "Binding bindings|ComponentStatus componentstatuses!|ConfigMap configmaps|Endpoints endpoints|Event events|"
          "LimitRange limitranges|Namespace namespaces!|Node nodes!|PersistentVolume persistentvolumes!|"
          "PersistentVolumeClaim persistentvolumeclaims|Pod pods|PodTemplate podtemplates|"
          "ReplicationController replicationcontrollers|ResourceQuota resourcequotas|Secret secrets|"
          "Service services|ServiceAccount serviceaccounts",
    "apps/v1": "ControllerRevision controllerrevisions|DaemonSet daemonsets|Deployment deployments|"
               "ReplicaSet replicasets|StatefulSet statefulsets",
    "batch/v1": "CronJob cronjobs|Job jobs",
    "autoscaling/v2": "HorizontalPodAutoscaler horizontalpodautoscalers",
    "autoscaling/v1": "HorizontalPodAutoscaler horizontalpodautoscalers",
    "policy/v1": "PodDisruptionBudget poddisruptionbudgets",
    "networking.k8s.io/v1": "Ingress ingresses|IngressClass ingressclasses!|NetworkPolicy networkpolicies|"
                            "IPAddress ipaddresses!|ServiceCIDR servicecidrs!",
    "rbac.authorization.k8s.io/v1": "ClusterRole clusterroles!|ClusterRoleBinding clusterrolebindings!|"
                                    "Role roles|RoleBinding rolebindings",
    "storage.k8s.io/v1": "CSIDriver csidrivers!|CSINode csinodes!|CSIStorageCapacity csistoragecapacities|"
                         "StorageClass storageclasses!|VolumeAttachment volumeattachments!|"
                         "VolumeAttributesClass volumeattributesclasses!",
    "scheduling.k8s.io/v1": "PriorityClass priorityclasses!",
    "node.k8s.io/v1": "RuntimeClass runtimeclasses!",
    "coordination.k8s.io/v1": "Lease leases",
    "discovery.k8s.io/v1": "EndpointSlice endpointslices",
    "events.k8s.io/v1": "Event events",
    "certificates.k8s.io/v1": "CertificateSigningRequest certificatesigningrequests!",
    "admissionregistration.k8s.io/v1": "MutatingWebhookConfiguration mutatingwebhookconfigurations!|"
                                       "ValidatingWebhookConfiguration validatingwebhookconfigurations!|"
                                       "ValidatingAdmissionPolicy validatingadmissionpolicies!|"
                                       "ValidatingAdmissionPolicyBinding validatingadmissionpolicybindings!",
    "apiextensions.k8s.io/v1": "CustomResourceDefinition customresourcedefinitions!",
    "apiregistration.k8s.io/v1": "APIService apiservices!",
    "flowcontrol.apiserver.k8s.io/v1": "FlowSchema flowschemas!|PriorityLevelConfiguration prioritylevelconfigurations!",
    "resource.k8s.io/v1": "DeviceClass deviceclasses!|ResourceClaim resourceclaims|"
                          "ResourceClaimTemplate resourceclaimtemplates|ResourceSlice resourceslices!",
    "authentication.k8s.io/v1": "TokenReview tokenreviews!|SelfSubjectReview selfsubjectreviews!",
    "authorization.k8s.io/v1": "SubjectAccessReview subjectaccessreviews!|LocalSubjectAccessReview "
                               "localsubjectaccessreviews|SelfSubjectAccessReview selfsubjectaccessreviews!",
    "kubeflow.org/v1": "Profile profiles!|Notebook notebooks",
    "kyverno.io/v1": "ClusterPolicy clusterpolicies!|Policy policies",
    "policies.kyverno.io/v1": "ValidatingPolicy validatingpolicies!|MutatingPolicy mutatingpolicies!|"
                              "GeneratingPolicy generatingpolicies!|PolicyException policyexceptions",
    "wgpolicyk8s.io/v1alpha2": "PolicyReport policyreports|ClusterPolicyReport clusterpolicyreports!",
    "openreports.io/v1alpha1": "Report reports|ClusterReport clusterreports!",
    "gateway.networking.k8s.io/v1": "Gateway gateways|GatewayClass gatewayclasses!|HTTPRoute httproutes|"
                                    "GRPCRoute grpcroutes",
}


def _build() -> tuple[dict[tuple[str, str], APIResource], dict[str, APIResource]]:
    by_gvk: dict[tuple[str, str], APIResource] = {}
    by_kind: dict[str, APIResource] = {}
    for api_version, entries in _TABLE.items():
        group, _, version = api_version.rpartition("/")
        for entry in entries.split("|"):
            kind, plural = entry.split()
            resource = APIResource(group, version, kind, plural.rstrip("!"), not plural.endswith("!"))
            by_gvk[(api_version, kind)] = resource
            by_kind.setdefault(kind, resource)
    return by_gvk, by_kind


_BY_GVK, _BY_KIND = _build()


def default_plural(kind: str) -> str:
    """The plural Kubernetes gives a CRD kind unless told otherwise (and that `kubectl` guesses)."""
    lower = kind.lower()
    if lower.endswith("y") and lower[-2:-1] not in ("a", "e", "i", "o", "u"):
        return lower[:-1] + "ies"
    return lower + ("es" if lower.endswith(("s", "x", "ch", "sh")) else "s")


def lookup(api_version: str, kind: str) -> APIResource:
    """The built-in resource of this kind; for another version of a known group/kind, the same scope."""
    found = _BY_GVK.get((api_version, kind))
    group, _, version = api_version.rpartition("/")
    if found is not None:
        return found
    known = _BY_KIND.get(kind)
    if known is not None and known.group == group:
        return APIResource(group, version, kind, known.resource, known.namespaced)
    return APIResource(group, version, kind, default_plural(kind), True)


def is_namespaced(api_version: str, kind: str) -> bool:
    return lookup(api_version, kind).namespaced


def by_resource(group: str, resource: str) -> APIResource | None:
    """The built-in kind served as `resource` in `group` (any version)."""
    for found in _BY_GVK.values():
        if found.group == group and found.resource == resource:
            return found
    return None


# every kind of the table above: what a metric may name a request's kind by (observability/labels.py)
BUILTIN_KINDS = frozenset(_BY_KIND)
