"""Karpenter v1.14.1 pkg/controllers/disruption/suite_test.go (a selection): Describe("Pod
Eviction Cost"), the cost of evicting one pod (`podrules.eviction_cost`, Karpenter's
`disruptionutils.EvictionCost`), 1 for a plain pod, moved by its
controller.kubernetes.io/pod-deletion-cost and its priority; and Describe("Candidate
Filtering"), told as stories: which pods keep a node from being a candidate."""

from __future__ import annotations

from typing import Any

from nodewright.cluster import objects
from nodewright.controllers.common import decision_log as ex
from nodewright.controllers.common.podrules import eviction_cost
from tests.controllers.conftest import WORKSHOP
from tests.disruption.helpers import decisions, nodepool_with
from tests.disruption.test_consolidation_karpenter import consolidated
from tests.disruption.test_drift_karpenter import GUARD
from tests.harness import World

STANDARD = 1.0


def pod(deletion_cost: str | None = None, priority: int | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"metadata": {"name": "p", "namespace": "default"}, "spec": {}}
    if deletion_cost is not None:
        body["metadata"]["annotations"] = {"controller.kubernetes.io/pod-deletion-cost":
                                           deletion_cost}
    if priority is not None:
        body["spec"]["priority"] = priority
    return body


def test_a_plain_pod_has_the_standard_cost() -> None:
    """suite_test.go Pod Eviction Cost: It("should have a standard disruptionCost for a pod with
    no priority or disruptionCost specified")."""
    assert eviction_cost(pod()) == STANDARD


def test_a_positive_deletion_cost_raises_it() -> None:
    """suite_test.go Pod Eviction Cost: It("should have a higher disruptionCost for a pod with a
    positive deletion disruptionCost")."""
    assert eviction_cost(pod("100")) > STANDARD


def test_a_negative_deletion_cost_lowers_it() -> None:
    """suite_test.go Pod Eviction Cost: It("should have a lower disruptionCost for a pod with a
    positive deletion disruptionCost") (its pod asks -100)."""
    assert eviction_cost(pod("-100")) < STANDARD


def test_higher_deletion_costs_cost_more() -> None:
    """suite_test.go Pod Eviction Cost: It("should have higher costs for higher deletion
    costs")."""
    assert eviction_cost(pod("101")) > eviction_cost(pod("100")) > eviction_cost(pod("99"))


def test_a_higher_priority_raises_it() -> None:
    """suite_test.go Pod Eviction Cost: It("should have a higher disruptionCost for a pod with a
    higher priority")."""
    assert eviction_cost(pod(priority=1)) > STANDARD


def test_a_lower_priority_lowers_it() -> None:
    """suite_test.go Pod Eviction Cost: It("should have a lower disruptionCost for a pod with a
    lower priority")."""
    assert eviction_cost(pod(priority=-1)) < STANDARD


# Describe("Candidate Filtering"), told on the workshop: an m5.large whose one inflate pod
# would fit a c5.large is a candidate, unless what the It names keeps it out.

def m5_large_with_one_pod(world: World, *extra: str,
                          template: dict[str, Any] | None = None) -> str:
    world.apply(WORKSHOP, nodepool_with(disruption={"consolidateAfter": "0s"},
                                        template=template))
    world.scale("inflate", 5)
    assert world.settle()
    [node] = world.nodes()
    if extra:
        world.apply(*extra)
    world.scale("inflate", 1)
    world.advance(5)
    return objects.name(node)


def causes(world: World, node: str) -> set[str]:
    return {d.cause for d in decisions(world, node)}


def expect_not_a_candidate(world: World, node: str, cause: str) -> None:
    world.advance(300)
    assert consolidated(world) == []
    assert [objects.name(n) for n in world.nodes()] == [node]
    assert cause in causes(world, node), causes(world, node)


def expect_replaced(world: World, node: str) -> None:
    assert world.run_until(lambda: bool(consolidated(world)), timeout=900)
    assert [d.node for d in consolidated(world)] == [node]


def test_a_do_not_disrupt_pod_without_a_grace_period_keeps_its_node(world: World) -> None:
    """suite_test.go Candidate Filtering: It("should not consider candidates that have
    do-not-disrupt pods scheduled and no terminationGracePeriod")."""
    node = m5_large_with_one_pod(world, GUARD % "true")
    expect_not_a_candidate(world, node, ex.CAUSE_DO_NOT_DISRUPT)


GUARDED_DAEMON = """
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: guarded, namespace: kube-system}
spec:
  selector: {matchLabels: {app: guarded}}
  template:
    metadata:
      labels: {app: guarded}
      annotations: {karpenter.sh/do-not-disrupt: "true"}
    spec:
      tolerations: [{operator: Exists}]
      containers: [{name: agent, resources: {requests: {cpu: 10m}}}]
"""


def test_a_do_not_disrupt_daemonset_pod_keeps_its_node(world: World) -> None:
    """suite_test.go Candidate Filtering: It("should not consider candidates that have
    do-not-disrupt daemonset pods scheduled")."""
    node = m5_large_with_one_pod(world, GUARDED_DAEMON)
    expect_not_a_candidate(world, node, ex.CAUSE_DO_NOT_DISRUPT)


LINGERING = """
apiVersion: v1
kind: Pod
metadata:
  name: lingering
  namespace: default
  annotations: {karpenter.sh/do-not-disrupt: "true"}
spec:
  nodeSelector: {type: karpenter}
  terminationGracePeriodSeconds: 3600
  containers: [{name: app, resources: {requests: {cpu: 100m}}}]
"""


def test_a_terminating_do_not_disrupt_pod_does_not_keep_its_node(world: World) -> None:
    """suite_test.go Candidate Filtering: It("should consider candidates that have
    do-not-disrupt terminating pods")."""
    node = m5_large_with_one_pod(world, LINGERING)
    world.delete("Pod", "lingering", "default")
    assert objects.is_deleting(world.cluster.get("Pod", "lingering", "default"))
    expect_replaced(world, node)


FINISHED = """
apiVersion: v1
kind: Pod
metadata:
  name: finished
  namespace: default
  annotations: {karpenter.sh/do-not-disrupt: "true", nodewright.io/run-duration: 10s}
spec:
  nodeSelector: {type: karpenter}
  restartPolicy: Never
  containers: [{name: job, resources: {requests: {cpu: 100m}}}]
"""


def test_a_terminal_do_not_disrupt_pod_does_not_keep_its_node(world: World) -> None:
    """suite_test.go Candidate Filtering: It("should consider candidates that have
    do-not-disrupt terminal pods")."""
    node = m5_large_with_one_pod(world, FINISHED)
    assert world.run_until(lambda: world.cluster.get("Pod", "finished", "default")[
        "status"].get("phase") == "Succeeded", timeout=120)
    expect_replaced(world, node)


def test_a_nominated_node_is_not_a_candidate(world: World) -> None:
    """suite_test.go Candidate Filtering: It("should not consider candidates that are
    nominated")."""
    node = m5_large_with_one_pod(world)
    state = world.controllers.state
    for _ in range(30):
        [body] = world.nodes()
        machine = state.node(body["spec"]["providerID"])
        assert machine is not None
        state.nominate(machine)
        world.advance(10)
    assert consolidated(world) == []
    assert ex.CAUSE_NOMINATED in causes(world, node)


SECOND_PDB = """
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: %s, namespace: default}
spec:
  maxUnavailable: 1
  selector: {matchLabels: {app: inflate}}
"""


def test_a_pod_with_two_pdbs_keeps_its_node(world: World) -> None:
    """suite_test.go Candidate Filtering: It("should not consider candidates that have multiple
    PDBs on the same pod") (each PDB alone would allow the eviction; the eviction API refuses
    a pod with two)."""
    node = m5_large_with_one_pod(world, SECOND_PDB % "one", SECOND_PDB % "two")
    expect_not_a_candidate(world, node, ex.CAUSE_PDB)
