"""ClusterPolicy/Policy through the real loader and the offline admission path (the engine `apply`,
`test` and `serve` share): phases, rule identities, Enforce/Audit, autogen, exceptions, generate."""

from pathlib import Path
from typing import Any

import pytest

from webhook.app import PolicyLoadFailed, Quartermaster, Settings
from webhook.engine.offline import admit_offline
from webhook.model.results import Action, Outcome
from webhook.state.memory import InMemoryClusterState
from tests.support import assert_valid_k8s

PRIVILEGED = """
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: disallow-privileged}
spec:
  validationFailureAction: {action}
  rules:
  - name: privileged-containers
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate:
      message: Privileged mode is disallowed.
      pattern:
        spec:
          containers:
          - =(securityContext):
              =(privileged): "false"
"""
LABELS = """
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: add-labels}
spec:
  rules:
  - name: team
    match: {any: [{resources: {kinds: [Pod]}}]}
    mutate:
      patchStrategicMerge:
        metadata:
          labels:
            +(team): "{{request.namespace}}"
  - name: quota
    match: {any: [{resources: {kinds: [Namespace]}}]}
    generate:
      apiVersion: v1
      kind: ConfigMap
      name: defaults
      namespace: "{{request.object.metadata.name}}"
      data:
        data: {owner: "{{request.object.metadata.labels.owner}}"}
"""


def pod(name="p", privileged=False, namespace="team-a"):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
            "spec": {"containers": [{"name": "c", "image": "nginx:1.25",
                                     "securityContext": {"privileged": privileged}}]}}


def deployment(privileged=True):
    template = pod(privileged=privileged)
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "team-a"},
            "spec": {"selector": {"matchLabels": {"app": "d"}},
                     "template": {"metadata": {"labels": {"app": "d"}}, "spec": template["spec"]}}}


def build(tmp_path: Path, *texts: str, **settings: Any) -> Quartermaster:
    directory = tmp_path / "policies"
    directory.mkdir(exist_ok=True)
    for index, text in enumerate(texts):
        (directory / f"{index}.yaml").write_text(text)
    state = InMemoryClusterState([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}])
    qm = Quartermaster.build(Settings(policies=directory, **settings), state=state)
    qm.load_policies()
    return qm


async def test_enforce_denies_a_privileged_pod_and_its_deployment_through_autogen(tmp_path):
    qm = build(tmp_path, PRIVILEGED.replace("{action}", "Enforce"))
    denied = await admit_offline(qm.engine, pod(privileged=True))
    assert not denied.allowed and "Privileged mode is disallowed" in denied.message
    controller = await admit_offline(qm.engine, deployment())
    assert not controller.allowed
    assert [(r.rule, r.outcome) for r in controller.results] == [("autogen-privileged-containers", Outcome.FAIL)]
    assert (await admit_offline(qm.engine, pod())).allowed


async def test_audit_admits_with_a_warning_and_a_reported_failure(tmp_path):
    qm = build(tmp_path, PRIVILEGED.replace("{action}", "Audit"))
    result = await admit_offline(qm.engine, pod(privileged=True))
    assert result.allowed and any("Privileged mode is disallowed" in w for w in result.warnings)
    (rule,) = result.results
    assert rule.outcome is Outcome.FAIL and rule.action is Action.AUDIT and rule.policy.kind == "ClusterPolicy"


async def test_mutation_and_generation_in_their_phases(tmp_path):
    qm = build(tmp_path, LABELS)
    result = await admit_offline(qm.engine, pod())
    assert result.object["metadata"]["labels"] == {"team": "team-a"}
    assert_valid_k8s(result.object)
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "new", "labels": {"owner": "ana"}}}
    created = await admit_offline(qm.engine, namespace)
    (config,) = created.generated
    assert config["metadata"]["namespace"] == "new" and config["data"] == {"owner": "ana"}
    assert config["metadata"]["labels"]["generate.kyverno.io/rule-name"] == "quota"
    assert_valid_k8s(config)


async def test_policy_exception_skips_the_named_rule(tmp_path):
    exception = """
apiVersion: kyverno.io/v2
kind: PolicyException
metadata: {name: allow-debug, namespace: team-a}
spec:
  exceptions:
  - policyName: disallow-privileged
    ruleNames: [privileged-containers, autogen-privileged-containers]
  match:
    any: [{resources: {kinds: [Pod, Deployment], names: [debug*]}}]
"""
    qm = build(tmp_path, PRIVILEGED.replace("{action}", "Enforce"), exception, exception_namespaces=("team-a",))
    result = await admit_offline(qm.engine, pod("debug-1", privileged=True))
    assert result.allowed and result.results[0].outcome is Outcome.SKIP
    assert not (await admit_offline(qm.engine, pod("web", privileged=True))).allowed


async def test_policy_exception_lifts_a_mutate_rule_before_it_patches(tmp_path):
    """Kyverno checks exceptions before it mutates: an excepted rule is a skip and its patch is not applied."""
    label = """
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: add-team}
spec:
  rules:
  - name: team-label
    match: {any: [{resources: {kinds: [Pod]}}]}
    mutate: {patchStrategicMerge: {metadata: {labels: {team: a}}}}
"""
    exception = """
apiVersion: kyverno.io/v2
kind: PolicyException
metadata: {name: keep-labels, namespace: team-a}
spec:
  exceptions: [{policyName: add-team, ruleNames: [team-label]}]
  match: {any: [{resources: {kinds: [Pod], names: [debug*]}}]}
"""
    qm = build(tmp_path, label, exception, exception_namespaces=("team-a",))
    lifted = await admit_offline(qm.engine, pod("debug-1"))
    assert lifted.allowed and "labels" not in lifted.object["metadata"] and not lifted.patch
    assert lifted.results[0].outcome is Outcome.SKIP and "policy exception team-a/keep-labels" in lifted.results[0].message
    patched = await admit_offline(qm.engine, pod("web"))
    assert patched.object["metadata"]["labels"] == {"team": "a"}


async def test_namespaced_policy_applies_only_in_its_namespace(tmp_path):
    policy = PRIVILEGED.replace("{action}", "Enforce").replace("ClusterPolicy", "Policy").replace(
        "metadata: {name: disallow-privileged}", "metadata: {name: disallow-privileged, namespace: team-a}")
    qm = build(tmp_path, policy)
    assert not (await admit_offline(qm.engine, pod(privileged=True))).allowed
    assert (await admit_offline(qm.engine, pod(privileged=True, namespace="other"))).allowed


def test_unsupported_feature_is_a_load_error_naming_rule_and_feature(tmp_path):
    text = """
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: signed}
spec:
  rules:
  - name: check-signature
    match: {any: [{resources: {kinds: [Pod]}}]}
    verifyImages: [{imageReferences: ["*"]}]
"""
    with pytest.raises(PolicyLoadFailed) as failure:
        build(tmp_path, text)
    message = str(failure.value.result.errors[0])
    assert "0.yaml" in message and "check-signature" in message and "verifyImages" in message


async def test_updates_of_objects_that_already_violate_are_not_blocked(tmp_path):
    qm = build(tmp_path, PRIVILEGED.replace("{action}", "Enforce"))
    old = pod(privileged=True)
    changed = pod(privileged=True)
    changed["metadata"]["labels"] = {"touched": "yes"}
    update = await admit_offline(qm.engine, changed, operation="UPDATE", old=old)
    assert update.allowed and update.results[0].outcome is Outcome.SKIP
    newly = await admit_offline(qm.engine, pod(privileged=True), operation="UPDATE", old=pod())
    assert not newly.allowed


async def test_failure_action_overrides_and_apply_rules_one(tmp_path):
    text = PRIVILEGED.replace("{action}", "Audit").replace("  rules:", """  applyRules: One
  validationFailureActionOverrides:
  - action: Enforce
    namespaces: [team-*]
  rules:
  - name: first
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate:
      message: must be named
      pattern: {metadata: {name: "?*"}}""")
    qm = build(tmp_path, text)
    enforced = await admit_offline(qm.engine, pod(privileged=True))
    assert [(r.rule, r.outcome) for r in enforced.results] == [("first", Outcome.PASS)]  # One: stops at the first
    assert enforced.allowed
    audited = await admit_offline(qm.engine, pod(name="", privileged=True, namespace="other"))
    assert audited.allowed and audited.results[0].action is Action.AUDIT
    denied = await admit_offline(qm.engine, pod(name="", privileged=True))
    assert not denied.allowed and denied.results[0].action is Action.ENFORCE


async def test_admission_false_runs_only_in_background_scans(tmp_path):
    from webhook.engine.scan import SCAN_USER
    text = PRIVILEGED.replace("{action}", "Enforce").replace("  rules:", "  admission: false\n  rules:", 1)
    qm = build(tmp_path, text)
    assert (await admit_offline(qm.engine, pod(privileged=True))).allowed
    scanned = await admit_offline(qm.engine, pod(privileged=True), user=SCAN_USER, dry_run=True)
    assert [r.outcome for r in scanned.results] == [Outcome.FAIL]


USER_INFO = """
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: scoped-users}
spec:
  validationFailureAction: Enforce
  rules:
  - name: scope
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate:
      message: "{{request.userInfo.uid}} has scopes {{request.userInfo.extra.scopes}}"
      deny:
        conditions:
          any:
          - {key: "{{request.userInfo.extra.scopes || `[]`}}", operator: AnyIn, value: [admin]}
"""


async def test_user_info_is_the_api_servers_uid_extra_and_groups_with_empty_fields_left_out(tmp_path):
    import json

    from webhook.families.kyverno.context import RequestData, RequestSubject, base_document
    from webhook.model.review import parse_review
    from tests.support import review

    qm = build(tmp_path, USER_INFO)
    body = review(pod(), username="jdoe@example.org")
    body["request"]["userInfo"].update(uid="u-1", extra={"scopes": ["read", "admin"]})
    denied = await qm.engine.validate(parse_review(json.dumps(body).encode()))
    assert not denied.allowed and "u-1 has scopes [\"read\",\"admin\"]" in denied.message, denied.message
    body["request"]["userInfo"]["extra"] = {"scopes": ["read"]}
    assert (await qm.engine.validate(parse_review(json.dumps(body).encode()))).allowed
    # authentication/v1 UserInfo is marshalled with omitempty: a user without groups has no `groups` (null, not [])
    user = base_document(RequestData("CREATE", pod(), None, RequestSubject()))["request"]["userInfo"]
    assert user == {}
    full = RequestSubject("jdoe", ("a",), uid="u-2", extra={"k": ("v",)})
    assert base_document(RequestData("CREATE", pod(), None, full))["request"]["userInfo"] == {
        "username": "jdoe", "uid": "u-2", "groups": ["a"], "extra": {"k": ["v"]}}


EDITS_EVERYWHERE = """
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: edits-everywhere}
spec:
  rules:
  - name: merge
    match: {any: [{resources: {kinds: [Pod]}}]}
    mutate:
      patchStrategicMerge:
        metadata:
          labels: {+(team): a, tier: web}
        spec:
          containers:
          - (name): "c"
            securityContext: {privileged: false, +(runAsNonRoot): true}
            env: [{name: A, value: "1"}]
  - name: json-patch
    match: {any: [{resources: {kinds: [Pod]}}]}
    mutate:
      patchesJson6902: |-
        - op: replace
          path: /spec/containers/0/image
          value: nginx:1.27
        - op: remove
          path: /spec/containers/0/securityContext/privileged
        - op: add
          path: /metadata/annotations
          value: {checked: "yes"}
  - name: per-container
    match: {any: [{resources: {kinds: [Pod]}}]}
    mutate:
      foreach:
      - list: request.object.spec.containers
        patchStrategicMerge:
          spec:
            containers:
            - (name): "{{ element.name }}"
              imagePullPolicy: Always
"""


async def test_a_kyverno_mutation_never_edits_the_object_it_is_handed(tmp_path):
    """The engine hands Kyverno policies the object without copying it first, and they copy only what they
    patch (copies_input: the strategic merge copies on write, JSON patches copy): every kind of patch leaves
    the request's object as the API server sent it, and the patch still applies to it."""
    import copy

    import jsonpatch

    from webhook.engine.offline import offline_request

    qm = build(tmp_path, EDITS_EVERYWHERE)
    sent = pod(privileged=True)
    sent["spec"]["containers"].append({"name": "d", "image": "busybox", "env": [{"name": "B", "value": "2"}]})
    request = offline_request(sent)
    before = copy.deepcopy(request.object)
    result = await qm.engine.mutate(request)
    assert request.object == before
    mutated = jsonpatch.apply_patch(before, list(result.verdict.patch))
    c, d = mutated["spec"]["containers"]
    assert c["image"] == "nginx:1.27" and c["securityContext"] == {"runAsNonRoot": True}
    assert c["env"] == [{"name": "A", "value": "1"}] and c["imagePullPolicy"] == d["imagePullPolicy"] == "Always"
    assert mutated["metadata"]["labels"] == {"team": "a", "tier": "web"} and d["env"] == [{"name": "B", "value": "2"}]
    assert_valid_k8s(mutated)
