"""A small AWS world inside moto: a VPC with tagged subnets and security groups, an EKS
cluster, a node role, and the public SSM AMI parameters EKS and Bottlerocket publish."""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from moto.ssm.models import Parameter, ssm_backends

from nodewright.api.ec2nodeclass import EC2NodeClass
from nodewright.api.nodeclaim import NodeClaim
from nodewright.cloud.aws.clients import AwsClients
from nodewright.cluster.api import ClusterAPI

ACCOUNT = "123456789012"  # moto's default account
CLUSTER = "demo"
K8S_VERSION = "1.30"
X86_IMAGE = "ami-ekslinux"  # moto ships this x86_64 image


@dataclass
class FakeClock:
    """A source of `nodewright.cloud.aws.clock.Seconds` that tests move by hand."""

    now: float = 1_000_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def seed_public_parameter(region: str, name: str, value: str) -> None:
    """moto refuses put_parameter under /aws/, as AWS does; write into its backend."""
    backend = ssm_backends[ACCOUNT][region]
    backend._parameters[name].append(
        Parameter(  # type: ignore[abstract]  # moto's model, used as moto does
            account_id=ACCOUNT,
            name=name,
            value=value,
            parameter_type="String",
            description=None,
            allowed_pattern=None,
            keyid=None,
            last_modified_date=datetime.datetime.now(),
            version=1,
            data_type="text",
        )
    )


@dataclass
class World:
    clients: AwsClients
    vpc_id: str = ""
    subnets: dict[str, str] = field(default_factory=dict)  # zone -> subnet id (discoverable)
    other_subnet: str = ""
    security_group: str = ""
    other_security_group: str = ""
    arm_image: str = ""

    @property
    def region(self) -> str:
        return self.clients.region


_arm_images: dict[str, str] = {}


def _bundled_arm_image(clients: AwsClients) -> str:
    """An arm64 image of the ones moto ships (the same in every test: looked up once per
    process, as moto lists some 300 images to answer)."""
    if clients.region not in _arm_images:
        arm = clients.ec2.describe_images(
            Owners=["amazon"], Filters=[{"Name": "architecture", "Values": ["arm64"]}]
        )["Images"]
        _arm_images[clients.region] = sorted(image["ImageId"] for image in arm)[0]
    return _arm_images[clients.region]


def build_world(clients: AwsClients) -> World:
    ec2 = clients.ec2
    world = World(clients)
    world.vpc_id = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    discovery: Any = [{"Key": "karpenter.sh/discovery", "Value": CLUSTER}]
    for index, letter in enumerate("abc"):
        zone = f"{clients.region}{letter}"
        subnet = ec2.create_subnet(
            VpcId=world.vpc_id,
            CidrBlock=f"10.0.{index}.0/24",
            AvailabilityZone=zone,
            TagSpecifications=[{"ResourceType": "subnet", "Tags": discovery}],
        )["Subnet"]["SubnetId"]
        world.subnets[zone] = subnet
    world.other_subnet = ec2.create_subnet(
        VpcId=world.vpc_id,
        CidrBlock="10.0.9.0/24",
        AvailabilityZone=f"{clients.region}a",
        TagSpecifications=[{"ResourceType": "subnet", "Tags": [{"Key": "team", "Value": "other"}]}],
    )["Subnet"]["SubnetId"]
    world.security_group = ec2.create_security_group(
        GroupName="demo-nodes",
        Description="nodes",
        VpcId=world.vpc_id,
        TagSpecifications=[{"ResourceType": "security-group", "Tags": discovery}],
    )["GroupId"]
    world.other_security_group = ec2.create_security_group(
        GroupName="unrelated", Description="other", VpcId=world.vpc_id
    )["GroupId"]
    world.arm_image = _bundled_arm_image(clients)
    for family_path in (
        f"/aws/service/eks/optimized-ami/{K8S_VERSION}/amazon-linux-2023/x86_64/standard/"
        "recommended/image_id",
        f"/aws/service/eks/optimized-ami/{K8S_VERSION}/amazon-linux-2/recommended/image_id",
        f"/aws/service/bottlerocket/aws-k8s-{K8S_VERSION}/x86_64/latest/image_id",
    ):
        seed_public_parameter(clients.region, family_path, X86_IMAGE)
    seed_public_parameter(
        clients.region,
        f"/aws/service/eks/optimized-ami/{K8S_VERSION}/amazon-linux-2023/arm64/standard/"
        "recommended/image_id",
        world.arm_image,
    )
    clients.eks.create_cluster(
        name=CLUSTER,
        version=K8S_VERSION,
        roleArn="arn:aws:iam::123456789012:role/eks",
        resourcesVpcConfig={"subnetIds": list(world.subnets.values())},
    )
    clients.iam.create_role(RoleName="KarpenterNodeRole-demo", AssumeRolePolicyDocument="{}")
    return world


def node_class(name: str = "default", **spec: Any) -> EC2NodeClass:
    body: dict[str, Any] = {
        "role": "KarpenterNodeRole-demo",
        "amiSelectorTerms": [{"alias": "al2023@latest"}],
        "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": CLUSTER}}],
        "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": CLUSTER}}],
        "tags": {"team": "payments"},
    }
    body.update(spec)
    return EC2NodeClass.model_validate(
        {
            "apiVersion": "karpenter.k8s.aws/v1",
            "kind": "EC2NodeClass",
            "metadata": {"name": name},
            "spec": body,
        }
    )


def custom_node_class(**spec: Any) -> EC2NodeClass:
    """A Custom-family node class booting X86_IMAGE with the user's own bootstrap script."""
    return node_class(amiFamily="Custom", amiSelectorTerms=[{"id": X86_IMAGE}],
                      userData="#!/bin/bash\n/etc/eks/bootstrap.sh demo\n", **spec)


def nodeclaim(
    name: str = "default-abcde",
    uid: str = "6f1c1b7e-1111-4a4a-9c9c-000000000001",
    requirements: list[dict[str, Any]] | None = None,
) -> NodeClaim:
    return NodeClaim.model_validate(
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodeClaim",
            "metadata": {
                "name": name,
                "uid": uid,
                "labels": {"karpenter.sh/nodepool": "default", "team": "payments"},
            },
            "spec": {
                "nodeClassRef": {
                    "group": "karpenter.k8s.aws",
                    "kind": "EC2NodeClass",
                    "name": "default",
                },
                "requirements": requirements
                if requirements is not None
                else [
                    {
                        "key": "node.kubernetes.io/instance-type",
                        "operator": "In",
                        "values": ["m5.large", "c5.large", "m5.xlarge", "t3.medium"],
                    },
                    {
                        "key": "karpenter.sh/capacity-type",
                        "operator": "In",
                        "values": ["on-demand"],
                    },
                ],
                "taints": [{"key": "dedicated", "value": "payments", "effect": "NoSchedule"}],
            },
        }
    )


def store_nodeclaims(cluster: ClusterAPI, nodeclaims: Iterable[tuple[str, str | None]]) -> None:
    """NodeClaims stored in the API server by name, each with its providerID (None: one
    still launching)."""
    for name, provider_id in nodeclaims:
        cluster.create({"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
                        "metadata": {"name": name},
                        "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws",
                                                  "kind": "EC2NodeClass", "name": "default"},
                                 "requirements": []}})
        if provider_id is not None:
            cluster.patch("NodeClaim", name, {"status": {"providerID": provider_id}},
                          subresource="status")
