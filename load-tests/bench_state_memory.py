#!/usr/bin/env python3
"""Ready time and memory with 50,000 stored pods as varied as a real cluster's (issue 41.7).

    python load-tests/bench_state_memory.py                 # standalone `serve --state` and live mode's caches
    python load-tests/bench_state_memory.py --pods 10000    # a smaller cluster
    python load-tests/bench_state_memory.py --only live     # or: standalone

The suite's start-up run (`suite.py`) stores one pod template with the name and uid changed, so the state's
sharing (webhook/model/jsoncopy.Sharer) folds the rest of every pod into one object. In a real cluster each
notebook pod differs in its name, uid, IPs, node, labels (controller-revision-hash, pod-template-hash), owner
uid, env values (the notebook's URL prefix, a token), container and image IDs and timestamps; the pods here
do, the way `kubectl get pods -A -o json` prints them (~2.8 KB of JSON each, ~140 MB for 50,000).

Two measurements, each in a fresh process:
- standalone: `quartermaster serve --state DIR` with the file; seconds until /readyz answers 200, and the
  server's resident memory then (VmRSS);
- live: the objects as live mode's informers keep them (managedFields dropped, packed: webhook/state/packed.py,
  in the pod informer's ObjectCache, webhook/kube/cache.py), listed from the same file one object at a time as
  the informer's paged list decodes them; seconds to decode and store them, and the process's resident memory
  after, beside the same process before (the interpreter and the package).
`QUARTERMASTER_PACKED_STATE=0` measures both with every object decoded (the reference).
Targets (issue 41.7): ready <= 15 s, RSS <= 300 MB.
"""

from __future__ import annotations

import argparse
import functools
import json
import random
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from drivers import Server, free_port  # noqa: E402
from suite import serve_argv  # noqa: E402
from workload import REPO, namespace, notebook_pod  # noqa: E402

CACHE = Path(tempfile.gettempdir()) / "quartermaster-load-tests"
IMAGES = ("kubeflownotebookswg/jupyter-scipy:v1.9.2", "kubeflownotebookswg/jupyter-pytorch-cuda-full:v1.9.2",
          "kubeflownotebookswg/codeserver-python:v1.9.2", "registry.example.org/ml/notebook:2026.11")


def _timestamp(rng: random.Random) -> str:
    return f"2026-{rng.randint(1, 11):02d}-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}Z"


@functools.lru_cache(maxsize=None)
def _template(gpus: int) -> str:
    return json.dumps(notebook_pod("NAME", "NAMESPACE", gpus=gpus))  # parsed from YAML once, copied per pod


def varied_pod(rng: random.Random, namespace_name: str, index: int, resource_version: int) -> dict[str, Any]:
    """A running notebook pod as the API server returns it, every per-pod value its own."""
    name = f"{rng.choice(('analysis', 'train', 'eda', 'thesis', 'lab', 'nb'))}-{uuid.UUID(int=rng.getrandbits(128)).hex[:8]}"
    pod = json.loads(_template(rng.choice((0, 0, 0, 1))))
    pod["metadata"].update(name=f"{name}-0", namespace=namespace_name)
    meta, spec = pod["metadata"], pod["spec"]
    created, started = _timestamp(rng), _timestamp(rng)
    node = f"gpu-node-{rng.randint(0, 199):03d}.example.org"
    meta.update(uid=str(uuid.UUID(int=rng.getrandbits(128))), resourceVersion=str(resource_version),
                creationTimestamp=created, generateName=f"{name}-")
    meta["labels"].update({"notebook-name": name, "statefulset": name, "statefulset.kubernetes.io/pod-name": f"{name}-0",
                           "controller-revision-hash": f"{name}-{rng.getrandbits(40):x}",
                           "apps.kubernetes.io/pod-index": "0"})
    meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": name, "controller": True,
                                "blockOwnerDeletion": True, "uid": str(uuid.UUID(int=rng.getrandbits(128)))}]
    meta["managedFields"] = [{"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1",
                              "time": created, "fieldsType": "FieldsV1",
                              "fieldsV1": {"f:metadata": {"f:labels": {f"f:{k}": {} for k in meta["labels"]}}}}]
    container = spec["containers"][0]
    container["image"] = rng.choice(IMAGES)
    container["env"] = [{"name": "NB_PREFIX", "value": f"/notebook/{namespace_name}/{name}"},
                        {"name": "JUPYTER_TOKEN", "value": uuid.UUID(int=rng.getrandbits(128)).hex},
                        {"name": "WANDB_RUN_GROUP", "value": f"{namespace_name}-{index}"}]
    spec["hostname"], spec["subdomain"], spec["nodeName"] = f"{name}-0", name, node
    spec["volumes"] = [{"name": "workspace", "persistentVolumeClaim": {"claimName": f"{name}-workspace"}},
                       {"name": f"kube-api-access-{uuid.UUID(int=rng.getrandbits(128)).hex[:5]}",
                        "projected": {"defaultMode": 420, "sources": [{"serviceAccountToken": {
                            "expirationSeconds": 3607, "path": "token"}}]}}]
    pod["status"] = {
        "phase": "Running", "qosClass": "Burstable", "startTime": started,
        "hostIP": f"10.0.{rng.randint(0, 255)}.{rng.randint(1, 254)}",
        "podIP": f"10.{rng.randint(64, 127)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}",
        "conditions": [{"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": _timestamp(rng)}
                       for t in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")],
        "containerStatuses": [{"name": container["name"], "ready": True, "restartCount": rng.choice((0, 0, 1, 3)),
                               "started": True, "image": container["image"],
                               "imageID": f"docker.io/{container['image'].split(':')[0]}@sha256:{rng.getrandbits(256):064x}",
                               "containerID": f"containerd://{rng.getrandbits(256):064x}",
                               "state": {"running": {"startedAt": started}}}]}
    pod["status"]["podIPs"] = [{"ip": pod["status"]["podIP"]}]
    return pod


def write_varied_state(path: Path, pods: int, profiles: int, seed: int = 41) -> Path:
    """`kubectl get -o json` of the profiles' namespaces and `pods` varied pods spread over them: one List."""
    rng = random.Random(seed)
    names = [f"user-{i:04d}" for i in range(profiles)]
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    with temporary.open("w", encoding="utf-8") as out:
        out.write('{"apiVersion": "v1", "kind": "List", "items": [\n')
        out.write(",\n".join(json.dumps(namespace(n, True, f"{n}@example.org")) for n in names))
        for index in range(pods):
            out.write(",\n" + json.dumps(varied_pod(rng, names[index % profiles], index, 1000 + index)))
        out.write("\n]}\n")
    temporary.rename(path)
    return path


def standalone(state: Path, tmp: Path, timeout: float) -> dict[str, float | None]:
    certs, port = tmp / "certs", free_port()
    # this tree's package (run from its root), as the live measurement runs it
    server = Server(serve_argv(REPO / "policies", state.parent, certs, port, program=[sys.executable, "-m", "webhook"]),
                    port, certs / "ca.crt", cwd=REPO)
    try:
        seconds = server.wait_ready(timeout)
        return {"ready_s": seconds, "rss_mb": server.rss_mb() if seconds is not None else None}
    finally:
        server.stop()


_LIVE = """
import json, sys, time
from pathlib import Path
def rss():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
import orjson
from webhook.kube.cache import ObjectCache
from webhook.state.packed import packs
before = rss()
started = time.perf_counter()

def listed():
    # the informer's paged list: one page of objects decoded at a time (the file holds one object per line)
    with open(sys.argv[1], "rb") as lines:
        for line in lines:
            line = line.strip().rstrip(b",")
            if line.startswith(b'{"apiVersion": "v1", "kind": "Pod"'):
                yield orjson.loads(line)

pods = ObjectCache(namespaced=True, packed=packs("Pod"))  # as LiveClusterState makes its pod cache
pods.replace(listed())
seconds = time.perf_counter() - started
print(json.dumps({"stored": len(pods), "ready_s": seconds, "rss_mb": rss(), "rss_before_mb": before}))
"""


def live(state: Path) -> dict[str, Any]:
    """Live mode's pod cache filled from the same objects, in a fresh process of this tree's package."""
    run = subprocess.run([sys.executable, "-c", _LIVE, str(state)], cwd=REPO, capture_output=True, text=True,
                         check=True)
    result: dict[str, Any] = json.loads(run.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", type=int, default=50_000)
    parser.add_argument("--profiles", type=int, default=500)
    parser.add_argument("--only", choices=("standalone", "live"))
    parser.add_argument("--ready-timeout", type=float, default=600.0)
    args = parser.parse_args()
    state = CACHE / f"varied-{args.pods}-{args.profiles}" / "state.json"
    if not state.exists():
        write_varied_state(state, args.pods, args.profiles)
    size_mb = state.stat().st_size / 2**20
    print(f"{args.pods} varied pods across {args.profiles} profiles: {size_mb:.0f} MB of JSON ({state})")
    if args.only != "live":
        with tempfile.TemporaryDirectory() as tmp:
            up = standalone(state, Path(tmp), args.ready_timeout)
        ready = f"{up['ready_s']:.1f} s" if up["ready_s"] is not None else "not ready"
        rss = f"{up['rss_mb']:.0f} MB" if up["rss_mb"] is not None else "-"
        print(f"standalone serve --state: ready in {ready}, RSS {rss} (targets 15 s, 300 MB)")
    if args.only != "standalone":
        got = live(state)
        print(f"live mode's pod cache: {got['stored']} pods stored in {got['ready_s']:.1f} s, RSS {got['rss_mb']:.0f} MB "
              f"({got['rss_before_mb']:.0f} MB before them; target 300 MB)")
    return 0


if __name__ == "__main__":
    started = time.perf_counter()
    code = main()
    print(f"(took {time.perf_counter() - started:.0f} s)", file=sys.stderr)
    raise SystemExit(code)
