"""matchConstraints as the API server evaluates them (scope, subresources, names, exclusions, selectors)."""

from webhook.families.cel.match import MatchResources
from webhook.model.review import AdmissionRequest, GroupVersionKind


def request(kind="Pod", group="", version="v1", resource="pods", namespace="apps", name="p", sub="", op="CREATE",
            labels=None, generate_name=""):
    meta = {"name": name, "labels": labels or {}}
    if generate_name:
        meta = {"generateName": generate_name}
    obj = {"apiVersion": f"{group}/{version}" if group else version, "kind": kind, "metadata": meta}
    return AdmissionRequest(uid="u", kind=GroupVersionKind(group, version, kind), resource=resource, sub_resource=sub,
                            namespace=namespace, name=name if not generate_name else "", operation=op, object=obj,
                            old_object=None, dry_run=False)


def match(**raw) -> MatchResources:
    return MatchResources.parse(raw)


PODS = {"apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"], "operations": ["CREATE"]}


def test_resources_operations_and_subresources():
    m = match(resourceRules=[PODS])
    assert m.matches(request(), None, None)
    assert not m.matches(request(op="UPDATE"), None, None)
    assert not m.matches(request(sub="status"), None, None)
    sub = match(resourceRules=[{**PODS, "resources": ["pods/*"]}])
    assert sub.matches(request(sub="status"), None, None) and not sub.matches(request(), None, None)
    star = match(resourceRules=[{**PODS, "resources": ["*/status"], "apiGroups": ["*"], "operations": ["*"]}])
    assert star.matches(request(sub="status", op="UPDATE"), None, None)


def test_scope_names_and_exclusions():
    cluster = match(resourceRules=[{"apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "operations": ["*"],
                                    "scope": "Cluster"}])
    assert cluster.matches(request(kind="Namespace", resource="namespaces", namespace=""), None, None)
    assert not cluster.matches(request(), None, None)
    named = match(resourceRules=[{**PODS, "resourceNames": ["web"]}])
    assert named.matches(request(name="web"), None, None) and not named.matches(request(name="db"), None, None)
    assert named.matches(request(generate_name="web-"), None, None)  # a generated name by its prefix
    excluded = match(resourceRules=[PODS], excludeResourceRules=[{**PODS, "resourceNames": ["web"]}])
    assert not excluded.matches(request(name="web"), None, None) and excluded.matches(request(name="db"), None, None)


def test_match_policy_equivalent_matches_other_versions():
    rule = {"apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"], "operations": ["CREATE"]}
    beta = request(kind="Deployment", group="apps", version="v1beta1", resource="deployments")
    assert match(resourceRules=[rule]).matches(beta, None, None)
    assert not match(resourceRules=[rule], matchPolicy="Exact").matches(beta, None, None)


def test_selectors():
    m = match(resourceRules=[PODS], namespaceSelector={"matchLabels": {"env": "prod"}},
              objectSelector={"matchExpressions": [{"key": "app", "operator": "Exists"}]})
    prod = {"metadata": {"name": "apps", "labels": {"env": "prod"}}}
    assert m.matches(request(labels={"app": "x"}), None, prod)
    assert not m.matches(request(labels={}), None, prod)
    assert not m.matches(request(labels={"app": "x"}), None, {"metadata": {"name": "apps"}})
    # an unknown namespace has only its name label, as Kyverno treats it
    by_name = match(resourceRules=[PODS], namespaceSelector={"matchLabels": {"kubernetes.io/metadata.name": "apps"}})
    assert by_name.matches(request(), None, None)
    # a Namespace is selected by its own labels
    ns_rule = {"apiGroups": [""], "apiVersions": ["v1"], "resources": ["namespaces"], "operations": ["CREATE"]}
    ns = match(resourceRules=[ns_rule], namespaceSelector={"matchLabels": {"env": "prod"}})
    assert ns.matches(request(kind="Namespace", resource="namespaces", namespace="", labels={"env": "prod"}), None, None)
    assert not MatchResources.parse(None).matches(request(), None, None)  # no matchConstraints: nothing
