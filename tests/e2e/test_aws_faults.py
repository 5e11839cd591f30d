"""EC2 failing under `nodewright controller --cloud aws` (issue 28, part 8): the controller
reaches the moto server (tests/e2e/aws_world.py) through the fault proxy
(tests/faults/proxy.py, http mode), which answers EC2's throttling and server errors for a
window and loses or holds CreateFleet's answer after moto has launched. Each story ends
with every pod running, one NodeClaim per node needed, and every instance of the cluster
claimed by exactly one NodeClaim once garbage collection has run (moto ignores
CreateFleet's ClientToken, so a resent CreateFleet launches again: the extra instance is
garbage collected, see tests/faults/test_wiring.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.aws_world import AwsWorld, Kubelets, tags_of
from tests.e2e.conftest import StartController
from tests.e2e.fleet import holder, metric
from tests.e2e.harness import CLUSTER_NAME, ControlPlane, eventually
from tests.e2e.test_aws_wiring import (
    CHECKOUT,
    NODE_CLASS,
    NODE_POOL,
    checkout_running,
    node_class_ready,
)
from tests.faults.proxy import FaultProxy, Rule
from tests.faults.wiring import CREATE_FLEET, ec2_fault, ec2_lost_answer

WINDOW_SECONDS = 5.0
THROTTLED_CREATE_FLEETS = 3
REPLICAS = 3  # 250m each: one node
# Karpenter's (controller-runtime's) lease timing, which the controller runs with.
LEASE_DURATION = 15.0
RETRY_PERIOD = 2.0
# An instance no NodeClaim claims is terminated once older than 30 s, by a pass every
# 10 s at first (controllers/garbagecollection.py): well inside this.
GARBAGE_COLLECTED_WITHIN = 120.0


@pytest.fixture
def ec2_proxy(aws_world: AwsWorld) -> Iterator[FaultProxy]:
    with FaultProxy(aws_world.endpoint, mode="http", name="ec2") as proxy:
        yield proxy


def one_instance_per_nodeclaim(world: AwsWorld, plane: ControlPlane) -> bool:
    """The pods running on the one node they need; every live instance of the cluster is
    the instance of exactly one NodeClaim, every NodeClaim has its instance, and every
    Node its NodeClaim."""
    checkout_running(plane, REPLICAS)
    claims = plane.items("nodeclaims.karpenter.sh")
    assert len(claims) == 1, f"{len(claims)} NodeClaims, one needed"
    claimed = {str(c.get("status", {}).get("providerID", "")) for c in claims}
    instances = {str(instance["InstanceId"]) for instance in world.instances("pending", "running")
                 if tags_of(instance).get(f"kubernetes.io/cluster/{CLUSTER_NAME}") == "owned"}
    assert {p.rsplit("/", 1)[-1] for p in claimed} == instances, (
        f"instances {sorted(instances)}, NodeClaims' {sorted(claimed)}")
    nodes = {str(node["spec"].get("providerID")) for node in plane.items("nodes")}
    assert nodes == claimed, f"Nodes {sorted(nodes)}, NodeClaims' {sorted(claimed)}"
    return True


def settle(plane: ControlPlane, world: AwsWorld) -> None:
    eventually(lambda: one_instance_per_nodeclaim(world, plane),
               timeout=GARBAGE_COLLECTED_WITHIN + 60,
               what=f"{REPLICAS} pods running, one NodeClaim, its instance and Node, no "
                    "instance or Node without it (after garbage collection)")


def test_ec2_throttling_errors_and_a_lost_create_fleet_answer_mid_launch(
        control_plane: ControlPlane, aws_world: AwsWorld, ec2_proxy: FaultProxy,
        kubelets: Kubelets, start_aws: StartController) -> None:
    plane, world, proxy = control_plane, aws_world, ec2_proxy
    plane.apply(NODE_CLASS)
    plane.apply(NODE_POOL)
    plane.apply(CHECKOUT)
    controller = start_aws(env={"AWS_ENDPOINT_URL": proxy.url})
    eventually(lambda: node_class_ready(plane), timeout=60, what="the EC2NodeClass Ready")

    # The first three CreateFleets are throttled, and for a few seconds every other EC2
    # call fails half of the time; the next CreateFleet launches and its answer is lost
    # (botocore sends it again).
    throttled = proxy.inject(ec2_fault("RequestLimitExceeded", 503, body=CREATE_FLEET,
                                       limit=THROTTLED_CREATE_FLEETS))
    failing = proxy.inject(ec2_fault("InternalError", 500, share=0.5), seconds=WINDOW_SECONDS)
    lost = proxy.inject(ec2_lost_answer(limit=1))
    plane.kubectl("scale", "deployment", "checkout", "--replicas", str(REPLICAS))

    settle(plane, world)
    assert throttled.hits == THROTTLED_CREATE_FLEETS
    assert lost.hits == 1
    print(f"EC2 faults: {throttled.hits} throttled, {failing.hits} failed, 1 answer lost")
    assert controller.running()
    eventually(lambda: controller.healthz()[0] == 200, timeout=30, what="/healthz ok")


def test_the_leader_killed_while_its_create_fleet_is_answered_leaves_one_instance(
        control_plane: ControlPlane, aws_world: AwsWorld, ec2_proxy: FaultProxy,
        kubelets: Kubelets, start_aws: StartController) -> None:
    """Two replicas; the leader reaches EC2 through the proxy, which holds the answer of
    its CreateFleet (the instance launched): the leader is killed (SIGKILL) while it
    waits. The standby takes the Lease and finishes the launch: one NodeClaim, one
    instance, the first one or a second with the first garbage collected."""
    plane, world, proxy = control_plane, aws_world, ec2_proxy
    plane.apply(NODE_CLASS)
    plane.apply(NODE_POOL)
    plane.apply(CHECKOUT)
    first = start_aws("replica-a", env={"AWS_ENDPOINT_URL": proxy.url})
    eventually(lambda: holder(plane) == "replica-a", timeout=60, what="replica-a to lead")
    second = start_aws("replica-b")
    eventually(lambda: second.readyz()[0] == 200, timeout=60, what="the standby to be ready")
    eventually(lambda: node_class_ready(plane), timeout=60, what="the EC2NodeClass Ready")

    held = proxy.inject(Rule("hold_answer", methods=frozenset({"POST"}), body=CREATE_FLEET))
    plane.kubectl("scale", "deployment", "checkout", "--replicas", str(REPLICAS))
    eventually(lambda: [r for r in proxy.records if r.fault == "hold_answer"], timeout=60,
               what="the leader's CreateFleet launched, its answer held")
    launched: list[dict[str, Any]] = world.instances("pending", "running")
    assert launched, "CreateFleet reached moto and launched nothing"
    first.kill()
    held.end()

    eventually(lambda: holder(plane) == "replica-b",
               timeout=LEASE_DURATION + 2 * RETRY_PERIOD + 10,
               what="the standby to take the Lease")
    settle(plane, world)
    assert metric(second, "leader_election_master_status") == 1
