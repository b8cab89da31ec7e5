"""The fast path of ValidatingPolicies against the reference path at scale: the conformance corpus suite by
suite, all its ValidatingPolicies loaded together over every corpus resource, and the remembered static
matches. Every evaluation here is shadowed too."""

import argparse
import io
import json

import pytest
import yaml

from tests.families.cel.test_fused import CEL, CORPUS, NAMESPACES, VALIDATIONS, named, policy
from tests.support import shared_yaml
from webhook.engine import AdmissionEngine
from webhook.engine.offline import admit_offline
from webhook.families.cel.base import CelPolicy
from webhook.families.cel.family import CelFamily
from webhook.policy.documents import Document
from webhook.policy.family import CompileEnv
from webhook.policy.snapshot import PolicySnapshot, PolicyStore
from webhook.state.memory import InMemoryClusterState
from webhook.testsuite.command import run_test_command

@pytest.mark.skipif(CORPUS is None, reason="the shared conformance corpus is not beside this checkout")
def test_the_whole_conformance_corpus_agrees(fast_path_agrees_with_reference, forms_checked):
    shadow = fast_path_agrees_with_reference
    out = io.StringIO()
    paths = sorted(str(p) for p in CORPUS.iterdir() if p.is_dir())
    run_test_command(argparse.Namespace(paths=paths, detailed_results=False, output="json", fail_only=False), out, io.StringIO())
    assert not shadow.mismatches, shadow.mismatches[:3]
    print("compared", shadow.compared, "decided", shadow.decided, "forms", forms_checked)
    assert forms_checked.python > 100, forms_checked
    assert shadow.compared > 500 and shadow.decided > shadow.compared // 2, (shadow.compared, shadow.decided)


def _corpus_documents():
    policies, resources = [], []
    for path in sorted(CORPUS.rglob("*.yaml")):
        try:
            docs = [d for d in shared_yaml(path) if isinstance(d, dict)]
        except yaml.YAMLError:
            continue
        if ".kyverno-test" in path.parts:
            resources += [d for d in docs if d.get("kind") not in ("Test", "Values", None) and "metadata" in d
                          and not str(d.get("apiVersion", "")).startswith(("policies.kyverno.io", "kyverno.io", "cli.kyverno.io"))]
        elif path.parts[-3].endswith("-vpol") or "pod-security-vpol" in path.parts:
            policies += [(path, i, d) for i, d in enumerate(docs) if d.get("kind") in ("ValidatingPolicy", "PolicyException")]
    return policies, resources


@pytest.mark.skipif(CORPUS is None, reason="the shared conformance corpus is not beside this checkout")
async def test_all_corpus_validating_policies_together_agree_on_every_corpus_resource(fast_path_agrees_with_reference,
                                                                                       monkeypatch, forms_checked):
    """Loaded together, every resource of the corpus, created, updated and scanned, gets the same results from
    the policies' fast paths as from the reference path."""
    from webhook.families.cel.fusedgroup import FusedGroup

    by_group = []  # the decisions a joined program took
    decide = FusedGroup.decide

    def counted(self, plan, request, ctx):
        found = decide(self, plan, request, ctx)
        by_group.extend(outcome is not None for outcome in found.values())
        return found
    monkeypatch.setattr(FusedGroup, "decide", counted)
    policies, resources = _corpus_documents()
    docs = [Document(str(path), i, d, None) for path, i, d in policies]
    result = CelFamily().compile(docs, CompileEnv(CEL))
    store = PolicyStore()
    store.publish(PolicySnapshot.of(result.policies, 1))
    eng = AdmissionEngine(store, InMemoryClusterState(NAMESPACES))
    assert len(result.policies) > 50
    unique = list({json.dumps(r, sort_keys=True): r for r in resources}.values())
    for index, resource in enumerate(unique[::4]):  # a quarter of them, the other operations on a twelfth:
        await admit_offline(eng, resource, dry_run=True)  # the suite's time is shared too
        if index % 3 == 0:
            await admit_offline(eng, resource, old=resource, operation="UPDATE", dry_run=True)
            await admit_offline(eng, resource, dry_run=True, background=True)
    shadow = fast_path_agrees_with_reference
    assert not shadow.mismatches, shadow.mismatches[:3]
    grouped = [p for p in result.policies if isinstance(p, CelPolicy) and p.route.group is not None]
    parts = [part for plan in grouped[0].route.group._plans.values() for part in plan.parts]
    print("compared", shadow.compared, "decided", shadow.decided, "by joined programs", sum(by_group),
          "grouped", len(grouped), "joined programs",
          len(parts), "members", sorted(len(part.tables) for part in parts), "forms", forms_checked)
    assert len(grouped) > 50 and len(parts) > 3  # the groups were active: decisions from joined programs
    assert sum(by_group) > shadow.decided // 2
    # the values of joined programs' Python forms (no runtime run then), checked against the runtime's
    assert forms_checked.python > 500, forms_checked
    assert shadow.compared > 3_000 and shadow.decided > shadow.compared // 2


def _match_requests():
    from tests.families.cel.test_match import request

    shapes = [dict(), dict(kind="Deployment", group="apps", resource="deployments"),
              dict(kind="CronJob", group="batch", resource="cronjobs"), dict(kind="Job", group="batch", resource="jobs"),
              dict(kind="Namespace", resource="namespaces", namespace=""), dict(kind="ClusterRole",
              group="rbac.authorization.k8s.io", resource="clusterroles", namespace=""),
              dict(kind="Ingress", group="networking.k8s.io", resource="ingresses"),
              dict(kind="Pod", version="v2")]
    for shape in shapes:
        for op in ("CREATE", "UPDATE", "DELETE", "CONNECT"):
            for sub in ("", "status"):
                for extra in (dict(namespace="other", name="x"), dict(generate_name="web-"),
                              dict(labels={"app": "web", "tier": "frontend"})):
                    yield request(**{**shape, **extra, "op": op, "sub": sub})


def test_remembered_static_matches_are_the_matches(fast_path_agrees_with_reference):
    """Which variant a policy applies is remembered per resource and operation only where nothing else is
    read: every corpus policy (and some with selectors and names) picks the same variant as matching anew."""
    from webhook.families.cel.base import CelPolicy
    from webhook.model.policy import EvalContext

    texts = [policy(VALIDATIONS).replace("resources: [pods]}", f"resources: [pods], {extra}}}")
             for extra in ("resourceNames: [p, x]", "scope: Namespaced", "operations: ['*']")]
    texts.append(policy(VALIDATIONS).replace("    resourceRules:", "    objectSelector: {matchLabels: {app: web}}\n"
                                                                 "    resourceRules:"))
    docs = [Document("p.yaml", i, yaml.safe_load(named(f"p{i}", t)), None) for i, t in enumerate(texts)]
    if CORPUS is not None:
        docs += [Document(str(path), i, d, None) for path, i, d in _corpus_documents()[0]]
    policies = [p for p in CelFamily().compile(docs, CompileEnv(CEL)).policies if isinstance(p, CelPolicy)]
    static = [p.static_match for p in policies]
    assert any(static) and not all(static), static  # both kinds are exercised, with the corpus or without it
    state = InMemoryClusterState(NAMESPACES)
    for _ in range(2):  # the second round answers from what the first remembered
        for req in _match_requests():
            ctx = EvalContext(state, NAMESPACES[0], False, request=req)
            for p in policies:
                assert p.variant_for(req, req.object, ctx) is p._variant_for(req, req.object, ctx), (p.name, req)
