"""What an EC2NodeClass resolves to in the simulated EC2, so the EC2NodeClass status
controller writes the same status with `--cloud sim` as with AWS: one subnet per zone of
the simulated VPC, one security group, the AMI per architecture that launches would use
(a Windows alias: the amd64 one, for Windows nodes of its build, as EKS publishes no other),
and the instance profile named after the role. The simulated VPC matches every selector
term: there are no tags to disagree with."""

from __future__ import annotations

import hashlib

from nodewright.api.ec2nodeclass import ALIAS_FAMILIES, EC2NodeClass
from nodewright.cloud.aws.amis import Image
from nodewright.cloud.aws.discovery import SecurityGroup, Subnet
from nodewright.cloud.aws.node_class_resolution import Resolution, validation_problems
from nodewright.cloud.sim.images import ARCHITECTURES, ImageCatalog
from nodewright.scheduling.labels import WINDOWS_BUILDS

# Subnets have a /20 each (identity.py): 4096 addresses less AWS's five.
FREE_IPS = 4091
CREATED = "2024-01-01T00:00:00.000Z"


def resolve(node_class: EC2NodeClass, *, cluster_name: str, zones: tuple[str, ...],
            images: ImageCatalog) -> Resolution:
    subnets = tuple(Subnet(id="subnet-" + _digest(f"{cluster_name}/{zone}"), zone=zone,
                           zone_id="", free_ips=FREE_IPS) for zone in zones)
    group = SecurityGroup(id="sg-" + _digest(f"{cluster_name}/nodes"),
                          name=f"{cluster_name}-node")
    build = _windows_build(node_class)
    resolved = tuple(Image(id=images.image_for(node_class, arch), name="", architecture=arch,
                           creation_date=CREATED, deprecated=False, windows_build=build)
                     for arch in ARCHITECTURES if build is None or arch == "amd64")
    return Resolution(subnets=subnets, security_groups=(group,), images=resolved,
                      instance_profile=instance_profile_of(node_class, cluster_name),
                      problems=validation_problems(node_class))


def instance_profile_of(node_class: EC2NodeClass, cluster_name: str) -> str:
    return node_class.spec.instance_profile or (
        f"{cluster_name}_{_digest(node_class.spec.role or node_class.name)}")


def _windows_build(node_class: EC2NodeClass) -> str | None:
    for term in node_class.spec.ami_selector_terms:
        if term.alias_family is not None:
            return WINDOWS_BUILDS.get(ALIAS_FAMILIES.get(term.alias_family, ""))
    return None


def _digest(text: str) -> str:
    return "0" + hashlib.sha256(text.encode()).hexdigest()[:16]
