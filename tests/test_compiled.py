"""The request path's compiled modules (webhook/compiled.py): built, current, and answering as their sources do.

The rest of the suite runs on whatever the build made: compiled where a C compiler was at hand. These tests say
which it was, keep a stale build from passing for the sources, and run the batteries' recorded answers on the
pure-Python modules too, so both builds are held to the same bytes.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.platform.battery_golden import GOLDEN
from tests.support import REPO
from webhook import compiled, pure_python

BUILT_PURE = os.environ.get("QUARTERMASTER_COMPILE") == "0" or pure_python.asked()


def _pure_python(code: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, pure_python.VARIABLE: "1"}
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.skipif(BUILT_PURE, reason="built or run as pure Python on purpose")
def test_the_request_path_runs_compiled() -> None:
    missing = set(compiled.MODULES) - set(compiled.compiled_modules())
    assert not missing, (f"{sorted(missing)} run as Python: the build had no C compiler or mypyc refused them "
                         f"(see the output of `pip install -e .`)")
    assert compiled.describe() == f"request path compiled: all {len(compiled.MODULES)} modules (mypyc)"


@pytest.mark.skipif(BUILT_PURE, reason="built or run as pure Python on purpose")
def test_no_compiled_module_is_older_than_its_source() -> None:
    """An edited source whose module was not rebuilt would be tested as its old compiled self."""
    stale = []
    for name in compiled.MODULES:
        module = importlib.import_module(name)
        binary = Path(module.__file__ or "")
        source = binary.parent / (name.rsplit(".", 1)[1] + ".py")
        if source.stat().st_mtime > binary.stat().st_mtime:
            stale.append(str(source.relative_to(REPO)))
    assert not stale, f"{stale} changed since they were compiled: run `pip install -e .` again"


def test_no_module_left_out_of_the_list_runs_compiled() -> None:
    """A module taken off MODULES must run as its source: a compiled self left from an earlier build would be
    imported before it (setup.py removes those builds)."""
    package = Path(compiled.__file__).parent
    left = sorted(str(library.relative_to(package.parent)).split("__mypyc.")[0].replace("/", ".")
                  for library in package.rglob("*__mypyc.*.so"))
    unlisted = [name for name in left if name not in compiled.MODULES]
    assert not unlisted, f"{unlisted} are compiled but not in webhook/compiled.py: run `pip install -e .` again"


def test_the_pure_python_switch_runs_the_sources() -> None:
    done = _pure_python("from webhook import compiled; import importlib\n"
                        "print(compiled.describe())\n"
                        "print(*(importlib.import_module(m).__file__ for m in compiled.MODULES))")
    assert done.returncode == 0, done.stderr
    described, files = done.stdout.splitlines()
    assert described == "request path compiled: no (QUARTERMASTER_PURE_PYTHON is set)"
    assert [Path(f).suffix for f in files.split()] == [".py"] * len(compiled.MODULES)


def test_pure_python_answers_as_recorded() -> None:
    """The batteries' recorded answers (tests/platform/golden), from the sources: the compiled modules give the
    same in test_battery_golden.py, so the two builds answer alike, byte for byte."""
    done = _pure_python("import json; from webhook import compiled; from tests.platform.battery_golden import snapshot\n"
                        "assert not compiled.compiled_modules()\n"
                        "print(json.dumps(snapshot(), sort_keys=True))")
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    golden = json.loads(GOLDEN.read_text())
    assert sorted(got) == sorted(golden)
    assert [name for name in got if got[name] != golden[name]] == []
