"""Which modules of the request path are compiled to C (by mypyc, when the package is built), and whether they are.

A GPU notebook's /mutate spends most of its own time in a few modules of plain functions over JSON: the patch
diff, the copies, the notebook injection and the DRA rewrite. Compiled, they take markedly less time
(docs/performance.md measures it), with no line changed: the same source is the pure-Python
module wherever no C compiler was at hand when the package was built, or when `QUARTERMASTER_PURE_PYTHON=1` asks
for the sources (webhook/pure_python.py). `setup.py` reads MODULES from this file's text (the package cannot be
imported while it is built).
"""

from __future__ import annotations

import sys
from typing import Sequence

from webhook.pure_python import VARIABLE as PURE_PYTHON_VARIABLE, asked as pure_python_asked

# functions over decoded JSON, and the classes of plain data and the two mutating batteries that use them; nothing
# patches their functions at run time (a compiled module calls its own functions directly, and would not see it),
# and their classes that tests patch stay interpreted classes (frozen_dataclass), whose methods can be replaced
MODULES = (
    "webhook.model.review",
    "webhook.model.boundedjson",
    "webhook.model.patch",
    "webhook.model.jsoncopy",
    "webhook.engine.verdicts",
    "webhook.platform.dra.legacy",
    "webhook.platform.dra.mutator",
    "webhook.platform.dra.rewrite",
    "webhook.platform.dra.templates",
    "webhook.platform.notebook.credentials",
    "webhook.platform.notebook.identity",
    "webhook.platform.notebook.inject",
    "webhook.platform.notebook.merge",
    "webhook.platform.notebook.render",
)


def compiled_modules() -> tuple[str, ...]:
    """The modules of MODULES that run compiled in this process (importing them)."""
    import importlib

    compiled = []
    for name in MODULES:
        origin = getattr(importlib.import_module(name), "__file__", None) or ""
        if not origin.endswith(".py"):
            compiled.append(name)
    return tuple(compiled)


def describe() -> str:
    """One line for `serve`'s start-up log and `python -m webhook.compiled`."""
    compiled = compiled_modules()
    if len(compiled) == len(MODULES):
        return f"request path compiled: all {len(MODULES)} modules (mypyc)"
    if pure_python_asked():
        return f"request path compiled: no ({PURE_PYTHON_VARIABLE} is set)"
    if not compiled:
        return "request path compiled: no (the package was built without a C compiler, or with QUARTERMASTER_COMPILE=0)"
    return f"request path compiled: {len(compiled)} of {len(MODULES)} modules"


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m webhook.compiled [--require-all]`: says what runs compiled; with --require-all, exits 1 unless
    every module does (the container image's build checks that its stage had a compiler)."""
    args = list(sys.argv[1:] if argv is None else argv)
    print(describe())
    return 1 if "--require-all" in args and len(compiled_modules()) != len(MODULES) else 0


if __name__ == "__main__":
    sys.exit(main())
