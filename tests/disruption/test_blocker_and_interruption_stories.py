"""What stops a disruption, said by name: a do-not-disrupt pod and a PodDisruptionBudget
allowing no eviction each keep their node. And what EC2 does to instances: a spot
interruption re-provisions before the notice ends and the offering is avoided for 3 min."""

from __future__ import annotations

from nodewright.cluster import objects
from nodewright.controllers.common import decision_log as ex
from tests.controllers.conftest import WORKSHOP
from tests.controllers.expectations import (
    expect_instance_types,
    expect_no_controller_errors,
    expect_running,
)
from tests.disruption.helpers import decisions, nodepool_with
from tests.harness import World

GUARD = """
apiVersion: v1
kind: Pod
metadata:
  name: guard
  namespace: default
  annotations: {karpenter.sh/do-not-disrupt: "true"}
spec:
  nodeSelector: {type: karpenter}
  containers: [{name: app, resources: {requests: {cpu: 100m}}}]
"""
PDB = """
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: inflate, namespace: default}
spec:
  maxUnavailable: 0
  selector: {matchLabels: {app: inflate}}
"""


def blocked_reasons(world: World) -> list[str]:
    [node] = world.nodes()
    return [d.message for d in decisions(world, objects.name(node)) if d.outcome == ex.BLOCKED]


def test_a_do_not_disrupt_pod_keeps_its_node_until_the_annotation_goes(world: World) -> None:
    world.apply(WORKSHOP)
    world.scale("inflate", 5)
    assert world.settle()
    world.apply(GUARD)
    assert world.settle()
    world.scale("inflate", 1)
    assert world.settle()

    expect_instance_types(world, "m5.large")
    reasons = blocked_reasons(world)
    assert reasons and 'pod default/guard has the karpenter.sh/do-not-disrupt: "true"' in (
        reasons[-1])
    [node] = world.nodes()
    notes = [e["note"] for e in world.events(ex.DISRUPTION_BLOCKED, kind="Node")
             if e["regarding"]["name"] == objects.name(node)]
    assert any("default/guard" in note for note in notes)
    [claim] = world.nodeclaims()
    disruptable = objects.condition(claim, "Disruptable")
    assert disruptable is not None and disruptable["status"] == "False"
    assert disruptable["reason"] == ex.CAUSE_DO_NOT_DISRUPT

    world.cluster.patch("Pod", "guard", {"metadata": {"annotations": None}}, "default")
    assert world.settle()
    expect_instance_types(world, "c5.large")
    expect_running(world, 1, {"app": "inflate"})  # the bare guard pod was evicted for good
    expect_no_controller_errors(world)


def test_a_pdb_allowing_no_eviction_keeps_its_node_and_is_named(world: World) -> None:
    world.apply(WORKSHOP, PDB)
    world.scale("inflate", 5)
    assert world.settle()
    world.scale("inflate", 1)
    assert world.settle()

    expect_instance_types(world, "m5.large")
    reasons = blocked_reasons(world)
    assert reasons and "PodDisruptionBudget default/inflate allows no disruption" in reasons[-1]
    expect_running(world, 1)
    expect_no_controller_errors(world)


def test_a_spot_interruption_reprovisions_within_the_notice_and_avoids_the_offering(
    world: World,
) -> None:
    spot_only = {"karpenter.sh/capacity-type": ["spot"]}
    world.apply(WORKSHOP, nodepool_with(requirements=spot_only))
    world.scale("inflate", 5)
    assert world.settle()
    [interrupted] = world.live_instances()
    offering = (interrupted.instance_type, interrupted.zone, "spot")
    warned = world.clock.now()

    world.cloud.interrupt(interrupted.instance_id, "spot")

    def replaced() -> bool:
        running = world.running_pods()
        return len(running) == 5 and all(
            p["spec"]["nodeName"] != _node_of(world, interrupted.provider_id) for p in running)

    assert world.run_until(replaced, timeout=120, step=1)
    assert (world.clock.now() - warned).total_seconds() < 120
    assert world.cloud.unavailable.is_unavailable(*offering)
    [replacement] = [i for i in world.live_instances()
                     if i.instance_id != interrupted.instance_id]
    assert (replacement.instance_type, replacement.zone, "spot") != offering
    interrupted_claims = [d for d in decisions(world) if d.method == ex.INTERRUPTION]
    assert interrupted_claims and interrupted_claims[0].outcome == ex.DISRUPTED
    assert world.events("SpotInterrupted", kind="NodeClaim")
    assert world.events("TerminatingOnInterruption", kind="NodeClaim")

    world.advance(185 - (world.clock.now() - warned).total_seconds())
    assert not world.cloud.unavailable.is_unavailable(*offering)
    expect_running(world, 5)
    expect_no_controller_errors(world)


def test_a_rebalance_recommendation_is_only_an_event(world: World) -> None:
    spot_only = {"karpenter.sh/capacity-type": ["spot"]}
    world.apply(WORKSHOP, nodepool_with(requirements=spot_only))
    world.scale("inflate", 5)
    assert world.settle()
    [instance] = world.live_instances()
    world.cloud.interrupt(instance.instance_id, "rebalance")
    world.advance(30)
    assert [i.instance_id for i in world.live_instances()] == [instance.instance_id]
    assert world.events("SpotRebalanceRecommendation", kind="NodeClaim")
    expect_running(world, 5)


def _node_of(world: World, provider_id: str) -> str | None:
    for node in world.nodes():
        if node["spec"].get("providerID") == provider_id:
            return objects.name(node)
    return None
