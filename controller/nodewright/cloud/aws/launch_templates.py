"""Launch templates: one per distinct launch configuration, named by a stable hash of it, so
that identical configurations share a template and any change produces a new one."""

from __future__ import annotations

import base64
import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Final

from nodewright.api.quantity import parse_quantity
from nodewright.cloud.aws import tags
from nodewright.cloud.aws.errors import aws_call
from nodewright.cloud.provider import CloudProviderError

if TYPE_CHECKING:
    from mypy_boto3_ec2 import EC2Client

    from nodewright.api.ec2nodeclass import (
        BlockDeviceMapping,
        ConnectionTracking,
        MetadataOptions,
    )

NAME_PREFIX: Final = "nodewright"
# What the template data is made of, beyond the configuration: part of every name, so a
# template an earlier release wrote (format 1: instance-level SecurityGroupIds) is never
# reused by name and is garbage collected once unused.
TEMPLATE_FORMAT: Final = 2
# EC2's limit on a launch template's name.
MAX_NAME_LENGTH: Final = 128
DEFAULT_ROOT_VOLUME_GIB: Final = 20
WINDOWS_ROOT_VOLUME_GIB: Final = 50
GIB: Final = 1024**3
DEFAULT_TENANCY: Final = "default"
# Regions whose instance metadata service has no IPv6 endpoint: EC2 refuses the setting there.
NO_IMDS_IPV6_REGIONS: Final = frozenset({
    "us-iso-east-1", "us-iso-west-1", "us-isob-east-1", "us-isob-west-1", "us-isof-south-1",
    "us-isof-east-1",
})


@dataclass(frozen=True)
class LaunchConfig:
    cluster: str
    nodepool: str
    node_class: str
    image_id: str
    user_data: str
    instance_profile: str
    security_group_ids: tuple[str, ...]
    metadata_options: Mapping[str, Any]
    block_device_mappings: tuple[Mapping[str, Any], ...]
    detailed_monitoring: bool = False
    associate_public_ip_address: bool | None = None
    # Prefixes for the primary interface (the VPC CNI's prefix delegation): IPv4 /28s, or
    # IPv6 /80s in an IPv6 cluster.
    ip_prefix_count: int | None = None
    # An IPv6 cluster: interfaces get a primary IPv6 address (Karpenter's launch templates).
    ipv6: bool = False
    # ConnectionTrackingSpecification of the primary interface (EC2's names).
    connection_tracking: Mapping[str, int] = field(default_factory=dict)
    nested_virtualization: str | None = None
    # EFA interfaces, one per network card (pods asked for vpc.amazonaws.com/efa).
    efa_count: int = 0
    # spec.networkInterfaces as (card, device, interface type): when listed, exactly these
    # are attached, whatever the pods ask for.
    network_interfaces: tuple[tuple[int, int, str], ...] = ()
    extra_tags: Mapping[str, str] = field(default_factory=dict)
    # Karpenter's launch mode. Targeted (the ReservedCapacity gate on): reserved launches
    # target their reservation, every other launch opts out of open reservations, so only
    # selected ones are used. Open (the gate off): no CapacityReservationSpecification at
    # all, so EC2 may match any open reservation, as before native reservation support.
    targeted_reservations: bool = True
    capacity_reservation_id: str | None = None
    capacity_reservation_type: str | None = None
    # An interruptible reservation (EC2 may reclaim it): its own market type.
    capacity_reservation_interruptible: bool = False
    # The placement group every launch goes into, and for a partition group the partition.
    placement_group_id: str | None = None
    placement_partition: int | None = None
    # EC2's Placement.Tenancy: "dedicated" when the NodeClaim allows only dedicated hardware.
    tenancy: str = DEFAULT_TENANCY
    # Nitro Enclaves (the NodeClaim asks for eks.amazonaws.com/nip-slots).
    enclave_enabled: bool = False
    # The capacity type the template launches: a spot template also tags its spot request.
    capacity_type: str = "on-demand"

    def fingerprint(self) -> str:
        fields: dict[str, Any] = {**asdict(self), "format": TEMPLATE_FORMAT}
        if fields["placement_partition"] is None:
            # Templates outside a partition group keep the names they had before it existed.
            del fields["placement_partition"]
        if not fields["enclave_enabled"]:
            # Likewise templates without enclaves (EC2's default is the same).
            del fields["enclave_enabled"]
        if not fields["capacity_reservation_interruptible"]:
            # Likewise templates for other reservations and for no reservation.
            del fields["capacity_reservation_interruptible"]
        if fields["targeted_reservations"]:
            # Likewise templates of the targeted mode (the gate's default).
            del fields["targeted_reservations"]
        canonical = json.dumps(fields, sort_keys=True, default=list)
        return hashlib.sha256(canonical.encode()).hexdigest()[:24]

    @property
    def name(self) -> str:
        """`nodewright/<cluster>/<fingerprint>`, within EC2's 128 characters: the cluster
        is cut short when its name is too long for them (EKS allows 100 characters; the
        fingerprint covers the whole cluster name, so names still differ)."""
        fingerprint = self.fingerprint()
        prefix = f"{NAME_PREFIX}/{self.cluster}"[:MAX_NAME_LENGTH - len(fingerprint) - 1]
        return f"{prefix}/{fingerprint}"

    def template_tags(self) -> dict[str, str]:
        return {
            **self.extra_tags,
            **tags.ownership_tags(self.cluster),
            tags.NODEPOOL: self.nodepool,
            tags.NODECLASS: self.node_class,
        }

    def _reservation_targeting(self) -> dict[str, Any]:
        """CapacityReservationSpecification (and a reservation's market) of the targeted
        launch mode; the open mode sends neither."""
        if not self.capacity_reservation_id:
            return {"CapacityReservationSpecification": {"CapacityReservationPreference": "none"}}
        targeting: dict[str, Any] = {"CapacityReservationSpecification": {
            "CapacityReservationPreference": "capacity-reservations-only",
            "CapacityReservationTarget": {"CapacityReservationId": self.capacity_reservation_id},
        }}
        if self.capacity_reservation_type == "capacity-block":
            targeting["InstanceMarketOptions"] = {"MarketType": "capacity-block"}
        elif self.capacity_reservation_interruptible:
            targeting["InstanceMarketOptions"] = {
                "MarketType": "interruptible-capacity-reservation"}
        return targeting

    def template_data(self) -> dict[str, Any]:
        tagged = ["network-interface"]
        if self.capacity_type == "spot":
            tagged.append("spot-instances-request")
        data: dict[str, Any] = {
            # As Karpenter: what an instance launched from the template creates besides the
            # instance and its volumes (which CreateFleet tags) carries the template's tags.
            "TagSpecifications": [
                {"ResourceType": kind, "Tags": tags.as_aws(self.template_tags())}
                for kind in tagged
            ],
            "ImageId": self.image_id,
            "IamInstanceProfile": {"Name": self.instance_profile},
            "MetadataOptions": dict(self.metadata_options),
            "Monitoring": {"Enabled": self.detailed_monitoring},
            "EnclaveOptions": {"Enabled": self.enclave_enabled},
        }
        if self.targeted_reservations:
            data.update(self._reservation_targeting())
        if self.block_device_mappings:
            # None (the Custom family without mappings): the AMI's own block devices apply.
            data["BlockDeviceMappings"] = [dict(m) for m in self.block_device_mappings]
        if self.user_data:
            data["UserData"] = base64.b64encode(self.user_data.encode()).decode()
        # As Karpenter: the tenancy always, so that a dedicated NodeClaim gets dedicated
        # hardware (and a shared one never inherits a VPC's dedicated default by surprise).
        data["Placement"] = {"Tenancy": self.tenancy}
        if self.placement_group_id:
            data["Placement"]["GroupId"] = self.placement_group_id
            if self.placement_partition is not None:
                data["Placement"]["PartitionNumber"] = self.placement_partition
        if self.nested_virtualization is not None:
            data["CpuOptions"] = {"NestedVirtualization": self.nested_virtualization}
        # As Karpenter (launchtemplate.go generateNetworkInterfaces, types.go Build): the
        # security groups are always on explicit interfaces, at least the primary one
        # (device 0), never instance-level SecurityGroupIds. EC2 refuses a launch naming
        # network interfaces from a template with instance-level groups
        # (InvalidParameterCombination), which the dry-run RunInstances does.
        data["NetworkInterfaces"] = self._interfaces()
        return data

    def _interfaces(self) -> list[dict[str, Any]]:
        def interface(extra: Mapping[str, Any]) -> dict[str, Any]:
            built: dict[str, Any] = {**extra, "Groups": list(self.security_group_ids)}
            if extra.get("InterfaceType") == "efa-only":
                # EC2 refuses addresses, prefixes and tracking on an EFA-only interface.
                return built
            if self.associate_public_ip_address is not None:
                built["AssociatePublicIpAddress"] = self.associate_public_ip_address
            if self.ip_prefix_count is not None:
                prefixes = "Ipv6PrefixCount" if self.ipv6 else "Ipv4PrefixCount"
                built[prefixes] = self.ip_prefix_count
            if self.ipv6:
                built["PrimaryIpv6"] = True
                built["Ipv6AddressCount"] = 1
            if self.connection_tracking:
                built["ConnectionTrackingSpecification"] = dict(self.connection_tracking)
            return built

        if self.network_interfaces:
            return [
                interface({"NetworkCardIndex": card, "DeviceIndex": device,
                           "InterfaceType": kind})
                for card, device, kind in self.network_interfaces
            ]
        if not self.efa_count:
            return [interface({"DeviceIndex": 0})]
        # As Karpenter: card 0's interface is the primary (device 0), the others device 1.
        return [
            interface({"NetworkCardIndex": card, "DeviceIndex": 0 if card == 0 else 1,
                       "InterfaceType": "efa"})
            for card in range(self.efa_count)
        ]


def connection_tracking_of(tracking: ConnectionTracking | None) -> dict[str, int]:
    if tracking is None:
        return {}
    named = {"TcpEstablishedTimeout": tracking.tcp_established_timeout,
             "UdpStreamTimeout": tracking.udp_stream_timeout,
             "UdpTimeout": tracking.udp_timeout}
    return {name: value for name, value in named.items() if value is not None}


def metadata_options_of(options: MetadataOptions, region: str = "") -> dict[str, Any]:
    """The spec's metadata options, with instance tags in the metadata always disabled: an
    account whose IMDS defaults enable them would otherwise fail the launch, as the tag keys
    we write (kubernetes.io/cluster/..., karpenter.k8s.aws/...) are not valid there."""
    metadata: dict[str, Any] = {
        "HttpEndpoint": options.http_endpoint,
        "HttpProtocolIpv6": options.http_protocol_ipv6,
        "HttpPutResponseHopLimit": options.http_put_response_hop_limit,
        "HttpTokens": options.http_tokens,
        "InstanceMetadataTags": "disabled",
    }
    if region in NO_IMDS_IPV6_REGIONS:
        del metadata["HttpProtocolIpv6"]
    return metadata


def _gib(quantity: str) -> int:
    return max(1, math.ceil(parse_quantity(quantity) / 1000 / GIB))


def default_block_devices(ami_family: str) -> list[dict[str, Any]]:
    """A 20Gi gp3 root volume (Windows: 50Gi on /dev/sda1); Bottlerocket also has a small OS
    volume before its data one. The Custom family has none: as Karpenter does, the AMI's own
    mappings apply unless the EC2NodeClass lists some."""

    def volume(device: str, size_gib: int) -> dict[str, Any]:
        return {
            "DeviceName": device,
            "Ebs": {
                "VolumeSize": size_gib,
                "VolumeType": "gp3",
                "Encrypted": True,
                "DeleteOnTermination": True,
            },
        }

    if ami_family == "Custom":
        return []
    if ami_family == "Bottlerocket":
        return [volume("/dev/xvda", 4), volume("/dev/xvdb", DEFAULT_ROOT_VOLUME_GIB)]
    if ami_family.startswith("Windows"):
        return [volume("/dev/sda1", WINDOWS_ROOT_VOLUME_GIB)]
    return [volume("/dev/xvda", DEFAULT_ROOT_VOLUME_GIB)]


def block_devices_of(
    mappings: Sequence[BlockDeviceMapping] | None, ami_family: str
) -> list[dict[str, Any]]:
    if not mappings:
        return default_block_devices(ami_family)
    result: list[dict[str, Any]] = []
    for mapping in mappings:
        entry: dict[str, Any] = {"DeviceName": mapping.device_name or "/dev/xvda"}
        if mapping.ebs is not None:
            ebs = mapping.ebs
            optional: dict[str, Any] = {
                "VolumeSize": _gib(ebs.volume_size) if ebs.volume_size else None,
                "VolumeType": ebs.volume_type,
                "Iops": ebs.iops,
                "Throughput": ebs.throughput,
                "Encrypted": ebs.encrypted,
                "KmsKeyId": ebs.kms_key_id,
                "SnapshotId": ebs.snapshot_id,
                "VolumeInitializationRate": ebs.volume_initialization_rate,
                "DeleteOnTermination": (
                    True if ebs.delete_on_termination is None else ebs.delete_on_termination
                ),
            }
            entry["Ebs"] = {key: value for key, value in optional.items() if value is not None}
        result.append(entry)
    return result


def ensure_launch_template(ec2: EC2Client, config: LaunchConfig) -> str:
    """The template's name, creating it when no template with that name exists yet."""
    name = config.name
    if _exists(ec2, name):
        return name
    try:
        with aws_call("ec2:CreateLaunchTemplate", f"launch template {name}"):
            request: dict[str, Any] = {
                "LaunchTemplateName": name,
                "LaunchTemplateData": config.template_data(),
                "TagSpecifications": [
                    {"ResourceType": "launch-template", "Tags": tags.as_aws(config.template_tags())}
                ],
            }
            ec2.create_launch_template(**request)
    except CloudProviderError as error:
        # Another worker created it between our describe and create: that is fine.
        if error.code != "InvalidLaunchTemplateName.AlreadyExistsException":
            raise
    return name


def _exists(ec2: EC2Client, name: str) -> bool:
    try:
        with aws_call("ec2:DescribeLaunchTemplates", f"launch template {name}"):
            found = ec2.describe_launch_templates(LaunchTemplateNames=[name])
    except CloudProviderError as error:
        if error.code in (
            "InvalidLaunchTemplateName.NotFoundException",
            "InvalidLaunchTemplateId.NotFound",
        ):
            return False
        raise
    return bool(found.get("LaunchTemplates"))


@dataclass(frozen=True)
class OwnedTemplate:
    id: str
    name: str
    tags: Mapping[str, str]


def list_cluster_templates(ec2: EC2Client, cluster: str,
                           node_class: str | None = None) -> list[OwnedTemplate]:
    """The launch templates made for this cluster's NodeClaims (of one node class, given
    `node_class`): asked by the tags Karpenter asks by (its launch template cache's
    hydration and DeleteAll, launchtemplate.go), `eks:eks-cluster-name`, plus the node
    class's `karpenter.k8s.aws/ec2nodeclass`; of those, only the ones also tagged with a
    NodePool and an EC2NodeClass, as every template a launch creates is. Other tools'
    templates may carry `kubernetes.io/cluster/<cluster>: owned`: they are not ours to
    delete (nor may the controller's policy, Karpenter's AllowScopedDeletion, delete them)."""
    found: list[OwnedTemplate] = []
    with aws_call("ec2:DescribeLaunchTemplates", f"cluster {cluster}"):
        paginator = ec2.get_paginator("describe_launch_templates")
        filters: Any = [{"Name": f"tag:{tags.EKS_CLUSTER}", "Values": [cluster]}]
        if node_class is not None:
            filters.append({"Name": f"tag:{tags.NODECLASS}", "Values": [node_class]})
        # 200 a page, EC2's maximum (as Karpenter asks).
        for page in paginator.paginate(Filters=filters, PaginationConfig={"PageSize": 200}):
            for raw in page.get("LaunchTemplates", []):
                tagged = {t["Key"]: t["Value"] for t in raw.get("Tags", [])}
                if tags.NODEPOOL in tagged and tags.NODECLASS in tagged:
                    found.append(OwnedTemplate(raw["LaunchTemplateId"],
                                               raw["LaunchTemplateName"], tagged))
    return found


def delete_launch_template(ec2: EC2Client, template: OwnedTemplate) -> None:
    try:
        with aws_call("ec2:DeleteLaunchTemplate", f"launch template {template.name}"):
            ec2.delete_launch_template(LaunchTemplateId=template.id)
    except CloudProviderError as error:
        if error.code not in (
            "InvalidLaunchTemplateId.NotFound",
            "InvalidLaunchTemplateName.NotFoundException",
        ):
            raise
