"""Micro-benchmark of the CEL engine: microseconds per evaluation, per backend (not a test).

    python load-tests/bench_cel.py [--seconds 0.5] [--backend cel-expr-python]

Two columns per backend: a fresh activation per evaluation (the values are converted every time), and
a shared `Activation` (converted once, as for the many expressions evaluated on one request).

Expressions are typical of admission policies (pod-security checks, label rules, Kubernetes library
calls, a MutatingPolicy patch); the activation is a realistic pod with three containers.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from webhook.cel import BACKENDS, Activation, CelCompiler, CelError  # noqa: E402

POD = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "web", "namespace": "team-a", "labels": {"app": "web", "tier": "frontend"}},
    "spec": {"containers": [
        {"name": f"c{i}", "image": f"ghcr.io/org/app{i}:1.{i}", "resources": {"limits": {"memory": "1Gi", "cpu": "500m"}},
         "securityContext": {"runAsNonRoot": True, "allowPrivilegeEscalation": False}} for i in range(3)]},
}
ACTIVATION = {"object": POD, "oldObject": None, "request": {"operation": "CREATE", "namespace": "team-a"},
              "variables": {}, "params": None, "namespaceObject": {"metadata": {"name": "team-a"}}}

EXPRESSIONS = [
    ("admission", "object.metadata.namespace == 'team-a'"),
    ("admission", "has(object.metadata.labels) && 'app' in object.metadata.labels"),
    ("admission", "object.spec.containers.all(c, has(c.securityContext) && c.securityContext.runAsNonRoot == true)"),
    ("admission", "object.spec.containers.all(c, !c.image.endsWith(':latest'))"),
    ("admission", "object.spec.containers.map(c, quantity(c.resources.limits.memory)).all(q, q.isLessThan(quantity('2Gi')))"),
    ("admission", "object.spec.containers.map(c, c.name).join(',').split(',').size() == 3"),
    ("admission", "object.?spec.?securityContext.?runAsNonRoot.orValue(false)"),
    ("kyverno", "object.spec.containers.all(c, image(c.image).registry() == 'ghcr.io')"),
    ("mutating", "object.spec.containers.map(c, JSONPatch{op: 'add', path: '/metadata/labels/x', value: c.name})"),
]


def bench(compiler: CelCompiler, env: str, expression: str, seconds: float, shared: bool) -> float | None:
    """Mean microseconds per evaluation; `shared`: one Activation reused, as for the expressions of a request."""
    try:
        program = compiler.compile(expression, env=env)
        program.evaluate(ACTIVATION)
    except CelError:
        return None
    activation = Activation(ACTIVATION) if shared else ACTIVATION
    runs, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        for _ in range(20):
            program.evaluate(activation)
        runs += 20
    return (time.perf_counter() - started) / runs * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=0.5, help="time spent per expression and backend")
    parser.add_argument("--backend", choices=BACKENDS, action="append", help="default: both")
    args = parser.parse_args()
    backends = args.backend or list(BACKENDS)
    columns = [(name, shared) for name in backends for shared in (False, True)]
    compilers = {name: CelCompiler(name) for name in backends}
    print(f"{'expression':<72} " + " ".join(f"{name + (' shared' if shared else ''):>22}" for name, shared in columns))
    for env, expression in EXPRESSIONS:
        cells = []
        for name, shared in columns:
            micros = bench(compilers[name], env, expression, args.seconds, shared)
            cells.append(f"{'unsupported':>22}" if micros is None else f"{micros:>19.1f} us")
        label = expression if len(expression) <= 70 else expression[:67] + "..."
        print(f"{label:<72} " + " ".join(cells))


if __name__ == "__main__":
    main()
