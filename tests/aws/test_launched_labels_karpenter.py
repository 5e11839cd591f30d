"""What a launch writes on the NodeClaim, as Karpenter v1.14.1's AWS provider does
(pkg/cloudprovider/cloudprovider.go instanceToNodeClaim, lines 423-437): every label the
launched instance type has a single value of (karpenter.k8s.aws/instance-family, -cpu,
-memory, ..., kubernetes.io/arch and os, the region), beneath the launch's own zone, zone ID,
capacity type and tenancy. The lifecycle copies them onto the NodeClaim and registration
onto the Node, where a pod's nodeSelector on them is checked by kube-scheduler.
"""

from __future__ import annotations

from nodewright.cloud.aws.provider import AwsCloudProvider
from tests.aws.world import World, node_class, nodeclaim

INSTANCE_TYPE = "node.kubernetes.io/instance-type"
TYPE_LABELS = {
    "kubernetes.io/arch": "amd64",
    "kubernetes.io/os": "linux",
    "topology.kubernetes.io/region": "us-west-2",
    "karpenter.k8s.aws/instance-family": "m5",
    "karpenter.k8s.aws/instance-size": "large",
    "karpenter.k8s.aws/instance-category": "m",
    "karpenter.k8s.aws/instance-generation": "5",
    "karpenter.k8s.aws/instance-cpu": "2",
    "karpenter.k8s.aws/instance-memory": "8192",
    "karpenter.k8s.aws/instance-hypervisor": "nitro",
    "karpenter.k8s.aws/instance-capability-flex": "false",
}


def m5_large_claim() -> object:
    return nodeclaim(requirements=[
        {"key": INSTANCE_TYPE, "operator": "In", "values": ["m5.large"]},
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}])


def test_a_launched_instance_carries_its_instance_type_labels(
    provider: AwsCloudProvider, world: World
) -> None:
    """Karpenter's instanceToNodeClaim: labels from the instance type's single-valued
    requirements, then the launch's zone and capacity type over them."""
    instance = provider.create(m5_large_claim(), node_class())  # type: ignore[arg-type]

    assert {k: instance.labels.get(k) for k in TYPE_LABELS} == TYPE_LABELS
    assert instance.labels[INSTANCE_TYPE] == "m5.large"
    assert instance.labels["topology.kubernetes.io/zone"] == instance.zone
    assert instance.labels["karpenter.sh/capacity-type"] == "on-demand"
    assert instance.labels["karpenter.k8s.aws/instance-tenancy"] == "default"
    # A type label is never a zone-, capacity- or reservation-dependent one.
    assert "karpenter.k8s.aws/capacity-reservation-id" not in instance.labels


def test_an_instance_found_again_for_its_nodeclaim_carries_them_too(
    provider: AwsCloudProvider, world: World
) -> None:
    """A controller that launched and died before writing the NodeClaim's status finds the
    instance by its tags on the next create: the NodeClaim gets the same labels."""
    first = provider.create(m5_large_claim(), node_class())  # type: ignore[arg-type]
    again = provider.create(m5_large_claim(), node_class())  # type: ignore[arg-type]

    assert again.instance_id == first.instance_id
    assert {k: again.labels.get(k) for k in TYPE_LABELS} == TYPE_LABELS
