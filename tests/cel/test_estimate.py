"""The static cost estimate (webhook.cel.estimate): an expression whose worst case exceeds Kubernetes' limit is
refused when it is compiled, naming the expression; what a request can make linear stays accepted."""

import pytest

from tests.cel.test_nul_admission import _POLICY as POD_POLICY
from webhook.cel import CelError
from webhook.cel.estimate import EXPRESSION_LIMIT, POLICY_LIMIT
from webhook.cli import main


@pytest.mark.parametrize("expression, part", [
    ("object.metadata.finalizers.distinct().size() == object.metadata.finalizers.size()", "distinct()"),
    ("sets.contains(object.spec.a, object.spec.b)", "sets.contains()"),
    ("object.spec.containers.all(c, object.spec.containers.indexOf(c) >= 0)", "indexOf()"),
    ("object.spec.containers.all(c, object.metadata.annotations.note.lowerAscii() != c.name)", "lowerAscii()"),
])
def test_an_expression_over_the_limit_is_refused_naming_it(compiler, expression, part):
    with pytest.raises(CelError) as caught:
        compiler.compile(expression)
    message = str(caught.value)
    assert expression[:40] in message and f"exceeds the limit of {EXPRESSION_LIMIT}" in message, message
    assert f"most of it: {part}" in message, message


@pytest.mark.parametrize("expression", [
    # each element's own list, bounded by the map guard: the elements share the request
    "object.spec.containers.all(c, !has(c.env) || c.env.map(e, e.name).distinct().size() == c.env.size())",
    # a map ranges over at most 1,000: indexOf of the same list within it is bounded too
    "object.spec.containers.map(c, object.spec.containers.indexOf(c)).size() >= 0",
    "object.spec.containers.all(c, c.image.lowerAscii().startsWith('registry.corp/'))",
    "object.metadata.annotations.note.findAll('[A-Z]').size() < 1000",
    "object.spec.volumes.all(v, !has(v.hostPath) || v.hostPath.path.split('/')[1] == 'data')",
    "sets.contains(['a', 'b'], object.spec.containers.map(c, c.name))",
])
def test_expressions_linear_in_the_request_are_accepted(compiler, expression):
    assert 0 < compiler.compile(expression).estimated_cost <= EXPRESSION_LIMIT


def policy(name: str, validations: str) -> str:
    return POD_POLICY.format(name=name) + "  validations:\n" + validations


def test_validate_refuses_the_policy_naming_the_field_and_expression(tmp_path, capsys):
    policies = tmp_path / "p"
    policies.mkdir()
    expression = "object.metadata.finalizers.distinct().size() == object.metadata.finalizers.size()"
    (policies / "fin.yaml").write_text(policy(
        "unique-finalizers", f"  - expression: \"{expression}\"\n    message: finalizers must be unique\n"))
    assert main(["validate", str(policies)]) == 2
    out = capsys.readouterr().out
    assert "spec.validations[0].expression" in out and expression in out, out
    assert f"exceeds the limit of {EXPRESSION_LIMIT}" in out, out


def test_a_policy_whose_expressions_together_exceed_the_policy_limit_is_refused(tmp_path, capsys):
    """Each expression under the limit for one (each about 9.4 million), eleven of them over the policy's."""
    policies = tmp_path / "p"
    policies.mkdir()
    checks = "".join(f"  - expression: \"!sets.contains(object.spec.names, ['a', 'b', 'c', 'd', 'e', 'f{i}'])\"\n"
                     f"    message: m{i}\n" for i in range(11))
    (policies / "many.yaml").write_text(policy("many-sets", checks))
    assert main(["validate", str(policies)]) == 2
    out = capsys.readouterr().out
    assert f"exceeds the limit of {POLICY_LIMIT} for one policy" in out, out
    (policies / "many.yaml").write_text(policy("many-sets", "".join(checks.splitlines(True)[:4])))
    assert main(["validate", str(policies)]) == 0
