"""A Kyverno policy whose JMESPath nests past the interpreter's depth is refused when it is loaded, naming the
rule and the field: it passed `quartermaster validate` and failed at run time with RecursionError."""

from webhook.cli import main
from webhook.families.kyverno.jp_budget import MAX_DEPTH

DEEP = " || ".join(["request.object.metadata.labels.team"] * 3000)

POLICY = f"""\
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: team-label
spec:
  validationFailureAction: Enforce
  rules:
  - name: needs-team
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      message: "a team label is required"
      deny:
        conditions:
          any:
          - key: "{{{{ {DEEP} }}}}"
            operator: Equals
            value: ""
"""


def test_validate_refuses_a_query_nested_too_deeply(tmp_path, capsys):
    policies = tmp_path / "p"
    policies.mkdir()
    (policies / "deep.yaml").write_text(POLICY)
    assert main(["validate", str(policies)]) == 2
    out = capsys.readouterr().out
    assert "rule needs-team" in out and "/validate/deny/conditions/any/0/key" in out, out
    assert f"more than the limit of {MAX_DEPTH}" in out, out


def test_a_shallow_query_still_loads(tmp_path, capsys):
    policies = tmp_path / "p"
    policies.mkdir()
    (policies / "fine.yaml").write_text(POLICY.replace(DEEP, "request.object.metadata.labels.team || ''"))
    assert main(["validate", str(policies)]) == 0, capsys.readouterr().out
