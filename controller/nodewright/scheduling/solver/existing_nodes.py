"""The nodes that exist already: what their bound pods and DaemonSets take (`NodeUsage`),
worked out once per problem or once for many problems cut from one (`PreparedNodes`), and
turned into targets new pods may land on (`existing_targets`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from operator import sub as _minus

from nodewright.scheduling.pods import (
    UNSCHEDULABLE_TAINT,
    DaemonSet,
    ExistingNode,
    HostPort,
    Pod,
    Taint,
    Toleration,
    untolerated,
)
from nodewright.scheduling.solver.context import Signatures
from nodewright.scheduling.solver.pack_memo import PackMemo
from nodewright.scheduling.solver.pools import PoolMemo
from nodewright.scheduling.solver.problem import SchedulingProblem
from nodewright.scheduling.solver.topology import TopologyTracker
from nodewright.scheduling.targets import ExistingTarget, ResourceIndex, Vector, fits
from nodewright.scheduling.topology import DomainSource


@dataclass
class NodeUsage:
    """An existing node with what its bound pods and DaemonSets take, in any resources."""

    node: ExistingNode
    taints: tuple[Taint, ...]
    source: DomainSource
    running: list[Pod]
    requested: dict[str, int]  # bound pods and the DaemonSets that will run there
    host_ports: list[HostPort]
    names: frozenset[str]  # the resources its bound pods request
    with_volumes: tuple[Pod, ...] = ()  # its bound pods that mount volumes


def node_usage(node: ExistingNode, running: list[Pod],
                daemonsets: Sequence[DaemonSet]) -> NodeUsage:
    taints = node.taints
    if node.unschedulable and UNSCHEDULABLE_TAINT not in taints:
        # What the node lifecycle controller adds; nodeTaintsPolicy Honor sees it.
        taints = (*taints, UNSCHEDULABLE_TAINT)
    requested: dict[str, int] = {}
    daemon_ports: list[HostPort] = []
    if not node.unschedulable:
        owners = {pod.owner for pod in running}
        hard_taints = tuple(t for t in node.taints if t.effect != "PreferNoSchedule")
        for daemonset in daemonsets:
            if (
                f"DaemonSet/{daemonset.name}" not in owners
                and untolerated(hard_taints, daemonset.pod.tolerations) is None
                and any(
                    alternative.satisfied_by_labels(node.labels)
                    for alternative in daemonset.pod.strict_node_alternatives()
                )
            ):
                for name, amount in daemonset.pod.requests.items():
                    requested[name] = requested.get(name, 0) + amount
                daemon_ports.extend(daemonset.pod.host_ports)
        for pod in running:
            for name, amount in pod.requests.items():
                requested[name] = requested.get(name, 0) + amount
    return NodeUsage(
        node=node,
        taints=taints,
        source=DomainSource(taints, labels=tuple(sorted(node.labels.items()))),
        running=running,
        requested=requested,
        host_ports=[port for pod in running for port in pod.host_ports] + daemon_ports,
        names=frozenset(name for pod in running for name in pod.requests),
        with_volumes=tuple(pod for pod in running if pod.volumes),
    )


def is_tied(pod: Pod) -> bool:
    """Whether topology ties the pod to others (spread or (anti-)affinity terms)."""
    return bool(pod.spread or pod.pod_affinity or pod.preferred_pod_affinity
                or pod.pod_anti_affinity or pod.preferred_pod_anti_affinity)


def bound_by_node(problem: SchedulingProblem) -> dict[str, list[Pod]]:
    bound: dict[str, list[Pod]] = {}
    for pod in problem.bound_pods:
        if pod.node_name is not None:
            bound.setdefault(pod.node_name, []).append(pod)
    return bound


class PreparedNodes:
    """The existing nodes of a problem with their usage, worked out once for solving
    problems cut from it by taking some nodes away with their bound pods (a disruption
    pass simulates each candidate's removal that way).

    `like`: the prepared nodes of a problem with the same bound pods and DaemonSets whose
    nodes differ only in some being replaced (tainted): the usage of every node left as
    it was is taken from there.

    `earlier`: the prepared nodes of any earlier problem (the same view in the disruption
    pass before, tainted alike): a node equal to its model there, with the very same
    bound pod objects in the same order and the same DaemonSet objects, keeps its usage,
    its resource vectors and its empty target; every other node is worked out again.
    Between two passes most machines are untouched, so a pass works out only what
    changed."""

    def __init__(self, problem: SchedulingProblem, like: PreparedNodes | None = None,
                 earlier: PreparedNodes | None = None) -> None:
        self.daemonsets = problem.daemonsets
        # NodePool setups, shared by the solves of the problems cut from this one (their
        # templates and DaemonSets are these).
        self.pool_memo: PoolMemo = {}
        # The NodePool setups of their NodeClaims' re-plans (`Setup.tail_pools`).
        self.tail_pool_memo: PoolMemo = {}
        # Each pod's signature (a function of the pod object alone): the moving pods of a
        # pass are the same objects in each of its simulations, and mostly in the next.
        self.signatures: Signatures = (
            like.signatures if like is not None
            else Signatures(earlier.signatures if earlier is not None else None))
        # The packer's plans by their input (which holds every bin's price and room, so
        # they outlive any change of DaemonSets or nodes).
        self.packs: PackMemo = (
            like.packs if like is not None
            else PackMemo(earlier.packs if earlier is not None else None))
        if like is not None and like.daemonsets is not problem.daemonsets:
            like = None
        if earlier is not None and not same_objects(earlier.daemonsets, problem.daemonsets):
            earlier = None
        # The NodePool setups of the pass before (`Setup._memoised_pool` checks each is
        # of these very instance types and DaemonSets); only its own memo is held, not
        # the pass itself.
        self.earlier_pool_memo: PoolMemo = earlier.pool_memo if earlier is not None else {}
        bound: dict[str, list[Pod]] | None = None
        self.by_name: dict[str, NodeUsage] = {}
        renewed: dict[str, NodeUsage] = {}  # usage kept from `earlier`, for an equal node
        for node in problem.nodes:
            known = like.by_name.get(node.name) if like is not None else None
            if known is not None and known.node is node:
                self.by_name[node.name] = known
                continue
            if known is not None:
                running = known.running
            else:
                if bound is None:
                    bound = bound_by_node(problem)
                running = bound.get(node.name, [])
            before = earlier.by_name.get(node.name) if earlier is not None else None
            if before is not None and same_objects(before.running, running):
                if before.node is node:
                    self.by_name[node.name] = before
                    continue
                if before.node == node:
                    # The state (or a view tainting it) made the machine's model again.
                    self.by_name[node.name] = replace(before, node=node)
                    renewed[node.name] = before
                    continue
            self.by_name[node.name] = node_usage(node, running, problem.daemonsets)
        self.order = sorted(self.by_name)
        # How many nodes' bound pods request each resource (`resource_names`).
        self._name_counts: dict[str, int] = {}
        for each in self.by_name.values():
            for name in each.names:
                self._name_counts[name] = self._name_counts.get(name, 0) + 1
        # The nodes in the order pods try them, per resource slots (`fleet`).
        self._fleets: dict[tuple[str, ...], Fleet] = {}
        # Whether any bound pod has spread or (anti-)affinity terms (`Setup.tied`).
        self.any_tied: bool = (like.any_tied if like is not None
                               else any(is_tied(pod) for pod in problem.bound_pods))
        # Each node's usage as vectors, per resource slots (`node_setups`): the same for
        # every problem cut from this one whose slots are these, and kept from `like` or
        # `earlier` for each node whose usage is kept.
        self.setups: dict[tuple[str, ...], dict[str, NodeSetup]] = {}
        for source in (like, earlier):
            if source is None:
                continue
            for names, theirs in source.setups.items():
                kept = self.setups.setdefault(names, {})
                for name, setup in theirs.items():
                    usage = self.by_name.get(name)
                    if usage is setup.usage:
                        kept[name] = setup
                    elif usage is not None and renewed.get(name) is setup.usage:
                        kept[name] = replace(setup, usage=usage)

    def gone_from(self, problem: SchedulingProblem) -> frozenset[str]:
        """The nodes the problem (one `usable_for`) was cut from these by taking away."""
        return frozenset(self.by_name.keys() - {node.name for node in problem.nodes})

    def resource_names(self, gone: frozenset[str]) -> set[str]:
        """The resources the bound pods of the nodes left once `gone` are taken away
        request."""
        counts = self._name_counts
        if gone:
            counts = dict(counts)
            for name in gone:
                for resource in self.by_name[name].names:
                    counts[resource] -= 1
        return {resource for resource, count in counts.items() if count > 0}

    def fleet(self, index: ResourceIndex) -> Fleet:
        """Every one of these nodes in the order pods try them, for these resource slots:
        built once and shared by every plan of every problem cut from them, each of which
        leaves out the nodes it took away (`Fleet.absent`)."""
        fleet = self._fleets.get(index.names)
        if fleet is None:
            fleet = Fleet.of(node_setups(None, self, index))
            self._fleets[index.names] = fleet
        return fleet

    def usable_for(self, problem: SchedulingProblem) -> bool:
        """Whether the problem keeps the same DaemonSets, nodes among these, and every
        kept node's bound pods (counted) as they were."""
        if problem.daemonsets is not self.daemonsets:
            return False
        kept = 0
        for node in problem.nodes:
            usage = self.by_name.get(node.name)
            if usage is None or usage.node is not node:
                return False
            kept += len(usage.running)
        return kept == len(problem.bound_pods)


def same_objects(one: Sequence[object], other: Sequence[object]) -> bool:
    """The same objects in the same order."""
    return one is other or (
        len(one) == len(other) and all(a is b for a, b in zip(one, other, strict=True)))


@dataclass
class NodeSetup:
    usage: NodeUsage
    used: Vector
    allocatable: Vector
    # The node as a target before any new pod lands, built once and shared by every plan
    # of every problem cut from the prepared nodes; a plan copies it when a pod lands
    # there (`Placement`). Never changed.
    _empty: ExistingTarget | None = field(default=None, repr=False, compare=False)

    def empty_target(self) -> ExistingTarget:
        if self._empty is None:
            usage = self.usage
            node = usage.node
            empty = ExistingTarget(
                hostname=node.name,
                taints=usage.taints,
                used=self.used,
                labels=node.labels,
                allocatable=self.allocatable,
                volume_limits=node.volume_limits,
            )
            empty.host_ports.extend(usage.host_ports)
            for pod in usage.with_volumes:
                empty.add_volumes(pod)
            self._empty = empty
        return self._empty


def node_setups(problem: SchedulingProblem | None, prepared: PreparedNodes | None,
                index: ResourceIndex) -> list[NodeSetup]:
    """The problem's existing nodes by name (every prepared node's, without a problem),
    with their usage as resource vectors."""
    if prepared is not None:
        known = prepared.setups.setdefault(index.names, {})
        kept = None if problem is None else {node.name for node in problem.nodes}
        setups = []
        for name in prepared.order:
            if kept is not None and name not in kept:
                continue
            setup = known.get(name)
            if setup is None:
                usage = prepared.by_name[name]
                setup = NodeSetup(usage, index.vector(usage.requested),
                                  index.vector(usage.node.allocatable or {}))
                known[name] = setup
            setups.append(setup)
        return setups
    assert problem is not None
    bound = bound_by_node(problem)
    usages = [node_usage(node, bound.get(node.name, []), problem.daemonsets)
              for node in problem.nodes]
    return [
        NodeSetup(usage, index.vector(usage.requested),
                  index.vector(usage.node.allocatable or {}))
        for usage in sorted(usages, key=lambda u: u.node.name)
    ]


# How many targets share one entry of `Fleet.room`.
ROOM_BLOCK = 16


@dataclass
class Fleet:
    """The existing nodes in the order new pods try them: initialized ones first, each
    kind by name (Karpenter's sortExistingNodes). `targets` are the nodes that take new
    pods, as they are before any lands (shared by every plan: one copies a target before
    a pod lands there, `Placement`), `positions` their place in that list by node name.
    `free`: each target's free room before new pods land; `room`: per block of
    `ROOM_BLOCK` targets, the most free room any of them has in each resource slot. Room
    only shrinks as pods land, so a pod whose request vector a node's (or a block's) room
    does not hold finds that node (every node of the block) full."""

    nodes: list[NodeSetup]  # every node, cordoned ones too, in that order
    targets: list[ExistingTarget]
    positions: dict[str, int]
    free: list[Vector]
    room: list[Vector]
    # Every node's labels and their source as topology domains, and its name, in the
    # order of `nodes`.
    domain_sources: list[tuple[Mapping[str, str], DomainSource]] = field(
        default_factory=list, repr=False, compare=False)
    names: list[str] = field(default_factory=list, repr=False, compare=False)
    # `open_to`'s answers, per request vector and tolerations.
    _open: dict[tuple[Vector, tuple[Toleration, ...]], list[int]] = field(
        default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(cls, setups: Sequence[NodeSetup]) -> Fleet:
        nodes = sorted(setups, key=lambda s: not s.usage.node.initialized)
        targets: list[ExistingTarget] = []
        positions: dict[str, int] = {}
        for setup in nodes:
            if setup.usage.node.unschedulable:
                continue
            positions[setup.usage.node.name] = len(targets)
            targets.append(setup.empty_target())
        free = [tuple(map(_minus, target.allocatable, target.used)) for target in targets]
        room = [tuple(max(column) for column in zip(*free[at:at + ROOM_BLOCK], strict=True))
                for at in range(0, len(free), ROOM_BLOCK)]
        return cls(nodes, targets, positions, free, room,
                   [(setup.usage.node.labels, setup.usage.source) for setup in nodes],
                   [setup.usage.node.name for setup in nodes])

    def open_to(self, vector: Vector, tolerations: tuple[Toleration, ...]) -> list[int]:
        """The positions, in order, of the targets whose room before new pods land holds
        `vector` and whose taints `tolerations` tolerate: those a pod of that vector and
        those tolerations may land on before any lands (`open_nodes.OpenNodes`). Worked
        out once and shared by every plan of every problem cut from these nodes (the
        targets, their room and their taints are never changed)."""
        key = (vector, tolerations)
        found = self._open.get(key)
        if found is None:
            free = self.free
            targets = self.targets
            found = []
            for block, room in enumerate(self.room):
                if not fits(vector, room):
                    continue
                for position in range(block * ROOM_BLOCK,
                                      min((block + 1) * ROOM_BLOCK, len(free))):
                    if (fits(vector, free[position])
                            and untolerated(targets[position].taints, tolerations) is None):
                        found.append(position)
            self._open[key] = found
        return found

    def absent(self, gone: frozenset[str]) -> frozenset[int]:
        """The positions of the targets of the nodes `gone`."""
        return frozenset(self.positions[name] for name in gone if name in self.positions)


def count_existing(fleet: Fleet, gone: frozenset[str], tracker: TopologyTracker,
                   domains: list[tuple[Mapping[str, str], DomainSource]]) -> None:
    """Every node's domains (`domains`: those of the nodes not `gone`) and bound pods (but
    those of the nodes `gone`) counted toward topology (a cordoned node's too, though it
    takes no new pods). An existing node's bound pods never wait on it for a domain (it
    has one per key), so counting leaves its shared target unchanged; and counting reads
    no domain, so the domains can be offered first."""
    tracker.topology.add_nodes_domains(domains)
    if not tracker.topology.groups:
        # Without any topology group a bound pod counts toward nothing.
        return
    for setup in fleet.nodes:
        usage = setup.usage
        node = usage.node
        if gone and node.name in gone:
            continue
        if node.unschedulable:
            target = ExistingTarget(node.name, usage.taints, (), labels=node.labels)
        else:
            target = setup.empty_target()
        for pod in usage.running:
            tracker.record(target, pod)
