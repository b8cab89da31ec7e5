"""A real server on its own event-loop thread, driven from synchronous hypothesis tests; seed reviews of
every kind the chart registers; mutations of JSON documents."""

from __future__ import annotations

import asyncio
import copy
import json
import random
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import aiohttp
from hypothesis import strategies as st

from tests.platform.quota.builders import claim, claim_spec, device_request, pod, pvc, template
from tests.support import REPO, load_yaml, review, running_server
from webhook.server.limits import ServerLimits

SEND_TIMEOUT = 30.0  # a batch that takes longer than this is a hang


def seed_reviews() -> list[dict[str, Any]]:
    """Valid reviews of each kind the chart registers (pods, PVCs, ResourceClaims, ResourceClaimTemplates),
    for each operation it registers, in a personal and a team profile."""
    notebook = load_yaml(REPO / "tests" / "cases" / "notebook" / "all-containers" / "resource.yaml")[0]
    objects = [
        pod("legacy", gpus=1), pod("dra", templates={"gpu": "one-gpu"}), pod("team-pod", ns="ml-team", gpus=2),
        notebook, pvc("data", size="10Gi"), pvc("big", ns="ml-team", size="2Ti"),
        claim("shared", "jdoe", device_request(2)), template("one-gpu", "jdoe", device_request(1)),
    ]
    reviews = []
    for obj in objects:
        reviews.append(review(obj, dry_run=True))
        reviews.append(review(obj))
        reviews.append(review(obj, operation="UPDATE", old=obj))
        reviews.append(review(None, operation="DELETE", old=obj))
    return reviews


# --- values an attacker (or a buggy client) would put anywhere --------------------------------------------
HOSTILE_STRINGS = ["1e99999999", "-1", "8Ei", "1e-99999999", "0.5", "Gi", "", "\u0000", "a" * 300, "CREATE",
                   "nvidia.com/gpu", "gpu.nvidia.com", "v1", "Pod", "All", "ExactCount", "jdoe", "../..", "${x}"]
SCALARS = (st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
           | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12) | st.sampled_from(HOSTILE_STRINGS))
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
                      max_leaves=6)


def paths(node: Any, prefix: tuple = ()) -> Iterator[tuple]:
    yield prefix
    if isinstance(node, dict):
        for key, value in node.items():
            yield from paths(value, prefix + (key,))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from paths(value, prefix + (index,))


def _parent(doc: Any, path: tuple) -> Any:
    for step in path[:-1]:
        doc = doc[step]
    return doc


@st.composite
def mutated_document(draw: Any, seeds: list[dict[str, Any]]) -> dict[str, Any]:
    """A seed with one to three changes: a value replaced by anything, a key deleted, a key added."""
    doc = copy.deepcopy(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from([p for p in paths(doc) if p]))
        parent, last = _parent(doc, path), path[-1]
        action = draw(st.sampled_from(["replace", "replace", "delete", "add"]))
        if action == "replace":
            parent[last] = draw(VALUES)
        elif action == "delete":
            del parent[last]
        elif isinstance(parent[last], dict):
            parent[last][draw(st.sampled_from(["metadata", "spec", "labels", "resources", "limits", "x"]))] = draw(VALUES)
        elif isinstance(parent[last], list):
            parent[last].append(draw(VALUES))
    return doc


@st.composite
def raw_body(draw: Any, seeds: list[dict[str, Any]]) -> bytes:
    """Mostly mutated documents; now and then bytes no JSON encoder would produce."""
    body = json.dumps(draw(mutated_document(seeds))).encode()
    kind = draw(st.sampled_from(["json"] * 17 + ["truncated", "deep", "garbage"]))
    if kind == "truncated":
        return body[:draw(st.integers(0, len(body)))]
    if kind == "deep":
        depth = draw(st.sampled_from([101, 1_000, 50_000]))
        return body.replace(b'"request": {', b'"request": {"deep": ' + b"[" * depth + b"]" * depth + b", ", 1)
    if kind == "garbage":
        return draw(st.binary(max_size=64))
    return body


# --- the same mutations, driven by one integer (hypothesis draws the integers, shrinks them, and replays them):
# drawing thousands of nested values through hypothesis costs ~5 ms a review, this costs ~50 us
def _random_value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth < 2 and roll < 0.15:
        return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if depth < 2 and roll < 0.3:
        return {rng.choice(["a", "name", "spec", "x", ""]): _random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))}
    return rng.choice([None, True, False, 0, -1, 2**63, -(2**70), 1.5, -0.0, 1e300, "", "x", "\u00e9\u2603",
                       *HOSTILE_STRINGS])


def mutate_with(doc: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """One to three changes, as mutated_document makes them."""
    doc = copy.deepcopy(doc)
    for _ in range(rng.randint(1, 3)):
        candidates = [p for p in paths(doc) if p]
        if not candidates:
            break
        path = rng.choice(candidates)
        parent, last = _parent(doc, path), path[-1]
        action = rng.choice(["replace", "replace", "delete", "add"])
        if action == "replace":
            parent[last] = _random_value(rng)
        elif action == "delete":
            del parent[last]
        elif isinstance(parent[last], dict):
            parent[last][rng.choice(["metadata", "spec", "labels", "resources", "limits", "x"])] = _random_value(rng)
        elif isinstance(parent[last], list):
            parent[last].append(_random_value(rng))
    return doc


def body_from_seed(seeds: list[dict[str, Any]], number: int) -> bytes:
    """A mutated review, mostly JSON, now and then truncated, nested too deep or not JSON at all."""
    rng = random.Random(number)
    body = json.dumps(mutate_with(rng.choice(seeds), rng)).encode()
    kind = rng.choice(["json"] * 17 + ["truncated", "deep", "garbage"])
    if kind == "truncated":
        return body[:rng.randint(0, len(body))]
    if kind == "deep":
        depth = rng.choice([101, 1_000, 50_000])
        return body.replace(b'"request": {', b'"request": {"deep": ' + b"[" * depth + b"]" * depth + b", ", 1)
    if kind == "garbage":
        return rng.randbytes(rng.randint(0, 64))
    return body


@dataclass
class ThreadedServer:
    """The server and a client session live on one loop in a thread; tests post batches through it."""

    loop: asyncio.AbstractEventLoop
    server: Any

    def run(self, coroutine: Any, timeout: float = SEND_TIMEOUT) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    async def _post(self, path: str, body: bytes) -> tuple[int, bytes]:
        async with self.server.session.post(self.server.url + path, data=body,
                                            headers={"Content-Type": "application/json"}) as resp:
            return resp.status, await resp.read()

    def post_all(self, requests: list[tuple[str, bytes]]) -> list[tuple[int, bytes]]:
        async def send() -> list[tuple[int, bytes]]:
            return list(await asyncio.gather(*(self._post(path, body) for path, body in requests)))
        return self.run(send())


def start_threaded(policies: Path, state: Path, tmp_path: Path, connections: int = 8) -> tuple[ThreadedServer, Any]:
    """Returns the server and a stop function."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="fuzz-server", daemon=True)
    thread.start()
    # no pause before refusals: the fuzz sends thousands of malformed reviews on purpose
    context = running_server(policies, tmp_path, state=state, limits=ServerLimits(refusal_delay_seconds=0.0))

    async def enter() -> Any:
        server = await context.__aenter__()
        await server.session.close()  # a session with few connections: many reviews per connection
        ssl_context = server.client_ssl()
        server.session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ssl_context, limit=connections))
        return server

    threaded = ThreadedServer(loop, asyncio.run_coroutine_threadsafe(enter(), loop).result(60))

    def stop() -> None:
        asyncio.run_coroutine_threadsafe(threaded.server.session.close(), loop).result(10)
        asyncio.run_coroutine_threadsafe(context.__aexit__(None, None, None), loop).result(60)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()

    return threaded, stop
