"""Karpenter's metrics.node controller: per node allocatable, pod and DaemonSet requests
and limits, system overhead and age, and the cluster's utilization, every 5 seconds.

A node's resource series are rebuilt only when the node object, its pods' requests or
its pods' limits changed since the last run (the simulator runs this at every tick of
thousands of nodes); its age counts up to each run's time, read when scraped.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from typing import Any

from nodewright import metrics
from nodewright.api.quantity import parse_resources
from nodewright.cluster.objects import creation_time
from nodewright.runtime.clock import Clock
from nodewright.runtime.reconciler import Result, Watch
from nodewright.scheduling.pods import SpecError, pod_limits
from nodewright.state import ClusterState
from nodewright.state.podutil import is_owned_by_daemonset
from nodewright.state.statenode import StateNode

INTERVAL_SECONDS = 5.0
# What a pod's limits are read from (`scheduling.pods.pod_limits`), and how many sets of
# those the controller keeps before it starts again.
_LIMIT_FIELDS = ("containers", "initContainers", "resources", "overhead")
_LIMITS_KEPT = 4096


def resource_label(name: str) -> str:
    """cpu, memory, ephemeral_storage, nvidia_com_gpu (Karpenter's resourceNameToString)."""
    return name.lower().replace("-", "_").replace("/", "_").replace(".", "_")


def value(millis: int) -> float:
    """Our quantities are milli-units: cores for cpu, bytes (or counts) for the rest."""
    return millis / 1000


def _container_limits(pod: Mapping[str, Any]) -> dict[str, int]:
    """The pod's limits as Karpenter's LimitsForPods takes them (sidecars, init
    containers, pod-level limits and overhead included)."""
    try:
        return dict(pod_limits(pod.get("spec") or {}, "spec"))
    except SpecError:
        return {}


@dataclass(frozen=True)
class _NodeLimits:
    pods: tuple[Mapping[str, Any], ...]
    by_pod: dict[str, tuple[Mapping[str, Any], dict[str, int], bool]]
    pod_limits: dict[str, int]
    daemon_limits: dict[str, int]

    @cached_property
    def totals(self) -> tuple[tuple[tuple[str, int], ...], tuple[tuple[str, int], ...]]:
        """The node's pod and DaemonSet limits, as a part of its fingerprint."""
        return tuple(self.pod_limits.items()), tuple(self.daemon_limits.items())


class NodeMetrics:
    name = "metrics.node"
    # It reads a snapshot taken under the state lock and works outside it: a pass over
    # every node and its pods is long enough to hold up the controllers that act.
    manages_state_lock = True

    def __init__(self, clock: Clock, state: ClusterState) -> None:
        self.clock = clock
        self.state = state
        self.store = metrics.Store()
        self._fingerprints: dict[str, tuple[Any, ...]] = {}
        # Per node: the node object and managed flag its labels were read for (kept, so
        # that its id is not reused), those labels, its creation time, its lifetime
        # series' label values and the last pass's time that series counts up to.
        self._read: dict[str, tuple[Mapping[str, Any], bool, dict[str, str],
                                    datetime | None, tuple[str, ...],
                                    metrics.Moment | None]] = {}
        # Per node: what its allocatable was read from (the Node's and, while it is not
        # initialized, the NodeClaim's status.allocatable as written) and that allocatable;
        # read again only when one of them changes (the state's own copy goes at every
        # pod bound or gone, and a Node is written far more often than its allocatable).
        self._allocatable: dict[str, tuple[tuple[Any, ...], Mapping[str, int]]] = {}
        # Limits by the parts of a pod spec they are read from (the containers, the init
        # containers, the pod-level resources and the overhead, held so that their ids
        # are not reused): the API server stores equal parts once, so the replicas of a
        # workload share them and a new replica's limits are those its siblings had.
        self._limits_by_parts: dict[tuple[int, ...], tuple[tuple[Any, ...], dict[str, int]]] = {}
        # Per node: its capacity and allocatable as written, and parsed.
        self._status: dict[str, tuple[Any, Any, dict[str, int], dict[str, int]]] = {}
        # Per node: the pods bound to it as last read (the state's kept tuple), and for
        # each pod the object its limits were read from (kept, so that its id is not
        # reused), those limits and whether a DaemonSet owns it; then the node's pod and
        # DaemonSet limits. Read again only when a pod of the node changes, and then only
        # the pods that changed.
        self._limits: dict[str, _NodeLimits] = {}

    @property
    def watches(self) -> Sequence[Watch]:
        return ()

    def reconcile(self, key: str) -> Result:
        with self.state.lock:
            state = self.state.snapshot()
        now = self.clock.now()
        nodes = [node for node in state.nodes() if node.node is not None]
        seen: set[str] = set()
        allocatable_total: dict[str, int] = {}
        requested_total: dict[str, int] = {}
        for node in nodes:
            name = node.node_name
            seen.add(name)
            obj = node.node or {}
            read = self._read.get(name)
            if read is None or read[0] is not obj or read[1] != node.managed:
                labels = node_labels(node)
                read = (obj, node.managed, labels, creation_time(obj), tuple(
                    labels[key] for key in metrics.NODES_CURRENT_LIFETIME._labelnames),
                    None)
            _, _, labels, created, lifetime_labels, looked = read
            # `_read` holds this node object (just stored, or unchanged) for as long as
            # the fingerprint is kept, so no other object can take its id meanwhile.
            limits = self._limits_on(state, name)
            # A pod's limits or owner can change while its requests stay (an in-place
            # resize of its limits, a pod replaced by one with other limits, a DaemonSet
            # adopting it): the DaemonSet requests and both limits count too.
            fingerprint = (id(node.node), len(node.pods), tuple(node.pods.total.items()),
                           tuple(node.pods.daemon_total.items()), limits.totals)
            if self._fingerprints.get(name) != fingerprint:
                self._fingerprints[name] = fingerprint
                looked = None
                self.store.update(name, [
                    *self._resource_series(node, labels, limits),
                    (metrics.NODES_CURRENT_LIFETIME, labels,
                     (now - created).total_seconds() if created is not None else 0.0),
                ])
            if looked is None or looked.lost:
                # Its lifetime series set afresh (made when its gauge has none), counting
                # up to this pass's time and each pass's after; a node whose series stay
                # as they were only moves that time on.
                looked = metrics.Moment(now)
                self._lifetime(lifetime_labels, created, looked)
                read = (*read[:5], looked)
                self._read[name] = read
            else:
                looked.at = now
            _add(allocatable_total, self._allocatable_of(name, obj, node))
            _add(requested_total, node.pod_requests())
        for name in set(self._read) - seen:
            del self._read[name]
            self._allocatable.pop(name, None)
            self._status.pop(name, None)
        for name in set(self._fingerprints) - seen:
            del self._fingerprints[name]
            self._limits.pop(name, None)
            self.store.delete(name)
        self.store.update("cluster", [
            (metrics.CLUSTER_UTILIZATION, {metrics.RESOURCE_TYPE: resource_label(name)},
             100 * requested_total.get(name, 0) / amount)
            for name, amount in sorted(allocatable_total.items()) if amount > 0
        ])
        return Result(requeue_after=INTERVAL_SECONDS)

    @staticmethod
    def _lifetime(label_values: tuple[str, ...], created: datetime | None,
                  looked: metrics.Moment) -> None:
        """The node's lifetime from its creation to `looked` (0 when the Node has none)."""
        if created is None:
            metrics.set_series(metrics.NODES_CURRENT_LIFETIME, label_values, 0.0)
        else:
            metrics.count_up(metrics.held_child(metrics.NODES_CURRENT_LIFETIME, label_values),
                             looked, created)

    def _allocatable_of(self, name: str, obj: Mapping[str, Any], node: StateNode
                        ) -> Mapping[str, int]:
        initialized = node.initialized
        read_from = (
            ((obj.get("status") or {}).get("allocatable"), initialized,
             None if initialized or node.nodeclaim is None
             else (node.nodeclaim.get("status") or {}).get("allocatable"))
        )
        kept = self._allocatable.get(name)
        if kept is None or kept[0] != read_from:
            kept = (read_from, node.allocatable())
            self._allocatable[name] = kept
        return kept[1]

    def _limits_of(self, pod: Mapping[str, Any]) -> dict[str, int]:
        spec = pod.get("spec") or {}
        parts = tuple(spec.get(field) for field in _LIMIT_FIELDS)
        key = tuple(id(part) for part in parts)
        kept = self._limits_by_parts.get(key)
        if kept is None or any(a is not b for a, b in zip(kept[0], parts, strict=True)):
            if len(self._limits_by_parts) >= _LIMITS_KEPT:
                self._limits_by_parts.clear()
            kept = (parts, _container_limits(pod))
            self._limits_by_parts[key] = kept
        return kept[1]

    def _capacity_and_allocatable(self, name: str, status: Mapping[str, Any]
                                  ) -> tuple[dict[str, int], dict[str, int]]:
        raw_capacity, raw_allocatable = status.get("capacity"), status.get("allocatable")
        kept = self._status.get(name)
        if kept is None or kept[0] != raw_capacity or kept[1] != raw_allocatable:
            try:
                parsed = (parse_resources(raw_capacity or {}),
                          parse_resources(raw_allocatable or {}))
            except ValueError:
                parsed = ({}, {})
            kept = (raw_capacity, raw_allocatable, *parsed)
            self._status[name] = kept
        return kept[2], kept[3]

    def _limits_on(self, state: ClusterState, node_name: str) -> _NodeLimits:
        """The limits of the pods bound to the node: those last read while the state keeps
        the same pods (the very objects: they are replaced, never changed in place),
        otherwise read again for the pods that changed."""
        pods = state.kept_pods_on(node_name)
        last = self._limits.get(node_name)
        if last is not None and (last.pods is pods or (
                len(last.pods) == len(pods)
                and all(map(operator.is_, last.pods, pods)))):
            return last
        pod_limits: dict[str, int] = {}
        daemon_limits: dict[str, int] = {}
        known = last.by_pod if last is not None else {}
        read: dict[str, tuple[Mapping[str, Any], dict[str, int], bool]] = {}
        for pod in pods:
            key = _pod_key(pod)
            kept = known.get(key)
            if kept is not None and kept[0] is not pod and _same_limits(kept[0], pod):
                kept = (pod, kept[1], kept[2])
            elif kept is None or kept[0] is not pod:
                kept = (pod, self._limits_of(pod), is_owned_by_daemonset(pod))
            read[key] = kept
            _, amounts, daemon = kept
            _add(pod_limits, amounts)
            if daemon:
                _add(daemon_limits, amounts)
        found = _NodeLimits(pods, read, pod_limits, daemon_limits)
        self._limits[node_name] = found
        return found

    def _resource_series(self, node: StateNode, labels: Mapping[str, str],
                         limits: _NodeLimits) -> Iterable[metrics.Sample]:
        capacity, allocatable = self._capacity_and_allocatable(
            node.node_name, (node.node or {}).get("status") or {})
        overhead = {name: amount - allocatable.get(name, 0) for name, amount in capacity.items()}
        for gauge, resources in (
            (metrics.NODES_SYSTEM_OVERHEAD, overhead),
            (metrics.NODES_TOTAL_POD_REQUESTS, node.pod_requests()),
            (metrics.NODES_TOTAL_POD_LIMITS, limits.pod_limits),
            (metrics.NODES_TOTAL_DAEMON_REQUESTS, node.daemonset_requests()),
            (metrics.NODES_TOTAL_DAEMON_LIMITS, limits.daemon_limits),
            (metrics.NODES_ALLOCATABLE, allocatable),
        ):
            for name, amount in resources.items():
                yield gauge, {**labels, metrics.RESOURCE_TYPE: resource_label(name)}, value(amount)


def _same_limits(read: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """Whether `pod` has the limits and owners of the version `read`: the same spec object
    (the API server keeps the spec a status write leaves alone, and nobody changes a
    stored object) and equal owner references."""
    return (read.get("spec") is pod.get("spec")
            and (read.get("metadata") or {}).get("ownerReferences")
            == (pod.get("metadata") or {}).get("ownerReferences"))


def _pod_key(pod: Mapping[str, Any]) -> str:
    metadata = pod.get("metadata") or {}
    return f"{metadata.get('namespace') or ''}/{metadata.get('name') or ''}"


def node_labels(node: StateNode) -> dict[str, str]:
    obj = node.node or {}
    labels = (obj.get("metadata") or {}).get("labels") or {}
    result = {label: str(labels.get(key, "")) for key, label in
              metrics.WELL_KNOWN_NODE_LABELS.items()}
    result["node_name"] = node.node_name
    result["phase"] = str((obj.get("status") or {}).get("phase") or "")
    result["managed"] = "true" if node.managed else "false"
    return result


def _add(total: dict[str, int], amounts: Mapping[str, int]) -> None:
    for name, amount in amounts.items():
        total[name] = total.get(name, 0) + amount
