"""The Go test tooling's builds: each build script prints the directory of its cached build with `--path`, and
fails when there is none. One reader for all of them, so a missing build always says how to make it."""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def cached_build(build: Path, error: type[Exception], what: str, note: str) -> Path:
    """The path `build --path` prints, or `error` naming the script to run (and `note`: toolchain, cache key)."""
    result = subprocess.run([str(build), "--path"], capture_output=True, text=True)
    if result.returncode != 0:
        raise error(f"{what} is not built: run {build.relative_to(REPO)} ({note})")
    return Path(result.stdout.strip())
