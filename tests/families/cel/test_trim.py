"""Joined programs run on a trimmed `object` (webhook.families.cel.fused.trims, webhook.cel.reads): the parts
of the request the program cannot read are not converted into the runtime. The fused programs of every test
in this directory are also checked on whole and trimmed objects (trimcheck.py); here: the pod-security
policies on a notebook pod and on random pods, and every CEL expression of the conformance corpus on its
suite's resources."""

from __future__ import annotations

import copy
import sys

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.cel.differential import cel_texts
from tests.families.cel.test_fused import CEL, CORPUS, engine
from tests.families.cel.trimcheck import outcome
from tests.support import REPO, shared_yaml
from webhook.cel.to_python import Refused
from webhook.cel import Activation
from webhook.cel.reads import trim_plans
from webhook.cel.trim import TrimPlan, trimmed
from webhook.engine.offline import admit_offline
from webhook.families.cel import fused

LOAD_TESTS = REPO / "load-tests"
VPOL = CORPUS / "pod-security-vpol" if CORPUS is not None else None
needs_corpus = pytest.mark.skipif(VPOL is None or not VPOL.is_dir(), reason="the conformance corpus is not beside this checkout")


def _notebook_pod():
    sys.path.insert(0, str(LOAD_TESTS))
    try:
        import workload
    finally:
        sys.path.remove(str(LOAD_TESTS))
    return workload.notebook_pod("analysis-0", "apps")


def _pod_security_engine():
    texts = [p.read_text() for p in sorted(VPOL.glob("*/*/*.yaml"))
             if any(isinstance(d, dict) and d.get("kind") == "ValidatingPolicy" for d in yaml.safe_load_all(p.read_text()))]
    assert len(texts) >= 16
    return engine("\n---\n".join(texts))


def _plan(eng):
    [plan] = eng.store.snapshot.policies[0].route.group._plans.values()
    return plan


@needs_corpus
async def test_the_pod_security_policies_see_a_trimmed_notebook_pod(monkeypatch, trims_checked):
    eng = _pod_security_engine()
    seen = []
    run = fused.run
    monkeypatch.setattr(fused, "run", lambda program, shared, budget: seen.append(shared) or run(program, shared, budget))

    def refused(*_):  # what the runtime is given when the joined program's Python form cannot tell
        raise Refused
    monkeypatch.setattr(fused, "run_python", refused)
    pod = _notebook_pod()
    before = copy.deepcopy(pod)
    await admit_offline(eng, pod)
    assert pod == before
    plan = _plan(eng)
    assert set(plan.trims) == {"object"}
    [shared] = seen
    kept = shared.values["object"]
    assert set(kept) == {"spec"}  # no metadata, kind, apiVersion
    assert all(set(c) <= {"securityContext", "ports"} for c in kept["spec"]["containers"])
    assert not {"env", "resources", "volumeMounts", "image"} & {k for c in kept["spec"]["containers"] for k in c}
    assert trims_checked.trimmed >= 1


_WORDS = ["securityContext", "capabilities", "add", "drop", "ports", "hostPort", "containerPort", "volumes", "hostPath",
          "privileged", "allowPrivilegeEscalation", "runAsNonRoot", "runAsUser", "seccompProfile", "type", "procMount",
          "seLinuxOptions", "user", "role", "windowsOptions", "hostProcess", "sysctls", "name", "hostNetwork", "hostPID",
          "hostIPC", "containers", "initContainers", "ephemeralContainers", "emptyDir", "configMap", "csi", "secret",
          "appArmorProfile", "env", "image", "resources", "spec", "metadata", "labels"]
_LEAVES = st.none() | st.booleans() | st.integers(-2, 70_000) | st.floats(allow_nan=False) | st.text(max_size=4) \
    | st.sampled_from(["ALL", "NET_BIND_SERVICE", "SYS_ADMIN", "RuntimeDefault", "Localhost", "Unconfined", "Default",
                       "container_t", "kernel.shm_rmid_forced", ""])
# keys without NUL: the strict path refuses an activation with a NUL in a key (only cel-python reads those,
# docs/cel.md, NUL characters), even one no program reads, where the trimmed activation leaves it out. Nor lone
# surrogates: the runtime cannot convert them (the whole activation is an error, and the failure policy decides)
# where a trimmed one leaves them out; the API server never sends one (Go's JSON decoder makes them U+FFFD)
_KEYS = st.sampled_from(_WORDS) | st.text(st.characters(exclude_characters="\x00", exclude_categories=("Cs",)),
                                          max_size=3)
_JSON = st.recursive(_LEAVES, lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(_KEYS, inner, max_size=4), max_leaves=25)


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            yield from _paths(child, (*prefix, i))


@st.composite
def _pods(draw):
    """The notebook pod, a corpus-like small pod or random JSON, with random subtrees replaced, added, removed."""
    base = draw(st.sampled_from(["notebook", "small", "random"]))
    if base == "random":
        return draw(st.dictionaries(st.sampled_from(["spec", "metadata", "kind"]), _JSON, max_size=3))
    pod = _notebook_pod() if base == "notebook" else {"spec": {"containers": [{"name": "c", "image": "i"}]}}
    for _ in range(draw(st.integers(0, 6))):
        path = draw(st.sampled_from(list(_paths(pod))))
        parent = pod
        for key in path[:-1]:
            parent = parent[key]
        action = draw(st.sampled_from(["replace", "add", "remove"]))
        if not path:
            continue
        if action == "remove" and isinstance(parent, dict):
            del parent[path[-1]]
        elif action == "add" and isinstance(parent[path[-1]], dict):
            parent[path[-1]][draw(st.sampled_from(_WORDS))] = draw(_JSON)
        elif action == "add" and isinstance(parent[path[-1]], list):
            parent[path[-1]].append(draw(_JSON))
        else:
            parent[path[-1]] = draw(_JSON)
    return pod


@pytest.fixture(scope="module")
def joined():
    """The pod-security policies' joined program(s) and their trims, as a notebook pod's request plans them."""
    import asyncio

    if VPOL is None or not VPOL.is_dir():
        pytest.skip("the conformance corpus is not beside this checkout")
    eng = _pod_security_engine()
    asyncio.run(admit_offline(eng, _notebook_pod(), dry_run=True))
    plan = _plan(eng)
    assert plan.trims
    return [part.program for part in plan.parts], plan.trims


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(pod=_pods(), old=st.none() | _pods())
def test_random_pods_get_the_same_value_trimmed(joined, pod, old):
    programs, trims = joined
    values = {"object": pod, "oldObject": old, "request": {"operation": "CREATE"}, "namespaceObject": None,
              "exceptions": {}}
    for program in programs:
        assert outcome(program, Activation(trimmed(values, trims))) == outcome(program, Activation(values))


def _suites():
    """(every CEL text of a policy directory's CEL-family documents and Kyverno `cel` rules, its variables,
    the resources of its test suite)."""
    for directory in sorted(p for p in CORPUS.glob("*/*") if p.is_dir()):
        texts, variables, resources = [], [], []
        for path in sorted(directory.rglob("*.yaml")):
            try:
                docs = [d for d in shared_yaml(path) if isinstance(d, dict)]
            except yaml.YAMLError:
                continue
            for doc in docs:
                if str(doc.get("apiVersion", "")).startswith(("policies.kyverno.io", "kyverno.io/", "admissionregistration")):
                    texts += list(cel_texts(doc))
                    spec = doc.get("spec") or {}
                    variables += [(v["name"], v["expression"]) for v in spec.get("variables") or []
                                  if isinstance(v, dict) and isinstance(v.get("name"), str)
                                  and isinstance(v.get("expression"), str)]
                elif ".kyverno-test" in path.parts and "metadata" in doc and doc.get("kind") not in ("Test", "Values"):
                    resources.append(doc)
        if texts and resources:
            yield directory.name, texts, variables, resources


@needs_corpus
def test_every_corpus_cel_expression_gets_the_same_value_on_trimmed_resources():
    """Each CEL text of the corpus (with its policy's variables bound in), compiled as fused programs are, on
    each resource of its suite as `object` and as `oldObject` (the next one as the other): the same value."""
    compared = trimmed_count = 0
    for name, texts, variables, resources in _suites():
        for text in dict.fromkeys(texts):
            for env in ("admission", "kyverno"):
                program = CEL.compile_bound(text, variables, env, strict=True)
                if program is None or program.tree() is None:
                    continue
                plans = trim_plans([program.tree()], fused.TRIMMED_ROOTS)
                trims = {root: t for root, plan in plans.items() if (t := _trim(plan)) is not None}
                for i, resource in enumerate(resources):
                    values = {"object": resource, "oldObject": resources[(i + 1) % len(resources)],
                              "request": {"operation": "UPDATE", "userInfo": {"username": "u"}},
                              "namespaceObject": {"metadata": {"name": "apps"}}, "params": None, "exceptions": {}}
                    compared += 1
                    trimmed_count += bool(trims)
                    assert outcome(program, Activation(trimmed(values, trims))) == outcome(program, Activation(values)), \
                        (name, text, env, resource.get("metadata"))
    print("compared", compared, "trimmed", trimmed_count)
    assert compared > 2_000 and trimmed_count > compared // 2


def _trim(plan: TrimPlan):
    from webhook.cel.trim import compile_trim

    return compile_trim(plan)
