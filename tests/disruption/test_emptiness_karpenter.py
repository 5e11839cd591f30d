"""Karpenter v1.14.1 pkg/controllers/disruption/emptiness_test.go, told as stories: a pool
of nodes with one pod each empties, and the empty nodes go — as many at once as the
budgets allow, never a node that still runs a pod or is protected by do-not-disrupt, and
only after consolidateAfter has passed."""

from __future__ import annotations

from typing import Any

from nodewright.cluster import objects
from nodewright.controllers.common import decision_log as ex
from tests.controllers.conftest import WORKSHOP
from tests.controllers.expectations import expect_no_controller_errors, expect_running
from tests.controllers.metric_samples import sample_value
from tests.disruption.helpers import BIG, nodepool_with, started, statefulset
from tests.harness import World


def one_pod_a_node(world: World, nodes: int, disruption: dict[str, Any] | None = None) -> None:
    """`nodes` nodes, each running one `big` pod, all initialized."""
    world.apply(WORKSHOP, nodepool_with(disruption=disruption), BIG % nodes)
    assert world.settle()
    assert len(world.nodes()) == nodes


def empty_at_once(world: World, seconds: int = 300) -> int:
    """Scale `big` to zero and watch: the most nodes being deleted at the same time."""
    world.scale("big", 0)
    most = 0
    for _ in range(seconds):
        world.advance(1)
        most = max(most, sum(1 for c in world.nodeclaims() if objects.is_deleting(c)))
    return most


def emptied(world: World) -> list[ex.Decision]:
    return [d for d in started(world) if d.method == ex.EMPTINESS]


def largest_command(world: World) -> int:
    """The most nodes one emptiness command deleted (its decisions share a time)."""
    times = [d.time for d in emptied(world)]
    return max(times.count(t) for t in times)


def test_can_delete_empty_nodes(world: World) -> None:
    """emptiness_test.go Emptiness: It("can delete empty nodes")."""
    one_pod_a_node(world, 1)
    world.scale("big", 0)
    assert world.run_until(lambda: not world.nodes(), timeout=600)
    assert [d.decision for d in emptied(world)] == ["delete"]
    assert world.live_instances() == []
    expect_no_controller_errors(world)


def test_can_delete_multiple_empty_nodes(world: World) -> None:
    """emptiness_test.go: It("can delete multiple empty nodes")."""
    one_pod_a_node(world, 3, {"budgets": [{"nodes": "100%"}]})
    world.scale("big", 0)
    assert world.run_until(lambda: not world.nodes(), timeout=600)
    assert len({d.nodeclaim for d in emptied(world)}) == 3
    expect_no_controller_errors(world)


def test_all_empty_nodes_are_disrupted_at_once_with_a_full_budget(world: World) -> None:
    """emptiness_test.go Budgets: It("should allow all empty nodes to be disrupted")."""
    one_pod_a_node(world, 5, {"budgets": [{"nodes": "100%"}]})
    assert empty_at_once(world) == 5
    assert world.nodes() == []
    # One command deletes them all.
    assert len({d.time for d in emptied(world)}) == 1


def test_no_empty_node_is_disrupted_with_a_zero_budget(world: World) -> None:
    """emptiness_test.go Budgets: It("should allow no empty nodes to be disrupted")."""
    one_pod_a_node(world, 3, {"budgets": [{"nodes": "0%"}]})
    assert empty_at_once(world, 600) == 0
    assert len(world.nodes()) == 3
    assert emptied(world) == []


def test_only_three_empty_nodes_are_disrupted_at_once(world: World) -> None:
    """emptiness_test.go Budgets: It("should only allow 3 empty nodes to be disrupted").
    Karpenter's pass takes 3 of 10; with commands in parallel the freed budget takes the
    rest a wave at a time, never more than 3 at once."""
    one_pod_a_node(world, 6, {"budgets": [{"nodes": "3"}]})
    world.scale("big", 0)
    assert world.run_until(lambda: not world.nodes(), timeout=1800)
    assert len({d.nodeclaim for d in emptied(world)}) == 6
    assert largest_command(world) == 3


def test_each_nodepool_gives_its_own_budget(world: World) -> None:
    """emptiness_test.go Budgets: It("should allow 2 nodes from each nodePool to be deleted")."""
    second = nodepool_with(disruption={"budgets": [{"nodes": "2"}]},
                           labels={"type": "karpenter2"})
    second["metadata"]["name"] = "second"
    second_big = BIG.replace("name: big", "name: big2").replace(
        "app: big", "app: big2").replace("type: karpenter}", "type: karpenter2}")
    world.apply(WORKSHOP, nodepool_with(disruption={"budgets": [{"nodes": "2"}]}),
                second, BIG % 3, second_big % 3)
    assert world.settle()
    assert len(world.nodes()) == 6
    world.scale("big2", 0)
    world.scale("big", 0)
    assert world.run_until(lambda: not world.nodes(), timeout=1800)
    pools = {d.nodeclaim: d.nodepool for d in emptied(world)}
    assert sorted(pools.values()) == ["default"] * 3 + ["second"] * 3
    for pool in ("default", "second"):
        times = [d.time for d in emptied(world) if d.nodepool == pool]
        assert max(times.count(t) for t in times) == 2, pool


def test_a_node_with_do_not_disrupt_is_not_emptied(world: World) -> None:
    """emptiness_test.go Emptiness: It("should ignore nodes with the karpenter.sh/do-not-disrupt
    annotation")."""
    one_pod_a_node(world, 1)
    [node] = world.nodes()
    world.cluster.patch("Node", objects.name(node), {"metadata": {"annotations": {
        "karpenter.sh/do-not-disrupt": "true"}}})
    world.scale("big", 0)
    world.advance(600)
    assert [objects.name(n) for n in world.nodes()] == [objects.name(node)]
    assert emptied(world) == []


def test_a_node_with_do_not_disrupt_false_is_emptied(world: World) -> None:
    """emptiness_test.go Emptiness: It("should delete nodes with the karpenter.sh/do-not-disrupt
    annotation set to false")."""
    one_pod_a_node(world, 1)
    [node] = world.nodes()
    world.cluster.patch("Node", objects.name(node), {"metadata": {"annotations": {
        "karpenter.sh/do-not-disrupt": "false"}}})
    world.scale("big", 0)
    assert world.run_until(lambda: not world.nodes(), timeout=600)
    assert len(emptied(world)) == 1


def test_a_node_that_runs_a_pod_is_not_emptied(world: World) -> None:
    """emptiness_test.go Emptiness: It("should ignore nodes that have pods") with
    consolidationPolicy WhenEmpty: the node runs a pod and stays."""
    one_pod_a_node(world, 1, {"consolidationPolicy": "WhenEmpty"})
    world.advance(600)
    assert len(world.nodes()) == 1
    assert emptied(world) == []
    expect_running(world, 1, {"app": "big"})


def test_a_node_running_only_daemonset_pods_is_empty(world: World) -> None:
    """emptiness_test.go: It("will consider a node with a DaemonSet pod as empty")."""
    one_pod_a_node(world, 1)
    [node] = world.nodes()
    on_node = [p for p in world.pods(None) if p["spec"].get("nodeName") == objects.name(node)]
    assert any(objects.namespace(p) == "kube-system" for p in on_node)
    world.scale("big", 0)
    assert world.run_until(lambda: not world.nodes(), timeout=600)
    assert [d.decision for d in emptied(world)] == ["delete"]


def test_an_empty_node_waits_for_consolidate_after(world: World) -> None:
    """emptiness_test.go: It("should wait for the node TTL for empty nodes before
    consolidating"), Emptiness: It("should ignore nodes without the consolidatable status
    condition") and It("should ignore nodes with the consolidatable status condition set to
    false"): until consolidateAfter has passed the condition is absent or false."""
    one_pod_a_node(world, 1, {"consolidateAfter": "10m"})
    world.scale("big", 0)
    world.advance(9 * 60)
    assert len(world.nodes()) == 1
    assert emptied(world) == []
    assert world.run_until(lambda: not world.nodes(), timeout=600)
    [decision] = emptied(world)
    assert decision.decision == "delete"


def eligible(reason: str) -> float | None:
    return sample_value("karpenter_voluntary_disruption_eligible_nodes",
                                     {"reason": reason})


def test_the_eligible_nodes_gauge_counts_the_empty_node(world: World) -> None:
    """emptiness_test.go Metrics: It("should correctly report eligible nodes")."""
    one_pod_a_node(world, 1, {"budgets": [{"nodes": "0"}]})
    world.advance(60)
    assert eligible("empty") == 0
    world.scale("big", 0)
    world.advance(120)
    assert eligible("empty") == 1
    assert len(world.nodes()) == 1


def test_a_node_whose_deployment_pods_are_terminating_is_empty(world: World) -> None:
    """emptiness_test.go: It("will consider a node with terminating Deployment pods as
    empty")."""
    slow = BIG.replace("terminationGracePeriodSeconds: 0", "terminationGracePeriodSeconds: 3600")
    world.apply(WORKSHOP, slow % 1)
    assert world.settle()
    world.scale("big", 0)
    world.advance(5)
    assert world.pods(labels={"app": "big"}), "the pod finished terminating at once"
    assert all(objects.is_deleting(p) for p in world.pods(labels={"app": "big"}))
    # Within ten minutes: long before the pod's hour of grace is over.
    assert world.run_until(lambda: bool(emptied(world)), timeout=600)
    [decision] = emptied(world)
    assert decision.decision == "delete"




def test_a_node_whose_statefulset_pod_is_terminating_is_not_empty(world: World) -> None:
    """emptiness_test.go: It("will not consider a node with a terminating StatefulSet pod as
    empty")."""
    world.apply(WORKSHOP, statefulset(grace_seconds=3600, requests={"memory": "1Gi"}))
    assert world.settle()
    world.scale("db", 0, kind="StatefulSet")
    world.advance(5)
    assert world.pods(labels={"app": "db"}), "the pod finished terminating at once"
    world.advance(600)
    assert emptied(world) == []
    assert len(world.nodes()) == 1


def test_a_full_budget_in_each_nodepool_deletes_each_pools_empty_nodes_at_once(
        world: World) -> None:
    """emptiness_test.go Budgets: It("should allow all nodes from each nodePool to be
    deleted")."""
    full = {"budgets": [{"nodes": "100%"}]}
    second = nodepool_with(disruption=full, labels={"type": "karpenter2"})
    second["metadata"]["name"] = "second"
    second_big = BIG.replace("name: big", "name: big2").replace(
        "app: big", "app: big2").replace("type: karpenter}", "type: karpenter2}")
    world.apply(WORKSHOP, nodepool_with(disruption=full), second, BIG % 2, second_big % 2)
    assert world.settle()
    assert len(world.nodes()) == 4
    world.scale("big2", 0)
    world.scale("big", 0)
    assert world.run_until(lambda: not world.nodes(), timeout=1800)
    for pool in ("default", "second"):
        assert len({d.time for d in emptied(world) if d.nodepool == pool}) == 1, pool


def test_an_empty_drifted_node_is_deleted_without_a_replacement(world: World) -> None:
    """emptiness_test.go Emptiness: It("can delete empty and drifted nodes"), and
    drift_test.go Drift: It("should delete drifted nodes when they are empty and
    consolidatable")."""
    one_pod_a_node(world, 1)
    originals = {objects.name(c) for c in world.nodeclaims()}
    world.scale("big", 0)
    world.apply(nodepool_with(labels={"type": "karpenter", "team": "payments"}))
    most = 0
    for _ in range(600):
        world.advance(1)
        most = max(most, len(world.nodeclaims()))
        if not world.nodeclaims():
            break
    assert world.nodeclaims() == [] and most == 1, "a replacement was launched"
    [decision] = [d for d in started(world) if d.nodeclaim in originals]
    assert decision.decision == "delete"


HOG = """
apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: default}
spec:
  nodeSelector: {type: karpenter}
  terminationGracePeriodSeconds: 0
  containers: [{name: app, resources: {requests: {cpu: "%s"}}}]
"""
# Pending and marked Unschedulable, but no kube-scheduler of this world binds it (its
# scheduler is another): it stays pending while it fits the node, as Karpenter's pod does.
WAITING = (HOG % ("waiting", "62")).replace("spec:\n", "spec:\n  schedulerName: elsewhere\n")


def test_a_pending_pod_that_needs_the_large_node_keeps_it(world: World) -> None:
    """emptiness_test.go: It("considers pending pods when consolidating"): a c5.18xlarge runs
    a 1-CPU pod while a 62-CPU pod is pending that only it can hold; consolidation sees the
    pending pod and neither replaces nor deletes the node."""
    world.apply(WORKSHOP, nodepool_with(disruption={"consolidateAfter": "0s"}), HOG % ("hog", 60))
    assert world.settle()
    [node] = world.nodes()
    assert objects.labels(node)["node.kubernetes.io/instance-type"] == "c5.18xlarge"
    world.apply(HOG % ("small", 1))
    world.advance(5)
    world.delete("Pod", "hog", "default")
    world.apply(WAITING)
    world.cluster.patch("Pod", "waiting", {"status": {"conditions": [{
        "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
        "message": "0/1 nodes are available"}]}}, "default", subresource="status")
    world.advance(600)
    assert [objects.name(n) for n in world.nodes()] == [objects.name(node)]
    assert len(world.nodeclaims()) == 1
    assert started(world) == []


def test_a_node_whose_pods_cost_nothing_to_evict_counts_as_empty(world: World) -> None:
    """types.go Candidate.IsEmpty (v1.14.1): a node is empty when no pod adds a positive
    eviction cost. Its one pod has the lowest pod-deletion-cost (its cost clamps below
    zero), so even a WhenEmpty pool's Emptiness deletes the node, and the pod is placed
    again on a new one."""
    cheap = BIG.replace("metadata: {labels: {app: big}}", "metadata: {labels: {app: big}, "
                        "annotations: {controller.kubernetes.io/pod-deletion-cost: "
                        "'-2147483647'}}")
    assert cheap != BIG
    world.apply(WORKSHOP, nodepool_with(disruption={"consolidationPolicy": "WhenEmpty"}),
                cheap % 1)
    # It never settles: each node the pod lands on is empty in Karpenter's sense.
    assert world.run_until(lambda: bool(world.nodes()) and bool(world.running_pods()),
                           timeout=600)
    [node] = world.nodes()
    assert world.run_until(lambda: bool(emptied(world)), timeout=600)
    [decision] = emptied(world)[:1]
    assert decision.decision == "delete"
    assert decision.node == objects.name(node)
    assert world.run_until(
        lambda: objects.name(node) not in {objects.name(n) for n in world.nodes()}
        and bool(world.nodes()), timeout=600)
    expect_running(world, 1, {"app": "big"})
