"""Karpenter v1.14.1 pkg/controllers/disruption/consolidation_test.go, Context("Metrics"), told
as stories: a node becomes eligible for consolidation once its pod's do-not-disrupt
annotation goes; and a command decided by emptiness, multi-node or single-node consolidation
is dropped at validation, counted in `karpenter_voluntary_disruption_failed_validations_total`
once per candidate, when during its 15 seconds the budget closes, a pod lands on a candidate
or a candidate is nominated for a pending pod."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from nodewright.cluster import objects
from nodewright.controllers.disruption.controller import DisruptionOptions
from nodewright.controllers.disruption.methods.disruption_pass import MethodOptions
from nodewright.controllers.options import ControllerOptions
from tests.controllers.conftest import WORKSHOP
from tests.controllers.metric_samples import sample_value
from tests.disruption.helpers import decisions, nodepool_with, started
from tests.disruption.test_consolidation_karpenter import GUARD_ON
from tests.disruption.test_consolidation_karpenter_budgets import fleet, spread_then_shrink
from tests.disruption.test_drift_karpenter import GUARD
from tests.harness import World


def eligible(reason: str) -> float | None:
    return sample_value("karpenter_voluntary_disruption_eligible_nodes",
                                     {"reason": reason})


def test_the_eligible_nodes_gauge_counts_a_node_once_its_pod_may_be_disrupted(
        world: World) -> None:
    """consolidation_test.go Metrics: It("should correctly report eligible nodes")."""
    world.apply(WORKSHOP, nodepool_with(disruption={"consolidateAfter": "0s"}), GUARD % "true")
    assert world.settle()
    assert len(world.nodes()) == 1
    world.advance(30)
    assert eligible("underutilized") == 0
    world.cluster.patch("Pod", "guard", {"metadata": {"annotations": {
        "karpenter.sh/do-not-disrupt": None}}}, "default")
    world.advance(30)
    assert eligible("underutilized") == 1


def failed_validations(consolidation_type: str) -> float:
    return sample_value("karpenter_voluntary_disruption_failed_validations_total",
                                     {"consolidation_type": consolidation_type}) or 0.0


def validating(world: World) -> list[str]:
    """Run until a command is decided and waits for its validation; its nodes."""
    assert world.run_until(lambda: any(d.cause == "Candidate" for d in decisions(world)),
                           timeout=900, step=1)
    assert started(world) == []
    return sorted({d.node for d in decisions(world) if d.cause == "Candidate"})


def close_the_budget(world: World, nodes: list[str]) -> None:
    world.apply(nodepool_with(disruption={"consolidateAfter": "0s",
                                          "budgets": [{"nodes": "0%"}]}))


def land_a_pod(world: World, nodes: list[str]) -> None:
    world.apply(GUARD_ON.replace('"true"', '"false"') % nodes[0])


def nominate(world: World, nodes: list[str]) -> None:
    state = world.controllers.state
    for node in world.nodes():
        if objects.name(node) in nodes:
            machine = state.node(node["spec"]["providerID"])
            assert machine is not None
            state.nominate(machine)


def churn(world: World, nodes: list[str]) -> None:
    """Karpenter's `churn` helper (validation_test.go): a pod lands on the first candidate
    and the candidate is nominated for it, so the next look at the candidates leaves it
    out (a churn failure, every candidate of the command counted)."""
    land_a_pod(world, nodes)
    nominate(world, nodes[:1])


CHANGES = {"blocked by budgets": close_the_budget, "pod churn": churn,
           "nominated": nominate}


def expect_dropped(world: World, change: Callable[[World, list[str]], None],
                   consolidation_type: str, candidates: int) -> None:
    before = failed_validations(consolidation_type)
    nodes = validating(world)
    assert len(nodes) == candidates
    change(world, nodes)
    world.advance(20)
    assert started(world) == []
    assert set(nodes) <= {objects.name(n) for n in world.nodes()}
    assert failed_validations(consolidation_type) - before == candidates


@pytest.mark.parametrize("change", CHANGES)
def test_an_emptiness_command_invalidated_at_validation_is_counted(
        world: World, change: str) -> None:
    """consolidation_test.go Metrics: DescribeTable("should correctly report invalidated
    commands for emptiness disruption"), Entry("when a candidate is blocked by budgets"),
    Entry("when candidates are filtered out due to pod churn"), Entry("when candidates are
    filtered out due to candidate being nominated")."""
    fleet(world, 1, {})
    world.scale("big", 0)
    expect_dropped(world, CHANGES[change], "empty", 1)


@pytest.mark.parametrize("change", CHANGES)
def test_a_multi_node_command_invalidated_at_validation_is_counted(
        world: World, change: str) -> None:
    """consolidation_test.go Metrics: DescribeTable("should correctly report invalidated
    commands for multi node disruption"), Entry("when candidates are blocked by budgets"),
    Entry("when candidates are filtered out due to pod churn"), Entry("when candidates are
    filtered out due to candidate being nominated")."""
    spread_then_shrink(world, 4, {"budgets": [{"nodes": "100%"}]})
    expect_dropped(world, CHANGES[change], "multi", 2)


@pytest.mark.parametrize("change", CHANGES)
def test_a_single_node_command_invalidated_at_validation_is_counted(
        make_world: Callable[..., World], change: str) -> None:
    """consolidation_test.go Metrics: DescribeTable("should correctly report invalidated
    commands for single node disruption"), Entry("when a candidate is blocked by budgets"),
    Entry("when candidates are filtered out due to pod churn"), Entry("when candidates are
    filtered out due to candidate being nominated"). An m5.large whose one pod would fit a
    c5.large."""
    world = make_world(options=ControllerOptions(disruption=DisruptionOptions(
        methods=MethodOptions(multi_node_max_candidates=0))))
    world.apply(WORKSHOP, nodepool_with(disruption={"consolidateAfter": "0s"}))
    world.scale("inflate", 5)
    assert world.settle()
    world.scale("inflate", 1)
    expect_dropped(world, CHANGES[change], "single", 1)
