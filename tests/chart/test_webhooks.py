"""The webhook registrations: what the API server sends, how long it waits, and what a failure means."""

import copy

import pytest

from tests.chart.support import NAMESPACE, render
from tests.support import review
from webhook.cel import CelCompiler

OPT_OUT = "quartermaster.dev/admission"
POLICY_HOOK = "validate-policy.quartermaster.dev"


def hooks(values=None):
    rendered = render(values)
    configs = {c["kind"]: c for c in rendered.objects if c["kind"].endswith("WebhookConfiguration")}
    return {k: c["webhooks"] for k, c in configs.items()}, rendered


def the_hook(values, kind):
    found, _ = hooks(values)
    assert len(found[kind]) == 1
    return found[kind][0]


def mutate(values=None):
    return the_hook(values, "MutatingWebhookConfiguration")


def validate(values=None):
    return the_named(values, "validate.quartermaster.dev")


def validate_policy(values=None):
    found, _ = hooks(values)
    named = [hook for hook in found.get("ValidatingWebhookConfiguration", []) if hook["name"] == POLICY_HOOK]
    return named[0] if named else None


def the_named(values, name):
    found, _ = hooks(values)
    (hook,) = [hook for hook in found["ValidatingWebhookConfiguration"] if hook["name"] == name]
    return hook


def test_registration_basics():
    found, rendered = hooks()
    service = rendered.one("Service")
    assert [hook["name"] for hook in found["ValidatingWebhookConfiguration"]] == ["validate.quartermaster.dev",
                                                                                   POLICY_HOOK]
    for kind, path in (("MutatingWebhookConfiguration", "/mutate"), ("ValidatingWebhookConfiguration", "/validate")):
        hook = found[kind][0]
        assert hook["sideEffects"] == "NoneOnDryRun"
        assert hook["timeoutSeconds"] == 5
        assert hook["admissionReviewVersions"] == ["v1"]
        assert hook["matchPolicy"] == "Equivalent"
        assert hook["clientConfig"]["service"] == {"name": service["metadata"]["name"], "namespace": NAMESPACE,
                                                   "port": service["spec"]["ports"][0]["port"], "path": path}
        assert hook["name"].count(".") >= 2  # the API server wants a fully qualified name
    assert mutate()["reinvocationPolicy"] == "IfNeeded"
    assert "reinvocationPolicy" not in validate()


def test_timeout_is_configurable_and_bounded():
    assert mutate({"webhooks": {"timeoutSeconds": 12}})["timeoutSeconds"] == 12
    assert validate({"webhooks": {"timeoutSeconds": 12}})["timeoutSeconds"] == 12
    with pytest.raises(Exception, match="timeoutSeconds"):
        render({"webhooks": {"timeoutSeconds": 31}})


def test_failure_policy_per_webhook():
    assert mutate()["failurePolicy"] == "Fail" and validate()["failurePolicy"] == "Fail"
    ignore_mutation = {"webhooks": {"mutate": {"failurePolicy": "Ignore"}}}
    assert mutate(ignore_mutation)["failurePolicy"] == "Ignore"
    assert validate(ignore_mutation)["failurePolicy"] == "Fail"  # quotas stay closed
    assert validate({"webhooks": {"validate": {"failurePolicy": "Ignore"}}})["failurePolicy"] == "Ignore"
    with pytest.raises(Exception, match="failurePolicy"):
        render({"webhooks": {"mutate": {"failurePolicy": "Maybe"}}})


def test_audit_only_fails_open():
    assert mutate({"auditOnly": True})["failurePolicy"] == "Ignore"
    assert validate({"auditOnly": True})["failurePolicy"] == "Ignore"


def test_namespace_selector_excludes_system_own_and_opted_out_namespaces():
    for hook in (mutate(), validate()):
        expressions = hook["namespaceSelector"]["matchExpressions"]
        names = next(e for e in expressions if e["key"] == "kubernetes.io/metadata.name")
        assert names["operator"] == "NotIn" and {"kube-system", NAMESPACE} <= set(names["values"])
        opt_out = next(e for e in expressions if e["key"] == OPT_OUT)
        assert opt_out == {"key": OPT_OUT, "operator": "NotIn", "values": ["disabled"]}
        assert "objectSelector" not in hook  # a pod's own labels must not let it escape its quota


def test_namespace_selector_extends():
    values = {"webhooks": {"excludedNamespaces": ["kube-system", "cert-manager"],
                           "namespaceSelector": {"matchLabels": {"app.kubernetes.io/part-of": "kubeflow-profile"}}}}
    selector = validate(values)["namespaceSelector"]
    names = next(e for e in selector["matchExpressions"] if e["key"] == "kubernetes.io/metadata.name")
    assert set(names["values"]) == {"kube-system", "cert-manager", NAMESPACE}
    assert selector["matchLabels"] == {"app.kubernetes.io/part-of": "kubeflow-profile"}


def rules_of(hook):
    return {(group, resource): set(rule["operations"]) for rule in hook["rules"]
            for group in rule["apiGroups"] for resource in rule["resources"]}


def test_rules_limited_to_what_the_policies_need():
    assert rules_of(mutate()) == {("", "pods"): {"CREATE"}}
    live = rules_of(validate({"webhooks": {"validate": {"controllers": False, "notebookIdentity": False}}}))
    assert live == {("", "pods"): {"CREATE", "UPDATE"}, ("", "persistentvolumeclaims"): {"CREATE", "UPDATE"},
                    ("resource.k8s.io", "resourceclaims"): {"CREATE", "UPDATE"},
                    ("resource.k8s.io", "resourceclaimtemplates"): {"CREATE", "UPDATE"}}
    for hook in (mutate(), validate()):
        assert all(rule["scope"] == "Namespaced" and "*" not in rule["resources"] for rule in hook["rules"])


def test_standalone_state_also_sees_deletes():
    standalone = rules_of(validate({"clusterState": "standalone", "replicaCount": 1}))
    assert set(standalone) == set(rules_of(validate()))
    # deletions matter to what is counted; a controller is checked, never counted
    # (kubectl debug of a notebook pod is an UPDATE of its pods/ephemeralcontainers subresource)
    assert all(ops == ({"CREATE", "UPDATE"} if group in ("apps", "batch", "kubeflow.org")
                       else {"UPDATE"} if resource == "pods/ephemeralcontainers" else {"CREATE", "UPDATE", "DELETE"})
               for (group, resource), ops in standalone.items())
    assert rules_of(mutate({"clusterState": "standalone", "replicaCount": 1})) == {("", "pods"): {"CREATE"}}


def test_webhooks_can_be_turned_off_one_by_one():
    found, _ = hooks({"webhooks": {"mutate": {"enabled": False}}})
    assert "MutatingWebhookConfiguration" not in found and "ValidatingWebhookConfiguration" in found


# --- matchConditions, evaluated with a CEL engine against requests as the API server builds them -------
CEL = CelCompiler()


def pod(limits=None, labels=None, claims=None, init_limits=None, volumes=None):
    spec = {"containers": [{"name": "main", "image": "busybox", **({"resources": {"limits": limits}} if limits else {})}]}
    if init_limits:
        spec["initContainers"] = [{"name": "init", "image": "busybox", "resources": {"limits": init_limits}}]
    if claims:
        spec["resourceClaims"] = claims
    if volumes:
        spec["volumes"] = volumes
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "alice", **({"labels": labels} if labels else {})},
            "spec": spec}


def pvc(size="10Gi", labels=None):
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data", "namespace": "alice", **({"labels": labels} if labels else {})},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}}}


CLAIM = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "gpu", "namespace": "alice"},
         "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}}


def sent(hook, obj, operation="CREATE", old=None):
    """Would the API server send this request to the webhook (all matchConditions true)?"""
    request = review(obj if operation != "DELETE" else None, operation, old=old, namespace="alice")["request"]
    activation = {"object": request["object"], "oldObject": request["oldObject"], "request": request}
    return all(CEL.compile(c["expression"])(activation) for c in hook.get("matchConditions", []))


def test_mutation_sees_gpu_and_notebook_pods_only():
    hook = mutate()
    assert sent(hook, pod(limits={"nvidia.com/gpu": "1"}))
    assert sent(hook, pod(limits={"nvidia.com/mig-1g.10gb": "1"}))
    assert sent(hook, pod(init_limits={"nvidia.com/gpu": "1"}))
    assert sent(hook, pod(claims=[{"name": "gpu", "resourceClaimName": "gpu"}]))
    assert sent(hook, pod(labels={"notebook-name": "lab"}))
    assert not sent(hook, pod(limits={"cpu": "2", "memory": "1Gi"}))
    assert not sent(hook, pod(labels={"app": "web"}))


def test_validation_sees_quota_relevant_objects():
    hook = validate({"clusterState": "standalone", "replicaCount": 1})
    assert sent(hook, pod(limits={"nvidia.com/gpu": "2"}))
    assert sent(hook, pod(volumes=[{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}]))
    assert not sent(hook, pod(labels={"notebook-name": "lab"}))  # a CPU notebook uses no quota
    assert not sent(hook, pod(limits={"cpu": "1"}))
    assert sent(hook, pod(limits={"cpu": "1"}), "DELETE", old=pod(limits={"cpu": "1"}))
    assert sent(hook, pvc())
    assert sent(hook, pvc("20Gi"), "UPDATE", old=pvc("10Gi"))  # a resize
    assert not sent(hook, pvc(labels={"team": "a"}), "UPDATE", old=pvc())  # a label: nothing to count
    assert sent(hook, pvc(), "DELETE", old=pvc())
    assert sent(hook, CLAIM)


def test_relevance_filter_follows_values():
    values = {"webhooks": {"relevanceFilter": {"gpuResourcePrefixes": ["amd.com/"], "podLabels": ["jupyter"],
                                               "anyExtendedResource": False}}}
    hook = mutate(values)
    assert sent(hook, pod(limits={"amd.com/gpu": "1"})) and sent(hook, pod(labels={"jupyter": "x"}))
    assert not sent(hook, pod(limits={"nvidia.com/gpu": "1"}))
    off = {"webhooks": {"relevanceFilter": {"enabled": False}}}
    assert "matchConditions" not in mutate(off) and "matchConditions" not in validate(off)


def test_relevance_filter_turns_off_per_webhook():
    """Validating policies that must see every pod: the validating webhook gets every pod, the mutating one
    still only GPU pods and notebooks (a plain pod costs the API server one webhook call)."""
    plain = pod(limits={"cpu": "1"})
    every_validated = {"webhooks": {"validate": {"relevanceFilter": False}}}
    assert sent(validate(every_validated), plain) and not sent(mutate(every_validated), plain)
    assert sent(mutate(every_validated), pod(limits={"nvidia.com/gpu": "1"}))
    every_mutated = {"webhooks": {"mutate": {"relevanceFilter": False}}}
    assert sent(mutate(every_mutated), plain) and not sent(validate(every_mutated), plain)
    # a release's values from before the key existed (helm upgrade --reuse-values) keep the filter
    assert not sent(validate({"webhooks": {"validate": {"relevanceFilter": None}}}), plain)
    # the overall switch wins over a webhook's own
    off = {"webhooks": {"relevanceFilter": {"enabled": False}, "validate": {"relevanceFilter": True}}}
    assert sent(validate(off), plain) and sent(mutate(off), plain)


def test_every_accelerator_reaches_the_quota_by_default():
    """AMD GPUs are counted and unknown accelerators refused by the quota: the filter must not hide them."""
    for hook in (mutate(), validate({"clusterState": "standalone", "replicaCount": 1})):
        assert sent(hook, pod(limits={"amd.com/gpu": "1"}))
        assert sent(hook, pod(limits={"habana.ai/gaudi": "1"}))
        assert not sent(hook, pod(limits={"cpu": "1", "memory": "1Gi", "hugepages-2Mi": "1Gi"}))


def test_extra_match_conditions_are_added():
    extra = {"name": "not-kubeflow-system", "expression": "request.userInfo.username != 'system:serviceaccount:kubeflow:x'"}
    hook = validate({"webhooks": {"validate": {"matchConditions": [extra]}}})
    assert hook["matchConditions"][-1] == extra
    assert len({c["name"] for c in hook["matchConditions"]}) == len(hook["matchConditions"]) <= 64


def test_match_conditions_never_error_on_unusual_objects():
    """An erroring matchCondition applies the failurePolicy (Fail: the request is refused), so odd shapes must evaluate."""
    bare = pod()
    del bare["metadata"]["namespace"]
    odd = copy.deepcopy(bare)
    odd["spec"]["containers"][0]["resources"] = {}
    for hook in (mutate(), validate()):
        for obj in (bare, odd, pvc(), CLAIM):
            sent(hook, obj)  # no CelError
        no_resources = pvc()
        del no_resources["spec"]["resources"]
        sent(hook, no_resources, "UPDATE", old=pvc())


def test_controllers_reach_the_validating_webhook_unless_turned_off():
    rules = {(r["apiGroups"][0], resource) for r in validate()["rules"] for resource in r["resources"]}
    assert {("apps", "deployments"), ("apps", "statefulsets"), ("batch", "jobs"), ("batch", "cronjobs"),
            ("kubeflow.org", "notebooks")} <= rules
    off = validate({"webhooks": {"validate": {"controllers": False, "notebookIdentity": False}}})["rules"]
    assert {g for r in off for g in r["apiGroups"]} == {"", "resource.k8s.io"}
    assert all("CREATE" in r["operations"] and "DELETE" not in r["operations"] for r in validate()["rules"]
               if r["apiGroups"][0] in ("apps", "batch", "kubeflow.org"))


def test_notebook_identity_reaches_the_validating_webhook_even_without_controllers():
    """NotebookInjection's validate phase: Notebooks and StatefulSets (who wrote them), and every pod that reads
    a Secret (only a notebook's refresher may read a credentials Secret)."""
    hook = validate({"webhooks": {"validate": {"controllers": False}}})
    assert {("apps", "statefulsets"): {"CREATE", "UPDATE"}, ("kubeflow.org", "notebooks"): {"CREATE", "UPDATE"}}.items() \
        <= rules_of(hook).items()
    assert ("apps", "deployments") not in rules_of(hook)
    for values in ({}, {"webhooks": {"validate": {"controllers": False}}}):  # kubectl debug of a notebook pod
        assert rules_of(validate(values))[("", "pods/ephemeralcontainers")] == {"UPDATE"}
    assert not sent(hook, pod(labels={"notebook-name": "lab"}))
    for reads in ({"volumes": [{"name": "s", "secret": {"secretName": "oidc-bob"}}]},
                  {"volumes": [{"name": "s", "projected": {"sources": [{"secret": {"name": "oidc-bob"}}]}}]}):
        reader = pod()
        reader["spec"].update(reads)
        assert sent(hook, reader)
        assert not sent(validate({"webhooks": {"validate": {"notebookIdentity": False}}}), reader)
    for env in ({"envFrom": [{"secretRef": {"name": "oidc-bob"}}]},
                {"env": [{"name": "T", "valueFrom": {"secretKeyRef": {"name": "oidc-bob", "key": "t"}}}]}):
        for where in ("containers", "initContainers"):
            reader = pod()
            reader["spec"][where] = [{"name": "c", "image": "busybox:1.36", **env}]
            assert sent(hook, reader), (where, env)
    plain = pod()
    plain["spec"]["volumes"] = [{"name": "cfg", "configMap": {"name": "settings"}}, {"name": "t", "projected": {
        "sources": [{"serviceAccountToken": {"path": "token"}}]}}]
    plain["spec"]["containers"][0]["env"] = [{"name": "A", "value": "1"}]
    assert not sent(hook, plain)


def test_policy_objects_are_checked_as_they_are_applied_for_the_groups_read():
    hook = validate_policy()
    assert hook["clientConfig"]["service"]["path"] == "/validate-policy"
    assert hook["sideEffects"] == "None" and hook["failurePolicy"] == "Ignore"
    assert hook["rules"] == [{"apiGroups": ["quartermaster.dev"], "apiVersions": ["*"],
                              "resources": ["deviceclaimrewrites", "notebookinjections", "profilequotas",
                                            "queueassignments"],
                              "operations": ["CREATE", "UPDATE"], "scope": "*"}]
    kyverno = validate_policy({"live": {"policyObjectGroups": ["kyverno.io", "policies.kyverno.io",
                                                               "admissionregistration.k8s.io"]}})
    # Kubernetes' own admission policies are checked by the API server itself
    assert [rule["apiGroups"] for rule in kyverno["rules"]] == [["kyverno.io"], ["policies.kyverno.io"]]
    assert "clusterpolicies" in kyverno["rules"][0]["resources"]
    assert validate_policy({"webhooks": {"validatePolicy": {"failurePolicy": "Fail"}}})["failurePolicy"] == "Fail"
    assert validate_policy({"auditOnly": True})["failurePolicy"] == "Ignore"
    # nothing to check: no policy objects read, the check off, or standalone state (which reads no objects)
    assert validate_policy({"live": {"policyObjectGroups": []}}) is None
    assert validate_policy({"webhooks": {"validatePolicy": {"enabled": False}}}) is None
    assert validate_policy({"clusterState": "standalone", "replicaCount": 1}) is None
