"""Policy-side attacks: a semi-trusted policy evaluated on a hostile request must be answered at once, with
the event loop free for other clients."""

import asyncio
import time

from tests.kinds import pod
from tests.support import policy_dir, review, running_server

RENDERS_AN_ANNOTATION = """\
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: note-echo
spec:
  validationFailureAction: Enforce
  rules:
  - name: note
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      message: "note: {{ request.object.metadata.annotations.note || '' }}"
      deny:
        conditions:
          any:
          - key: "n={{ request.object.metadata.annotations.note || '' }}"
            operator: Equals
            value: "n=forbidden"
"""

SELF = "{{ request.object.metadata.annotations.note }}"


def annotated(note: str) -> dict:
    obj = pod()
    obj["metadata"]["annotations"] = {"note": note}
    return obj


async def test_an_annotation_that_names_itself_is_answered_at_once(tmp_path):
    """Variables re-scanned in substituted values: an annotation naming itself looped for ever, naming itself
    twice doubled the string each pass; both held the event loop (every other client waited)."""
    policies = policy_dir(tmp_path / "policies", {"echo.yaml": RENDERS_AN_ANNOTATION})
    async with running_server(policies, tmp_path) as server:
        assert (await server.admit("/validate", review(annotated("fine"))))["allowed"] is True
        denied = await server.admit("/validate", review(annotated("forbidden")))
        assert denied["allowed"] is False and "note: forbidden" in denied["status"]["message"]

        async def probe() -> float:
            started = time.perf_counter()
            assert (await server.get("/healthz"))[0] == 200
            return time.perf_counter() - started
        hostile = [server.admit("/validate", review(annotated(note))) for note in (SELF, SELF * 2, SELF * 3)]
        results = await asyncio.wait_for(asyncio.gather(*hostile, *(probe() for _ in range(10))), 20)
        for response in results[:3]:
            assert response["allowed"] is False  # the rule errors: the policy's failure policy decides
            assert "holds variables again" in response["status"]["message"], response["status"]["message"]
        assert max(results[3:]) < 1.0
