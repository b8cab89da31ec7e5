"""Vendor the published schemas of the policy kinds the CEL and Kyverno families load.

    python tools/vendor_schemas.py --kyverno-dir "$(go env GOMODCACHE)/github.com/kyverno/kyverno@v1.19.1" --kyverno-ref v1.19.1
    python tools/vendor_schemas.py --kyverno-git /work/.mirror/kyverno+kyverno --kyverno-ref v1.17.2

The release is the one the Kyverno peer pins (load-tests/kyverno/go.mod): `--kyverno-dir` reads its module as
`load-tests/kyverno/build` downloaded it, `--kyverno-git` a git directory at a tag.

Writes `webhook/policy/schemas/`:
- `kyverno.json`: the `openAPIV3Schema` of every served version of Kyverno's policy CRDs (`config/crds/kyverno`
  and `config/crds/policies.kyverno.io` at the pinned release), descriptions left out, keyed "apiVersion kind";
- `kubernetes.json`: the admissionregistration.k8s.io policy and binding kinds as JSON Schema, from
  kubernetes-validate's strict 1.34 schemas (Kubernetes' own OpenAPI), each with the definitions it refers to;
- `NOTICE`: where they come from and their license (both projects: Apache-2.0).

`webhook/policy/published.py` reads them. Run again to move to another release; review the diff.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "webhook" / "policy" / "schemas"
KYVERNO_DIRS = ("config/crds/kyverno", "config/crds/policies.kyverno.io")
KYVERNO_KINDS = {"ClusterPolicy", "Policy", "PolicyException", "ValidatingPolicy", "NamespacedValidatingPolicy",
                 "MutatingPolicy", "NamespacedMutatingPolicy", "GeneratingPolicy", "NamespacedGeneratingPolicy"}
KUBERNETES_VERSION = "1.34.0"
KUBERNETES_KINDS = (("v1", "ValidatingAdmissionPolicy"), ("v1", "ValidatingAdmissionPolicyBinding"),
                    ("v1alpha1", "MutatingAdmissionPolicy"), ("v1alpha1", "MutatingAdmissionPolicyBinding"),
                    ("v1beta1", "MutatingAdmissionPolicy"), ("v1beta1", "MutatingAdmissionPolicyBinding"))
# documentation only: what a validator never reads
_DROPPED = frozenset({"description", "example", "examples", "title"})


def _strip(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _strip(v) for k, v in node.items() if k not in _DROPPED or not isinstance(v, str)}
    if isinstance(node, list):
        return [_strip(v) for v in node]
    return node


def _git(git_dir: Path, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", str(git_dir), *args], check=True, capture_output=True, text=True).stdout


def _crd_texts(git_dir: Path | None, tree: Path | None, ref: str) -> list[str]:
    """The CRD files of KYVERNO_DIRS: from a git directory at `ref`, or from a source tree (a Go module)."""
    if tree is not None:
        return [path.read_text() for folder in KYVERNO_DIRS for path in sorted((tree / folder).glob("*.yaml"))]
    assert git_dir is not None
    return [_git(git_dir, "show", f"{ref}:{path}") for folder in KYVERNO_DIRS
            for path in _git(git_dir, "ls-tree", "-r", "--name-only", ref, folder).split()]


def kyverno_schemas(texts: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for text in texts:
        crd = yaml.safe_load(text)
        kind = crd["spec"]["names"]["kind"]
        if kind not in KYVERNO_KINDS:
            continue
        for version in crd["spec"]["versions"]:
            if version.get("served", True):
                key = f"{crd['spec']['group']}/{version['name']} {kind}"
                out[key] = _strip(version["schema"]["openAPIV3Schema"])
    return dict(sorted(out.items()))


def _refs(node: Any, found: set[str]) -> None:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            found.add(ref.rsplit("/", 1)[-1])
        for value in node.values():
            _refs(value, found)
    elif isinstance(node, list):
        for value in node:
            _refs(value, found)


def _local(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: ("#/$defs/" + v.rsplit("/", 1)[-1] if k == "$ref" and isinstance(v, str) else _local(v))
                for k, v in node.items()}
    if isinstance(node, list):
        return [_local(v) for v in node]
    return node


def kubernetes_schemas() -> dict[str, Any]:
    import kubernetes_validate

    base = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema" / f"v{KUBERNETES_VERSION}-local-strict"
    definitions = json.loads((base / "_definitions.json").read_text())["$defs"]
    out: dict[str, Any] = {}
    for version, kind in KUBERNETES_KINDS:
        schema = json.loads((base / f"{kind.lower()}-admissionregistration-{version}.json").read_text())
        needed: set[str] = set()
        _refs(schema, needed)
        todo = list(needed)
        while todo:
            more: set[str] = set()
            _refs(definitions[todo.pop()], more)
            todo.extend(more - needed)
            needed |= more
        bundled = _strip(_local(schema))
        bundled["$defs"] = {name: _strip(_local(definitions[name])) for name in sorted(needed)}
        out[f"admissionregistration.k8s.io/{version} {kind}"] = bundled
    return out


NOTICE = """Published schemas of the policy kinds, vendored by tools/vendor_schemas.py (descriptions left out).

kyverno.json: the openAPIV3Schema of Kyverno's CRDs (config/crds/kyverno, config/crds/policies.kyverno.io),
  github.com/kyverno/kyverno at {ref} ({commit}). Copyright The Kyverno Authors, Apache License 2.0.
kubernetes.json: admissionregistration.k8s.io policy and binding kinds at Kubernetes {k8s}, as JSON Schema
  from kubernetes-validate (github.com/willthames/kubernetes-validate, Apache License 2.0), generated from
  Kubernetes' OpenAPI (Copyright The Kubernetes Authors, Apache License 2.0).

Apache License 2.0: https://www.apache.org/licenses/LICENSE-2.0
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--kyverno-git", type=Path, help="a git directory of kyverno/kyverno")
    source.add_argument("--kyverno-dir", type=Path, help="a source tree of kyverno/kyverno at the release (its Go module)")
    parser.add_argument("--kyverno-ref", required=True, help="the release to vendor, e.g. v1.19.1")
    args = parser.parse_args(argv)
    if args.kyverno_dir is not None:
        git_dir, commit = None, f"Go module github.com/kyverno/kyverno@{args.kyverno_ref}"
    else:
        git_dir = args.kyverno_git / "repo" if (args.kyverno_git / "repo").is_dir() else args.kyverno_git
        commit = _git(git_dir, "rev-parse", f"{args.kyverno_ref}^{{commit}}").strip()
    OUT.mkdir(parents=True, exist_ok=True)
    kyverno = {"release": args.kyverno_ref, "commit": commit,
               "schemas": kyverno_schemas(_crd_texts(git_dir, args.kyverno_dir, args.kyverno_ref))}
    kubernetes = {"release": KUBERNETES_VERSION, "schemas": kubernetes_schemas()}
    (OUT / "kyverno.json").write_text(json.dumps(kyverno, separators=(",", ":"), sort_keys=True) + "\n")
    (OUT / "kubernetes.json").write_text(json.dumps(kubernetes, separators=(",", ":"), sort_keys=True) + "\n")
    (OUT / "NOTICE").write_text(NOTICE.format(ref=args.kyverno_ref, commit=commit, k8s=KUBERNETES_VERSION))
    for name in ("kyverno.json", "kubernetes.json"):
        print(f"{OUT / name}: {(OUT / name).stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
