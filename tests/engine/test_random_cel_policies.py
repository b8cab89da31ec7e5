"""Random groups of CEL ValidatingPolicies on random pods: the engine's answer with its fast paths (each policy's
fused program, the group's joined program with shared bindings and a trimmed pod) is the reference path's, result for
result. The policies read the pod the way the pod-security library does: optional chains, `all`/`exists` over the
containers, variables that concatenate container lists (each spelt its own way), match conditions."""

import json
import random

import pytest

from tests.families.cel.test_fused import engine, named, policy
from webhook.engine.offline import admit_offline
from webhook.families.cel.fusedgroup import FusedGroup
from webhook.policy.family import CelEvaluation

BOOL_LEAVES = ["object.spec.?hostNetwork.orValue(false)", "has(object.spec.volumes)", "true",
               "object.metadata.?labels.?team.orValue('') == 'a'", "object.spec.containers.size() > 1",
               "variables.v0", "variables.ok", "size(variables.v1) > 0",
               "object.spec.?securityContext.?runAsNonRoot.orValue(false)"]
CONTAINER_PREDS = ["c.?securityContext.?privileged.orValue(false) == false", "c.image.startsWith('nginx')",
                   "c.?ports.orValue([]).all(p, p.?hostPort.orValue(0) == 0)", "has(c.resources)",
                   "c.?securityContext.?capabilities.?add.orValue([]).size() == 0", "c.name in ['c', 'd']",
                   "(c.?securityContext.?runAsUser.orValue(1)) > 0"]
LISTS = ["object.spec.containers", "(object.spec.containers + object.spec.?initContainers.orValue([]))",
         "((object.spec.containers +  (object.spec.?initContainers.orValue([]))))", "variables.all"]
VARS = {"ok": ["object.spec.?hostNetwork.orValue(false) || object.spec.?hostPID.orValue(false) && false",
               "(object.spec.?hostNetwork.orValue(false) || object.spec.?hostPID.orValue(false)) && false"],
        "v0": ["object.spec.?hostPID.orValue(false) == false", "(object.spec.?hostIPC.orValue(false)) == false"],
        "v1": ["object.spec.containers.map(c, c.name)", "object.metadata.?labels.orValue({})"],
        "all": ["object.spec.containers + object.spec.?initContainers.orValue([])",
                "(object.spec.containers + (object.spec.?initContainers.orValue([])))"]}


def boolean(rng, depth: int) -> str:
    if depth == 0 or rng.random() < 0.3:
        return rng.choice(BOOL_LEAVES)
    kind = rng.randrange(5)
    if kind == 0:
        return f"({boolean(rng, depth - 1)}) {rng.choice(['&&', '||'])} ({boolean(rng, depth - 1)})"
    if kind == 1:
        return f"!({boolean(rng, depth - 1)})"
    if kind == 2:
        return f"{rng.choice(LISTS)}.{rng.choice(['all', 'exists'])}(c, {rng.choice(CONTAINER_PREDS)})"
    if kind == 3:
        return f"{boolean(rng, depth - 1)} ? {boolean(rng, depth - 1)} : {boolean(rng, depth - 1)}"
    return f"object.metadata.?labels.?tier.orValue('x') {rng.choice(['==', '!='])} 'infra'"


def a_policy(rng, name: str) -> str:
    validations = "\n".join(f'- {{expression: {json.dumps(boolean(rng, 2))}, message: "m{i}"}}'
                            for i in range(rng.randint(1, 3)))
    variables = "variables:\n" + "\n".join(f'- {{name: {n}, expression: {json.dumps(rng.choice(v))}}}' for n, v in VARS.items())
    conditions = ""
    if rng.random() < 0.3:
        conditions = f'matchConditions:\n- {{name: c, expression: {json.dumps(boolean(rng, 1))}}}'
    return named(name, policy(validations, conditions=conditions, variables=variables))


def a_pod(rng) -> dict:
    containers = [{"name": rng.choice("cde"), "image": rng.choice(["nginx", "busybox", "nginx:1"])}
                  for _ in range(rng.randint(1, 3))]
    for c in containers:
        if rng.random() < 0.4:
            c["securityContext"] = rng.choice([{"privileged": True}, {"runAsUser": 0}, {"capabilities": {"add": ["NET_ADMIN"]}},
                                               {"privileged": None}, {"runAsUser": 1000}, {}])
        if rng.random() < 0.3:
            c["ports"] = [{"containerPort": 80, **({"hostPort": 8080} if rng.random() < 0.5 else {})}]
        if rng.random() < 0.2:
            c["resources"] = {"limits": {"cpu": "1"}}
    spec = {"containers": containers}
    if rng.random() < 0.3:
        spec["initContainers"] = [{"name": "i", "image": "busybox", "securityContext": {"privileged": rng.random() < 0.5}}]
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        if rng.random() < 0.2:
            spec[key] = rng.choice([True, False, None])
    if rng.random() < 0.2:
        spec["volumes"] = [{"name": "v", "emptyDir": {}}]
    if rng.random() < 0.2:
        spec["securityContext"] = rng.choice([{"runAsNonRoot": True}, {}, None])
    labels = rng.choice([{}, {"team": "a"}, {"tier": "infra"}, {"team": "b", "tier": "web"}])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "apps", "labels": labels}, "spec": spec}


def answer(result):
    return result.allowed, [(str(r.policy), r.rule, r.outcome.value, r.message) for r in result.results]


@pytest.mark.parametrize("seed", range(3))
async def test_random_policy_groups_answer_as_the_reference_path(seed, monkeypatch):
    rng = random.Random(seed)
    decided = []
    decide = FusedGroup.decide

    def counted(self, plan, request, ctx):
        outcomes = decide(self, plan, request, ctx)
        decided.extend(outcome for outcome in outcomes.values() if outcome is not None)
        return outcomes
    monkeypatch.setattr(FusedGroup, "decide", counted)
    compared = 0
    for _ in range(12):
        text = "\n---\n".join(a_policy(rng, f"p{i}") for i in range(rng.randint(2, 5)))
        pods = [a_pod(rng) for _ in range(4)]
        fast = engine(text)
        fast_answers = [answer(await admit_offline(fast, pod)) for pod in pods]
        slow = engine(text, evaluation=CelEvaluation.REFERENCE)
        reference_answers = [answer(await admit_offline(slow, pod)) for pod in pods]
        for pod, got, expected in zip(pods, fast_answers, reference_answers):
            assert got == expected, (text, json.dumps(pod))
            compared += 1
    assert compared == 48 and len(decided) > 60  # the joined programs decided most members' outcomes


async def test_variables_of_another_precedence_stay_apart_in_the_joined_program(monkeypatch):
    """The two spellings of `ok` differ only in parentheses, and those change the value: each policy keeps its own."""
    def with_ok(name: str, ok: str) -> str:
        return named(name, policy('- {expression: "!variables.ok", message: m}',
                                  variables=f"variables:\n- {{name: ok, expression: {json.dumps(ok)}}}"))
    text = with_ok("a", VARS["ok"][0]) + "\n---\n" + with_ok("b", VARS["ok"][1])
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "apps"},
           "spec": {"containers": [{"name": "c", "image": "nginx"}], "hostNetwork": True}}
    decided = []
    decide = FusedGroup.decide
    monkeypatch.setattr(FusedGroup, "decide", lambda self, *args: decided.append(1) or decide(self, *args))
    got = answer(await admit_offline(engine(text), pod))
    assert decided and got == (False, [("ValidatingPolicy/a", "", "fail", "m"), ("ValidatingPolicy/b", "", "pass", "success")])
