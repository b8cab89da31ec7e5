#!/usr/bin/env python3
"""`/validate` cost of Kyverno's pod-security policies, next to the no-op responder, in one run.

    python load-tests/kyverno_pod_security.py --family kyverno --requests 1000   # 19 classic ClusterPolicies
    python load-tests/kyverno_pod_security.py --family cel --requests 1000       # the pod-security-vpol ValidatingPolicies

`--family kyverno` copies the baseline, restricted and subrule ClusterPolicies of Kyverno's library (as shipped,
Audit); `--family cel` the ValidatingPolicies of `pod-security-vpol` (not their `.kyverno-test` suites). Runs
bench_admission.py (TLS, the same single server process each time) four times: with an empty policy directory
(the no-op responder: protocol and TLS only), with the default `policies/`, with the defaults plus the family's
policies, and with the family's policies alone; prints the results and the throughput ratios to the no-op as
JSON lines.
`--endpoints mutate,validate` sends both reviews per pod (the default is /validate only).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def bench(policies: Path, args: argparse.Namespace) -> dict:
    out = subprocess.run([sys.executable, str(HERE / "bench_admission.py"), "--policies", str(policies),
                          "--requests", str(args.requests), "--concurrency", str(args.concurrency), "--gpu-every", "0",
                          "--profiles", "20", "--endpoints", args.endpoints], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def family_sources(corpus: Path, family: str) -> list[Path]:
    if family == "cel":
        return [p for p in sorted((corpus / "pod-security-vpol").rglob("*.yaml")) if ".kyverno-test" not in p.parts]
    return [p for level in ("baseline", "restricted", "subrule") for p in sorted((corpus / "pod-security" / level).glob("*/*.yaml"))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=HERE.parent.parent / "shared" / "conformance" / "kyverno-policies")
    parser.add_argument("--family", choices=("kyverno", "cel"), default="kyverno")
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--endpoints", default="validate")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        empty, defaults, loaded, alone = (Path(tmp) / n for n in ("none", "defaults", "loaded", "alone"))
        empty.mkdir()
        alone.mkdir()
        shutil.copytree(HERE.parent / "policies", defaults)
        shutil.copytree(HERE.parent / "policies", loaded)
        sources = family_sources(args.corpus, args.family)
        if not sources:
            parser.error(f"no {args.family} pod-security policies under {args.corpus} (give --corpus)")
        for source in sources:
            shutil.copy(source, loaded / f"{args.family}-{source.parent.parent.name}-{source.name}")
            shutil.copy(source, alone / f"{args.family}-{source.parent.parent.name}-{source.name}")
        label = f"defaults + {len(sources)} pod-security {'ValidatingPolicies' if args.family == 'cel' else 'ClusterPolicies'}"
        noop = bench(empty, args)
        plain = bench(defaults, args)
        family = bench(loaded, args)
        only = bench(alone, args)
    print(json.dumps({"no-op": noop}))
    print(json.dumps({"defaults": plain}))
    print(json.dumps({label: family}))
    print(json.dumps({label.removeprefix("defaults + ") + " alone": only}))
    print(json.dumps({"ratio defaults": round(plain["reviews_per_second"] / noop["reviews_per_second"], 3),
                      "ratio loaded": round(family["reviews_per_second"] / noop["reviews_per_second"], 3),
                      "ratio alone": round(only["reviews_per_second"] / noop["reviews_per_second"], 3)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
