"""What kube-scheduler's cache holds for one scheduling pass: each node's labels,
effective taints, allocatable and what its pods already request and use.

A node that is not Ready carries the `node.kubernetes.io/not-ready:NoSchedule` taint and a
cordoned one the `node.kubernetes.io/unschedulable:NoSchedule` taint, as Kubernetes' node
lifecycle controller would put on them, so the taint rules keep pods off both. Pods keep
occupying their node while they terminate; finished pods (Succeeded, Failed) do not.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from nodewright.api.quantity import CPU, MEMORY, parse_quantity
from nodewright.cluster import objects
from nodewright.cluster.memory.pod_status import is_terminal, node_name
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
    # Moves whenever a pod is added, so per-node verdicts can be cached.
    version: int = 0

    def add(self, pod: Pod, *, deleting: bool = False) -> None:
        self.version += 1
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


def build_snapshot(
    nodes: Iterable[Mapping[str, Any]],
    bound: Iterable[tuple[Mapping[str, Any], Pod]],
    read: Mapping[str, tuple[Mapping[str, Any], NodeInfo | None]] | None = None,
) -> dict[str, NodeInfo]:
    """Nodes by name (sorted) with their bound, unfinished pods accounted. `read`: per
    node name, a node object already read and what `node_info` made of it, taken (empty)
    for that very object instead of reading it again."""
    infos = {}
    for node in sorted(nodes, key=objects.name):
        known = read.get(objects.name(node)) if read is not None else None
        if known is not None and known[0] is node:
            info = known[1].empty() if known[1] is not None else None
        else:
            info = node_info(node)
        if info is not None:
            infos[info.name] = info
    for obj, pod in bound:
        info = infos.get(node_name(obj))
        if info is not None and not is_terminal(obj):
            info.add(pod, deleting=objects.is_deleting(obj))
    return infos
