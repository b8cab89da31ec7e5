"""`quartermaster apply --kubeconfig`: the cluster's objects are the state (read once, nothing written)."""

from __future__ import annotations

import yaml

from tests.kube.objects import namespace, pod
from tests.support import REPO
from webhook.cli import main


def test_apply_judges_against_the_live_cluster(apiserver, kubeconfig, tmp_path, capsys):
    apiserver.put(namespace("jdoe"))
    apiserver.put(pod("running", gpus=1))  # the profile's one GPU is in use in the cluster
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(yaml.safe_dump(pod("train", gpus=1)))
    assert main(["apply", "--policies", str(REPO / "policies"), "--kubeconfig", str(kubeconfig), str(manifest)]) == 1
    err = capsys.readouterr().err
    assert "DENIED Pod jdoe/train: [profile-quota/gpu-quota] GPU quota exceeded in profile 'jdoe'" in err
    assert "in use 1 (Pod running: 1)" in err
    assert [s for s in apiserver.seen() if s.method != "GET"] == []  # read only
    other = tmp_path / "other.yaml"
    other.write_text(yaml.safe_dump(pod("x", ns="nowhere")))
    assert main(["apply", "--policies", str(REPO / "policies"), "--kubeconfig", str(kubeconfig), str(other)]) == 0
    assert "notice: namespace 'nowhere' is not in the cluster" in capsys.readouterr().err


def test_an_unreachable_cluster_is_bad_input(tmp_path, capsys):
    from tests.support import free_port

    config = tmp_path / "kubeconfig"
    config.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{free_port()}"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}], "users": [{"name": "u", "user": {"token": "t"}}]}))
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(yaml.safe_dump(pod("train", gpus=1)))
    assert main(["apply", "--policies", str(REPO / "policies"), "--kubeconfig", str(config), str(manifest)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("quartermaster apply: ") and "cannot reach the cluster" in err and err.count("\n") == 1
