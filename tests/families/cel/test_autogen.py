from webhook.families.cel import autogen

SPEC = {
    "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
                                            "resources": ["pods"]}],
                         "namespaceSelector": {"matchLabels": {"x": "y"}}},
    "validations": [{"expression": "object.spec.containers.all(c, has(c.image))",
                     "messageExpression": "'in ' + object.metadata.namespace + ' ' + object.metadata.name"}],
}


def test_validating_autogen_groups_controllers_and_rewrites_paths():
    found = {v.config: v for v in autogen.variants(SPEC, autogen.rewrite_validating)}
    assert set(found) == {"defaults", "cronjobs"}
    defaults = found["defaults"]
    assert defaults.kinds == ("DaemonSet", "Deployment", "Job", "ReplicaSet", "StatefulSet")
    rules = defaults.spec["matchConstraints"]["resourceRules"]
    assert rules == [{"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
                      "resources": ["daemonsets", "deployments", "replicasets", "statefulsets"]},
                     {"apiGroups": ["batch"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["jobs"]}]
    assert defaults.spec["matchConstraints"]["namespaceSelector"] == {"matchLabels": {"x": "y"}}
    assert defaults.spec["validations"][0]["expression"] == "object.spec.template.spec.containers.all(c, has(c.image))"
    # the namespace is not in the template: it stays on the controller
    assert defaults.spec["validations"][0]["messageExpression"] == \
        "'in ' + object.metadata.namespace + ' ' + object.spec.template.metadata.name"
    assert found["cronjobs"].spec["validations"][0]["expression"].startswith("object.spec.jobTemplate.spec.template.spec.")


def test_no_autogen_for_other_shapes_and_for_an_empty_controller_list():
    assert autogen.variants({**SPEC, "matchConstraints": {"resourceRules": [
        {"apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"]}]}}, autogen.rewrite_validating) == []
    assert autogen.variants({**SPEC, "autogen": {"podControllers": {"controllers": []}}}, autogen.rewrite_validating) == []
    only = autogen.variants({**SPEC, "autogen": {"podControllers": {"controllers": ["deployments"]}}}, autogen.rewrite_validating)
    assert [v.kinds for v in only] == [("Deployment",)]


def test_mutating_autogen_wraps_object_construction():
    spec = {**SPEC, "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {
        "expression": "Object{spec: Object.spec{hostNetwork: false}}"}}]}
    found = {v.config: v for v in autogen.variants(spec, autogen.rewrite_mutating)}
    assert found["defaults"].spec["mutations"][0]["applyConfiguration"]["expression"] == (
        "Object{spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{hostNetwork: false}}}}")
    # validations are not rewritten for mutating policies
    assert found["defaults"].spec["validations"] == SPEC["validations"]
