"""Standalone cluster state: in memory, seeded from manifests, fed by the admissions it answers.

It holds any kind (ConfigMaps for params, Deployments for lookups...), Secrets without their data:
policies may read a Secret's metadata, never its content.
"""

from __future__ import annotations

import gc
import itertools
import logging
import os
import secrets
import signal
import threading
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

import orjson
import yaml

from webhook.model import boundedyaml
from webhook.model.cluster import CLUSTER_SCOPED, CreateResult, ObjectKey, StateHook, never_expires
from webhook.model.jsoncopy import Sharer
from webhook.state.deletion import deleted, updated
from webhook.state.lookups import StateLookups
from webhook.state.packed import pack, packs, stored as unpacked

log = logging.getLogger(__name__)


STATE_SUFFIXES = (".yaml", ".yml", ".json")
FORK_ABOVE = 32 * 2**20  # bytes of state files  # .json: what `kubectl get -o json` writes


def _documents(path: Path) -> list[Any]:
    """A file's documents. JSON (a YAML subset) is parsed by orjson, many times faster than PyYAML even with
    libyaml (a large cluster's `kubectl get -o json` loads in seconds, not minutes). What orjson refuses is
    read as YAML."""
    text = path.read_text(encoding="utf-8")
    if text.lstrip()[:1] in ("{", "["):
        try:
            return [orjson.loads(text)]
        except orjson.JSONDecodeError:
            pass
    try:
        # bounded as policies are: an alias bomb or an alias inside the node it names is refused from the
        # node graph, before anything walks the data as a tree (the seed's sharing and every policy would)
        return boundedyaml.safe_load_all(text)
    except yaml.YAMLError as exc:
        line, problem = boundedyaml.yaml_problem(exc)
        where = f":{line}" if line else ""  # file:line, as policy errors name theirs
        raise StateSeedError(f"{path}{where}: invalid YAML: {problem}") from None


def _dies_on_terminate() -> None:
    """The parsing child inherits the parent's signal handlers; one that ignores SIGTERM (an event loop's,
    left behind) would make the pool's terminate wait for it forever."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


SeedRecord = tuple[str, str, str, "dict[str, Any] | bytes"]  # kind, namespace ("" if cluster-scoped), name, stored


def _read_all(files: list[Path]) -> list[SeedRecord]:
    """The seed's objects as the state stores them (filled in, versioned; pods packed, the rest shared): in the
    parsing child of a large state, so only what is kept crosses to the server's process."""
    records: list[SeedRecord] = []
    share = Sharer()  # stored objects repeat most of themselves: equal parts become one object
    for path in files:
        for index, doc in enumerate(_documents(path)):
            if doc is None:
                continue
            for item in _items(doc):
                if not isinstance(item, dict) or not item.get("kind") or not (item.get("metadata") or {}).get("name"):
                    raise StateSeedError(f"{path} document {index}: every object needs kind and metadata.name")
                obj = _filled_in(_seeded(item))
                obj["metadata"]["resourceVersion"] = str(len(records) + 1)
                key = ObjectKey.of(obj)
                records.append((key.kind, key.namespace, key.name, pack(obj) if packs(key.kind) else share(obj)))
    return records


def _seeded(obj: dict[str, Any]) -> dict[str, Any]:
    """managedFields are dropped, as the live informers drop them: no policy reads them, they weigh a lot."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
    return obj


def _filled_in(stored: dict[str, Any]) -> dict[str, Any]:
    """What the API server fills in when it persists an object (a name, a uid, a creation time); a Secret
    without its data. Edits `stored` (and its metadata), which the caller owns."""
    if stored.get("kind") == "Secret":
        stored.pop("data", None)
        stored.pop("stringData", None)
    meta = stored.setdefault("metadata", {})
    if not meta.get("name") and meta.get("generateName"):
        meta["name"] = meta["generateName"] + secrets.token_hex(3)[:5]
    if "uid" not in meta:
        meta["uid"] = new_uid()
    if "creationTimestamp" not in meta:
        meta["creationTimestamp"] = _now_text()
    return stored


class StateSeedError(ValueError):
    pass


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Reading a state builds millions of objects that all survive: every full collection on the way walks
    all of them again and frees nothing (dozens of them with a large cluster's pods). The child that
    parses inherits the pause; `serve` collects once and freezes what was loaded right after."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class InMemoryClusterState:
    """Objects indexed by (kind, namespace), then name. Writes are whole-object replacements under a lock."""

    def __init__(self, objects: Iterable[Mapping[str, Any]] = (), owned: bool = False) -> None:
        """`owned`: the objects were parsed for this state alone (from_directory) and are kept without a copy."""
        # quota counting lists one kind in one namespace on every admission: index for exactly that
        # a seeded pod is kept packed (webhook/state/packed.py): every read goes through `unpacked`
        self._scopes: dict[tuple[str, str], dict[str, dict[str, Any] | bytes]] = {}
        self._lock = threading.Lock()
        self._resource_version = 0
        self._listeners: list[tuple[StateHook, Callable[[], bool]]] = []
        self.lookups = StateLookups(self.get, self.list, lambda kind: True, "the standalone state (--state)")
        for obj in objects:
            self._put(obj, owned=owned)

    @classmethod
    def from_directory(cls, root: Path | None) -> "InMemoryClusterState":
        if root is None:
            return cls()
        if not root.exists():
            raise StateSeedError(f"--state {root}: no such file or directory")
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.suffix in STATE_SUFFIXES)
        with _collector_paused():
            if sum(p.stat().st_size for p in files) > FORK_ABOVE:
                import multiprocessing  # only for a large state: a small one (apply's) is read without its import

                if "fork" in multiprocessing.get_all_start_methods():
                    # parsing a large state peaks at several times what it keeps, and the heap stays that size
                    # (the survivors are scattered over it): a child process parses, and hands over only what is kept
                    with multiprocessing.get_context("fork").Pool(1, initializer=_dies_on_terminate) as pool:
                        return cls.seeded(pool.apply(_read_all, (files,)))
            return cls.seeded(_read_all(files))

    @classmethod
    def seeded(cls, records: list[SeedRecord]) -> "InMemoryClusterState":
        """A state holding `records` as they are (_read_all filled them in and numbered their versions)."""
        state = cls()
        for kind, namespace, name, value in records:
            state._scopes.setdefault((kind, namespace), {})[name] = value
        state._resource_version = len(records)
        return state

    # --- reads ---------------------------------------------------------------------------------
    def get(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        found = self._scopes.get((kind, "" if kind in CLUSTER_SCOPED else namespace), {}).get(name)
        return None if found is None else unpacked(found)

    def list(self, kind: str, namespace: str = "") -> list[Mapping[str, Any]]:
        if namespace or kind in CLUSTER_SCOPED:
            return [unpacked(v) for v in list(self._scopes.get((kind, "" if kind in CLUSTER_SCOPED else namespace), {}).values())]
        scopes = [objs for (k, _), objs in list(self._scopes.items()) if k == kind]  # a copy: writers may run in another thread
        return [unpacked(obj) for objs in scopes for obj in list(objs.values())]

    def kinds(self) -> list[str]:
        """Every kind held (background scans and `report` look at all of them)."""
        return sorted({kind for kind, _ in list(self._scopes)})

    @property
    def synced(self) -> bool:
        return True

    # --- writes --------------------------------------------------------------------------------
    async def create(self, obj: Mapping[str, Any], timeout: float) -> CreateResult:
        key = ObjectKey.of(obj)
        with self._lock:
            existing = self.get(key.kind, key.namespace, key.name)
            if existing is not None:
                return CreateResult(created=False, object=existing)
            return CreateResult(created=True, object=self._put(obj, locked=True))

    async def read_through(self, kind: str, namespace: str, name: str, timeout: float) -> Mapping[str, Any] | None:
        """The store is the source: nothing more to read."""
        return self.get(kind, namespace, name)

    def record_admitted(self, obj: Mapping[str, Any], operation: str) -> None:
        if operation == "UPDATE":
            key = ObjectKey.of(obj)
            stored = self.get(key.kind, key.namespace, key.name)
            if stored is not None and ((stored.get("metadata") or {}).get("deletionTimestamp")
                                       or (obj.get("metadata") or {}).get("deletionTimestamp")):
                after = updated(stored, obj).remaining  # deletion marks are the API server's, not the request's
                if after is None:
                    self.record_deleted(key.kind, key.namespace, key.name, force=True)
                    return
                obj = after
        self._put(obj)

    def record_deleted(self, kind: str, namespace: str, name: str, options: Mapping[str, Any] | None = None,
                       force: bool = False) -> None:
        """A DELETE as the API server carries it out (state.deletion): an object with finalizers, or a pod in its
        grace period, stays (marked with deletionTimestamp); `force`: it is gone."""
        with self._lock:
            scope = self._scopes.get((kind, "" if kind in CLUSTER_SCOPED else namespace), {})
            found = scope.get(name)
            if found is None:
                return
            stored = unpacked(found)
            remaining = None if force else deleted(stored, options).remaining
            if remaining is not None:
                self._store(dict(remaining))
                return
            del scope[name]
            self._notify(kind, "DELETED", stored)

    def add_listener(self, hook: StateHook, expired: Callable[[], bool] = never_expires) -> bool:
        """Called on every write, as live informers call theirs (quota totals follow the state this way)."""
        self._listeners = [(h, e) for h, e in self._listeners if not e()] + [(hook, expired)]
        return True

    def sync_details(self) -> dict[str, Any]:
        return {}  # its own source

    def _notify(self, kind: str, event: str, obj: Mapping[str, Any]) -> None:
        for hook, _ in self._listeners:
            try:
                hook(kind, event, obj)
            except Exception:  # a listener bug must not lose the write
                log.exception("state listener failed")

    def _put(self, obj: Mapping[str, Any], locked: bool = False, owned: bool = False) -> dict[str, Any]:
        """Store as the API server would persist it: a name, a uid, a resourceVersion, a creation time.

        `owned`: the object was just parsed for us (the --state seed) and nobody else holds it, so it is
        stored as is. Otherwise the two levels written here (the object, its metadata) are copied and the
        rest is shared with the caller: admitted objects come from a request body parsed for that request
        alone, and nothing (here or in a policy) ever edits a stored object in place; they are replaced whole.
        """
        stored = dict(obj)
        if not owned:
            stored["metadata"] = dict(stored.get("metadata") or {})
        _filled_in(stored)
        if locked:
            return self._store(stored)
        with self._lock:
            return self._store(stored)

    def _store(self, stored: dict[str, Any]) -> dict[str, Any]:
        # kept decoded, even a pod: the quota reuses the charge it computed for the admitted request only while
        # the stored pod shares that request's spec (totals._Spare); the seed's pods, the bulk, are packed
        self._resource_version += 1
        stored["metadata"]["resourceVersion"] = str(self._resource_version)
        key = ObjectKey.of(stored)
        scope = self._scopes.setdefault((key.kind, key.namespace), {})
        event = "MODIFIED" if key.name in scope else "ADDED"
        scope[key.name] = stored
        if self._listeners:
            self._notify(key.kind, event, stored)
        return stored


class _Uids:
    """Object uids as the API server makes them (random RFC 4122 version-4 UUIDs), cheaper than
    str(uuid.uuid4()) on every admitted /validate: the first 74 random bits are drawn once per process,
    the last 48 count on from a random start. Unique within a process for 2**48 objects, across processes
    (replicas, restarts) as random as the draw; a forked child draws its own (os.register_at_fork)."""

    def __init__(self) -> None:
        self.draw()

    def draw(self) -> None:
        first = str(uuid.uuid4())  # xxxxxxxx-xxxx-4xxx-Vxxx-nnnnnnnnnnnn: version and variant stay as drawn
        self.prefix, self.counter = first[:24], itertools.count(int(first[24:], 16))

    def __call__(self) -> str:
        return f"{self.prefix}{next(self.counter) & 0xFFFF_FFFF_FFFF:012x}"


new_uid = _Uids()
os.register_at_fork(after_in_child=new_uid.draw)


_STAMP: tuple[int, str] = (-1, "")  # (second, its text): most writes fall in the second of the one before


def _now_text() -> str:
    """The current UTC time to the second, as the API server writes creationTimestamp (the text is
    built once a second, not per write: the same as formatting datetime.now(timezone.utc))."""
    global _STAMP
    second, stamp = int(time.time()), _STAMP
    if stamp[0] != second:
        stamp = _STAMP = (second, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(second)))
    return stamp[1]


def _items(doc: Any) -> list[Any]:
    if isinstance(doc, dict) and str(doc.get("kind", "")).endswith("List") and isinstance(doc.get("items"), list):
        return doc["items"]
    return [doc]
