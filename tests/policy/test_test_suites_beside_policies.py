"""Kyverno CLI test suites kept beside policies (a kyverno-test.yaml and its resources, or a .kyverno-test/
folder) are left out with one notice; a document of an unknown kind elsewhere is refused in one short line."""

import io
import logging
import shutil

import pytest

from tests.support import policy_dir, running_server
from webhook.app import PolicyLoadFailed, Quartermaster, Settings
from webhook.validate_command import run_validate

CONFORMANCE = "/work/shared/conformance/kyverno-policies/best-practices-mpol/add-safe-to-evict"
SUITE_FILES = ["kyverno-test.yaml", "resource.yaml", "myapp-pod03-patched.yaml", "myapp-pod04-patched.yaml"]


def _copy(tmp_path, suite_folder):
    """The conformance folder, its suite in `suite_folder` beside the policy (writable: the corpus is read-only)."""
    root = tmp_path / "policies"
    shutil.copytree(CONFORMANCE, root, copy_function=shutil.copyfile)
    (root / ".kyverno-test").rename(root / suite_folder)
    return root


def _notices(caplog):
    return [r.getMessage() for r in caplog.records if "Kyverno CLI test" in r.getMessage()]


@pytest.mark.parametrize("suite_folder", ["kyverno-test", "tests"])
async def test_serve_loads_the_policies_beside_a_test_suite(tmp_path, caplog, suite_folder):
    policies = _copy(tmp_path, suite_folder)
    with caplog.at_level(logging.INFO, logger="webhook"):
        async with running_server(policies, tmp_path) as server:
            status, text = await server.get("/readyz")
            assert status == 200 and '"status":"ready"' in text.replace(" ", ""), text
            assert [p.id.name for p in server.qm.store.snapshot.policies] == ["add-safe-to-evict"]
    notices = _notices(caplog)
    assert len(notices) == 1 and "left out 7 Kyverno CLI test documents" in notices[0], notices


def test_a_policy_set_that_is_a_test_folder_loads_nothing_and_refuses_nothing(tmp_path):
    policies = _copy(tmp_path, ".kyverno-test") / ".kyverno-test"
    out, err = io.StringIO(), io.StringIO()
    assert run_validate([policies], True, out, err) == 0, out.getvalue()
    assert out.getvalue() == "" and err.getvalue().count("left out 7 Kyverno CLI test documents") == 1


def test_validate_agrees_and_says_it_once(tmp_path):
    policies = _copy(tmp_path, "kyverno-test")
    out, err = io.StringIO(), io.StringIO()
    assert run_validate([policies], False, out, err) == 0, out.getvalue()
    assert out.getvalue() == "" and err.getvalue().count("left out") == 1


def test_an_unknown_kind_elsewhere_is_refused_in_one_short_line(tmp_path):
    policies = _copy(tmp_path, "kyverno-test")
    (policies / "stray.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {}\n")
    qm = Quartermaster.build(Settings(policies=policies), with_metrics=False)
    with pytest.raises(PolicyLoadFailed) as failed:
        qm.load_policies()
    (error,) = failed.value.result.errors
    assert error.file == "stray.yaml" and error.field == "kind"
    assert "unknown policy kind v1 ConfigMap: not a policy" in error.message and len(str(error)) < 200, str(error)


def test_an_unknown_kind_of_a_policy_group_lists_that_groups_kinds(tmp_path):
    policies = policy_dir(tmp_path / "p", {"x.yaml": "apiVersion: policies.kyverno.io/v1\nkind: ValidatingPolcy\n"
                                                   "metadata: {name: x}\nspec: {}\n"})
    qm = Quartermaster.build(Settings(policies=policies), with_metrics=False)
    (error,) = qm.source.reload().errors
    assert "policies.kyverno.io/v1 ValidatingPolicy" in error.message and "kyverno.io/v1 ClusterPolicy" not in error.message
    assert "quartermaster.dev" not in error.message
