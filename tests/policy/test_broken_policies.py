"""A policy that does not compile is served with its failure policy, and shown: a warning at load, listed in
/readyz (degraded), counted in quartermaster_policies_broken; `validate` reports exactly the same load."""

import io
import json
import logging

from tests.kinds import pod
from tests.support import eventually, policy_dir, review, running_server
from webhook.validate_command import run_validate

POLICY = """\
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata:
  name: {name}
spec:
  validationActions: [Deny]
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE]
      resources: [pods]
  variables:
  - name: containers
    expression: object.spec.containers
  validations:
  - expression: "{expression}"
    message: containers must not be privileged
"""

GOOD = "variables.containers.all(c, !c.?securityContext.?privileged.orValue(false))"
SYNTAX = "variables.containers.all(c, "
UNDEFINED = "variables.initContainers.size() == 0"  # a variable the policy never declares


def _policies(tmp_path):
    return policy_dir(tmp_path / "policies", {
        "good.yaml": POLICY.format(name="good", expression=GOOD),
        "syntax.yaml": POLICY.format(name="syntax", expression=SYNTAX),
        "undefined.yaml": POLICY.format(name="undefined", expression=UNDEFINED)})


async def _readyz(server):
    status, text = await server.get("/readyz")
    return status, json.loads(text)


async def test_broken_policies_are_logged_listed_and_counted(tmp_path, caplog):
    policies = _policies(tmp_path)
    with caplog.at_level(logging.INFO, logger="webhook"):
        async with running_server(policies, tmp_path) as server:
            status, body = await _readyz(server)
            assert status == 200 and body["status"] == "degraded" and body["policyErrors"] == []
            listed = body["brokenPolicies"]
            assert len(listed) == 2, listed
            assert any(line.startswith("syntax.yaml: document 0 field spec.validations[0].expression") for line in listed)
            assert any("undefined.yaml" in line and "undefined variable variables.initContainers" in line
                       and "ValidatingPolicy/undefined" in line and "Fail" in line for line in listed)
            metrics = (await server.get("/metrics"))[1]
            assert "quartermaster_policies_broken 2.0" in metrics
            warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING
                        and r.getMessage().startswith("policy does not compile")]
            assert len(warnings) == 2 and all(any(w.endswith(line) for line in listed) for w in warnings), warnings

            assert body["brokenPolicyCount"] == 2
            # the failure policy still answers (Fail: the pod is denied), as before
            assert (await server.admit("/validate", review(pod())))["allowed"] is False

            # a reload of a set that still holds them says nothing new (policy objects reload on any change)
            (policies / "good.yaml").write_text(POLICY.format(name="good", expression=GOOD) + "# edited\n")

            async def reloaded():
                status, body = await _readyz(server)
                return body if body["policyGeneration"] == 2 else None

            assert len((await eventually(reloaded, message="never reloaded"))["brokenPolicies"]) == 2
            assert len([r for r in caplog.records if r.getMessage().startswith("policy does not compile")]) == 2

            # fixed on reload: ready again, nothing listed, nothing counted
            (policies / "syntax.yaml").write_text(POLICY.format(name="syntax", expression=GOOD))
            (policies / "undefined.yaml").unlink()

            async def ready():
                status, body = await _readyz(server)
                return body if body["status"] == "ready" else None

            body = await eventually(ready, message="never ready after the fix")
            assert body["brokenPolicies"] == []
            assert "quartermaster_policies_broken 0.0" in (await server.get("/metrics"))[1]


async def test_a_refused_reload_keeps_listing_the_broken_policies_in_service(tmp_path):
    policies = _policies(tmp_path)
    async with running_server(policies, tmp_path) as server:
        (policies / "good.yaml").write_text("kind: [")

        async def refused():
            status, body = await _readyz(server)
            return body if body["policyErrors"] else None

        body = await eventually(refused, message="the bad edit was never refused")
        assert body["status"] == "degraded" and len(body["brokenPolicies"]) == 2
        assert "quartermaster_policies_broken 2.0" in (await server.get("/metrics"))[1]


async def test_validate_and_serve_report_the_same_broken_policies(tmp_path):
    policies = _policies(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    assert run_validate([policies], False, out, err) == 2
    problems = out.getvalue().splitlines()
    async with running_server(policies, tmp_path) as server:
        _, body = await _readyz(server)
    assert sorted(problems) == sorted(f"{policies}/{line}" for line in body["brokenPolicies"])
