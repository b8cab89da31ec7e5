"""Policy-side attacks: a semi-trusted policy evaluated on a hostile request must be answered at once, with
the event loop free for other clients."""

import asyncio
import base64
import json

import jsonpatch

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

        async def probe() -> None:
            assert (await server.get("/healthz"))[0] == 200
        hostile = [server.admit("/validate", review(annotated(note))) for note in (SELF, SELF * 2, SELF * 3)]
        # a hang guard: the loop that never ended stops here; the work per value is bounded by
        # tests/families/kyverno/test_variables.py (lines run)
        results = await asyncio.wait_for(asyncio.gather(*hostile, *(probe() for _ in range(10))), 60)
        for response in results[:3]:
            assert response["allowed"] is False  # the rule errors: the policy's failure policy decides
            assert "holds variables again" in response["status"]["message"], response["status"]["message"]


PER_CONTAINER = """\
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: pull-always
spec:
  rules:
  - name: per-container
    match:
      any:
      - resources:
          kinds: [Pod]
    mutate:
      foreach:
      - list: request.object.spec.containers
        patchStrategicMerge:
          spec:
            containers:
            - (name): "{{ element.name }}"
              imagePullPolicy: Always
"""


async def test_a_foreach_over_thousands_of_containers_stops_at_the_requests_deadline(tmp_path):
    """Each element's anchor walks every container (quadratic: 2,000 containers took 74 s on the event loop;
    ~1.5 s since literal conditions are told without the walk and merges copy on write, so this pod has 6,000,
    ~9x that). The loop stops once the request's time budget (?timeout=, as the API server sends it) has run out: the rule errs and its failure policy (Fail) denies,
    within the time the API server waits."""
    policies = policy_dir(tmp_path / "policies", {"pull.yaml": PER_CONTAINER})
    async with running_server(policies, tmp_path) as server:
        small = await server.admit("/mutate", review(pod()))
        assert small["allowed"] is True and "patch" in small  # the policy works on a usual pod
        crowded = pod()
        crowded["spec"]["containers"] = [{"name": f"c{i}", "image": "nginx"} for i in range(6000)]
        status, answer = await asyncio.wait_for(server.post("/mutate", review(crowded), query="?timeout=1s"), 60)
        assert status == 200, answer
        response = answer["response"]
        # the server's own answer proves the deadline: the engine's (the review waits beside the loop) or the
        # foreach's own check, whichever came first
        message = response["status"]["message"]
        assert response["allowed"] is False and "pull-always" in message, response
        assert "timed out" in message or "time budget ran out" in message, response


async def test_a_large_foreach_is_evaluated_beside_the_event_loop(tmp_path):
    """The crowded pod's per-container foreach held the event loop for its whole evaluation (1,000 containers:
    about a second): every other review waited behind it. Now it runs in the family's worker thread, and a usual pod sent meanwhile
    is answered at once; the crowded one is answered in full when done."""
    policies = policy_dir(tmp_path / "policies", {"pull.yaml": PER_CONTAINER})
    async with running_server(policies, tmp_path) as server:
        crowded = pod()
        crowded["spec"]["containers"] = [{"name": f"c{i}", "image": "nginx"} for i in range(1000)]
        hostile = asyncio.ensure_future(server.post("/mutate", review(crowded), query="?timeout=30s"))
        await asyncio.sleep(0.3)
        small = await server.admit("/mutate", review(pod()))
        assert small["allowed"] is True and "patch" in small
        # the order proves it, not a clock: on the event loop the crowded pod would be answered before the small
        # one was even read
        assert not hostile.done()
        status, answer = await asyncio.wait_for(hostile, 60)
        assert status == 200 and answer["response"]["allowed"] is True, answer
        patched = jsonpatch.apply_patch(crowded, json.loads(base64.b64decode(answer["response"]["patch"])))
        assert [c["imagePullPolicy"] for c in patched["spec"]["containers"]] == ["Always"] * 1000
