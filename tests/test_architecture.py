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


MAX_LINES = 400
LONGER_FOR_NOW: set[str] = set()  # none: every module is under the limit


def test_no_module_of_the_package_is_over_four_hundred_lines():
    """Small modules with one job (design section 4): a file past the limit is split along a seam."""
    long = {str(path.relative_to(REPO)): lines for path in (REPO / "webhook").rglob("*.py")
            if (lines := len(path.read_text().splitlines())) > MAX_LINES}
    assert {name: lines for name, lines in long.items() if name not in LONGER_FOR_NOW} == {}
    assert all((REPO / name).exists() for name in LONGER_FOR_NOW), "an exception for a module that is gone"


def test_the_tests_of_each_family_and_battery_mirror_its_package():
    """webhook/families/cel/ is tested in tests/families/cel/, webhook/platform/quota/ in tests/platform/quota/...:
    a newcomer finds a module's tests where the module is."""
    packages = [path.parent.relative_to(REPO / "webhook") for parent in ("families", "platform")
                for path in (REPO / "webhook" / parent).glob("*/__init__.py")]
    assert packages
    missing = [str(package) for package in packages if not any((REPO / "tests" / package).glob("test_*.py"))]
    assert missing == []
    # the packages hold the tests: no test module is left flat beside them
    flat = sorted(path.name for parent in ("families", "platform") for path in (REPO / "tests" / parent).glob("test_*.py"))
    assert flat == ["test_battery_golden.py", "test_shared_renderings.py"]  # across the batteries, by design


def test_the_package_has_no_import_cycles():
    """Every import counts, those inside functions too: a local import that only hides a cycle is still one."""
    import grimp

    graph = grimp.build_graph("webhook", cache_dir=None)
    edges = {m: graph.find_modules_directly_imported_by(m) for m in graph.modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []
    for root in sorted(edges):  # Tarjan's strongly connected components, iteratively
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    assert cycles == [], cycles


# the only reflective reads left, each on something that is not one of our contracts
REFLECTION_ALLOWED = {
    "webhook/kube/client.py": "the kubernetes client's generated API methods, named by verb and resource",
    "webhook/model/quickinit.py": "a dataclass's optional __post_init__, as dataclasses itself asks",
    "webhook/model/boundedyaml.py": "PyYAML built without libyaml has no CSafeLoader",
    "webhook/compiled.py": "a module's __file__ (a namespace package has none)",
    "webhook/observability/logs.py": "the extra fields a caller passed to logging, as logging stores them",
    "webhook/cel/exact_time.py": "the nanoseconds an exact duration or timestamp keeps beside Python's own",
    "webhook/cel/backend_py.py": "a thread-local counter that starts unset in each thread",
}


def test_contracts_are_declared_not_read_through_getattr():
    """What the engine, loader, states and families read of each other is declared in their protocols
    (ClusterState, Lookups, CompiledPolicy...): a getattr would be a contract nobody can see."""
    import re

    readers = {str(path.relative_to(REPO)) for path in (REPO / "webhook").rglob("*.py")
               if re.search(r"\b(getattr|hasattr)\(", path.read_text())}
    assert readers - set(REFLECTION_ALLOWED) == set()
    assert set(REFLECTION_ALLOWED) <= readers, "an allowance for a module that no longer reflects"
