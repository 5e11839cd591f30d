"""Karpenter v1.14.1 pkg/controllers/disruption/consolidation_test.go (a selection), told as
stories on the workshop: two m5.large running twelve 1Gi pods scale down to five, and one
node goes — unless a PodDisruptionBudget, a do-not-disrupt annotation, anti-affinity,
consolidateAfter or the consolidation policy says otherwise."""

from __future__ import annotations

from typing import Any

from nodewright.cluster import objects
from nodewright.controllers.common import decision_log as ex
from tests.controllers.conftest import WORKSHOP
from tests.controllers.expectations import (
    expect_instance_types,
    expect_no_controller_errors,
    expect_running,
)
from tests.disruption.helpers import BIG, decisions, nodepool_with, started
from tests.disruption.test_consolidation_karpenter_budgets import spread_then_shrink
from tests.harness import World

PDB = """
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: inflate, namespace: default}
spec:
  maxUnavailable: 0
  selector: {matchLabels: {app: spill}}
"""


SPILL = (WORKSHOP / "inflate.yaml").read_text().replace("inflate", "spill")


def two_nodes_then_four_pods(world: World, disruption: dict[str, Any] | None = None,
                             *extra: str) -> None:
    """Four inflate pods on an m5.large, four spill pods across it and a c5.large; then
    inflate goes: each node runs two spill pods, and all four fit on the m5.large."""
    world.apply(WORKSHOP, nodepool_with(disruption=disruption), SPILL, *extra)
    world.scale("inflate", 4)
    assert world.settle()
    world.scale("spill", 4)
    assert world.settle()
    expect_instance_types(world, "c5.large", "m5.large")
    world.scale("inflate", 0)
    world.advance(5)
    on_nodes = [p["spec"].get("nodeName") for p in world.pods(labels={"app": "spill"})]
    assert sorted(on_nodes.count(n) for n in set(on_nodes)) == [2, 2]


def annotate_pods(world: World, value: str, app: str = "spill") -> None:
    for pod in world.pods(labels={"app": app}):
        world.cluster.patch("Pod", objects.name(pod), {"metadata": {"annotations": {
            "karpenter.sh/do-not-disrupt": value}}}, "default")


def consolidated(world: World) -> list[ex.Decision]:
    return [d for d in started(world) if d.method in (ex.SINGLE_NODE, ex.MULTI_NODE)]


def two_c5_large_one_pod_each(world: World, *extra: str) -> None:
    """Two c5.large, each running one 800m `filler` pod: either can take the other's."""
    spread_then_shrink(world, 2, {})
    world.apply(*extra)


def expect_one_deleted(world: World) -> None:
    assert world.run_until(lambda: len(world.nodes()) == 1, timeout=1800)
    [deleted] = consolidated(world)
    assert deleted.decision == "delete"
    assert world.settle()
    expect_instance_types(world, "c5.large")
    expect_running(world, 2, {"app": "filler"})


def test_can_delete_nodes(world: World) -> None:
    """consolidation_test.go Delete: It("can delete nodes")."""
    two_c5_large_one_pod_each(world)
    expect_one_deleted(world)
    expect_no_controller_errors(world)


def test_a_pdb_that_allows_nothing_keeps_the_nodes(world: World) -> None:
    """consolidation_test.go Delete: It("can delete nodes, considers PDB")."""
    two_nodes_then_four_pods(world, None, PDB)
    world.advance(600)
    assert len(world.nodes()) == 2
    assert consolidated(world) == []
    assert any(d.cause == ex.CAUSE_PDB for d in decisions(world))


def test_do_not_disrupt_nodes_are_kept(world: World) -> None:
    """consolidation_test.go Delete: It("can delete nodes, considers karpenter.sh/do-not-disrupt
    set to true on nodes")."""
    two_nodes_then_four_pods(world, {"consolidateAfter": "2m"})
    for node in world.nodes():
        world.cluster.patch("Node", objects.name(node), {"metadata": {"annotations": {
            "karpenter.sh/do-not-disrupt": "true"}}})
    world.advance(600)
    assert len(world.nodes()) == 2
    assert consolidated(world) == []


def test_do_not_disrupt_pods_keep_their_nodes(world: World) -> None:
    """consolidation_test.go Delete: It("can delete nodes, considers karpenter.sh/do-not-disrupt
    set to true on pods")."""
    two_nodes_then_four_pods(world, {"consolidateAfter": "2m"})
    annotate_pods(world, "true")
    world.advance(600)
    assert len(world.nodes()) == 2
    assert consolidated(world) == []
    assert any(d.cause == ex.CAUSE_DO_NOT_DISRUPT for d in decisions(world))


def test_a_duration_do_not_disrupt_holds_consolidation_until_it_elapses(world: World) -> None:
    """consolidation_test.go Delete: It("does not consolidate nodes with pods that have a
    duration-based do-not-disrupt annotation that is still active") and It("can consolidate
    nodes after duration-based do-not-disrupt annotation expires")."""
    two_nodes_then_four_pods(world, {"consolidateAfter": "2m"})
    annotate_pods(world, "30m")
    began = world.clock.now()
    world.advance(20 * 60)
    assert len(world.nodes()) == 2
    assert consolidated(world) == []
    assert world.run_until(lambda: bool(consolidated(world)), timeout=3600)
    # The pods started a few minutes before `began`: their 30 minutes end then.
    assert (consolidated(world)[0].time - began).total_seconds() >= 20 * 60
    assert world.settle()
    expect_running(world, 4, {"app": "spill"})


def test_an_unreadable_do_not_disrupt_does_not_block(world: World) -> None:
    """consolidation_test.go Delete: It("can delete nodes, considers invalid do-not-disrupt
    annotation format as not blocking")."""
    two_c5_large_one_pod_each(world)
    annotate_pods(world, "invalid", "filler")
    expect_one_deleted(world)


def test_a_node_is_not_deleted_when_anti_affinity_needs_it(world: World) -> None:
    """consolidation_test.go Topology Consideration: It("won't delete node if it would violate
    pod anti-affinity") and Delete: It("won't delete nodes if it would make a non-pending pod go
    pending")."""
    world.apply(WORKSHOP, BIG % 2)
    assert world.settle()
    world.advance(900)
    assert len(world.nodes()) == 2
    assert [d for d in consolidated(world) if d.decision == "delete"] == []
    expect_running(world, 2, {"app": "big"})


def test_a_non_empty_node_waits_for_consolidate_after(world: World) -> None:
    """consolidation_test.go TTL: It("should wait for the node TTL for non-empty nodes before
    consolidating"): an m5.large whose one pod would fit a c5.large waits out its ten
    minutes of consolidateAfter first."""
    world.apply(WORKSHOP, nodepool_with(disruption={"consolidateAfter": "10m"}))
    world.scale("inflate", 5)
    assert world.settle()
    world.scale("inflate", 1)
    world.advance(9 * 60)
    expect_instance_types(world, "m5.large")
    assert consolidated(world) == []
    assert world.run_until(lambda: bool(consolidated(world)), timeout=900)
    assert world.settle()
    expect_instance_types(world, "c5.large")


def test_can_replace_a_node_with_a_cheaper_one(world: World) -> None:
    """consolidation_test.go Replace: DescribeTable("can replace node") Entry("if the candidate
    is on-demand node")."""
    world.apply(WORKSHOP)
    world.scale("inflate", 5)
    assert world.settle()
    expect_instance_types(world, "m5.large")
    world.scale("inflate", 1)
    assert world.settle()
    expect_instance_types(world, "c5.large")
    [replaced] = consolidated(world)
    assert (replaced.method, replaced.decision) == (ex.SINGLE_NODE, "replace")
    expect_running(world, 1)


def test_a_node_is_not_replaced_by_a_more_expensive_one(world: World) -> None:
    """consolidation_test.go Replace: It("won't replace on-demand node if on-demand replacement
    is more expensive")."""
    world.apply(WORKSHOP)
    world.scale("inflate", 5)
    assert world.settle()
    world.advance(900)
    expect_instance_types(world, "m5.large")
    assert consolidated(world) == []
    assert any(d.cause == ex.CAUSE_NO_CHEAPER for d in decisions(world))


def unconsolidatable(world: World) -> list[str]:
    return [e["note"] for e in world.events(ex.UNCONSOLIDATABLE)]


def test_when_empty_tells_a_busy_node_consolidation_is_disabled(world: World) -> None:
    """consolidation_test.go Events: It("should fire an event for ConsolidationDisabled when
    the NodePool has consolidation set to WhenEmpty")."""
    world.apply(WORKSHOP, nodepool_with(disruption={"consolidationPolicy": "WhenEmpty",
                                                    "consolidateAfter": "1m"}))
    world.scale("inflate", 1)
    assert world.settle()
    world.advance(120)
    notes = unconsolidatable(world)
    # Karpenter's words (consolidation.go).
    assert notes and all(n == 'NodePool "default" has consolidation policy WhenEmpty, but node '
                         "is not empty" for n in notes), notes
    kinds = {e["regarding"]["kind"] for e in world.events(ex.UNCONSOLIDATABLE)}
    assert kinds == {"Node", "NodeClaim"}


def test_consolidate_after_never_tells_the_node_consolidation_is_disabled(
        world: World) -> None:
    """consolidation_test.go Events: It("should fire an event for ConsolidationDisabled when
    the NodePool has consolidateAfter set to 'Never'")."""
    world.apply(WORKSHOP, nodepool_with(disruption={"consolidateAfter": "Never"}))
    world.scale("inflate", 1)
    assert world.settle()
    world.advance(120)
    notes = unconsolidatable(world)
    assert notes and all(n == 'NodePool "default" has consolidation disabled' for n in notes)
    assert len(world.nodes()) == 1


def test_when_empty_or_underutilized_fires_no_consolidation_disabled_event(
        world: World) -> None:
    """consolidation_test.go Events: It("should not fire an event for ConsolidationDisabled
    when the NodePool has consolidation set to WhenEmptyOrUnderutilized")."""
    world.apply(WORKSHOP, nodepool_with(disruption={"consolidateAfter": "0s"}))
    world.scale("inflate", 1)
    assert world.settle()
    world.scale("inflate", 0)
    assert world.run_until(lambda: not world.nodes(), timeout=600)
    # It may say a busy node cannot get cheaper, never that consolidation is disabled.
    disabled = [n for n in unconsolidatable(world)
                if "consolidation disabled" in n or "consolidation policy" in n]
    assert disabled == []
    assert [d for d in decisions(world) if d.cause == ex.CAUSE_CONSOLIDATION_DISABLED] == []


def test_a_zero_budget_keeps_every_node(world: World) -> None:
    """consolidation_test.go Budgets: It("should allow no nodes from each nodePool to be
    deleted")."""
    two_nodes_then_four_pods(world, {"consolidateAfter": "2m", "budgets": [{"nodes": "0"}]})
    world.advance(600)
    assert len(world.nodes()) == 2
    assert consolidated(world) == []
    assert any(d.cause == ex.CAUSE_BUDGET for d in decisions(world))


NEVER_FITS = """
apiVersion: v1
kind: Pod
metadata: {name: never-fits, namespace: default}
spec:
  nodeSelector: {type: karpenter, zone-of-dreams: "yes"}
  containers: [{name: app, resources: {requests: {cpu: 100m}}}]
"""


def test_a_permanently_pending_pod_does_not_stop_a_delete(world: World) -> None:
    """consolidation_test.go Delete: It("can delete nodes with a permanently pending pod")."""
    two_c5_large_one_pod_each(world, NEVER_FITS)
    expect_one_deleted(world)
    assert [objects.name(p) for p in world.pending_pods()] == ["never-fits"]


def one_m5_large_then_one_pod(world: World, *extra: str) -> str:
    """Five inflate pods on an m5.large, then one: the node could be a c5.large. Returns
    when consolidation has proposed that and is validating it (the node's name)."""
    world.apply(WORKSHOP, *extra)
    world.scale("inflate", 5)
    assert world.settle()
    [node] = world.nodes()
    world.scale("inflate", 1)
    assert world.run_until(lambda: any(d.cause == "Candidate" for d in decisions(world)),
                           timeout=600)
    return objects.name(node)


GUARD_ON = """
apiVersion: v1
kind: Pod
metadata:
  name: guard
  namespace: default
  annotations: {karpenter.sh/do-not-disrupt: "true"}
spec:
  nodeSelector: {kubernetes.io/hostname: %s}
  containers: [{name: app, resources: {requests: {cpu: 100m}}}]
"""


def test_a_do_not_disrupt_pod_arriving_during_validation_stops_the_replace(
        world: World) -> None:
    """consolidation_test.go TTL: It("should not replace node if a pod schedules with
    karpenter.sh/do-not-disrupt set to true during the TTL wait")."""
    node = one_m5_large_then_one_pod(world)
    world.apply(GUARD_ON % node)
    world.advance(60)
    assert consolidated(world) == []
    assert [objects.name(n) for n in world.nodes()] == [node]
    assert len(world.nodeclaims()) == 1


def test_a_blocking_pdb_arriving_during_validation_stops_the_replace(world: World) -> None:
    """consolidation_test.go TTL: It("should not replace node if a pod schedules with a blocking
    PDB during the TTL wait")."""
    node = one_m5_large_then_one_pod(world)
    world.apply(PDB.replace("app: spill", "app: inflate"))
    world.advance(60)
    assert consolidated(world) == []
    assert [objects.name(n) for n in world.nodes()] == [node]
    assert len(world.nodeclaims()) == 1


SMALL = """
apiVersion: v1
kind: Pod
metadata: {name: small, namespace: default}
spec:
  nodeSelector: {type: karpenter}
  terminationGracePeriodSeconds: 0
  containers: [{name: app, resources: {requests: {cpu: 100m}}}]
"""


def test_a_pod_arriving_during_a_replace_gets_no_extra_node(world: World) -> None:
    """consolidation_test.go Parallelization: It("should not schedule an additional node when
    receiving pending pods while consolidating")."""
    one_m5_large_then_one_pod(world)
    assert world.run_until(lambda: len(world.nodeclaims()) == 2, timeout=600)
    world.apply(SMALL)
    most = 0
    for _ in range(300):
        world.advance(1)
        most = max(most, len(world.nodeclaims()))
    assert most == 2
    assert world.settle()
    expect_instance_types(world, "c5.large")
    assert [objects.name(p) for p in world.running_pods() if objects.name(p) == "small"]


def one_busy_node_without(world: World, label: str) -> str:
    """One m5.large running a pod, its Node and NodeClaim stripped of `label`; the notes of
    the Unconsolidatable events that follow. Karpenter's NodePool requires none of these
    labels; the workshop's requires a capacity type, and a node without a label its NodePool
    requires is drifted (RequirementsDrifted), so that requirement goes."""
    pool = nodepool_with()
    template = pool["spec"]["template"]["spec"]
    template["requirements"] = [r for r in template["requirements"] if r["key"] != label]
    world.apply(WORKSHOP, pool)
    world.scale("inflate", 1)
    assert world.settle()
    [node] = world.nodes()
    [claim] = world.nodeclaims()
    world.cluster.patch("Node", objects.name(node), {"metadata": {"labels": {label: None}}})
    world.cluster.patch("NodeClaim", objects.name(claim), {"metadata": {"labels": {label: None}}})
    # Unconsolidatable is deduplicated per node for 15 minutes whatever the cause (as
    # Karpenter's, retold at the next 5-minute re-evaluation after that): the node may
    # have been told another one before the label went.
    world.advance(20 * 60)
    notes = set(unconsolidatable(world))
    assert len(world.nodes()) == 1
    assert consolidated(world) == []
    return " | ".join(sorted(notes))


def test_a_candidate_without_a_resolvable_instance_type_is_told_so(world: World) -> None:
    """consolidation_test.go Events: It("should fire an event when a candidate does not have a
    resolvable instance type")."""
    assert 'Instance Type "" not found' in one_busy_node_without(
        world, "node.kubernetes.io/instance-type")


def test_a_candidate_without_a_capacity_type_label_is_told_so(world: World) -> None:
    """consolidation_test.go Events: It("should fire an event when a candidate does not have
    the capacity type label")."""
    assert 'Node does not have label "karpenter.sh/capacity-type"' in one_busy_node_without(
        world, "karpenter.sh/capacity-type")


def test_a_candidate_without_a_zone_label_is_told_so(world: World) -> None:
    """consolidation_test.go Events: It("should fire an event when a candidate does not have
    the zone label")."""
    assert 'Node does not have label "topology.kubernetes.io/zone"' in one_busy_node_without(
        world, "topology.kubernetes.io/zone")
