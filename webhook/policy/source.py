"""A policy directory (plain, git checkout or ConfigMap mount) watched for changes.

Polling a content hash, not inotify: a ConfigMap update swaps the `..data` symlink atomically,
which inotify reports as events on paths we never read; the hash sees the new content either way.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from pathlib import Path

from webhook.observability.metrics import Metrics
from webhook.policy.documents import policy_files
from webhook.policy.loader import LoadResult, PolicyLoader
from webhook.policy.snapshot import PolicySnapshot, PolicyStore

log = logging.getLogger(__name__)


class DirectoryPolicySource:
    def __init__(self, root: Path, loader: PolicyLoader, store: PolicyStore, metrics: Metrics | None = None) -> None:
        self.root = root
        self.loader = loader
        self.store = store
        self.metrics = metrics
        self._fingerprint: str | None = None
        self._generation = 0

    def fingerprint(self) -> str:
        digest = hashlib.sha256()
        if self.root.exists():
            for path in policy_files(self.root):
                try:
                    digest.update(str(path).encode() + b"\0" + path.read_bytes() + b"\0")
                except OSError:
                    digest.update(str(path).encode() + b"\0unreadable\0")
        return digest.hexdigest()

    def reload(self) -> LoadResult:
        """Load everything; publish only a fully valid set, else keep serving the previous snapshot."""
        fingerprint = self.fingerprint()
        result = self.loader.load(self.root)
        self._fingerprint = fingerprint
        if result.ok:
            self._generation += 1
        if self.metrics:  # before the store: whoever sees the new status must find the metrics agreeing
            self.metrics.policy_load(len(result.errors), self._generation)
        if result.ok:
            self.store.publish(PolicySnapshot.of(result.policies, self._generation, fingerprint))
            log.info("policies loaded: %d from %d files (generation %d)", len(result.policies), len(result.files), self._generation)
        else:
            self.store.refuse(result.errors)
            for error in result.errors:
                log.error("policy refused: %s", error, extra={"file": error.file})
        return result

    async def watch(self, interval: float = 2.0) -> None:
        """Reload whenever the content changes; runs until cancelled."""
        while True:
            await asyncio.sleep(interval)
            try:
                changed = await asyncio.to_thread(self.fingerprint) != self._fingerprint
                if changed:
                    await asyncio.to_thread(self.reload)
            except Exception:  # a watcher that dies silently would freeze policies forever
                log.exception("policy watch iteration failed; retrying")
