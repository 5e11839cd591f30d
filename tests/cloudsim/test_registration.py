"""The kubelet joins: a Node appears in the cluster as a real one joins a Karpenter cluster,
and goes away when its instance does."""

from __future__ import annotations

from nodewright.cloud.sim import SimSettings, SimulatedEC2
from nodewright.cluster.memory import InMemoryCluster
from nodewright.runtime import VirtualClock

from .conftest import node_class, nodeclaim, requirement

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
CNI_NOT_READY = {"key": "node.cilium.io/agent-not-ready", "value": "true", "effect": "NoExecute"}


def launch_team_claim(ec2: SimulatedEC2) -> str:
    claim = nodeclaim(
        "team-a-4f7kq",
        types=("m5.large",),
        zones=("us-east-1b",),
        nodepool="team-a",
        labels={"team": "a"},
        extra=[requirement("workload", "batch")],
        taints=[GPU_TAINT],
        startup_taints=[CNI_NOT_READY],
    )
    return ec2.create(claim, node_class()).provider_id


def test_a_node_registers_thirty_seconds_after_the_instance_runs(
    joined_ec2: SimulatedEC2, cluster: InMemoryCluster, clock: VirtualClock
) -> None:
    provider_id = launch_team_claim(joined_ec2)

    clock.advance(20 + 29)
    before = cluster.list("Node")
    clock.advance(1)

    assert before == []
    [node] = cluster.list("Node")
    assert node["spec"]["providerID"] == provider_id
    assert node["metadata"]["name"].startswith("ip-10-0-")
    assert node["metadata"]["name"].endswith(".ec2.internal")


def test_the_node_carries_the_instance_type_and_nodeclaim_labels(
    joined_ec2: SimulatedEC2, cluster: InMemoryCluster, clock: VirtualClock
) -> None:
    launch_team_claim(joined_ec2)
    clock.advance(50)

    [node] = cluster.list("Node")
    labels = node["metadata"]["labels"]
    assert {
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": "m5.large",
        "topology.kubernetes.io/zone": "us-east-1b",
        "topology.kubernetes.io/region": "us-east-1",
        "topology.k8s.aws/zone-id": "use1-az1",
        "karpenter.sh/capacity-type": "on-demand",
        "karpenter.sh/nodepool": "team-a",
        "karpenter.k8s.aws/instance-family": "m5",
        "karpenter.k8s.aws/instance-cpu": "2",
        "kubernetes.io/hostname": node["metadata"]["name"],
        "team": "a",
        "workload": "batch",
    }.items() <= labels.items()


def test_the_node_joins_with_its_taints_and_the_unregistered_taint(
    joined_ec2: SimulatedEC2, cluster: InMemoryCluster, clock: VirtualClock
) -> None:
    launch_team_claim(joined_ec2)
    clock.advance(50)

    [node] = cluster.list("Node")
    assert node["spec"]["taints"] == [
        GPU_TAINT,
        CNI_NOT_READY,
        {"key": "karpenter.sh/unregistered", "effect": "NoExecute"},
    ]


def test_the_node_reports_allocatable_and_is_ready(
    joined_ec2: SimulatedEC2, cluster: InMemoryCluster, clock: VirtualClock
) -> None:
    launch_team_claim(joined_ec2)
    clock.advance(50)

    [node] = cluster.list("Node")
    status = node["status"]
    assert status["allocatable"] == {
        "cpu": "1930m",
        "ephemeral-storage": "17Gi",
        "memory": "6903Mi",
        "pods": "29",
        "vpc.amazonaws.com/pod-eni": "9",
    }
    assert status["capacity"]["cpu"] == "2" and status["capacity"]["pods"] == "29"
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "True"
    assert status["nodeInfo"]["architecture"] == "amd64"
    assert status["nodeInfo"]["kubeletVersion"].startswith("v1.32")


def test_startup_taints_are_removed_by_their_agents_after_a_while(
    joined_ec2: SimulatedEC2, cluster: InMemoryCluster, clock: VirtualClock
) -> None:
    launch_team_claim(joined_ec2)
    clock.advance(50 + 4)
    registered = cluster.list("Node")[0]["spec"]["taints"]
    clock.advance(1)

    assert CNI_NOT_READY in registered
    assert cluster.list("Node")[0]["spec"]["taints"] == [
        GPU_TAINT,
        {"key": "karpenter.sh/unregistered", "effect": "NoExecute"},
    ]


def test_startup_taints_stay_when_no_agent_removes_them(
    clock: VirtualClock, cluster: InMemoryCluster
) -> None:
    ec2 = SimulatedEC2(clock, cluster=cluster, settings=SimSettings(startup_taint_delay=None))
    launch_team_claim(ec2)
    clock.advance(3600)

    assert CNI_NOT_READY in cluster.list("Node")[0]["spec"]["taints"]


def test_the_node_of_a_terminated_instance_is_deleted(
    joined_ec2: SimulatedEC2, cluster: InMemoryCluster, clock: VirtualClock
) -> None:
    provider_id = launch_team_claim(joined_ec2)
    clock.advance(60)

    joined_ec2.delete(provider_id)
    clock.advance(29)
    during = len(cluster.list("Node"))
    clock.advance(1)

    assert during == 1
    assert cluster.list("Node") == []


def test_a_node_karpenter_already_deleted_is_left_alone(
    joined_ec2: SimulatedEC2, cluster: InMemoryCluster, clock: VirtualClock
) -> None:
    provider_id = launch_team_claim(joined_ec2)
    clock.advance(60)
    node_name = cluster.list("Node")[0]["metadata"]["name"]

    cluster.delete("Node", node_name)
    joined_ec2.delete(provider_id)
    clock.advance(60)

    assert cluster.list("Node") == []


def test_an_instance_gone_before_registration_never_joins(
    joined_ec2: SimulatedEC2, cluster: InMemoryCluster, clock: VirtualClock
) -> None:
    provider_id = launch_team_claim(joined_ec2)
    clock.advance(30)
    joined_ec2.delete(provider_id)
    clock.advance(3600)

    assert cluster.list("Node") == []
    assert joined_ec2.counters.registered == 0


def test_node_names_are_unique_and_follow_the_region(clock: VirtualClock) -> None:
    cluster = InMemoryCluster(clock)
    ec2 = SimulatedEC2(clock, cluster=cluster, region="eu-west-1", seed=3)
    for index in range(20):
        ec2.create(nodeclaim(f"n{index}", types=("m5.large",)), node_class())
    clock.advance(50)

    names = [n["metadata"]["name"] for n in cluster.list("Node")]
    assert len(set(names)) == 20
    assert all(name.endswith(".eu-west-1.compute.internal") for name in names)
