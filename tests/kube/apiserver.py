"""A small kube-apiserver for tests: the real REST and watch protocol the `kubernetes` client speaks.

- GET collection: a List with metadata.resourceVersion; items without apiVersion/kind, as the real
  server sends them; labelSelector (equality) honoured.
- GET ?watch=1&resourceVersion=N&allowWatchBookmarks=true&timeoutSeconds=T: newline-delimited
  events (ADDED, MODIFIED, DELETED, BOOKMARK) after N; when N is older than the compaction point,
  one ERROR event carrying a metav1.Status 410 Expired, as the real server does.
- POST (201; 409 AlreadyExists), PUT (409 Conflict on a stale resourceVersion), PATCH (merge patch),
  DELETE; errors are metav1.Status bodies. Bearer-token authentication (401 otherwise).
- Switches for failure tests: hang requests, fail the next requests with a status, drop every watch,
  compact the history, remove a CRD.

It runs its own event loop in a thread, so the synchronous client (in other threads) and the test
(on pytest's loop) can both use it. State changes are thread-safe.
"""

from __future__ import annotations

import asyncio
import copy
import re
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import yaml
from aiohttp import web

from tests.kube.apiserver_protocol import GVR, RESOURCES, TOKEN, gvr_of, is_watch, labels_match, status
from tests.support import merge_patch
from tests.kube.apiserver_watch import Watcher, stream_watch

_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


@dataclass
class Failure:
    method: str
    plural: str
    code: int
    reason: str
    count: int


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    query: dict[str, str]
    plural: str


class FakeApiServer:
    def __init__(self, bookmark_interval: float = 0.2, token: str = TOKEN, port: int = 0) -> None:
        self.bookmark_interval = bookmark_interval
        self.send_bookmarks = True  # False: a server that never sends any (they are optional)
        self.token = token
        self.lock = threading.RLock()
        self.objects: dict[tuple[GVR, str, str], dict[str, Any]] = {}
        self.history: list[tuple[int, GVR, str, dict[str, Any]]] = []
        self.rv = 100
        self.compacted_rv = 0
        self.absent: set[GVR] = set()  # CRDs not installed
        self.requests: list[Seen] = []
        self.failures: list[Failure] = []
        self.hang: Callable[[str, str, dict[str, str]], bool] | None = None  # (method, plural, query) -> hang?
        self.watchers_list: list[Watcher] = []
        self.raw_lines: dict[str, list[bytes]] = {}  # plural -> lines the next watch sends as they are
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self.port = port  # 0: any free port; a fixed one lets a test stop the server and start it again there

    # --- lifecycle -------------------------------------------------------------------------
    def start(self) -> "FakeApiServer":
        ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, args=(ready,), daemon=True, name="fake-apiserver")
        self._thread.start()
        assert ready.wait(10), "fake API server did not start"
        return self

    def _serve(self, ready: threading.Event) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        app = web.Application(client_max_size=8 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, shutdown_timeout=1.0)
        loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", self.port)
        loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        ready.set()
        loop.run_forever()
        loop.run_until_complete(self._runner.cleanup())
        loop.close()

    def stop(self) -> None:
        if self._loop is None:
            return
        self.hang = None
        self.drop_watches()
        self._loop.call_soon_threadsafe(self._loop.stop)
        assert self._thread is not None
        self._thread.join(10)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def kubeconfig(self, path: Path, token: str | None = None) -> Path:
        path.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "test",
            "clusters": [{"name": "test", "cluster": {"server": self.url}}],
            "users": [{"name": "test", "user": {"token": token or self.token}}],
            "contexts": [{"name": "test", "context": {"cluster": "test", "user": "test"}}],
        }))
        return path

    # --- state, from tests ---------------------------------------------------------------------
    def _next_rv(self) -> int:
        self.rv += 1
        return self.rv

    def _record(self, gvr: GVR, kind: str, obj: dict[str, Any]) -> None:
        """Append to the history and hand to the matching watchers (lock held)."""
        rv = int(obj["metadata"]["resourceVersion"])
        self.history.append((rv, gvr, kind, copy.deepcopy(obj)))
        namespace = obj["metadata"].get("namespace", "")
        for watcher in self.watchers_list:
            if watcher.wants(gvr, namespace):
                watcher.pending.append((rv, kind, copy.deepcopy(obj)))
                if self._loop is not None:
                    self._loop.call_soon_threadsafe(watcher.wake.set)

    def put(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Create or replace, as a controller would; returns the stored object."""
        with self.lock:
            gvr = gvr_of(obj)
            stored = copy.deepcopy(obj)
            meta = stored.setdefault("metadata", {})
            key = (gvr, meta.get("namespace", "") if RESOURCES[gvr][1] else "", meta["name"])
            existing = self.objects.get(key)
            meta.setdefault("uid", existing["metadata"]["uid"] if existing else str(uuid.uuid4()))
            meta.setdefault("creationTimestamp", datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))
            meta["resourceVersion"] = str(self._next_rv())
            self.objects[key] = stored
            self._record(gvr, "MODIFIED" if existing else "ADDED", stored)
            return copy.deepcopy(stored)

    def remove(self, obj_or_kind: dict[str, Any]) -> bool:
        with self.lock:
            gvr = gvr_of(obj_or_kind)
            meta = obj_or_kind["metadata"]
            key = (gvr, meta.get("namespace", "") if RESOURCES[gvr][1] else "", meta["name"])
            stored = self.objects.pop(key, None)
            if stored is None:
                return False
            stored["metadata"]["resourceVersion"] = str(self._next_rv())
            self._record(gvr, "DELETED", stored)
            return True

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        with self.lock:
            gvr = gvr_of({"apiVersion": api_version, "kind": kind})
            obj = self.objects.get((gvr, namespace if RESOURCES[gvr][1] else "", name))
            return copy.deepcopy(obj) if obj else None

    def list(self, api_version: str, kind: str, namespace: str = "") -> list[dict[str, Any]]:
        with self.lock:
            gvr = gvr_of({"apiVersion": api_version, "kind": kind})
            return [copy.deepcopy(o) for (g, ns, _), o in sorted(self.objects.items(), key=lambda kv: kv[0][1:])
                    if g == gvr and (not namespace or ns == namespace)]

    def compact(self) -> int:
        """Forget the history: a watch from any version up to now gets 410 Gone."""
        with self.lock:
            self.compacted_rv = self.rv
            self.history.clear()
            return self.compacted_rv

    def inject(self, plural: str, line: bytes) -> None:
        """A watch line of a broken or hostile server (not JSON, wrong types): sent once, to a watch of `plural`."""
        with self.lock:
            self.raw_lines.setdefault(plural, []).append(line)
            for watcher in self.watchers_list:
                if self._loop is not None:
                    self._loop.call_soon_threadsafe(watcher.wake.set)

    def drop_watches(self) -> None:
        with self.lock:
            for watcher in self.watchers_list:
                watcher.dropped = True
                if self._loop is not None:
                    self._loop.call_soon_threadsafe(watcher.wake.set)

    def fail_next(self, method: str, plural: str, code: int, reason: str, count: int = 1) -> None:
        with self.lock:
            self.failures.append(Failure(method, plural, code, reason, count))

    def seen(self, method: str | None = None, plural: str | None = None, watch: bool | None = None) -> list[Seen]:
        with self.lock:
            return [s for s in self.requests if (method is None or s.method == method)
                    and (plural is None or s.plural == plural)
                    and (watch is None or is_watch(s.query) == watch)]

    @property
    def watchers(self) -> int:
        with self.lock:
            return len(self.watchers_list)

    def watching(self, plural: str) -> int:
        """Watches of this resource established now (a dropped watch is then sure to hit one)."""
        with self.lock:
            return sum(1 for w in self.watchers_list if w.gvr[2] == plural and not w.dropped)

    # --- HTTP ------------------------------------------------------------------------------------
    @staticmethod
    def _route(path: str) -> tuple[GVR, str, str] | None:
        parts = [p for p in path.split("/") if p]
        if parts[:2] == ["api", "v1"]:
            group, version, rest = "", "v1", parts[2:]
        elif len(parts) >= 3 and parts[0] == "apis":
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            return None
        namespace = ""
        if len(rest) >= 3 and rest[0] == "namespaces":
            namespace, rest = rest[1], rest[2:]
        if len(rest) == 3 and rest[2] == "status":  # the status subresource: _handle patches status only
            rest = rest[:2]
        if len(rest) not in (1, 2):
            return None
        return (group, version, rest[0]), namespace, rest[1] if len(rest) == 2 else ""

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        query = dict(request.query)
        route = self._route(request.path)
        plural = route[0][2] if route else ""
        with self.lock:
            self.requests.append(Seen(request.method, request.path, query, plural))
        if request.headers.get("Authorization") != f"Bearer {self.token}":
            return web.json_response(status(401, "Unauthorized", "Unauthorized"), status=401)
        deadline = time.monotonic() + 60
        while self.hang is not None and self.hang(request.method, plural, query) and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        if route is None or route[0] not in RESOURCES or route[0] in self.absent:
            return web.json_response(status(404, "NotFound", "the server could not find the requested resource"),
                                     status=404)
        failure = self._take_failure(request.method, plural)
        if failure is not None:
            return web.json_response(status(failure.code, failure.reason, f"injected {failure.reason}"), status=failure.code)
        gvr, namespace, name = route
        if request.method == "GET" and not name:
            if is_watch(query):
                return await stream_watch(self, request, gvr, namespace, query)
            return self._list(gvr, namespace, query)
        body = await request.json() if request.method in ("POST", "PUT", "PATCH") else None
        if request.path.endswith("/status") and request.method == "PATCH":
            if request.content_type != "application/merge-patch+json":
                return web.json_response(status(415, "UnsupportedMediaType", request.content_type), status=415)
            body = {"status": (body or {}).get("status")}  # a status write changes nothing else
        handler = {"GET": self._read, "POST": self._create, "PUT": self._replace, "PATCH": self._patch,
                   "DELETE": self._delete}.get(request.method)
        if handler is None:
            return web.json_response(status(405, "MethodNotAllowed", "method not allowed"), status=405)
        code, answer = handler(gvr, namespace, name, body)
        return web.json_response(answer, status=code)

    def _take_failure(self, method: str, plural: str) -> Failure | None:
        with self.lock:
            for failure in self.failures:
                if failure.method == method and failure.plural == plural and failure.count > 0:
                    failure.count -= 1
                    return failure
        return None

    def _list(self, gvr: GVR, namespace: str, query: dict[str, str]) -> web.Response:
        kind, _ = RESOURCES[gvr]
        selector = query.get("labelSelector", "")
        with self.lock:
            items = []
            for (g, ns, _), obj in sorted(self.objects.items(), key=lambda kv: kv[0][1:]):
                if g == gvr and (not namespace or ns == namespace) and labels_match(obj, selector):
                    item = copy.deepcopy(obj)
                    item.pop("apiVersion", None)
                    item.pop("kind", None)
                    items.append(item)
            rv = self.rv
        api_version = f"{gvr[0]}/{gvr[1]}" if gvr[0] else gvr[1]
        metadata: dict[str, Any] = {"resourceVersion": str(rv)}
        limit = int(query.get("limit") or 0)
        if limit > 0:  # as the API server pages: `continue` names where the next page starts, in one snapshot
            start, rv = (int(part) for part in query["continue"].split(":")) if query.get("continue") else (0, rv)
            metadata["resourceVersion"] = str(rv)
            if start + limit < len(items):
                metadata["continue"] = f"{start + limit}:{rv}"
            items = items[start:start + limit]
        return web.json_response({"kind": f"{kind}List", "apiVersion": api_version, "metadata": metadata,
                                  "items": items})

    def _key(self, gvr: GVR, namespace: str, name: str) -> tuple[GVR, str, str]:
        return (gvr, namespace if RESOURCES[gvr][1] else "", name)

    def _not_found(self, gvr: GVR, name: str) -> tuple[int, dict[str, Any]]:
        return 404, status(404, "NotFound", f'{gvr[2]} "{name}" not found', name=name, kind=gvr[2])

    def _read(self, gvr: GVR, namespace: str, name: str, _: Any) -> tuple[int, dict[str, Any]]:
        with self.lock:
            obj = self.objects.get(self._key(gvr, namespace, name))
            return (200, copy.deepcopy(obj)) if obj else self._not_found(gvr, name)

    def _create(self, gvr: GVR, namespace: str, _: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        kind, namespaced = RESOURCES[gvr]
        meta = body.setdefault("metadata", {})
        if body.get("kind") != kind:
            return 400, status(400, "BadRequest", f"kind {body.get('kind')!r} does not match {gvr[2]}")
        if namespaced:
            if meta.get("namespace", namespace) != namespace:
                return 400, status(400, "BadRequest", "the namespace of the object does not match the request")
            meta["namespace"] = namespace
        prefix = meta.get("generateName")
        if prefix and not _DNS_SUBDOMAIN.fullmatch(prefix[:-1] + "a" if prefix.endswith("-") else prefix):
            # as the real API server validates a name prefix: only a trailing "-" is allowed beyond a name
            return 422, status(422, "Invalid", f"metadata.generateName: Invalid value: {prefix!r}")
        if not meta.get("name") and prefix:
            meta["name"] = prefix + uuid.uuid4().hex[:5]
        if not meta.get("name"):
            return 422, status(422, "Invalid", "metadata.name: Required value")
        with self.lock:
            key = self._key(gvr, namespace, meta["name"])
            if key in self.objects:
                return 409, status(409, "AlreadyExists", f'{gvr[2]} "{meta["name"]}" already exists',
                                   name=meta["name"], kind=gvr[2])
            meta.pop("resourceVersion", None)
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            meta["resourceVersion"] = str(self._next_rv())
            self.objects[key] = body
            self._record(gvr, "ADDED", body)
            return 201, copy.deepcopy(body)

    def _replace(self, gvr: GVR, namespace: str, name: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self.lock:
            key = self._key(gvr, namespace, name)
            current = self.objects.get(key)
            if current is None:
                return self._not_found(gvr, name)
            meta = body.setdefault("metadata", {})
            if meta.get("resourceVersion") and meta["resourceVersion"] != current["metadata"]["resourceVersion"]:
                return 409, status(409, "Conflict", f'Operation cannot be fulfilled on {gvr[2]} "{name}": the object '
                                   f'has been modified; please apply your changes to the latest version and try again',
                                   name=name, kind=gvr[2])
            for fixed in ("uid", "creationTimestamp", "namespace", "name"):
                if fixed in current["metadata"]:
                    meta[fixed] = current["metadata"][fixed]
            meta["resourceVersion"] = str(self._next_rv())
            self.objects[key] = body
            self._record(gvr, "MODIFIED", body)
            return 200, copy.deepcopy(body)

    def _patch(self, gvr: GVR, namespace: str, name: str, body: Any) -> tuple[int, dict[str, Any]]:
        with self.lock:
            key = self._key(gvr, namespace, name)
            current = self.objects.get(key)
            if current is None:
                return self._not_found(gvr, name)
            patched = merge_patch(current, body)
            patched["metadata"]["resourceVersion"] = str(self._next_rv())
            patched["metadata"]["uid"] = current["metadata"]["uid"]
            self.objects[key] = patched
            self._record(gvr, "MODIFIED", patched)
            return 200, copy.deepcopy(patched)

    def _delete(self, gvr: GVR, namespace: str, name: str, _: Any) -> tuple[int, dict[str, Any]]:
        with self.lock:
            current = self.objects.get(self._key(gvr, namespace, name))
            if current is None:
                return self._not_found(gvr, name)
            self.remove(current)
            return 200, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                         "details": {"name": name, "kind": gvr[2], "uid": current["metadata"]["uid"]}}
