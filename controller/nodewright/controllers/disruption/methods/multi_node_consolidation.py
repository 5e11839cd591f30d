"""Multi-node consolidation: the largest prefix (binary search, at most 100 candidates, a
1-minute compute budget) of the best-value candidates that can go at once."""

from __future__ import annotations

import time
from collections.abc import Mapping

from nodewright.controllers.common import decision_log as ex
from nodewright.controllers.disruption import balanced
from nodewright.controllers.disruption import metrics as disruption_metrics
from nodewright.controllers.disruption.budgets import UNDERUTILIZED
from nodewright.controllers.disruption.candidates import Candidate
from nodewright.controllers.disruption.commands import Command, decide_consolidation
from nodewright.controllers.disruption.methods.consolidation import consolidation_candidates
from nodewright.controllers.disruption.methods.disruption_pass import Pass

MULTI_TYPE = "multi"


def multi_node(p: Pass) -> Command | None:
    candidates = consolidation_candidates(p, ex.MULTI_NODE)  # best value first
    disruption_metrics.ELIGIBLE_NODES.labels(reason=UNDERUTILIZED.lower()).set(len(candidates))
    rooms = p.rooms(UNDERUTILIZED)
    # Candidates beyond the budget are left out silently: single-node consolidation looks
    # at each of them and says why.
    allowed = [c for c in candidates
               if (room := rooms.get(c.nodepool_name)) is not None and room.take()]
    if len(allowed) < len(candidates):
        # As Karpenter: held back by a budget, the method is not marked consolidated.
        p.stopped_early.add(ex.MULTI_NODE)
    if len(allowed) < 2:
        return None
    low, high = 1, min(len(allowed) - 1, p.options.multi_node_max_candidates)
    deadline = time.perf_counter() + p.options.multi_node_timeout
    best: Command | None = None
    refused: tuple[list[Candidate], Mapping[str, balanced.Score]] | None = None
    while low <= high:
        if time.perf_counter() > deadline:
            disruption_metrics.CONSOLIDATION_TIMEOUTS.labels(consolidation_type=MULTI_TYPE).inc()
            break
        middle = (low + high) // 2
        outcome = decide_consolidation(
            p.base, allowed[: middle + 1], method=ex.MULTI_NODE, consolidation_type=MULTI_TYPE,
            spot_to_spot=p.options.spot_to_spot, totals=p.pool_totals())
        if isinstance(outcome, Command):
            best = outcome
            low = middle + 1
        else:
            if outcome.scores:
                refused = (allowed[: middle + 1], outcome.scores)
            high = middle - 1
    # Once per pass, as Karpenter: the move made, or the last one scoring refused.
    if best is not None:
        balanced.record_move(best.candidates, best.scores, True)
    elif refused is not None:
        balanced.record_move(refused[0], refused[1], False)
    return best
