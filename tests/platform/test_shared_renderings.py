"""What the mutating batteries make once and share between pods is never edited on the way out.

NotebookInjection keeps what it rendered for each user (the volumes, mounts, env and the token refresher) and
DeviceClaimRewrite the ResourceClaimTemplate of each namespace and GPU amount; every pod they mutate holds
those very objects (copies of their top level at most). So nothing after them may edit one in place: not a
later mutating policy (Kyverno's strategic merge, a JSON patch, both over the injected sidecar), not the
engine, not the standalone state that stores the created templates and the admitted pods. Here each is run
over several pods and users, and what is kept must be, byte for byte, what it was when first made."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import orjson

from tests.support import REPO, STATEFULSET_CONTROLLER, apply_patch, assert_valid_k8s, load_yaml, review
from webhook.app import Quartermaster, Settings
from webhook.model.review import parse_review
from webhook.platform.dra.legacy import ContainerRef, LegacyUse
from webhook.platform.dra.mutator import DeviceClaimRewrite
from webhook.platform.dra.rewrite import device_requests
from webhook.platform.dra.templates import build_template
from webhook.platform.notebook.policy import NotebookInjection
from webhook.platform.notebook.render import render
from webhook.state.memory import InMemoryClusterState

POLICIES = REPO / "policies"
STATE = REPO / "examples" / "state"
POD = load_yaml(REPO / "examples" / "notebook-pod.yaml")[0]

# later mutators that edit what the batteries inserted: the refresher's env and securityContext, every volume
LATER = """
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: edit-everything-after
spec:
  rules:
  - name: strategic
    match:
      any:
      - resources:
          kinds: [Pod]
    mutate:
      patchStrategicMerge:
        spec:
          initContainers:
          - (name): "*"
            env:
            - name: PLATFORM
              value: cern
            securityContext:
              runAsGroup: 100
          containers:
          - (name): "*"
            securityContext:
              allowPrivilegeEscalation: false
  - name: json6902
    match:
      any:
      - resources:
          kinds: [Pod]
    mutate:
      patchesJson6902: |-
        - op: add
          path: /spec/initContainers/0/args/-
          value: --verbose
        - op: replace
          path: /spec/volumes/0/name
          value: renamed
        - op: replace
          path: /spec/resourceClaims/0/resourceClaimTemplateName
          value: edited-template
"""


def _pod(name: str, namespace: str, gpus: str) -> dict[str, Any]:
    pod = copy.deepcopy(POD)
    pod["metadata"]["name"] = name
    pod["metadata"]["namespace"] = namespace
    pod["metadata"]["labels"]["notebook-name"] = name
    pod["spec"]["containers"][0]["name"] = name
    pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = gpus
    return pod


def _kept(qm: Quartermaster) -> dict[str, tuple[bytes, bytes]]:
    """Everything the two batteries keep made, as JSON, beside the same made afresh."""
    out: dict[str, tuple[bytes, bytes]] = {}
    for policy in qm.store.snapshot.policies:
        if isinstance(policy, NotebookInjection):
            for key, desired in policy.rendered.items():
                fresh = render(policy.spec, *key)
                out[f"rendered {key}"] = (orjson.dumps([desired.volumes, desired.sidecar, desired.env, desired.mounts]),
                                          orjson.dumps([fresh.volumes, fresh.sidecar, fresh.env, fresh.mounts]))
        if isinstance(policy, DeviceClaimRewrite):
            for (namespace, amounts, chosen), template in policy.config.templates_made.items():
                use = LegacyUse(ContainerRef("containers", 0, "notebook"), amounts)
                fresh = build_template(device_requests(use, policy.config, chosen), namespace, policy.config.templates)
                out[f"template {namespace} {amounts}"] = (orjson.dumps(template), orjson.dumps(fresh))
    return out


async def test_nothing_edits_what_the_batteries_share(tmp_path: Path) -> None:
    shutil.copy(POLICIES / "device-claim-rewrite.yaml", tmp_path / "00-rewrite.yaml")
    shutil.copy(POLICIES / "notebook-injection.yaml", tmp_path / "01-notebook.yaml")
    (tmp_path / "02-later.yaml").write_text(LATER)
    qm = Quartermaster.build(Settings(policies=tmp_path), state=InMemoryClusterState.from_directory(STATE))
    qm.load_policies()
    # personal profiles: their owner is the user (a team's notebook names its creator through objects not here)
    namespaces = sorted({str(ns["metadata"]["name"]) for ns in qm.state.list("Namespace")
                         if (ns["metadata"].get("annotations") or {}).get("owner")
                         and "quartermaster.dev/profile-class" not in (ns["metadata"].get("labels") or {})})
    assert len(namespaces) >= 2, "two users at least"
    outputs: dict[str, list[Any]] = {}
    for round_ in range(3):
        for namespace in namespaces:
            for gpus in ("1", "2"):
                pod = _pod(f"nb-{round_}-{gpus}", namespace, gpus)
                result = await qm.engine.mutate(parse_review(json.dumps(review(pod, username=STATEFULSET_CONTROLLER)).encode()))
                assert result.verdict.allowed, result.verdict.message
                patched = apply_patch(pod, list(result.verdict.patch))
                assert_valid_k8s(patched)
                assert patched["spec"]["initContainers"][0]["args"][-1] == "--verbose", "the later policy ran"
                # the same answer for the same user and amount, whatever was edited after the earlier pods
                spec = json.dumps(patched["spec"], sort_keys=True).replace(f"nb-{round_}-{gpus}", "NAME")
                outputs.setdefault(f"{namespace}/{gpus}", []).append(spec)
                # sent back to /validate as the API server would: the refresher a later policy edited may not hold
                # the credentials (only the NotebookInjection's own refresher may), so it is refused; then stored
                verdict = await qm.engine.validate(parse_review(json.dumps(review(patched, username=STATEFULSET_CONTROLLER)).encode()))
                assert not verdict.allowed and "container 'oidc-token-refresher'" in verdict.message, verdict.message
                qm.state.record_admitted(patched, "CREATE")
    kept = _kept(qm)
    assert any(k.startswith("rendered") for k in kept) and any(k.startswith("template") for k in kept)
    for key, (made, fresh) in kept.items():
        assert made == fresh, key
    for key, specs in outputs.items():
        assert len(set(specs)) == 1, key
    for policy in qm.store.snapshot.policies:
        if isinstance(policy, DeviceClaimRewrite):
            for template in policy.config.templates_made.values():
                stored = qm.state.get("ResourceClaimTemplate", template["metadata"]["namespace"],
                                      template["metadata"]["name"])
                assert stored is not None and stored is not template
                assert "uid" in stored["metadata"] and "uid" not in template["metadata"]


def test_what_the_injection_keeps_is_bounded_and_refusals_are_not_kept(tmp_path: Path, monkeypatch: Any) -> None:
    from webhook.platform.base import ProfileInfo
    from webhook.platform.notebook import policy as notebook_policy
    from webhook.platform.notebook.render import InvalidOwner

    shutil.copy(POLICIES / "notebook-injection.yaml", tmp_path / "notebook.yaml")
    qm = Quartermaster.build(Settings(policies=tmp_path), state=InMemoryClusterState.from_directory(STATE))
    qm.load_policies()
    injection = next(p for p in qm.store.snapshot.policies if isinstance(p, NotebookInjection))
    monkeypatch.setattr(notebook_policy, "RENDERS_KEPT", 50)
    for n in range(180):
        profile = ProfileInfo(f"user{n}", f"user{n}@example.org", "personal")
        desired = injection._render(profile, None, 1000)
        assert desired is injection._render(profile, None, 1000)  # kept: the same object for the next pod
        assert desired.user == f"user{n}" and len(injection.rendered) <= 50
    nobody = ProfileInfo("nobody", "", "personal")
    for _ in range(2):
        try:
            injection._render(nobody, None, 1000)
        except InvalidOwner:
            pass
        else:
            raise AssertionError("a profile without owner renders nothing")
    assert not any(key[0] == nobody for key in injection.rendered)
