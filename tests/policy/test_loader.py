import os
from pathlib import Path

from webhook.cel import CelCompiler
from webhook.policy.loader import PolicyLoader
from webhook.policy.snapshot import PolicyStore
from webhook.policy.source import DirectoryPolicySource
from tests.kinds import ADD_ZONE, REQUIRE_TEAM, test_registry


def loader() -> PolicyLoader:
    return PolicyLoader(test_registry(), CelCompiler())


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_text(text)
    return path


def test_loads_every_document(tmp_path):
    write(tmp_path, "a.yaml", REQUIRE_TEAM + "---\n" + ADD_ZONE)
    result = loader().load(tmp_path)
    assert result.ok and {p.name for p in result.policies} == {"require-team", "add-zone"}
    assert {p.source.document for p in result.policies} == {0, 1}


def test_unknown_kind_is_an_error(tmp_path):
    write(tmp_path, "x.yaml", "apiVersion: quartermaster.dev/v1alpha1\nkind: Mystery\nmetadata: {name: m}\nspec: {}\n")
    (error,) = loader().load(tmp_path).errors
    assert error.file == "x.yaml" and error.line == 2 and error.field == "kind"
    assert "unknown policy kind quartermaster.dev/v1alpha1 Mystery" in error.message and "RequireLabel" in error.message


def test_schema_error_names_file_document_line_field(tmp_path):
    text = REQUIRE_TEAM + "---\n" + ADD_ZONE.replace("  value: b\n", "  value: b\n  colour: red\n")
    write(tmp_path, "p.yaml", text)
    (error,) = loader().load(tmp_path).errors
    assert error.file == "p.yaml" and error.document == 1
    assert error.field == "spec.colour" and "unknown field 'colour'" in error.message and "allowed fields" in error.message
    assert error.line == text.splitlines().index("  colour: red") + 1
    assert str(error).startswith("p.yaml:")


def test_wrong_type_points_at_the_line(tmp_path):
    text = "apiVersion: quartermaster.dev/v1alpha1\nkind: RequireLabel\nmetadata:\n  name: r\nspec:\n  label: team\n  failurePolicy: Sometimes\n"
    write(tmp_path, "r.yaml", text)
    (error,) = loader().load(tmp_path).errors
    assert error.field == "spec.failurePolicy" and error.line == 7 and "Sometimes" in error.message


def test_missing_required_field(tmp_path):
    write(tmp_path, "r.yaml", "apiVersion: quartermaster.dev/v1alpha1\nkind: RequireLabel\nmetadata:\n  name: r\nspec: {}\n")
    (error,) = loader().load(tmp_path).errors
    assert error.field == "spec.label" and "required" in error.message and error.line == 5


def test_compile_error_from_bad_cel(tmp_path):
    text = REQUIRE_TEAM + "  matchConditions:\n  - name: broken\n    expression: \"object.(\"\n"
    write(tmp_path, "c.yaml", text)
    (error,) = loader().load(tmp_path).errors
    assert error.field == "spec.matchConditions[0].expression" and "does not compile" in error.message and error.line == 9


def test_compiler_field_error(tmp_path):
    write(tmp_path, "c.yaml", REQUIRE_TEAM.replace("label: team", "label: -team"))
    (error,) = loader().load(tmp_path).errors
    assert error.field == "spec.label" and error.line == 6


def test_yaml_syntax_error(tmp_path):
    write(tmp_path, "bad.yaml", REQUIRE_TEAM + "---\nkind: [unclosed\n")
    (error,) = loader().load(tmp_path).errors
    assert error.file == "bad.yaml" and error.document == 1 and "invalid YAML" in error.message and error.line


def test_duplicate_names(tmp_path):
    write(tmp_path, "a.yaml", REQUIRE_TEAM)
    write(tmp_path, "b.yml", REQUIRE_TEAM)
    (error,) = loader().load(tmp_path).errors
    assert "already defined in a.yaml#0" in error.message and error.file == "b.yml"


def test_non_mapping_document(tmp_path):
    write(tmp_path, "l.yaml", "- a\n- b\n")
    (error,) = loader().load(tmp_path).errors
    assert "must be a mapping" in error.message


def test_missing_directory(tmp_path):
    (error,) = loader().load(tmp_path / "nope").errors
    assert "does not exist" in error.message


def test_reload_keeps_previous_snapshot_on_error(tmp_path):
    write(tmp_path, "a.yaml", REQUIRE_TEAM)
    store = PolicyStore()
    source = DirectoryPolicySource(tmp_path, loader(), store)
    assert source.reload().ok
    first = store.snapshot
    write(tmp_path, "a.yaml", REQUIRE_TEAM + "  bogus: 1\n")
    assert not source.reload().ok
    assert store.snapshot is first and store.status.errors and store.status.loaded
    write(tmp_path, "a.yaml", REQUIRE_TEAM.replace("team", "owner"))
    assert source.reload().ok
    assert store.snapshot.generation == 2 and not store.status.errors
    assert store.snapshot.validators[0].label == "owner"


def test_configmap_mount_layout(tmp_path):
    """kubelet's atomic writer: files are links into ..data, which is swapped to a new timestamped dir."""
    old = tmp_path / "..2026_01_01"
    old.mkdir()
    write(old, "policy.yaml", REQUIRE_TEAM)
    os.symlink(old.name, tmp_path / "..data")
    os.symlink("..data/policy.yaml", tmp_path / "policy.yaml")
    store = PolicyStore()
    source = DirectoryPolicySource(tmp_path, loader(), store)
    result = source.reload()
    assert result.ok and len(result.policies) == 1  # read once, not again through ..data
    before = source.fingerprint()
    new = tmp_path / "..2026_01_02"
    new.mkdir()
    write(new, "policy.yaml", REQUIRE_TEAM.replace("team", "owner"))
    os.symlink(new.name, tmp_path / "..data_tmp")
    os.replace(tmp_path / "..data_tmp", tmp_path / "..data")
    assert source.fingerprint() != before
    assert source.reload().ok and store.snapshot.validators[0].label == "owner"
