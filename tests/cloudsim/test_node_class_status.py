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


def test_a_windows_alias_resolves_the_amd64_image_for_windows_nodes_of_its_build() -> None:
    sim = SimulatedEC2(VirtualClock(), cluster_name="demo")
    nodes = node_class(role="KarpenterNodeRole-demo",
                       amiSelectorTerms=[{"alias": "windows2019@latest"}])

    resolution = sim.resolve(nodes)

    assert resolution.ready
    (ami,) = resolution.to_status().amis or []
    # In Karpenter's order: by key length, then key.
    assert [(r.key, r.values) for r in ami.requirements] == [
        ("kubernetes.io/os", ["windows"]), ("kubernetes.io/arch", ["amd64"]),
        ("node.kubernetes.io/windows-build", ["10.0.17763"])]
    m5 = next(t for t in sim.get_instance_types(nodes) if t.name == "m5.large")
    assert m5.labels["node.kubernetes.io/windows-build"] == "10.0.17763"
    assert all(t.labels["kubernetes.io/arch"] == "amd64" for t in sim.get_instance_types(nodes))
