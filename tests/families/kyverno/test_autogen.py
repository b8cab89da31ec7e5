"""Autogen names and rewrites exactly as Kyverno: autogen-<rule> and autogen-cronjob-<rule>."""

from webhook.families.kyverno.autogen import ANNOTATION, expand_rules


def _policy(rule, annotations=None):
    return {"metadata": {"name": "p", "annotations": annotations or {}}, "spec": {"rules": [rule]}}


RULE = {"name": "no-priv", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
        "preconditions": {"all": [{"key": "{{request.object.metadata.name}}", "operator": "NotEquals", "value": ""}]},
        "validate": {"message": "m", "pattern": {"spec": {"containers": [{"=(securityContext)": {
            "=(privileged)": "false"}}]}}}}


def test_generates_controller_and_cronjob_rules():
    rules = expand_rules(_policy(RULE))
    assert [r["name"] for r in rules] == ["no-priv", "autogen-no-priv", "autogen-cronjob-no-priv"]
    deploy, cron = rules[1], rules[2]
    assert "apps/v1/Deployment" in deploy["match"]["any"][0]["resources"]["kinds"]
    assert cron["match"]["any"][0]["resources"]["kinds"] == ["batch/v1/CronJob"]
    assert "containers" in deploy["validate"]["pattern"]["spec"]["template"]["spec"]
    assert "containers" in cron["validate"]["pattern"]["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert deploy["preconditions"]["all"][0]["key"] == "{{request.object.spec.template.metadata.name}}"
    assert cron["preconditions"]["all"][0]["key"] == "{{request.object.spec.jobTemplate.spec.template.metadata.name}}"


def test_annotation_limits_controllers_and_none_disables():
    rules = expand_rules(_policy(RULE, {ANNOTATION: "Deployment"}))
    assert [r["name"] for r in rules] == ["no-priv", "autogen-no-priv"]
    assert rules[1]["match"]["any"][0]["resources"]["kinds"] == ["apps/v1/Deployment"]
    assert [r["name"] for r in expand_rules(_policy(RULE, {ANNOTATION: "none"}))] == ["no-priv"]


def test_no_autogen_with_names_selectors_or_other_kinds():
    named = {**RULE, "match": {"any": [{"resources": {"kinds": ["Pod"], "names": ["x"]}}]}}
    assert len(expand_rules(_policy(named))) == 1
    mixed = {**RULE, "match": {"any": [{"resources": {"kinds": ["Pod", "Service"]}}]}}
    assert len(expand_rules(_policy(mixed))) == 1


def test_cel_paths_are_rewritten():
    rule = {"name": "c", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
            "validate": {"cel": {"expressions": [{"expression": "object.spec.hostNetwork != true"}]}}}
    rules = expand_rules(_policy(rule))
    assert rules[1]["validate"]["cel"]["expressions"][0]["expression"] == "object.spec.template.spec.hostNetwork != true"
    assert rules[2]["validate"]["cel"]["expressions"][0]["expression"].startswith("object.spec.jobTemplate.spec.template.spec")
