"""Karpenter v1.14.1 pkg/controllers/disruption/drift_test.go, told as stories: a NodePool
template change drifts its nodes; they are replaced (or deleted when empty) a budget's worth
at a time, never while a node or pod says do-not-disrupt, and empty nodes first."""

from __future__ import annotations

from typing import Any

from nodewright.cloud.sim import CapacityRule
from nodewright.cluster import objects
from nodewright.controllers.common import decision_log as ex
from tests.controllers.conftest import WORKSHOP
from tests.controllers.expectations import expect_no_controller_errors, expect_running
from tests.controllers.metric_samples import sample_value
from tests.disruption.helpers import BIG, nodepool_with, started
from tests.disruption.test_budget_and_drift_stories import originals_disrupting
from tests.harness import World

GUARD = """
apiVersion: v1
kind: Pod
metadata:
  name: guard
  namespace: default
  annotations: {karpenter.sh/do-not-disrupt: "%s"}
spec:
  nodeSelector: {type: karpenter}
  terminationGracePeriodSeconds: 0
  containers: [{name: app, resources: {requests: {cpu: 100m}}}]
"""
PAYMENTS = {"type": "karpenter", "team": "payments"}


def fleet(world: World, nodes: int, disruption: dict[str, Any] | None = None,
          *extra: str) -> set[str]:
    """`nodes` nodes of one `big` pod each (and any `extra` objects); the NodeClaims' names."""
    world.apply(WORKSHOP, nodepool_with(disruption=disruption), BIG % nodes, *extra)
    assert world.settle()
    return {objects.name(c) for c in world.nodeclaims()}


def drift(world: World, disruption: dict[str, Any] | None = None,
          template: dict[str, Any] | None = None) -> None:
    """Change the NodePool's template labels: every node it made drifts."""
    world.apply(nodepool_with(disruption=disruption, labels=PAYMENTS, template=template))


def gone(world: World, originals: set[str]) -> bool:
    return not originals & {objects.name(c) for c in world.nodeclaims()}


def drifted(world: World) -> list[ex.Decision]:
    return [d for d in started(world) if d.method == ex.DRIFT]


def annotate_node(world: World, value: str) -> None:
    [node] = world.nodes()
    world.cluster.patch("Node", objects.name(node), {"metadata": {"annotations": {
        "karpenter.sh/do-not-disrupt": value}}})


def test_drifted_nodes_are_replaced(world: World) -> None:
    """drift_test.go Drift: It("should replace drifted nodes")."""
    originals = fleet(world, 1)
    drift(world)
    assert world.run_until(lambda: gone(world, originals), timeout=1800)
    assert world.settle()
    [decision] = drifted(world)
    assert decision.decision == "replace"
    [node] = world.nodes()
    assert objects.labels(node)["team"] == "payments"
    expect_running(world, 1, {"app": "big"})
    expect_no_controller_errors(world)


def test_empty_drifted_nodes_are_deleted_when_consolidation_is_disabled(world: World) -> None:
    """drift_test.go Drift: It("should delete drifted nodes when they are empty and
    consolidation is disabled")."""
    never = {"consolidateAfter": "Never"}
    originals = fleet(world, 1, never)
    world.scale("big", 0)
    world.advance(120)
    assert len(world.nodes()) == 1
    drift(world, never)
    assert world.run_until(lambda: gone(world, originals), timeout=1800)
    [decision] = drifted(world)
    assert decision.decision == "delete"
    assert world.nodes() == []


def test_a_drifted_node_with_do_not_disrupt_is_kept(world: World) -> None:
    """drift_test.go Drift: It("should ignore nodes with the karpenter.sh/do-not-disrupt
    annotation set to true")."""
    originals = fleet(world, 1)
    annotate_node(world, "true")
    drift(world)
    world.advance(900)
    assert {objects.name(c) for c in world.nodeclaims()} == originals
    assert drifted(world) == []


def test_a_drifted_node_with_do_not_disrupt_false_is_replaced(world: World) -> None:
    """drift_test.go Drift: It("should delete drifted nodes with the karpenter.sh/do-not-disrupt
    annotation set to false")."""
    originals = fleet(world, 1)
    annotate_node(world, "false")
    drift(world)
    assert world.run_until(lambda: gone(world, originals), timeout=1800)
    assert len(drifted(world)) == 1


def test_a_drifted_node_running_a_do_not_disrupt_pod_gets_no_replacement(world: World) -> None:
    """drift_test.go Drift: It("should not create replacements for drifted nodes that have pods
    with the karpenter.sh/do-not-disrupt annotation set to true")."""
    originals = fleet(world, 1, None, GUARD % "true")
    drift(world)
    world.advance(900)
    assert {objects.name(c) for c in world.nodeclaims()} == originals
    assert drifted(world) == []


GRACE = {"terminationGracePeriod": "300s"}
GUARD_PDB = """
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: guard, namespace: default}
spec:
  maxUnavailable: 0
  selector: {matchLabels: {app: guard}}
"""


def drift_without_replacement(world: World, *guards: str) -> None:
    """A node whose only pod cannot be evicted, launched with a terminationGracePeriod, drifts:
    it is a candidate of drift's eventual class, but its pod is not counted as moving
    (Karpenter's IsCurrentlyReschedulable), so the command deletes it and no replacement
    is ever created; the drain forces the pod out when the grace period ends."""
    world.apply(WORKSHOP, nodepool_with(template=GRACE), *guards)
    assert world.settle()
    originals = {objects.name(c) for c in world.nodeclaims()}
    assert len(originals) == 1
    drift(world, template=GRACE)
    seen: set[str] = set()
    for _ in range(90):
        world.advance(10)
        seen |= {objects.name(c) for c in world.nodeclaims()}
    assert seen == originals
    [decision] = drifted(world)
    assert (decision.decision, decision.replacements) == ("delete", ())
    assert world.nodeclaims() == []


def test_a_drifted_node_with_a_do_not_disrupt_pod_and_a_grace_period_gets_no_replacement(
        world: World) -> None:
    """drift_test.go Drift: It("should not create replacements for drifted nodes that have pods
    with the karpenter.sh/do-not-disrupt annotation set to true when the NodePool's
    TerminationGracePeriod is not nil") (Karpenter's NodeClaim there has no grace period,
    the plain case above; here it inherits the NodePool's)."""
    drift_without_replacement(world, GUARD.replace("annotations:", "labels: {app: guard}\n"
                                                    "  annotations:") % "true")


def test_a_drifted_node_with_a_pdb_blocked_pod_and_a_grace_period_gets_no_replacement(
        world: World) -> None:
    """drift_test.go Drift: It("should not create replacements for drifted nodes that have pods
    with the blocking PDBs when the NodePool's TerminationGracePeriod is not nil")."""
    drift_without_replacement(world, GUARD.replace(
        "annotations: {karpenter.sh/do-not-disrupt: \"%s\"}", "labels: {app: guard}"), GUARD_PDB)


def test_a_duration_do_not_disrupt_holds_drift_until_it_elapses(world: World) -> None:
    """drift_test.go Drift: It("should not drift nodes with pods that have a duration-based
    do-not-disrupt annotation that is still active")."""
    originals = fleet(world, 1, None, GUARD % "30m")
    began = world.clock.now()
    drift(world)
    world.advance(20 * 60)
    assert {objects.name(c) for c in world.nodeclaims()} == originals
    assert drifted(world) == []
    assert world.run_until(lambda: gone(world, originals), timeout=3600)
    [decision] = drifted(world)
    assert (decision.time - began).total_seconds() >= 25 * 60


def test_a_pod_with_an_unreadable_do_not_disrupt_does_not_hold_drift(world: World) -> None:
    """drift_test.go Drift: It("should drift nodes with pods that have an invalid
    do-not-disrupt annotation format")."""
    originals = fleet(world, 1, None, GUARD % "invalid-duration")
    drift(world)
    assert world.run_until(lambda: gone(world, originals), timeout=1800)
    assert len(drifted(world)) == 1


def test_a_budget_of_three_replaces_three_drifted_nodes_at_a_time(world: World) -> None:
    """drift_test.go Budgets: It("should only consider 3 nodes allowed to be disrupted because of
    budgets") and It("should disrupt 3 nodes, taking into account commands in progress")."""
    budget = {"budgets": [{"nodes": "3"}]}
    originals = fleet(world, 5, budget)
    drift(world, budget)
    most = 0
    for _ in range(1800):
        world.advance(2)
        most = max(most, originals_disrupting(world, originals))
        if gone(world, originals):
            break
    assert most == 3
    assert gone(world, originals)
    assert {d.nodeclaim for d in drifted(world)} == originals


def test_empty_drifted_nodes_go_before_busy_ones(world: World) -> None:
    """drift_test.go Drift: It("should drift empty nodes before non-empty nodes")."""
    never = {"consolidateAfter": "Never", "budgets": [{"nodes": "1"}]}
    originals = fleet(world, 2, never)
    world.delete("Pod", objects.name(world.pods(labels={"app": "big"})[0]), "default")
    world.scale("big", 1)
    world.advance(60)
    busy = {p["spec"]["nodeName"] for p in world.pods(labels={"app": "big"})}
    [empty] = {objects.name(n) for n in world.nodes()} - busy
    drift(world, never)
    assert world.run_until(lambda: gone(world, originals), timeout=3600)
    first = drifted(world)[0]
    assert (first.node, first.decision) == (empty, "delete")


def drift_one(world: World, nodeclaim: str) -> None:
    """Make one NodeClaim look launched from an older template: only it drifts."""
    world.cluster.patch("NodeClaim", nodeclaim, {"metadata": {"annotations": {
        "karpenter.sh/nodepool-hash": "1234567890"}}})


def node_of(world: World, nodeclaim: str) -> str:
    return str(world.cluster.get("NodeClaim", nodeclaim)["status"]["nodeName"])


def test_a_drifted_node_whose_pods_fit_elsewhere_is_deleted(world: World) -> None:
    """drift_test.go Drift: It("should delete drifted nodes"), and (the node that did not
    drift stays) It("should ignore nodes without the drifted status condition") and It("should
    ignore nodes with the drifted status condition set to false")."""
    world.apply(WORKSHOP, nodepool_with(disruption={"consolidateAfter": "Never"}))
    world.scale("inflate", 5)
    assert world.settle()
    world.scale("inflate", 12)
    assert world.settle()
    world.scale("inflate", 3)
    assert world.settle()
    claims = sorted(objects.name(c) for c in world.nodeclaims())
    assert len(claims) == 2
    drift_one(world, claims[0])
    assert world.run_until(lambda: gone(world, {claims[0]}), timeout=1800)
    [decision] = drifted(world)
    assert (decision.nodeclaim, decision.decision) == (claims[0], "delete")
    assert sorted(objects.name(c) for c in world.nodeclaims()) == [claims[1]]
    expect_running(world, 3)


PINNED = """
apiVersion: v1
kind: Pod
metadata: {name: pinned, namespace: default}
spec:
  nodeSelector: {kubernetes.io/hostname: %s}
  terminationGracePeriodSeconds: 0
  containers: [{name: app, resources: {requests: {cpu: 100m}}}]
"""


def test_drift_moves_on_when_the_first_drifted_node_cannot_reschedule_its_pods(
        world: World) -> None:
    """drift_test.go Drift: It("should continue to the next drifted node if the first cannot
    reschedule all pods")."""
    originals = sorted(fleet(world, 2))
    stuck, movable = originals
    world.apply(PINNED % node_of(world, stuck))
    assert world.settle()
    drift_one(world, stuck)
    world.advance(30)
    drift_one(world, movable)
    assert world.run_until(lambda: gone(world, {movable}), timeout=1800)
    assert [d.nodeclaim for d in drifted(world)] == [movable]
    assert stuck in {objects.name(c) for c in world.nodeclaims()}
    blocked = [e["note"] for e in world.events(ex.DISRUPTION_BLOCKED, kind="NodeClaim")
               if e["regarding"]["name"] == stuck]
    assert blocked, "the stuck node's NodeClaim was not told why"


def test_drifted_nodes_go_one_at_a_time_earliest_drift_first(world: World) -> None:
    """drift_test.go Drift: It("should drift one non-empty node at a time, starting with the
    earliest drift")."""
    one = {"budgets": [{"nodes": "1"}]}
    first, second = sorted(fleet(world, 2, one))
    drift_one(world, second)
    world.advance(1)
    drift_one(world, first)
    assert world.run_until(lambda: gone(world, {first, second}), timeout=3600)
    assert [d.nodeclaim for d in drifted(world)] == [second, first]


def test_a_node_is_untainted_when_its_drift_replacement_fails(world: World) -> None:
    """drift_test.go Drift: It("should untaint nodes when drift replacement fails")."""
    originals = fleet(world, 1)
    node_name = node_of(world, next(iter(originals)))
    for instance_type in world.cloud.catalog.instance_types(None):
        if instance_type.name.split(".")[0] in ("c5", "m5"):
            world.cloud.capacity.add(CapacityRule(instance_type.name, 0))
    drift(world)
    tainted = False
    for _ in range(300):
        world.advance(1)
        [node] = [n for n in world.nodes() if objects.name(n) == node_name]
        taints = {t["key"] for t in node["spec"].get("taints") or []}
        tainted = tainted or "karpenter.sh/disrupted" in taints
        if tainted and "karpenter.sh/disrupted" not in taints:
            break
    assert tainted, "the drifted node was never tainted for its replacement"
    assert "karpenter.sh/disrupted" not in taints, "the node kept its taint"
    assert {objects.name(c) for c in world.nodeclaims()} == originals
    expect_running(world, 1, {"app": "big"})


def test_the_eligible_nodes_gauge_counts_drifted_nodes(world: World) -> None:
    """drift_test.go Metrics: It("should correctly report eligible drifted nodes")."""
    closed = {"budgets": [{"nodes": "0"}]}
    fleet(world, 2, closed)
    world.advance(60)
    assert sample_value("karpenter_voluntary_disruption_eligible_nodes",
                                     {"reason": "drifted"}) == 0
    drift(world, closed)
    world.advance(120)
    assert sample_value("karpenter_voluntary_disruption_eligible_nodes",
                                     {"reason": "drifted"}) == 2


def test_drift_waits_for_the_longest_do_not_disrupt_of_the_nodes_pods(world: World) -> None:
    """drift_test.go Drift: It("should not drift nodes until the longest duration-based
    do-not-disrupt grace period expires across multiple pods")."""
    short = GUARD.replace("name: guard", "name: short") % "10m"
    originals = fleet(world, 1, None, short, GUARD % "30m")
    began = world.clock.now()
    drift(world)
    world.advance(20 * 60)
    assert {objects.name(c) for c in world.nodeclaims()} == originals
    assert drifted(world) == []
    assert world.run_until(lambda: gone(world, originals), timeout=3600)
    [decision] = drifted(world)
    assert (decision.time - began).total_seconds() >= 25 * 60


def test_each_nodepools_budget_holds_its_own_drifted_nodes(world: World) -> None:
    """drift_test.go Budgets: It("should respect budgets for multiple nodepools")."""
    one = {"budgets": [{"nodes": "1"}]}
    second = nodepool_with(disruption=one, labels={"type": "karpenter2"})
    second["metadata"]["name"] = "second"
    second_big = BIG.replace("name: big", "name: big2").replace(
        "app: big", "app: big2").replace("type: karpenter}", "type: karpenter2}")
    world.apply(WORKSHOP, nodepool_with(disruption=one), second, BIG % 2, second_big % 2)
    assert world.settle()
    originals = {objects.name(c): objects.labels(c)["karpenter.sh/nodepool"]
                 for c in world.nodeclaims()}
    assert sorted(originals.values()) == ["default", "default", "second", "second"]
    world.apply(nodepool_with(disruption=one, labels=PAYMENTS))
    changed = nodepool_with(disruption=one, labels={"type": "karpenter2", "team": "payments"})
    changed["metadata"]["name"] = "second"
    world.apply(changed)
    most = {"default": 0, "second": 0}
    for _ in range(1800):
        world.advance(2)
        for pool in most:
            mine = {n for n, p in originals.items() if p == pool}
            most[pool] = max(most[pool], originals_disrupting(world, mine))
        if gone(world, set(originals)):
            break
    assert most == {"default": 1, "second": 1}
    assert gone(world, set(originals))
