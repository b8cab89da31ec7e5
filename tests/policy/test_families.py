"""The family seam: whole-set compilation, identities, compile errors as values, what refuses a set."""

from pathlib import Path

import pytest

from webhook.cel import CelCompiler
from webhook.model.policy import Phase, PolicyId
from webhook.policy.family import FamilyRegistry
from webhook.policy.loader import PolicyLoader
from webhook.policy.perdocument import PerDocumentFamily
from tests.families.gate import API, GateFamily, gate
from tests.kinds import ADD_LABEL, ADD_ZONE, REQUIRE_LABEL, REQUIRE_TEAM, test_family


def load(tmp_path: Path, *texts: str, family: GateFamily | None = None):
    for index, text in enumerate(texts):
        (tmp_path / f"{index}.yaml").write_text(text)
    registry = FamilyRegistry([test_family(), family or GateFamily()])
    return PolicyLoader(registry, CelCompiler()).load(tmp_path)


def test_a_family_compiles_all_of_its_documents_at_once(tmp_path):
    calls = []
    split = gate("g", "true").split("---\n")  # the Gate and its binding in separate files, a policy between
    result = load(tmp_path, split[0], REQUIRE_TEAM, split[1], family=GateFamily(calls.append))
    assert result.ok, result.errors
    assert len(calls) == 1 and [d.data["kind"] for d in calls[0]] == ["Gate", "GateBinding"]
    assert [p.id.kind for p in result.policies] == ["Gate", "RequireLabel"]  # load order across families


def test_two_kinds_may_share_a_name(tmp_path):
    result = load(tmp_path, REQUIRE_TEAM, ADD_ZONE.replace("add-zone", "require-team"))
    assert result.ok, result.errors
    ids = {p.id for p in result.policies}
    assert ids == {PolicyId("quartermaster.dev/v1alpha1", "RequireLabel", "require-team"),
                   PolicyId("quartermaster.dev/v1alpha1", "AddLabel", "require-team")}
    assert set(result.annotations) == ids
    assert {str(i) for i in ids} == {"RequireLabel/require-team", "AddLabel/require-team"}


def test_the_same_identity_twice_refuses_the_set(tmp_path):
    (error,) = load(tmp_path, REQUIRE_TEAM, REQUIRE_TEAM).errors
    assert "RequireLabel 'require-team' is already defined in 0.yaml#0" in error.message and error.file == "1.yaml"


def test_namespaced_identities_differ_by_namespace(tmp_path):
    a = gate("g", "true").replace("name: g\n", "name: g\n  namespace: a\n", 1).replace("name: g-binding\n", "name: g-binding\n  namespace: a\n")
    b = gate("g", "true").replace("name: g\n", "name: g\n  namespace: b\n", 1).replace("name: g-binding\n", "name: g-binding\n  namespace: b\n")
    result = load(tmp_path, a, b)
    assert result.ok, result.errors
    assert sorted(p.id.qualified_name for p in result.policies) == ["a/g", "b/g"]


def test_a_broken_policy_is_kept_with_its_error(tmp_path):
    result = load(tmp_path, gate("g", "object.("))
    assert result.ok
    (policy,) = result.policies
    assert policy.error and "object.(" in policy.error


def test_a_set_level_family_error_refuses_the_load(tmp_path):
    text = gate("g", "true").replace("gate: g", "gate: nope")
    (error,) = load(tmp_path, text).errors
    assert error.file == "0.yaml" and error.document == 1 and error.field == "spec.gate"
    assert error.line == text.splitlines().index("  gate: nope") + 1
    assert "no Gate named 'nope'" in error.message


def test_a_family_that_raises_refuses_the_set_and_says_which(tmp_path):
    def boom(documents):
        raise RuntimeError("bug")

    (error,) = load(tmp_path, gate("g", "true"), family=GateFamily(boom)).errors
    assert "the gates policy family failed: RuntimeError: bug" in error.message and error.file == "0.yaml"


def test_unknown_kinds_name_their_groups_kinds_or_the_policy_groups(tmp_path):
    """One short line: the kinds of the document's API group when it has policies, else the policy groups
    (the message listed every kind of every family, forty of them, on each stray document)."""
    (error,) = load(tmp_path, f"apiVersion: {API}\nkind: Fence\nmetadata: {{name: f}}\n").errors
    assert f"{API} Gate" in error.message and f"{API} GateBinding" in error.message and "RequireLabel" not in error.message
    (tmp_path / "other").mkdir()
    (error,) = load(tmp_path / "other", "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n").errors
    assert "not a policy" in error.message and "gates.example.org" in error.message and "quartermaster.dev" in error.message


def test_a_kind_claimed_by_two_families_is_refused():
    with pytest.raises(ValueError, match="claimed by families test and other"):
        FamilyRegistry([test_family(), PerDocumentFamily("other", [REQUIRE_LABEL])])


def test_phases_come_from_the_family(tmp_path):
    result = load(tmp_path, gate("both", "true", mutate=True), ADD_ZONE)
    assert {p.id.name: p.phases for p in result.policies} == {
        "both": {Phase.MUTATE, Phase.VALIDATE}, "add-zone": {Phase.MUTATE}}
    assert ADD_LABEL.kind.schema is not None
