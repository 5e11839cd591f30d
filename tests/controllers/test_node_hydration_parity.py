"""Node hydration of a Node whose node class label names another node class.

Karpenter v1.14.1 pkg/controllers/node/hydration/controller.go lines 74-81, Reconcile: the
label is written with `lo.Assign(n.Labels, {NodeClassLabelKey: nc.Spec.NodeClassRef.Name})` and
patched whenever that changes the Node, so a `karpenter.k8s.aws/ec2nodeclass` label that
was edited to name another node class is set back to the NodeClaim's. Selectors by node
class (drift, the node class finalizer's wait, dashboards) read the Node right again.
"""

from __future__ import annotations

from nodewright.cluster import objects
from nodewright.cluster.memory import InMemoryCluster
from nodewright.controllers.node.hydration import NodeHydration
from nodewright.runtime.clock import VirtualClock
from nodewright.runtime.reconciler import WatchEvent
from nodewright.state import ClusterState

LABEL = "karpenter.k8s.aws/ec2nodeclass"
PROVIDER_ID = "aws:///us-east-1a/i-0123456789abcdef0"


def _cluster_with(node_class_label: str) -> tuple[InMemoryCluster, ClusterState]:
    clock = VirtualClock()
    cluster = InMemoryCluster(clock)
    state = ClusterState(clock)
    claim = cluster.create({
        "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": {"name": "claim"},
        "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                  "name": "default"},
                 "requirements": []}})
    claim = cluster.patch("NodeClaim", "claim", {"status": {"providerID": PROVIDER_ID}},
                          subresource="status")
    node = cluster.create({"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": "node", "labels": {"karpenter.sh/nodepool": "default",
                                   "node.kubernetes.io/instance-type": "m5.large",
                                   LABEL: node_class_label}},
        "spec": {"providerID": PROVIDER_ID}})
    for obj in (claim, node):
        state.observe(WatchEvent("ADDED", obj))
    return cluster, state


def test_a_node_labelled_with_another_node_class_gets_its_nodeclaims() -> None:
    cluster, state = _cluster_with("someone-elses")
    NodeHydration(cluster, state).reconcile("node")
    assert objects.labels(cluster.get("Node", "node"))[LABEL] == "default"


def test_a_node_already_labelled_right_is_not_written() -> None:
    """(guard) Nothing to change, nothing patched."""
    cluster, state = _cluster_with("default")
    before = objects.meta(cluster.get("Node", "node")).get("resourceVersion")
    NodeHydration(cluster, state).reconcile("node")
    assert objects.meta(cluster.get("Node", "node")).get("resourceVersion") == before
