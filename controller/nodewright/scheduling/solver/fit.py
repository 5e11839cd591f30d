"""Whether a target takes a pod, and what placing it there changes: taints, host ports,
labels or requirements, volumes, topology, room, and on a NodeClaim whether growing into a
pricier instance type is worth it (`growth`)."""

from __future__ import annotations

from itertools import chain

from nodewright.scheduling.growth import GrowthJudge
from nodewright.scheduling.pods import Pod, untolerated
from nodewright.scheduling.requirements import LABEL_INSTANCE_TYPE, Requirement, Requirements
from nodewright.scheduling.reservations import ReservationBook, outside
from nodewright.scheduling.solver.context import PodContext, Shape
from nodewright.scheduling.solver.topology import TopologyTracker
from nodewright.scheduling.solver.verdicts import Change, Rejection
from nodewright.scheduling.targets import (
    ClaimTarget,
    ExistingTarget,
    PoolState,
    ResourceIndex,
    Target,
    Vector,
    fits,
)

# An existing node without room for the pod: one instance, so that placement can tell it
# from the other permanent rejections (`Placement` remembers it per request vector).
NODE_FULL = Rejection("node is full", True)


class FitCheck:
    """One plan's checks. `efficient_growth` lets a NodeClaim grow into a type that costs
    more than a separate node for the pod when that type is among the most cost-efficient."""

    def __init__(self, index: ResourceIndex, tracker: TopologyTracker, growth: GrowthJudge,
                 efficient_growth: bool) -> None:
        self.index = index
        self.tracker = tracker
        self.growth = growth
        self.efficient_growth = efficient_growth
        # The cheapest node of a pool for one pod alone, by pool name and pod shape.
        self.standalone: dict[tuple[str, Shape], float] = {}
        # The plan's capacity reservations, the types offering some by NodePool, and
        # whether a NodeClaim that cannot hold one refuses the pod (`reservations`).
        self.reservations: ReservationBook | None = None
        self.reserving_types: dict[str, frozenset[str]] = {}
        self.strict_reservations = False

    def check(
        self, target: Target, pod: Pod, context: PodContext, planned: bool = False
    ) -> Change | Rejection:
        """`planned`: the packer chose this NodeClaim for the pod, so growing it is no
        question."""
        taint = untolerated(target.taints, pod.tolerations)
        if taint is not None:
            return Rejection(f"taint {taint.describe()} is not tolerated", True)
        if pod.host_ports and target.port_conflict(pod) is not None:
            return Rejection("host port already in use", True)
        if isinstance(target, ExistingTarget):
            return self._on_node(target, pod, context)
        assert isinstance(target, ClaimTarget)
        return self._on_claim(target, pod, context, planned)

    def _on_node(self, target: ExistingTarget, pod: Pod, context: PodContext
                 ) -> Change | Rejection:
        # Room first: it is the cheapest check, and a node too full for a pod shape stays
        # so for the rest of the solve (pods are only added), so the shape closes it for
        # good. Which permanent reason rejects a node is never shown, so the order of the
        # checks changes no placement.
        need = self.index.add(target.used, context.vector)
        if not fits(need, target.allocatable):
            return NODE_FULL
        if not context.requirements.satisfied_by_labels(target.labels):
            return Rejection("node labels do not match", True)
        if pod.volumes and target.volume_limits:
            too_many = target.volume_limit_reason(pod)
            if too_many is not None:
                return Rejection(too_many, True)
        extra = self.tracker.requirements(target, pod, context)
        if isinstance(extra, Rejection):
            return extra
        return Change(need=need)

    def _on_claim(self, target: ClaimTarget, pod: Pod, context: PodContext, planned: bool
                  ) -> Change | Rejection:
        if not fits(self.index.add(target.used, context.vector), target.max_allocatable):
            return Rejection("no instance type has room", True)
        conflict = target.requirements.conflict(context.requirements)
        if conflict is not None:
            return Rejection(conflict, True)
        extra = self.tracker.requirements(target, pod, context)
        if isinstance(extra, Rejection):
            return extra
        if pod.host_ports and target.pool is not None and target.pool.daemon_ports:
            blocked = target.pool.port_blocked_types(pod)
            if blocked:
                left = target.candidates[target.start:]
                if all(c.instance_type.name in blocked for c in left):
                    taken = target.pool.daemon_ports[left[0].instance_type.name].port_conflict(
                        pod.host_ports) if left else None
                    port = f" {taken.port}/{taken.protocol}" if taken is not None else ""
                    return Rejection(f"host port{port} is taken by a DaemonSet's pod", True)
                extra = [*extra, Requirement(LABEL_INSTANCE_TYPE, True, blocked)]
        merged, changed = self._merge(target, context, extra)
        need = self.index.add(target.used, context.vector)
        kept, why = target.narrow(merged, changed, need)
        if kept is None:
            return Rejection(why or "does not fit", not extra)
        by_efficiency = False
        if target.pods and not context.needs_company and target.pool is not None and not planned:
            growth = kept.cheapest.price - target.cheapest.price
            if growth > self.standalone_price(target.pool, context) + 1e-9:
                by_efficiency = self.efficient_growth and self.growth.worth_growing(
                    target.pool, kept, need
                )
                if not by_efficiency:
                    return Rejection("growing this node costs more than a new one", True)
        change = Change(merged if changed else None, kept, need, by_efficiency)
        if self.reservations is not None and target.pool is not None:
            reserving = self.reserving_types.get(target.pool.name)
            if reserving:
                return self._reserve(self.reservations, reserving, target, change, merged,
                                     need)
        return change

    def _reserve(self, book: ReservationBook, reserving: frozenset[str], target: ClaimTarget,
                 change: Change, requirements: Requirements, need: Vector
                 ) -> Change | Rejection:
        """Karpenter's offeringsToReserve for the NodeClaim with the pod added (over the
        types that still hold its pods and offer a reservation). In fallback mode a
        NodeClaim that can hold none of the reservations it could launch into is kept out
        of them at once, so that it is priced (and grows) as what it will be."""
        assert change.candidates is not None
        kept = change.candidates
        types = [c.instance_type for c in kept.candidates[kept.start:]
                 if c.instance_type.name in reserving and fits(need, c.allocatable)]
        reservable, compatible, error = book.to_reserve(
            target.hostname, target.held, types, requirements, self.strict_reservations)
        if error is not None:
            return Rejection(error, False, deferred=True)
        if compatible and not reservable:
            kept_out = outside(requirements, compatible)
            narrowed, _ = target.narrow(kept_out, True, need)
            if narrowed is None:
                return Rejection("the capacity reservations it may launch into have no "
                                 "instances left: " + ", ".join(sorted(compatible)), False)
            change.requirements = kept_out
            change.candidates = narrowed
            change.kept_out = compatible
        change.reservations = reservable
        return change

    def standalone_price(self, pool: PoolState, context: PodContext) -> float:
        """What the cheapest node of this pool holding just this pod would cost."""
        key = (pool.name, context.shape)
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
        self, claim: ClaimTarget, context: PodContext, extra: list[Requirement]
    ) -> tuple[Requirements, bool]:
        cache_key = (context.shape, tuple(extra))
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

