"""Windows nodes, as Karpenter v1.14 launches them: `windows20xx@latest` resolves through the
Windows SSM parameter for the cluster's Kubernetes version, the image runs only on Windows
(amd64) instance types of its build, and the node boots with the PowerShell bootstrap."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from nodewright.cloud.aws.amis import AliasError, Image, alias_parameter_list, image_for
from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.cloud.provider import InsufficientCapacityError
from nodewright.scheduling.pricing import OfflinePriceSource
from tests.aws.world import FakeClock

from .conftest import CallRecorder
from .world import (
    CLUSTER,
    K8S_VERSION,
    X86_IMAGE,
    World,
    build_world,
    node_class,
    nodeclaim,
    seed_public_parameter,
)

WINDOWS_2022 = (
    "/aws/service/ami-windows-latest/Windows_Server-2022-English-Core-EKS_Optimized-"
    f"{K8S_VERSION}/image_id"
)


@pytest.fixture
def world(clients: AwsClients) -> World:
    built = build_world(clients)
    seed_public_parameter(clients.region, WINDOWS_2022, X86_IMAGE)
    return built


@pytest.fixture
def provider(clients: AwsClients, world: World, clock: FakeClock) -> AwsCloudProvider:
    return AwsCloudProvider(clients, CLUSTER, clock=clock, prices=OfflinePriceSource())


def windows(**spec: Any) -> Any:
    return node_class(amiSelectorTerms=[{"alias": "windows2022@latest"}], **spec)


@pytest.mark.parametrize(("alias", "k8s", "parameter", "build"), [
    ("windows2019@latest", "1.30",
     "/aws/service/ami-windows-latest/Windows_Server-2019-English-Core-EKS_Optimized-1.30/"
     "image_id", "10.0.17763"),
    ("windows2022@latest", "1.31",
     "/aws/service/ami-windows-latest/Windows_Server-2022-English-Core-EKS_Optimized-1.31/"
     "image_id", "10.0.20348"),
    ("windows2025@latest", "1.35",
     "/aws/service/ami-windows-latest/Windows_Server-2025-English-Core-EKS_Optimized-1.35/"
     "image_id", "10.0.26100"),
])
def test_each_windows_alias_reads_karpenters_parameter(
    alias: str, k8s: str, parameter: str, build: str
) -> None:
    (only,) = alias_parameter_list(alias, k8s)
    assert (only.name, only.architecture, only.windows_build) == (parameter, "amd64", build)


@pytest.mark.parametrize(("alias", "k8s", "problem"), [
    ("windows2025@latest", "1.34", "Windows Server 2025 requires EKS version 1.35 or higher"),
    ("windows2022@v20240807", "1.30", "windows families may only specify version 'latest'"),
])
def test_windows_aliases_karpenter_refuses(alias: str, k8s: str, problem: str) -> None:
    with pytest.raises(AliasError, match=problem):
        alias_parameter_list(alias, k8s)


def test_a_windows_image_runs_only_on_windows_types_of_its_build() -> None:
    image = Image("ami-win", "win", "amd64", "2024", False, windows_build="10.0.20348")
    windows_2022 = {"kubernetes.io/arch": "amd64", "kubernetes.io/os": "windows",
                    "node.kubernetes.io/windows-build": "10.0.20348"}

    assert image_for(windows_2022, [image]) is image
    assert image_for({**windows_2022, "node.kubernetes.io/windows-build": "10.0.17763"},
                     [image]) is None
    assert image_for({"kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux"},
                     [image]) is None


def test_the_status_ties_the_windows_image_to_windows_nodes_of_its_build(
    provider: AwsCloudProvider,
) -> None:
    resolution = provider.resolve(windows())
    assert resolution.ready, resolution.problems

    (ami,) = resolution.to_status().amis or []
    assert ami.id == X86_IMAGE
    assert [(r.key, r.operator, r.values) for r in ami.requirements] == [
        ("kubernetes.io/os", "In", ["windows"]),  # Karpenter's order: key length, then key
        ("kubernetes.io/arch", "In", ["amd64"]),
        ("node.kubernetes.io/windows-build", "In", ["10.0.20348"]),
    ]


def test_windows_2025_on_an_older_cluster_leaves_the_node_class_not_ready(
    provider: AwsCloudProvider,
) -> None:
    resolution = provider.resolve(node_class(amiSelectorTerms=[{"alias": "windows2025@latest"}]))

    assert not resolution.ready
    assert "requires EKS version 1.35 or higher, current version: 1.30" in (
        resolution.problems["AMIsReady"])


def test_an_unpublished_windows_parameter_matches_nothing(provider: AwsCloudProvider) -> None:
    resolution = provider.resolve(node_class(amiSelectorTerms=[{"alias": "windows2019@latest"}]))

    assert not resolution.images and "windows2019@latest" in resolution.problems["AMIsReady"]


def test_the_windows_catalog_offers_amd64_windows_types_only(
    provider: AwsCloudProvider,
) -> None:
    types = provider.get_instance_types(windows())

    assert types and {t.labels["kubernetes.io/arch"] for t in types} == {"amd64"}
    m5 = next(t for t in types if t.name == "m5.large")
    assert m5.labels["kubernetes.io/os"] == "windows"
    assert m5.labels["node.kubernetes.io/windows-build"] == "10.0.20348"
    assert m5.capacity["pods"] == 110_000  # no ENI-limited density on Windows
    # The VPC resource controller's secondary IPv4 addresses for Windows pods: 10 - 1.
    assert m5.capacity["vpc.amazonaws.com/PrivateIPv4Address"] == 9_000
    linux = provider.get_instance_types(node_class())
    assert "vpc.amazonaws.com/PrivateIPv4Address" not in next(
        t for t in linux if t.name == "m5.large").capacity


def launched_template(recorder: CallRecorder) -> dict[str, Any]:
    (template,) = recorder.calls_of("ec2:CreateLaunchTemplate")
    data: dict[str, Any] = template["LaunchTemplateData"]
    return data


def test_a_windows_node_launches_with_the_powershell_bootstrap(
    provider: AwsCloudProvider, recorder: CallRecorder,
) -> None:
    node = windows(userData="Write-Host 'before bootstrap'",
                   kubelet={"clusterDNS": ["172.20.0.10"], "systemReserved": {"cpu": "100m"}})

    instance = provider.create(nodeclaim(), node)

    assert instance.image_id == X86_IMAGE
    data = launched_template(recorder)
    text = base64.b64decode(data["UserData"]).decode()
    lines = text.split("\n")
    assert lines[0] == "<powershell>" and lines[-1] == "</powershell>"
    assert lines[1] == "Write-Host 'before bootstrap'"  # the user's PowerShell runs first
    assert lines[2].endswith('"$env:ProgramFiles\\Amazon\\EKS\\Start-EKSBootstrap.ps1"')
    command = lines[3]
    assert command.startswith(f"& $EKSBootstrapScriptFile -EKSClusterName '{CLUSTER}' "
                              "-APIServerEndpoint '")
    assert "-Base64ClusterCA '" in command
    assert command.endswith(" -DNSClusterIP '172.20.0.10'")
    extra = command.split("-KubeletExtraArgs '")[1].split("'")[0]
    assert extra.split(" ") == [
        '--node-labels="karpenter.sh/capacity-type=on-demand,karpenter.sh/do-not-sync-taints=true,'
        'karpenter.sh/nodepool=default,'
        'team=payments"',
        '--register-with-taints="dedicated=payments:NoSchedule,'
        'karpenter.sh/unregistered:NoExecute"',
        "--max-pods=110",
        '--system-reserved="cpu=100m"',
    ]
    assert data["BlockDeviceMappings"] == [{"DeviceName": "/dev/sda1", "Ebs": {
        "VolumeSize": 50, "VolumeType": "gp3", "Encrypted": True, "DeleteOnTermination": True}}]


def test_a_linux_only_nodeclaim_finds_no_windows_type(provider: AwsCloudProvider) -> None:
    claim = nodeclaim(requirements=[
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m6g.large"]},
    ])

    with pytest.raises(InsufficientCapacityError, match="no available offering"):
        provider.create(claim, windows())


def test_a_windows_node_takes_the_first_of_several_cluster_dns_addresses(
    provider: AwsCloudProvider, recorder: CallRecorder,
) -> None:
    """As Karpenter v1.14.1: Start-EKSBootstrap.ps1 takes one -DNSClusterIP, the first."""
    node = windows(kubelet={"clusterDNS": ["172.20.0.10", "172.20.0.11"]})

    provider.create(nodeclaim(), node)

    text = base64.b64decode(launched_template(recorder)["UserData"]).decode()
    assert " -DNSClusterIP '172.20.0.10'" in text and "172.20.0.11" not in text
