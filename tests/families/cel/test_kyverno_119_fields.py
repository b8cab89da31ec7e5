"""Fields Kyverno 1.19 added to its CEL policy kinds (the release of load-tests/kyverno, whose CRD schemas are
vendored in webhook/policy/schemas): each either does what Kyverno's engine does with it, or the policy does not
load and says which field, never a policy that loads and quietly does less. Found by Kyverno's chainsaw
`mutating-policies` (load-tests/kyverno_chainsaw.py), whose policies the schema refused."""

from __future__ import annotations

import pytest

from tests.families.cel.test_family import VPOL, apply_patch, compile_, engine, jsonpatch_diff, outcomes, pod
from webhook.engine.offline import admit_offline

TOLERATE = """\
apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata: {name: tolerate-gpu}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  EVALUATION
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: "Object{spec: Object.spec{tolerations: [Object.spec.tolerations{key: 'gpu', operator: 'Exists'}]}}"
"""


async def test_an_atomic_list_is_replaced_only_with_server_side_apply():
    """Kyverno 1.19's ApplyConfiguration patcher guards atomic lists as a MutatingAdmissionPolicy does unless
    evaluation.useServerSideApply is set (pkg/cel/policies/mpol/compiler/applyconfig.go)."""
    original = pod(tolerations=[{"key": "spot", "operator": "Exists"}])
    guarded = await admit_offline(engine(TOLERATE.replace("EVALUATION", "")), original)
    assert outcomes(guarded) == [("tolerate-gpu", "error")]
    assert "may not mutate atomic arrays" in guarded.results[0].message and guarded.object == original
    applied = await admit_offline(
        engine(TOLERATE.replace("EVALUATION", "evaluation: {useServerSideApply: true}")), original)
    assert outcomes(applied) == [("tolerate-gpu", "pass")]
    patched = apply_patch(original, jsonpatch_diff.diff(original, applied.object))
    assert patched["spec"]["tolerations"] == [{"key": "gpu", "operator": "Exists"}]  # replaced whole


def test_the_new_background_and_target_fields_load():
    """skipBackgroundRequests (requests of Kyverno's background controller, which has no counterpart here) and
    targetMatchConditions (the targets of mutateExisting, which takes no part in admission) are accepted."""
    text = TOLERATE.replace("EVALUATION", "evaluation: {skipBackgroundRequests: false}\n  targetMatchConditions:\n"
                                          "  - {name: labelled, expression: \"has(object.metadata.labels)\"}")
    result = compile_(text)
    assert not result.errors and len(result.policies) == 1


@pytest.mark.parametrize("kind, extra, field", [
    ("MutatingPolicy", "auditAnnotations: [{key: k, valueExpression: \"'v'\"}]", "spec.auditAnnotations"),
    ("GeneratingPolicy", "auditAnnotations: [{key: k, valueExpression: \"'v'\"}]", "spec.auditAnnotations"),
    ("GeneratingPolicy", "useServerSideApply: true", "spec.useServerSideApply"),
    ("MutatingPolicy", "evaluation: {useServerSideApply: 'yes'}", "spec.evaluation.useServerSideApply"),
])
def test_what_is_not_done_here_is_a_load_error_naming_the_field(kind, extra, field):
    body = ("  mutations:\n  - patchType: JSONPatch\n    jsonPatch: {expression: \"[]\"}\n" if kind == "MutatingPolicy"
            else "  generate:\n  - expression: \"true\"\n")
    text = (f"apiVersion: policies.kyverno.io/v1\nkind: {kind}\nmetadata: {{name: p}}\nspec:\n  matchConstraints:\n"
            f"    resourceRules:\n    - {{apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [pods]}}\n"
            f"  {extra}\n{body}")
    [policy] = compile_(text).policies  # loaded broken: its failure policy still governs, /readyz names it
    assert policy.error and f"p.yaml#0 {field}: " in policy.error, policy.error


# test_family's policy and its exception (pods labelled tier: infra), the exception given an expiry
EXPIRING = VPOL.replace("  policyRefs: [{name: no-host-network, kind: ValidatingPolicy}]\n",
                        "  policyRefs: [{name: no-host-network, kind: ValidatingPolicy}]\n"
                        "  expiresAt: \"EXPIRES\"\n  properties: {ticket: OPS-1234}\n")


@pytest.mark.parametrize("expires, allowed", [("2999-01-01T00:00:00Z", True), ("2020-01-01T00:00:00+01:00", False)])
async def test_an_exception_applies_until_it_expires(expires, allowed):
    assert "expiresAt" in EXPIRING
    result = await admit_offline(engine(EXPIRING.replace("EXPIRES", expires)), pod(labels={"tier": "infra"},
                                                                                 hostNetwork=True))
    assert result.allowed is allowed
    assert outcomes(result) == [("no-host-network", "skip" if allowed else "fail")]


def test_an_expiry_that_is_no_time_is_a_load_error():
    result = compile_(EXPIRING.replace("EXPIRES", "next tuesday"))
    assert [e.field for e in result.errors] == ["spec.expiresAt"], result.errors
