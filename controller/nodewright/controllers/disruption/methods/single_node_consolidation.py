"""Single-node consolidation: the candidates one at a time (3-minute compute budget, or a
count of simulations where results must not depend on the machine), NodePools
interleaved so one large pool does not starve the others."""

from __future__ import annotations

import time
from collections.abc import Sequence

from nodewright.controllers.common import decision_log as ex
from nodewright.controllers.disruption import balanced
from nodewright.controllers.disruption import metrics as disruption_metrics
from nodewright.controllers.disruption.budgets import UNDERUTILIZED
from nodewright.controllers.disruption.candidates import Candidate
from nodewright.controllers.disruption.commands import Command, decide_consolidation
from nodewright.controllers.disruption.methods.consolidation import (
    consolidation_candidates,
    rejected,
)
from nodewright.controllers.disruption.methods.disruption_pass import Pass

SINGLE_TYPE = "single"


def interleaved(candidates: Sequence[Candidate]) -> list[Candidate]:
    """Each NodePool's best, then each one's second best, ... (Karpenter's
    shuffleCandidates), keeping the order within a NodePool."""
    by_pool: dict[str, list[Candidate]] = {}
    for candidate in candidates:
        by_pool.setdefault(candidate.nodepool_name, []).append(candidate)
    pools = sorted(by_pool)
    ordered = []
    for index in range(max((len(v) for v in by_pool.values()), default=0)):
        for pool in pools:
            if index < len(by_pool[pool]):
                ordered.append(by_pool[pool][index])
    return ordered


def single_node(p: Pass) -> Command | None:
    candidates = interleaved(consolidation_candidates(p, ex.SINGLE_NODE))
    resume = p.resume
    if resume.mark is not None and resume.mark == p.state_mark:
        # The same cluster as when the last pass stopped: go on where it stopped.
        candidates = [c for c in candidates if c.provider_id not in resume.seen]
    else:
        resume.seen = frozenset()
        candidates.sort(key=lambda c: c.provider_id not in resume.unseen)
    rooms = p.rooms(UNDERUTILIZED)
    deadline = time.perf_counter() + p.options.single_node_timeout
    limit = p.options.single_node_max_simulations
    simulations_before = p.base.simulations
    resume.unseen, resume.mark = frozenset(), None
    for index, candidate in enumerate(candidates):
        spent = p.base.simulations - simulations_before
        if time.perf_counter() > deadline or (limit is not None and spent >= limit):
            disruption_metrics.CONSOLIDATION_TIMEOUTS.labels(
                consolidation_type=SINGLE_TYPE).inc()
            resume.unseen = frozenset(c.provider_id for c in candidates[index:])
            resume.seen |= {c.provider_id for c in candidates[:index]}
            resume.mark = p.state_mark
            p.stopped_early.add(ex.SINGLE_NODE)
            return None
        room = rooms.get(candidate.nodepool_name)
        if room is None or room.left <= 0:
            p.budget_blocked(candidate, room, ex.SINGLE_NODE)
            continue
        best = balanced.can_pass(candidate, p.pool_totals())
        if best is not None:
            p.verdict(candidate.node, ex.SINGLE_NODE, ex.KEPT, ex.CAUSE_BALANCED,
                      "consolidationPolicy Balanced: even deleting it would not be worth the "
                      f"disruption ({best.describe()})", ex.UNCONSOLIDATABLE)
            continue
        outcome = decide_consolidation(
            p.base, [candidate], method=ex.SINGLE_NODE, consolidation_type=SINGLE_TYPE,
            spot_to_spot=p.options.spot_to_spot, totals=p.pool_totals())
        if isinstance(outcome, Command):
            balanced.record_move(outcome.candidates, outcome.scores, True)
            return outcome
        if outcome.scores:
            balanced.record_move([candidate], outcome.scores, False)
        rejected(p, candidate, ex.SINGLE_NODE, outcome)
    resume.seen = frozenset()
    return None
