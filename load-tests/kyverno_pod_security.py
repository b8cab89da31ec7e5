#!/usr/bin/env python3
"""`/validate` cost of Kyverno's 19 classic pod-security ClusterPolicies, next to the no-op responder.

    python load-tests/kyverno_pod_security.py --corpus ../shared/conformance/kyverno-policies --requests 1000

Copies the baseline, restricted and subrule ClusterPolicies of Kyverno's library (as shipped, Audit) into a
temporary policy directory, runs bench_admission.py with them and with an empty policy directory (protocol
and TLS only), and prints both results and the throughput ratio as JSON lines.
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


def bench(policies: Path, requests: int, concurrency: int) -> dict:
    out = subprocess.run([sys.executable, str(HERE / "bench_admission.py"), "--policies", str(policies),
                          "--requests", str(requests), "--concurrency", str(concurrency), "--gpu-every", "0",
                          "--profiles", "20"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=HERE.parent.parent / "shared" / "conformance" / "kyverno-policies")
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        policies, empty = Path(tmp) / "pod-security", Path(tmp) / "none"
        policies.mkdir()
        empty.mkdir()
        for level in ("baseline", "restricted", "subrule"):
            for source in sorted((args.corpus / "pod-security" / level).glob("*/*.yaml")):
                shutil.copy(source, policies / f"{level}-{source.name}")
        count = len(list(policies.iterdir()))
        noop = bench(empty, args.requests, args.concurrency)
        loaded = bench(policies, args.requests, args.concurrency)
    print(json.dumps({"no-op": noop}))
    print(json.dumps({f"{count} pod-security ClusterPolicies": loaded}))
    print(json.dumps({"throughput ratio": round(loaded["reviews_per_second"] / noop["reviews_per_second"], 3)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
