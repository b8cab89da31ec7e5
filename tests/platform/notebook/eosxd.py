"""eosxd's view of a notebook container: a filesystem laid out like Kubeflow's Ubuntu-based images, the token
volume mounted as the kubelet and runc mount it, and the token read as eosxd reads another container's file
(EOS fusex SecurityChecker: one component at a time, no symlink followed)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

TOKEN = b"oauth2:eyJhbGciOi.token:https://auth.example.org/userinfo"


def notebook_rootfs(root: Path) -> Path:
    """The directories of an Ubuntu-based notebook image that matter here: /var/run and /var/lock are symlinks."""
    (root / "run" / "lock").mkdir(parents=True)
    (root / "var").mkdir()
    (root / "var" / "run").symlink_to("../run")
    (root / "var" / "lock").symlink_to("../run/lock")
    (root / "tmp").mkdir()
    return root


def mount_token(root: Path, mount_path: str, file_name: str) -> None:
    """What the kubelet and runc do with the token volume: the mount target is resolved inside the rootfs."""
    target = root / mount_path.lstrip("/")
    os.makedirs(target, exist_ok=True)  # follows symlinks, as runc's resolution of the target does
    token = target / file_name
    token.write_bytes(TOKEN)
    token.chmod(0o600)


def eosxd_read(root: Path, path: str) -> bytes:
    """Read `path` inside the container rooted at `root` the way eosxd does (OSError when it cannot)."""
    assert path.startswith("/")
    *directories, last = path.strip("/").split("/")
    current = os.open(root, os.O_DIRECTORY | os.O_RDONLY)
    try:
        for segment in directories:
            assert segment != ".."
            step = os.open(segment, os.O_DIRECTORY | os.O_NOFOLLOW | os.O_RDONLY, dir_fd=current)
            os.close(current)
            current = step
        file = os.open(last, os.O_NOFOLLOW | os.O_RDONLY, dir_fd=current)
    finally:
        os.close(current)
    with os.fdopen(file, "rb") as handle:
        return handle.read()


def env_value(container: dict[str, Any], name: str) -> str:
    return next(e["value"] for e in container.get("env", []) if e["name"] == name)
