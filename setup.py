"""The build's one step that pyproject.toml cannot say: the request path's hottest modules compiled to C by mypyc.

The modules are listed in webhook/compiled.py (why those, and how to run their sources instead). Without a C
compiler, or with QUARTERMASTER_COMPILE=0, the package is built as pure Python and works the same, slower.
"""

from __future__ import annotations

import ast
import os
import shutil
import sys
from pathlib import Path

from setuptools import setup

HERE = Path(__file__).resolve().parent
MYPYC_DIR = "build/mypyc"  # where mypyc writes the C it generates (relative: mypyc names the sources from it)


def _compiled_extensions() -> list:
    modules = _listed_modules()
    _remove_earlier_builds(modules)
    if os.environ.get("QUARTERMASTER_COMPILE", "1") == "0":
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:  # a build without isolation, where mypy is not installed
        print("quartermaster: mypyc not installed: building pure Python", file=sys.stderr)
        return []
    paths = [str(Path(*name.split(".")).with_suffix(".py")) for name in modules]
    # generated afresh each build: C left there by an earlier build made an edited module's C disagree with an
    # unchanged one's header; it failed to compile, and its shim was left to import a library never built (so
    # importing that module failed, after a `pip install -e .` that said it succeeded)
    shutil.rmtree(HERE / MYPYC_DIR, ignore_errors=True)
    # separate: one extension per module, so that a module that fails to compile leaves only itself pure Python;
    # silent imports: only the compiled modules must type-check, not everything they import
    try:
        extensions = mypycify(["--follow-imports=silent", "--ignore-missing-imports", *paths],
                              separate=True, opt_level="3", target_dir=MYPYC_DIR)
    except SystemExit:  # mypyc refused a module (its type errors are printed above): still a working package
        print("quartermaster: mypyc could not compile the request path: building pure Python", file=sys.stderr)
        return []
    for extension in extensions:
        extension.optional = True  # no C compiler: a warning, and the module stays pure Python
    return extensions


def _listed_modules() -> list[str]:
    """MODULES of webhook/compiled.py, read from its text: the package is not importable while it is built."""
    tree = ast.parse((HERE / "webhook" / "compiled.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["MODULES"]:
            return list(ast.literal_eval(node.value))
    raise SystemExit("setup.py: webhook/compiled.py has no MODULES")


def _remove_earlier_builds(modules: list[str]) -> None:
    """An editable install compiles into the source tree: a build that now makes a module pure Python (no
    compiler, a refused module, QUARTERMASTER_COMPILE=0, a module taken off MODULES) must not leave its last
    compiled self there, which the import system would take before the source."""
    paths = {HERE / Path(*name.split(".")) for name in modules}
    # modules an earlier build compiled, listed or not: each left its own library, <module>__mypyc.<tag>.so
    paths |= {library.parent / library.name.split("__mypyc.")[0] for library in (HERE / "webhook").rglob("*__mypyc.*.so")}
    for path in paths:
        for pattern in (f"{path.name}.*.so", f"{path.name}__mypyc.*.so"):  # the module and its own library
            for built in path.parent.glob(pattern):
                built.unlink()


setup(ext_modules=_compiled_extensions())
