#!/usr/bin/env python3
"""Wall time of the CLI's short commands (issue 12, target 5): `quartermaster --version` and `apply` of one pod.

    python load-tests/bench_cli.py                          # this tree, 10 rounds
    python load-tests/bench_cli.py --compare OTHER_TREE     # and another tree's webhook/ (e.g. a `git archive`), in turns
    python load-tests/bench_cli.py --instructions [--compare OTHER_TREE]   # instructions per command (callgrind)

Each command is a fresh process running what the console script runs (`from webhook.cli import main`), with the
tree's bytecode compiled first, as pip and the image leave it (a checkout run with PYTHONDONTWRITEBYTECODE=1
would time the bytecode compiler on every start). Trees take turns command by command, so the machine's other
load falls on both alike. The best of the rounds is what a command costs; the median shows what other load adds.
`--instructions` counts each command's machine instructions over the whole process under valgrind's callgrind
instead (one run each, ~10-40 s): the same count whatever else the machine does, so small changes show.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# run from the tree itself: examples/ holds the pod and the state
COMMANDS = {"--version": ["--version"],
            "apply": ["apply", "--policies", "policies", "--state", "examples/state", "examples/notebook-pod.yaml"]}
_MAIN = "import sys\nfrom webhook.cli import main\nsys.exit(main())"


def compile_bytecode(trees: list[Path]) -> None:
    for tree in trees:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "webhook")], check=False,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def tree_env(tree: Path) -> dict[str, str]:
    """The environment that runs `tree`'s webhook package (run from `tree` itself: `-c` and `-m` put the working
    directory first on the path)."""
    return {**os.environ, "PYTHONPATH": str(tree)}


def _label(tree: Path) -> str:
    return "this tree" if tree == REPO else str(tree)


def run_ms(tree: Path, args: list[str]) -> float:
    """One run of the command with `tree`'s webhook package, in milliseconds of wall time."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", _MAIN, *args], cwd=tree, env=tree_env(tree), stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=False)
    return (time.perf_counter() - started) * 1000


def instructions(tree: Path, args: list[str]) -> int:
    """Machine instructions of one run of the command with `tree`'s webhook package (callgrind, whole process)."""
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-c", _MAIN,
                           *args], cwd=tree, env=tree_env(tree), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          check=False)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise RuntimeError(f"callgrind reported no count: {done.stderr[-500:]}")
    return int(found.group(1))


def measure(trees: list[Path], rounds: int) -> dict[tuple[Path, str], list[float]]:
    """Milliseconds per (tree, command), `rounds` runs each, the trees taking turns."""
    compile_bytecode(trees)
    times: dict[tuple[Path, str], list[float]] = {(tree, name): [] for tree in trees for name in COMMANDS}
    for _ in range(rounds):
        for name, args in COMMANDS.items():
            for tree in trees:
                times[(tree, name)].append(run_ms(tree, args))
    return times


def best_times(tree: Path, rounds: int = 5) -> dict[str, float]:
    """{"version_ms", "apply_ms"}: the best of `rounds` runs of each (the suite's CLI line)."""
    times = measure([tree], rounds)
    return {"version_ms": min(times[(tree, "--version")]), "apply_ms": min(times[(tree, "apply")])}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10, help="runs of each command per tree")
    parser.add_argument("--compare", type=Path, metavar="OTHER_TREE", help="another tree, run in turns with this one")
    parser.add_argument("--instructions", action="store_true", help="count instructions under callgrind (needs valgrind)")
    args = parser.parse_args()
    trees = [REPO] + ([args.compare.resolve()] if args.compare else [])
    if args.instructions:
        compile_bytecode(trees)
        print("machine instructions per command (callgrind, whole process, one run each)")
        print("| tree | command | instructions |")
        print("| --- | --- | ---: |")
        for name, command in COMMANDS.items():
            for tree in trees:
                print(f"| {_label(tree)} | `{name}` | {instructions(tree, command):,} |", flush=True)
        return 0
    times = measure(trees, args.rounds)
    print(f"wall ms per command, {args.rounds} runs each{', trees in turns' if args.compare else ''}")
    print("| tree | command | best | median |")
    print("| --- | --- | ---: | ---: |")
    for (tree, name), values in times.items():
        print(f"| {_label(tree)} | `{name}` | {min(values):.0f} | {statistics.median(values):.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
