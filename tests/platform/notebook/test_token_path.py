"""The injected token path as eosxd reads it: from the notebook's filesystem, no symlink on the way.

eosxd opens another container's token file from /proc/<pid>/root one component at a time, directories
with O_DIRECTORY | O_NOFOLLOW and the file with O_NOFOLLOW (EOS fusex SecurityChecker). Kubeflow's
notebook images are Ubuntu based: /var/run is a symlink to /run. The kubelet's mount at /var/run/...
lands in /run/... (runc resolves the target inside the rootfs), yet the path eosxd is given still names
the symlink, so the walk stops with ENOTDIR and the EOS home is unusable.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from tests.platform.notebook.eosxd import TOKEN, env_value, eosxd_read, mount_token, notebook_rootfs
from tests.platform.notebook.test_cases import CASES, build, mutate
from tests.platform.notebook.test_policy import error, load, variant
from webhook.platform.notebook.policy import NotebookInjection
from tests.support import apply_patch, assert_valid_k8s, load_yaml

def test_the_old_default_is_lost_to_eosxd(tmp_path: Path) -> None:
    root = notebook_rootfs(tmp_path / "rootfs")
    mount_token(root, "/var/run/secrets/oidc", "token")
    assert (root / "run" / "secrets" / "oidc" / "token").read_bytes() == TOKEN  # the token is there ...
    with pytest.raises(OSError) as failure:
        eosxd_read(root, "/var/run/secrets/oidc/token")  # ... but not for eosxd
    assert failure.value.errno in (errno.ENOTDIR, errno.ELOOP)


async def test_the_injected_token_path_is_found_by_eosxd(tmp_path: Path) -> None:
    """A Kubeflow notebook pod through /mutate with the shipped policy: eosxd reads the token OAUTH2_TOKEN names."""
    case = CASES / "kubeflow-notebook"
    pod = load_yaml(case / "resource.yaml")[0]
    result = await mutate(build(case, tmp_path), pod)
    assert result.verdict.allowed
    patched = apply_patch(pod, list(result.verdict.patch))
    assert_valid_k8s(patched)
    notebook = next(c for c in patched["spec"]["containers"] if c["name"] == pod["metadata"]["labels"]["notebook-name"])
    token_path = env_value(notebook, "OAUTH2_TOKEN").removeprefix("FILE:")
    mount = next(m for m in notebook["volumeMounts"] if m["name"] == "oidc-token")
    assert os.path.dirname(token_path) == mount["mountPath"]

    root = notebook_rootfs(tmp_path / "rootfs")
    mount_token(root, mount["mountPath"], os.path.basename(token_path))
    assert eosxd_read(root, token_path) == TOKEN


@pytest.mark.parametrize("mount_path", ["/var/run/secrets/oidc", "/var/lock/oidc", "/var/run", "/var//run/x/"])
def test_a_token_path_under_a_symlinked_prefix_is_refused_at_load(tmp_path: Path, mount_path: str) -> None:
    err = error(tmp_path, variant(tokenRefresher__token__mountPath=mount_path))
    assert err.field == "spec.tokenRefresher.token.mountPath", err
    assert "symlink" in err.message and "/run/secrets/oidc" in err.message


@pytest.mark.parametrize("mount_path", ["/run/secrets/oidc", "/oidc", "/var/runner/oidc"])
def test_paths_without_known_symlinks_load(tmp_path: Path, mount_path: str) -> None:
    assert isinstance(load(tmp_path, variant(tokenRefresher__token__mountPath=mount_path)), NotebookInjection)


def test_without_a_mount_path_the_token_goes_where_eosxd_finds_it(tmp_path: Path) -> None:
    policy = load(tmp_path, variant(tokenRefresher__token__mountPath=None))
    assert isinstance(policy, NotebookInjection)
    root = notebook_rootfs(tmp_path / "rootfs")
    refresher = policy.spec.refresher
    assert refresher is not None
    mount_token(root, refresher.token_dir, refresher.token_file)
    assert eosxd_read(root, refresher.token_path) == TOKEN

