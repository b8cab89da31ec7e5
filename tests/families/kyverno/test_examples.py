"""examples/kyverno: the notebook home-directory ClusterPolicy passes its suite and patches the notebook pod
exactly as the home part of the NotebookInjection battery does."""

import io
from argparse import Namespace
from pathlib import Path

import yaml

from tests.support import REPO, STATEFULSET_CONTROLLER, assert_valid_k8s
from webhook.app import Quartermaster, Settings
from webhook.engine.offline import admit_offline
from webhook.model.review import UserInfo
from webhook.state.memory import InMemoryClusterState
from webhook.testsuite.command import run_test_command

EXAMPLE = REPO / "examples" / "kyverno" / "notebook-home"
POD = yaml.safe_load((REPO / "examples" / "notebook-pod.yaml").read_text())


def test_the_example_suite_passes():
    out, err = io.StringIO(), io.StringIO()
    code = run_test_command(Namespace(paths=[str(EXAMPLE)], detailed_results=True, output="table", fail_only=False), out, err)
    assert code == 0, out.getvalue() + err.getvalue()
    assert out.getvalue().strip().endswith("3 passed, 0 failed")


async def _admit(policies: Path) -> dict:
    state = InMemoryClusterState.from_directory(REPO / "examples" / "state")
    qm = Quartermaster.build(Settings(policies=policies), state=state)
    qm.load_policies()
    # as the StatefulSet controller creates it: the battery gives no one's home to another requester's pod
    result = await admit_offline(qm.engine, POD, user=UserInfo(STATEFULSET_CONTROLLER, ("system:authenticated",)))
    assert result.allowed, result.message
    return dict(result.object)


async def test_same_pod_as_the_notebook_battery_home_part(tmp_path):
    battery = yaml.safe_load((REPO / "policies" / "notebook-injection.yaml").read_text())
    del battery["spec"]["tokenRefresher"]  # the home part only
    (tmp_path / "battery").mkdir()
    (tmp_path / "battery" / "notebook.yaml").write_text(yaml.safe_dump(battery))
    from_battery = await _admit(tmp_path / "battery")
    from_cluster_policy = await _admit(EXAMPLE / "notebook-home.yaml")
    assert from_cluster_policy == from_battery
    assert from_cluster_policy["spec"]["containers"][0]["workingDir"] == "/home/jovyan"  # setWorkingDir: false
    assert_valid_k8s(from_cluster_policy)
