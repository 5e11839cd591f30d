"""The pods nothing ties together ("free" pods), planned as one cutting-stock problem per
NodePool and node requirements (`nodewright.scheduling.packing`), each packed node opened as
a NodeClaim. What the packer leaves goes back to first-fit placement."""

from __future__ import annotations

import time

from nodewright.scheduling.packing import BinType, Budget, Packed, pack
from nodewright.scheduling.pods import Pod, untolerated
from nodewright.scheduling.requirements import Requirements
from nodewright.scheduling.solver.placement import Placement
from nodewright.scheduling.solver.verdicts import Rejection
from nodewright.scheduling.targets import ClaimTarget, PoolState, Vector


class FreePodPacker:
    """`due`: when the operator's deadline passes (time.monotonic()), or None."""

    def __init__(self, placement: Placement, due: float | None) -> None:
        self.placement = placement
        self.due = due

    def pack(self, free: list[Pod]) -> list[Pod]:
        """Place free pods: on existing nodes and the NodeClaims opened so far first (as the
        greedy loop would), then the rest, per NodePool and node requirements, as one
        cutting-stock problem (`packing`). Returns the pods left for the greedy loop."""
        left: list[Pod] = []
        groups: dict[tuple[int, Requirements], list[Pod]] = {}
        for pod in free:
            if self.placement.place_on_targets(pod):
                continue
            index = self._pool_for(pod)
            if index is None:
                left.append(pod)
                continue
            groups.setdefault((index, self.placement.context(pod).requirements), []).append(pod)
        for (index, requirements), pods in groups.items():
            left.extend(self._pack_group(self.placement.pools[index], requirements, pods))
        return left

    def _pool_for(self, pod: Pod) -> int | None:
        """The NodePool the greedy loop would open a NodeClaim in for this pod, when the
        packer may plan it (no minValues); None leaves the pod to the loop. Limits are
        checked as the planned NodeClaims open (`Placement.open_claim`)."""
        context = self.placement.context(pod)
        for index, pool in enumerate(self.placement.pools):
            if untolerated(pool.template.taints, pod.tolerations) is not None:
                continue
            if pool.requirements.conflict(context.requirements) is not None:
                continue
            if self.placement.fit.standalone_price(pool, context) == float("inf"):
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
            by_shape.setdefault(self.placement.context(pod).vector, []).append(pod)
        shapes = list(by_shape)
        counts = [len(by_shape[shape]) for shape in shapes]
        if self.due is None:
            # No deadline: the plan depends only on the input (`PackMemo`).
            key = (tuple(shapes), tuple(counts), tuple((b.price, b.room) for b in bins))
            plan = self.placement.packs.get(key)
            if plan is None:
                plan, _ = pack(shapes, counts, bins, Budget())
                self.placement.packs.put(key, plan)
        else:
            budget = Budget(deadline=max(0.0, self.due - time.monotonic()))
            plan, _ = pack(shapes, counts, bins, budget)
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
        claim = self.placement.open_claim(pool, first, self.placement.context(first))
        if not isinstance(claim, ClaimTarget):
            return members
        left = []
        for pod in members[1:]:
            context = self.placement.context(pod)
            outcome = self.placement.fit.check(claim, pod, context, planned=True)
            if isinstance(outcome, Rejection):
                left.append(pod)
                continue
            self.placement.apply(claim, pod, context, outcome)
        claim.why = (
            f"packed: {len(members) - len(left)} of {total} untied pods planned together; "
            f"the LP values them at {node.worth:.0%} of the type's price"
        )
        return left

