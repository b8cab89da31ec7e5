"""A CRD's openAPIV3Schema read as the API server reads it (webhook/policy/published.py)."""

from jsonschema import Draft202012Validator

from webhook.policy.published import from_openapi, published_schema


def _valid(openapi, document):
    return Draft202012Validator(from_openapi(openapi)).is_valid(document)


NODE = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "nullable": True},
        "port": {"x-kubernetes-int-or-string": True},
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "template": {"type": "object", "x-kubernetes-embedded-resource": True,
                     "properties": {"spec": {"type": "object", "properties": {"x": {"type": "string"}}}}},
        "either": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                   "oneOf": [{"required": ["a"]}, {"required": ["b"]}]},
    },
}


def test_listed_properties_close_an_object_and_the_api_servers_extensions_open_it():
    assert _valid(NODE, {"name": None, "port": 80, "free": {"anything": [1]}, "labels": {"k": "v"},
                         "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"x": "y"}},
                         "either": {"a": "1"}})
    assert _valid(NODE, {"port": "http"})
    assert not _valid(NODE, {"nmae": "x"})
    assert not _valid(NODE, {"template": {"spec": {"z": "y"}}})
    assert not _valid(NODE, {"labels": {"k": 1}})
    # a oneOf branch only adds value checks: it does not close the object to the other branch's field
    assert _valid(NODE, {"either": {"b": "2"}}) and not _valid(NODE, {"either": {"a": "1", "b": "2"}})


def test_a_version_the_release_does_not_publish_takes_the_nearest_one_under_its_own_name():
    schema = published_schema("admissionregistration.k8s.io/v1", "MutatingAdmissionPolicy")
    assert schema["properties"]["apiVersion"] == {"const": "admissionregistration.k8s.io/v1"}
    namespaced = published_schema("policies.kyverno.io/v1alpha1", "NamespacedValidatingPolicy")
    assert namespaced["properties"]["apiVersion"] == {"const": "policies.kyverno.io/v1alpha1"}
    assert "validations" in namespaced["properties"]["spec"]["properties"]
