"""Karpenter v1.14.1 pkg/controllers/disruption/consolidation_test.go, Contexts("Delete") and
("TTL"), told as stories: a node whose pods fit elsewhere is deleted — beside a NodePool
that cannot launch or is invalid, onto capacity Karpenter does not manage, evicting a pod
no controller owns — but not while a do-not-disrupt pod or a blocking PDB protects it (a
terminationGracePeriod changes nothing for consolidation), nor when during the 15-second
validation a pod arrives that changes the answer."""

from __future__ import annotations

from nodewright.cluster import objects
from nodewright.controllers.common import decision_log as ex
from tests.controllers.expectations import expect_no_controller_errors, expect_running
from tests.disruption.helpers import decisions, nodepool_with
from tests.disruption.test_consolidation_karpenter import (
    GUARD_ON,
    PDB,
    annotate_pods,
    consolidated,
    expect_one_deleted,
    one_m5_large_then_one_pod,
    two_c5_large_one_pod_each,
    two_nodes_then_four_pods,
)
from tests.disruption.test_consolidation_karpenter_budgets import fleet
from tests.disruption.test_consolidation_karpenter_metrics import validating
from tests.harness import World

NO_NODE_CLASS = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: no-node-class}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: missing}
      requirements: []
"""
INVALID = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: invalid}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: []
      taints: [{key: team, value: a, effect: NoSchedule}]
      startupTaints: [{key: team, value: b, effect: NoSchedule}]
"""


def test_a_nodepool_without_its_node_class_does_not_stop_a_delete(world: World) -> None:
    """consolidation_test.go Delete: It("can delete nodes if another nodePool has no node
    template") (a NodePool whose EC2NodeClass does not exist)."""
    two_c5_large_one_pod_each(world, NO_NODE_CLASS)
    expect_one_deleted(world)
    expect_no_controller_errors(world)


def test_an_invalid_nodepool_does_not_stop_a_delete(world: World) -> None:
    """consolidation_test.go Delete: It("can delete nodes while an invalid node pool exists")
    (a NodePool repeating a taint key and effect across taints and startupTaints, which
    Karpenter marks ValidationSucceeded=False)."""
    two_c5_large_one_pod_each(world, INVALID)
    world.advance(5)
    invalid = world.cluster.get("NodePool", "invalid")
    assert objects.condition(invalid, "ValidationSucceeded") is not None
    assert not objects.condition_is_true(invalid, "ValidationSucceeded")
    expect_one_deleted(world)


def test_a_terminating_grace_period_does_not_let_consolidation_pass_do_not_disrupt_pods(
        world: World) -> None:
    """consolidation_test.go Delete: It("does not consolidate nodes with karpenter.sh/do-not-
    disrupt set to true on pods when the NodePool's TerminationGracePeriod is not nil")."""
    two_nodes_then_four_pods(world, {"consolidateAfter": "2m"})
    world.apply(nodepool_with(disruption={"consolidateAfter": "2m"},
                              template={"terminationGracePeriod": "1h"}))
    annotate_pods(world, "true")
    world.advance(900)
    assert len(world.nodes()) == 2
    assert consolidated(world) == []
    assert any(d.cause == ex.CAUSE_DO_NOT_DISRUPT for d in decisions(world))


def test_a_terminating_grace_period_does_not_let_consolidation_pass_a_blocking_pdb(
        world: World) -> None:
    """consolidation_test.go Delete: It("does not consolidate nodes with pods with blocking
    PDBs when the NodePool's TerminationGracePeriod is not nil")."""
    two_nodes_then_four_pods(world, {"consolidateAfter": "2m"}, PDB)
    world.apply(nodepool_with(disruption={"consolidateAfter": "2m"},
                              template={"terminationGracePeriod": "1h"}))
    world.advance(900)
    assert len(world.nodes()) == 2
    assert consolidated(world) == []
    assert any(d.cause == ex.CAUSE_PDB for d in decisions(world))


PAIR = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: pair, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: pair}}
  template:
    metadata: {labels: {app: pair}}
    spec:
      nodeSelector: {kubernetes.io/hostname: %s}
      terminationGracePeriodSeconds: 0
      containers: [{name: app, resources: {requests: {cpu: 100m}}}]
"""
BARE = """
apiVersion: v1
kind: Pod
metadata: {name: bare, namespace: default}
spec:
  nodeSelector: {type: karpenter}
  terminationGracePeriodSeconds: 0
  containers: [{name: app, resources: {requests: {cpu: 100m}}}]
"""


def test_a_node_running_only_a_pod_without_an_owner_is_deleted(world: World) -> None:
    """consolidation_test.go Delete: It("can delete nodes, evicts pods without an ownerRef"):
    the node with the fewest pods goes although its pod has no controller to recreate it."""
    fleet(world, 2, {})
    first, second = sorted(objects.name(n) for n in world.nodes())
    world.apply(PAIR % first)
    world.advance(5)
    world.apply(BARE)
    world.advance(5)
    [bare] = [p for p in world.pods() if objects.name(p) == "bare"]
    assert bare["spec"]["nodeName"] == second
    world.scale("big", 0)
    assert world.run_until(lambda: len(world.nodes()) == 1, timeout=1800)
    assert [objects.name(n) for n in world.nodes()] == [first]
    assert world.settle()
    assert "bare" not in {objects.name(p) for p in world.pods()}
    expect_running(world, 2, {"app": "pair"})


UNMANAGED = """
apiVersion: v1
kind: Node
metadata:
  name: unmanaged
  labels: {type: karpenter, kubernetes.io/hostname: unmanaged, kubernetes.io/os: linux}
spec: {providerID: "aws:///us-east-1a/i-0unmanaged"}
status:
  allocatable: {cpu: "32", memory: 128Gi, pods: "100"}
  capacity: {cpu: "32", memory: 128Gi, pods: "100"}
  conditions: [{type: Ready, status: "True"}]
"""


def test_pods_fitting_on_capacity_karpenter_does_not_manage_free_every_node(
        world: World) -> None:
    """consolidation_test.go Delete: It("can delete nodes, when non-Karpenter capacity can fit
    pods")."""
    two_nodes_then_four_pods(world, {"consolidateAfter": "2m"})
    world.apply(UNMANAGED)
    assert world.run_until(lambda: [objects.name(n) for n in world.nodes()] == ["unmanaged"],
                           timeout=1800)
    assert world.nodeclaims() == []
    expect_running(world, 4, {"app": "spill"})


def test_an_empty_node_that_gets_a_pod_during_validation_is_kept_and_the_other_goes(
        world: World) -> None:
    """consolidation_test.go Delete: It("does not delete nodes with pod churn, deletes nodes
    without pod churn")."""
    fleet(world, 2, {"budgets": [{"nodes": "100%"}]})
    world.scale("big", 0)
    nodes = validating(world)
    assert len(nodes) == 2
    world.apply(GUARD_ON.replace('"true"', '"false"') % nodes[0])
    assert world.run_until(lambda: len(world.nodes()) == 1, timeout=120)
    assert [objects.name(n) for n in world.nodes()] == [nodes[0]]


def test_an_empty_node_is_not_deleted_when_a_do_not_disrupt_pod_lands_during_validation(
        world: World) -> None:
    """consolidation_test.go TTL: It("should not consolidate if the action becomes invalid
    during the node TTL wait")."""
    fleet(world, 1, {})
    world.scale("big", 0)
    [node] = validating(world)
    world.apply(GUARD_ON % node)
    world.advance(120)
    assert [objects.name(n) for n in world.nodes()] == [node]
    assert any(d.cause == ex.CAUSE_VALIDATION for d in decisions(world))


def test_a_delete_stops_when_a_do_not_disrupt_pod_lands_during_validation(
        world: World) -> None:
    """consolidation_test.go TTL: It("should not delete node if pods schedule with
    karpenter.sh/do-not-disrupt set to true during the TTL wait")."""
    two_nodes_then_four_pods(world, {"consolidateAfter": "0s"})
    [node] = validating(world)
    world.apply(GUARD_ON % node)
    world.advance(60)
    # The other node may go instead (its pods fit on this one); this one stays.
    assert node not in {d.node for d in consolidated(world)}
    assert node in {objects.name(n) for n in world.nodes()}
    assert any(d.cause == ex.CAUSE_VALIDATION and d.node == node for d in decisions(world))


def test_a_delete_stops_when_a_blocking_pdb_arrives_during_validation(world: World) -> None:
    """consolidation_test.go TTL: It("should not delete node if pods schedule with a blocking
    PDB during the TTL wait")."""
    two_nodes_then_four_pods(world, {"consolidateAfter": "0s"})
    [node] = validating(world)
    world.apply(PDB)
    world.advance(60)
    assert consolidated(world) == []
    assert node in {objects.name(n) for n in world.nodes()}


def test_a_replace_stops_when_the_replacement_would_need_other_types(world: World) -> None:
    """consolidation_test.go TTL: It("should not consolidate if the action picks different
    instance types after the node TTL wait"): the m5.large's pod would fit a c5.large, but
    three more arrive during validation and need the m5.large's memory."""
    node = one_m5_large_then_one_pod(world)
    world.scale("inflate", 4)
    world.advance(5)
    assert {p["spec"].get("nodeName") for p in world.pods(labels={"app": "inflate"})} == {node}
    world.advance(60)
    assert consolidated(world) == []
    assert [objects.name(n) for n in world.nodes()] == [node]
    assert any(d.cause == ex.CAUSE_VALIDATION for d in decisions(world))
