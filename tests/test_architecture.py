"""The layering of design section 3, enforced by import-linter contracts (.importlinter)."""

import shutil
import subprocess
import sys

from tests.support import REPO


def test_import_contracts_hold():
    lint = shutil.which("lint-imports") or str(__import__("pathlib").Path(sys.executable).with_name("lint-imports"))
    proc = subprocess.run([lint, "--config", str(REPO / ".importlinter")], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout


def test_no_public_class_name_is_defined_twice_in_the_package():
    """One EvalContext, one Verdict, one Plan...: a name says which thing it is, wherever it is read."""
    import ast
    from collections import defaultdict
    from pathlib import Path

    import webhook

    defined: dict[str, list[str]] = defaultdict(list)
    for path in Path(webhook.__file__).parent.rglob("*.py"):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                defined[node.name].append(str(path))
    assert {name: paths for name, paths in defined.items() if len(paths) > 1} == {}
