"""PodDefault-like merge rules: by name, identical items left alone, Keep / Override / Reject."""

from __future__ import annotations

import pytest

from webhook.platform.notebook.config import MergeStrategy
from webhook.platform.notebook.merge import MergeLog, covers, merge_mount, merge_named, merge_scalar

HOME_VOLUME = {"name": "home", "hostPath": {"path": "/eos/user/j/jdoe", "type": "Directory"}}


@pytest.mark.parametrize("existing, desired, expected", [
    ({"name": "c", "secret": {"secretName": "s", "defaultMode": 420}}, {"name": "c", "secret": {"secretName": "s"}}, True),
    ({"name": "m", "mountPath": "/m"}, {"name": "m", "mountPath": "/m", "readOnly": False}, True),  # false is dropped
    ({"name": "m", "mountPath": "/m"}, {"name": "m", "mountPath": "/m", "readOnly": True}, False),
    ({"resources": {"limits": {"memory": "1Mi"}}}, {"resources": {"limits": {"memory": "1024Ki"}}}, True),
    ({"emptyDir": {"sizeLimit": "1Mi"}}, {"emptyDir": {"sizeLimit": "1048576"}}, True),
    ({"resources": {"limits": {"memory": "1Mi"}}}, {"resources": {"limits": {"memory": "2Mi"}}}, False),
    ({"env": [{"name": "A", "value": "1"}]}, {"env": [{"name": "A", "value": "1.0"}]}, False),  # only quantities
    ({"args": ["a", "b"]}, {"args": ["a"]}, False),
    ({"periodSeconds": 2}, {"periodSeconds": True}, False),
    (HOME_VOLUME, {"name": "home", "persistentVolumeClaim": {"claimName": "jdoe"}}, False),
])
def test_covers(existing: dict, desired: dict, expected: bool) -> None:
    assert covers(existing, desired) is expected


def test_a_missing_item_is_appended_without_touching_the_rest() -> None:
    pod_spec = {"volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]}
    log = MergeLog()
    merge_named(pod_spec, "volumes", HOME_VOLUME, MergeStrategy.REJECT, "volume 'home'", "spec.merge.volumes", log)
    assert [v["name"] for v in pod_spec["volumes"]] == ["dshm", "home"] and not log.conflicts


def test_no_list_is_created_for_nothing() -> None:
    container = {"name": "nb", "env": [{"name": "HOME", "value": "/x"}]}
    log = MergeLog()
    merge_named(container, "env", {"name": "HOME", "value": "/x"}, MergeStrategy.REJECT, "env HOME", "spec.merge.env", log)
    assert container == {"name": "nb", "env": [{"name": "HOME", "value": "/x"}]} and not log.conflicts and not log.kept


@pytest.mark.parametrize("strategy, value, conflicts, kept", [
    (MergeStrategy.KEEP, "/home/jovyan", 0, 1),
    (MergeStrategy.OVERRIDE, "/eos/user/j/jdoe", 0, 0),
    (MergeStrategy.REJECT, "/home/jovyan", 1, 0),
])
def test_strategies_for_a_different_item(strategy: MergeStrategy, value: str, conflicts: int, kept: int) -> None:
    container = {"env": [{"name": "HOME", "value": "/home/jovyan"}, {"name": "B", "value": "b"}]}
    log = MergeLog()
    merge_named(container, "env", {"name": "HOME", "value": "/eos/user/j/jdoe"}, strategy,
                "env HOME of container 'nb'", "spec.merge.env", log)
    assert container["env"] == [{"name": "HOME", "value": value}, {"name": "B", "value": "b"}]
    assert (len(log.conflicts), len(log.kept)) == (conflicts, kept)
    if conflicts:
        text = log.conflicts[0].describe()
        assert "HOME=/home/jovyan" in text and "HOME=/eos/user/j/jdoe" in text
    if kept:
        assert "HOME=/home/jovyan" in log.kept[0] and "HOME=/eos/user/j/jdoe" in log.kept[0]


def test_a_volume_conflict_names_both_sides() -> None:
    pod_spec = {"volumes": [{"name": "home", "persistentVolumeClaim": {"claimName": "my-data"}}]}
    log = MergeLog()
    merge_named(pod_spec, "volumes", HOME_VOLUME, MergeStrategy.REJECT, "volume 'home'", "spec.merge.volumes", log)
    text = log.conflicts[0].describe()
    assert text == ("volume 'home': the pod has {\"persistentVolumeClaim\":{\"claimName\":\"my-data\"}}, "
                    "the policy injects {\"hostPath\":{\"path\":\"/eos/user/j/jdoe\",\"type\":\"Directory\"}}")


def test_mounts_clash_by_path_as_well_as_by_name() -> None:
    desired = {"name": "home", "mountPath": "/home/jovyan"}
    container = {"name": "nb", "volumeMounts": [{"name": "workspace", "mountPath": "/home/jovyan/"}]}
    log = MergeLog()
    merge_mount(container, desired, MergeStrategy.REJECT, "spec.merge.volumeMounts", log)
    assert len(log.conflicts) == 1 and "workspace" in log.conflicts[0].describe()
    assert container["volumeMounts"] == [{"name": "workspace", "mountPath": "/home/jovyan/"}]
    log = MergeLog()
    merge_mount(container, desired, MergeStrategy.OVERRIDE, "spec.merge.volumeMounts", log)
    assert container["volumeMounts"] == [desired] and not log.conflicts


def test_an_identical_mount_is_left_alone() -> None:
    container = {"volumeMounts": [{"name": "t", "mountPath": "/run/secrets/oidc", "readOnly": True}]}
    before = {"volumeMounts": [dict(container["volumeMounts"][0])]}
    log = MergeLog()
    merge_mount(container, {"name": "t", "mountPath": "/run/secrets/oidc", "readOnly": True}, MergeStrategy.REJECT, "x", log)
    assert container == before and not log.conflicts


@pytest.mark.parametrize("current, strategy, result, conflicts", [
    (None, MergeStrategy.REJECT, "/eos/user/j/jdoe", 0),
    ("/home/jovyan", MergeStrategy.REJECT, "/eos/user/j/jdoe", 0),  # the controller's default, not the user's
    ("/srv/project", MergeStrategy.KEEP, "/srv/project", 0),
    ("/srv/project", MergeStrategy.OVERRIDE, "/eos/user/j/jdoe", 0),
    ("/srv/project", MergeStrategy.REJECT, "/srv/project", 1),
])
def test_working_dir(current: str | None, strategy: MergeStrategy, result: str, conflicts: int) -> None:
    container = {"name": "nb"} if current is None else {"name": "nb", "workingDir": current}
    log = MergeLog()
    merge_scalar(container, "workingDir", "/eos/user/j/jdoe", strategy, "workingDir of container 'nb'",
                 "spec.merge.workingDir", log, replaceable=("/home/jovyan",))
    assert container["workingDir"] == result and len(log.conflicts) == conflicts
