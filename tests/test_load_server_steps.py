"""load-tests/bench_server_steps.py: the hook that times request-path steps inside a `serve` process, and its table."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support import REPO, load_tests_module

LOAD_TESTS = REPO / "load-tests"
CALLS = """
import os, signal
from webhook.cli import main  # as `python -m webhook` does; the hook wrapped the steps at start-up
import webhook.server.handlers as handlers
print(handlers.json_bytes.__name__)
for _ in range(5):
    handlers.json_bytes({"a": 1})
if {reset}:
    os.kill(os.getpid(), signal.SIGUSR1)  # counts afresh, as after the warm-up
for _ in range(3):
    handlers.json_bytes({"a": 1})
"""


def _run(tmp_path: Path, reset: bool, hooked: bool = True) -> tuple[str, Path]:
    timings = tmp_path / "timings.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(LOAD_TESTS / "server_hook"), str(LOAD_TESTS)]))
    if hooked:
        env["QM_STEP_TIMINGS"] = str(timings)
    else:
        env.pop("QM_STEP_TIMINGS", None)
    done = subprocess.run([sys.executable, "-c", CALLS.replace("{reset}", str(reset))], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip(), timings


def test_the_hook_times_the_steps_and_counts_afresh_on_sigusr1(tmp_path: Path) -> None:
    name, timings = _run(tmp_path, reset=False)
    assert name == "step"  # wrapped
    steps = json.loads(timings.read_text())
    assert steps["encode"][1] == 8 and steps["encode"][0] > 0
    _, timings = _run(tmp_path, reset=True)
    assert json.loads(timings.read_text())["encode"][1] == 3


def test_without_the_variable_nothing_is_wrapped_or_written(tmp_path: Path) -> None:
    name, timings = _run(tmp_path, reset=False, hooked=False)
    assert name == "json_bytes" and not timings.exists()


def test_the_table_is_per_review_and_sorted_by_time() -> None:
    bench = load_tests_module("bench_server_steps")
    text = bench.table("gpu-validate", 250.0, 1000, {"parse_review": [30_000_000, 1000], "answer (all below)":
                                                     [200_000_000, 1000], "_collect": [4_000_000, 17000]})
    lines = text.splitlines()
    assert lines[0] == "gpu-validate: 1000 reviews, the server's CPU 250.0 us per review; inside it, wall time per review:"
    assert lines[3:] == ["| answer (all below) | 200.0 | 1.0 |", "| parse_review | 30.0 | 1.0 |", "| _collect | 4.0 | 17.0 |"]
    assert set(bench.THROUGHPUT) == {"plain-mutate", "plain-validate", "gpu-mutate", "gpu-validate", "q10-validate",
                                     "q10k-validate"}
