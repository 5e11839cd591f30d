"""Karpenter v1.14.1 pkg/controllers/disruption/consolidation_logging_test.go (plain Go
tests): a command's estimated savings (the candidates' prices less each replacement's
cheapest available offering its requirements allow), the pod count it logs and the
ConsolidationCandidate events it tells while it waits for validation."""

from __future__ import annotations

import logging

import pytest

from nodewright.cluster import objects
from nodewright.controllers.common import decision_log as ex
from nodewright.controllers.disruption.commands import Command, estimated_price
from nodewright.controllers.disruption.methods.validation import (
    SCHEDULING,
    Invalid,
    failure_reason,
)
from nodewright.scheduling.catalog import InstanceType
from nodewright.scheduling.requirements import Requirement, Requirements
from nodewright.scheduling.targets import PlannedNodeClaim
from tests.disruption.balanced_fixtures import candidate, instance_type, nodepool, priced
from tests.disruption.test_balanced_karpenter_stories import oversized_nodes
from tests.disruption.test_consolidation_karpenter import GUARD_ON
from tests.disruption.test_consolidation_karpenter_budgets import spread_then_shrink
from tests.disruption.test_consolidation_karpenter_metrics import (
    CHANGES,
    land_a_pod,
    validating,
)
from tests.harness import World

CAPACITY = "karpenter.sh/capacity-type"
ZONE = "topology.kubernetes.io/zone"
SOURCE = priced("source-type", 0.50)  # the candidate runs in test-zone-1
DEST = instance_type("dest-type", (0.10, "us-west-2a", "spot", True),
                     (0.40, "us-west-2a", "on-demand", True))


def claim(*options: InstanceType, requirements: Requirements | None = None
          ) -> PlannedNodeClaim:
    return PlannedNodeClaim(
        name="replacement", nodepool="default",
        instance_types=tuple((it.name, 0.0) for it in options), capacity_type="on-demand",
        zone=None, price=0.0, pods=(), requirements=requirements or Requirements())


def savings(replacements: list[PlannedNodeClaim], types: list[InstanceType],
            source: InstanceType | None = SOURCE) -> float:
    by_name = {it.name: it for it in types}
    sources = [] if source is None else [candidate("node-1", nodepool("default"), source)]
    command = Command(ex.SINGLE_NODE, "Underutilized", "single", sources, replacements)
    command.replacement_estimates = [estimated_price(r, by_name) for r in replacements]
    return command.savings


def test_the_replacements_prices_add_up() -> None:
    """consolidation_logging_test.go TestGetCommandEstimatedSavings_MultipleReplacements."""
    one, two = priced("dest-type-1", 0.20), priced("dest-type-2", 0.15)
    assert savings([claim(one), claim(two)], [one, two]) == pytest.approx(0.15)


def test_an_on_demand_replacement_is_priced_on_demand() -> None:
    """consolidation_logging_test.go TestGetCommandEstimatedSavings_OnDemandOnlyNodePool."""
    on_demand = Requirements([Requirement.single(CAPACITY, "on-demand")])
    assert savings([claim(DEST, requirements=on_demand)], [DEST]) == pytest.approx(0.10)


def test_a_zonal_replacement_is_priced_in_its_zone() -> None:
    """consolidation_logging_test.go TestGetCommandEstimatedSavings_ZoneRequirement."""
    dest = instance_type("dest-type", (0.05, "us-west-2b", "on-demand", True),
                         (0.45, "us-west-2a", "on-demand", True))
    in_a = Requirements([Requirement.single(ZONE, "us-west-2a")])
    assert savings([claim(dest, requirements=in_a)], [dest]) == pytest.approx(0.05)


def test_a_replacement_free_to_be_spot_is_priced_at_spot() -> None:
    """consolidation_logging_test.go TestGetCommandEstimatedSavings_NoCapacityTypeRestriction."""
    either = Requirements([Requirement(CAPACITY, False, frozenset({"on-demand", "spot"}))])
    assert savings([claim(DEST, requirements=either)], [DEST]) == pytest.approx(0.40)


@pytest.mark.parametrize(("replacements", "types"), [
    pytest.param([], [], id="empty NodeClaim list"),
    pytest.param([claim()], [], id="NodeClaim with no InstanceTypeOptions"),
    pytest.param([claim(instance_type("instance-type"))], [instance_type("instance-type")],
                 id="NodeClaim with empty Offerings"),
])
def test_nothing_to_price_saves_nothing(replacements: list[PlannedNodeClaim],
                                        types: list[InstanceType]) -> None:
    """consolidation_logging_test.go TestGetCommandEstimatedSavings_EdgeCases (its four
    cases; "delete consolidation - no replacements" is the first, without candidates)."""
    assert savings(replacements, types, source=None) == 0.0


def test_a_command_logs_every_candidates_pods(world: World,
                                              caplog: pytest.LogCaptureFixture) -> None:
    """consolidation_logging_test.go TestLogValues_PodCount: the pod count of a command
    disrupting several nodes is all their pods, not the last one's."""
    oversized_nodes(world, 3)
    with caplog.at_level(logging.INFO):
        assert world.settle()
    [merge] = [r for r in caplog.records if r.getMessage() == "disrupting node(s)"
               and getattr(r, "method", "") == ex.MULTI_NODE]
    assert getattr(merge, "disrupted-node-count") == 3
    assert getattr(merge, "pod-count") == 3


def test_a_candidate_awaiting_validation_is_told_on_its_node_and_nodeclaim(
    world: World,
) -> None:
    """consolidation_logging_test.go TestConsolidationCandidateEvent."""
    oversized_nodes(world, 1)
    assert world.run_until(lambda: bool(world.events(reason=ex.CONSOLIDATION_CANDIDATE)),
                           timeout=600)
    told = world.events(reason=ex.CONSOLIDATION_CANDIDATE)
    assert sorted(e["regarding"]["kind"] for e in told) == ["Node", "NodeClaim"]
    assert all(objects.name(world.nodes()[0]) in e["note"] for e in told)



def _protected_pod_lands(world: World, nodes: list[str]) -> None:
    world.apply(GUARD_ON % nodes[0])


# "pod churn" here is the pod landing alone (no nomination): the simulation is what fails.
DROPPED_BY = {**CHANGES, "pod churn": land_a_pod,
              "do-not-disrupt pod lands": _protected_pod_lands}


@pytest.mark.parametrize(("change", "reason"), [
    pytest.param("blocked by budgets", "budget", id="budget error - budget"),
    # Karpenter's GetCandidates leaves a nominated candidate out before validation's own
    # nomination check (validation.go validateCandidates): in its flow that is churn.
    pytest.param("nominated", "churn", id="budget error - nominated"),
    pytest.param("do-not-disrupt pod lands", "churn", id="churn error - no longer valid"),
    pytest.param("pod churn", "scheduling", id="scheduling error"),
])
def test_a_command_dropped_at_validation_says_which_kind_of_reason(
        world: World, change: str, reason: str) -> None:
    """consolidation_logging_test.go TestGetValidationFailureReason, told in
    ConsolidationRejected as Karpenter's EmitRejectedEvents does: a budget that closes is
    "budget", a candidate that is no longer one (nominated, or a do-not-disrupt pod landed)
    "churn", a pod (pinned to the node) that would no longer fit elsewhere "scheduling"."""
    spread_then_shrink(world, 4, {"budgets": [{"nodes": "100%"}]})
    nodes = validating(world)
    DROPPED_BY[change](world, nodes)
    world.advance(20)
    notes = [e["note"] for e in world.events(reason=ex.CONSOLIDATION_REJECTED)]
    assert notes and all(f"(reason: {reason})" in note for note in notes), notes


def test_a_reason_of_no_known_kind_is_unknown() -> None:
    """consolidation_logging_test.go TestGetValidationFailureReason: "nil error",
    "non-validation error" and "generic validation error" are "unknown"."""
    assert failure_reason("some other error") == "unknown"
    assert failure_reason(Invalid("something unexpected")) == "unknown"
    assert failure_reason(Invalid("scheduling simulation produced new results",
                                  SCHEDULING)) == "scheduling"
