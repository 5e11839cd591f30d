"""Fencing: a replica that is not sure it still leads writes nothing.

Leadership is checked before a controller takes a key, but work outlives that check: a
disruption command computed before the Lease was lost, an SQS message a long poll returns
after it, Events queued for the writer thread, a request sleeping out a Retry-After. So
the check is made again at the last moment, on every write: `FencedCluster` asks the
`Fence` before each create, update, patch, delete and eviction, and `KubeCluster`'s
transport asks it before each write request it sends (retries included). A refused write
raises `FencedError`, an `ApiError` (the write did not happen, as when the server is
away), logged once per loss of certainty, not once per write, and counted in
`nodewright_writes_fenced_total`.

The Lease itself is never fenced: leader election must renew it to become sure again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from nodewright import metrics
from nodewright.cluster.api import ApiError, ClusterAPI, Object, WatchStream

log = logging.getLogger(__name__)

# The kind leader election writes: never fenced.
UNFENCED_KINDS = frozenset({"Lease"})


class FencedError(ApiError):
    """A write refused because this replica is not sure it still leads."""

    status = 503
    reason = "NotLeader"


class Fence:
    """Refuses writes while `unsure()` gives a reason (None: this replica is sure it
    leads). Thread-safe; the first refusal after a time of certainty is logged."""

    def __init__(self, unsure: Callable[[], str | None]) -> None:
        self._unsure = unsure
        self._lock = threading.Lock()
        self._refusing = False
        self.refused = 0

    def check(self, verb: str, kind: str, name: str = "") -> None:
        """Raise FencedError unless writes are allowed now."""
        if kind in UNFENCED_KINDS:
            return
        why = self._unsure()
        with self._lock:
            if why is None:
                self._refusing = False
                return
            self.refused += 1
            metrics.WRITES_FENCED.inc()
            first = not self._refusing
            self._refusing = True
        what = f"{verb} {kind}{' ' + name if name else ''}"
        if first:
            log.error("not sure this replica still leads (%s): refusing every write "
                      "until it is, starting with %s", why, what)
        raise FencedError(f"refused to {what}: not sure this replica still leads ({why})")


class FencedCluster:
    """ClusterAPI whose writes pass `fence` first; reads and watches go straight through."""

    def __init__(self, inner: ClusterAPI, fence: Fence) -> None:
        self.inner = inner
        self.fence = fence

    def __getattr__(self, name: str) -> Any:
        # What the wrapped client offers beyond ClusterAPI (synced, problems, ...).
        return getattr(self.inner, name)

    def get(self, kind: str, name: str, namespace: str | None = None) -> Object:
        return self.inner.get(kind, name, namespace)

    def list(self, kind: str, namespace: str | None = None, *,
             labels: Mapping[str, str] | None = None) -> list[Object]:
        return self.inner.list(kind, namespace, labels=labels)

    def watch(self, kinds: Iterable[str]) -> WatchStream:
        return self.inner.watch(kinds)

    def create(self, obj: Object) -> Object:
        metadata = obj.get("metadata") or {}
        self.fence.check("create", str(obj.get("kind") or ""),
                         str(metadata.get("name") or metadata.get("generateName") or ""))
        return self.inner.create(obj)

    def update(self, obj: Object, *, subresource: str | None = None) -> Object:
        self.fence.check("update", str(obj.get("kind") or ""),
                         str((obj.get("metadata") or {}).get("name") or ""))
        return self.inner.update(obj, subresource=subresource)

    def patch(self, kind: str, name: str, patch: Mapping[str, Any],
              namespace: str | None = None, *, subresource: str | None = None) -> Object:
        self.fence.check("patch", kind, name)
        return self.inner.patch(kind, name, patch, namespace, subresource=subresource)

    def delete(self, kind: str, name: str, namespace: str | None = None, *,
               grace_period_seconds: int | None = None, uid: str | None = None) -> None:
        self.fence.check("delete", kind, name)
        self.inner.delete(kind, name, namespace, grace_period_seconds=grace_period_seconds,
                          uid=uid)

    def evict(self, name: str, namespace: str, *,
              grace_period_seconds: int | None = None, uid: str | None = None) -> None:
        self.fence.check("evict", "Pod", name)
        self.inner.evict(name, namespace, grace_period_seconds=grace_period_seconds, uid=uid)
