"""The simulated EC2 resolves an EC2NodeClass as AWS would, so `--cloud sim` writes its
status: a subnet per zone, a security group, the AMI launches boot, the instance profile."""

from __future__ import annotations

from nodewright.api.ec2nodeclass import EC2NodeClass
from nodewright.cloud.sim.provider import SimulatedEC2
from nodewright.runtime.clock import VirtualClock


def node_class(**spec: object) -> EC2NodeClass:
    return EC2NodeClass.model_validate({
        "apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass",
        "metadata": {"name": "default"},
        "spec": {"amiSelectorTerms": [{"alias": "al2023@latest"}],
                 "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
                 "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
                 **spec}})


def test_a_node_class_resolves_ready_with_one_subnet_per_zone() -> None:
    sim = SimulatedEC2(VirtualClock(), cluster_name="demo", region="us-east-1")
    resolution = sim.resolve(node_class(role="KarpenterNodeRole-demo"))
    assert resolution.ready
    assert sorted(s.zone for s in resolution.subnets) == sorted(sim.zones)
    status = resolution.to_status().to_manifest()
    assert {c["type"]: c["status"] for c in status["conditions"]}["Ready"] == "True"
    assert status["instanceProfile"].startswith("demo_")


def test_the_status_names_the_ami_launches_boot_and_follows_a_new_release() -> None:
    sim = SimulatedEC2(VirtualClock(), cluster_name="demo")
    nodes = node_class(instanceProfile="profile-a")
    sim.set_image("al2023@latest", "amd64", "ami-0000000000000000a")
    amis = {image.architecture: image.id for image in sim.resolve(nodes).images}
    assert amis["amd64"] == "ami-0000000000000000a" == sim.images.image_for(nodes, "amd64")
    assert sim.resolve(nodes).instance_profile == "profile-a"
