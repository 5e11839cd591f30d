"""Karpenter v1.14.1 pkg/controllers/disruption/suite_test.go, Describe("Metrics"): each kind of
command counts one decision in `karpenter_voluntary_disruption_decisions_total` and in
`karpenter_voluntary_disruption_decisions_by_nodepool_total` (labels decision, reason,
consolidation_type; drift has no consolidation type), however many nodes it takes; and a
multi-node consolidation out of compute time decides nothing. Told on the workshop: each
story counts the first command the loop starts (the counters are process-wide, so the
story reads their change)."""

from __future__ import annotations

from collections.abc import Callable

from nodewright.cluster import objects
from nodewright.controllers.common import decision_log as ex
from nodewright.controllers.disruption.controller import DisruptionOptions
from nodewright.controllers.disruption.methods.disruption_pass import MethodOptions
from nodewright.controllers.options import ControllerOptions
from nodewright.state.wellknown import DISRUPTED_TAINT, has_taint
from tests.controllers.conftest import WORKSHOP
from tests.controllers.metric_samples import sample_value
from tests.disruption.helpers import nodepool_with, started
from tests.disruption.test_consolidation_karpenter_budgets import fleet, spread_then_shrink
from tests.disruption.test_consolidation_karpenter_multi import big_nodes_then_small_pods
from tests.disruption.test_drift_karpenter import drift, drift_one
from tests.disruption.test_drift_karpenter import fleet as drift_fleet
from tests.harness import World

Labels = tuple[str, str, str]  # decision, reason, consolidation_type


def counted(labels: Labels) -> tuple[float, float]:
    """(decisions, the workshop NodePool's decisions) so far with these labels."""
    decision, reason, kind = labels
    wanted = {"decision": decision, "reason": reason, "consolidation_type": kind}
    total = sample_value("karpenter_voluntary_disruption_decisions_total", wanted)
    by_pool = sample_value(
        "karpenter_voluntary_disruption_decisions_by_nodepool_total",
        {"nodepool": "default", **wanted})
    return total or 0.0, by_pool or 0.0


def first_command(world: World, method: str) -> list[ex.Decision]:
    """Run until the loop starts a command of `method`; that command's decisions."""
    assert world.run_until(lambda: any(d.method == method for d in started(world)),
                           timeout=1800, step=1)
    first = next(d for d in started(world) if d.method == method)
    return [d for d in started(world) if d.method == method and d.time == first.time]


def expect_one_decision(world: World, method: str, labels: Labels, before: tuple[float, float],
                        nodes: int) -> None:
    command = first_command(world, method)
    assert len(command) == nodes
    assert {d.decision for d in command} == {labels[0]}
    commands = {d.time for d in started(world) if d.method == method}
    assert len(commands) == 1, "one command so far"
    after = counted(labels)
    assert (after[0] - before[0], after[1] - before[1]) == (1.0, 1.0)


def test_an_empty_node_counts_one_empty_delete(world: World) -> None:
    """suite_test.go Metrics: It("should fire metrics for single node empty disruption")."""
    world.apply(WORKSHOP, nodepool_with(disruption={"consolidateAfter": "0s"}))
    world.scale("inflate", 1)
    assert world.settle()
    labels = ("delete", "empty", "empty")
    before = counted(labels)
    world.scale("inflate", 0)
    expect_one_decision(world, ex.EMPTINESS, labels, before, nodes=1)


def test_a_drifted_node_deleted_counts_one_drifted_delete(world: World) -> None:
    """suite_test.go Metrics: It("should fire metrics for single node delete disruption") (one
    of two nodes drifts; its pods fit on the other)."""
    world.apply(WORKSHOP, nodepool_with(disruption={"consolidateAfter": "Never"}))
    world.scale("inflate", 5)
    assert world.settle()
    world.scale("inflate", 12)
    assert world.settle()
    world.scale("inflate", 3)
    assert world.settle()
    claims = sorted(objects.name(c) for c in world.nodeclaims())
    assert len(claims) == 2
    labels = ("delete", "drifted", "")
    before = counted(labels)
    drift_one(world, claims[0])
    expect_one_decision(world, ex.DRIFT, labels, before, nodes=1)


def test_a_drifted_node_replaced_counts_one_drifted_replace(world: World) -> None:
    """suite_test.go Metrics: It("should fire metrics for single node replace disruption")."""
    drift_fleet(world, 1)
    labels = ("replace", "drifted", "")
    before = counted(labels)
    drift(world)
    expect_one_decision(world, ex.DRIFT, labels, before, nodes=1)


def test_three_empty_nodes_count_one_empty_delete(world: World) -> None:
    """suite_test.go Metrics: It("should fire metrics for multi-node empty disruption")."""
    fleet(world, 3, {"budgets": [{"nodes": "100%"}]})
    labels = ("delete", "empty", "empty")
    before = counted(labels)
    world.scale("big", 0)
    expect_one_decision(world, ex.EMPTINESS, labels, before, nodes=3)


def test_nodes_merged_away_count_one_multi_node_delete(world: World) -> None:
    """suite_test.go Metrics: It("should fire metrics for multi-node delete disruption") (four
    nodes of one 800m pod each: two of them go, their pods join the others)."""
    spread_then_shrink(world, 4, {"budgets": [{"nodes": "100%"}]})
    labels = ("delete", "underutilized", "multi")
    before = counted(labels)
    expect_one_decision(world, ex.MULTI_NODE, labels, before, nodes=2)


def test_three_nodes_merged_into_one_count_one_multi_node_replace(
        make_world: Callable[..., World]) -> None:
    """suite_test.go Metrics: It("should fire metrics for multi-node replace disruption")."""
    labels = ("replace", "underutilized", "multi")
    before = counted(labels)
    world, _ = big_nodes_then_small_pods(make_world, "on-demand", 3)
    expect_one_decision(world, ex.MULTI_NODE, labels, before, nodes=3)


def timeouts() -> float:
    return sample_value("karpenter_voluntary_disruption_consolidation_timeouts_total",
                                     {"consolidation_type": "multi"}) or 0.0


def test_multi_node_consolidation_out_of_time_decides_nothing(
        make_world: Callable[..., World]) -> None:
    """suite_test.go Metrics: It("should stop multi-node consolidation after context deadline
    is reached"): Karpenter runs the pass with a deadline already past; here both
    consolidation methods get a compute budget that is over before they start. No node is
    tainted, nothing is consolidated, and the timeout is counted."""
    before = timeouts()
    over = MethodOptions(multi_node_timeout=-60.0, single_node_timeout=-60.0)
    world, originals = big_nodes_then_small_pods(make_world, "on-demand", 3)
    world.options = ControllerOptions(disruption=DisruptionOptions(methods=over))
    world.restart_controllers()
    world.advance(900)
    assert sorted(objects.name(n) for n in world.nodes()) == originals
    assert not any(has_taint(n["spec"].get("taints") or [], DISRUPTED_TAINT)
                   for n in world.nodes())
    assert [d for d in started(world) if d.method in (ex.MULTI_NODE, ex.SINGLE_NODE)] == []
    assert timeouts() > before
