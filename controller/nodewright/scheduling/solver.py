"""The provisioning solver: place pending pods on existing nodes and on new NodeClaims.

Order of work, as Karpenter does it: pods largest first (cpu, then memory); each pod
tries existing nodes, then the NodeClaims opened so far, then a new NodeClaim from the
highest-weight NodePool that can take it. A pod that fits nowhere has its preferences
relaxed one at a time and is tried again; what still fits nowhere gets a reason.
Pods no topology rule ties to any other ("free" pods) go after the rest, cpu-heavy and
memory-heavy ones alternating so that the NodeClaims they fill stay balanced.

A NodeClaim keeps every instance type that could still hold all its pods (see
`targets.Narrowed`); when it is done, the types are ordered by their cheapest allowed
offering and the first one is what would launch. A NodeClaim grows into a pricier type
only when that costs no more than a separate node for the pod or the bigger type is
among the most cost-efficient (`growth`). Each distinct pod shape keeps the list of
targets it has not found permanently closed, so identical pods never re-check them.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import chain
from typing import Any

from nodewright.api.quantity import CPU, MEMORY, PODS, format_quantity
from nodewright.scheduling.daemons import DaemonLoad, daemon_loads
from nodewright.scheduling.growth import GrowthJudge
from nodewright.scheduling.nodepools import (
    NodePoolTemplate,
    cheapest_price,
    labels_compatible,
    offering_values,
)
from nodewright.scheduling.packing import BinType, Budget, Packed, pack
from nodewright.scheduling.pods import (
    PREFER_NO_SCHEDULE_TOLERATION,
    UNSCHEDULABLE_TAINT,
    DaemonSet,
    ExistingNode,
    HostPort,
    Pod,
    SpreadConstraint,
    Taint,
    untolerated,
)
from nodewright.scheduling.requirements import (
    LABEL_CAPACITY_TYPE,
    LABEL_HOSTNAME,
    LABEL_INSTANCE_TYPE,
    LABEL_NODEPOOL,
    LABEL_PARTITION,
    LABEL_ZONE,
    LABEL_ZONE_ID,
    Requirement,
    Requirements,
)
from nodewright.scheduling.reservations import assign_reservations
from nodewright.scheduling.targets import (
    LIMIT_NODES,
    Candidate,
    ClaimTarget,
    ExistingTarget,
    Narrowed,
    PlannedNodeClaim,
    PoolState,
    ResourceIndex,
    Target,
    Vector,
    finish_claim,
    fits,
)
from nodewright.scheduling.topology import (
    ANTI_AFFINITY,
    INVERSE_ANTI_AFFINITY,
    DomainSource,
    Topology,
    TopologyGroup,
)

_MAX_RETRY_PASSES = 3
# Claims filled less than this (in their fullest resource) are re-planned on their own.
_REPLAN_BELOW_FILL = 0.8


@dataclass(frozen=True)
class SchedulingProblem:
    """The solver's input.

    `nodes` are existing (or in-flight) nodes; `bound_pods` are pods already running on
    them (their `node_name` says where). A node labelled `karpenter.sh/nodepool` counts
    its capacity (or allocatable) against that NodePool's limits, on top of the
    template's own `usage`. A cordoned node (`unschedulable`) takes no new pods, but the
    pods bound to it count toward spread and (anti-)affinity, as in Kubernetes.
    `namespaces` maps Namespace names to their labels (for affinity terms with a
    namespaceSelector); a namespace not in it has only `kubernetes.io/metadata.name`.
    """

    pods: Sequence[Pod]
    nodepools: Sequence[NodePoolTemplate]
    nodes: Sequence[ExistingNode] = ()
    bound_pods: Sequence[Pod] = ()
    daemonsets: Sequence[DaemonSet] = ()
    namespaces: Mapping[str, Mapping[str, str]] = field(default_factory=dict)


@dataclass(frozen=True)
class SchedulingResult:
    nodeclaims: tuple[PlannedNodeClaim, ...]
    existing: tuple[tuple[str, tuple[str, ...]], ...]
    unschedulable: tuple[tuple[str, str], ...]

    @property
    def hourly_cost(self) -> float:
        return sum(claim.price for claim in self.nodeclaims)

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of `nodewright plan --format json`."""
        return {
            "nodeclaims": [
                {
                    "nodepool": claim.nodepool,
                    "instanceType": claim.instance_type,
                    "instanceTypes": [name for name, _ in claim.instance_types],
                    "capacityType": claim.capacity_type,
                    "zone": claim.zone,
                    "price": claim.price,
                    "priceEstimated": claim.price_estimated,
                    "pods": list(claim.pods),
                    "why": claim.why,
                }
                for claim in self.nodeclaims
            ],
            "existing": [{"node": node, "pods": list(pods)} for node, pods in self.existing],
            "unschedulable": [{"pod": pod, "reason": reason} for pod, reason in self.unschedulable],
            "cost": {"hourly": round(self.hourly_cost, 6)},
        }


def solve(problem: SchedulingProblem, prepared: PreparedNodes | None = None,
          deadline: float | None = None) -> SchedulingResult:
    """Plan the problem. Untied pods that fit nowhere yet are packed together (`packing`).
    When no pod is tied to another (no topology, no host ports), the pods are also
    planned greedily, in the balanced and in Karpenter's plain order, and the cheapest of
    the three plans is kept: the packer wins on catalogs with many small types of
    different shapes; the greedy balanced order can win when every type has the same
    price per unit (the packer's LP is degenerate there and its rounding wastes).

    `prepared` (optional) holds the existing nodes of a larger problem this one was cut
    from by taking nodes away with their bound pods; nodes found there are not worked out
    again. The plan is the same with or without it.

    `deadline` (seconds of wall time, the operator's SOLVE_DEADLINE; None for none): past
    it the packer stops improving its plans and the greedy cross-check is skipped. Every
    pod that can be placed still is, but the plan then depends on the machine's speed and
    load, so the simulator never sets one."""
    due = None if deadline is None else time.monotonic() + deadline
    setup = _Setup(problem, prepared)
    solver = _Solver(problem, setup=setup, due=due)
    result = _with_reservations(solver.run(balanced=True), problem)
    if solver.all_free and len(problem.pods) > 1:
        for balanced in (True, False):
            if due is not None and time.monotonic() >= due:
                break
            greedy = _Solver(problem, pack_free=False, setup=setup, due=due,
                             cutoff=result.hourly_cost).run(balanced=balanced)
            greedy = _with_reservations(greedy, problem)
            if greedy.hourly_cost < result.hourly_cost - 1e-9:
                result = greedy
    return result


def _with_reservations(result: SchedulingResult, problem: SchedulingProblem
                       ) -> SchedulingResult:
    """The plan with capacity reservations counted (`reservations`); the same plan when
    no reservation takes part."""
    claims, failed = assign_reservations(result.nodeclaims, problem.nodepools)
    if not failed and len(claims) == len(result.nodeclaims) and all(
            a is b for a, b in zip(claims, result.nodeclaims, strict=True)):
        return result
    unschedulable = tuple(sorted((*result.unschedulable, *failed)))
    return replace(result, nodeclaims=tuple(claims), unschedulable=unschedulable)


def _tail_problem(claim: PlannedNodeClaim, pool: PoolState, problem: SchedulingProblem,
                  pods: Sequence[Pod]) -> SchedulingProblem:
    requirements = Requirements(
        r for key, r in claim.requirements.items() if key != LABEL_HOSTNAME
    )
    template = replace(pool.template, requirements=requirements, limits=None, usage={})
    return SchedulingProblem(pods=pods, nodepools=[template], daemonsets=problem.daemonsets)


# ---------------------------------------------------------------------------------------
# Preferences


def ignore_preferences(pod: Pod) -> Pod:
    """PREFERENCE_POLICY=Ignore: the pod without preferred node or pod (anti-)affinity and
    without ScheduleAnyway spread constraints, as Karpenter's scheduler builds it then."""
    spread = tuple(c for c in pod.spread if c.when_unsatisfiable != "ScheduleAnyway")
    if not (pod.preferred_terms or pod.preferred_pod_affinity
            or pod.preferred_pod_anti_affinity or len(spread) != len(pod.spread)):
        return pod
    return replace(pod, preferred_terms=(), preferred_pod_affinity=(),
                   preferred_pod_anti_affinity=(), spread=spread)


def relax(pod: Pod) -> Pod | None:
    """The pod with its next preference dropped, or None when nothing is left to relax.

    Order: other volume topology alternatives, other required node-affinity terms,
    preferred pod affinity, preferred pod anti-affinity, preferred node affinity
    (heaviest first), ScheduleAnyway spread constraints, and last a toleration for
    PreferNoSchedule taints.
    """
    if len(pod.volume_requirements) > 1:
        return replace(pod, volume_requirements=pod.volume_requirements[1:])
    if len(pod.required_terms) > 1:
        return replace(pod, required_terms=pod.required_terms[1:])
    if pod.preferred_pod_affinity:
        return replace(pod, preferred_pod_affinity=pod.preferred_pod_affinity[1:])
    if pod.preferred_pod_anti_affinity:
        return replace(pod, preferred_pod_anti_affinity=pod.preferred_pod_anti_affinity[1:])
    if pod.preferred_terms:
        return replace(pod, preferred_terms=pod.preferred_terms[1:])
    for index, constraint in enumerate(pod.spread):
        if constraint.when_unsatisfiable == "ScheduleAnyway":
            return replace(pod, spread=pod.spread[:index] + pod.spread[index + 1 :])
    prefer = Taint("", "", "PreferNoSchedule")
    if not any(t.tolerates(prefer) and not t.key for t in pod.tolerations):
        return replace(pod, tolerations=(*pod.tolerations, PREFER_NO_SCHEDULE_TOLERATION))
    return None


# ---------------------------------------------------------------------------------------


def _signature(pod: Pod) -> tuple[object, ...]:
    return (
        pod.namespace,
        tuple(sorted(pod.labels.items())),
        tuple(sorted(pod.requests.items())),
        tuple(sorted(pod.node_selector.items())),
        pod.required_terms,
        pod.preferred_terms,
        pod.tolerations,
        pod.pod_affinity,
        pod.pod_anti_affinity,
        pod.preferred_pod_affinity,
        pod.preferred_pod_anti_affinity,
        pod.spread,
        pod.host_ports,
        pod.volume_requirements,
    )


@dataclass
class _PodContext:
    """What the solver works out once per distinct pod shape."""

    signature: tuple[object, ...]
    requirements: Requirements
    vector: Vector
    owned: list[tuple[TopologyGroup, SpreadConstraint | None]]
    spread_free: bool
    needs_company: bool
    open_targets: dict[int, None] = field(default_factory=dict)
    seen_targets: int = 0


class _Rejection:
    __slots__ = ("permanent", "reason")

    def __init__(self, reason: str, permanent: bool) -> None:
        self.reason = reason
        self.permanent = permanent


@dataclass
class _Change:
    """An accepted placement, not yet applied."""

    requirements: Requirements | None = None
    candidates: Narrowed | None = None
    need: Vector = ()
    grew_by_efficiency: bool = False


@dataclass
class _PoolSetup:
    template: NodePoolTemplate
    requirements: Requirements
    candidates: list[Candidate]
    zero: Vector
    remaining: dict[str, int] | None
    source: DomainSource
    domains: list[tuple[str, str]]
    # The DaemonSets of each type, by type name, where some hold host ports.
    daemon_ports: Mapping[str, DaemonLoad] = field(default_factory=dict)
    # Types left out because the DaemonSets that run on them take more than they hold.
    overfilled: int = 0
    # PoolState.candidates_for's answers, shared by every solver of this pool setup.
    filter_cache: dict[Requirements, list[Candidate]] = field(default_factory=dict)


@dataclass
class _NodeUsage:
    """An existing node with what its bound pods and DaemonSets take, in any resources."""

    node: ExistingNode
    taints: tuple[Taint, ...]
    source: DomainSource
    running: list[Pod]
    requested: dict[str, int]  # bound pods and the DaemonSets that will run there
    host_ports: list[HostPort]
    names: frozenset[str]  # the resources its bound pods request


def _node_usage(node: ExistingNode, running: list[Pod],
                daemonsets: Sequence[DaemonSet]) -> _NodeUsage:
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
    return _NodeUsage(
        node=node,
        taints=taints,
        source=DomainSource(taints, labels=tuple(sorted(node.labels.items()))),
        running=running,
        requested=requested,
        host_ports=[port for pod in running for port in pod.host_ports] + daemon_ports,
        names=frozenset(name for pod in running for name in pod.requests),
    )


def _bound_by_node(problem: SchedulingProblem) -> dict[str, list[Pod]]:
    bound: dict[str, list[Pod]] = {}
    for pod in problem.bound_pods:
        if pod.node_name is not None:
            bound.setdefault(pod.node_name, []).append(pod)
    return bound


class PreparedNodes:
    """The existing nodes of a problem with their usage, worked out once for solving
    problems cut from it by taking some nodes away with their bound pods (a disruption
    pass simulates each candidate's removal that way)."""

    def __init__(self, problem: SchedulingProblem) -> None:
        self.daemonsets = problem.daemonsets
        # NodePool setups, shared by the solves of the problems cut from this one (their
        # templates and DaemonSets are these).
        self.pool_memo: dict[tuple[object, ...], tuple[object, _PoolSetup]] = {}
        bound = _bound_by_node(problem)
        self.by_name = {
            node.name: _node_usage(node, bound.get(node.name, []), problem.daemonsets)
            for node in problem.nodes
        }

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


class _Setup:
    """What every solver of one problem builds alike (resource slots, each NodePool's
    compatible types and limits, each existing node's usage), built once and shared by
    the plans `solve` compares. Solvers only read it."""

    def __init__(self, problem: SchedulingProblem, prepared: PreparedNodes | None = None,
                 pool_memo: dict[tuple[object, ...], tuple[object, _PoolSetup]] | None = None
                 ) -> None:
        self.problem = problem
        # NodePool setups by template, kept across the re-plans of one solve's NodeClaims
        # (`_Solver._finish`): each would filter the whole catalog again.
        self.tail_pools: dict[tuple[object, ...], tuple[object, _PoolSetup]] = {}
        self.prepared = prepared if prepared is not None and prepared.usable_for(problem) else None
        if pool_memo is None and self.prepared is not None:
            pool_memo = self.prepared.pool_memo
        self.pool_memo = pool_memo
        names = {CPU, MEMORY, PODS}
        if self.prepared is not None:
            for pod in chain(problem.pods, (d.pod for d in problem.daemonsets)):
                names.update(pod.requests)
            for node in problem.nodes:
                names.update(self.prepared.by_name[node.name].names)
        else:
            for pod in chain(problem.pods, problem.bound_pods,
                             (d.pod for d in problem.daemonsets)):
                names.update(pod.requests)
        self.index = ResourceIndex(sorted(names))
        # Registering a pod without spread or (anti-)affinity terms creates no group.
        self.tied = [
            pod for pod in chain(problem.pods, problem.bound_pods)
            if pod.spread or pod.pod_affinity or pod.preferred_pod_affinity
            or pod.pod_anti_affinity or pod.preferred_pod_anti_affinity
        ]
        self._pools: list[_PoolSetup] | None = None
        self._nodes: list[_NodeSetup] | None = None
        # The growth rule's memo (best price per unit of a mix, per NodePool): the same
        # for every solver of this setup (its pools are this setup's).
        self.growth = GrowthJudge()

    @property
    def pools(self) -> list[_PoolSetup]:
        if self._pools is None:
            self._pools = [
                self._memoised_pool(t)
                for t in sorted(self.problem.nodepools, key=_pool_order, reverse=True)
            ]
        return self._pools

    def _memoised_pool(self, template: NodePoolTemplate) -> _PoolSetup:
        """A pool's setup depends on its template, the DaemonSets and the resource names,
        except the room its limits leave, which depends on the existing nodes and is worked
        out for each problem. The memo is shared by the re-plans of one solve and by the
        disruption simulations cut from one problem (`PreparedNodes`)."""
        if self.pool_memo is None:
            return self._pool(template)
        key = (template.name, template.requirements, template.taints, self.index.names,
               id(template.instance_types), id(self.problem.daemonsets))
        found = self.pool_memo.get(key)
        kept = found[0] if found is not None else None
        if not (isinstance(kept, tuple) and kept[0] is template.instance_types
                and kept[1] is self.problem.daemonsets):
            # What the ids name is kept in the value, so that no id is reused while cached.
            found = ((template.instance_types, self.problem.daemonsets), self._pool(template))
            self.pool_memo[key] = found
        assert found is not None
        if template.limits is None:
            return found[1]
        return replace(found[1], remaining=self._remaining(template),
                       filter_cache=found[1].filter_cache)

    @property
    def nodes(self) -> list[_NodeSetup]:
        if self._nodes is None:
            self._nodes = self._existing_nodes()
        return self._nodes

    def _pool(self, template: NodePoolTemplate) -> _PoolSetup:
        requirements = template.requirements.copy()
        priced = [
            (it, price)
            for it in template.instance_types
            if labels_compatible(it, requirements)
            and (price := cheapest_price(it, requirements)) is not None
        ]
        # Each type's room is what is left after the DaemonSets that run on it (Karpenter's
        # daemon overhead groups); a type they overfill can hold no pod.
        loads = daemon_loads(template, [it for it, _ in priced], self.problem.daemonsets)
        base = []
        overfilled = 0
        for it, price in priced:
            overhead = self.index.vector(loads[it.name].requests)
            room = tuple(a - o for a, o in zip(self.index.vector(it.allocatable), overhead,
                                              strict=True))
            if min(room, default=0) >= 0:
                base.append(Candidate(it, room, price, overhead))
            else:
                overfilled += 1
        # Make zone, zone id, capacity type and partition finite so that topology can pick
        # among them (the domains come from the offerings; zone ids only where the catalog
        # knows them, partitions only for a partition placement group).
        for key in (LABEL_ZONE, LABEL_CAPACITY_TYPE, LABEL_ZONE_ID, LABEL_PARTITION):
            offered = {
                value
                for value in offering_values([c.instance_type for c in base], key)
                if key not in requirements or requirements[key].has(value)
            }
            if key in (LABEL_ZONE_ID, LABEL_PARTITION) and not offered and key not in requirements:
                continue
            requirements.add(Requirement(key, False, frozenset(offered)))
        base.sort(key=lambda c: (c.price, c.instance_type.name))
        domains = [
            (key, value)
            for key, requirement in requirements.items() if not requirement.complement
            for value in requirement.values
        ]
        ports = {c.instance_type.name: loads[c.instance_type.name] for c in base
                 if loads[c.instance_type.name].host_ports}
        return _PoolSetup(template, requirements, base, self.index.vector({}),
                          self._remaining(template),
                          DomainSource(template.taints, requirements=requirements), domains,
                          ports, overfilled=overfilled)

    def _remaining(self, template: NodePoolTemplate) -> dict[str, int] | None:
        """The room the NodePool's limits leave beside its existing nodes (None: no limits)."""
        if template.limits is None:
            return None
        usage = dict(template.usage)
        for node in self.problem.nodes:
            if node.labels.get(LABEL_NODEPOOL) == template.name:
                for name, amount in (node.capacity or node.allocatable or {}).items():
                    usage[name] = usage.get(name, 0) + amount
                usage[LIMIT_NODES] = usage.get(LIMIT_NODES, 0) + 1000
        return {name: limit - usage.get(name, 0) for name, limit in sorted(template.limits.items())}

    def _existing_nodes(self) -> list[_NodeSetup]:
        if self.prepared is not None:
            usages = [self.prepared.by_name[node.name] for node in self.problem.nodes]
        else:
            bound = _bound_by_node(self.problem)
            usages = [_node_usage(node, bound.get(node.name, []), self.problem.daemonsets)
                      for node in self.problem.nodes]
        return [
            _NodeSetup(usage, self.index.vector(usage.requested),
                       self.index.vector(usage.node.allocatable or {}))
            for usage in sorted(usages, key=lambda u: u.node.name)
        ]


@dataclass
class _NodeSetup:
    usage: _NodeUsage
    used: Vector
    allocatable: Vector


class _Solver:
    def __init__(
        self,
        problem: SchedulingProblem,
        efficient_growth: bool = True,
        pack_free: bool = True,
        setup: _Setup | None = None,
        due: float | None = None,
        cutoff: float | None = None,
    ) -> None:
        self.problem = problem
        # When the operator's deadline passes (time.monotonic()), or None.
        self.due = due
        # The cost of the plan this one is compared with: when this plan provably cannot
        # cost less, its NodeClaims are not re-planned (`_result`).
        self.cutoff = cutoff
        self.efficient_growth = efficient_growth
        self.pack_free = pack_free
        self.all_free = False
        setup = setup if setup is not None else _Setup(problem)
        self.index = setup.index
        self.topology = Topology(problem.namespaces)
        self.targets: list[Target] = []
        self.contexts: dict[tuple[object, ...], _PodContext] = {}
        self.claim_count = 0
        self.standalone: dict[tuple[str, tuple[object, ...]], float] = {}
        self._efficiency = setup.growth
        self.tail_pools = setup.tail_pools
        for pod in setup.tied:
            self.topology.register(pod)
        self.pools = [self._pool(pool) for pool in setup.pools]
        self._add_existing_nodes(setup.nodes)

    # -- setup ---------------------------------------------------------------------------

    def _pool(self, setup: _PoolSetup) -> PoolState:
        for key, value in setup.domains:
            self.topology.add_domain(key, value, setup.source)
        remaining = dict(setup.remaining) if setup.remaining is not None else None
        pool = PoolState(setup.template, setup.requirements, setup.candidates,
                         setup.zero, remaining, filter_cache=setup.filter_cache,
                         daemon_ports=setup.daemon_ports, overfilled=setup.overfilled)
        # Topology on a label the NodePool leaves open (kubernetes.io/arch, an instance
        # family, ...): its domains are the values the pool's instance types carry, as
        # Karpenter's topology domain groups take them from the instance types.
        for key in sorted({group.topology_key for group in self.topology.groups}):
            requirement = setup.requirements.get(key)
            if key == LABEL_HOSTNAME or (requirement is not None and not requirement.complement):
                continue
            for value in pool.label_values(pool.candidates, 0, key) or ():
                if requirement is None or requirement.has(value):
                    self.topology.add_domain(key, value, setup.source)
        return pool

    def _add_existing_nodes(self, nodes: Sequence[_NodeSetup]) -> None:
        # Without any topology group a bound pod counts toward nothing.
        counted = bool(self.topology.groups)
        # Initialized nodes are tried first (Karpenter's sortExistingNodes).
        for setup in sorted(nodes, key=lambda s: not s.usage.node.initialized):
            usage = setup.usage
            node = usage.node
            self.topology.add_node_domains(node.labels, usage.source)
            if node.unschedulable:
                # No new pods, but its pods count toward spread and (anti-)affinity.
                cordoned = ExistingTarget(node.name, usage.taints, (), labels=node.labels)
                for pod in usage.running if counted else ():
                    self._record(cordoned, pod)
                continue
            target = ExistingTarget(
                hostname=node.name,
                taints=usage.taints,
                used=setup.used,
                labels=node.labels,
                allocatable=setup.allocatable,
                volume_limits=node.volume_limits,
            )
            target.host_ports.extend(usage.host_ports)
            for pod in usage.running:
                target.add_volumes(pod)
            for pod in usage.running if counted else ():
                self._record(target, pod)
            self.targets.append(target)

    # -- main loop -----------------------------------------------------------------------

    def run(self, balanced: bool = True) -> SchedulingResult:
        # Pods with topology ties go first in Karpenter's order; pods nothing ties to any
        # other follow, ordered so that cpu-heavy and memory-heavy ones alternate and each
        # NodeClaim they fill ends up with a balanced mix.
        constrained: list[Pod] = []
        free: list[Pod] = []
        for pod in sorted(self.problem.pods, key=_pod_order):
            (free if self._is_free(pod) else constrained).append(pod)
        self.all_free = not constrained
        failures: dict[str, str] = {}
        pending = []
        for pod in constrained:
            reason = self._schedule(pod)
            if reason is not None:
                failures[pod.key] = reason
                pending.append(pod)
        free = balanced_order(free) if balanced else free
        if self.pack_free and free:
            free = self._pack(free)
        for pod in free:
            reason = self._schedule(pod)
            if reason is not None:
                failures[pod.key] = reason
                pending.append(pod)
        # Topology counts move as other pods land: retry the leftovers while that helps.
        for _ in range(_MAX_RETRY_PASSES):
            if not pending:
                break
            still = []
            for pod in pending:
                reason = self._schedule(pod)
                if reason is None:
                    del failures[pod.key]
                else:
                    failures[pod.key] = reason
                    still.append(pod)
            if len(still) == len(pending):
                break
            pending = still
        return self._result(failures)

    def _is_free(self, pod: Pod) -> bool:
        """No topology group involves the pod and it has no host ports."""
        context = self._context(pod)
        return (
            context.spread_free
            and not context.needs_company
            and not pod.host_ports
            and not self.topology.selecting_groups(pod)
        )

    def _schedule(self, pod: Pod) -> str | None:
        current: Pod | None = pod
        reason: str | None = None
        while current is not None:
            reason = self._place(current)
            if reason is None:
                return None
            current = relax(current)
        return reason

    def _context(self, pod: Pod) -> _PodContext:
        signature = _signature(pod)
        context = self.contexts.get(signature)
        if context is None:
            owned = self.topology.owned_groups(pod)
            context = _PodContext(
                signature=signature,
                requirements=pod.node_requirements(),
                vector=self.index.vector(pod.requests),
                owned=owned,
                spread_free=not owned,
                needs_company=bool(pod.pod_affinity or pod.preferred_pod_affinity),
            )
            self.contexts[signature] = context
        return context

    def _place(self, pod: Pod) -> str | None:
        if self._place_on_targets(pod):
            return None
        context = self._context(pod)
        reasons: list[tuple[str, str, bool]] = []
        for pool in self.pools:
            claim_or_reason = self._open_claim(pool, pod, context)
            if isinstance(claim_or_reason, ClaimTarget):
                return None
            reason, is_requirement = claim_or_reason
            reasons.append((pool.name, reason, is_requirement))
        return _explain(pod, reasons)

    def _place_on_targets(self, pod: Pod) -> bool:
        """Place the pod on an existing node or a NodeClaim opened so far, if one takes it."""
        context = self._context(pod)
        # Targets this pod shape has not found permanently closed, in the order they opened.
        open_targets = context.open_targets
        for position in range(context.seen_targets, len(self.targets)):
            open_targets[position] = None
        context.seen_targets = len(self.targets)
        closed: list[int] = []
        placed = False
        for position in open_targets:
            target = self.targets[position]
            outcome = self._try(target, pod, context)
            if isinstance(outcome, _Change):
                self._apply(target, pod, context, outcome)
                placed = True
                break
            if outcome.permanent:
                closed.append(position)
        for position in closed:
            del open_targets[position]
        return placed

    # -- packing the pods nothing ties -----------------------------------------------------

    def _pack(self, free: list[Pod]) -> list[Pod]:
        """Place free pods: on existing nodes and the NodeClaims opened so far first (as the
        greedy loop would), then the rest, per NodePool and node requirements, as one
        cutting-stock problem (`packing`). Returns the pods left for the greedy loop."""
        left: list[Pod] = []
        groups: dict[tuple[int, Requirements], list[Pod]] = {}
        for pod in free:
            if self._place_on_targets(pod):
                continue
            index = self._pool_for(pod)
            if index is None:
                left.append(pod)
                continue
            groups.setdefault((index, self._context(pod).requirements), []).append(pod)
        for (index, requirements), pods in groups.items():
            left.extend(self._pack_group(self.pools[index], requirements, pods))
        return left

    def _pool_for(self, pod: Pod) -> int | None:
        """The NodePool the greedy loop would open a NodeClaim in for this pod, when the
        packer may plan it (no minValues); None leaves the pod to the loop. Limits are
        checked as the planned NodeClaims open (`_open_claim`)."""
        context = self._context(pod)
        for index, pool in enumerate(self.pools):
            if untolerated(pool.template.taints, pod.tolerations) is not None:
                continue
            if pool.requirements.conflict(context.requirements) is not None:
                continue
            if self._standalone_price(pool, context) == float("inf"):
                continue
            if any(r.min_values is not None for r in pool.requirements.values()):
                return None
            return index
        return None

    def _pack_group(
        self, pool: PoolState, requirements: Requirements, pods: list[Pod]
    ) -> list[Pod]:
        candidates = pool.candidates_for(pool.requirements.merged(requirements))
        bins = [BinType(key, candidate.price, candidate.allocatable)
                for key, candidate in enumerate(candidates)]
        by_shape: dict[Vector, list[Pod]] = {}
        for pod in pods:
            by_shape.setdefault(self._context(pod).vector, []).append(pod)
        shapes = list(by_shape)
        budget = Budget(deadline=None if self.due is None
                        else max(0.0, self.due - time.monotonic()))
        plan, _ = pack(shapes, [len(by_shape[shape]) for shape in shapes], bins, budget)
        taken = dict.fromkeys(shapes, 0)
        left: list[Pod] = []
        for node in plan:
            members = []
            for shape, count in zip(shapes, node.counts, strict=True):
                members.extend(by_shape[shape][taken[shape] : taken[shape] + count])
                taken[shape] += count
            left.extend(self._open_packed(pool, members, node, len(pods)))
        for shape in shapes:
            left.extend(by_shape[shape][taken[shape] :])
        return left

    def _open_packed(self, pool: PoolState, members: list[Pod], node: Packed, total: int
                     ) -> list[Pod]:
        """Open one NodeClaim for a packed node's pods; returns those it could not hold."""
        first = members[0]
        claim = self._open_claim(pool, first, self._context(first))
        if not isinstance(claim, ClaimTarget):
            return members
        left = []
        for pod in members[1:]:
            context = self._context(pod)
            outcome = self._try(claim, pod, context, planned=True)
            if isinstance(outcome, _Rejection):
                left.append(pod)
                continue
            self._apply(claim, pod, context, outcome)
        claim.why = (
            f"packed: {len(members) - len(left)} of {total} untied pods planned together; "
            f"the LP values them at {node.worth:.0%} of the type's price"
        )
        return left

    # -- checks --------------------------------------------------------------------------

    def _try(
        self, target: Target, pod: Pod, context: _PodContext, planned: bool = False
    ) -> _Change | _Rejection:
        taint = untolerated(target.taints, pod.tolerations)
        if taint is not None:
            return _Rejection(f"taint {taint.describe()} is not tolerated", True)
        if pod.host_ports and target.port_conflict(pod) is not None:
            return _Rejection("host port already in use", True)
        if isinstance(target, ExistingTarget):
            if not context.requirements.satisfied_by_labels(target.labels):
                return _Rejection("node labels do not match", True)
            if pod.volumes and target.volume_limits:
                too_many = target.volume_limit_reason(pod)
                if too_many is not None:
                    return _Rejection(too_many, True)
            extra = self._topology_requirements(target, pod, context)
            if isinstance(extra, _Rejection):
                return extra
            need = self.index.add(target.used, context.vector)
            if not fits(need, target.allocatable):
                return _Rejection("node is full", True)
            return _Change(need=need)
        assert isinstance(target, ClaimTarget)
        if not fits(self.index.add(target.used, context.vector), target.max_allocatable):
            return _Rejection("no instance type has room", True)
        conflict = target.requirements.conflict(context.requirements)
        if conflict is not None:
            return _Rejection(conflict, True)
        extra = self._topology_requirements(target, pod, context)
        if isinstance(extra, _Rejection):
            return extra
        if pod.host_ports and target.pool is not None and target.pool.daemon_ports:
            blocked = target.pool.port_blocked_types(pod)
            if blocked:
                left = target.candidates[target.start:]
                if all(c.instance_type.name in blocked for c in left):
                    taken = target.pool.daemon_ports[left[0].instance_type.name].port_conflict(
                        pod.host_ports) if left else None
                    port = f" {taken.port}/{taken.protocol}" if taken is not None else ""
                    return _Rejection(f"host port{port} is taken by a DaemonSet's pod", True)
                extra = [*extra, Requirement(LABEL_INSTANCE_TYPE, True, blocked)]
        merged, changed = self._merge(target, context, extra)
        need = self.index.add(target.used, context.vector)
        kept, why = target.narrow(merged, changed, need)
        if kept is None:
            return _Rejection(why or "does not fit", not extra)
        by_efficiency = False
        if target.pods and not context.needs_company and target.pool is not None and not planned:
            growth = kept.cheapest.price - target.cheapest.price
            if growth > self._standalone_price(target.pool, context) + 1e-9:
                by_efficiency = self.efficient_growth and self._efficiency.worth_growing(
                    target.pool, kept, need
                )
                if not by_efficiency:
                    return _Rejection("growing this node costs more than a new one", True)
        return _Change(merged if changed else None, kept, need, by_efficiency)

    def _standalone_price(self, pool: PoolState, context: _PodContext) -> float:
        """What the cheapest node of this pool holding just this pod would cost."""
        key = (pool.name, context.signature)
        price = self.standalone.get(key)
        if price is None:
            need = context.vector
            fitting = (
                c.price
                for c in pool.candidates_for(pool.requirements.merged(context.requirements))
                if fits(need, c.allocatable)
            )
            price = next(fitting, float("inf"))
            self.standalone[key] = price
        return price

    def _merge(
        self, claim: ClaimTarget, context: _PodContext, extra: list[Requirement]
    ) -> tuple[Requirements, bool]:
        cache_key = (context.signature, tuple(extra))
        cached = claim.merge_cache.get(cache_key)
        if cached is not None:
            return cached
        merged = claim.requirements
        changed = False
        for requirement in chain(context.requirements.values(), extra):
            have = merged.get(requirement.key)
            narrowed = requirement if have is None else have.intersection(requirement)
            if narrowed != have:
                if not changed:
                    merged = merged.copy()
                    changed = True
                merged.add(requirement)
        claim.merge_cache[cache_key] = (merged, changed)
        return merged, changed

    def _topology_requirements(
        self, target: Target, pod: Pod, context: _PodContext
    ) -> list[Requirement] | _Rejection:
        groups: Iterable[tuple[TopologyGroup, SpreadConstraint | None]] = context.owned
        inverse = self.topology.inverse_groups(pod)
        if inverse:
            groups = chain(groups, ((g, None) for g in inverse))
        extra: list[Requirement] = []
        for group, constraint in groups:
            key = group.topology_key
            if isinstance(target, ExistingTarget):
                node_domains = target.domains(key)
            else:
                assert isinstance(target, ClaimTarget)
                node_domains = target.domains(key, sorted(self.topology.domains(key)))
            kind = group.key.kind
            if not node_domains:
                if kind in (ANTI_AFFINITY, INVERSE_ANTI_AFFINITY):
                    continue
                return _Rejection(f"{group.describe()}: the node has no {key} label", True)
            allowed = self.topology.allowed_domains(
                group, constraint, pod, node_domains, context.requirements.get(key)
            )
            if not allowed:
                permanent = key == LABEL_HOSTNAME and kind != "affinity"
                return _Rejection(f"{group.describe()} allows no domain here", permanent)
            if (isinstance(target, ClaimTarget) and len(allowed) < len(node_domains)) or (
                isinstance(target, ClaimTarget) and key not in target.requirements
            ):
                extra.append(Requirement(key, False, frozenset(allowed)))
        return extra

    # -- applying ------------------------------------------------------------------------

    def _apply(self, target: Target, pod: Pod, context: _PodContext, change: _Change) -> None:
        target.pods.append(pod)
        target.used = change.need
        target.host_ports.extend(pod.host_ports)
        if isinstance(target, ExistingTarget) and pod.volumes:
            target.add_volumes(pod)
        if isinstance(target, ClaimTarget):
            target.grew_by_efficiency |= change.grew_by_efficiency
            if change.requirements is not None:
                target.set_requirements(change.requirements)
            if change.candidates is not None:
                target.set_candidates(change.candidates.candidates, change.candidates.start)
            if change.requirements is not None and target.unrecorded:
                self._flush_unrecorded(target)
        self._record(target, pod)

    def _domains_of(self, target: Target, key: str) -> list[str]:
        if isinstance(target, ExistingTarget):
            return target.domains(key)
        assert isinstance(target, ClaimTarget)
        return target.domains(key, sorted(self.topology.domains(key)))

    def _counts_on(self, group: TopologyGroup, target: Target) -> bool:
        if group.key.node_filter is None:
            return True
        if isinstance(target, ExistingTarget):
            return group.counts_node(target.labels, target.taints)
        assert isinstance(target, ClaimTarget)
        return group.counts_claim(target.requirements, target.taints)

    def _record(self, target: Target, pod: Pod) -> None:
        for group in self.topology.counting_groups(pod):
            domains = self._domains_of(target, group.topology_key)
            if len(domains) == 1 and not self._counts_on(group, target):
                continue
            if group.key.kind == ANTI_AFFINITY or len(domains) == 1:
                group.record(domains)
            elif domains:
                target.unrecorded.append((group, pod))
        for group in self.topology.owner_inverse_groups(pod):
            group.record(self._domains_of(target, group.topology_key))

    def _flush_unrecorded(self, claim: ClaimTarget) -> None:
        waiting = []
        for group, pod in claim.unrecorded:
            domains = self._domains_of(claim, group.topology_key)
            if len(domains) == 1:
                if self._counts_on(group, claim):
                    group.record(domains)
            else:
                waiting.append((group, pod))
        claim.unrecorded = waiting

    def _open_claim(
        self, pool: PoolState, pod: Pod, context: _PodContext
    ) -> ClaimTarget | tuple[str, bool]:
        taint = untolerated(pool.template.taints, pod.tolerations)
        if taint is not None:
            return f"taint {taint.describe()} is not tolerated", False
        conflict = pool.requirements.conflict(context.requirements)
        if conflict is not None:
            return conflict, True
        if not pool.candidates:
            if pool.overfilled:
                return ("the DaemonSets that would run on its nodes take more than any "
                        "instance type holds"), False
            return "no instance type satisfies the NodePool's requirements", False
        hostname = f"{pool.name}-{self.claim_count + 1}"
        requirements = pool.requirements.copy()
        requirements.add(Requirement.single(LABEL_HOSTNAME, hostname))
        candidates = (
            pool.candidates
            if pool.remaining is None
            else [c for c in pool.candidates if pool.within_limits(c.instance_type)]
        )
        if not candidates:
            return _limits_reason(pool), False
        claim = ClaimTarget(
            hostname=hostname,
            taints=pool.template.taints,
            used=pool.zero,
            pool=pool,
            requirements=requirements,
        )
        claim.set_candidates(candidates)
        outcome = self._try(claim, pod, context)
        if isinstance(outcome, _Rejection):
            if outcome.reason == "no instance type has room":
                return self._resource_reason(pool, claim, context), False
            return outcome.reason, False
        self.claim_count += 1
        claim.committed = True
        if outcome.candidates is not None:
            claim.set_candidates(outcome.candidates.candidates, outcome.candidates.start)
        outcome.candidates = None
        self.targets.append(claim)
        self._apply(claim, pod, context, outcome)
        return claim

    def _resource_reason(self, pool: PoolState, claim: ClaimTarget, context: _PodContext) -> str:
        need = self.index.add(claim.used, context.vector)
        compatible = pool.candidates_for(claim.requirements.merged(context.requirements))
        if not compatible:
            return "no instance type satisfies the combined requirements"
        names = self.index.names
        for slot, name in enumerate(names):
            roomiest = max(compatible, key=lambda c: c.allocatable[slot])
            if need[slot] > roomiest.allocatable[slot]:
                amount = format_quantity(context.vector[slot], name)
                overhead = roomiest.overhead[slot] if roomiest.overhead else 0
                largest = roomiest.allocatable[slot] + overhead
                detail = f"; DaemonSets take {format_quantity(overhead, name)}" if overhead else ""
                return (
                    f"no instance type has {amount} {name} allocatable "
                    f"(largest: {format_quantity(largest, name)}{detail})"
                )
        if any(fits(need, c.allocatable) for c in compatible):
            return _limits_reason(pool)
        wanted = ", ".join(
            f"{name} {format_quantity(context.vector[i], name)}"
            for i, name in enumerate(names)
            if context.vector[i] and name != PODS
        )
        return f"no single instance type has {wanted} allocatable together"

    # -- result --------------------------------------------------------------------------

    def _result(self, failures: Mapping[str, str]) -> SchedulingResult:
        claims: list[PlannedNodeClaim] = []
        finished = [(t, finish_claim(t)) for t in self.targets if isinstance(t, ClaimTarget)]
        if self.cutoff is not None and self._at_least(finished) >= self.cutoff - 1e-9:
            # Re-plans only lower a claim's price, and not below `_replan_floor`: this plan
            # cannot beat the cutoff, so its re-plans would be wasted.
            claims = [planned for _, planned in finished]
        else:
            for target, planned in finished:
                claims.extend(self._finish(target, planned))
        existing = tuple(
            (t.hostname, tuple(p.key for p in t.pods if p.node_name is None))
            for t in self.targets
            if isinstance(t, ExistingTarget)
        )
        existing = tuple(item for item in existing if item[1])
        unschedulable = tuple(sorted(failures.items()))
        return SchedulingResult(tuple(claims), existing, unschedulable)

    def _replannable(self, claim: ClaimTarget) -> bool:
        pool = claim.pool
        return not (
            not self.efficient_growth
            or pool is None
            or pool.remaining is not None
            or not claim.grew_by_efficiency
            or _fill(claim) >= _REPLAN_BELOW_FILL
            or not all(self._is_free(pod) for pod in claim.pods)
        )

    def _at_least(self, finished: Sequence[tuple[ClaimTarget, PlannedNodeClaim]]) -> float:
        """A lower bound on the plan's cost once `_finish` has re-planned its claims."""
        total = 0.0
        for claim, planned in finished:
            if self._replannable(claim):
                total += min(planned.price, self._replan_floor(claim))
            else:
                total += planned.price
        return total

    def _replan_floor(self, claim: ClaimTarget) -> float:
        """No plan for the claim's pods costs less: per resource, their requests at the
        lowest price per unit of it among the NodePool's types. The re-plan's types are
        among these at no lower price; their whole allocatable is counted, as the re-plan
        may carry fewer DaemonSets (its requirements are narrower)."""
        assert claim.pool is not None
        pool = claim.pool
        need = [0] * len(pool.zero)
        for pod in claim.pods:
            for r, amount in enumerate(self._context(pod).vector):
                need[r] += amount
        floor = 0.0
        for r, amount in enumerate(need):
            if amount <= 0:
                continue
            rate = min((c.price / whole for c in pool.candidates
                        if (whole := c.allocatable[r] + (c.overhead[r] if c.overhead else 0))
                        > 0), default=0.0)
            floor = max(floor, amount * rate)
        return floor

    def _finish(self, claim: ClaimTarget, planned: PlannedNodeClaim) -> list[PlannedNodeClaim]:
        """The planned claim; a partly filled claim of free pods that grew by the efficiency
        rule is re-planned on its own with growth capped by the price of a separate node,
        and the cheaper of the two plans is kept (this trims the last, half-empty node)."""
        pool = claim.pool
        if pool is None or not self._replannable(claim):
            return [planned]
        tail = _tail_problem(planned, pool, self.problem, claim.pods)
        sub = _Solver(tail, False, setup=_Setup(tail, pool_memo=self.tail_pools),
                      due=self.due).run(False)
        if sub.unschedulable or sub.hourly_cost >= planned.price - 1e-9:
            return [planned]
        parts = []
        for index, part in enumerate(sub.nodeclaims):
            name = f"{planned.name}-{index}" if index else planned.name
            requirements = Requirements(
                r for key, r in part.requirements.items() if key != LABEL_HOSTNAME
            )
            requirements.add(Requirement.single(LABEL_HOSTNAME, name))
            parts.append(replace(part, name=name, requirements=requirements))
        return parts


def _pool_order(template: NodePoolTemplate) -> tuple[int, str]:
    """Sorted in reverse: heaviest first, and among equal weights the name that sorts last
    first (Karpenter's OrderByWeight)."""
    return (template.weight, template.name)


def _fill(claim: ClaimTarget) -> float:
    """How full the claim's cheapest type is in its fullest resource (0..1)."""
    have = claim.cheapest.allocatable
    return max(
        (used / room for used, room in zip(claim.used, have, strict=True) if room > 0),
        default=1.0,
    )


def balanced_order(pods: Sequence[Pod]) -> list[Pod]:
    """Largest first, alternating between cpu-heavy and memory-heavy pods (relative to all
    of them) so that every prefix of the order keeps about the overall cpu:memory ratio."""
    total_cpu = sum(p.requests.get(CPU, 0) for p in pods) or 1
    total_memory = sum(p.requests.get(MEMORY, 0) for p in pods) or 1

    def shares(pod: Pod) -> tuple[float, float]:
        return pod.requests.get(CPU, 0) / total_cpu, pod.requests.get(MEMORY, 0) / total_memory

    cpu_heavy = [p for p in pods if shares(p)[0] >= shares(p)[1]]
    memory_heavy = [p for p in pods if shares(p)[0] < shares(p)[1]]
    for group in (cpu_heavy, memory_heavy):
        group.sort(key=lambda p: (-max(shares(p)), _pod_order(p)))
    ordered: list[Pod] = []
    cpu_share = memory_share = 0.0
    next_cpu = next_memory = 0
    while next_cpu < len(cpu_heavy) or next_memory < len(memory_heavy):
        take_cpu = next_memory >= len(memory_heavy) or (
            next_cpu < len(cpu_heavy) and cpu_share <= memory_share
        )
        if take_cpu:
            pod = cpu_heavy[next_cpu]
            next_cpu += 1
        else:
            pod = memory_heavy[next_memory]
            next_memory += 1
        ordered.append(pod)
        cpu, memory = shares(pod)
        cpu_share += cpu
        memory_share += memory
    return ordered


def _pod_order(pod: Pod) -> tuple[int, int, str, str]:
    return (-pod.requests.get(CPU, 0), -pod.requests.get(MEMORY, 0), pod.namespace, pod.name)


def _limits_reason(pool: PoolState) -> str:
    remaining = pool.remaining or {}
    left = ", ".join(
        f"{name} {format_quantity(max(amount, 0), name)}" for name, amount in remaining.items()
    )
    return f"limits leave no room for another node (remaining: {left})"


def _explain(pod: Pod, reasons: list[tuple[str, str, bool]]) -> str:
    if not reasons:
        return "no NodePool can launch nodes"
    details = "; ".join(f'NodePool "{name}": {reason}' for name, reason, _ in reasons)
    if all(is_requirement for _, _, is_requirement in reasons):
        if pod.node_selector:
            wanted = ", ".join(f"{k}={v}" for k, v in sorted(pod.node_selector.items()))
            return f"no NodePool matches nodeSelector {wanted} ({details})"
        return f"no NodePool matches the pod's node affinity ({details})"
    return details
