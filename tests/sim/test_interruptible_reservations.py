"""Interruptible capacity reservations in the simulator: a scenario declares one
(`capacityReservations[].interruptible`), the NodePool's nodes are launched into it first,
in its own market, and when its owner takes capacity back (`interrupt` with kind
`reservation`) the node gets EC2's Capacity Reservation Instance Interruption Warning, is
drained and replaced, and the smaller reservation has no room for the replacement."""

from __future__ import annotations

import json
from typing import Any

import pytest

from nodewright.cli import main
from nodewright.cloud.sim import SimulatedEC2
from nodewright.cloud.sim.reservations import SimReservation
from tests.harness import CAPACITY_TYPE, RESERVING_CLASS, World, node_pool
from tests.sim.conftest import SCENARIOS, ScenarioWriter
from tests.static.helpers import workload

INTERRUPTIBLE = "karpenter.k8s.aws/capacity-reservation-interruptible"
RESERVATION_ID = "karpenter.k8s.aws/capacity-reservation-id"

SCENARIO = """
name: interruptible-reservation
seed: 0
manifests:
  - RESERVED/ec2nodeclass.yaml
  - apiVersion: karpenter.sh/v1
    kind: NodePool
    metadata: {name: reserved}
    spec:
      template:
        metadata: {labels: {type: karpenter}}
        spec:
          nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: reserved}
          requirements:
            - {key: karpenter.sh/capacity-type, operator: In,
               values: [reserved, on-demand]}
            - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.xlarge]}
  - WORKSHOP/inflate.yaml
capacityReservations:
  - {id: cr-0a1b2c3d4e5f60002, instanceType: m5.xlarge, zone: us-east-1a, count: 2,
     interruptible: true, tags: {team: ml}}
steps:
  - scale: {name: inflate, replicas: 20}
  - settle: {}
  - expect:
      capacityTypes: {reserved: 2}
      pendingPods: 0
  - interrupt: {select: {capacityType: reserved}, kind: reservation}
  - settle: {}
  - expect:
      capacityTypes: {reserved: 1, on-demand: 1}
      pendingPods: 0
      violations: 0
"""


def test_a_reclaimed_interruptible_reservation_node_is_replaced_outside_it(
        write_scenario: ScenarioWriter, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_scenario(SCENARIO.replace("RESERVED", str(SCENARIOS / "reserved")))
    code = main(["simulate", str(path)])
    output = capsys.readouterr().out
    assert code == 0, output
    assert "Summary of interruptible-reservation (seed 0): every expectation held" in output
    assert "CapacityReservationInstanceInterrupted" in output


def test_only_a_node_in_an_interruptible_reservation_can_be_reclaimed(
        write_scenario: ScenarioWriter, capsys: pytest.CaptureFixture[str]) -> None:
    ordinary = SCENARIO.replace("interruptible: true, ", "")
    path = write_scenario(ordinary.replace("RESERVED", str(SCENARIOS / "reserved")))
    assert main(["simulate", str(path)]) == 1
    assert "is not in an interruptible capacity reservation" in capsys.readouterr().out


def test_a_capacity_block_cannot_be_interruptible(
        write_scenario: ScenarioWriter, capsys: pytest.CaptureFixture[str]) -> None:
    block = SCENARIO.replace("interruptible: true,",
                             "interruptible: true, type: capacity-block, endsAfter: 2h,")
    path = write_scenario(block.replace("RESERVED", str(SCENARIOS / "reserved")))
    assert main(["simulate", str(path)]) != 0
    captured = capsys.readouterr()
    assert ("capacityReservations[0].interruptible: a capacity block cannot be interruptible"
            in captured.out + captured.err)




def test_the_nodeclaim_and_the_node_class_say_the_reservation_is_interruptible() -> None:
    world = World()
    world.cloud = SimulatedEC2(world.clock, cluster=world.cluster, reservations=[
        SimReservation("cr-ml", "m5.large", "us-east-1a", 1, tags={"team": "ml"},
                       interruptible=True)])
    world.restart_controllers()
    world.apply(RESERVING_CLASS, node_pool(types=["m5.large"],
                                           capacity_types=["reserved", "on-demand"]))
    world.apply(workload("train", 1, "500m"))
    assert world.settle()

    (claim,) = world.nodeclaims()
    labels: dict[str, Any] = claim["metadata"]["labels"]
    assert (labels[CAPACITY_TYPE], labels[RESERVATION_ID], labels[INTERRUPTIBLE]) == (
        "reserved", "cr-ml", "true")
    status = world.cluster.get("EC2NodeClass", "default")["status"]
    assert [(r["id"], r["interruptible"]) for r in status["capacityReservations"]] == [
        ("cr-ml", True)]
    assert json.dumps(status).count("cr-ml") == 1
