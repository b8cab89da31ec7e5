"""Helpers the platform-policy tests share: load one policy file through the real registry and loader."""

from __future__ import annotations

from pathlib import Path

from webhook.app import build_registry
from webhook.cel import CelCompiler
from webhook.model.errors import PolicyLoadError
from webhook.policy.loader import LoadResult, PolicyLoader


def load(tmp_path: Path, text: str, cel: CelCompiler | None = None, name: str = "policy.yaml") -> LoadResult:
    """Write `text` as one policy file and load it as `serve` would (every family registered)."""
    path = tmp_path / name
    path.write_text(text)
    return PolicyLoader(build_registry(), cel or CelCompiler()).load(path)


def only_error(tmp_path: Path, text: str) -> PolicyLoadError:
    """The one load error of a file that must be refused as a whole."""
    result = load(tmp_path, text)
    assert not result.policies and len(result.errors) == 1, result.errors
    return result.errors[0]
