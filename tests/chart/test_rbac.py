"""RBAC: what live mode needs (the live-mode issue and docs/live.md), nothing more; the rotation job may touch
only its own objects."""

import pytest

from tests.chart.support import NAMESPACE, VARIANTS, render
from webhook.deploy.crds import generate_crds
from webhook.platform import platform_kinds


def grants(role):
    out = {}
    for rule in role["rules"]:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                key = (group, resource, tuple(rule.get("resourceNames", ())))
                out.setdefault(key, set()).update(rule["verbs"])
    return out


READ = {"get", "list", "watch"}
WRITE = {"create", "update", "patch"}


def test_live_mode_cluster_role():
    role = render().one("ClusterRole", "qm-quartermaster")
    expected = {
        ("", "namespaces", ()): READ, ("", "pods", ()): READ, ("", "persistentvolumeclaims", ()): READ,
        ("resource.k8s.io", "resourceclaims", ()): READ,
        ("resource.k8s.io", "resourceclaimtemplates", ()): READ | {"create"},
        ("kubeflow.org", "profiles", ()): READ,
        ("kubeflow.org", "notebooks", ()): READ, ("apps", "statefulsets", ()): READ,  # a team notebook's creator
        ("", "resourcequotas", ()): READ | WRITE | {"delete"},
        ("wgpolicyk8s.io", "policyreports", ()): READ | WRITE | {"delete"},
        ("wgpolicyk8s.io", "clusterpolicyreports", ()): READ | WRITE | {"delete"},
        ("", "events", ()): {"create", "patch"}, ("events.k8s.io", "events", ()): {"create", "patch"},
    }
    for crd in generate_crds(platform_kinds()):
        expected[(crd.group, crd.plural, ())] = READ
        expected[(crd.group, f"{crd.plural}/status", ())] = {"patch"}  # the Ready condition of policy objects
    assert grants(role) == expected
    assert all("*" not in rule["verbs"] and "*" not in rule["resources"] for rule in role["rules"])


def test_leases_and_the_quota_ledger_only_in_the_release_namespace():
    role = render().one("Role", "qm-quartermaster")
    assert role["metadata"]["namespace"] == NAMESPACE
    assert grants(role) == {("coordination.k8s.io", "leases", ()): {"get", "create", "update"},
                            # the reservation ledger the replicas share (webhook/kube/reservations.py): read, then
                            # created or replaced with a resourceVersion precondition; never listed, watched or deleted
                            ("", "configmaps", ()): {"get", "create", "update"}}
    cluster = render().one("ClusterRole", "qm-quartermaster")
    assert not [r for r in cluster["rules"] if "configmaps" in r["resources"]]  # not in the profiles' namespaces


def test_bindings_point_at_the_service_account():
    rendered = render()
    account = rendered.one("ServiceAccount", "qm-quartermaster")
    assert rendered.one("Deployment")["spec"]["template"]["spec"]["serviceAccountName"] == account["metadata"]["name"]
    for kind in ("ClusterRoleBinding", "RoleBinding"):
        binding = rendered.one(kind, "qm-quartermaster")
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "qm-quartermaster", "namespace": NAMESPACE}]
        assert binding["roleRef"]["name"] == "qm-quartermaster"


def test_rotation_job_reaches_only_its_secret_and_webhooks():
    rendered = render()
    secret = rendered.one("Secret")["metadata"]["name"]
    role = rendered.one("Role", "qm-quartermaster-cert-rotation")
    assert grants(role) == {("", "secrets", (secret,)): {"get", "update", "patch"}}
    cluster = rendered.one("ClusterRole", "qm-quartermaster-cert-rotation")
    names = {c["metadata"]["name"] for c in rendered.objects if c["kind"].endswith("WebhookConfiguration")}
    assert grants(cluster) == {
        ("admissionregistration.k8s.io", "mutatingwebhookconfigurations", tuple(sorted(names))): {"get", "update", "patch"},
        ("admissionregistration.k8s.io", "validatingwebhookconfigurations", tuple(sorted(names))): {"get", "update", "patch"},
    }
    job = rendered.one("CronJob")["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert job["serviceAccountName"] == "qm-quartermaster-cert-rotation"


def test_no_rbac_without_live_mode_or_when_disabled():
    for values in (VARIANTS["standalone"], {"rbac": {"create": False}}):
        names = {o["metadata"]["name"] for o in render(values).objects if o["kind"] in ("ClusterRole", "Role")}
        assert "qm-quartermaster" not in names


def test_policy_objects_are_read_and_marked_for_the_groups_asked():
    from webhook.cli import build_parser

    def rules(values=None):
        rendered = render(values)
        (container,) = rendered.one("Deployment")["spec"]["template"]["spec"]["containers"]
        return rendered.one("ClusterRole", "qm-quartermaster")["rules"], container["args"]

    found, args = rules()
    assert {"apiGroups": ["quartermaster.dev"], "resources": ["deviceclaimrewrites/status", "notebookinjections/status",
                                                              "profilequotas/status", "queueassignments/status"],
            "verbs": ["patch"]} in found
    assert "--policy-objects=quartermaster.dev" in args
    assert build_parser().parse_args(["serve", *[a for a in args if a != "serve"]]).policy_objects == "quartermaster.dev"
    found, args = rules({"live": {"policyObjectGroups": ["quartermaster.dev", "kyverno.io"]}})
    assert {"apiGroups": ["kyverno.io"], "resources": ["clusterpolicies", "policies", "policyexceptions"],
            "verbs": ["get", "list", "watch"]} in found
    assert "--policy-objects=quartermaster.dev,kyverno.io" in args
    found, args = rules({"live": {"policyObjectGroups": []}})
    assert "--policy-objects=none" in args and not [r for r in found if r["apiGroups"] == ["kyverno.io"]]


def _creates(values=None):
    role = render(values).one("ClusterRole", "qm-quartermaster")
    return {(group, resource) for (group, resource, _), verbs in grants(role).items() if "create" in verbs}


# What the webhook may create with its own identity is what a policy can make it create (a generate rule, a
# GeneratingPolicy): the kinds listed in live.generateKinds, the backstop's quotas, reports and Events.
OWN_WRITES = {("", "resourcequotas"), ("wgpolicyk8s.io", "policyreports"), ("wgpolicyk8s.io", "clusterpolicyreports"),
              ("", "events"), ("events.k8s.io", "events")}


def test_generation_is_limited_to_the_kinds_listed_in_values():
    assert _creates() == OWN_WRITES | {("resource.k8s.io", "resourceclaimtemplates")}
    listed = {"live": {"generateKinds": [{"apiGroup": "", "resources": ["configmaps"]},
                                         {"apiGroup": "networking.k8s.io", "resources": ["networkpolicies"]}]}}
    assert _creates(listed) == OWN_WRITES | {("", "configmaps"), ("networking.k8s.io", "networkpolicies")}
    assert _creates({"live": {"generateKinds": []}}) == OWN_WRITES


def test_no_quota_writes_without_the_backstop():
    assert ("", "resourcequotas") not in _creates({"live": {"quotaBackstop": False}})


@pytest.mark.parametrize("entry, field", [
    ({"apiGroup": "", "resources": ["*"]}, "live.generateKinds[0].resources"),
    ({"apiGroup": "", "resources": ["pods/exec"]}, "live.generateKinds[0].resources"),
    ({"apiGroup": "apps"}, "live.generateKinds[0]"),
])
def test_generate_kinds_refuse_wildcards_and_subresources_naming_the_field(entry, field):
    with pytest.raises(Exception, match=field.replace("[", r"\[").replace("]", r"\]")):
        render({"live": {"generateKinds": [entry]}})


def test_exception_namespaces_reach_serve_and_none_by_default():
    from webhook.cli import build_parser

    def args(values=None):
        (container,) = render(values).one("Deployment")["spec"]["template"]["spec"]["containers"]
        return container["args"]

    assert not [a for a in args() if a.startswith("--exception-namespace")]
    given = args({"exceptionNamespaces": ["platform-exceptions", "team-a"]})
    parsed = build_parser().parse_args(["serve", *[a for a in given if a != "serve"]])
    assert parsed.exception_namespaces == ["platform-exceptions", "team-a"]


def test_the_role_grants_what_the_policy_object_feed_watches():
    """Each group a site lists in live.policyObjectGroups: the ClusterRole lets the replicas read exactly the kinds
    the feed watches (webhook/kube/policy_objects.py) and patch their status; every platform kind with a CRD is
    watched, so an applied object is never ignored for want of a line in either list."""
    from webhook.kube.policy_objects import POLICY_RESOURCES

    crds = {(crd.group, crd.plural) for crd in generate_crds(platform_kinds())}
    assert crds <= {(r.group, r.plural) for r in POLICY_RESOURCES}
    groups = sorted({r.group for r in POLICY_RESOURCES})
    role = render({"live": {"policyObjectGroups": groups}}).one("ClusterRole", "qm-quartermaster")
    granted = grants(role)
    for resource in POLICY_RESOURCES:
        assert READ <= granted.get((resource.group, resource.plural, ()), set()), resource
        assert "patch" in granted.get((resource.group, f"{resource.plural}/status", ()), set()), resource
    statuses = {(group, name[:-len("/status")]) for (group, name, _), verbs in granted.items()
                if name.endswith("/status") and group in groups}
    assert statuses == {(r.group, r.plural) for r in POLICY_RESOURCES}


@pytest.mark.parametrize("name", ["wgpolicyk8s", "openreports"])
def test_the_role_grants_the_report_group_the_format_writes(name):
    """policyReports.format: the ClusterRole grants exactly the kinds the writer of that format writes
    (webhook/kube/resources.report_type), none of the other format, and serve is told the format."""
    from webhook.kube.resources import report_type
    from webhook.reports.report_format import REPORT_FORMATS

    values = {"policyReports": {"format": name}}
    granted = grants(render(values).one("ClusterRole", "qm-quartermaster"))
    for fmt in REPORT_FORMATS.values():
        for namespaced in (True, False):
            resource = report_type(fmt, namespaced)
            verbs = granted.get((resource.group, resource.plural, ()), set())
            assert verbs == (READ | WRITE | {"delete"} if fmt.name == name else set()), resource
    (container,) = render(values).one("Deployment")["spec"]["template"]["spec"]["containers"]
    assert f"--report-format={name}" in container["args"]


def test_an_unknown_report_format_is_refused():
    with pytest.raises(Exception, match="policyReports.format must be wgpolicyk8s or openreports"):
        render({"policyReports": {"format": "openreport"}})
