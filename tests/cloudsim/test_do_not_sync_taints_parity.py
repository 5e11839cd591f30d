"""A simulated node registers as a real one launched from the AWS provider's user data:
every AMI family but Custom labels its kubelet `karpenter.sh/do-not-sync-taints=true`
(aws/karpenter-provider-aws v1.14.1 pkg/providers/launchtemplate/launchtemplate.go:214
and 560-570, InjectDoNotSyncTaintsLabel). Karpenter's registration then leaves the node's
taints to the node (kubernetes-sigs/karpenter v1.14.1
pkg/controllers/nodeclaim/lifecycle/registration.go:208-218, syncNode): a startup taint an
agent removed before registration stays removed. Before, the simulated kubelet registered
without the label, so registration put the removed startup taint back on a `--cloud sim`
node where a real node would have kept it off."""

from __future__ import annotations

from nodewright.cloud.sim import SimSettings, SimulatedEC2
from nodewright.cluster.memory import InMemoryCluster
from nodewright.controllers.nodeclaim.registration import sync_node
from nodewright.runtime import VirtualClock

from .conftest import node_class, nodeclaim

DO_NOT_SYNC = "karpenter.sh/do-not-sync-taints"
CNI_NOT_READY = {"key": "node.cilium.io/agent-not-ready", "value": "true", "effect": "NoExecute"}
UNREGISTERED = {"key": "karpenter.sh/unregistered", "effect": "NoExecute"}


def test_a_simulated_al2023_node_joins_labelled_do_not_sync_taints(
    joined_ec2: SimulatedEC2, cluster: InMemoryCluster, clock: VirtualClock
) -> None:
    joined_ec2.create(nodeclaim(types=("m5.large",)), node_class(alias="al2023@latest"))
    clock.advance(60)

    [node] = cluster.list("Node")
    assert node["metadata"]["labels"][DO_NOT_SYNC] == "true"


def test_a_simulated_bottlerocket_node_joins_labelled_do_not_sync_taints(
    joined_ec2: SimulatedEC2, cluster: InMemoryCluster, clock: VirtualClock
) -> None:
    joined_ec2.create(nodeclaim(types=("m5.large",)), node_class(alias="bottlerocket@latest"))
    clock.advance(60)

    [node] = cluster.list("Node")
    assert node["metadata"]["labels"][DO_NOT_SYNC] == "true"


def test_a_simulated_custom_node_joins_without_the_label(
    joined_ec2: SimulatedEC2, cluster: InMemoryCluster, clock: VirtualClock
) -> None:
    """A Custom image's user data is the user's: Karpenter adds no label to it."""
    custom = node_class(amiFamily="Custom", amiSelectorTerms=[{"id": "ami-0123456789abcdef0"}])
    joined_ec2.create(nodeclaim(types=("m5.large",)), custom)
    clock.advance(60)

    [node] = cluster.list("Node")
    assert DO_NOT_SYNC not in node["metadata"]["labels"]


def test_a_startup_taint_removed_before_registration_stays_removed(
    clock: VirtualClock, cluster: InMemoryCluster
) -> None:
    """The startup-taint race: the CNI agent is up the moment the kubelet registers and
    removes its taint before Karpenter's registration syncs the Node. With the label,
    registration syncs labels, annotations, owner and finalizer but not the taints, so the
    node stays free of the agent's taint (only the unregistered taint is Karpenter's)."""
    ec2 = SimulatedEC2(clock, cluster=cluster, settings=SimSettings(startup_taint_delay=0.0))
    claim = nodeclaim("default-x7k2p", types=("m5.large",), startup_taints=[CNI_NOT_READY])
    ec2.create(claim, node_class())
    clock.advance(60)
    [node] = cluster.list("Node")
    assert node["spec"]["taints"] == [UNREGISTERED]  # the agent was first

    manifest = claim.to_manifest()
    manifest["metadata"]["uid"] = "uid-x7k2p"
    sync_node(manifest, node)

    assert CNI_NOT_READY not in node["spec"]["taints"]
