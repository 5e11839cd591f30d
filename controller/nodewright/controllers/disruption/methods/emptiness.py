"""Emptiness: every empty candidate past consolidateAfter, as many as the Empty budget
allows, in one delete command."""

from __future__ import annotations

from nodewright.controllers.common import decision_log as ex
from nodewright.controllers.disruption import metrics as disruption_metrics
from nodewright.controllers.disruption.budgets import EMPTY
from nodewright.controllers.disruption.candidates import Candidate, consolidation_order
from nodewright.controllers.disruption.commands import Command
from nodewright.controllers.disruption.methods.consolidation import (
    consolidatable,
    static_kept,
)
from nodewright.controllers.disruption.methods.disruption_pass import Pass

EMPTY_TYPE = "empty"


def empty_candidates(p: Pass) -> list[Candidate]:
    found = []
    for c in p.candidates():
        if not c.empty:
            continue
        if c.nodepool.is_static:
            static_kept(p, c, ex.EMPTINESS)
        elif hosts_buffer(p, c):
            continue
        elif consolidatable(p, c, ex.EMPTINESS):
            found.append(c)
    return found


def hosts_buffer(p: Pass, c: Candidate) -> bool:
    """The last solve put CapacityBuffer headroom on this node: it is kept (deleting it
    would only launch its replacement), as Karpenter's emptiness does."""
    buffers = p.state.buffers
    if buffers is None or not buffers.on_machine(c.node.name):
        return False
    p.verdict(c.node, ex.EMPTINESS, ex.KEPT, ex.CAUSE_BUFFER_PODS,
              f'Node "{c.node.node_name or c.node.name}" has buffer pods', ex.UNCONSOLIDATABLE)
    return True


def emptiness(p: Pass) -> Command | None:
    candidates = consolidation_order(empty_candidates(p))
    disruption_metrics.ELIGIBLE_NODES.labels(reason=EMPTY.lower()).set(len(candidates))
    rooms = p.rooms(EMPTY)
    chosen = []
    for candidate in candidates:
        room = rooms.get(candidate.nodepool_name)
        if room is None or not room.take():
            p.budget_blocked(candidate, room, ex.EMPTINESS)
            continue
        chosen.append(candidate)
    if not chosen:
        return None
    return Command(ex.EMPTINESS, EMPTY, EMPTY_TYPE, chosen)
