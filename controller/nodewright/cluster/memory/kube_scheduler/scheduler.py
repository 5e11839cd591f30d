"""The kube-scheduler actor: binds pending pods, or says why they cannot be bound.

One reconcile is one pass over every pending pod (no node, not deleting, not gated,
`schedulerName` default-scheduler) in kube-scheduler's queue order (priority, then age).
Each pod is filtered against every node and bound to the best scoring one through the
binding subresource; a pod that fits nowhere gets PodScheduled=False, reason
Unschedulable, with kube-scheduler's message, and a FailedScheduling event (both only
when the message changes). Pods with identical specs share one verdict per pass, and a
verdict is remembered until nodes, namespaces or the set of bound pods change, so ten
thousand pending replicas cost a few evaluations, not ten thousand.

Passes run on any Node or Namespace change and on pod changes that matter: a pending
pod appears or changes, a bound pod appears, finishes or is gone. A pass tries only the
pods the scheduling queue (`queue`) says are due: new or changed pods, pods whose
rejecting plugins' queueing hints admit a change seen since their last attempt (diffed
against the nodes, bound pods and namespaces of the previous pass), pods whose backoff
ran out and pods flushed after five minutes in the unschedulable pool.
"""

from __future__ import annotations

import heapq
import logging
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from nodewright.cluster import objects
from nodewright.cluster.api import ApiError
from nodewright.cluster.memory.events import WARNING, EventRecorder
from nodewright.cluster.memory.kube_scheduler.filters import PodFilters, unschedulable_message
from nodewright.cluster.memory.kube_scheduler.parsing import PodParser
from nodewright.cluster.memory.kube_scheduler.pod_index import PodChanges, PodIndex
from nodewright.cluster.memory.kube_scheduler.queue import (
    ON_ASSIGNED_POD_ADDED,
    ON_ASSIGNED_POD_GONE,
    ON_NAMESPACE_CHANGE,
    POD_TOPOLOGY_SPREAD,
    VOLUME_BINDING,
    NodeChange,
    QueuedPod,
    SchedulingQueue,
    rejectors,
)
from nodewright.cluster.memory.kube_scheduler.scoring import (
    best_node,
    fit_score,
    intolerable_preferences,
    preferred_affinity,
)
from nodewright.cluster.memory.kube_scheduler.snapshot import (
    NodeInfo,
    NodeSnapshots,
    node_info,
    scored_requests,
)
from nodewright.cluster.memory.kube_scheduler.topology import PassTopology
from nodewright.cluster.memory.pod_status import is_terminal, set_pod_condition
from nodewright.cluster.memory.store import DEFAULT_SCHEDULER, InMemoryCluster
from nodewright.cluster.memory.volumes import StoreLookup, provision_for_node
from nodewright.runtime.reconciler import Result, Watch, WatchEvent, singleton_key
from nodewright.scheduling import volumes
from nodewright.scheduling.pods import Pod

log = logging.getLogger(__name__)

UNSCHEDULABLE = "Unschedulable"
SCHEDULER_ERROR = "SchedulerError"
NO_NODES = "no nodes available to schedule pods"

World = tuple[int, int, int, tuple[int, int, int]]
# kube-scheduler's message and the plugins that rejected the pod.
Verdict = tuple[str, frozenset[str]]
NO_PLUGINS: frozenset[str] = frozenset()


@dataclass(slots=True)
class _Candidates:
    """What the static filters and the scores that stay the same within a pass say about
    the nodes, for every pod shape with the same node selector, node affinity and
    tolerations (pods that differ only in requests share it: at 10,000 pods and 2,000
    nodes a copy per shape was most of a pass's memory). `affinity` and `intolerable`
    hold the non-zero raw scores only."""

    static_reasons: Counter[str]
    nodes: list[NodeInfo]
    names: frozenset[str]
    affinity: dict[str, int]
    intolerable: dict[str, int]
    # The nodes grouped by their values of some topology keys, per tuple of keys.
    domains: dict[tuple[str, ...], list[list[NodeInfo]]] = field(default_factory=dict)


# Pushes a score heap may hold beyond two per candidate before its stale entries go.
_HEAP_SLACK = 64

# nodeSelector, required node affinity and volume terms, preferred terms, tolerations.
_CandidatesKey = tuple[frozenset[tuple[str, str]], tuple[Any, ...], tuple[Any, ...],
                       tuple[Any, ...]]


# The candidates, the resource verdicts and the fit scores a shape reads.
_HeapKey = tuple[_CandidatesKey, tuple[object, ...], tuple[int, int]]


def _candidates_key(pod: Pod) -> _CandidatesKey:
    return (frozenset(pod.node_selector.items()), pod.required_terms + pod.volume_requirements,
            pod.preferred_terms, pod.tolerations)


@dataclass(slots=True)
class _Shape:
    """What a pass knows about one pod shape: the nodes its static filters admit, why
    the others were rejected, the scores that do not change within the pass (those three
    shared, see `_Candidates`), and what is cached per node (keyed by the node's version:
    it moves when the node gets a pod; shared by the shapes it does not depend on).
    """

    filters: PodFilters
    static: _Candidates
    # Per node: 2 x its version, plus 1 when its ports or resources refuse the pod
    # (shared by the shapes with the same requests and host ports).
    resources: dict[str, int]
    # Per node: its version and the fit score (shared by the shapes scored alike).
    fits: dict[str, tuple[int, int]]
    # Shapes with the same key and no topology verdicts have the same heap (`_first_heap`).
    heap_key: _HeapKey
    # For shapes judged by fit alone: (-fit, name, node version, blocking version).
    heap: list[tuple[int, str, int, int]] | None = None
    # How many of the pass's placements (`SchedulingPass._changed`) the heap has taken in.
    seen: int = 0

    @property
    def candidates(self) -> list[NodeInfo]:
        return self.static.nodes

    @property
    def by_fit_alone(self) -> bool:
        """No spread or affinity terms and no preferences: a node's score and verdict
        change only when it gets a pod (or a placed pod's anti-affinity turns up), so a
        heap of scores, refreshed for each node that changes, finds the best node."""
        return self.filters.node_local and not self.static.affinity and not (
            self.static.intolerable)


# Per resource key and host ports, per node: 2 x its version, plus 1 when its ports or
# resources refuse such a pod (see `_Shape.resources`).
ResourceVerdicts = dict[tuple[object, ...], dict[str, int]]
# Per scored requests, per node: its version and the fit score (see `_Shape.fits`).
FitScores = dict[tuple[int, int], dict[str, tuple[int, int]]]


class SchedulingPass:
    """The nodes and counts of one pass; binding a pod updates them.

    `resources` and `fits`: the per-node verdicts and scores of earlier passes, keyed by
    node version. A version names one node with one set of pods in the whole process
    (`snapshot._versions`), so they hold in this pass for every node at that version."""

    def __init__(self, nodes: Mapping[str, NodeInfo], namespace_labels: Mapping[str, Any],
                 resources: ResourceVerdicts | None = None,
                 fits: FitScores | None = None) -> None:
        self.nodes = nodes
        self.topology = PassTopology(nodes, namespace_labels)
        self._shapes: dict[str, _Shape] = {}
        self._candidates: dict[_CandidatesKey, _Candidates] = {}
        self._resources: ResourceVerdicts = resources if resources is not None else {}
        self._fits: FitScores = fits if fits is not None else {}
        # The node of each placement, in order: a heap takes in those after its `seen`
        # when its shape is next chosen, not at every placement.
        self._changed: list[NodeInfo] = []
        # Per heap key, the shape whose heap was read last with no topology verdict.
        self._heaps: dict[_HeapKey, _Shape] = {}

    def choose(self, pod: Pod, signature: str) -> tuple[NodeInfo | None, Verdict]:
        """The node for `pod`, or None and why not (kube-scheduler's message and the
        plugins that said no)."""
        if not self.nodes:
            return None, (NO_NODES, NO_PLUGINS)
        shape = self._shapes.get(signature)
        if shape is None:
            shape = self._shapes[signature] = self._shape(pod)
        best = self._from_heap(shape, pod) if shape.by_fit_alone else self._by_scan(shape, pod)
        if best is not None:
            return best, ("", NO_PLUGINS)
        reasons = Counter(shape.static.static_reasons)
        for node in shape.candidates:
            reasons.update(shape.filters.dynamic_reasons(node))
        return None, (unschedulable_message(len(self.nodes), reasons), rejectors(reasons))

    def _by_scan(self, shape: _Shape, pod: Pod) -> NodeInfo | None:
        feasible: list[tuple[NodeInfo, int]] = []
        for nodes in self._allowed_domains(shape):
            for node in nodes:
                if not self._refused(shape, node):
                    feasible.append((node, self._fit(shape, pod, node)))
        if not feasible:
            return None
        return best_node(feasible, shape.static.affinity, shape.static.intolerable)

    def _allowed_domains(self, shape: _Shape) -> list[list[NodeInfo]]:
        """The candidates grouped by their values of the shape's topology keys, keeping
        the groups whose spread and affinity verdict (one per group) admits them."""
        keys = shape.filters.topology_keys()
        domains = shape.static.domains.get(keys)
        if domains is None:
            groups: dict[tuple[str | None, ...], list[NodeInfo]] = {}
            for node in shape.candidates:
                groups.setdefault(tuple(node.labels.get(key) for key in keys), []).append(node)
            domains = shape.static.domains[keys] = list(groups.values())
        if not keys:
            return domains
        return [nodes for nodes in domains if not shape.filters.topology_reasons(nodes[0])]

    def _from_heap(self, shape: _Shape, pod: Pod) -> NodeInfo | None:
        blocking = self.topology.blocking_version
        changed = self._changed
        if self._heaps.get(shape.heap_key) is shape and not shape.filters.topology_free():
            # A placed pod's anti-affinity now selects this shape: its heap is about to
            # drop nodes for it alone, so it no longer serves the shapes alike.
            del self._heaps[shape.heap_key]
        if shape.heap is None:
            shape.heap, shape.seen = self._first_heap(shape, pod)
        if shape.seen < len(changed):
            # The node's score may rise as well as fall (balanced allocation): re-enter
            # each node that got a pod since (once, at its current version).
            names = shape.static.names
            for node in {node.name: node for node in changed[shape.seen:]}.values():
                if node.name in names:
                    self._push(shape, pod, node)
        shape.seen = len(changed)
        heap = shape.heap
        while heap:
            _, name, version, blocked_at = heap[0]
            node = self.nodes[name]
            if version == node.version and blocked_at == blocking:
                self._offer_heap(shape)
                return node
            heapq.heappop(heap)
            if version == node.version:
                # Only a placed pod's anti-affinity turned up: judge the node again.
                self._push(shape, pod, node)
            # Otherwise the node got a pod and its new entry was pushed when the heap
            # took in the placements.
        self._offer_heap(shape)
        return None

    def _offer_heap(self, shape: _Shape) -> None:
        """Keep the shape's heap, just read, for the shapes alike that come next, if no
        topology verdict went into it. Within a pass a shape's topology verdicts only
        appear (placed pods' anti-affinity is added, never taken away): a shape free of
        them now always was, so each entry of its heap was judged without one."""
        if shape.filters.topology_free():
            self._heaps[shape.heap_key] = shape

    def _first_heap(self, shape: _Shape, pod: Pod) -> tuple[list[tuple[int, str, int, int]],
                                                            int]:
        """The shape's heap and how many placements it has taken in. A shape with no
        topology verdict starts from a copy of the heap last read of a shape with the same
        key and none either (`_heaps`): both admit a node exactly when its resources do
        (the same `resources`) and score it alike (the same `fits`), so that heap holds an
        entry for each node this one would (entries order themselves), and the entries
        left stale in it are dropped or judged again as this shape's own would be."""
        template = self._heaps.get(shape.heap_key) if shape.filters.topology_free() else None
        if template is not None and template.heap is not None:
            return list(template.heap), template.seen
        blocking = self.topology.blocking_version
        heap = [
            (-self._fit(shape, pod, node), node.name, node.version, blocking)
            for node in self._admitted(shape)
        ]
        heapq.heapify(heap)
        return heap, len(self._changed)

    def _push(self, shape: _Shape, pod: Pod, node: NodeInfo) -> None:
        """Put `node` in the shape's heap, with its current score, if it can take the pod.
        Every node that got a pod is pushed again before the heap is next read
        (`_from_heap`), so the first entry whose versions are current is the best node."""
        heap = shape.heap
        assert heap is not None
        if self._admits(shape, node):
            entry = (-self._fit(shape, pod, node), node.name, node.version,
                     self.topology.blocking_version)
            heapq.heappush(heap, entry)
            if len(heap) > 2 * len(shape.candidates) + _HEAP_SLACK:
                # Entries of nodes that got a pod since are never returned: drop them
                # (in place: `_from_heap` may be walking this very list).
                nodes = self.nodes
                heap[:] = [item for item in heap if nodes[item[1]].version == item[2]]
                heapq.heapify(heap)

    @staticmethod
    def _refused(shape: _Shape, node: NodeInfo) -> bool:
        """Whether the node's ports or resources refuse the shape (`resource_reasons`)."""
        cached = shape.resources.get(node.name)
        if cached is None or cached >> 1 != node.version:
            refused = 1 if shape.filters.resource_reasons(node) else 0
            cached = shape.resources[node.name] = 2 * node.version + refused
        return bool(cached & 1)

    def _admitted(self, shape: _Shape) -> list[NodeInfo]:
        """The candidates no dynamic filter refuses (`_admits` of each, for every node of
        a pass: the verdicts kept by version read inline)."""
        filters, resources = shape.filters, shape.resources
        topology = not filters.topology_free()
        admitted = []
        for node in shape.candidates:
            cached = resources.get(node.name)
            if cached is None or cached >> 1 != node.version:
                refused = self._refused(shape, node)
            else:
                refused = bool(cached & 1)
            if not refused and not (topology and filters.topology_reasons(node)):
                admitted.append(node)
        return admitted

    def _admits(self, shape: _Shape, node: NodeInfo) -> bool:
        """No dynamic filter refuses the node (`dynamic_reasons` is empty)."""
        return not self._refused(shape, node) and not shape.filters.topology_reasons(node)

    @staticmethod
    def _fit(shape: _Shape, pod: Pod, node: NodeInfo) -> int:
        fit = shape.fits.get(node.name)
        if fit is None or fit[0] != node.version:
            fit = shape.fits[node.name] = (node.version, fit_score(pod, node))
        return fit[1]

    def _shape(self, pod: Pod) -> _Shape:
        filters = PodFilters(pod, self.topology)
        key = _candidates_key(pod)
        static = self._candidates.get(key)
        if static is None:
            static = self._candidates[key] = self._static_candidates(pod, filters)
        resource_key = (*filters.resource_key(), pod.host_ports)
        resources = self._resources.setdefault(resource_key, {})
        scored = scored_requests(pod)
        fits = self._fits.setdefault(scored, {})
        return _Shape(filters, static, resources, fits, (key, resource_key, scored))

    def _static_candidates(self, pod: Pod, filters: PodFilters) -> _Candidates:
        reasons: Counter[str] = Counter()
        candidates = []
        for node in self.nodes.values():
            failed = filters.static_reasons(node)
            if failed:
                reasons.update(failed)
            else:
                candidates.append(node)
        affinity, intolerable = {}, {}
        for node in candidates:
            if score := preferred_affinity(pod, node):
                affinity[node.name] = score
            if count := intolerable_preferences(pod, node):
                intolerable[node.name] = count
        return _Candidates(reasons, candidates, frozenset(node.name for node in candidates),
                           affinity, intolerable)

    def placed(self, pod: Pod, node: NodeInfo) -> None:
        node.add(pod)
        self.topology.record(pod, node)
        self._changed.append(node)


class KubeScheduler:
    name = "kube-scheduler"

    def __init__(self, cluster: InMemoryCluster) -> None:
        self.cluster = cluster
        self._parser = PodParser()
        self._events = EventRecorder(cluster, DEFAULT_SCHEDULER)
        self._queue = SchedulingQueue()
        # What the previous pass saw, to tell the queue what changed since.
        self._nodes_seen: dict[str, tuple[Mapping[str, Any], NodeInfo | None]] = {}
        self._nodes_version = -1
        self._namespaces_version = -1
        self._pods = PodIndex(cluster)
        # Moves whenever the set of bound pods changes (a verdict's world names it).
        self._bound_version = 0
        # Each node as the previous pass started from it, and the verdicts and scores
        # worked out per node version (see `SchedulingPass`).
        self._snapshots = NodeSnapshots()
        self._resources: ResourceVerdicts = {}
        self._fits: FitScores = {}
        # Verdicts of the last pass that bound nothing, valid while the world is the same.
        self._verdicts: dict[str, Verdict] = {}
        self._verdicts_world: World | None = None
        self._watches = (
            Watch("Pod", self._pod_keys),
            Watch("Node", singleton_key),
            Watch("Namespace", singleton_key),
            Watch("PersistentVolumeClaim", singleton_key),
            Watch("PersistentVolume", singleton_key),
            Watch("StorageClass", singleton_key),
        )
        self._storage_version = (-1, -1, -1)

    @property
    def watches(self) -> Sequence[Watch]:
        return self._watches

    @staticmethod
    def _pod_keys(event: WatchEvent) -> Iterable[str]:
        pod = event.object
        bound = bool((pod.get("spec") or {}).get("nodeName"))
        if not bound or event.type != "MODIFIED" or is_terminal(pod):
            return ("",)
        return ()

    def reconcile(self, key: str) -> Result:
        now = self.cluster.clock.now()
        changes = self._pods.refresh()
        self._parser.forget(changes.gone_uids)
        self._observe(changes, now)
        pending = self._pods.pending()
        due = self._due(pending, now)
        if not pending:
            self._verdicts, self._verdicts_world = {}, None
        if not due:
            return self._wake_up(now)
        due.sort(key=lambda item: _queue_order(item[0]))
        world: World = (
            self.cluster.kind_version("Node"),
            self.cluster.kind_version("Namespace"),
            self._bound_version,
            self._storage_version,
        )
        remembered = self._verdicts if world == self._verdicts_world else {}
        scheduling: SchedulingPass | None = None
        verdicts: dict[str, Verdict] = {}
        bound_any = False
        for obj, entry in due:
            parsed = entry.parsed = self._parser.parse(obj)
            if parsed.pod is None:
                self._queue.attempted(entry, now, NO_PLUGINS)
                self._refuse(obj, SCHEDULER_ERROR, parsed.error or "invalid pod")
                continue
            pod, signature = parsed.pod, parsed.signature
            if pod.volume_claims:
                # VolumeBinding: the claims must be usable, and the node must suit their
                # volumes' (or StorageClass's) topology.
                lookup = StoreLookup(self.cluster)
                why = volumes.problem(pod, lookup)
                if why is not None:
                    self._queue.attempted(entry, now, frozenset({VOLUME_BINDING}))
                    self._refuse(obj, UNSCHEDULABLE, f"0/{self.cluster.count('Node')} nodes "
                                 f"are available: {why}.")
                    continue
                pod = volumes.resolved(pod, lookup)
                signature = f"{signature}{pod.volume_requirements!r}"
            verdict = verdicts.get(signature) or remembered.get(signature)
            if verdict is None:
                if scheduling is None:
                    scheduling = self._new_pass(self._pods.bound())
                node, verdict = scheduling.choose(pod, signature)
                if node is not None:
                    if self._bind(obj, node.name):
                        scheduling.placed(pod, node)
                        bound_any = True
                    else:
                        self._queue.attempted(entry, now, NO_PLUGINS)
                    continue
                verdicts[signature] = verdict
            self._queue.attempted(entry, now, verdict[1])
            self._refuse(obj, UNSCHEDULABLE, verdict[0])
        if bound_any:
            self._verdicts, self._verdicts_world = {}, None
        else:
            self._verdicts, self._verdicts_world = {**remembered, **verdicts}, world
        # Pods bound in this pass may make room for those refused earlier in it (pod
        # affinity, spread minimums): the next pass tells the queue about them.
        return Result(requeue_after=0) if bound_any and verdicts else self._wake_up(now)

    def _due(self, pending: list[Mapping[str, Any]],
             now: datetime) -> list[tuple[Mapping[str, Any], QueuedPod]]:
        """The pending pods the queue says to try now (tracking new and changed ones)."""
        uids = set()
        for obj in pending:
            uids.add(obj["metadata"]["uid"])
        self._queue.keep_only(uids)
        entries = [
            (obj, self._queue.track(obj["metadata"]["uid"], obj.get("spec"),
                                    obj["metadata"].get("labels"), now))
            for obj in pending
        ]
        self._queue.flush_leftovers(now)
        return [(obj, entry) for obj, entry in entries
                if entry.due is not None and entry.due <= now]

    def _observe(self, pods: PodChanges, now: datetime) -> None:
        """Tell the queue what changed since the previous pass: Nodes added or updated,
        assigned pods added or gone, namespaces."""
        if pods.bound_added:
            self._queue.move_rejected_by(ON_ASSIGNED_POD_ADDED, now)
        if pods.bound_gone:
            self._queue.move_rejected_by(ON_ASSIGNED_POD_GONE, now)
        if pods.bound_added or pods.bound_gone:
            self._bound_version += 1
        storage = (self.cluster.kind_version("PersistentVolumeClaim"),
                   self.cluster.kind_version("PersistentVolume"),
                   self.cluster.kind_version("StorageClass"))
        if storage != self._storage_version:
            self._storage_version = storage
            self._queue.move_rejected_by((VOLUME_BINDING,), now)
        namespaces = self.cluster.kind_version("Namespace")
        if namespaces != self._namespaces_version:
            self._namespaces_version = namespaces
            self._queue.move_rejected_by(ON_NAMESPACE_CHANGE, now)
        nodes_version = self.cluster.kind_version("Node")
        if nodes_version == self._nodes_version:
            return
        self._nodes_version = nodes_version
        changes: list[NodeChange] = []
        seen: dict[str, tuple[Mapping[str, Any], NodeInfo | None]] = {}
        for node in self.cluster.peek_all("Node"):
            name = objects.name(node)
            before = self._nodes_seen.get(name)
            if before is not None and before[0] is node:
                seen[name] = before
                continue
            info = node_info(node)
            seen[name] = (node, info)
            if info is not None:
                changes.append((before[1] if before is not None else None, info))
        if len(seen) < len(self._nodes_seen) or any(name not in seen for name in self._nodes_seen):
            self._queue.move_rejected_by((POD_TOPOLOGY_SPREAD,), now)
        self._nodes_seen = seen
        self._queue.move_on_node_changes(changes, now)

    def _wake_up(self, now: datetime) -> Result:
        wakeup = self._queue.next_wakeup(now)
        if wakeup is None:
            return Result()
        return Result(requeue_after=(wakeup - now).total_seconds())

    def _new_pass(self, bound: Mapping[str, Sequence[Mapping[str, Any]]]) -> SchedulingPass:
        # The stored Nodes are replaced on each write, never changed: `_observe` has read
        # each of them already.
        nodes = self._snapshots.build(self.cluster.peek_all("Node"), bound,
                                      self._parse_bound, self._nodes_seen)
        namespace_labels = {
            objects.name(ns): objects.labels(ns) for ns in self.cluster.peek_all("Namespace")
        }
        _forget_gone(self._resources, nodes)
        _forget_gone(self._fits, nodes)
        return SchedulingPass(nodes, namespace_labels, self._resources, self._fits)

    def _parse_bound(self, obj: Mapping[str, Any]) -> Pod | None:
        return self._parser.parse(obj).pod

    def _bind(self, obj: Mapping[str, Any], node: str) -> bool:
        node_obj = self.cluster.peek("Node", node)
        if node_obj is not None and (obj.get("spec") or {}).get("volumes"):
            provision_for_node(self.cluster, obj, node_obj)
        try:
            self.cluster.bind(objects.name(obj), objects.namespace(obj), node)
        except ApiError as error:
            log.info("kube-scheduler: binding %s to %s failed: %s", objects.key(obj), node, error)
            return False
        return True

    def _refuse(self, obj: Mapping[str, Any], reason: str, message: str) -> None:
        conditions = (obj.get("status") or {}).get("conditions") or []
        for condition in conditions:
            if condition.get("type") == "PodScheduled" and (
                condition.get("status"), condition.get("reason"), condition.get("message")
            ) == ("False", reason, message):
                return
        status = {**(obj.get("status") or {}), "conditions": [dict(c) for c in conditions]}
        holder = {"status": status}
        now = self.cluster.clock.now()
        set_pod_condition(holder, "PodScheduled", "False", now, reason=reason, message=message)
        try:
            self.cluster.set_status("Pod", objects.name(obj), objects.namespace(obj), status)
        except ApiError as error:
            log.info("kube-scheduler: %s: %s", objects.key(obj), error)
            return
        self._events.record(obj, "FailedScheduling", message, event_type=WARNING,
                            action="Scheduling")


def _forget_gone(per_key: Mapping[Any, dict[str, Any]], nodes: Mapping[str, NodeInfo]) -> None:
    """Drop the entries of nodes no longer there once a key holds twice as many entries as
    there are nodes (a long run sees thousands of nodes come and go)."""
    for per_node in per_key.values():
        if len(per_node) > 2 * len(nodes):
            for name in [name for name in per_node if name not in nodes]:
                del per_node[name]


def _queue_order(pod: Mapping[str, Any]) -> tuple[int, str, str, str]:
    meta = pod["metadata"]
    priority = (pod.get("spec") or {}).get("priority") or 0
    return (-int(priority), str(meta.get("creationTimestamp") or ""), str(meta.get("namespace")),
            str(meta["name"]))
