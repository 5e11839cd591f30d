"""A check, for tests, that nobody modifies the API server's stored objects in place.

The in-memory API server hands its stored versions to the in-process actors (`peek`) and
to every watcher (watch events carry them), instead of a copy per reader. That is only
sound while everyone treats them as read-only. With a `ReadOnlyGuard` installed
(`guard = ReadOnlyGuard.install(cluster)`), the guard fingerprints each version the server
stores and, when the version is replaced or deleted, checks that it still has that
fingerprint: a reader that wrote into it fails the write that follows, naming the object.
`guard.verify_all()` checks every version still stored.
"""

from __future__ import annotations

import json
from typing import Any

from nodewright.cluster.api import Object
from nodewright.cluster.memory import InMemoryCluster
from nodewright.runtime.clock import VirtualClock

StoreKey = tuple[str, str, str]  # kind, namespace ("" when cluster-scoped), name


class SharedObjectModifiedError(AssertionError):
    """A stored object was changed in place by someone holding it."""


def fingerprint(obj: Object) -> str:
    return json.dumps(obj, sort_keys=True, default=str)


class ReadOnlyGuard:
    def __init__(self) -> None:
        self._stored: dict[StoreKey, tuple[Object, str]] = {}
        self.checked = 0

    @classmethod
    def install(cls, cluster: InMemoryCluster) -> ReadOnlyGuard:
        guard = cls()
        cluster.before_replace = guard.replace
        return guard

    def replace(self, kind: str, scope: str, current: Object | None, new: Object | None) -> None:
        """`current` (the stored version, if any) is about to give way to `new` (None when
        the object goes away)."""
        if current is not None:
            key = (kind, scope, str(current["metadata"]["name"]))
            self.verify(key, current)
        if new is not None:
            key = (kind, scope, str(new["metadata"]["name"]))
            self._stored[key] = (new, fingerprint(new))
        elif current is not None:
            self._stored.pop((kind, scope, str(current["metadata"]["name"])), None)

    def verify(self, key: StoreKey, current: Any) -> None:
        entry = self._stored.get(key)
        if entry is None or entry[0] is not current:
            return
        self.checked += 1
        now = fingerprint(current)
        if now != entry[1]:
            kind, scope, name = key
            where = f"{scope}/{name}" if scope else name
            raise SharedObjectModifiedError(
                f"{kind} {where} (resourceVersion "
                f"{current['metadata'].get('resourceVersion')}) was modified in place by a "
                f"reader: stored objects and watch event objects are read-only\n"
                f"stored: {entry[1]}\nnow:    {now}"
            )

    def verify_all(self) -> None:
        """Check every version still stored (that the guard saw stored)."""
        for key, (obj, _) in list(self._stored.items()):
            self.verify(key, obj)


def guarded_cluster() -> InMemoryCluster:
    """An in-memory API server with a guard installed."""
    cluster = InMemoryCluster(VirtualClock())
    ReadOnlyGuard.install(cluster)
    return cluster


def verify_read_only(cluster: InMemoryCluster) -> None:
    """Check that no object stored in `cluster` was modified in place (its guard's
    `verify_all`)."""
    guard = getattr(cluster.before_replace, "__self__", None)
    assert isinstance(guard, ReadOnlyGuard), "the cluster has no ReadOnlyGuard installed"
    guard.verify_all()
