"""Karpenter's launch template suite (pkg/providers/launchtemplate/suite_test.go, v1.14.1),
ported: each test names its It/Entry. A NodeClaim is launched through the real provider
(moto underneath) and the requests it sent are read from the FakeEC2 recorder.

Karpenter's tests provision a pod through its scheduler first; here the NodeClaim the
scheduler would make is launched directly (`tests.aws.world.nodeclaim`: four small types,
on-demand), which is all the launch template provider sees in either case.
"""

from __future__ import annotations

import tomllib
from typing import Any

import pytest
import yaml

from nodewright.api.nodeclaim import NodeClaim
from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.cloud.aws.userdata import mime
from nodewright.cloud.provider import CloudProviderError
from nodewright.scheduling.pricing import OfflinePriceSource
from tests.aws.fake_ec2 import FakeEC2
from tests.aws.reservations import FakeCapacityReservations, FakeReservation
from tests.aws.world import CLUSTER, FakeClock, World, node_class, nodeclaim

KMS_KEY = "arn:aws:kms:us-west-2:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"


def launch(provider: AwsCloudProvider, ec2: FakeEC2, **spec: Any) -> list[dict[str, Any]]:
    """Launch the default NodeClaim with a node class of `spec`; every template data sent."""
    provider.create(nodeclaim(), node_class(**spec))
    templates = list(ec2.template_data())
    assert templates, "the launch created no launch template"
    return templates


def claim_with(*requirements: dict[str, Any], name: str = "default-abcde") -> Any:
    base = [{"key": "node.kubernetes.io/instance-type", "operator": "In",
             "values": ["m5.large", "c5.large"]},
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}]
    return nodeclaim(name, uid=f"uid-{name}", requirements=[*base, *requirements])


def kubelet_configs(ec2: FakeEC2) -> list[dict[str, Any]]:
    """The kubelet config of our NodeConfig (the last MIME part) in every template."""
    configs = []
    for name in ec2.launch_templates():
        part = mime.split_parts(ec2.user_data(name))[-1]
        configs.append(yaml.safe_load(part.body)["spec"]["kubelet"]["config"])
    return configs


def ipv6_provider(clients: AwsClients, clock: FakeClock) -> AwsCloudProvider:
    return AwsCloudProvider(clients, CLUSTER, clock=clock, prices=OfflinePriceSource(),
                            kube_dns_ip="fd4b:121b:812b::a")


# --- Instance Metadata ----------------------------------------------------------------------


def test_default_instance_metadata_settings(provider: AwsCloudProvider, ec2: FakeEC2) -> None:
    """Context("Instance Metadata") It("should set the default instance metadata settings on
    instances")"""
    for data in launch(provider, ec2):
        metadata = data["MetadataOptions"]
        assert (metadata["HttpEndpoint"], metadata["HttpProtocolIpv6"],
                metadata["HttpPutResponseHopLimit"], metadata["HttpTokens"]) == (
            "enabled", "disabled", 1, "required")


def test_instance_metadata_tags_are_disabled(provider: AwsCloudProvider, ec2: FakeEC2) -> None:
    """Context("Instance Metadata") It("should set instance metadata tags to disabled")"""
    for data in launch(provider, ec2, metadataOptions={"httpTokens": "optional"}):
        assert data["MetadataOptions"]["InstanceMetadataTags"] == "disabled"


# --- Tenancy --------------------------------------------------------------------------------


@pytest.mark.parametrize(("required", "tenancy"), [
    pytest.param(None, "default", id="when not specified"),
    pytest.param("default", "default", id="when default specified"),
    pytest.param("dedicated", "dedicated", id="when dedicated specified"),
])
def test_tenancy_on_the_launch_template(provider: AwsCloudProvider, ec2: FakeEC2,
                                        required: str | None, tenancy: str) -> None:
    """Context("Tenancy") DescribeTable("should set tenancy on launch template"), its three
    Entries; the instance (then NodeClaim and node) is labelled with the tenancy it got."""
    extra = ([{"key": "karpenter.k8s.aws/instance-tenancy", "operator": "In",
               "values": [required]}] if required else [])
    instance = provider.create(claim_with(*extra), node_class())

    assert [data["Placement"]["Tenancy"] for data in ec2.template_data()] == [tenancy]
    assert instance.labels["karpenter.k8s.aws/instance-tenancy"] == tenancy


def test_a_nodeclaim_allowing_both_tenancies_launches_on_shared_hardware(
    provider: AwsCloudProvider, ec2: FakeEC2
) -> None:
    """Karpenter's getTenancyType (pkg/providers/instance/instance.go): default wins when
    allowed; NotIn [default] is dedicated."""
    provider.create(claim_with({"key": "karpenter.k8s.aws/instance-tenancy", "operator": "In",
                                "values": ["dedicated", "default"]}), node_class())
    provider.create(claim_with({"key": "karpenter.k8s.aws/instance-tenancy",
                                "operator": "NotIn", "values": ["default"]}, name="other"),
                    node_class())

    tenancies = [data["Placement"]["Tenancy"] for data in ec2.template_data()]
    assert tenancies == ["default", "dedicated"]


# --- User Data ------------------------------------------------------------------------------


def test_al2_eni_based_pod_density_turns_off_bootstrap_sh_max_pods(
    provider: AwsCloudProvider, ec2: FakeEC2
) -> None:
    """Context("User Data") It("should specify --use-max-pods=false when using ENI-based pod
    density")"""
    launch(provider, ec2, amiSelectorTerms=[{"alias": "al2@latest"}])
    for name in ec2.launch_templates():
        assert "--use-max-pods false" in ec2.user_data(name)


def test_al2_user_max_pods(provider: AwsCloudProvider, ec2: FakeEC2) -> None:
    """Context("User Data") It("should specify --use-max-pods=false and --max-pods user value
    when user specifies maxPods in NodePool")"""
    launch(provider, ec2, amiSelectorTerms=[{"alias": "al2@latest"}], kubelet={"maxPods": 10})
    for name in ec2.launch_templates():
        text = ec2.user_data(name)
        assert "--use-max-pods false" in text and "--max-pods=10" in text


def test_different_max_pods_get_different_launch_templates(
    provider: AwsCloudProvider, ec2: FakeEC2
) -> None:
    """Context("User Data") It("should generate different launch templates for different
    maxPods values when specifying kubelet configuration")"""
    launch(provider, ec2, kubelet={"clusterDNS": ["10.0.100.10"]})
    max_pods = sorted(config["maxPods"] for config in kubelet_configs(ec2))
    assert max_pods == sorted(set(max_pods)) and len(max_pods) == 3  # 17, 29, 58


# Karpenter's kubelet settings in these tables: reserved resources, eviction thresholds and
# soft-eviction grace periods.
SOFT = {"memory.available": "10%", "nodefs.available": "15%", "nodefs.inodesFree": "5%"}
SOFT_GRACE = {"memory.available": "1m0s", "nodefs.available": "3m0s",
              "nodefs.inodesFree": "5m0s"}
RESERVED = {"cpu": "500m", "memory": "1Gi", "ephemeral-storage": "2Gi"}


@pytest.mark.parametrize(("field", "kubelet", "expected"), [
    pytest.param("systemReserved", {"systemReserved": RESERVED}, RESERVED,
                 id="should specify systemReserved when overriding system reserved values"),
    pytest.param("kubeReserved", {"kubeReserved": RESERVED}, RESERVED,
                 id="should specify kubeReserved when overriding system reserved values"),
    pytest.param("evictionHard", {"evictionHard": SOFT}, SOFT,
                 id="should pass evictionHard threshold values when specified"),
    pytest.param("evictionSoft", {"evictionSoft": SOFT, "evictionSoftGracePeriod": SOFT_GRACE},
                 SOFT, id="should pass evictionSoft threshold values when specified"),
    pytest.param("evictionSoftGracePeriod",
                 {"evictionSoftGracePeriod": SOFT_GRACE, "evictionSoft": SOFT}, SOFT_GRACE,
                 id="should pass evictionSoftGracePeriod values when specified"),
    pytest.param("evictionMaxPodGracePeriod", {"evictionMaxPodGracePeriod": 300}, 300,
                 id="should pass evictionMaxPodGracePeriod when specified"),
    pytest.param("podsPerCore", {"podsPerCore": 2}, 2, id="should specify podsPerCore"),
    pytest.param("imageGCHighThresholdPercent", {"imageGCHighThresholdPercent": 50}, 50,
                 id="should pass ImageGCHighThresholdPercent when specified"),
    pytest.param("imageGCLowThresholdPercent", {"imageGCLowThresholdPercent": 50}, 50,
                 id="should pass ImageGCLowThresholdPercent when specified"),
    pytest.param("cpuCFSQuota", {"cpuCFSQuota": False}, False,
                 id="should pass cpuCFSQuota when specified"),
])
def test_kubelet_settings_reach_the_node_config(
    provider: AwsCloudProvider, ec2: FakeEC2, field: str, kubelet: dict[str, Any],
    expected: Any,
) -> None:
    """Context("User Data"): one It per kubelet setting (named by the test id), read from the
    AL2023 NodeConfig as Karpenter's ExpectParseNodeConfigKubeletField does."""
    launch(provider, ec2, kubelet=kubelet)
    configs = kubelet_configs(ec2)
    assert configs and [config[field] for config in configs] == [expected] * len(configs)


def test_pods_per_core_with_max_pods(provider: AwsCloudProvider, ec2: FakeEC2) -> None:
    """Context("User Data") It("should specify podsPerCore with maxPods enabled")"""
    launch(provider, ec2, kubelet={"podsPerCore": 2, "maxPods": 100})
    for config in kubelet_configs(ec2):
        assert (config["podsPerCore"], config["maxPods"]) == (2, 100)


def test_cluster_dns_in_an_ipv6_cluster(clients: AwsClients, world: World, clock: FakeClock,
                                        ec2: FakeEC2) -> None:
    """Context("User Data") It("should specify clusterDNS when running in an ipv6 cluster")"""
    ipv6_provider(clients, clock).create(nodeclaim(), node_class())
    assert {tuple(config["clusterDNS"]) for config in kubelet_configs(ec2)} == {
        ("fd4b:121b:812b::a",)}


def test_cluster_dns_in_an_ipv4_cluster(clients: AwsClients, world: World, clock: FakeClock,
                                        ec2: FakeEC2) -> None:
    """Context("User Data") It("should specify clusterDNS when running in an ipv4 cluster")"""
    ipv4 = AwsCloudProvider(clients, CLUSTER, clock=clock, prices=OfflinePriceSource(),
                            kube_dns_ip="10.0.100.10")
    ipv4.create(nodeclaim(), node_class())
    assert {tuple(config["clusterDNS"]) for config in kubelet_configs(ec2)} == {
        ("10.0.100.10",)}


@pytest.mark.parametrize("label", [
    pytest.param("node-restriction.kubernetes.io/bar", id="node-restriction.kubernetes.io"),
    pytest.param("kubernetes.io/bar", id="kubernetes.io"),
    pytest.param("k8s.io/bar", id="k8s.io"),
    pytest.param("foo.node-restriction.kubernetes.io/bar", id="*.node-restriction.kubernetes.io"),
    pytest.param("foo.kubernetes.io/bar", id="kubernetes.io suffix"),
    pytest.param("foo.k8s.io/bar", id="*.k8s.io"),
])
def test_labels_in_restricted_domains_are_not_passed_to_the_kubelet(
    provider: AwsCloudProvider, ec2: FakeEC2, label: str
) -> None:
    """Context("User Data") DescribeTable("should not pass any labels in restricted
    domains"), its six Entries"""
    provider.create(claim_with({"key": label, "operator": "In", "values": ["foobar"]}),
                    node_class())
    assert all(label not in ec2.user_data(name) for name in ec2.launch_templates())


def test_al2_instance_store_raid0(provider: AwsCloudProvider, ec2: FakeEC2) -> None:
    """Context("User Data") It("should specify --local-disks raid0 when instance-store policy
    is set on AL2")"""
    launch(provider, ec2, amiSelectorTerms=[{"alias": "al2@latest"}],
           instanceStorePolicy="RAID0")
    assert all("--local-disks raid0" in ec2.user_data(name) for name in ec2.launch_templates())


# --- Detailed Monitoring --------------------------------------------------------------------


def test_detailed_monitoring_is_off_by_default(provider: AwsCloudProvider, ec2: FakeEC2) -> None:
    """Context("Detailed Monitoring") It("should default detailed monitoring to off")"""
    assert {data["Monitoring"]["Enabled"] for data in launch(provider, ec2)} == {False}


def test_detailed_monitoring_reaches_the_launch_template(
    provider: AwsCloudProvider, ec2: FakeEC2
) -> None:
    """Context("Detailed Monitoring") It("should pass detailed monitoring setting to the launch
    template at creation")"""
    templates = launch(provider, ec2, detailedMonitoring=True)
    assert {data["Monitoring"]["Enabled"] for data in templates} == {True}


# --- Tags -----------------------------------------------------------------------------------


def test_node_class_tags_go_on_instances_volumes_and_the_fleet(
    provider: AwsCloudProvider, ec2: FakeEC2
) -> None:
    """Context("Tags") It("should request that tags be applied to both instances and
    volumes"): exactly these three (network interfaces are tagged by the launch template)"""
    launch(provider, ec2, tags={"tag1": "tag1value", "tag2": "tag2value"})
    assert [spec["ResourceType"] for spec in ec2.last("CreateFleet")["TagSpecifications"]] == [
        "instance", "volume", "fleet"]
    for kind in ("instance", "volume", "fleet"):
        tags = ec2.fleet_tags(kind)
        assert (tags["tag1"], tags["tag2"]) == ("tag1value", "tag2value"), kind


def test_a_node_class_name_tag_overrides_the_default_name(
    provider: AwsCloudProvider, ec2: FakeEC2
) -> None:
    """Context("Tags") It("should override default tag names")"""
    launch(provider, ec2, tags={"Name": "myname"})
    for kind in ("instance", "volume", "fleet"):
        assert ec2.fleet_tags(kind)["Name"] == "myname", kind


# --- Block Device Mappings ------------------------------------------------------------------


@pytest.mark.parametrize("alias", [
    pytest.param("al2@latest", id="should default AL2 block device mappings"),
    pytest.param("al2023@latest", id="should default AL2023 block device mappings"),
])
def test_default_root_volume(provider: AwsCloudProvider, ec2: FakeEC2, alias: str) -> None:
    """Context("Block Device Mappings"), one It per family (the test id)"""
    for data in launch(provider, ec2, amiSelectorTerms=[{"alias": alias}]):
        (mapping,) = data["BlockDeviceMappings"]
        assert (mapping["Ebs"]["VolumeSize"], mapping["Ebs"]["VolumeType"]) == (20, "gp3")
        assert "Iops" not in mapping["Ebs"]


def test_custom_block_device_mapping(provider: AwsCloudProvider, ec2: FakeEC2) -> None:
    """Context("Block Device Mappings") It("should use custom block device mapping")"""
    mappings = [
        {"deviceName": "/dev/xvda", "ebs": {"deleteOnTermination": True, "encrypted": True,
                                            "volumeType": "io2", "volumeSize": "40Gi",
                                            "iops": 10_000, "kmsKeyID": KMS_KEY}},
        {"deviceName": "/dev/xvdb", "ebs": {"deleteOnTermination": True, "encrypted": True,
                                            "volumeType": "io2", "volumeSize": "200Gi",
                                            "iops": 10_000, "kmsKeyID": KMS_KEY}},
    ]
    for data in launch(provider, ec2, blockDeviceMappings=mappings):
        root, extra = data["BlockDeviceMappings"]
        assert root["Ebs"] == {"VolumeSize": 40, "VolumeType": "io2", "Iops": 10_000,
                               "Encrypted": True, "KmsKeyId": KMS_KEY,
                               "DeleteOnTermination": True}
        assert extra["Ebs"]["VolumeSize"] == 200


def test_gigabyte_volume_sizes_round_up_to_gibibytes(
    provider: AwsCloudProvider, ec2: FakeEC2
) -> None:
    """Context("Block Device Mappings") It("should round up for custom block device mappings
    when specified in gigabytes")"""
    mappings = [{"deviceName": device, "ebs": {"volumeType": "io2", "volumeSize": size,
                                               "iops": 10_000, "encrypted": True}}
                for device, size in (("/dev/xvda", "4G"), ("/dev/xvdb", "2G"))]
    for data in launch(provider, ec2, blockDeviceMappings=mappings):
        assert [m["Ebs"]["VolumeSize"] for m in data["BlockDeviceMappings"]] == [4, 2]


def test_bottlerocket_gets_a_control_and_a_data_volume(
    provider: AwsCloudProvider, ec2: FakeEC2
) -> None:
    """Context("Block Device Mappings") It("should default bottlerocket second volume with
    root volume size")"""
    for data in launch(provider, ec2, amiSelectorTerms=[{"alias": "bottlerocket@latest"}]):
        assert [(m["Ebs"]["VolumeSize"], m["Ebs"]["VolumeType"])
                for m in data["BlockDeviceMappings"]] == [(4, "gp3"), (20, "gp3")]


# --- Networking -----------------------------------------------------------------------------


@pytest.mark.parametrize("value", [
    pytest.param(True, id="AssociatePublicIPAddress is true"),
    pytest.param(False, id="AssociatePublicIPAddress is false"),
])
def test_public_ip_association(provider: AwsCloudProvider, ec2: FakeEC2, value: bool) -> None:
    """Context("Public IP Association") DescribeTable("should set 'AssociatePublicIPAddress'
    based on EC2NodeClass"), its two non-EFA Entries"""
    for data in launch(provider, ec2, associatePublicIPAddress=value):
        assert data["NetworkInterfaces"][0]["AssociatePublicIpAddress"] is value


@pytest.mark.parametrize("count", [0, 1, 10, 100], ids=lambda n: f"IPv4PrefixCount is {n}")
def test_ipv4_prefix_count(provider: AwsCloudProvider, ec2: FakeEC2, count: int) -> None:
    """Context("IP Prefix Delegation") DescribeTable("should set 'IPv4PrefixCount' based on
    EC2NodeClass"), its four Entries"""
    for data in launch(provider, ec2, ipPrefixCount=count):
        assert data["NetworkInterfaces"][0]["Ipv4PrefixCount"] == count


@pytest.mark.parametrize("count", [0, 1, 10, 100], ids=lambda n: f"IPv6PrefixCount is {n}")
def test_ipv6_prefix_count(clients: AwsClients, world: World, clock: FakeClock, ec2: FakeEC2,
                           count: int) -> None:
    """Context("IP Prefix Delegation") DescribeTable("should set 'IPv6PrefixCount' based on
    EC2NodeClass"), its four Entries"""
    ipv6_provider(clients, clock).create(nodeclaim(), node_class(ipPrefixCount=count))
    for data in ec2.template_data():
        assert data["NetworkInterfaces"][0]["Ipv6PrefixCount"] == count


@pytest.mark.parametrize(("tracking", "expected"), [
    pytest.param(None, None, id="ConnectionTracking is nil"),
    pytest.param({"tcpEstablishedTimeout": 432000, "udpStreamTimeout": 180, "udpTimeout": 30},
                 {"TcpEstablishedTimeout": 432000, "UdpStreamTimeout": 180, "UdpTimeout": 30},
                 id="ConnectionTracking with AWS defaults"),
    pytest.param({"tcpEstablishedTimeout": 86400}, {"TcpEstablishedTimeout": 86400},
                 id="ConnectionTracking with non-default TCP timeout"),
])
def test_connection_tracking(provider: AwsCloudProvider, ec2: FakeEC2,
                             tracking: dict[str, int] | None,
                             expected: dict[str, int] | None) -> None:
    """Context("Connection Tracking settings") DescribeTable("should set 'ConnectionTracking'
    based on EC2NodeClass"), its three Entries"""
    spec = {"connectionTracking": tracking} if tracking else {}
    for data in launch(provider, ec2, **spec):
        interfaces = data.get("NetworkInterfaces") or [{}]
        assert interfaces[0].get("ConnectionTrackingSpecification") == expected


# --- Cache ----------------------------------------------------------------------------------


def test_equivalent_constraints_share_a_launch_template(
    provider: AwsCloudProvider, ec2: FakeEC2
) -> None:
    """Context("Cache") It("should use same launch template for equivalent constraints")"""
    provider.create(nodeclaim("first", uid="uid-1"), node_class())
    provider.create(nodeclaim("second", uid="uid-2"), node_class())

    first, second = ec2.calls("CreateFleet")
    assert {o.template for o in ec2.overrides(first)} == {o.template for o in ec2.overrides(second)}
    assert len(ec2.calls("CreateLaunchTemplate")) == 3


def test_kubelet_configuration_changes_the_template_names(
    provider: AwsCloudProvider, ec2: FakeEC2
) -> None:
    """Context("Cache") It("should generate different launch template names based on kubelet
    configuration")"""
    provider.create(nodeclaim("first", uid="uid-1"), node_class())
    provider.create(nodeclaim("second", uid="uid-2"),
                    node_class(kubelet={"evictionHard": {"memory.available": "5%"}}))

    first, second = ec2.calls("CreateFleet")
    assert not ({o.template for o in ec2.overrides(first)}
                & {o.template for o in ec2.overrides(second)})


def test_instance_types_do_not_change_the_template_names(
    provider: AwsCloudProvider, ec2: FakeEC2
) -> None:
    """Context("Cache") It("should not generate different launch template names based on
    instance types")"""
    provider.create(claim_with(), node_class())
    provider.create(nodeclaim("other", uid="uid-2", requirements=[
        {"key": "node.kubernetes.io/instance-type", "operator": "In",
         "values": ["m5.large", "m5.xlarge"]},
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}]),
        node_class())

    first, second = ec2.calls("CreateFleet")
    m5_large = {o.template for o in ec2.overrides(first) + ec2.overrides(second)
                if o.instance_type == "m5.large"}
    assert len(m5_large) == 1


# --- Capacity reservations ------------------------------------------------------------------


def test_a_launch_template_per_capacity_reservation_one_per_pool(
    provider: AwsCloudProvider, ec2: FakeEC2, clients: AwsClients
) -> None:
    """It("should generate a unique launch template per capacity reservation"): of two
    reservations in one (type, zone) pool only the one with more instances left is sent
    (Karpenter's reserved-offering filter), each reservation gets its own template and
    each template one override."""
    fake = FakeCapacityReservations(clients)
    fake.add(
        FakeReservation("cr-m5.large-1a-1", "m5.large", "us-west-2a", available=1, total=5,
                        tags={"team": "ml"}),
        FakeReservation("cr-m5.large-1a-2", "m5.large", "us-west-2a", available=3, total=5,
                        tags={"team": "ml"}),
        FakeReservation("cr-m5.large-1b-1", "m5.large", "us-west-2b", available=1, total=5,
                        tags={"team": "ml"}),
        FakeReservation("cr-m5.xlarge-1b-1", "m5.xlarge", "us-west-2b", available=1, total=5,
                        tags={"team": "ml"}),
    )
    reserved = nodeclaim(requirements=[
        {"key": "node.kubernetes.io/instance-type", "operator": "In",
         "values": ["m5.large", "m5.xlarge"]},
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["reserved"]}])

    provider.create(reserved, node_class(
        capacityReservationSelectorTerms=[{"tags": {"team": "ml"}}]))

    templates = ec2.launch_templates()
    targets = {name: data["CapacityReservationSpecification"] for name, data in templates.items()}
    assert sorted(spec["CapacityReservationTarget"]["CapacityReservationId"]
                  for spec in targets.values()) == [
        "cr-m5.large-1a-2", "cr-m5.large-1b-1", "cr-m5.xlarge-1b-1"]
    assert {spec["CapacityReservationPreference"] for spec in targets.values()} == {
        "capacity-reservations-only"}
    configs = ec2.last("CreateFleet")["LaunchTemplateConfigs"]
    assert len(configs) == 3 and all(len(config["Overrides"]) == 1 for config in configs)


def test_a_capacity_block_launches_in_the_capacity_block_market(
    provider: AwsCloudProvider, ec2: FakeEC2, clients: AwsClients
) -> None:
    """DescribeTable("should correctly assign the market type for reserved capacity"),
    Entry("with capacity block reservation type")"""
    FakeCapacityReservations(clients).add(FakeReservation(
        "cr-m5.large-1a-1", "m5.large", "us-west-2a", available=10, total=10,
        reservation_type="capacity-block", tags={"team": "ml"}))
    reserved = nodeclaim(requirements=[
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.large"]},
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["reserved"]}])

    # moto's CreateFleet knows no capacity-block market: EC2's answer is given.
    ec2.respond("CreateFleet", {"Errors": [], "Instances": [{
        "InstanceIds": ["i-0123456789abcdef0"], "InstanceType": "m5.large",
        "LaunchTemplateAndOverrides": {"Overrides": {
            "InstanceType": "m5.large", "AvailabilityZone": "us-west-2a"}}}]})
    provider.create(reserved, node_class(
        capacityReservationSelectorTerms=[{"tags": {"team": "ml"}}]))

    assert ec2.last("CreateFleet")["TargetCapacitySpecification"][
        "DefaultTargetCapacityType"] == "capacity-block"
    (data,) = ec2.template_data()
    assert data["InstanceMarketOptions"] == {"MarketType": "capacity-block"}


def test_an_interruptible_reservation_launches_in_its_own_market(
    provider: AwsCloudProvider, ec2: FakeEC2, clients: AwsClients
) -> None:
    """DescribeTable("should correctly assign the market type for reserved capacity"),
    Entry("with default interruptible reservation type"); and the fleet Karpenter's
    CreateFleetInputBuilder sends for it (pkg/providers/instance/types.go): a reserved-capacity
    target, interruptible reservations only, no on-demand options."""
    FakeCapacityReservations(clients).add(FakeReservation(
        "cr-m5.large-1a-1", "m5.large", "us-west-2a", available=10, total=10,
        interruptible=True, tags={"team": "ml"}))
    reserved = nodeclaim(requirements=[
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.large"]},
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["reserved"]}])

    # moto's CreateFleet knows no reserved-capacity target: EC2's answer is given.
    ec2.respond("CreateFleet", {"Errors": [], "Instances": [{
        "InstanceIds": ["i-0123456789abcdef0"], "InstanceType": "m5.large",
        "LaunchTemplateAndOverrides": {"Overrides": {
            "InstanceType": "m5.large", "AvailabilityZone": "us-west-2a"}}}]})
    launched = provider.create(reserved, node_class(
        capacityReservationSelectorTerms=[{"tags": {"team": "ml"}}]))

    (data,) = ec2.template_data()
    assert data["InstanceMarketOptions"] == {"MarketType": "interruptible-capacity-reservation"}
    assert data["CapacityReservationSpecification"] == {
        "CapacityReservationPreference": "capacity-reservations-only",
        "CapacityReservationTarget": {"CapacityReservationId": "cr-m5.large-1a-1"}}
    request = ec2.last("CreateFleet")
    assert request["TargetCapacitySpecification"][
        "DefaultTargetCapacityType"] == "reserved-capacity"
    assert request["ReservedCapacityOptions"] == {
        "ReservationTypes": ["interruptible-capacity-reservation"]}
    assert "OnDemandOptions" not in request and "SpotOptions" not in request
    assert launched.labels["karpenter.k8s.aws/capacity-reservation-interruptible"] == "true"


def test_an_ordinary_reservation_has_no_market_type_and_an_on_demand_target(
    provider: AwsCloudProvider, ec2: FakeEC2, clients: AwsClients
) -> None:
    """The other side of Karpenter's market choice: a default, non-interruptible reservation
    launches with no InstanceMarketOptions, as on-demand capacity (lowest-price)."""
    FakeCapacityReservations(clients).add(FakeReservation(
        "cr-m5.large-1a-1", "m5.large", "us-west-2a", available=10, total=10,
        interruptible=False, tags={"team": "ml"}))
    reserved = nodeclaim(requirements=[
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.large"]},
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["reserved"]}])

    launched = provider.create(reserved, node_class(
        capacityReservationSelectorTerms=[{"tags": {"team": "ml"}}]))

    (data,) = ec2.template_data()
    assert "InstanceMarketOptions" not in data
    request = ec2.last("CreateFleet")
    assert request["TargetCapacitySpecification"]["DefaultTargetCapacityType"] == "on-demand"
    assert request["OnDemandOptions"] == {"AllocationStrategy": "lowest-price"}
    assert "ReservedCapacityOptions" not in request
    assert launched.labels["karpenter.k8s.aws/capacity-reservation-interruptible"] == "false"


# --- User Data: AL2023 ----------------------------------------------------------------------


def node_configs(ec2: FakeEC2) -> list[dict[str, Any]]:
    """Every NodeConfig document of every template's user data."""
    found = []
    for name in ec2.launch_templates():
        for part in mime.split_parts(ec2.user_data(name)):
            if part.content_type == mime.NODE_CONFIG:
                found.extend(doc for doc in yaml.safe_load_all(part.body) if doc)
    return found


def edited_claim(*, labels: dict[str, str] | None = None,
                 taints: list[dict[str, str]] | None = None,
                 requirements: list[dict[str, Any]] | None = None) -> NodeClaim:
    manifest = claim_with(*(requirements or [])).to_manifest()
    manifest["metadata"]["labels"].update(labels or {})
    if taints is not None:
        manifest["spec"]["taints"] = taints
    return NodeClaim.model_validate(manifest)


# The two label Its of each family's Context("Kubelet"): the NodePool's labels given as
# template labels, or as single-value requirements.
LABELLED_BY = pytest.mark.parametrize("as_requirements", [
    pytest.param(False, id="should specify labels in the Kubelet flags when specified in "
                          "NodePool"),
    pytest.param(True, id="should specify labels in the Kubelet flags when single value "
                         "requirements are specified in NodePool"),
])
WANTED_LABELS = {"test-label-1": "value-1", "test-label-2": "value-2"}


def labelled_claim(as_requirements: bool) -> NodeClaim:
    if as_requirements:
        return edited_claim(requirements=[{"key": key, "operator": "In", "values": [value]}
                                          for key, value in WANTED_LABELS.items()])
    return edited_claim(labels=WANTED_LABELS)


def test_al2023_taints_in_the_kubelet_configuration(provider: AwsCloudProvider,
                                                    ec2: FakeEC2) -> None:
    """Context("AL2023") Context("Kubelet") It("should specify taints in the
    KubeletConfiguration when specified in NodePool")"""
    wanted = [{"key": "test-taint-1", "effect": "NoSchedule"},
              {"key": "test-taint-2", "effect": "NoExecute"}]
    provider.create(edited_claim(taints=wanted), node_class())
    for config in node_configs(ec2):
        taints = config["spec"]["kubelet"]["config"]["registerWithTaints"]
        assert len(taints) == 3 and all(taint in taints for taint in wanted)


@LABELLED_BY
def test_al2023_labels_in_the_kubelet_flags(provider: AwsCloudProvider, ec2: FakeEC2,
                                            as_requirements: bool) -> None:
    """Context("AL2023") Context("Kubelet"), its two label Its (the test ids)"""
    provider.create(labelled_claim(as_requirements), node_class())
    for config in node_configs(ec2):
        (flag,) = [f for f in config["spec"]["kubelet"]["flags"]
                   if f.startswith("--node-labels")]
        assert all(f"{key}={value}" in flag for key, value in WANTED_LABELS.items())




@pytest.mark.parametrize(("field", "kubelet"), [
    pytest.param("systemReserved", {"systemReserved": RESERVED}, id="systemReserved"),
    pytest.param("kubeReserved", {"kubeReserved": RESERVED}, id="kubeReserved"),
    pytest.param("evictionHard", {"evictionHard": SOFT}, id="evictionHard"),
    pytest.param("evictionSoft", {"evictionSoft": SOFT, "evictionSoftGracePeriod": SOFT_GRACE},
                 id="evictionSoft"),
    pytest.param("evictionSoftGracePeriod",
                 {"evictionSoft": SOFT, "evictionSoftGracePeriod": SOFT_GRACE},
                 id="evictionSoftGracePeriod"),
    pytest.param("evictionMaxPodGracePeriod", {"evictionMaxPodGracePeriod": 300},
                 id="evictionMaxPodGracePeriod"),
    pytest.param("podsPerCore", {"podsPerCore": 2}, id="podsPerCore"),
    pytest.param("clusterDNS", {"clusterDNS": ["10.0.100.0"]}, id="clusterDNS"),
    pytest.param("imageGCHighThresholdPercent", {"imageGCHighThresholdPercent": 50},
                 id="imageGCHighThresholdPercent"),
    pytest.param("imageGCLowThresholdPercent", {"imageGCLowThresholdPercent": 50},
                 id="imageGCLowThresholdPercent"),
    pytest.param("cpuCFSQuota", {"cpuCFSQuota": False}, id="cpuCFSQuota"),
])
def test_al2023_kubelet_configuration_field(provider: AwsCloudProvider, ec2: FakeEC2,
                                            field: str, kubelet: dict[str, Any]) -> None:
    """Context("AL2023") Context("Kubelet") DescribeTable("should specify KubletConfiguration
    field when specified in NodePool"), its eleven Entries (the test ids): the field reaches
    our NodeConfig exactly as given."""
    provider.create(claim_with(), node_class(kubelet=kubelet))
    configs = node_configs(ec2)
    assert configs and all(c["spec"]["kubelet"]["config"][field] == kubelet[field]
                           for c in configs)


def test_al2023_instance_store_raid0(provider: AwsCloudProvider, ec2: FakeEC2) -> None:
    """Context("AL2023") It("should set LocalDiskStrategy to Raid0 when specified by the
    InstanceStorePolicy")"""
    provider.create(claim_with(), node_class(instanceStorePolicy="RAID0"))
    configs = node_configs(ec2)
    assert configs and all(c["spec"]["instance"]["localStorage"]["strategy"] == "RAID0"
                           for c in configs)


# --- User Data: Bottlerocket ----------------------------------------------------------------

BOTTLEROCKET = [{"alias": "bottlerocket@latest"}]


def bottlerocket_settings(ec2: FakeEC2) -> list[dict[str, Any]]:
    """settings.kubernetes of every template's TOML user data."""
    found = [tomllib.loads(ec2.user_data(name))["settings"]["kubernetes"]
             for name in ec2.launch_templates()]
    assert found
    return found


@pytest.mark.parametrize(("kubelet", "key", "expected"), [
    pytest.param({"systemReserved": {"cpu": "2", "memory": "3Gi", "ephemeral-storage": "10Gi"}},
                 "system-reserved", {"cpu": "2", "memory": "3Gi", "ephemeral-storage": "10Gi"},
                 id="should override system reserved values in user data"),
    pytest.param({"kubeReserved": {"cpu": "2", "memory": "3Gi", "ephemeral-storage": "10Gi"}},
                 "kube-reserved", {"cpu": "2", "memory": "3Gi", "ephemeral-storage": "10Gi"},
                 id="should override kube reserved values in user data"),
    pytest.param({"evictionHard": SOFT}, "eviction-hard", SOFT,
                 id="should override kube reserved values in user data (evictionHard)"),
    pytest.param({"maxPods": 10}, "max-pods", 10,
                 id="should specify max pods value when passing maxPods in configuration"),
    pytest.param({"cpuCFSQuota": False}, "cpu-cfs-quota-enforced", False,
                 id="should pass CPUCFSQuota when specified"),
])
def test_bottlerocket_kubernetes_settings(provider: AwsCloudProvider, ec2: FakeEC2,
                                          kubelet: dict[str, Any], key: str,
                                          expected: Any) -> None:
    """Context("Bottlerocket"), one It per setting (the test ids; Karpenter has two Its named
    "should override kube reserved values in user data", the second about evictionHard)."""
    provider.create(claim_with(), node_class(amiSelectorTerms=BOTTLEROCKET, kubelet=kubelet))
    assert all(settings[key] == expected for settings in bottlerocket_settings(ec2))


@pytest.mark.parametrize("field", ["imageGCHighThresholdPercent", "imageGCLowThresholdPercent"],
                         ids=["should pass ImageGCHighThresholdPercent when specified",
                              "should pass ImageGCLowThresholdPercent when specified"])
def test_bottlerocket_image_gc_thresholds(provider: AwsCloudProvider, ec2: FakeEC2,
                                          field: str) -> None:
    """Context("Bottlerocket"), its two image GC Its (the test ids)"""
    key = "image-gc-high-threshold-percent" if "High" in field else \
        "image-gc-low-threshold-percent"
    provider.create(claim_with(), node_class(amiSelectorTerms=BOTTLEROCKET, kubelet={field: 50}))
    assert all(int(settings[key]) == 50 for settings in bottlerocket_settings(ec2))


def test_bottlerocket_soft_eviction(provider: AwsCloudProvider, ec2: FakeEC2) -> None:
    """Context("Bottlerocket") It("should override soft eviction values in user data")"""
    provider.create(claim_with(), node_class(amiSelectorTerms=BOTTLEROCKET, kubelet={
        "evictionSoft": {"memory.available": "10%"},
        "evictionSoftGracePeriod": {"memory.available": "1m0s"}}))
    for settings in bottlerocket_settings(ec2):
        assert settings["eviction-soft"] == {"memory.available": "10%"}
        assert settings["eviction-soft-grace-period"] == {"memory.available": "1m0s"}
    # The bytes Karpenter's It looks for.
    assert all("\n[settings.kubernetes.eviction-soft]\n'memory.available' = '10%'\n\n"
               "[settings.kubernetes.eviction-soft-grace-period]\n"
               "'memory.available' = '1m0s'\n" in ec2.user_data(name)
               for name in ec2.launch_templates())


def test_bottlerocket_max_pod_grace_period(clients: AwsClients, world: World, clock: FakeClock,
                                           ec2: FakeEC2) -> None:
    """Context("Bottlerocket") It("should override max pod grace period in user data") and
    It("should pass ClusterDNSIP when discovered")"""
    provider = AwsCloudProvider(clients, CLUSTER, clock=clock, prices=OfflinePriceSource(),
                                kube_dns_ip="10.0.100.10")
    provider.create(claim_with(), node_class(amiSelectorTerms=BOTTLEROCKET, kubelet={
        "maxPods": 35, "evictionMaxPodGracePeriod": 10}))
    for settings in bottlerocket_settings(ec2):
        assert (settings["cluster-name"], settings["cluster-dns-ip"], settings["max-pods"],
                settings["eviction-max-pod-grace-period"]) == (CLUSTER, "10.0.100.10", 35, 10)
    info = provider.cluster().info  # the bytes Karpenter's It looks for, our cluster's values
    table = (f"\n[settings.kubernetes]\napi-server = '{info.endpoint}'\n"
             f"cluster-certificate = '{info.ca_bundle}'\ncluster-name = '{CLUSTER}'\n"
             "cluster-dns-ip = '10.0.100.10'\nmax-pods = 35\n"
             "eviction-max-pod-grace-period = 10\n")
    assert all(table in ec2.user_data(name) for name in ec2.launch_templates())


@LABELLED_BY
def test_bottlerocket_node_labels(provider: AwsCloudProvider, ec2: FakeEC2,
                                  as_requirements: bool) -> None:
    """Context("Bottlerocket"), its two label Its (the test ids)"""
    provider.create(labelled_claim(as_requirements), node_class(amiSelectorTerms=BOTTLEROCKET))
    for settings in bottlerocket_settings(ec2):
        assert WANTED_LABELS.items() <= settings["node-labels"].items()


def test_bottlerocket_refuses_user_data_that_is_not_toml(provider: AwsCloudProvider,
                                                         ec2: FakeEC2) -> None:
    """Context("Bottlerocket") It("should not bootstrap on invalid toml user data")"""
    with pytest.raises(CloudProviderError, match="userData"):
        provider.create(claim_with(), node_class(amiSelectorTerms=BOTTLEROCKET,
                                                 userData="#/bin/bash\n ./not-toml.sh"))
    assert ec2.calls("CreateFleet") == []


# --- User Data: AL2 custom user data --------------------------------------------------------

CUSTOM_SCRIPT = '#!/bin/bash\necho "Running custom user data script"\n'
MIME_INPUT = ('MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="BOUNDARY"\n\n'
              '--BOUNDARY\nContent-Type: text/x-shellscript; charset="us-ascii"\n\n'
              f'{CUSTOM_SCRIPT}\n--BOUNDARY--')
CONTENT_TYPE_FIRST = ('Content-Type: multipart/mixed; boundary="BOUNDARY"\nMIME-Version: 1.0\n\n'
                      '--BOUNDARY\nContent-Type: text/x-shellscript; charset="us-ascii"\n\n'
                      f'{CUSTOM_SCRIPT}\n--BOUNDARY--')
# The labels Karpenter's suite launches with: its NodeClaim's (node class, NodePool, the
# suite's testing/cluster), the capacity type, and karpenter.sh/do-not-sync-taints.
KARPENTER_LABELS = ("karpenter.k8s.aws/ec2nodeclass=default,karpenter.sh/capacity-type=on-demand,"
                    "karpenter.sh/do-not-sync-taints=true,karpenter.sh/nodepool=default,"
                    "testing/cluster=unspecified")
KUBE_DNS = "10.0.100.10"


def karpenter_claim() -> NodeClaim:
    """The NodeClaim Karpenter's suite launches: its NodePool's labels, no taints."""
    manifest = claim_with().to_manifest()
    manifest["metadata"]["labels"] = {"karpenter.k8s.aws/ec2nodeclass": "default",
                                      "karpenter.sh/nodepool": "default",
                                      "testing/cluster": "unspecified"}
    manifest["spec"].pop("taints", None)
    return NodeClaim.model_validate(manifest)


def al2_bootstrap_part(provider: AwsCloudProvider) -> str:
    """Karpenter's bootstrap part (testdata/al2_userdata_unmerged.golden), for our cluster."""
    info = provider.cluster().info
    return ('--//\nContent-Type: text/x-shellscript; charset="us-ascii"\n\n'
            "#!/bin/bash -xe\n"
            "exec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1\n"
            f"/etc/eks/bootstrap.sh '{CLUSTER}' --apiserver-endpoint '{info.endpoint}' "
            f"--b64-cluster-ca '{info.ca_bundle}' \\\n"
            f"--dns-cluster-ip '{KUBE_DNS}' \\\n"
            "--use-max-pods false \\\n"
            f"--kubelet-extra-args '--node-labels=\"{KARPENTER_LABELS}\" "
            '--register-with-taints="karpenter.sh/unregistered:NoExecute" --max-pods=110\''
            "\n--//--\n")


@pytest.mark.parametrize("user_data", [
    pytest.param(MIME_INPUT, id="should merge in custom user data"),
    pytest.param(CONTENT_TYPE_FIRST,
                 id="should merge in custom user data when Content-Type is before MIME-Version"),
    pytest.param(CUSTOM_SCRIPT, id="should merge in custom user data not in multi-part mime "
                                   "format"),
    pytest.param(None, id="should handle empty custom user data"),
])
def test_al2_custom_user_data_runs_before_the_bootstrap(
    clients: AwsClients, world: World, clock: FakeClock, ec2: FakeEC2, user_data: str | None
) -> None:
    """Context("AL2 Custom UserData"), its four Its (the test ids), byte for byte as
    Karpenter's golden files (testdata/al2_userdata_merged.golden, or _unmerged without
    user data): the user's script is the first part whichever way it was written (its body
    as written, the line break before the boundary the boundary's), then bootstrap.sh with
    every value single-quoted and each list of the kubelet's arguments Go-quoted."""
    provider = AwsCloudProvider(clients, CLUSTER, clock=clock, prices=OfflinePriceSource(),
                                kube_dns_ip=KUBE_DNS)
    spec: dict[str, Any] = {"amiSelectorTerms": [{"alias": "al2@latest"}],
                            "kubelet": {"maxPods": 110}}
    if user_data is not None:
        spec["userData"] = user_data
    provider.create(karpenter_claim(), node_class(**spec))

    head = 'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="//"\n\n'
    users = ('--//\nContent-Type: text/x-shellscript; charset="us-ascii"\n\n'
             f"{CUSTOM_SCRIPT}\n") if user_data else ""
    expected = head + users + al2_bootstrap_part(provider)
    assert ec2.launch_templates()
    for name in ec2.launch_templates():
        assert ec2.user_data(name) == expected


# --- Networking: IPv6 -----------------------------------------------------------------------


@pytest.mark.parametrize(("dns", "ipv6"), [
    pytest.param("10.0.100.10", False, id="DNS has ipv4 address"),
    pytest.param("fd01:99f0:d47b::a", True, id="DNS has ipv6 address"),
])
def test_the_ip_family_follows_the_dns_address(clients: AwsClients, world: World,
                                               clock: FakeClock, dns: str, ipv6: bool) -> None:
    """Context("launch template respect to DNS ip for ipfamily selection")
    DescribeTable("should select correct ipFamily based on DNS ip"), its two Entries"""
    provider = AwsCloudProvider(clients, CLUSTER, clock=clock, prices=OfflinePriceSource(),
                                kube_dns_ip=dns)
    assert provider.cluster().info.ipv6 is ipv6


@pytest.mark.parametrize("public", [
    pytest.param(None, id="AssociatePublicIPAddress is not set and EFA is false"),
    pytest.param(False, id="AssociatePublicIPAddress is set as false and EFA is false"),
])
def test_an_ipv6_cluster_gets_a_primary_ipv6_address(clients: AwsClients, world: World,
                                                     clock: FakeClock, ec2: FakeEC2,
                                                     public: bool | None) -> None:
    """DescribeTable("should set Primary IPv6 as true and provision a IPv6 address"), its two
    Entries without EFA"""
    spec = {} if public is None else {"associatePublicIPAddress": public}
    ipv6_provider(clients, clock).create(nodeclaim(), node_class(**spec))
    for data in ec2.template_data():
        interface = data["NetworkInterfaces"][0]
        assert (interface["PrimaryIpv6"], interface["Ipv6AddressCount"]) == (True, 1)
        assert interface.get("AssociatePublicIpAddress") is public
