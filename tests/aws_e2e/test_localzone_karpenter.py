"""Karpenter test/suites/localzone/suite_test.go (v1.14.1), on the moto account. moto has
no local zones, so EC2's answers say so (as tests/aws/test_instancetype_launch_loop_karpenter.py
does): DescribeSubnets puts one discovery-tagged subnet in us-west-2-lax-1a, and
DescribeInstanceTypeOfferings offers there what it offers in us-west-2a; DescribeInstances
places the instances launched into that subnet in the local zone."""

from __future__ import annotations

from typing import Any

from nodewright.cloud.aws.clients import AwsClients
from tests.aws.world import World
from tests.aws_e2e.moto_world import MotoCluster, deployment, node_class, node_pool

LOCAL_ZONE, LOCAL_ZONE_ID = "us-west-2-lax-1a", "usw2-lax1-az1"
SPREAD = {"foo": "bar"}


def in_a_local_zone(clients: AwsClients, subnet: str, parent_zone: str) -> None:
    def subnets(parsed: dict[str, Any], **_: Any) -> None:
        for raw in parsed.get("Subnets", []):
            if raw["SubnetId"] == subnet:
                raw.update(AvailabilityZone=LOCAL_ZONE, AvailabilityZoneId=LOCAL_ZONE_ID)

    def offerings(parsed: dict[str, Any], **_: Any) -> None:
        found = parsed.setdefault("InstanceTypeOfferings", [])
        found.extend([{**o, "Location": LOCAL_ZONE} for o in found
                      if o["Location"] == parent_zone])

    def instances(parsed: dict[str, Any], **_: Any) -> None:
        for group in parsed.get("Reservations", []):
            for raw in group.get("Instances", []):
                if raw.get("SubnetId") == subnet:
                    raw["Placement"]["AvailabilityZone"] = LOCAL_ZONE

    clients.ec2.meta.events.register("after-call.ec2.DescribeSubnets", subnets)
    clients.ec2.meta.events.register("after-call.ec2.DescribeInstanceTypeOfferings", offerings)
    clients.ec2.meta.events.register("after-call.ec2.DescribeInstances", instances)


def test_nodes_scale_up_in_a_local_zone(clients: AwsClients, world: World) -> None:
    """Karpenter test/suites/localzone/suite_test.go It("should successfully scale up nodes
    in a local zone"): gp2 root volumes (most local zones have no gp3), the NodePool
    restricted to the local zones, three replicas spread one per node."""
    parent_zone = sorted(world.subnets)[0]
    in_a_local_zone(clients, world.subnets[parent_zone], parent_zone)
    env = MotoCluster(clients)
    pool = node_pool()
    pool["spec"]["template"]["spec"]["requirements"].append(
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [LOCAL_ZONE]})
    spread = [{"topologyKey": "kubernetes.io/hostname", "maxSkew": 1,
               "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": SPREAD}}]

    env.apply(node_class(blockDeviceMappings=[{"deviceName": "/dev/xvda", "ebs": {
        "volumeSize": "80Gi", "volumeType": "gp2", "encrypted": False}}]), pool,
        deployment("spread", 3, labels=SPREAD, topologySpreadConstraints=spread))

    assert env.run_until(lambda: len(env.running_pods(SPREAD)) == 3), env.errors
    nodes = env.nodes()
    assert len(nodes) == 3
    assert {n["metadata"]["labels"]["topology.kubernetes.io/zone"] for n in nodes} == {
        LOCAL_ZONE}
