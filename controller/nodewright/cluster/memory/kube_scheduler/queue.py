"""kube-scheduler's scheduling queue with queueing hints (SchedulerQueueingHints, on by
default since Kubernetes 1.32).

A pod that fits nowhere remembers the plugins that rejected it on some node. It waits
in the unschedulable pool until an event that one of those plugins' hints says may
make it schedulable (a Node it tolerates appears, its taint goes, an assigned pod is
gone, ...), or until it has waited five minutes (podMaxInUnschedulablePodsDuration), and
is then tried again. A pod rejected without a plugin (no nodes at all, a spec the
scheduler cannot read) is tried again on any change.

Not modelled yet: the real queue's per-pod backoff (1 s doubling per attempt, at most
10 s; a plugin-less rejection waits on its backoff alone). The operator's real-time
stories run the cluster faster than that, so `BACKOFF` is off until their harness can
scale it; `QueuedPod.backoff_end` applies it when set.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from nodewright.cluster.memory.kube_scheduler import filters, topology
from nodewright.cluster.memory.kube_scheduler.parsing import ParsedPod
from nodewright.cluster.memory.kube_scheduler.snapshot import NodeInfo
from nodewright.scheduling.pods import UNSCHEDULABLE_TAINT, Pod, untolerated
from nodewright.scheduling.requirements import Requirements

BACKOFF = False
INITIAL_BACKOFF = timedelta(seconds=1)
MAX_BACKOFF = timedelta(seconds=10)
MAX_IN_UNSCHEDULABLE = timedelta(minutes=5)

NODE_UNSCHEDULABLE = "NodeUnschedulable"
TAINT_TOLERATION = "TaintToleration"
NODE_AFFINITY = "NodeAffinity"
NODE_PORTS = "NodePorts"
NODE_RESOURCES_FIT = "NodeResourcesFit"
POD_TOPOLOGY_SPREAD = "PodTopologySpread"
INTER_POD_AFFINITY = "InterPodAffinity"
VOLUME_BINDING = "VolumeBinding"

# Plugins whose hints queue a pod when an assigned pod appears or goes away.
ON_ASSIGNED_POD_ADDED = frozenset({POD_TOPOLOGY_SPREAD, INTER_POD_AFFINITY})
ON_ASSIGNED_POD_GONE = frozenset(
    {NODE_RESOURCES_FIT, NODE_PORTS, POD_TOPOLOGY_SPREAD, INTER_POD_AFFINITY})
ON_NAMESPACE_CHANGE = frozenset({INTER_POD_AFFINITY})

_EXACT_REASONS = {
    filters.UNSCHEDULABLE: NODE_UNSCHEDULABLE,
    filters.NODE_AFFINITY: NODE_AFFINITY,
    filters.HOST_PORTS: NODE_PORTS,
    filters.VOLUME_NODE_AFFINITY: VOLUME_BINDING,
    filters.TOO_MANY_PODS: NODE_RESOURCES_FIT,
    topology.SPREAD_MISMATCH: POD_TOPOLOGY_SPREAD,
    topology.AFFINITY_MISMATCH: INTER_POD_AFFINITY,
    topology.ANTI_AFFINITY_MISMATCH: INTER_POD_AFFINITY,
    topology.EXISTING_ANTI_AFFINITY: INTER_POD_AFFINITY,
}


def rejectors(reasons: Counter[str]) -> frozenset[str]:
    """The plugins behind a FitError's reasons."""
    plugins = set()
    for reason in reasons:
        plugin = _EXACT_REASONS.get(reason)
        if plugin is None and reason.startswith("Insufficient "):
            plugin = NODE_RESOURCES_FIT
        elif plugin is None and reason.startswith("node(s) had untolerated taint"):
            plugin = TAINT_TOLERATION
        if plugin is not None:
            plugins.add(plugin)
    return frozenset(plugins)


NodeChange = tuple[NodeInfo | None, NodeInfo]


def node_change_may_help(pod: Pod, plugin: str, old: NodeInfo | None, new: NodeInfo) -> bool:
    """The plugin's queueing hint for a Node added (`old` None) or updated."""
    if plugin == NODE_UNSCHEDULABLE:
        return _schedulable_for(pod, new) and (old is None or not _schedulable_for(pod, old))
    if plugin == TAINT_TOLERATION:
        return not _untolerated(pod, new) and (old is None or _untolerated(pod, old))
    if plugin == NODE_AFFINITY:
        return _matches_affinity(pod, new) and (old is None or not _matches_affinity(pod, old))
    if plugin == NODE_RESOURCES_FIT:
        if not _allocatable_fits(pod, new):
            return False
        return old is None or any(
            new.allocatable.get(resource, 0) > old.allocatable.get(resource, 0)
            for resource, amount in pod.requests.items() if amount > 0)
    if plugin == NODE_PORTS:
        return old is None
    # Spread and inter-pod affinity count nodes by their labels.
    return old is None or old.labels != new.labels


def _schedulable_for(pod: Pod, node: NodeInfo) -> bool:
    return not node.unschedulable or untolerated((UNSCHEDULABLE_TAINT,), pod.tolerations) is None


def _untolerated(pod: Pod, node: NodeInfo) -> bool:
    hard = [taint for taint in node.taints if taint.effect in filters.HARD_EFFECTS]
    return bool(hard) and untolerated(hard, pod.tolerations) is not None


def _matches_affinity(pod: Pod, node: NodeInfo) -> bool:
    if not Requirements.from_labels(pod.node_selector).satisfied_by_labels(node.labels):
        return False
    terms = pod.required_terms
    return not terms or any(term.satisfied_by_labels(node.labels) for term in terms)


def _allocatable_fits(pod: Pod, node: NodeInfo) -> bool:
    return all(node.allocatable.get(resource, 0) >= amount
               for resource, amount in pod.requests.items() if amount > 0)


@dataclass(slots=True)
class QueuedPod:
    """One pending pod in the queue. `due` is when it may be tried (None: it waits in the
    unschedulable pool since `since` for a hint or the flush)."""

    spec: Any
    labels: Any
    parsed: ParsedPod | None = None
    attempts: int = 0
    last_attempt: datetime | None = None
    rejected_by: frozenset[str] = frozenset()
    due: datetime | None = None
    since: datetime | None = None

    def backoff_end(self) -> datetime | None:
        if not BACKOFF or self.last_attempt is None or self.attempts == 0:
            return None
        backoff = INITIAL_BACKOFF * (1 << min(self.attempts - 1, 8))
        return self.last_attempt + min(backoff, MAX_BACKOFF)

    def activate(self, now: datetime) -> None:
        """Back to the active queue, through backoff if it has not run out."""
        end = self.backoff_end()
        self.due = end if end is not None and end > now else now
        self.since = None


class SchedulingQueue:
    """Pending pods by uid, with their attempts and what rejected them."""

    def __init__(self) -> None:
        self._pods: dict[str, QueuedPod] = {}

    def __len__(self) -> int:
        return len(self._pods)

    def get(self, uid: str) -> QueuedPod | None:
        return self._pods.get(uid)

    def track(self, uid: str, spec: Any, labels: Any, now: datetime) -> QueuedPod:
        """The pod's entry; a new pod, or one whose spec or labels changed, is activated."""
        entry = self._pods.get(uid)
        if entry is None:
            entry = self._pods[uid] = QueuedPod(spec, labels, due=now)
        elif entry.spec is not spec or entry.labels is not labels:
            changed = entry.spec != spec or entry.labels != labels
            entry.spec, entry.labels = spec, labels
            if changed:
                entry.activate(now)
        return entry

    def keep_only(self, uids: set[str]) -> None:
        for uid in [uid for uid in self._pods if uid not in uids]:
            del self._pods[uid]

    def attempted(self, entry: QueuedPod, now: datetime, rejected_by: frozenset[str]) -> None:
        entry.attempts += 1
        entry.last_attempt = now
        entry.rejected_by = rejected_by
        if rejected_by or not BACKOFF:
            entry.due, entry.since = None, now
        else:
            entry.activate(now)

    def unschedulable(self) -> Iterator[QueuedPod]:
        return (entry for entry in self._pods.values() if entry.due is None)

    def move_on_node_changes(self, changes: list[NodeChange], now: datetime) -> None:
        """Activate the unschedulable pods that one of the changes may help. Pods with the
        same shape and rejectors share one verdict."""
        if not changes:
            return
        verdicts: dict[tuple[str, frozenset[str]], bool] = {}
        for entry in self.unschedulable():
            if not entry.rejected_by or entry.parsed is None or entry.parsed.pod is None:
                entry.activate(now)
                continue
            group = (entry.parsed.signature, entry.rejected_by)
            helps = verdicts.get(group)
            if helps is None:
                pod = entry.parsed.pod
                helps = verdicts[group] = any(
                    node_change_may_help(pod, plugin, old, new)
                    for old, new in changes for plugin in entry.rejected_by)
            if helps:
                entry.activate(now)

    def move_rejected_by(self, plugins: Iterable[str], now: datetime) -> None:
        wanted = frozenset(plugins)
        for entry in self.unschedulable():
            if entry.rejected_by & wanted or not entry.rejected_by:
                entry.activate(now)

    def flush_leftovers(self, now: datetime) -> None:
        """Pods unschedulable for longer than five minutes are tried again."""
        for entry in self.unschedulable():
            if entry.since is not None and now - entry.since >= MAX_IN_UNSCHEDULABLE:
                entry.activate(now)

    def next_wakeup(self, now: datetime) -> datetime | None:
        """The earliest future time a pod becomes due or is flushed."""
        soonest: datetime | None = None
        for entry in self._pods.values():
            when = entry.due if entry.due is not None else (
                entry.since + MAX_IN_UNSCHEDULABLE if entry.since is not None else None)
            if when is not None and when > now and (soonest is None or when < soonest):
                soonest = when
        return soonest
