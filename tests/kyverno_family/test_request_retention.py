"""What a tenant sends is not kept once it is answered.

A Kyverno pattern with a variable is substituted per request: the substituted maps carry what the tenant
wrote (an annotation of up to the API server's request size). Those maps were planned into a module-global
cache of up to 20,000 entries that held them, so each admission could pin a tenant's megabyte in the
webhook's memory: pods sent in a loop grew every replica towards its memory limit. The compiled policy now
keeps the plans of its own (variable-free) patterns only; what a request builds is dropped with it.
"""

from __future__ import annotations

import gc
from typing import Any, Iterator

from tests.support import policy_dir, review, running_server

PREFIX = "tenant-payload-"

ANNOTATION_ECHO = """\
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: note-matches-itself}
spec:
  validationFailureAction: Enforce
  background: false
  rules:
  - name: note
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate:
      message: the note must stay as written
      pattern:
        metadata:
          annotations:
            note: "{{request.object.metadata.annotations.note}}"
"""


def pod(note: str, name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "team-a", "annotations": {"note": note}},
            "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}


def _strings_within(value: Any, depth: int = 0) -> Iterator[str]:
    """Strings inside maps and lists that the collector does not track (those holding only atoms)."""
    if isinstance(value, str):
        yield value
    elif depth < 64 and isinstance(value, dict) and not gc.is_tracked(value):
        for item in value.values():
            yield from _strings_within(item, depth + 1)


def retained_payloads() -> set[str]:
    """Every tenant payload any live object still refers to, directly or through untracked maps."""
    gc.collect()
    found: set[str] = set()
    for holder in gc.get_objects():
        for referent in gc.get_referents(holder):
            for text in _strings_within(referent):
                if text.startswith(PREFIX):
                    found.add(text[:40])
    return found


async def test_a_tenants_payload_is_not_kept_after_the_admission(tmp_path):
    policies = policy_dir(tmp_path / "p", {"policy.yaml": ANNOTATION_ECHO})
    async with running_server(policies, tmp_path) as server:
        for index in range(3):
            note = f"{PREFIX}{index}-" + "x" * 4096
            # dryRun: the standalone state records nothing, so nothing may legitimately keep the pod
            answer = await server.admit("/validate", review(pod(note, f"p{index}"), dry_run=True))
            assert answer["allowed"] is True, answer
            del note, answer
        assert retained_payloads() == set()
