"""AMI aliases resolve the accelerated images too, and each image boots only the instance
types it is made for: a GPU type gets the image with the NVIDIA drivers, a CPU type the
standard one, in the launch templates and in the EC2NodeClass status, as Karpenter does."""

from __future__ import annotations

import pytest

from nodewright.cloud.aws.amis import Image, alias_parameter_list, image_for
from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.cloud.provider import InsufficientCapacityError

from .world import (
    K8S_VERSION,
    X86_IMAGE,
    World,
    node_class,
    nodeclaim,
    seed_public_parameter,
)

AL2023_NVIDIA = (
    f"/aws/service/eks/optimized-ami/{K8S_VERSION}/amazon-linux-2023/x86_64/nvidia/"
    "recommended/image_id"
)


@pytest.fixture
def nvidia_image(clients: AwsClients, world: World) -> str:
    """Another x86_64 image moto ships, published as the AL2023 NVIDIA image."""
    x86 = clients.ec2.describe_images(
        Owners=["amazon"], Filters=[{"Name": "architecture", "Values": ["x86_64"]}]
    )["Images"]
    image = sorted(i["ImageId"] for i in x86 if i["ImageId"] != X86_IMAGE)[0]
    seed_public_parameter(clients.region, AL2023_NVIDIA, image)
    return image


def test_each_alias_names_its_accelerated_images_as_karpenter_does() -> None:
    def paths(alias: str) -> dict[str, tuple[str, tuple[str, ...]]]:
        return {p.name: (p.architecture, p.variants) for p in alias_parameter_list(alias, "1.30")}

    al2023 = paths("al2023@v20240807")
    base = "/aws/service/eks/optimized-ami/1.30/amazon-linux-2023"
    assert al2023[
        f"{base}/x86_64/nvidia/amazon-eks-node-al2023-x86_64-nvidia-1.30-v20240807/image_id"
    ] == ("amd64", ("nvidia",))
    assert al2023[
        f"{base}/x86_64/neuron/amazon-eks-node-al2023-x86_64-neuron-1.30-v20240807/image_id"
    ] == ("amd64", ("neuron",))
    assert al2023[f"{base}/arm64/nvidia/amazon-eks-node-al2023-arm64-nvidia-1.30-v20240807/"
                  "image_id"] == ("arm64", ("nvidia",))
    assert paths("al2@latest")[
        "/aws/service/eks/optimized-ami/1.30/amazon-linux-2-gpu/recommended/image_id"
    ] == ("amd64", ("neuron", "nvidia"))
    bottlerocket = paths("bottlerocket@v1.20.4")
    assert bottlerocket["/aws/service/bottlerocket/aws-k8s-1.30-nvidia/x86_64/1.20.4/image_id"] == (
        "amd64", ("nvidia",))
    assert bottlerocket["/aws/service/bottlerocket/aws-k8s-1.30/x86_64/1.20.4/image_id"] == (
        "amd64", ("standard", "neuron"))


def test_an_instance_type_boots_the_image_made_for_it() -> None:
    standard = Image("ami-std", "std", "amd64", "2024", False, ("standard",))
    nvidia = Image("ami-gpu", "gpu", "amd64", "2024", False, ("nvidia",))
    neuron = Image("ami-inf", "inf", "amd64", "2024", False, ("neuron",))
    chosen = [standard, nvidia, neuron]
    cpu = {"kubernetes.io/arch": "amd64"}
    gpu = {**cpu, "karpenter.k8s.aws/instance-gpu-count": "1"}
    inferentia = {**cpu, "karpenter.k8s.aws/instance-accelerator-count": "1"}

    assert image_for(cpu, chosen) is standard
    assert image_for(gpu, chosen) is nvidia
    assert image_for(inferentia, chosen) is neuron
    assert image_for(gpu, [standard]) is None
    own = Image("ami-own", "own", "amd64", "2024", False)  # selected by id: any type
    assert image_for(gpu, [own]) is own


def test_the_status_ties_each_image_to_its_instance_types(
    provider: AwsCloudProvider, nvidia_image: str
) -> None:
    status = provider.resolve(node_class()).to_status()

    by_id = {
        ami.id: [(r.key, r.operator, r.values) for r in ami.requirements]
        for ami in status.amis or []
    }
    assert by_id[X86_IMAGE] == [
        ("kubernetes.io/arch", "In", ["amd64"]),  # Karpenter's order: key length, then key
        ("karpenter.k8s.aws/instance-gpu-count", "DoesNotExist", None),
        ("karpenter.k8s.aws/instance-accelerator-count", "DoesNotExist", None),
    ]
    assert by_id[nvidia_image] == [
        ("kubernetes.io/arch", "In", ["amd64"]),
        ("karpenter.k8s.aws/instance-gpu-count", "Exists", None),
    ]


def test_a_gpu_type_launches_the_nvidia_image_and_a_cpu_type_the_standard_one(
    provider: AwsCloudProvider, clients: AwsClients, nvidia_image: str
) -> None:
    def launch(name: str, instance_type: str) -> str:
        claim = nodeclaim(name, uid=f"uid-{name}", requirements=[
            {"key": "node.kubernetes.io/instance-type", "operator": "In",
             "values": [instance_type]},
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
        ])
        return provider.create(claim, node_class()).image_id

    assert launch("gpu-1", "g5.xlarge") == nvidia_image
    assert launch("cpu-1", "m5.large") == X86_IMAGE
    templates = clients.ec2.describe_launch_templates()["LaunchTemplates"]
    images = {
        clients.ec2.describe_launch_template_versions(
            LaunchTemplateName=t["LaunchTemplateName"]
        )["LaunchTemplateVersions"][0]["LaunchTemplateData"]["ImageId"]
        for t in templates
    }
    assert images == {nvidia_image, X86_IMAGE}


def test_a_gpu_type_without_a_gpu_image_is_not_launched(provider: AwsCloudProvider) -> None:
    claim = nodeclaim(requirements=[
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["g5.xlarge"]},
    ])

    with pytest.raises(InsufficientCapacityError) as refused:
        provider.create(claim, node_class())
    assert refused.value.code == "NoCompatibleOffering"
