"""The network: a new VPC with public and private subnets across zones, or an existing one.

Either way the private subnets carry `karpenter.sh/discovery: <cluster>`, which is how
EC2NodeClass subnetSelectorTerms find them.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from infra.config import ExistingVpc, NewVpc, StackSettings
from infra.naming import DISCOVERY_TAG

ELB_ROLE_TAG = "kubernetes.io/role/elb"
INTERNAL_ELB_ROLE_TAG = "kubernetes.io/role/internal-elb"


@dataclass(frozen=True)
class Network:
    vpc_id: pulumi.Input[str]
    private_subnet_ids: list[pulumi.Input[str]]
    public_subnet_ids: list[pulumi.Input[str]]


@dataclass(frozen=True)
class SubnetPlan:
    zone: str
    public_cidr: str
    private_cidr: str


def plan_subnets(vpc_cidr: str, zones: Sequence[str]) -> list[SubnetPlan]:
    """Split the VPC: large private subnets for nodes and pods, small public ones for LBs.

    The block is cut into eighths; each zone gets one eighth as its private subnet and the
    last eighth is cut again into eighths for the public subnets (at most six zones).
    """
    network = ipaddress.IPv4Network(vpc_cidr)
    eighths = list(network.subnets(prefixlen_diff=3))
    public_blocks = list(eighths[-1].subnets(prefixlen_diff=3))
    return [
        SubnetPlan(zone=zone, public_cidr=str(public_blocks[index]),
                   private_cidr=str(eighths[index]))
        for index, zone in enumerate(zones)
    ]


def build_network(settings: StackSettings) -> Network:
    if isinstance(settings.vpc, ExistingVpc):
        return _tag_existing_network(settings.cluster_name, settings.vpc)
    return _create_network(settings.cluster_name, settings.vpc, settings.tags)


def _tag_existing_network(cluster_name: str, vpc: ExistingVpc) -> Network:
    for index, subnet_id in enumerate(vpc.private_subnet_ids):
        aws.ec2.Tag(
            f"private-subnet-{index}-discovery",
            resource_id=subnet_id,
            key=DISCOVERY_TAG,
            value=cluster_name,
        )
    return Network(
        vpc_id=vpc.vpc_id,
        private_subnet_ids=list(vpc.private_subnet_ids),
        public_subnet_ids=list(vpc.public_subnet_ids),
    )


def _create_network(cluster_name: str, vpc_settings: NewVpc, tags: dict[str, str]) -> Network:
    zones = aws.get_availability_zones(state="available").names[: vpc_settings.az_count]
    if len(zones) < vpc_settings.az_count:
        raise pulumi.RunError(
            f"nodewright:vpc.azCount: the region has {len(zones)} available zones, "
            f"fewer than {vpc_settings.az_count}"
        )

    def named(name: str, **extra: str) -> dict[str, str]:
        return {**tags, "Name": f"{cluster_name}-{name}", **extra}

    vpc = aws.ec2.Vpc(
        "vpc",
        cidr_block=vpc_settings.cidr,
        enable_dns_hostnames=True,
        enable_dns_support=True,
        tags=named("vpc"),
    )
    gateway = aws.ec2.InternetGateway("internet-gateway", vpc_id=vpc.id, tags=named("igw"))
    public_routes = aws.ec2.RouteTable(
        "public-routes",
        vpc_id=vpc.id,
        routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", gateway_id=gateway.id)],
        tags=named("public"),
    )

    public_subnets: list[aws.ec2.Subnet] = []
    private_subnets: list[aws.ec2.Subnet] = []
    for plan in plan_subnets(vpc_settings.cidr, zones):
        public = aws.ec2.Subnet(
            f"public-{plan.zone}",
            vpc_id=vpc.id,
            cidr_block=plan.public_cidr,
            availability_zone=plan.zone,
            map_public_ip_on_launch=False,
            tags=named(f"public-{plan.zone}", **{ELB_ROLE_TAG: "1"}),
        )
        aws.ec2.RouteTableAssociation(
            f"public-{plan.zone}", subnet_id=public.id, route_table_id=public_routes.id
        )
        private = aws.ec2.Subnet(
            f"private-{plan.zone}",
            vpc_id=vpc.id,
            cidr_block=plan.private_cidr,
            availability_zone=plan.zone,
            tags=named(
                f"private-{plan.zone}",
                **{INTERNAL_ELB_ROLE_TAG: "1", DISCOVERY_TAG: cluster_name},
            ),
        )
        public_subnets.append(public)
        private_subnets.append(private)

    nat_count = 1 if vpc_settings.nat_gateways == "single" else len(zones)
    nat_gateways = []
    for index in range(nat_count):
        zone = zones[index]
        address = aws.ec2.Eip(f"nat-{zone}", domain="vpc", tags=named(f"nat-{zone}"))
        nat_gateways.append(
            aws.ec2.NatGateway(
                f"nat-{zone}",
                allocation_id=address.id,
                subnet_id=public_subnets[index].id,
                tags=named(f"nat-{zone}"),
                opts=pulumi.ResourceOptions(depends_on=[gateway]),
            )
        )
    for index, (zone, private) in enumerate(zip(zones, private_subnets, strict=True)):
        nat = nat_gateways[index % nat_count]
        routes = aws.ec2.RouteTable(
            f"private-routes-{zone}",
            vpc_id=vpc.id,
            routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", nat_gateway_id=nat.id)],
            tags=named(f"private-{zone}"),
        )
        aws.ec2.RouteTableAssociation(
            f"private-{zone}", subnet_id=private.id, route_table_id=routes.id
        )

    return Network(
        vpc_id=vpc.id,
        private_subnet_ids=[subnet.id for subnet in private_subnets],
        public_subnet_ids=[subnet.id for subnet in public_subnets],
    )
