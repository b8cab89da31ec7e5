"""The watch half of the test API server: newline-delimited events on a chunked response.

Events after the requested resourceVersion come from the server's history, then live; bookmarks
(when asked for) carry the version up to which everything was sent; a version older than the
compaction point gets one ERROR event with a 410 Expired status, as the real server sends it.
"""

from __future__ import annotations

import asyncio
import copy
import json
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiohttp import web

from tests.kube.apiserver_protocol import GVR, RESOURCES, status

if TYPE_CHECKING:
    from tests.kube.apiserver import FakeApiServer


@dataclass
class Watcher:
    gvr: GVR
    namespace: str
    sent_rv: int
    pending: list[tuple[int, str, dict[str, Any]]] = field(default_factory=list)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    dropped: bool = False

    def wants(self, gvr: GVR, namespace: str) -> bool:
        return self.gvr == gvr and (not self.namespace or self.namespace == namespace)


def _register(server: "FakeApiServer", gvr: GVR, namespace: str, start: int) -> Watcher | dict[str, Any]:
    """A watcher with the history it missed, or the 410 status when that history is gone."""
    with server.lock:
        if start and start < server.compacted_rv:
            return status(410, "Expired", f"too old resource version: {start} ({server.compacted_rv})")
        watcher = Watcher(gvr, namespace, start)
        watcher.pending = [(rv, t, copy.deepcopy(o)) for rv, g, t, o in server.history
                           if rv > start and watcher.wants(g, o["metadata"].get("namespace", ""))]
        server.watchers_list.append(watcher)
        return watcher


async def stream_watch(server: "FakeApiServer", request: web.Request, gvr: GVR, namespace: str,
                       query: dict[str, str]) -> web.StreamResponse:
    kind, _ = RESOURCES[gvr]
    api_version = f"{gvr[0]}/{gvr[1]}" if gvr[0] else gvr[1]
    response = web.StreamResponse(headers={"Content-Type": "application/json"})
    response.enable_chunked_encoding()
    await response.prepare(request)
    bookmarks = server.send_bookmarks and query.get("allowWatchBookmarks") in ("true", "True", "1")
    ends = time.monotonic() + float(query.get("timeoutSeconds") or 1800)

    async def send(event: dict[str, Any]) -> None:
        await response.write(json.dumps(event).encode() + b"\n")

    watcher = _register(server, gvr, namespace, int(query.get("resourceVersion") or 0))
    if not isinstance(watcher, Watcher):
        await send({"type": "ERROR", "object": watcher})
        await response.write_eof()
        return response
    try:
        while time.monotonic() < ends:
            with server.lock:
                raw = server.raw_lines.pop(gvr[2], [])
                batch, watcher.pending = watcher.pending, []
                watcher.wake.clear()
                dropped, current = watcher.dropped, server.rv
            if dropped:
                if request.transport is not None:
                    request.transport.close()  # abruptly, mid-stream: the client sees a broken chunked body
                return response
            for line in raw:
                await response.write(line + b"\n")
            for rv, event_type, obj in batch:
                if rv > watcher.sent_rv:  # a change both in the history and in the live queue goes once
                    obj.setdefault("apiVersion", api_version)
                    obj.setdefault("kind", kind)
                    await send({"type": event_type, "object": obj})
                    watcher.sent_rv = rv
            if not batch and bookmarks:  # nothing pending: everything up to `current` was sent
                watcher.sent_rv = max(watcher.sent_rv, current)
                await send({"type": "BOOKMARK", "object": {"kind": kind, "apiVersion": api_version,
                                                           "metadata": {"resourceVersion": str(watcher.sent_rv)}}})
            try:
                await asyncio.wait_for(watcher.wake.wait(), min(server.bookmark_interval, max(0.0, ends - time.monotonic())))
            except asyncio.TimeoutError:
                pass
        await response.write_eof()
    except (ConnectionResetError, RuntimeError):
        pass
    finally:
        with server.lock:
            if watcher in server.watchers_list:
                server.watchers_list.remove(watcher)
    return response
