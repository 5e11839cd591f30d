"""Pods of a node being deleted get capacity launched ahead of the drain only when they
will move soon (Karpenter's IsCurrentlyReschedulable, provisioner.go): not a
do-not-disrupt pod waiting out its node's terminationGracePeriod, nor a pod a
PodDisruptionBudget fully blocks. Karpenter waits for those."""

from __future__ import annotations

from tests.controllers.conftest import WORKSHOP
from tests.controllers.expectations import claim_names
from tests.harness import World, node_pool

GRACEFUL_POOL = node_pool(families=["m5"], capacity_types=(), labels={"type": "karpenter"},
                          terminationGracePeriod="10m")

APP = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: app, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: app}}
  template:
    metadata:
      labels: {app: app}
      annotations: {ANNOTATIONS}
    spec:
      nodeSelector: {type: karpenter}
      terminationGracePeriodSeconds: 10
      containers: [{name: app, image: app, resources: {requests: {cpu: 500m}}}]
"""

BLOCKING_PDB = """
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: app, namespace: default}
spec:
  maxUnavailable: 0
  selector: {matchLabels: {app: app}}
"""


def delete_the_node(world: World) -> str:
    (claim,) = world.nodeclaims()
    name = str(claim["metadata"]["name"])
    world.delete("NodeClaim", name)
    return name


def test_do_not_disrupt_pods_get_no_capacity_until_their_node_lets_them_go() -> None:
    world = World()
    world.apply(WORKSHOP, GRACEFUL_POOL,
                APP.replace("{ANNOTATIONS}", '{karpenter.sh/do-not-disrupt: "true"}'))
    assert world.settle()
    deleting = delete_the_node(world)

    world.advance(300)
    assert claim_names(world) == [deleting], "launched for pods that cannot move yet"

    # At the deadline the pods are deleted; their replacements then get a node.
    assert world.run_until(lambda: deleting not in claim_names(world), timeout=900)
    assert world.run_until(lambda: len(world.running_pods()) == 2, timeout=600)


def test_pods_a_pdb_fully_blocks_get_no_capacity_ahead_of_their_eviction() -> None:
    world = World()
    world.apply(WORKSHOP, APP.replace("{ANNOTATIONS}", "{}"), BLOCKING_PDB)
    assert world.settle()
    deleting = delete_the_node(world)

    world.advance(300)
    assert claim_names(world) == [deleting]


def test_pods_that_can_move_get_capacity_before_their_node_drains() -> None:
    world = World()
    world.apply(WORKSHOP, APP.replace("{ANNOTATIONS}", "{}"))
    assert world.settle()
    deleting = delete_the_node(world)

    world.advance(20)
    assert len(claim_names(world)) == 2 and deleting in claim_names(world)
