"""Stories of node termination: a deleted NodeClaim's node is tainted, drained through
the Eviction API within its PodDisruptionBudgets, and only then is its instance
terminated; a terminationGracePeriod is a deadline after which what is left is deleted."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from nodewright.cloud.sim import SimEvent
from nodewright.controllers.node.termination import drain_groups
from nodewright.runtime.clock import parse_time
from tests.controllers.conftest import WORKSHOP
from tests.controllers.expectations import (
    claim_names,
    condition,
    expect_consistent,
    expect_no_controller_errors,
    expect_running,
)
from tests.harness import World, node_pool

PDB = """
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: inflate, namespace: default}
spec:
  maxUnavailable: 1
  selector: {matchLabels: {app: inflate}}
"""


def workshop_with(world: World, replicas: int) -> None:
    world.apply(WORKSHOP)
    world.scale("inflate", 5)
    assert world.settle()
    world.scale("inflate", replicas)
    assert world.settle()


def bound_to(world: World, node_name: str) -> list[str]:
    return [p["metadata"]["name"] for p in world.pods()
            if p["spec"].get("nodeName") == node_name]


def test_deleting_a_nodeclaim_drains_its_node_within_the_pdb_then_terminates_it() -> None:
    world = World()
    workshop_with(world, 12)
    world.apply(PDB)
    assert world.settle()
    claim = max(world.nodeclaims(), key=lambda c: len(bound_to(world, c["status"]["nodeName"])))
    name, node_name = claim["metadata"]["name"], claim["status"]["nodeName"]
    instance_id = claim["status"]["providerID"].rsplit("/", 1)[-1]
    assert len(bound_to(world, node_name)) > 1

    left_at_termination: list[list[str]] = []

    def on_cloud_event(event: SimEvent) -> None:
        if event.kind == "shutting-down" and event.instance_id == instance_id:
            left_at_termination.append(bound_to(world, node_name))

    world.cloud.listen(on_cloud_event)
    world.delete("NodeClaim", name)
    world.advance(1)
    node = world.cluster.get("Node", node_name)
    assert {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"} in node["spec"]["taints"]
    assert condition(world.cluster.get("NodeClaim", name), "Drained") == "Unknown"

    fewest_running = 12
    for _ in range(900):
        world.advance(1)
        fewest_running = min(fewest_running, len(world.running_pods()))
        if name not in claim_names(world):
            break
    assert name not in claim_names(world), "the NodeClaim was never finalized"
    assert fewest_running >= 11, "the drain broke the PodDisruptionBudget"
    assert left_at_termination == [[]], "the instance was terminated before the drain ended"
    refused = [e for e in world.events("FailedDraining") if "violates a PDB" in e["note"]]
    assert refused, "no eviction was refused by the PDB (the story did not test retries)"
    assert world.events("Evicted")
    assert world.settle()
    expect_running(world, 12)
    expect_consistent(world)
    expect_no_controller_errors(world)


GRACEFUL_POOL = node_pool(families=["m5"], capacity_types=(), labels={"type": "karpenter"},
                          terminationGracePeriod="2m")

GUARDED_POD = """
apiVersion: v1
kind: Pod
metadata:
  name: guarded
  namespace: default
  annotations: {karpenter.sh/do-not-disrupt: "true"}
spec:
  nodeSelector: {type: karpenter}
  terminationGracePeriodSeconds: 30
  containers: [{name: app, resources: {requests: {cpu: 100m}}}]
"""


def test_a_do_not_disrupt_pod_is_deleted_only_at_the_termination_deadline() -> None:
    world = World()
    world.apply(WORKSHOP, GRACEFUL_POOL, GUARDED_POD)
    assert world.settle()
    (claim,) = world.nodeclaims()
    name = claim["metadata"]["name"]
    world.delete("NodeClaim", name)
    world.advance(1)
    metadata = world.cluster.get("NodeClaim", name)["metadata"]
    deadline = parse_time(metadata["annotations"]["karpenter.sh/nodeclaim-termination-timestamp"])
    assert deadline == parse_time(metadata["deletionTimestamp"]) + timedelta(minutes=2)

    def guarded() -> dict[str, Any]:
        return world.cluster.get("Pod", "guarded", "default")

    # The pod's own 30 s grace must end by the deadline (2 min): untouched until 90 s.
    world.advance(80)
    assert not guarded()["metadata"].get("deletionTimestamp"), "deleted before the deadline"
    world.advance(15)
    assert guarded()["metadata"].get("deletionTimestamp"), "not deleted at the deadline"
    assert world.events("Disrupted")
    assert world.run_until(lambda: name not in claim_names(world), timeout=300)
    expect_no_controller_errors(world)


def pod(name: str, *, critical: bool = False, daemon: bool = False) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": "default"}
    if daemon:
        metadata["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "DaemonSet",
                                        "name": "d", "uid": "1", "controller": True}]
    spec = {"priorityClassName": "system-node-critical"} if critical else {}
    return {"metadata": metadata, "spec": spec}


def test_pods_drain_non_critical_first_and_critical_daemons_last() -> None:
    pods = [pod("cd", critical=True, daemon=True), pod("c", critical=True),
            pod("d", daemon=True), pod("app")]
    groups = drain_groups(pods)
    assert [[p["metadata"]["name"] for p in group] for group in groups] == [
        ["app"], ["d"], ["c"], ["cd"]]


def test_deleting_a_node_deletes_its_nodeclaim_and_drains_it_first() -> None:
    world = World()
    workshop_with(world, 5)
    (claim,) = world.nodeclaims()
    name, node_name = claim["metadata"]["name"], claim["status"]["nodeName"]
    world.delete("Node", node_name)
    world.advance(1)
    assert world.cluster.get("NodeClaim", name)["metadata"].get("deletionTimestamp")
    assert world.run_until(lambda: name not in claim_names(world), timeout=600)
    assert world.settle()
    expect_running(world, 5)
    expect_consistent(world)
    expect_no_controller_errors(world)
