"""Static drift (Karpenter's StaticDrift): drifted nodes of static NodePools, each replaced
by a NodeClaim from its NodePool's template (no simulation: a static pool's nodes do not
follow its pods), as many per NodePool as its Drifted budget and limits.nodes allow. As
Karpenter, each node is a command of its own: a pass starts the first, and the loop, which
decides again at once, the others (the command in flight counts against the budget, its
replacement against limits.nodes).

A NodePool that is still scaling down (more NodeClaims than replicas) is left alone until
it is done, so a drift never replaces a node that is about to go anyway.
"""

from __future__ import annotations

from nodewright.cluster import objects
from nodewright.controllers.common import decision_log as ex
from nodewright.controllers.disruption.budgets import DRIFTED
from nodewright.controllers.disruption.candidates import Candidate, drift_order
from nodewright.controllers.disruption.commands import Command
from nodewright.controllers.disruption.methods.disruption_pass import Pass
from nodewright.controllers.disruption.methods.drift import drifted_candidates
from nodewright.controllers.nodeclaim.disruption_conditions import DRIFTED as DRIFTED_CONDITION
from nodewright.controllers.static.counts import node_counts, room_under_limit


def static_drift(p: Pass) -> Command | None:
    candidates = drifted_candidates(p, static=True)
    if not candidates:
        return None
    drifted_at = {
        c.nodeclaim_name: str((objects.condition(c.nodeclaim, DRIFTED_CONDITION) or {}).get(
            "lastTransitionTime", ""))
        for c in candidates
    }
    by_pool: dict[str, list[Candidate]] = {}
    for candidate in drift_order(candidates, drifted_at):
        by_pool.setdefault(candidate.nodepool_name, []).append(candidate)
    rooms = p.rooms(DRIFTED)
    chosen: list[Candidate] = []
    for pool, pool_candidates in sorted(by_pool.items()):
        nodepool = pool_candidates[0].nodepool
        room = rooms.get(pool)
        counts = node_counts(p.state, pool)
        if counts.active + counts.pending_disruption > (nodepool.spec.replicas or 0):
            for candidate in pool_candidates:
                p.verdict(candidate.node, ex.DRIFT, ex.KEPT, ex.CAUSE_STATIC_SCALING,
                          f"static NodePool {pool} is scaling down to "
                          f"{nodepool.spec.replicas} replicas first")
            continue
        wanted = min(room.left if room is not None else 0, len(pool_candidates))
        allowed = room_under_limit(nodepool, counts, wanted)
        for index, candidate in enumerate(pool_candidates):
            if index < allowed and room is not None and room.take():
                chosen.append(candidate)
            elif index < wanted:
                p.verdict(candidate.node, ex.DRIFT, ex.BLOCKED, ex.CAUSE_NODE_LIMIT,
                          f"static NodePool {pool}: limits.nodes leaves no room for a "
                          "replacement")
            else:
                p.budget_blocked(candidate, room, ex.DRIFT)
    if not chosen:
        return None
    first = chosen[0]
    return Command(ex.DRIFT, DRIFTED, "", [first], static_replacements=[first.nodepool_name])
