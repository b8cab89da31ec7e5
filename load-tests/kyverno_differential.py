#!/usr/bin/env python3
"""Kyverno differential: `kyverno test` against `quartermaster test` on every suite of the shared corpus.

    load-tests/kyverno/build                                   # once: Kyverno's CLI at the pinned release
    python load-tests/kyverno_differential.py                  # the suites, then 4 variations per resource
    python load-tests/kyverno_differential.py --variations 0 --only other-vpol --json /tmp/diff.json

Two passes, both through each tool's own `test` command, so the suites' values, variables, user info and
context files are read by each side as it reads them:
1. the suites as written: each expected result (policy, rule, resource) gives a row on each side, and the
   rows are compared (result and reason);
2. probe suites: each suite copied with seeded variations of its resources (kyverno_variations.py: fields
   removed, scalars changed, lists grown, fields copied between resources) and one expectation `pass` per
   (policy, rule, variation); the reason each side gives (`Ok`, `Want pass, got fail`, `Excluded`...)
   is its actual result, and those are compared.
Differences are grouped by (corpus folder, policy, Kyverno's result, ours) and written as JSON (--json). Each
differing variation is also created, as a server-side dry run, in the test control plane (tests/cluster): what the
API server refuses never reaches an admission webhook, and such differences are counted apart.
Not part of the default test run.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from kyverno_variations import suite_rng, variations  # noqa: E402

_ROW = re.compile(r"^Want (\w+), got (\w+)$")
_DROP = {"result", "patchedResource", "patchedResources", "generatedResource", "generatedResources",
         "cloneSourceResource"}


@dataclass(frozen=True)
class Row:
    """One result row of a `test` run, keyed as both tools print it."""

    suite: str
    policy: str
    rule: str
    resource: str
    result: str
    reason: str

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.suite, self.policy, self.rule, self.resource)

    @property
    def actual(self) -> str:
        """What the rule did, read off the reason: the expectation when Ok, else what it got instead."""
        match = _ROW.match(self.reason)
        if match:
            return match.group(2)
        return {"Ok": "pass"}.get(self.reason, self.reason)


def default_corpus() -> Path:
    for parent in HERE.parents:
        candidate = parent / "shared" / "conformance" / "kyverno-policies"
        if candidate.is_dir():
            return candidate
    return HERE.parent.parent / "shared" / "conformance" / "kyverno-policies"


def kyverno_binary() -> Path:
    out = subprocess.run([str(HERE / "kyverno" / "build"), "--path"], check=True, capture_output=True, text=True)
    binary = Path(out.stdout.strip()) / "kubectl-kyverno"
    if not binary.is_file():
        raise SystemExit(f"{binary}: not built; run load-tests/kyverno/build first")
    return binary


def _strip(resource: str) -> str:
    # Kyverno names a cluster-scoped resource `Kind//name` (an empty namespace), Quartermaster `Kind/name`
    return resource.replace(" ", "").replace("//", "/")


def _parse_rows(text: str, suite: str) -> list[Row]:
    decoder = json.JSONDecoder()
    rows: list[Row] = []
    for match in re.finditer(r"^\[", text, re.M):
        try:
            data, _ = decoder.raw_decode(text[match.start():])
        except json.JSONDecodeError:
            continue
        rows += [Row(suite, r["POLICY"], r["RULE"], _strip(r["RESOURCE"]), r["RESULT"].lower(), r["REASON"])
                 for r in data if isinstance(r, dict)]
    return rows


def kyverno_rows(binary: Path, suite_dir: Path, suite: str) -> list[Row] | str:
    """Rows of `kyverno test` on one suite, or the error it gave (a suite Kyverno cannot run)."""
    proc = subprocess.run([str(binary), "test", str(suite_dir), "--remove-color", "-o", "json"],
                          capture_output=True, text=True, timeout=600)
    rows = _parse_rows(proc.stdout, suite)
    if not rows and proc.returncode != 0:
        return (proc.stderr.strip().splitlines() or proc.stdout.strip().splitlines() or ["error"])[-1]
    return rows


_LOADING = re.compile(r"^Loading test .*?\( (.+?) \) \.\.\.$", re.M)


def kyverno_folder(binary: Path, folder: Path, suites: dict[str, Path]) -> dict[str, list[Row]]:
    """One `kyverno test` over a whole folder (its start-up is most of a small suite's time), split at the
    "Loading test ... ( PATH )" line it prints before each suite. A suite that stops the run (Kyverno returns
    at the first suite it cannot run) and those after it are left out here and run one by one."""
    by_file = {str((d / "kyverno-test.yaml").resolve()): s for s, d in suites.items()}
    proc = subprocess.run([str(binary), "test", str(folder), "--remove-color", "-o", "json"],
                          capture_output=True, text=True, timeout=3600)
    marks = list(_LOADING.finditer(proc.stdout))
    # a run that only had failing expectations exits 1 too; one that stopped says why otherwise
    stopped = proc.returncode != 0 and not re.search(r"\d+ tests failed", proc.stderr + proc.stdout)
    out: dict[str, list[Row]] = {}
    for i, mark in enumerate(marks):
        suite = by_file.get(str(Path(mark.group(1)).resolve()))
        end = marks[i + 1].start() if i + 1 < len(marks) else len(proc.stdout)
        if suite is not None and (i + 1 < len(marks) or not stopped):
            out[suite] = _parse_rows(proc.stdout[mark.end():end], suite)
    return out


def quartermaster_rows(suite_dirs: dict[str, Path]) -> dict[str, list[Row]]:
    """Rows of one `quartermaster test` run over every suite (one process: the policies' compile is shared)."""
    by_path = {str((d / "kyverno-test.yaml").resolve()): s for s, d in suite_dirs.items()}
    proc = subprocess.run([sys.executable, "-m", "webhook", "test", *map(str, suite_dirs.values()), "-o", "json"],
                          capture_output=True, text=True, timeout=3600, cwd=HERE.parent)
    out: dict[str, list[Row]] = collections.defaultdict(list)
    # The JSON document is followed by the human summary line ("N passed, N failed").
    entries, _ = json.JSONDecoder().raw_decode(proc.stdout.lstrip())
    for entry in entries:
        suite = by_path.get(str(Path(entry["path"]).resolve()))
        if suite is None:
            continue
        out[suite] += [Row(suite, r["POLICY"], r["RULE"], _strip(r["RESOURCE"]), r["RESULT"].lower(), r["REASON"])
                       for r in entry["results"]]
    return out


def _name_of(resource: str) -> str:
    return resource.rsplit("/", 1)[-1]


def _load_docs(path: Path) -> list[dict]:
    try:
        return [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]
    except (OSError, yaml.YAMLError):
        return []


def write_probe(test_file: Path, suite: str, per_resource: int, seed: int) -> int:
    """Rewrites a copied suite in place into its probe form; returns the number of variations written."""
    test = yaml.safe_load(test_file.read_text())
    wanted = {_name_of(r) for res in test.get("results") or [] for r in res.get("resources") or []}
    resources = [d for f in test.get("resources") or [] for d in _load_docs(test_file.parent / f)]
    made = variations(resources, wanted, per_resource, suite_rng(seed, suite))
    if not made:
        return 0
    by_source: dict[str, list[str]] = collections.defaultdict(list)
    for v in made:
        by_source[v.source].append(v.name)
    (test_file.parent / "probe-variations.yaml").write_text(yaml.safe_dump_all([v.obj for v in made], sort_keys=False))
    (test_file.parent / "probe-variations.json").write_text(json.dumps({v.name: v.edits for v in made}))
    results, seen = [], set()
    for res in test.get("results") or []:
        names = [f"{r.rsplit('/', 1)[0]}/{n}" if "/" in r else n
                 for r in res.get("resources") or [] for n in by_source.get(_name_of(r), [])]
        key = (res.get("policy"), res.get("rule"), res.get("kind"), tuple(names))
        if not names or key in seen:
            continue
        seen.add(key)
        results.append({**{k: v for k, v in res.items() if k not in _DROP}, "resources": names, "result": "pass"})
    test["resources"] = list(test.get("resources") or []) + ["probe-variations.yaml"]
    test["results"] = results
    _extend_values(test_file.parent, test, by_source)
    test_file.write_text(yaml.safe_dump(test, sort_keys=False))
    return len(made)


def _extend_values(suite_dir: Path, test: dict, by_source: dict[str, list[str]]) -> None:
    """Per-resource values in a suite's values file apply to that resource's variations too."""
    name = test.get("variables")
    if not isinstance(name, str) or not (suite_dir / name).is_file():
        return
    values = yaml.safe_load((suite_dir / name).read_text()) or {}
    for policy in values.get("policies") or []:
        extra = [{**entry, "name": variant} for entry in policy.get("resources") or []
                 for variant in by_source.get(entry.get("name"), [])]
        if extra:
            policy["resources"] = list(policy["resources"]) + extra
    (suite_dir / name).write_text(yaml.safe_dump(values, sort_keys=False))


def api_server_verdicts(objects: dict[str, dict], workdir: Path) -> dict[str, str]:
    """What the API server of the test control plane (tests/cluster) says of each object in a server-side dry-run
    create: "accepted", or "refused: <its message>". A validating webhook is only ever sent objects the API server
    has accepted (schema and object validation run before it), so a difference on a refused object is one no
    admission can show. {} when the control plane is not built."""
    sys.path.insert(0, str(HERE.parent))
    from tests.cluster.control import ControlPlaneError, binary, down, up

    try:
        qmcluster = binary()
    except ControlPlaneError as exc:
        print(f"not classified by the API server: {exc}", file=sys.stderr)
        return {}
    record = up(workdir / "cluster")
    try:
        kubectl = [str(qmcluster), "kubectl", f"--kubeconfig={record.admin_kubeconfig}"]
        namespaces = {o.get("metadata", {}).get("namespace") or "default" for o in objects.values()}
        for ns in sorted(namespaces - {"default"}):
            subprocess.run([*kubectl, "create", "namespace", ns], capture_output=True, text=True)
        verdicts = {}
        for key, obj in objects.items():
            done = subprocess.run([*kubectl, "create", "--dry-run=server", "-o", "name", "-f", "-"],
                                  input=json.dumps(obj), capture_output=True, text=True)
            message = (done.stderr.strip().splitlines() or ["?"])[-1]
            verdicts[key] = "accepted" if done.returncode == 0 else f"refused: {message[:300]}"
        return verdicts
    finally:
        down(workdir / "cluster")


def _variation_objects(probes: dict[str, Path], diffs: list[dict]) -> dict[str, dict]:
    """The differing variations, each as the suite's row names it (`apiVersion/Kind[/namespace]/name`: its namespace)."""
    rows: dict[str, dict[str, str]] = collections.defaultdict(dict)  # suite -> variation name -> row's resource
    for d in diffs:
        if d["key"]:
            rows[d["suite"]][_name_of(d["key"][2])] = d["key"][2]
    found = {}
    for suite, names in rows.items():
        for doc in _load_docs(probes[suite] / "probe-variations.yaml"):
            name = doc.get("metadata", {}).get("name")
            if name in names:
                obj = json.loads(json.dumps(doc))
                where = names[name].removeprefix(f"{obj.get('apiVersion')}/{obj.get('kind')}/").rsplit("/", 1)
                obj.setdefault("metadata", {}).setdefault("namespace", where[0] if len(where) == 2 else "default")
                found[f"{suite}\0{name}"] = obj
    return found


def compare(kyverno: dict[str, list[Row] | str], ours: dict[str, list[Row]], probe: bool) -> list[dict]:
    differences = []
    for suite, theirs in sorted(kyverno.items()):
        mine = ours.get(suite, [])
        if isinstance(theirs, str):
            differences.append({"suite": suite, "kyverno": f"suite error: {theirs}", "quartermaster":
                                f"{sum(r.result == 'pass' for r in mine)}/{len(mine)} rows pass", "key": None})
            continue
        left: dict[tuple, list[str]] = collections.defaultdict(list)
        right: dict[tuple, list[str]] = collections.defaultdict(list)
        for r in theirs:
            left[r.key].append(r.actual if probe else f"{r.result}: {r.reason}")
        for key, seen in left.items():
            # Kyverno's test runner adds an `Excluded` row beside the real one when a policy's autogen
            # response for another kind is also looked up (CronJob rows of the pod-security suites)
            real = [x for x in seen if "Excluded" not in x]
            if real and len(real) < len(seen):
                left[key] = real
        for r in mine:
            right[r.key].append(r.actual if probe else f"{r.result}: {r.reason}")
        # an error of a ruleless policy (MutatingPolicy) is a row of rule `evaluation` in Kyverno's runner, of no
        # rule (as the suite names it) in ours: the same row
        for key in [k for k in left if k[2] == "evaluation"]:
            unnamed = (key[0], key[1], "", key[3])
            if key not in right and unnamed in right and unnamed not in left:
                left[unnamed] = left.pop(key)
        for key in sorted(set(left) | set(right)):
            # the same expectation listed twice gives Kyverno two rows, Quartermaster one: compare as sets
            a, b = sorted(set(left.get(key, ["(no row)"]))), sorted(set(right.get(key, ["(no row)"])))
            if a != b:
                differences.append({"suite": suite, "key": list(key[1:]), "kyverno": "; ".join(a),
                                    "quartermaster": "; ".join(b)})
    return differences


def group(differences: list[dict]) -> list[dict]:
    groups: dict[tuple, list[dict]] = collections.defaultdict(list)
    for d in differences:
        folder = d["suite"].split("/", 1)[0]
        policy = d["key"][0] if d["key"] else d["suite"]
        groups[(folder, policy, d["kyverno"], d["quartermaster"], d.get("api_server", "")[:8])].append(d)
    return [{"folder": k[0], "policy": k[1], "kyverno": k[2], "quartermaster": k[3], "api_server": k[4],
             "count": len(v), "examples": [d["key"] for d in v[:3]]}
            for k, v in sorted(groups.items(), key=lambda kv: -len(kv[1]))]


def run_pass(binary: Path, root: Path, suites: dict[str, Path], probe: bool, jobs: int) -> tuple[int, int, list[dict]]:
    folders = sorted({Path(s).parts[0] for s in suites})
    with ThreadPoolExecutor(jobs) as pool:
        batches = list(pool.map(lambda f: kyverno_folder(binary, root / f, suites), folders))
        kyverno: dict[str, list[Row] | str] = {s: rows for batch in batches for s, rows in batch.items()}
        rest = [s for s in suites if s not in kyverno]
        for s, rows in zip(rest, pool.map(lambda s: kyverno_rows(binary, suites[s], s), rest)):
            kyverno[s] = rows
    ours = quartermaster_rows(suites)
    rows = sum(len(r) for r in kyverno.values() if not isinstance(r, str))
    return len(suites), rows, compare(kyverno, ours, probe)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=default_corpus())
    parser.add_argument("--only", default="", help="comma-separated corpus folders (default: all)")
    parser.add_argument("--variations", type=int, default=4, help="variations per suite resource (0: suites only)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=2, help="kyverno test processes at once")
    parser.add_argument("--json", type=Path, default=None, help="write every difference and the groups here")
    parser.add_argument("--no-api-server", dest="api_server", action="store_false",
                        help="do not ask the test control plane (tests/cluster/build) which differing variations it accepts")
    args = parser.parse_args()
    if not args.corpus.is_dir():
        parser.error(f"--corpus {args.corpus}: not a directory")
    binary = kyverno_binary()
    only = {f for f in args.only.split(",") if f}
    with tempfile.TemporaryDirectory() as tmp:
        copy_root = Path(tmp) / "corpus"
        shutil.copytree(args.corpus, copy_root, ignore=shutil.ignore_patterns(".git"))
        suites = {str(p.parent.relative_to(copy_root)): p.parent
                  for p in sorted(copy_root.rglob("kyverno-test.yaml"))
                  if not only or p.relative_to(copy_root).parts[0] in only}
        report: dict = {"command": " ".join(["python", "load-tests/kyverno_differential.py", *sys.argv[1:]])}
        n, rows, diffs = run_pass(binary, copy_root, suites, False, args.jobs)
        report["suites"] = {"suites": n, "rows": rows, "differences": len(diffs), "groups": group(diffs)}
        print(json.dumps({"pass": "suites", "suites": n, "rows": rows, "differences": len(diffs)}), flush=True)
        if args.json:  # written after each pass, so a long variations pass leaves the first one on disk
            args.json.write_text(json.dumps(report | {"suites_all": diffs}, indent=1))
        if args.variations:
            made = {s: write_probe(d / "kyverno-test.yaml", s, args.variations, args.seed) for s, d in suites.items()}
            probes = {s: d for s, d in suites.items() if made[s]}
            n, rows, diffs = run_pass(binary, copy_root, probes, True, args.jobs)
            for d in diffs:
                if d["key"]:
                    edits = json.loads((probes[d["suite"]] / "probe-variations.json").read_text())
                    d["edits"] = edits.get(_name_of(d["key"][2]), [])
            if args.api_server and diffs:
                verdicts = api_server_verdicts(_variation_objects(probes, diffs), Path(tmp))
                for d in diffs:
                    if d["key"]:
                        d["api_server"] = verdicts.get(f"{d['suite']}\0{_name_of(d['key'][2])}", "")
            refused = sum(1 for d in diffs if d.get("api_server", "").startswith("refused"))
            report["variations"] = {"suites": n, "variations": sum(made.values()), "rows": rows,
                                    "differences": len(diffs), "on_objects_the_api_server_refuses": refused,
                                    "groups": group(diffs), "all": diffs}
            print(json.dumps({"pass": "variations", "suites": n, "variations": sum(made.values()), "rows": rows,
                              "differences": len(diffs), "on_objects_the_api_server_refuses": refused}), flush=True)
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    for name in ("suites", "variations"):
        for g in report.get(name, {}).get("groups", [])[:40]:
            print(json.dumps({"pass": name, **g}))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    raise SystemExit(main())
