"""A policy directory (plain, git checkout or ConfigMap mount) watched for changes, and optionally the
policy objects of the cluster (live mode: webhook/kube/policy_objects.py) beside it.

Polling a content hash, not inotify: a ConfigMap update swaps the `..data` symlink atomically,
which inotify reports as events on paths we never read; the hash sees the new content either way.

A file that served policies and now holds none is refused, not read as "no policies": an editor that
truncates before writing, or an emptied ConfigMap key, would otherwise switch enforcement off without
a word. Removing policies means deleting the file (or its ConfigMap key).

Precedence and conflicts: the files are loaded first, the objects after them. An error in a file
refuses the whole set, as always; an object with an error (or with the identity of a policy already
defined in a file: the files win) is left out alone, and the feed is told why, so that it can say so
on the object (a status condition and an Event), as Kyverno marks its policies not Ready.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Protocol, Sequence

from webhook.model.errors import PolicyLoadError
from webhook.model.policy import NOTHING_SHOWN, CompiledPolicy
from webhook.policy.broken import broken_policies
from webhook.policy.documents import Document, DocumentError, policy_files, read_documents
from webhook.policy.loader import LoadResult, PolicyLoader
from webhook.policy.snapshot import PolicySnapshot, PolicyStore
from webhook.policy.testfiles import skipped_notice
from webhook.model.wording import counted

if TYPE_CHECKING:  # prometheus_client is imported by those who serve metrics only
    from webhook.observability.metrics import Metrics

log = logging.getLogger(__name__)


class ObjectFeed(Protocol):
    """Policy documents that are not files (cluster objects): what they are, and word of refusals."""

    def documents(self) -> Sequence[Document]: ...  # each with a `file` naming the object, unique per object

    def fingerprint(self) -> str: ...  # changes whenever documents() would

    # word on the documents a load judged, refused (by document file) or loaded; {} = none refused. Only those: an
    # object that arrived or changed during the load is judged by the next one, never told it loaded unseen.
    # `shown`: by document file, what a loaded policy's status shows beside its Ready condition (PolicyTraits.shown)
    def refused(self, considered: Sequence[Document], refusals: Mapping[str, Sequence[PolicyLoadError]],
                shown: Mapping[str, Mapping[str, Any]] = NOTHING_SHOWN) -> None: ...


class DirectoryPolicySource:
    def __init__(self, root: Path, loader: PolicyLoader, store: PolicyStore, metrics: Metrics | None = None,
                 objects: ObjectFeed | None = None, exception_files: Sequence[Path] = ()) -> None:
        """`exception_files`: files of PolicyExceptions loaded with the policies (`apply --exception`)."""
        self.root = root
        self.exception_files = tuple(exception_files)
        self.loader = loader
        self.store = store
        self.metrics = metrics
        self.objects = objects
        self._fingerprint: str | None = None
        self._generation = 0
        self._serving_files: frozenset[str] = frozenset()  # files the snapshot in service has policies from

    def fingerprint(self) -> str:
        digest = hashlib.sha256()
        for path in [*(policy_files(self.root) if self.root.exists() else []), *self.exception_files]:
            try:
                digest.update(str(path).encode() + b"\0" + path.read_bytes() + b"\0")
            except OSError:
                digest.update(str(path).encode() + b"\0unreadable\0")
        if self.objects is not None:
            digest.update(self.objects.fingerprint().encode())
        return digest.hexdigest()

    def _load(self) -> tuple[LoadResult, tuple[Document, ...], dict[str, list[PolicyLoadError]]]:
        """Files and objects; objects with errors are left out one by one (never a file). Also the objects
        considered, and the refusals of those left out."""
        extra = list(self.objects.documents()) if self.objects is not None else []
        considered = tuple(extra)
        exceptions, exception_errors = given_exceptions(self.exception_files)
        refusals: dict[str, list[PolicyLoadError]] = {}
        while True:  # an error of a file (exception files included) stays, and refuses the set
            result = self.loader.load(self.root, exceptions + extra)
            names = {doc.file for doc in extra}
            bad = [error for error in result.errors if error.file in names]
            if not bad:  # terminates: each round leaves out at least one object
                break
            for error in bad:
                refusals.setdefault(error.file, []).append(error)
            extra = [doc for doc in extra if doc.file not in refusals]
        if exception_errors:
            result = replace(result, errors=tuple(exception_errors) + result.errors)
        return result, considered, refusals

    def _tell_objects(self, published: bool, considered: tuple[Document, ...],
                      refusals: Mapping[str, Sequence[PolicyLoadError]], policies: Sequence[CompiledPolicy]) -> None:
        """Word on the objects, once the set is served: an object marked loaded is in what answers. A set refused
        for a file's error serves none of them, so only the objects refused for their own errors are told."""
        if self.objects is None:
            return
        judged = considered if published else tuple(doc for doc in considered if doc.file in refusals)
        shown = {policy.source.file: policy.traits.shown for policy in policies if policy.traits.shown} \
            if published else {}
        self.objects.refused(judged, refusals, shown)
        for name, errors in refusals.items():
            log.warning("policy object refused: %s", "; ".join(str(e) for e in errors), extra={"file": name})

    def reload(self) -> LoadResult:
        """Load everything; publish only a fully valid set, else keep serving the previous snapshot."""
        fingerprint = self.fingerprint()
        considered: tuple[Document, ...] = ()
        refusals: dict[str, list[PolicyLoadError]] = {}
        try:
            result, considered, refusals = self._load()
        except Exception as exc:  # a loader bug must show as a refused load (degraded, listed), not a crash loop
            log.exception("policy load failed")
            failure = PolicyLoadError(str(self.root), 0, None, "", f"policy load failed: {type(exc).__name__}: {exc}")
            result = LoadResult((), (failure,), ())
        if result.skipped:
            log.info("%s", skipped_notice(result.skipped))
        emptied = self._emptied(result)
        if emptied:
            result = replace(result, errors=result.errors + emptied)
        self._fingerprint = fingerprint
        if result.ok:
            self._serving_files = frozenset(p.source.file for p in result.policies)
            self._generation += 1
        before = self.store.status.broken
        broken = broken_policies(result.policies) if result.ok else before
        if self.metrics:  # before the store: whoever sees the new status must find the metrics agreeing
            self.metrics.policy_load(len(result.errors), self._generation, len(broken))
        if result.ok:
            self.store.publish(PolicySnapshot.of(result.policies, self._generation, fingerprint), broken)
            # served as they are (each answers with its failure policy); said once, not again on every reload of
            # a set that still holds it (policy objects a tenant may write reload whenever any object changes)
            for policy in sorted(set(broken) - set(before), key=broken.index):
                log.warning("policy does not compile: %s", policy.describe(), extra={"file": policy.source.file})
            log.info("policies loaded: %d from %s (generation %d)", len(result.policies),
                     counted(len(result.files), "file"), self._generation)
        else:
            self.store.refuse(result.errors)
            for error in result.errors:
                log.error("policy refused: %s", error, extra={"file": error.file})
        self._tell_objects(result.ok, considered, refusals, result.policies)
        return result

    def _display(self, path: str) -> str:
        """The loader's name for a file: relative to the policy directory."""
        base = self.root if self.root.is_dir() else self.root.parent
        return str(Path(path).relative_to(base)) if Path(path) != self.root else self.root.name

    def _emptied(self, result: LoadResult) -> tuple[PolicyLoadError, ...]:
        present = {self._display(f) for f in result.files}
        contributing = {p.source.file for p in result.policies} | {e.file for e in result.errors}
        return tuple(
            PolicyLoadError(name, 0, None, "", "the file served policies and now holds no documents (a truncated write "
                            "or an emptied ConfigMap key?); the previous policies stay in force: restore the file, "
                            "or delete it to remove its policies")
            for name in sorted(self._serving_files & present - contributing))

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


def given_exceptions(paths: Sequence[Path]) -> tuple[list[Document], list[PolicyLoadError]]:
    """The documents of `apply --exception FILE`: PolicyExceptions only, loaded with the policies under the same
    trust rules (webhook/model/exception_trust.py); any other kind there is an error, never a policy let in."""
    documents: list[Document] = []
    errors: list[PolicyLoadError] = []
    for path in paths:
        try:
            read = list(read_documents(path, str(path)))
        except DocumentError as exc:
            errors.append(PolicyLoadError(exc.file, exc.index, exc.line, "", exc.message))
            continue
        except OSError as exc:
            errors.append(PolicyLoadError(str(path), 0, None, "", f"cannot read: {exc.strerror or exc}"))
            continue
        except UnicodeDecodeError as exc:
            errors.append(PolicyLoadError(str(path), 0, None, "", f"cannot read: {exc}"))
            continue
        for doc in read:
            kind = doc.data.get("kind") if isinstance(doc.data, dict) else None
            if kind == "PolicyException":
                documents.append(doc)
            else:
                errors.append(PolicyLoadError(doc.file, doc.index, doc.line_of(["kind"]), "kind",
                                              f"an --exception file holds PolicyExceptions only, not {kind!r} "
                                              "(policies go in --policies)"))
    return documents, errors
