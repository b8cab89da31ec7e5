"""load-tests/kyverno_differential.py and kyverno_variations.py, without Kyverno: the seeded variations, the
probe suites they are written into (run here by `quartermaster test`), and how a row's actual result is read."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from tests.support import load_tests_module

SUITE = """\
apiVersion: cli.kyverno.io/v1alpha1
kind: Test
metadata:
  name: require-team
policies:
- ../policy.yaml
resources:
- resources.yaml
variables: values.yaml
results:
- policy: require-team
  rule: team-label
  kind: Pod
  resources: [bad, good]
  result: fail
"""

POLICY = """\
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: require-team
spec:
  validationFailureAction: Enforce
  rules:
  - name: team-label
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      message: a team label is required
      pattern:
        metadata:
          labels:
            team: "?*"
"""

VALUES = """\
apiVersion: cli.kyverno.io/v1alpha1
kind: Values
policies:
- name: require-team
  resources:
  - name: bad
    values:
      request.operation: CREATE
"""


def _pod(name: str, labels: dict) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default", "labels": labels},
            "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}, {"name": "d", "image": "busybox:1"}]}}


def _suite(tmp_path: Path) -> Path:
    (tmp_path / "policy.yaml").write_text(POLICY)
    suite = tmp_path / ".kyverno-test"
    suite.mkdir()
    (suite / "kyverno-test.yaml").write_text(SUITE)
    (suite / "values.yaml").write_text(VALUES)
    (suite / "resources.yaml").write_text(yaml.safe_dump_all([_pod("bad", {"app": "x"}),
                                                             _pod("good", {"app": "x", "team": "ml"})]))
    return suite


def test_variations_are_repeatable_and_keep_the_identity_fields() -> None:
    variations = load_tests_module("kyverno_variations")
    resources = [_pod("bad", {"app": "x"}), _pod("good", {"app": "x", "team": "ml"})]
    first = variations.variations(resources, {"bad", "good"}, 5, variations.suite_rng(1, "suite"))
    again = variations.variations(resources, {"bad", "good"}, 5, variations.suite_rng(1, "suite"))
    other = variations.variations(resources, {"bad", "good"}, 5, variations.suite_rng(2, "suite"))
    assert [(v.name, v.edits, v.obj) for v in first] == [(v.name, v.edits, v.obj) for v in again]
    assert [v.obj for v in first] != [v.obj for v in other]
    assert [v.name for v in first] == [f"{n}-v{i}" for n in ("bad", "good") for i in range(5)]
    for v in first:
        assert v.obj["apiVersion"] == "v1" and v.obj["kind"] == "Pod"
        assert v.obj["metadata"]["name"] == v.name and v.obj["metadata"]["namespace"] == "default"
        assert v.edits
    # the originals are left as they were
    assert resources[0] == _pod("bad", {"app": "x"})


def test_a_probe_suite_expects_pass_for_every_variation_and_carries_per_resource_values(tmp_path: Path) -> None:
    differential = load_tests_module("kyverno_differential")
    suite = _suite(tmp_path)
    made = differential.write_probe(suite / "kyverno-test.yaml", "require-team", 3, seed=1)
    assert made == 6
    test = yaml.safe_load((suite / "kyverno-test.yaml").read_text())
    assert test["resources"] == ["resources.yaml", "probe-variations.yaml"]
    assert test["results"] == [{"policy": "require-team", "rule": "team-label", "kind": "Pod", "result": "pass",
                                "resources": [f"{n}-v{i}" for n in ("bad", "good") for i in range(3)]}]
    values = yaml.safe_load((suite / "values.yaml").read_text())
    assert [r["name"] for r in values["policies"][0]["resources"]] == ["bad", "bad-v0", "bad-v1", "bad-v2"]
    # `quartermaster test` runs the probe: one row per variation, each readable as an actual result
    rows = differential.quartermaster_rows({"require-team": suite})["require-team"]
    assert sorted(r.resource.rsplit("/", 1)[-1] for r in rows) == sorted(
        f"{n}-v{i}" for n in ("bad", "good") for i in range(3))
    assert {r.actual for r in rows} <= {"pass", "fail"}


def test_a_rows_actual_result_is_read_from_its_reason() -> None:
    row = load_tests_module("kyverno_differential").Row
    assert row("s", "p", "r", "x", "fail", "Want pass, got fail").actual == "fail"
    assert row("s", "p", "r", "x", "pass", "Ok").actual == "pass"
    assert row("s", "p", "r", "x", "pass", "Excluded").actual == "Excluded"


def test_the_corpus_suites_copy_and_rewrite_without_error(tmp_path: Path) -> None:
    corpus = load_tests_module("kyverno_differential").default_corpus()
    source = corpus / "best-practices" / "require-labels"
    if not source.is_dir():
        pytest.skip(f"no shared corpus at {corpus}")
    shutil.copytree(source, tmp_path / "require-labels")
    differential = load_tests_module("kyverno_differential")
    test_file = tmp_path / "require-labels" / ".kyverno-test" / "kyverno-test.yaml"
    assert differential.write_probe(test_file, "require-labels", 2, seed=1) > 0
    assert yaml.safe_load(test_file.read_text())["results"]
