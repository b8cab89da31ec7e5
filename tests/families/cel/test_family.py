"""The cel family through the engine's offline path: exceptions, params, bindings, lazy variables, errors."""

import textwrap

import pytest
import yaml

from tests.support import apply_patch, assert_valid_k8s
from webhook.cel import CelCompiler
from webhook.engine import AdmissionEngine
from webhook.engine.offline import admit_offline
from webhook.families.cel.family import CelFamily
from webhook.model import patch as jsonpatch_diff
from webhook.policy.documents import Document
from webhook.model.exception_trust import HONOUR_GIVEN
from webhook.policy.family import CompileEnv
from webhook.policy.snapshot import PolicySnapshot, PolicyStore
from webhook.state.memory import InMemoryClusterState

CEL = CelCompiler()
NAMESPACES = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps", "labels": {"env": "prod"}}}]


def compile_(text: str):
    docs = [Document("p.yaml", i, d, None) for i, d in enumerate(yaml.safe_load_all(textwrap.dedent(text))) if d]
    return CelFamily().compile(docs, CompileEnv(CEL, HONOUR_GIVEN))


def engine(text: str, objects=()) -> AdmissionEngine:
    result = compile_(text)
    assert not result.errors, result.errors
    store = PolicyStore()
    store.publish(PolicySnapshot.of(result.policies, 1))
    return AdmissionEngine(store, InMemoryClusterState([*NAMESPACES, *objects]))


def pod(name="p", namespace="apps", labels=None, **spec):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}], **spec}}


def outcomes(result):
    return [(r.policy.name, r.outcome.value) for r in result.results]


VPOL = """\
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata: {name: no-host-network}
spec:
  validationActions: [Deny]
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  variables:
  - {name: broken, expression: "object.spec.nothing.here"}
  - {name: hostNetwork, expression: "object.spec.?hostNetwork.orValue(false)"}
  validations:
  - expression: "!variables.hostNetwork"
    message: host network is not allowed
---
apiVersion: policies.kyverno.io/v1
kind: PolicyException
metadata: {name: allow-infra, namespace: apps}
spec:
  policyRefs: [{name: no-host-network, kind: ValidatingPolicy}]
  matchConditions:
  - {name: infra, expression: "has(object.metadata.labels) && object.metadata.labels.?tier.orValue('') == 'infra'"}
"""


async def test_an_unused_failing_variable_does_not_matter_and_exceptions_exempt():
    eng = engine(VPOL)
    denied = await admit_offline(eng, pod(hostNetwork=True))
    assert not denied.allowed and "host network is not allowed" in denied.message
    assert outcomes(await admit_offline(eng, pod())) == [("no-host-network", "pass")]
    exempt = await admit_offline(eng, pod(labels={"tier": "infra"}, hostNetwork=True))
    assert exempt.allowed and outcomes(exempt) == [("no-host-network", "skip")]
    assert "allow-infra" in exempt.results[0].message


async def test_namespaced_policy_applies_in_its_namespace_only():
    eng = engine(VPOL.split("---")[0].replace("kind: ValidatingPolicy", "kind: NamespacedValidatingPolicy")
                 .replace("metadata: {name: no-host-network}", "metadata: {name: no-host-network, namespace: apps}"))
    assert not (await admit_offline(eng, pod(hostNetwork=True))).allowed
    assert (await admit_offline(eng, pod(namespace="other", hostNetwork=True))).allowed


async def test_a_broken_expression_is_an_error_under_the_failure_policy():
    broken = VPOL.split("---")[0].replace('"!variables.hostNetwork"', '"object.spec.(("')
    fail = compile_(broken)
    assert not fail.errors and fail.policies[0].error and "spec.validations[0].expression" in fail.policies[0].error
    assert not (await admit_offline(engine(broken), pod())).allowed
    ignored = broken.replace("validationActions: [Deny]", "validationActions: [Deny]\n  failurePolicy: Ignore")
    result = await admit_offline(engine(ignored), pod())
    assert result.allowed and outcomes(result) == [("no-host-network", "error")]


# VPOL's policy with one variable, a map holding an optional, which the validation and its message read
HOLDS_AN_OPTIONAL = VPOL.split("---")[0].replace(
    '  - {name: broken, expression: "object.spec.nothing.here"}\n'
    '  - {name: hostNetwork, expression: "object.spec.?hostNetwork.orValue(false)"}\n',
    '  - {name: hosts, expression: "{\'network\': object.spec.?hostNetwork}"}\n').replace(
    '  - expression: "!variables.hostNetwork"\n    message: host network is not allowed\n',
    '  - expression: "!variables.hosts.network.orValue(false)"\n'
    '    messageExpression: "\'host network: \' + string(variables.hosts.network.orValue(false))"\n')


async def test_a_variable_holding_an_optional_is_a_policy_error_not_a_crash():
    """The default runtime crashes converting a map that holds an optional (webhook.cel.optionals), and the
    message's path converts the variable: this policy took the process down (a segmentation fault) at the
    first pod it denied. It does not compile now: the error names the field and says what to write, and
    the failure policy decides."""
    assert "{'network': object.spec.?hostNetwork}" in HOLDS_AN_OPTIONAL and "messageExpression" in HOLDS_AN_OPTIONAL
    error = compile_(HOLDS_AN_OPTIONAL).policies[0].error
    assert "spec.variables[0].expression" in error and "holding an optional" in error and "`?'key': x`" in error
    result = await admit_offline(engine(HOLDS_AN_OPTIONAL), pod(hostNetwork=True))
    assert not result.allowed and outcomes(result) == [("no-host-network", "error")]
    fixed = HOLDS_AN_OPTIONAL.replace("{'network': object", "{?'network': object").replace(".network.", ".?network.")
    result = await admit_offline(engine(fixed), pod(hostNetwork=True))
    assert outcomes(result) == [("no-host-network", "fail")] and "host network: true" in result.results[0].message
    assert (await admit_offline(engine(fixed), pod())).allowed


async def test_admission_disabled_policies_do_not_apply():
    eng = engine(VPOL.split("---")[0].replace("validationActions: [Deny]",
                                              "validationActions: [Deny]\n  evaluation: {admission: {enabled: false}}"))
    assert (await admit_offline(eng, pod(hostNetwork=True))).results == ()


VAP = """\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: image-allowlist}
spec:
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  validations:
  - expression: "object.spec.containers.all(c, c.image.startsWith(params.data.registry))"
    message: images must come from the allowed registry
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: image-allowlist}
spec:
  policyName: image-allowlist
  validationActions: [Warn]
  paramRef: {name: registry, parameterNotFoundAction: {action}}
"""


@pytest.mark.parametrize("action,allowed", [("Allow", True), ("Deny", False)])
async def test_vap_params_not_found_follow_parameterNotFoundAction(action, allowed):
    eng = engine(VAP.replace("{action}", action).replace("[Warn]", "[Deny]"))
    assert (await admit_offline(eng, pod())).allowed is allowed


async def test_vap_warn_action_warns_with_params_from_the_request_namespace():
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "registry", "namespace": "apps"},
              "data": {"registry": "registry.example.org/"}}
    eng = engine(VAP.replace("{action}", "Deny"), [config])
    result = await admit_offline(eng, pod())
    assert result.allowed and any("allowed registry" in w for w in result.warnings)
    good = pod()
    good["spec"]["containers"][0]["image"] = "registry.example.org/nginx"
    assert not (await admit_offline(eng, good)).warnings


MAP = """\
apiVersion: admissionregistration.k8s.io/v1beta1
kind: MutatingAdmissionPolicy
metadata: {name: default-sa}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  matchConditions:
  - {name: no-sa, expression: "!has(object.spec.serviceAccountName)"}
  reinvocationPolicy: Never
  mutations:
  - patchType: JSONPatch
    jsonPatch:
      expression: >-
        [JSONPatch{op: "add", path: "/spec/serviceAccountName", value: "restricted"},
         JSONPatch{op: "add", path: "/metadata/labels/" + jsonpatch.escapeKey("example.org/sa"), value: "defaulted"}]
---
apiVersion: admissionregistration.k8s.io/v1beta1
kind: MutatingAdmissionPolicyBinding
metadata: {name: default-sa}
spec:
  policyName: default-sa
  matchResources:
    namespaceSelector: {matchLabels: {env: prod}}
"""


async def test_mutating_admission_policy_json_patch_through_its_binding():
    eng = engine(MAP)
    original = pod()
    result = await admit_offline(eng, original)
    assert result.allowed and outcomes(result) == [("default-sa", "pass")]
    patched = apply_patch(original, jsonpatch_diff.diff(original, result.object))
    assert patched["spec"]["serviceAccountName"] == "restricted"
    assert patched["metadata"]["labels"] == {"example.org/sa": "defaulted"}
    assert_valid_k8s(patched)
    unbound = await admit_offline(eng, pod(namespace="elsewhere"))
    assert unbound.results == () and unbound.object == pod(namespace="elsewhere")


def test_set_level_errors_name_the_document_and_field():
    result = compile_("apiVersion: policies.kyverno.io/v1\nkind: ValidatingPolicy\nmetadata: {}\nspec: {}\n")
    assert result.errors and result.errors[0].field == "metadata.name"
    binding = compile_("apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\n"
                       "metadata: {name: b}\nspec: {validationActions: [Deny]}\n")
    assert binding.errors[0].field == "spec.policyName"


GPOL = """\
apiVersion: policies.kyverno.io/v1
kind: GeneratingPolicy
metadata: {name: default-deny}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [namespaces]}
  variables:
  - {name: ns, expression: "object.metadata.name"}
  generate:
  - expression: >-
      generator.Apply(variables.ns, [{"apiVersion": dyn("networking.k8s.io/v1"), "kind": dyn("NetworkPolicy"),
        "metadata": dyn({"name": "default-deny"}), "spec": dyn({"podSelector": dyn({}), "policyTypes": dyn(["Ingress"])})}])
"""


async def test_generating_policy_generates_after_admission_and_never_on_dry_run():
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "fresh"}}
    eng = engine(GPOL)
    result = await admit_offline(eng, namespace)
    assert result.allowed and outcomes(result) == [("default-deny", "pass")]
    [generated] = result.generated
    assert (generated["kind"], generated["metadata"]["namespace"], generated["metadata"]["name"]) == \
        ("NetworkPolicy", "fresh", "default-deny")
    assert generated["metadata"]["labels"]["generate.kyverno.io/policy-name"] == "default-deny"
    assert_valid_k8s({k: v for k, v in generated.items()})
    assert eng.state.get("NetworkPolicy", "fresh", "default-deny") is not None
    dry = await admit_offline(engine(GPOL), {**namespace, "metadata": {"name": "dry"}}, dry_run=True)
    assert dry.allowed and dry.generated == ()


TEMPLATE = """\
apiVersion: policies.kyverno.io/v1beta1
kind: GeneratingPolicy
metadata: {name: team-config}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [namespaces]}
  variables:
  - {name: ns, expression: "object.metadata.name"}
  - {name: labels, expression: "{'team': object.metadata.name}"}
  generate:
  - template:
      interpolate: cel
      value: |
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: (( variables.ns ))-config
          namespace: (( variables.ns ))
          labels: (( variables.labels ))
        data:
          note: "kept \\\\(( literal ))"
"""


async def test_generating_policy_templates_interpolate_cel_placeholders():
    result = await admit_offline(engine(TEMPLATE), {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}})
    [config] = result.generated
    assert config["metadata"]["name"] == "ml-config" and config["metadata"]["namespace"] == "ml"
    assert config["metadata"]["labels"]["team"] == "ml"
    assert config["data"] == {"note": "kept (( literal ))"}
    assert_valid_k8s(config)


@pytest.mark.parametrize("path,value", [
    (("spec", "validations"), 3), (("spec", "evaluation"), True), (("spec", "matchConstraints", "resourceRules"), True),
    (("spec", "variables"), {"a": 1}), (("metadata", "annotations"), [1]),
    (("spec", "matchConstraints", "resourceRules", 0, "operations"), "CREATE"),
])
def test_a_malformed_document_is_a_policy_error_naming_the_problem(path, value):
    doc = yaml.safe_load(VPOL.split("---")[0])
    node = doc
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value
    result = CelFamily().compile([Document("p.yaml", 0, doc, None)], CompileEnv(CEL, HONOUR_GIVEN))
    if path[0] == "metadata":
        assert not result.errors and result.policies[0].annotations == {}
        return
    [policy] = result.policies
    assert policy.error and "p.yaml#0 spec" in policy.error


REINVOKED = """\
apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata: {name: copy-tier}
spec:
  reinvocationPolicy: {policy}
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  matchConditions:
  - {name: has-tier, expression: "has(object.metadata.labels) && 'tier' in object.metadata.labels"}
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: 'Object{metadata: Object.metadata{annotations: {"tier": object.metadata.labels.tier}}}'
---
apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata: {name: set-tier}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: 'Object{metadata: Object.metadata{labels: {"tier": "gold"}}}'
"""


@pytest.mark.parametrize("policy,annotated", [("IfNeeded", True), ("Never", False)])
async def test_reinvocation_if_needed_runs_a_policy_again_after_later_changes(policy, annotated):
    result = await admit_offline(engine(REINVOKED.replace("{policy}", policy)), pod())
    assert result.object["metadata"]["labels"]["tier"] == "gold"
    assert ("tier" in (result.object["metadata"].get("annotations") or {})) is annotated
