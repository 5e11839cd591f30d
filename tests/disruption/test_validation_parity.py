"""The 15-second validation of a consolidation command, as Karpenter v1.14.1 counts and
tells what it drops (pkg/controllers/disruption/validation.go).

- `karpenter_voluntary_disruption_failed_validations_total` counts candidates where the
  candidate checks fail: every candidate of a single- or multi-node command found no
  longer a candidate or over a budget (validateCandidates, lines 248-279); for emptiness
  each candidate a budget now drops, the command going on with the others (lines
  209-229), and every candidate only when none is left (lines 201-204). A re-simulation
  that no longer matches (validateCommand, lines 282-341) is a scheduling failure and
  counts nothing.
- A nominated candidate is left out by GetCandidates before validation's own nomination
  check (statenode.go line 226 in ValidateNodeDisruptable): in the flow that is a churn
  failure.
- Emptiness abandons a dropped command with a log line (emptiness.go lines 94-100); only
  single- and multi-node consolidation tell it in ConsolidationRejected events
  (singlenodeconsolidation.go lines 88-93, multinodeconsolidation.go lines 101-106).
"""

from __future__ import annotations

from nodewright.cluster import objects
from nodewright.controllers.common import decision_log as ex
from tests.disruption.helpers import decisions, nodepool_with, started
from tests.disruption.test_consolidation_karpenter_budgets import fleet, spread_then_shrink
from tests.disruption.test_consolidation_karpenter_metrics import (
    failed_validations,
    land_a_pod,
    nominate,
    validating,
)
from tests.harness import World


def test_a_command_the_re_simulation_refuses_counts_no_failed_validation(
    world: World,
) -> None:
    """Four nodes of filler pods are to be merged two by two; during the 15 seconds a pod
    lands on a candidate (nothing nominates it there), so the re-simulation no longer
    places everything as planned. The command is dropped for scheduling, and the counter
    of failed validations, which counts candidates that stopped being candidates, stays
    where it was."""
    spread_then_shrink(world, 4, {"budgets": [{"nodes": "100%"}]})
    before = failed_validations("multi")
    nodes = validating(world)
    land_a_pod(world, nodes)
    world.advance(20)

    assert started(world) == []
    notes = [e["note"] for e in world.events(reason=ex.CONSOLIDATION_REJECTED)]
    assert notes and all("(reason: scheduling)" in note for note in notes), notes
    assert failed_validations("multi") == before


def test_a_nominated_candidate_is_churn(world: World) -> None:
    """A candidate nominated for a pending pod during the 15 seconds is no candidate when
    the command is looked at again: Karpenter's rejection says churn, and every candidate
    of the command is counted."""
    spread_then_shrink(world, 4, {"budgets": [{"nodes": "100%"}]})
    before = failed_validations("multi")
    nodes = validating(world)
    nominate(world, nodes[:1])
    world.advance(20)

    assert started(world) == []
    notes = [e["note"] for e in world.events(reason=ex.CONSOLIDATION_REJECTED)]
    assert notes and all("(reason: churn)" in note for note in notes), notes
    assert failed_validations("multi") - before == len(nodes)


def test_an_emptiness_command_a_budget_trims_counts_the_candidates_it_drops(
    world: World,
) -> None:
    """Two empty nodes are to be deleted together; during the 15 seconds the budget falls
    to one node. Emptiness deletes one of them and counts the other as a failed
    validation."""
    fleet(world, 2, {"budgets": [{"nodes": "100%"}]})
    before = failed_validations("empty")
    world.scale("big", 0)
    nodes = validating(world)
    assert len(nodes) == 2
    world.apply(nodepool_with(disruption={"consolidateAfter": "0s", "budgets": [{"nodes": "1"}]}))
    world.advance(20)

    assert len(started(world)) == 1
    assert failed_validations("empty") - before == 1


def test_an_emptiness_command_dropped_at_validation_sends_no_rejection_event(
    world: World,
) -> None:
    """An empty node is to be deleted; during the 15 seconds a pod lands on it. Emptiness
    drops the command: the decision log says why, but no ConsolidationRejected event is
    written on the Node or its NodeClaim."""
    fleet(world, 1, {})
    world.scale("big", 0)
    nodes = validating(world)
    land_a_pod(world, nodes)
    world.advance(20)

    assert started(world) == []
    assert [objects.name(n) for n in world.nodes()] == nodes
    assert any(
        d.outcome == ex.REJECTED and d.method == ex.EMPTINESS for d in decisions(world, nodes[0])
    )
    assert world.events(reason=ex.CONSOLIDATION_REJECTED) == []


def test_a_delete_command_awaiting_validation_sends_no_candidate_event(world: World) -> None:
    """Karpenter's computeConsolidation emits ConsolidationCandidate where it builds a
    replacement (consolidation.go lines 224-230, 279-284, 326-333); a command that only
    deletes waits its 15 seconds without one. Four half-empty nodes are to be merged by
    deleting two: the decision log names the candidates, no event does."""
    spread_then_shrink(world, 4, {"budgets": [{"nodes": "100%"}]})
    nodes = validating(world)
    assert all(
        d.decision == "delete" for n in nodes for d in decisions(world, n) if d.cause == "Candidate"
    )
    assert world.events(reason=ex.CONSOLIDATION_CANDIDATE) == []
