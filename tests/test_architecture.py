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
