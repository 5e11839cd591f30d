"""The disruption issue's stories through the operator's driver in real time: the
disruption loop runs on the operator's timers and a command spans several reconciles
(launch, wait for the replacement to initialize, drain), as in a cluster. Consolidation
replaces an underused node, drift replaces a node whose NodePool changed, expiration
replaces an expired node, and a spot interruption message from the simulated EC2's queue
is acted on before the instance is reclaimed."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from nodewright.controllers.common import decision_log as ex
from nodewright.operator.process import Operator
from tests.controllers.expectations import (
    expect_consistent,
    expect_no_controller_errors,
    expect_running,
)
from tests.disruption.helpers import nodepool_with
from tests.harness import Source
from tests.kube.waiting import eventually
from tests.operator.conftest import WORKSHOP, JsonLogs
from tests.operator.world import FAST_CLOUD, RealTimeWorld

World = Callable[..., RealTimeWorld]


def decisions(operator: Operator, method: str) -> list[ex.Decision]:
    assert operator.controllers.disruption is not None
    return [d for d in operator.controllers.disruption.decisions
            if d.method == method and d.outcome == ex.DISRUPTED]


def workshop_with_five_pods(world: RealTimeWorld, *pools: Source) -> tuple[Operator, str]:
    """The workshop (with the NodePool replaced by `pools`), 5 pods running on one node;
    the operator and the name of that node's NodeClaim."""
    operator = world.operator("nodewright-a", leader_elect=False)
    world.apply(WORKSHOP, *pools)
    world.scale("inflate", 5)
    world.wait_until_running(pods=5, nodes=1)
    (claim,) = world.nodeclaims()
    return operator, str(claim["metadata"]["name"])


def moved_off(world: RealTimeWorld, claim_name: str) -> bool:
    """The NodeClaim is gone and the five pods run on one node of another NodeClaim."""
    return (claim_name not in {c["metadata"]["name"] for c in world.nodeclaims()}
            and len(world.running_pods()) == 5 and len(world.ready_nodes()) == 1)


def expect_converged(world: RealTimeWorld, pods: int) -> None:
    with world.lock:
        expect_running(world, pods)
        expect_consistent(world)
        expect_no_controller_errors(world)


def test_the_workshop_replaces_an_underused_m5_large_by_a_c5_large(
        world: RealTimeWorld, json_logs: JsonLogs) -> None:
    _, first = workshop_with_five_pods(
        world, nodepool_with(disruption={"consolidateAfter": "1s"}))
    assert world.instance_types() == ["m5.large"]

    world.scale("inflate", 1)  # a cheaper c5.large holds the one pod left
    eventually(lambda: world.instance_types() == ["c5.large"]
               and len(world.running_pods()) == 1 and len(world.ready_nodes()) == 1,
               f"one c5.large running 1 pod (now {world.instance_types()})")
    reasons = {str(event.get("reason")) for event in world.cluster.list("Event")}
    assert {"DisruptionLaunching", "DisruptionTerminating"} <= reasons
    (logged,) = json_logs("disrupting node(s)")
    assert logged["controller"] == "disruption" and logged["decision"] == "replace"
    assert (logged["disrupted-node-count"], logged["replacement-node-count"]) == (1, 1)
    assert logged["pod-count"] == 1
    (disrupted,) = logged["disrupted-nodes"]
    assert disrupted["NodeClaim"] == {"name": first}
    assert disrupted["instance-type"] == "m5.large"
    assert disrupted["capacity-type"] == "on-demand"
    assert "c5.large" in logged["replacement-nodes"][0]["instance-types"]
    world.settle()
    expect_converged(world, 1)


def test_a_node_whose_nodepool_changed_drifts_and_is_replaced(world: RealTimeWorld) -> None:
    operator, first = workshop_with_five_pods(world)

    world.apply(nodepool_with(labels={"type": "karpenter", "team": "checkout"}))
    eventually(lambda: moved_off(world, first), "the drifted node to be replaced")
    (node,) = world.ready_nodes()
    assert node["metadata"]["labels"]["team"] == "checkout"
    assert [d.nodeclaim for d in decisions(operator, ex.DRIFT)] == [first]
    world.settle()
    expect_converged(world, 5)


def test_an_expired_node_is_replaced(world: RealTimeWorld) -> None:
    # Every node of this pool expires two seconds after it was created: the story stops
    # at the first replacement. On a loaded machine the pods may be seen running only on a
    # later node (the first one already expired), so the node named is any one of them.
    operator, first = workshop_with_five_pods(world, nodepool_with(
        template={"expireAfter": "2s"}))
    eventually(lambda: moved_off(world, first), "the expired node to be replaced")
    assert first in [d.nodeclaim for d in decisions(operator, ex.EXPIRATION)]


def test_a_spot_interruption_message_is_acted_on(make_world: World) -> None:
    # A long notice: the controller moves the pods well before the instance is reclaimed.
    world = make_world(cloud=dataclasses.replace(FAST_CLOUD, spot_notice=60.0))
    operator, first = workshop_with_five_pods(world, nodepool_with(
        requirements={"karpenter.sh/capacity-type": ["spot"]}))
    (interrupted,) = world.live_instances()

    with world.lock:
        world.cloud.interrupt(interrupted.instance_id, "spot")
    eventually(lambda: moved_off(world, first), "the interrupted node to be replaced")
    assert interrupted.provider_id not in {i.provider_id for i in world.live_instances()}
    assert world.cloud.unavailable.is_unavailable(interrupted.instance_type,
                                                  interrupted.zone, "spot")
    assert [d.nodeclaim for d in decisions(operator, ex.INTERRUPTION)] == [first]
    assert world.events("SpotInterrupted", kind="NodeClaim")
    assert world.cloud.interruption_queue.depth() == 0, "the message was not deleted"
    world.settle()
    expect_converged(world, 5)
