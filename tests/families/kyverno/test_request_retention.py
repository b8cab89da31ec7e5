"""What a tenant sends is not kept once it is answered.

A Kyverno pattern with a variable is substituted per request: the substituted maps carry what the tenant
wrote (an annotation of up to the API server's request size). Those maps were planned into a module-global
cache of up to 20,000 entries that held them, so each admission could pin a tenant's megabyte in the
webhook's memory: pods sent in a loop grew every replica towards its memory limit. The compiled policy now
keeps the plans of its own (variable-free) patterns only; what a request builds is dropped with it.

A substituted value with a `*` or `?` is a wildcard pattern, and the parsed wildcards were kept in caches of
4,096 entries each, keyed by the whole text; a nested variable builds a JMESPath query out of the tenant's text,
and parsed queries were kept by the whole expression (8,192 of ours, 128 of the jmespath library's). Those
caches now keep short texts only (what policies write).
"""

from __future__ import annotations

import gc
from typing import Any, Iterator

import pytest

from tests.support import policy_dir, review, running_server

PREFIX = "tenant-payload-"

# the first rule passes (the note matches itself); the second only reports (Audit) that the name is not the
# note, which it reads as a wildcard pattern when the note has `*` or `?`; the third builds a JMESPath query
# out of the note (a nested variable)
ANNOTATION_ECHO = """\
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: tenant-notes}
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
  - name: named-after-the-note
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate:
      failureAction: Audit
      message: the name should follow the note
      pattern:
        metadata:
          name: "{{request.object.metadata.annotations.note}}"
  - name: label-named-by-the-note
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate:
      failureAction: Audit
      message: the label the note names must not say forbidden
      deny:
        conditions:
          any:
          - key: '{{ request.object.metadata.labels."{{ request.object.metadata.annotations.note }}" || ''none'' }}'
            operator: Equals
            value: forbidden
"""


def pod(note: str, name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "team-a", "annotations": {"note": note}},
            "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}


def _strings_within(value: Any, depth: int = 0) -> Iterator[str]:
    """Strings inside maps and tuples that the collector does not track (those holding only atoms)."""
    if isinstance(value, str):
        yield value
    elif depth < 64 and isinstance(value, dict) and not gc.is_tracked(value):
        for item in (*value, *value.values()):
            yield from _strings_within(item, depth + 1)
    elif depth < 64 and isinstance(value, tuple) and not gc.is_tracked(value):
        for item in value:
            yield from _strings_within(item, depth + 1)


def retained_payloads() -> set[str]:
    """Every tenant payload any live object still refers to, directly or through untracked maps."""
    gc.unfreeze()  # the server froze what it loaded (module globals among it): get_objects() skips frozen ones
    gc.collect()
    found: set[str] = set()
    for holder in gc.get_objects():
        for referent in gc.get_referents(holder):
            for text in _strings_within(referent):
                if text.startswith(PREFIX) and text != PREFIX:
                    found.add(text[:40])
    return found


@pytest.mark.parametrize("filler", ["x", "*", "?"])
async def test_a_tenants_payload_is_not_kept_after_the_admission(tmp_path, filler):
    policies = policy_dir(tmp_path / "p", {"policy.yaml": ANNOTATION_ECHO})
    async with running_server(policies, tmp_path) as server:
        for index in range(3):
            note = f"{PREFIX}{index}-" + filler * 4096
            # dryRun: the standalone state records nothing, so nothing may legitimately keep the pod
            answer = await server.admit("/validate", review(pod(note, f"p{index}"), dry_run=True))
            assert answer["allowed"] is True, answer
            del note, answer
        assert retained_payloads() == set()
