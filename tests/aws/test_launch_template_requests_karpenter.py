"""Karpenter's launch template suite (pkg/providers/launchtemplate/suite_test.go, v1.14.1):
the template names and tags, the custom user data merges of Bottlerocket, AL2023 and
Windows, and an unresolved cluster CIDR. Each test names its It/Entry.

As in tests/aws/test_launch_templates_karpenter.py, the NodeClaim Karpenter's scheduler would
make is launched directly through the real provider (moto underneath), and the requests it
sent are read from the FakeEC2 recorder. Where Karpenter compares a golden file, the port
compares the user data byte for byte with our own copy of it, our cluster's name, endpoint
and CA bundle (moto's) in place of the suite's.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from nodewright.api.core import Taint
from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.launch_templates import LaunchConfig
from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.cloud.aws.userdata import ClusterInfo, NodeBootstrap, render_user_data
from nodewright.cloud.provider import NodeClassNotReadyError
from nodewright.scheduling.pricing import OfflinePriceSource
from tests.aws.fake_ec2 import FakeEC2
from tests.aws.world import (
    CLUSTER,
    K8S_VERSION,
    X86_IMAGE,
    FakeClock,
    World,
    build_world,
    node_class,
    nodeclaim,
    seed_public_parameter,
)

NODEPOOL_LABEL = "karpenter.sh/nodepool"
UNREGISTERED = "karpenter.sh/unregistered"


def claim(capacity_type: str = "on-demand", name: str = "default-abcde",
          types: tuple[str, ...] = ("m5.large", "c5.large")) -> Any:
    return nodeclaim(name, uid=f"uid-{name}", requirements=[
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": list(types)},
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": [capacity_type]}])


def tags_of(specs: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    return {spec["ResourceType"]: {t["Key"]: t["Value"] for t in spec["Tags"]} for spec in specs}


# --- Tags -----------------------------------------------------------------------------------


def test_a_spot_template_tags_its_network_interfaces_and_spot_requests(
    provider: AwsCloudProvider, ec2: FakeEC2
) -> None:
    """Context("Tags") It("should request that tags be applied to both network interfaces and
    spot instance requests"): the launch template data tags both, with the node class's tags
    (and the ownership tags Karpenter's policy conditions on)."""
    provider.create(claim("spot"), node_class(tags={"tag1": "tag1value", "tag2": "tag2value"}))

    for data in ec2.template_data():
        specs = data["TagSpecifications"]
        assert [spec["ResourceType"] for spec in specs] == [
            "network-interface", "spot-instances-request"]
        for tags in tags_of(specs).values():
            assert (tags["tag1"], tags["tag2"]) == ("tag1value", "tag2value")
            assert tags[f"kubernetes.io/cluster/{CLUSTER}"] == "owned"
            assert tags["karpenter.k8s.aws/ec2nodeclass"] == "default"


def test_an_on_demand_template_tags_only_its_network_interfaces(
    provider: AwsCloudProvider, ec2: FakeEC2
) -> None:
    """Karpenter's CreateLaunchTemplateInputBuilder (launchtemplate/types.go): the spot
    request is tagged only by a spot template; spot and on-demand templates differ."""
    provider.create(claim("on-demand"), node_class())
    provider.create(claim("spot", name="spot-abcde"), node_class())

    on_demand, spot = ec2.calls("CreateLaunchTemplate")
    assert [s["ResourceType"] for s in on_demand["LaunchTemplateData"]["TagSpecifications"]] == [
        "network-interface"]
    assert on_demand["LaunchTemplateName"] != spot["LaunchTemplateName"]


# --- Launch templates of node classes -------------------------------------------------------


def test_identical_node_classes_get_their_own_launch_templates(
    provider: AwsCloudProvider, ec2: FakeEC2
) -> None:
    """It("should create unique launch templates for multiple identical nodeClasses"): two
    node classes with the same spec (one NodePool spot, the other on-demand) share no
    template, and each template is tagged with its own node class."""
    provider.create(claim("spot", name="first-abcde"), node_class("default"))
    provider.create(claim("on-demand", name="second-abcde"), node_class("second"))

    first, second = ec2.calls("CreateFleet")
    configs = [*first["LaunchTemplateConfigs"], *second["LaunchTemplateConfigs"]]
    assert len(configs) == len(ec2.calls("CreateLaunchTemplate"))
    assert not ({o.template for o in ec2.overrides(first)}
                & {o.template for o in ec2.overrides(second)})
    for call in ec2.calls("CreateLaunchTemplate"):
        for tags in tags_of(call["LaunchTemplateData"]["TagSpecifications"]).values():
            assert tags["karpenter.k8s.aws/ec2nodeclass"] in ("default", "second")


def test_the_fleet_launches_from_generated_templates(
    provider: AwsCloudProvider, ec2: FakeEC2
) -> None:
    """It("should default to a generated launch template"): one fleet config per created
    template, each at $Latest, each with an encrypted root volume."""
    provider.create(nodeclaim(), node_class())

    (fleet,) = ec2.calls("CreateFleet")
    created = ec2.launch_templates()
    assert len(fleet["LaunchTemplateConfigs"]) == len(created)
    for config in fleet["LaunchTemplateConfigs"]:
        spec = config["LaunchTemplateSpecification"]
        assert spec["Version"] == "$Latest"
        assert created[spec["LaunchTemplateName"]]["BlockDeviceMappings"][0]["Ebs"][
            "Encrypted"] is True


# --- Cache: template names ------------------------------------------------------------------

BASE = LaunchConfig(
    cluster=CLUSTER, nodepool="default", node_class="default", image_id="ami-base",
    user_data="", instance_profile="", security_group_ids=(), metadata_options={},
    block_device_mappings=(),
)
CLUSTER_INFO = ClusterInfo(CLUSTER, "https://demo.eks", "Y2EtYnVuZGxlCg==", "10.100.0.0/16")


def names(configs: list[LaunchConfig]) -> list[str]:
    return [config.name for config in configs]


def test_template_names_follow_the_node_class_options() -> None:
    """Context("Cache") It("should generate different launch template names based on amifamily
    option configuration"): the options that are not part of the user data (cluster,
    instance profile, security groups, tags, public IP, node class; the endpoint, CIDR, DNS
    and instance-store policy reach the name through the user data, below)."""
    variants = [
        BASE,
        dataclasses.replace(BASE, cluster="test-name"),
        dataclasses.replace(BASE, instance_profile="test-profile"),
        dataclasses.replace(BASE, security_group_ids=("sg-test",)),
        dataclasses.replace(BASE, extra_tags={"test-key": "test-value"}),
        dataclasses.replace(BASE, associate_public_ip_address=True),
        dataclasses.replace(BASE, node_class="test-name"),
        dataclasses.replace(BASE, ip_prefix_count=1),
    ]
    assert len(set(names(variants))) == len(variants)


def test_template_names_follow_the_bootstrap_configuration() -> None:
    """Context("Cache") It("should generate different launch template names based on bootstrap
    configuration"): cluster name, endpoint, CIDR, taints, labels, CA bundle, custom user
    data (Karpenter's ContainerRuntime option has no counterpart: containerd only), and the
    cluster DNS and instance-store policy of the amifamily options."""

    def user_data(cluster: ClusterInfo = CLUSTER_INFO, labels: dict[str, str] | None = None,
                  **options: Any) -> str:
        bootstrap = NodeBootstrap.build(cluster, labels=labels or {}, **options)
        return render_user_data("AL2023", bootstrap)

    bootstraps = [
        user_data(),
        user_data(dataclasses.replace(CLUSTER_INFO, name="test-name")),
        user_data(dataclasses.replace(CLUSTER_INFO, endpoint="https://test-endpoint")),
        user_data(dataclasses.replace(CLUSTER_INFO, service_cidr="10.0.0.0/16")),
        user_data(dataclasses.replace(CLUSTER_INFO, ca_bundle="dGVzdC1idW5kbGU=")),
        user_data(dataclasses.replace(CLUSTER_INFO, dns_ip="192.0.0.2")),
        user_data(taints=[Taint(key="test-key", value="test-value", effect="NoSchedule")]),
        user_data(labels={"test-key": "test-value"}),
        user_data(custom_user_data="#!/bin/bash\necho test\n"),
        user_data(instance_store_policy="RAID0"),
    ]
    configs = [dataclasses.replace(BASE, user_data=text) for text in bootstraps]
    assert len(set(names(configs))) == len(configs)


def test_template_names_follow_the_launch_template_options() -> None:
    """Context("Cache") It("should generate different launch template names based on
    launchtemplate option configuration"): block devices, image, detailed monitoring, EFA
    interfaces, capacity type, enclaves."""
    variants = [
        BASE,
        dataclasses.replace(BASE, block_device_mappings=({"DeviceName": "test-block"},)),
        dataclasses.replace(BASE, image_id="test-ami"),
        dataclasses.replace(BASE, detailed_monitoring=True),
        dataclasses.replace(BASE, efa_count=12),
        dataclasses.replace(BASE, capacity_type="spot"),
        dataclasses.replace(BASE, enclave_enabled=True),
    ]
    assert len(set(names(variants))) == len(variants)


# --- AL2023: an unresolved cluster CIDR -----------------------------------------------------


def test_al2023_templates_wait_for_the_cluster_cidr(
    clients: AwsClients, world: World, clock: FakeClock, ec2: FakeEC2
) -> None:
    """Context("AL2023") It("should fail to create launch templates if cluster CIDR is
    unresolved"): EKS names no service CIDR, so no NodeConfig can be written; the launch
    fails as NodeClassNotReady and no template is created."""

    def without_cidr(parsed: dict[str, Any], **_: Any) -> None:
        parsed["cluster"]["kubernetesNetworkConfig"] = {"ipFamily": "ipv4"}

    clients.eks.meta.events.register("after-call.eks.DescribeCluster", without_cidr)
    provider = AwsCloudProvider(clients, CLUSTER, clock=clock, prices=OfflinePriceSource())

    with pytest.raises(NodeClassNotReadyError, match="service CIDR is unresolved"):
        provider.create(nodeclaim(), node_class())
    assert ec2.calls("CreateLaunchTemplate") == []
    assert ec2.calls("CreateFleet") == []


# --- Custom user data: Karpenter's NodeClaim -----------------------------------------------

KUBE_DNS = "10.0.100.10"


def karpenter_claim(capacity_type: str = "on-demand") -> Any:
    """The NodeClaim Karpenter's suite launches: its NodePool's labels (node class, NodePool,
    the suite's testing/cluster), the capacity type it requires, no taints."""
    built = claim(capacity_type)
    built.metadata.labels = {"karpenter.k8s.aws/ec2nodeclass": "default",
                             NODEPOOL_LABEL: "default", "testing/cluster": "unspecified"}
    built.spec.taints = []
    return built


def karpenter_labels(capacity_type: str = "on-demand") -> str:
    """The --node-labels list that claim boots with, as Karpenter's golden files have it."""
    return (f"karpenter.k8s.aws/ec2nodeclass=default,karpenter.sh/capacity-type={capacity_type},"
            "karpenter.sh/do-not-sync-taints=true,karpenter.sh/nodepool=default,"
            "testing/cluster=unspecified")


def dns_provider(clients: AwsClients, clock: FakeClock) -> AwsCloudProvider:
    """A provider that found the suite's kube-dns address."""
    return AwsCloudProvider(clients, CLUSTER, clock=clock, prices=OfflinePriceSource(),
                            kube_dns_ip=KUBE_DNS)


def sent(ec2: FakeEC2) -> list[str]:
    """The user data of every launch template created."""
    texts = [ec2.user_data(name) for name in ec2.launch_templates()]
    assert texts, "no launch template was created"
    return texts


# --- Bottlerocket custom user data ----------------------------------------------------------

BOTTLEROCKET = [{"alias": "bottlerocket@latest"}]
# Karpenter's testdata/br_userdata_input.golden, less the two keys its settings model drops
# (an unknown settings.kubernetes key and a settings.kubernetes.labels table), which
# Nodewright keeps (docs/karpenter-differences.md).
BOTTLEROCKET_INPUT = f"""
[settings.kubernetes]
api-server = 'https://not-this-cluster'
cloud-provider = 'external'
cluster-certificate = 'bm90LXRoaXMtb25l'
cluster-name = 'not-this-cluster'
max-pods = 9999999999 # replaced

[settings.kubernetes.eviction-hard]
"memory.available" = "12%"

[settings.kubernetes.node-labels]
"custom-node-label" = "custom"
"{NODEPOOL_LABEL}" = "should-be-overridden"

[settings.kubernetes.node-taints]
"replace" = ["me:NoSchedule"]

[settings.network]
hostname = "test.local"
https-proxy = "1.2.3.4:8080"
no-proxy = ["localhost", "127.0.0.1"]
hosts = [["10.0.0.0", ["test.example.com", "test1.example.com"]]]

[settings.ntp]
time-servers = ["169.254.169.123"]
"""


def bottlerocket_claim() -> Any:
    """Karpenter's NodePool with taint foo=bar:NoExecute and startup taint baz=bin:NoExecute."""
    built = karpenter_claim()
    built.spec.taints = [Taint(key="foo", value="bar", effect="NoExecute")]
    built.spec.startup_taints = [Taint(key="baz", value="bin", effect="NoExecute")]
    return built


def bottlerocket_kubernetes(provider: AwsCloudProvider, cloud_provider: str = "") -> str:
    """[settings.kubernetes] and its node labels and taints, as Karpenter writes them
    (testdata/br_userdata_unmerged.golden) for our cluster."""
    info = provider.cluster().info
    return (f"[settings.kubernetes]\napi-server = '{info.endpoint}'\n{cloud_provider}"
            f"cluster-certificate = '{info.ca_bundle}'\ncluster-name = '{CLUSTER}'\n"
            f"cluster-dns-ip = '{KUBE_DNS}'\nmax-pods = 110\n\n"
            "[settings.kubernetes.node-labels]\n"
            + ("custom-node-label = 'custom'\n" if cloud_provider else "")
            + "'karpenter.k8s.aws/ec2nodeclass' = 'default'\n"
            "'karpenter.sh/capacity-type' = 'on-demand'\n"
            "'karpenter.sh/do-not-sync-taints' = 'true'\n"
            "'karpenter.sh/nodepool' = 'default'\n"
            "'testing/cluster' = 'unspecified'\n\n"
            "[settings.kubernetes.node-taints]\n"
            "baz = ['bin:NoExecute']\nfoo = ['bar:NoExecute']\n"
            "'karpenter.sh/unregistered' = [':NoExecute']\n")


def test_bottlerocket_merges_custom_user_data(clients: AwsClients, world: World,
                                              clock: FakeClock, ec2: FakeEC2) -> None:
    """Context("User Data") Context("Bottlerocket") It("should merge in custom user data"),
    byte for byte as testdata/br_userdata_merged.golden (which Karpenter compares with its
    line breaks removed): ours wins on the cluster, max pods and the NodePool's label; the
    user's other labels, cloud provider, eviction thresholds, network and NTP settings stay,
    each table as go-toml writes it; the taints are the NodePool's alone (the user's own
    node-taints are replaced)."""
    provider = dns_provider(clients, clock)
    provider.create(bottlerocket_claim(), node_class(
        amiSelectorTerms=BOTTLEROCKET, kubelet={"maxPods": 110}, userData=BOTTLEROCKET_INPUT))

    expected = ("[settings]\n"
                + bottlerocket_kubernetes(provider, "cloud-provider = 'external'\n")
                + "\n[settings.kubernetes.eviction-hard]\n'memory.available' = '12%'\n\n"
                "[settings.network]\nhostname = 'test.local'\n"
                "hosts = [['10.0.0.0', ['test.example.com', 'test1.example.com']]]\n"
                "https-proxy = '1.2.3.4:8080'\nno-proxy = ['localhost', '127.0.0.1']\n\n"
                "[settings.ntp]\ntime-servers = ['169.254.169.123']\n")
    assert all(text == expected for text in sent(ec2))


def test_bottlerocket_bootstraps_without_custom_user_data(
    clients: AwsClients, world: World, clock: FakeClock, ec2: FakeEC2
) -> None:
    """Context("User Data") Context("Bottlerocket") It("should bootstrap when custom user data
    is empty"), byte for byte as testdata/br_userdata_unmerged.golden: the cluster, DNS (the
    suite's kube-dns address), max pods, labels and taints, nothing else."""
    provider = dns_provider(clients, clock)
    provider.create(bottlerocket_claim(), node_class(
        amiSelectorTerms=BOTTLEROCKET, kubelet={"maxPods": 110}))

    expected = "[settings]\n" + bottlerocket_kubernetes(provider)
    assert all(text == expected for text in sent(ec2))


# --- AL2023 custom user data ----------------------------------------------------------------

USER_NODE_CONFIG = """apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  kubelet:
    config:
      maxPods: 42
"""
USER_SCRIPT = '#!/bin/bash\necho "Hello, AL2023!"\n'
# As Karpenter's testdata/al2023_mime_userdata_input.golden: each body's last line break is
# its boundary's, and the archive ends with an opening boundary, not a closing one.
AL2023_MIME = ('MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="//"\n\n'
               f'--//\nContent-Type: application/node.eks.aws\n\n{USER_NODE_CONFIG}'
               f'--//\nContent-Type: text/x-shellscript; charset="us-ascii"\n\n{USER_SCRIPT}'
               '--//\n')


def our_node_config(provider: AwsCloudProvider) -> str:
    """Our NodeConfig part as Karpenter writes its own (testdata/al2023_userdata_unmerged
    .golden), for our cluster."""
    info = provider.cluster().info
    return ("--//\nContent-Type: application/node.eks.aws\n\n"
            "# Karpenter Generated NodeConfig\n"
            "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nmetadata: {}\nspec:\n"
            f"  cluster:\n    apiServerEndpoint: {info.endpoint}\n"
            f"    certificateAuthority: {info.ca_bundle}\n"
            f"    cidr: 172.20.0.0/16\n    name: {CLUSTER}\n"  # moto's EKS service CIDR
            "  containerd: {}\n  instance:\n    localStorage: {}\n"
            "  kubelet:\n    config:\n"
            f"      clusterDNS:\n      - {KUBE_DNS}\n      maxPods: 110\n"
            "      registerWithTaints:\n      - effect: NoExecute\n"
            "        key: karpenter.sh/unregistered\n"
            f'    flags:\n    - --node-labels="{karpenter_labels()}"\n'
            "\n--//--\n")


@pytest.mark.parametrize(("user_data", "user_parts"), [
    pytest.param(AL2023_MIME,
                 "--//\nContent-Type: application/node.eks.aws\n\n"
                 f"{USER_NODE_CONFIG.removesuffix(chr(10))}\n"
                 '--//\nContent-Type: text/x-shellscript; charset="us-ascii"\n\n'
                 f"{USER_SCRIPT.removesuffix(chr(10))}\n", id="MIME"),
    pytest.param(USER_NODE_CONFIG,
                 f"--//\nContent-Type: application/node.eks.aws\n\n{USER_NODE_CONFIG}\n",
                 id="YAML"),
    pytest.param(USER_SCRIPT,
                 '--//\nContent-Type: text/x-shellscript; charset="us-ascii"\n\n'
                 f"{USER_SCRIPT}\n", id="shell"),
    pytest.param(None, "", id="empty"),
])
def test_al2023_merges_custom_user_data(clients: AwsClients, world: World, clock: FakeClock,
                                        ec2: FakeEC2, user_data: str | None,
                                        user_parts: str) -> None:
    """Context("AL2023") DescribeTable("should merge custom user data"), its four Entries,
    byte for byte as testdata/al2023_*_merged.golden (Karpenter compares them with their
    line breaks removed): the user's parts first, unchanged (YAML a NodeConfig part, a
    script a shell part), then our NodeConfig as sigs.k8s.io/yaml writes it (which nodeadm
    applies last)."""
    provider = dns_provider(clients, clock)
    spec: dict[str, Any] = {"kubelet": {"maxPods": 110}}
    if user_data is not None:
        spec["userData"] = user_data
    provider.create(karpenter_claim(), node_class(**spec))

    head = 'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="//"\n\n'
    expected = head + user_parts + our_node_config(provider)
    assert all(text == expected for text in sent(ec2))


# --- Windows custom user data ---------------------------------------------------------------

WINDOWS_2022 = (
    "/aws/service/ami-windows-latest/Windows_Server-2022-English-Core-EKS_Optimized-"
    f"{K8S_VERSION}/image_id"
)
WINDOWS_SCRIPT = ('Write-Host "Running custom user data script"\n'
                  'Write-Host "Finished running custom user data script"\n')


@pytest.mark.parametrize("user_data", [
    pytest.param(WINDOWS_SCRIPT, id="should merge and bootstrap with custom user data"),
    pytest.param(None, id="should bootstrap when custom user data is empty"),
])
def test_windows_runs_custom_user_data_before_the_bootstrap(
    clients: AwsClients, clock: FakeClock, ec2: FakeEC2, user_data: str | None
) -> None:
    """Context("Windows Custom UserData"), its two Its (the test ids), byte for byte as
    testdata/windows_userdata_merged.golden (or _unmerged): one PowerShell block, the user's
    lines first, then Start-EKSBootstrap.ps1 with the cluster, labels (the capacity type the
    launch chose among those the NodeClaim allows: spot), the unregistered taint, max pods
    and the DNS address. (Karpenter's golden files end in a line break its
    comparison removes; its Windows.Script writes none after `</powershell>`.)"""
    build_world(clients)
    seed_public_parameter(clients.region, WINDOWS_2022, X86_IMAGE)
    provider = dns_provider(clients, clock)
    spec: dict[str, Any] = {"amiSelectorTerms": [{"alias": "windows2022@latest"}],
                            "kubelet": {"maxPods": 110}}
    if user_data is not None:
        spec["userData"] = user_data
    either = karpenter_claim()  # the Windows NodePool requires no capacity type
    either.spec.requirements[-1].values = ["spot", "on-demand"]
    provider.create(either, node_class(**spec))

    info = provider.cluster().info
    expected = ("<powershell>\n" + (f"{user_data}\n" if user_data else "")
                + '[string]$EKSBootstrapScriptFile = "$env:ProgramFiles\\Amazon\\EKS\\'
                'Start-EKSBootstrap.ps1"\n'
                f"& $EKSBootstrapScriptFile -EKSClusterName '{CLUSTER}' -APIServerEndpoint "
                f"'{info.endpoint}' -Base64ClusterCA '{info.ca_bundle}' -KubeletExtraArgs "
                f"'--node-labels=\"{karpenter_labels('spot')}\" "
                '--register-with-taints="karpenter.sh/unregistered:NoExecute" --max-pods=110\' '
                f"-DNSClusterIP '{KUBE_DNS}'\n</powershell>")
    assert all(text == expected for text in sent(ec2))
