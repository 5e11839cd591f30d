"""The ClusterAPI the simulated controllers are given: the in-memory cluster, with the
simulator looking over its shoulder at evictions and NodeClaim deletions.

The controllers cannot tell the difference; the simulator learns of every eviction
before and after it happens (to count them and to check PodDisruptionBudgets itself)
and of every NodeClaim the controllers delete (to check that a consolidation or drift
replacement was ready first).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from nodewright.cluster.api import ApiError, ClusterAPI, Object, StoredObjects, WatchStream

Objects = list[Object]

EvictionHook = Callable[[str, str], None]
DeletionHook = Callable[[str, str, str], None]


class ObservedCluster:
    def __init__(self, inner: ClusterAPI) -> None:
        self.inner = inner
        self.before_evict: list[EvictionHook] = []
        self.after_evict: list[EvictionHook] = []
        self.before_delete: list[DeletionHook] = []
        self.evictions = 0
        self.refused_evictions = 0

    def get(self, kind: str, name: str, namespace: str | None = None) -> Object:
        return self.inner.get(kind, name, namespace)

    def list(
        self, kind: str, namespace: str | None = None, *, labels: Mapping[str, str] | None = None
    ) -> list[Object]:
        return self.inner.list(kind, namespace, labels=labels)

    def peek_all(
        self, kind: str, namespace: str | None = None, *, sort: bool = False
    ) -> Objects:
        """The inner cluster's stored objects (read-only), or copies when it lends none."""
        if isinstance(self.inner, StoredObjects):
            return self.inner.peek_all(kind, namespace, sort=sort)
        return self.inner.list(kind, namespace)

    def create(self, obj: Object) -> Object:
        return self.inner.create(obj)

    def update(self, obj: Object, *, subresource: str | None = None) -> Object:
        return self.inner.update(obj, subresource=subresource)

    def patch(
        self,
        kind: str,
        name: str,
        patch: Mapping[str, Any],
        namespace: str | None = None,
        *,
        subresource: str | None = None,
    ) -> Object:
        return self.inner.patch(kind, name, patch, namespace, subresource=subresource)

    def delete(
        self,
        kind: str,
        name: str,
        namespace: str | None = None,
        *,
        grace_period_seconds: int | None = None,
        uid: str | None = None,
    ) -> None:
        for hook in self.before_delete:
            hook(kind, name, namespace or "")
        self.inner.delete(kind, name, namespace, grace_period_seconds=grace_period_seconds,
                          uid=uid)

    def evict(self, name: str, namespace: str, *, grace_period_seconds: int | None = None,
              uid: str | None = None) -> None:
        for hook in self.before_evict:
            hook(name, namespace)
        try:
            self.inner.evict(name, namespace, grace_period_seconds=grace_period_seconds, uid=uid)
        except ApiError:
            self.refused_evictions += 1
            raise
        self.evictions += 1
        for hook in self.after_evict:
            hook(name, namespace)

    def watch(self, kinds: Iterable[str]) -> WatchStream:
        return self.inner.watch(kinds)
