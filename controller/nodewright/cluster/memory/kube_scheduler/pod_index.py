"""The pods kube-scheduler reads on every reconcile, kept from the store's writes.

Each reconcile needs the pending pods that wait for it, the unfinished pods bound to each
node and whether the set of those bound pods changed. Sorting every stored pod into these
each time cost a reconcile the whole cluster (30,000 pods, hundreds of reconciles in a
large simulation); the index sorts them once and then only the pods written or removed
since (the store's `WriteJournal`). Where a pod goes depends on its stored object alone,
and the store replaces an object on every write, never changing one in place, so the
pods not written since are where they were.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nodewright.cluster.memory.pod_status import TERMINAL_PHASES
from nodewright.cluster.memory.store import DEFAULT_SCHEDULER, InMemoryCluster, WriteJournal

Key = tuple[str, str]  # namespace, name


@dataclass(frozen=True, slots=True)
class _Filed:
    """Where one stored pod object is filed: `node` when it is bound and unfinished,
    `pending` when it waits for this scheduler (unbound, unfinished, not deleting, not
    gated)."""

    obj: Mapping[str, Any]
    uid: str
    node: str | None
    pending: bool


@dataclass(frozen=True, slots=True)
class PodChanges:
    """What the pods written since the last refresh changed."""

    bound_added: bool  # an unfinished bound pod appeared
    bound_gone: bool  # one finished, was unbound or is gone
    gone_uids: tuple[str, ...]  # pods no longer stored (their uids)


class PodIndex:
    def __init__(self, cluster: InMemoryCluster) -> None:
        self._cluster = cluster
        self._journal: WriteJournal | None = None
        self._filed: dict[Key, _Filed] = {}
        self._pending: dict[Key, Mapping[str, Any]] = {}
        self._bound: dict[str, dict[Key, Mapping[str, Any]]] = {}
        # Each node's bound pods as a list, made again only when they change (a pass's
        # snapshot knows an unchanged node by the very same list).
        self._bound_lists: dict[str, list[Mapping[str, Any]]] = {}

    def refresh(self) -> PodChanges:
        """Take in the pods written since the last refresh (all of them at the first)."""
        if self._journal is None:
            # Journal first: nothing written from here on is missed.
            self._journal = self._cluster.journal("Pod")
            written: Mapping[Key, Mapping[str, Any] | None] = {
                (obj["metadata"].get("namespace") or "", obj["metadata"]["name"]): obj
                for obj in self._cluster.peek_all("Pod")
            }
        else:
            written = self._journal.take()
        added = gone = False
        gone_uids: list[str] = []
        for key, obj in written.items():
            before = self._filed.get(key)
            if before is not None:
                if before.obj is obj:
                    continue
                self._unfile(key, before)
            filed = _filed(obj) if obj is not None else None
            if before is not None and (filed is None or filed.uid != before.uid):
                gone_uids.append(before.uid)
            if filed is not None:
                self._file(key, filed)
            # A uid names one pod: it is bound now and was not, or the other way round.
            was_bound = before is not None and before.node is not None
            is_bound = filed is not None and filed.node is not None
            same_pod = before is not None and filed is not None and before.uid == filed.uid
            if is_bound and not (was_bound and same_pod):
                added = True
            if was_bound and not (is_bound and same_pod):
                gone = True
        return PodChanges(added, gone, tuple(gone_uids))

    def pending(self) -> list[Mapping[str, Any]]:
        """The pods waiting for this scheduler (in no particular order)."""
        return list(self._pending.values())

    def bound(self) -> Mapping[str, Sequence[Mapping[str, Any]]]:
        """The unfinished pod objects bound to each node name. Read-only."""
        lists = self._bound_lists
        for node, pods in self._bound.items():
            if node not in lists:
                lists[node] = list(pods.values())
        return lists

    def _file(self, key: Key, filed: _Filed) -> None:
        self._filed[key] = filed
        if filed.pending:
            self._pending[key] = filed.obj
        elif filed.node is not None:
            self._bound.setdefault(filed.node, {})[key] = filed.obj
            self._bound_lists.pop(filed.node, None)

    def _unfile(self, key: Key, filed: _Filed) -> None:
        del self._filed[key]
        if filed.pending:
            del self._pending[key]
        elif filed.node is not None:
            on_node = self._bound[filed.node]
            del on_node[key]
            if not on_node:
                del self._bound[filed.node]
            self._bound_lists.pop(filed.node, None)


def _filed(obj: Mapping[str, Any]) -> _Filed:
    meta, spec = obj["metadata"], obj.get("spec") or {}
    finished = (obj.get("status") or {}).get("phase") in TERMINAL_PHASES
    node = spec.get("nodeName") or None
    return _Filed(
        obj, str(meta["uid"]),
        node if node and not finished else None,
        not node and not finished and _waits_for_us(meta, spec),
    )


def _waits_for_us(meta: Mapping[str, Any], spec: Mapping[str, Any]) -> bool:
    return (
        spec.get("schedulerName", DEFAULT_SCHEDULER) == DEFAULT_SCHEDULER
        and not meta.get("deletionTimestamp")
        and not spec.get("schedulingGates")
    )
