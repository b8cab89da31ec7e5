"""`quartermaster convert`: the converted ValidatingPolicy/MutatingPolicy passes the original policy's suite."""

import io
import shutil
from argparse import Namespace
from pathlib import Path

import pytest
import yaml

from tests.families.kyverno.test_conformance import CORPUS
from webhook.testsuite.command import run_test_command
from webhook.convert_command import run_convert
from webhook.families.kyverno.convert import convert_document
from webhook.families.kyverno.convert_pattern import Untranslatable, translate

SUITES = ["pod-security/baseline/disallow-privileged-containers", "pod-security/baseline/disallow-host-namespaces",
          "pod-security/restricted/require-run-as-nonroot", "pod-security-cel/baseline/disallow-capabilities",
          "best-practices/require-ro-rootfs", "other/add-labels"]


def test_pattern_translation():
    assert translate({"metadata": {"labels": {"app": "?*"}}}) == \
        "has(object.metadata) && has(object.metadata.labels) && has(object.metadata.labels.app) && " \
        "string(object.metadata.labels.app) != ''"
    assert translate({"spec": {"X(hostPID)": "null"}}) == "has(object.spec) && !has(object.spec.hostPID)"
    assert "matches(\"^nginx:.*$\")" in translate({"image": "nginx:*"})
    assert translate({"tier": "a | b"}) == \
        '(has(object.tier) && ((string(object.tier) == "a") || (string(object.tier) == "b")))'
    with pytest.raises(Untranslatable, match="conditional anchor"):
        translate({"(name)": "x"})
    with pytest.raises(Untranslatable, match="quantities"):
        translate({"memory": "<=2Gi"})


def test_rules_without_a_faithful_translation_are_named_with_the_reason():
    policy = {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "p"},
              "spec": {"rules": [{"name": "d", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
                                  "validate": {"deny": {"conditions": {"any": []}}}}]}}
    result = convert_document(policy)
    assert result.documents == [] and result.refused == ["p/d: validate.deny has no faithful CEL translation here"]


@pytest.mark.skipif(not CORPUS.is_dir(), reason="Kyverno policy library not found")
@pytest.mark.parametrize("suite", SUITES)
def test_converted_policy_passes_the_original_suite(suite, tmp_path):
    source = CORPUS / suite
    target = tmp_path / source.name
    shutil.copytree(source, target)
    policy_file = target / f"{source.name}.yaml"
    out, err = io.StringIO(), io.StringIO()
    assert run_convert(Namespace(files=[str(policy_file)]), out, err) == 0, err.getvalue()
    converted = list(yaml.safe_load_all(out.getvalue()))
    assert converted and all(d["apiVersion"] == "policies.kyverno.io/v1" for d in converted)
    policy_file.write_text(out.getvalue())
    report, errors = io.StringIO(), io.StringIO()
    args = Namespace(paths=[str(target)], detailed_results=True, output="table", fail_only=False)
    assert run_test_command(args, report, errors) == 0, report.getvalue()[-3000:] + errors.getvalue()


def test_an_alias_bomb_is_refused_with_its_line_not_expanded(tmp_path):
    from tests.testsuite.test_runner import BOMB

    (tmp_path / "bomb.yaml").write_text(BOMB)
    out, err = io.StringIO(), io.StringIO()
    assert run_convert(Namespace(files=[str(tmp_path / "bomb.yaml")]), out, err) == 2
    assert "excessive aliasing" in err.getvalue() and "line 8" in err.getvalue() and not out.getvalue()
