"""`QUARTERMASTER_PURE_PYTHON=1`: run the package's .py sources where the build compiled some of them beside
(webhook/compiled.py), to profile them with py-spy or to rule the compiled code out in a bug hunt.

Kept apart from webhook/compiled.py so that `python -m webhook.compiled` does not import itself first.
"""

from __future__ import annotations

import os
import sys
from importlib.abc import MetaPathFinder
from importlib.machinery import SOURCE_SUFFIXES, FileFinder, ModuleSpec, SourceFileLoader
from typing import Sequence

VARIABLE = "QUARTERMASTER_PURE_PYTHON"


def asked() -> bool:
    return os.environ.get(VARIABLE, "") not in ("", "0")


class _SourcesFirst(MetaPathFinder):
    """Finds each module of the package as its .py file, where the import system would take a compiled module
    beside it first."""

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: object = None) -> ModuleSpec | None:
        if not fullname.startswith("webhook.") or not path:
            return None
        for entry in path:
            spec = FileFinder(entry, (SourceFileLoader, SOURCE_SUFFIXES)).find_spec(fullname)
            if spec is not None:
                return spec
        return None  # a package: the usual finders take it


def prefer_sources() -> None:
    """Before any compiled module is imported (webhook/__init__.py calls it when asked to)."""
    if asked() and not any(isinstance(finder, _SourcesFirst) for finder in sys.meta_path):
        sys.meta_path.insert(0, _SourcesFirst())
