"""A loaded ValidatingPolicy object shows the copies autogen made, in `status.autogen.configs`, as Kyverno writes
them (Kyverno's chainsaw `validating-policies/autogen` reads them there; its expected status is the fixture)."""

from pathlib import Path

import yaml

from tests.families.cel.test_family import REINVOKED
from webhook.cel import CelCompiler
from webhook.families.cel.compile import compile_kyverno
from webhook.policy.documents import Document

FIXTURES = Path(__file__).parent / "fixtures" / "autogen-status"


def _contains(actual, expected) -> bool:
    """chainsaw's assert: every field the expected object has, equal; lists item by item."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(k in actual and _contains(actual[k], v) for k, v in expected.items())
    if isinstance(expected, list):
        return isinstance(actual, list) and len(actual) == len(expected) and all(map(_contains, actual, expected))
    return actual == expected


def test_status_autogen_shows_each_generated_spec_as_kyverno_does():
    policy = yaml.safe_load((FIXTURES / "policy.yaml").read_text())
    expected = yaml.safe_load((FIXTURES / "check-autogen.yaml").read_text())["status"]
    compiled = compile_kyverno(Document("policy.yaml", 0, policy, None), CelCompiler(), ())
    assert compiled.error is None
    shown = compiled.traits.shown
    assert set(shown["autogen"]["configs"]) == {"defaults", "cronjobs"}
    # required by Kyverno's CRD (the API server refused the status patch without them, Ready included)
    assert shown["autogen"]["configs"]["cronjobs"]["targets"] == [
        {"group": "batch", "version": "v1", "resource": "cronjobs", "kind": "CronJob"}]
    assert shown["autogen"]["configs"]["defaults"]["targets"] == [
        {"group": "apps", "version": "v1", "resource": "deployments", "kind": "Deployment"}]
    assert _contains(yaml.safe_load(yaml.safe_dump(dict(shown))), expected), shown


def test_a_policy_autogen_does_not_apply_to_clears_it():
    policy = yaml.safe_load((FIXTURES / "policy.yaml").read_text())
    policy["spec"]["matchConstraints"]["resourceRules"][0]["resources"] = ["configmaps"]
    compiled = compile_kyverno(Document("policy.yaml", 0, policy, None), CelCompiler(), ())
    assert dict(compiled.traits.shown) == {"autogen": {"configs": None}}  # a merge patch: removes what was shown


MUTATING_POLICY = REINVOKED.split("---\n")[1]  # test_family's set-tier: a MutatingPolicy for pods


def test_each_kinds_status_autogen_is_what_its_crd_accepts():
    """The API server refuses a whole status patch whose autogen its CRD's schema refuses (the Ready condition
    with it): checked against the published schema, status included, of both CEL kinds that autogen."""
    import json

    import jsonschema

    from webhook.policy.published import published_schema

    for policy in (yaml.safe_load((FIXTURES / "policy.yaml").read_text()), yaml.safe_load(MUTATING_POLICY)):
        compiled = compile_kyverno(Document("policy.yaml", 0, policy, None), CelCompiler(), ())
        assert compiled.error is None
        status = json.loads(json.dumps(yaml.safe_load(yaml.safe_dump(dict(compiled.traits.shown)))))
        assert status["autogen"]["configs"], policy["kind"]  # pod policies: a copy per controller family
        schema = published_schema(policy["apiVersion"], policy["kind"])
        errors = [f"{list(e.absolute_path)}: {e.message}"
                  for e in jsonschema.Draft202012Validator(schema).iter_errors({**policy, "status": status})]
        assert not errors, (policy["kind"], errors)
        # a field the schema does not name is refused too: the check is not vacuous
        wrong = {**status, "autogen": {"configs": {"defaults": {**status["autogen"]["configs"]["defaults"],
                                                                "targetz": []}}}}
        assert any(jsonschema.Draft202012Validator(schema).iter_errors({**policy, "status": wrong}))
