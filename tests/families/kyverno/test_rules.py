"""Rule evaluation below the family: context entries through Lookups, foreach, generate/clone, overrides."""

import pytest

from webhook.families.kyverno.compile import compile_policy
from webhook.families.kyverno.context import RequestData, RequestSubject
from webhook.families.kyverno.engine import generate_rules, mutate_rules, validate_rules
from webhook.families.kyverno.rule_env import RuleEnv
from webhook.model.lookups import LookupRefused

CONFIG = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "registries", "namespace": "platform"},
          "data": {"allowed": "ghcr.io, registry.example.org"}}


class State:
    supplied = None

    def __init__(self, *objects):
        self.objects = list(objects)

    def get(self, api_version, kind, namespace, name):
        return next((o for o in self.objects if o["kind"] == kind and o["metadata"]["name"] == name
                     and o["metadata"].get("namespace", "") == namespace), None)

    def list(self, api_version, kind, namespace="", selector=None):
        return [o for o in self.objects if o["kind"] == kind and (not namespace or o["metadata"].get("namespace") == namespace)]

    def global_context(self, name):
        raise KeyError(name)

    def http(self, method, url, body=None):
        raise LookupRefused("no HTTP here")

    def image_data(self, ref):
        raise LookupRefused(f"image registries are not queried here ({ref})")


def policy(rule, **spec):
    return compile_policy({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "p"},
                           "spec": {"rules": [{"match": {"any": [{"resources": {"kinds": ["Pod"]}}]}, **rule}], **spec}})


def pod(*images, name="p"):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "team"},
            "spec": {"containers": [{"name": f"c{i}", "image": image} for i, image in enumerate(images)]}}


def request(obj, operation="CREATE"):
    return RequestData(operation=operation, object=obj, old_object=None, subject=RequestSubject("jdoe"),
                       kind={"group": "", "version": "v1", "kind": obj["kind"]}, namespace="team",
                       name=obj["metadata"]["name"])


REGISTRIES = {
    "name": "registries",
    "context": [{"name": "cm", "configMap": {"name": "registries", "namespace": "platform"}},
                {"name": "allowed", "variable": {"jmesPath": "split(cm.data.allowed, ', ')"}}],
    "validate": {"message": "image {{element.image}} is not from an allowed registry", "foreach": [{
        "list": "request.object.spec.containers",
        "deny": {"conditions": {"all": [{"key": "{{ images.containers.\"{{element.name}}\".registry }}",
                                         "operator": "AnyNotIn", "value": "{{ allowed }}"}]}}}]},
}


def test_config_map_context_and_foreach_deny():
    rules = policy(REGISTRIES).validate_rules
    env = RuleEnv(lookups=State(CONFIG))
    (ok,) = validate_rules(rules, request(pod("ghcr.io/a/b:1")), env)
    (bad,) = validate_rules(rules, request(pod("ghcr.io/a/b:1", "docker.io/nginx")), env)
    assert ok.outcome == "pass" and bad.outcome == "fail" and "docker.io/nginx" in bad.message


def test_missing_config_map_and_refused_image_data_are_errors_naming_the_entry():
    (missing,) = validate_rules(policy(REGISTRIES).validate_rules, request(pod("ghcr.io/a")), RuleEnv(lookups=State()))
    assert missing.outcome == "error" and "'cm'" in missing.message
    image_rule = {"name": "size", "context": [{"name": "data", "imageRegistry": {"reference": "nginx"}}],
                  "validate": {"deny": {"conditions": {"all": [{"key": "{{data.size}}", "operator": "GreaterThan",
                                                                 "value": 1}]}}}}
    (refused,) = validate_rules(policy(image_rule).validate_rules, request(pod("nginx")), RuleEnv(lookups=State()))
    assert refused.outcome == "error" and "image registries are not queried" in refused.message


def test_an_image_that_is_no_reference_fails_the_rules_that_read_images_only():
    """`image: '*'` is stored by the API server; Kyverno's image parser refuses it, so a rule reading `images` reports
    an error naming the image (found by load-tests/kyverno_differential.py, `other/restrict-service-account`; we
    read it as registry docker.io, name `*`, and failed the pod). A rule that does not read `images` is unaffected."""
    reads_images = {"name": "registry", "validate": {"message": "m", "deny": {"conditions": {"any": [{
        "key": "{{ images.containers.*.registry | [0] }}", "operator": "Equals", "value": "evil.example"}]}}}}
    plain = {"name": "named", "validate": {"message": "m", "pattern": {"metadata": {"name": "?*"}}}}
    for rule, expected in ((reads_images, "error"), (plain, "pass")):
        (result,) = validate_rules(policy(rule).validate_rules, request(pod("*")), RuleEnv(lookups=State()))
        assert result.outcome == expected, result
        if expected == "error":
            assert "invalid image '*'" in result.message
    for image in ("ghcr.io/a/b:1", "nginx", "localhost:5000/x@sha256:" + "a" * 64):
        (ok,) = validate_rules(policy(reads_images).validate_rules, request(pod(image)), RuleEnv(lookups=State()))
        assert ok.outcome == "pass", (image, ok)


def test_api_call_lists_objects_from_the_state():
    rule = {"name": "one-pod", "context": [{"name": "count", "apiCall": {
        "urlPath": "/api/v1/namespaces/{{request.namespace}}/pods", "jmesPath": "items | length(@)"}}],
        "validate": {"deny": {"conditions": {"all": [{"key": "{{count}}", "operator": "GreaterThanOrEquals",
                                                       "value": 1}]}}}}
    rules = policy(rule).validate_rules
    assert validate_rules(rules, request(pod("x")), RuleEnv(lookups=State()))[0].outcome == "pass"
    crowded = State(pod("y", name="other"))
    assert validate_rules(rules, request(pod("x")), RuleEnv(lookups=crowded))[0].outcome == "fail"


def test_foreach_mutation_and_element_scope_pattern():
    mutate = {"name": "pull", "mutate": {"foreach": [{
        "list": "request.object.spec.containers",
        "patchStrategicMerge": {"spec": {"containers": [{"name": "{{element.name}}", "imagePullPolicy": "Always"}]}}}]}}
    result = mutate_rules(policy(mutate).mutate_rules, request(pod("a", "b")), RuleEnv())
    assert [c["imagePullPolicy"] for c in result.resource["spec"]["containers"]] == ["Always", "Always"]
    scoped = {"name": "tags", "validate": {"foreach": [{"list": "request.object.spec.containers",
                                                         "pattern": {"image": "*:*"}}]}}
    assert validate_rules(policy(scoped).validate_rules, request(pod("a:1", "b")), RuleEnv())[0].outcome == "fail"
    assert validate_rules(policy(scoped).validate_rules, request(pod("a:1", "b:2")), RuleEnv())[0].outcome == "pass"


def test_generate_clone_copies_the_source_without_server_fields():
    source = {**CONFIG, "metadata": {**CONFIG["metadata"], "uid": "u", "resourceVersion": "9"}}
    rule = {"name": "copy", "match": {"any": [{"resources": {"kinds": ["Namespace"]}}]},
            "generate": {"apiVersion": "v1", "kind": "ConfigMap", "name": "registries",
                         "namespace": "{{request.object.metadata.name}}",
                         "clone": {"name": "registries", "namespace": "platform"}}}
    rules = compile_policy({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "g"},
                            "spec": {"rules": [rule]}}).generate_rules
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "new"}}
    data = RequestData("CREATE", namespace, None, kind={"group": "", "version": "v1", "kind": "Namespace"}, name="new")
    (outcome,) = generate_rules(rules, data, RuleEnv(lookups=State(source)))
    (made,) = outcome.objects
    assert made["metadata"] == {"name": "registries", "namespace": "new"} and made["data"] == CONFIG["data"]


@pytest.mark.parametrize("operation,expected", [("CREATE", "pass"), ("DELETE", None)])
def test_patterns_are_not_checked_on_delete(operation, expected):
    rule = {"name": "named", "validate": {"pattern": {"metadata": {"name": "p*"}}}}
    obj = pod("x")
    data = RequestData(operation, None if operation == "DELETE" else obj, obj if operation == "DELETE" else None,
                       kind={"group": "", "version": "v1", "kind": "Pod"}, namespace="team", name="p")
    results = validate_rules(policy(rule).validate_rules, data, RuleEnv())
    assert [r.outcome for r in results] == ([expected] if expected else [])
