"""In-flight IP accounting per subnet, as Karpenter v1.14.1's subnet provider keeps it
(pkg/providers/subnet/subnet.go ZonalSubnetsForLaunch / UpdateInflightIPs): between two
DescribeSubnets, each launch takes its pods' IPs off the subnet it used, so a burst spreads
over a zone's subnets by the IPs really left."""

from __future__ import annotations

from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.discovery import Subnet
from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.cloud.aws.subnet_ips import SubnetIPs

from .world import CLUSTER, World, node_class, nodeclaim

BIG = Subnet("subnet-big", "us-west-2a", "usw2-az1", free_ips=100)
SMALL = Subnet("subnet-small", "us-west-2a", "usw2-az1", free_ips=60)


def test_the_subnet_with_most_ips_left_wins_until_launches_use_them() -> None:
    ips = SubnetIPs()
    assert ips.per_zone([BIG, SMALL]) == {"us-west-2a": BIG}

    ips.launched(BIG, 29)
    assert ips.free(BIG) == 71
    assert ips.per_zone([BIG, SMALL]) == {"us-west-2a": BIG}

    ips.launched(BIG, 29)  # 42 left: the small subnet has more
    assert ips.per_zone([BIG, SMALL]) == {"us-west-2a": SMALL}


def test_a_fresh_count_from_ec2_replaces_what_was_taken() -> None:
    ips = SubnetIPs()
    ips.launched(BIG, 58)
    recounted = Subnet(BIG.id, BIG.zone, BIG.zone_id, free_ips=40)

    assert ips.free(recounted) == 40  # EC2's own count already includes the launches
    ips.launched(recounted, 10)
    assert ips.free(recounted) == 30


def test_a_burst_of_launches_spreads_over_a_zones_subnets(
    provider: AwsCloudProvider, world: World, clients: AwsClients,
) -> None:
    zone = f"{clients.region}a"
    small = clients.ec2.create_subnet(
        VpcId=world.vpc_id, CidrBlock="10.0.20.0/25", AvailabilityZone=zone,
        TagSpecifications=[{"ResourceType": "subnet", "Tags": [
            {"Key": "karpenter.sh/discovery", "Value": CLUSTER}]}],
    )["Subnet"]["SubnetId"]
    requirements = [
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.large"]},
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]},
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
    ]

    used = [provider.create(nodeclaim(f"burst-{n}", f"uid-{n}", requirements),
                            node_class()).subnet_id
            for n in range(6)]

    # The /24 (251 IPs) takes 29 per m5.large until fewer are left than in the /25 (123).
    assert used[:5] == [world.subnets[zone]] * 5
    assert used[5] == small
