"""What kube-scheduler's cache holds for one scheduling pass: each node's labels,
effective taints, allocatable and what its pods already request and use.

A node that is not Ready carries the `node.kubernetes.io/not-ready:NoSchedule` taint and a
cordoned one the `node.kubernetes.io/unschedulable:NoSchedule` taint, as Kubernetes' node
lifecycle controller would put on them, so the taint rules keep pods off both. Pods keep
occupying their node while they terminate; finished pods (Succeeded, Failed) do not.
"""

from __future__ import annotations

import itertools
import logging
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nodewright.api.quantity import CPU, MEMORY, parse_quantity
from nodewright.cluster import objects
from nodewright.cluster.memory.pod_status import is_terminal
from nodewright.scheduling.pods import (
    UNSCHEDULABLE_TAINT,
    HostPort,
    Pod,
    SpecError,
    Taint,
    node_from_manifest,
)

log = logging.getLogger(__name__)

NOT_READY_TAINT = Taint("node.kubernetes.io/not-ready", "", "NoSchedule")
# kube-scheduler scores pods without requests as if they asked for this much.
DEFAULT_CPU_REQUEST = parse_quantity("100m")
DEFAULT_MEMORY_REQUEST = parse_quantity("200Mi")

# Node versions are unique in the process: two NodeInfos with the same version hold the
# same node and pods (one is a copy of the other, neither changed since), so what is
# worked out for a version holds for every pass that sees it.
_versions = itertools.count(1)


@dataclass(slots=True)
class PlacedPod:
    pod: Pod
    deleting: bool


@dataclass(slots=True)
class NodeInfo:
    name: str
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    unschedulable: bool
    allocatable: Mapping[str, int]
    allocatable_cpu: int = 0
    allocatable_memory: int = 0
    requested: dict[str, int] = field(default_factory=dict)
    scored_cpu: int = 0
    scored_memory: int = 0
    ports: list[HostPort] = field(default_factory=list)
    pods: list[PlacedPod] = field(default_factory=list)
    # A new one, never seen before, whenever a pod is added, so per-node verdicts can be
    # cached by version (see `_versions`).
    version: int = field(default_factory=lambda: next(_versions))

    def add(self, pod: Pod, *, deleting: bool = False) -> None:
        self.version = next(_versions)
        for resource, amount in pod.requests.items():
            self.requested[resource] = self.requested.get(resource, 0) + amount
        cpu, memory = scored_requests(pod)
        self.scored_cpu += cpu
        self.scored_memory += memory
        self.ports.extend(pod.host_ports)
        self.pods.append(PlacedPod(pod, deleting))

    def empty(self) -> NodeInfo:
        """The same node with no pods (what it holds that a pass changes is new)."""
        return NodeInfo(self.name, self.labels, self.taints, self.unschedulable,
                        self.allocatable, self.allocatable_cpu, self.allocatable_memory)

    def with_pods_of(self, other: NodeInfo) -> NodeInfo:
        """This node (new, with no pods) holding what `other` holds: the pods' part of a
        NodeInfo does not depend on the node (`add` reads only the pod)."""
        return NodeInfo(self.name, self.labels, self.taints, self.unschedulable,
                        self.allocatable, self.allocatable_cpu, self.allocatable_memory,
                        dict(other.requested), other.scored_cpu, other.scored_memory,
                        list(other.ports), list(other.pods))

    def copy(self) -> NodeInfo:
        """The same node with the same pods and version (a pod added to one of them gives
        it a version of its own)."""
        return NodeInfo(self.name, self.labels, self.taints, self.unschedulable,
                        self.allocatable, self.allocatable_cpu, self.allocatable_memory,
                        dict(self.requested), self.scored_cpu, self.scored_memory,
                        list(self.ports), list(self.pods), self.version)


def scored_requests(pod: Pod) -> tuple[int, int]:
    return (
        pod.requests.get(CPU) or DEFAULT_CPU_REQUEST,
        pod.requests.get(MEMORY) or DEFAULT_MEMORY_REQUEST,
    )


def node_info(node: Mapping[str, Any]) -> NodeInfo | None:
    """The node as the scheduler sees it; None (logged) when it cannot be read."""
    try:
        parsed = node_from_manifest(node)
    except SpecError as error:
        log.warning("kube-scheduler: ignoring node %s: %s", objects.name(node), error)
        return None
    taints = list(parsed.taints)
    keys = {taint.key for taint in taints}
    if not objects.condition_is_true(node, "Ready") and NOT_READY_TAINT.key not in keys:
        taints.append(NOT_READY_TAINT)
    if parsed.unschedulable and UNSCHEDULABLE_TAINT.key not in keys:
        taints.append(UNSCHEDULABLE_TAINT)
    allocatable = parsed.allocatable or {}
    return NodeInfo(
        name=parsed.name,
        labels=parsed.labels,
        taints=tuple(taints),
        unschedulable=parsed.unschedulable,
        allocatable=allocatable,
        allocatable_cpu=allocatable.get(CPU, 0),
        allocatable_memory=allocatable.get(MEMORY, 0),
    )


@dataclass(frozen=True, slots=True)
class _KeptNode:
    """A node as a pass started from it: the Node object and bound pod objects it was
    made from, and the NodeInfo (never changed: each pass takes a copy)."""

    node: Mapping[str, Any]
    pods: Sequence[Mapping[str, Any]]
    info: NodeInfo


class NodeSnapshots:
    """Each pass's nodes with their bound, unfinished pods accounted, kept from one pass to
    the next: a node whose Node object and bound pod objects (in order) are the very same
    as at the pass before is not made again. The store replaces an object on every write
    and never changes one in place, and a NodeInfo depends only on those objects, so the
    kept one is what a fresh build would make."""

    def __init__(self) -> None:
        self._kept: dict[str, _KeptNode] = {}

    def build(
        self,
        nodes: Iterable[Mapping[str, Any]],
        bound: Mapping[str, Sequence[Mapping[str, Any]]],
        parse: Callable[[Mapping[str, Any]], Pod | None],
        read: Mapping[str, tuple[Mapping[str, Any], NodeInfo | None]] | None = None,
    ) -> dict[str, NodeInfo]:
        """Nodes by name (sorted), each a copy the pass may add pods to. `bound`: the
        unfinished pod objects bound to each node name, in the store's order; `parse`:
        a pod object's model (None when it cannot be read: left out). `read`: per node
        name, a node object already read and what `node_info` made of it, taken (empty)
        for that very object instead of reading it again."""
        kept: dict[str, _KeptNode] = {}
        infos = {}
        for node in sorted(nodes, key=objects.name):
            name = objects.name(node)
            pods = bound.get(name, ())
            before = self._kept.get(name)
            same_pods = before is not None and _same(before.pods, pods)
            if before is not None and same_pods and before.node is node:
                info = before.info
            else:
                known = read.get(name) if read is not None else None
                if known is not None and known[0] is node:
                    made = known[1].empty() if known[1] is not None else None
                else:
                    made = node_info(node)
                if made is None:
                    continue
                if before is not None and same_pods:
                    # Only the Node changed: its pods count as they did.
                    info = made.with_pods_of(before.info)
                else:
                    info = made
                    for obj in pods:
                        pod = parse(obj)
                        if pod is not None and not is_terminal(obj):
                            info.add(pod, deleting=objects.is_deleting(obj))
            kept[name] = _KeptNode(node, pods, info)
            infos[info.name] = info.copy()
        self._kept = kept
        return infos


def _same(one: Sequence[object], other: Sequence[object]) -> bool:
    """The same objects in the same order."""
    return one is other or (len(one) == len(other) and all(map(operator.is_, one, other)))
