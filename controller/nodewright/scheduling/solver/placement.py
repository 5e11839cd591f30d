"""Placing one pod (first fit, as Karpenter does): on an existing node or a NodeClaim opened
so far, in the order they opened, else on a new NodeClaim from the first NodePool (by
weight) that can launch one for it; a pod that fits nowhere has its preferences relaxed
one at a time (`preferences.relax`) and is tried again, and what still fits nowhere gets a
reason."""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import replace

from nodewright.api.quantity import PODS, format_quantity
from nodewright.scheduling.pods import Pod, Toleration, untolerated
from nodewright.scheduling.requirements import LABEL_HOSTNAME, Requirement
from nodewright.scheduling.reservations import with_reservations
from nodewright.scheduling.solver.context import PodContext, PodContexts, Shape
from nodewright.scheduling.solver.existing_nodes import count_existing
from nodewright.scheduling.solver.fit import NODE_FULL, FitCheck
from nodewright.scheduling.solver.open_nodes import OpenNodes
from nodewright.scheduling.solver.pools import pool_state
from nodewright.scheduling.solver.preferences import relax
from nodewright.scheduling.solver.setup import Setup
from nodewright.scheduling.solver.topology import TopologyTracker
from nodewright.scheduling.solver.verdicts import Change, Rejection
from nodewright.scheduling.targets import (
    ClaimTarget,
    ExistingTarget,
    PoolState,
    Target,
    Vector,
    fits,
)
from nodewright.scheduling.topology import Topology


class Placement:
    """One plan's targets and the placing of pods on them, one at a time."""

    # Whether a free pod refused like the one before it (same shape, no pod landed since)
    # is answered from memory (tests turn it off to compare).
    remember_refusals = True

    def __init__(self, setup: Setup, topology: Topology, efficient_growth: bool) -> None:
        self.index = setup.index
        self.topology = topology
        for pod in setup.tied:
            topology.register(pod)
        self.tracker = TopologyTracker(topology)
        self.contexts = PodContexts(topology, setup.index, setup.signatures)
        self.fit = FitCheck(setup.index, self.tracker, setup.growth, efficient_growth)
        # The packer's plans by their input, shared with the other plans (and passes).
        self.packs = setup.packs
        self.pools: list[PoolState] = []
        for pool_setup in setup.pools:
            pool = pool_state(pool_setup)
            self.tracker.add_pool_domains(pool_setup, pool)
            self.pools.append(pool)
        # Capacity reservations, counted as NodeClaims take pods (Karpenter's
        # ReservationManager); pods refused for want of one wait (`deferred`).
        self.reservations = setup.reservations.copy() if setup.reservations else None
        if self.reservations is not None:
            self.fit.reservations = self.reservations
            self.fit.strict_reservations = not setup.problem.reserved_capacity_fallback
            for pool in self.pools:
                reserving = with_reservations(c.instance_type for c in pool.candidates)
                if reserving:
                    self.fit.reserving_types[pool.name] = reserving
        self.deferred: set[str] = set()
        # Existing nodes first (initialized ones first, by name), then the NodeClaims in
        # the order they open. The existing nodes' targets are the fleet's, shared with
        # the other plans (and the other problems cut from the same prepared nodes) until
        # a pod lands on one; the positions of those this plan has copied. The nodes this
        # problem took away keep their positions (`_absent`) but take no pod.
        fleet = setup.fleet
        count_existing(fleet, setup.gone, self.tracker, setup.node_domains)
        self._fleet = fleet
        self.targets: list[Target] = [*fleet.targets]
        self._absent = setup.absent
        self._existing = len(self.targets)
        self._copied: set[int] = set()
        self.claim_count = 0
        # Per request vector and tolerations, the existing nodes such pods may still land
        # on (the others would refuse every one of them for good).
        self._open: dict[tuple[Vector, tuple[Toleration, ...]], OpenNodes] = {}
        # Why a free pod of each shape fit nowhere, and at which version of the targets
        # (one more with every pod that lands). Free pods of one shape fare alike until a
        # pod lands somewhere: a thousand pods over a NodePool's limits are refused once.
        self._version = 0
        self._refused: dict[Shape, tuple[int, str]] = {}

    def context(self, pod: Pod) -> PodContext:
        return self.contexts.of(pod)

    def is_free(self, pod: Pod) -> bool:
        """No topology group involves the pod and it has no host ports."""
        context = self.context(pod)
        return (
            context.spread_free
            and not context.needs_company
            and not pod.host_ports
            and len(pod.volume_requirements) <= 1
            and not self.topology.selecting_groups(pod)
        )

    def schedule(self, pod: Pod) -> str | None:
        """Place the pod, relaxing its preferences while it fits nowhere; None once placed,
        else why it fits nowhere."""
        shape = None
        if self.remember_refusals and self.reservations is None and self.is_free(pod):
            shape = self.context(pod).shape
            refused = self._refused.get(shape)
            if refused is not None and refused[0] == self._version:
                return refused[1]
        current: Pod | None = pod
        reason: str | None = None
        while current is not None:
            reason = self._place(current)
            if reason is None:
                return None
            if current.key in self.deferred:
                # A reservation may free up later: the pod keeps its preferences (Karpenter
                # does not relax a pod refused with a ReservedOfferingError).
                return reason
            current = relax(current)
        if shape is not None and reason is not None:
            self._refused[shape] = (self._version, reason)
        return reason

    def _place(self, pod: Pod) -> str | None:
        self.deferred.discard(pod.key)
        # A pod whose volumes allow several topologies tries each on every node in turn
        # (Karpenter's CanAdd over its VolumeRequirements), before its preferences relax.
        variants = alternatives(pod)
        if len(variants) == 1:
            if self.place_on_targets(pod):
                return None
        elif self._place_on_targets_per_node(variants):
            return None
        reasons: list[tuple[str, str, bool]] = []
        for pool in self.pools:
            why: tuple[str, bool] = ("", False)
            for variant in variants:
                claim_or_reason = self.open_claim(pool, variant, self.context(variant))
                if isinstance(claim_or_reason, ClaimTarget):
                    return None
                if isinstance(claim_or_reason, Rejection):
                    # The NodePool could launch into a reservation it cannot hold now: no
                    # lower-weight NodePool is tried (Karpenter's addToNewNodeClaim).
                    self.deferred.add(pod.key)
                    return f'NodePool "{pool.name}": {claim_or_reason.reason}'
                why = claim_or_reason
            reasons.append((pool.name, *why))
        return _explain(pod, reasons)

    def _place_on_targets_per_node(self, variants: list[Pod]) -> bool:
        """Place one of the variants on the first target (existing nodes, then NodeClaims,
        in order) that takes one of them, trying them in order on each target."""
        for position, target in enumerate(self.targets):
            if position in self._absent:
                continue
            for variant in variants:
                context = self.context(variant)
                outcome = self.fit.check(target, variant, context)
                if not isinstance(outcome, Change):
                    continue
                self._land(position, target, variant, context, outcome)
                return True
        return False

    def place_on_targets(self, pod: Pod) -> bool:
        """Place the pod on an existing node or a NodeClaim opened so far, if one takes it:
        the first in order that does (first fit).

        Each pod shape keeps the targets it has tried and not found permanently closed
        (`open_targets`) and how far it has tried (`seen_targets`: every target before is
        tried, or closed for it); those are tried first, then the rest in order. Of the
        existing nodes only those still open to the pod's request vector and tolerations
        (`OpenNodes`) are tried: every other one would reject the pod for good."""
        context = self.context(pod)
        open_targets = context.open_targets
        targets = self.targets
        closed: list[int] = []
        placed = False
        for position in open_targets:
            target = targets[position]
            outcome = self.fit.check(target, pod, context)
            if isinstance(outcome, Change):
                self._land(position, target, pod, context, outcome)
                placed = True
                break
            if outcome.permanent:
                closed.append(position)
                if outcome is NODE_FULL:
                    self._close_full(context, pod, position)
        for position in closed:
            del open_targets[position]
        if placed:
            return True
        position = context.seen_targets
        existing = self._existing
        if position < existing:
            nodes = self._open_nodes(context, pod)
            positions = nodes.positions
            index = nodes.first_from(position)
            while index < len(positions):
                refused = self._try_unseen(positions[index], pod, context)
                if refused is None:
                    return True
                if refused is NODE_FULL:
                    nodes.close(index)
                index = nodes.after(index)
            position = existing
        end = len(targets)
        while position < end:
            if self._try_unseen(position, pod, context) is None:
                return True
            position += 1
        context.seen_targets = end
        return False

    def _try_unseen(self, position: int, pod: Pod, context: PodContext) -> Rejection | None:
        """The pod tried on a target its context had not seen: None when it landed there,
        else the refusal (the target kept among the context's open ones when a later pod
        alike may still fit it)."""
        target = self.targets[position]
        outcome = self.fit.check(target, pod, context)
        if isinstance(outcome, Change):
            context.open_targets[position] = None
            context.seen_targets = position + 1
            self._land(position, target, pod, context, outcome)
            return None
        if not outcome.permanent:
            context.open_targets[position] = None
        return outcome

    def _open_nodes(self, context: PodContext, pod: Pod) -> OpenNodes:
        """The existing nodes still open to pods of the context's request vector and the
        pod's tolerations (a part of the context's signature), shared by every such shape of
        this plan."""
        nodes = context.open_nodes
        if nodes is None:
            key = (context.vector, pod.tolerations)
            nodes = self._open.get(key)
            if nodes is None:
                nodes = OpenNodes(self._fleet.open_to(*key), self._absent)
                self._open[key] = nodes
            context.open_nodes = nodes
        return nodes

    def _close_full(self, context: PodContext, pod: Pod, position: int) -> None:
        """The existing node at `position` is too full for the context's request vector."""
        nodes = self._open_nodes(context, pod)
        index = bisect_left(nodes.positions, position)
        if index < len(nodes.positions) and nodes.positions[index] == position:
            nodes.close(index)

    def _land(self, position: int, target: Target, pod: Pod, context: PodContext,
              change: Change) -> None:
        """Apply the change on the target at `position`, copying a shared existing node's
        target first."""
        if position < self._existing and position not in self._copied:
            assert isinstance(target, ExistingTarget)
            target = self.targets[position] = target.copy()
            self._copied.add(position)
        self.apply(target, pod, context, change)

    def claims(self) -> list[ClaimTarget]:
        """The NodeClaims opened, in order (every target after the existing nodes)."""
        claims = []
        for target in self.targets[self._existing:]:
            assert isinstance(target, ClaimTarget)
            claims.append(target)
        return claims

    def landed_existing(self) -> list[ExistingTarget]:
        """The existing nodes a pod landed on, in order (only those hold new pods)."""
        landed = []
        for position in sorted(self._copied):
            target = self.targets[position]
            assert isinstance(target, ExistingTarget)
            landed.append(target)
        return landed

    def apply(self, target: Target, pod: Pod, context: PodContext, change: Change) -> None:
        """Put the pod on the target as `change` says, and count it toward topology."""
        self._version += 1
        target.pods.append(pod)
        target.used = change.need
        target.host_ports.extend(pod.host_ports)
        if isinstance(target, ExistingTarget) and pod.volumes:
            target.add_volumes(pod)
        if isinstance(target, ClaimTarget):
            if change.reservations is not None and self.reservations is not None:
                self.reservations.reserve(target.hostname, change.reservations - target.held)
                self.reservations.release(target.hostname, target.held - change.reservations)
                target.held = change.reservations
                target.kept_out |= change.kept_out
            target.grew_by_efficiency |= change.grew_by_efficiency
            if change.requirements is not None:
                target.set_requirements(change.requirements)
            if change.candidates is not None:
                target.set_candidates(change.candidates.candidates, change.candidates.start)
            if change.requirements is not None and target.unrecorded:
                self.tracker.flush_unrecorded(target)
        self.tracker.record(target, pod)

    def open_claim(
        self, pool: PoolState, pod: Pod, context: PodContext
    ) -> ClaimTarget | tuple[str, bool] | Rejection:
        """A new NodeClaim of the pool holding the pod, or why there can be none (and
        whether that is the pod's requirements); a deferred Rejection when it would need a
        capacity reservation that is used up (strict mode)."""
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
        candidates = pool.candidates_within_limits()
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
        outcome = self.fit.check(claim, pod, context)
        if isinstance(outcome, Rejection):
            if outcome.deferred:
                return outcome
            if outcome.reason == "no instance type has room":
                return self._resource_reason(pool, claim, context), False
            return outcome.reason, False
        self.claim_count += 1
        claim.committed = True
        if outcome.candidates is not None:
            claim.set_candidates(outcome.candidates.candidates, outcome.candidates.start)
        outcome.candidates = None
        self.targets.append(claim)
        self.apply(claim, pod, context, outcome)
        return claim

    def _resource_reason(self, pool: PoolState, claim: ClaimTarget, context: PodContext) -> str:
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



def alternatives(pod: Pod) -> list[Pod]:
    """The pod once per topology its volumes allow (each with that one alternative)."""
    if len(pod.volume_requirements) <= 1:
        return [pod]
    return [replace(pod, volume_requirements=(alternative,))
            for alternative in pod.volume_requirements]


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
