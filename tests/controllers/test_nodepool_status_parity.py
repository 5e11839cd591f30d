"""A NodePool's status as Karpenter v1.14.1 writes it, beyond the ported suites: what
`kubectl get nodepool -o yaml` shows of real EKS nodes, and the AWS provider's well-known
tenancy values in the validation.

The counter (kubernetes-sigs/karpenter pkg/controllers/nodepool/counter/controller.go
lines 63-65) writes the cluster state's sum of the pool's node capacities
(pkg/controllers/state/cluster.go updateNodePoolResources, lines 794-842: every resource a
node reports is added, zeros included, and the pool's list is dropped only once every
amount is zero) as Kubernetes Quantities, whose canonical form puts an SI suffix on a
whole number of thousands (apimachinery resource.Quantity.String).
"""

from __future__ import annotations

from typing import Any

from nodewright.cluster import objects
from nodewright.cluster.memory import InMemoryCluster
from nodewright.controllers.nodepool.status import NodePoolStatus
from nodewright.runtime.clock import VirtualClock
from nodewright.runtime.reconciler import WatchEvent
from nodewright.state import ClusterState
from tests.harness import NODE_CLASS, documents, node_pool


class Rig:
    """NodePoolStatus alone over an API server and a cluster state fed by hand."""

    def __init__(self, pool: dict[str, Any]) -> None:
        self.clock = VirtualClock()
        self.cluster = InMemoryCluster(self.clock)
        self.state = ClusterState(self.clock)
        for body in (*documents(NODE_CLASS), pool):
            self.add(body)

    def add(self, body: dict[str, Any]) -> None:
        self.state.observe(WatchEvent("ADDED", self.cluster.create(body)))

    def remove(self, kind: str, name: str) -> None:
        gone = self.cluster.get(kind, name)
        self.cluster.delete(kind, name)
        self.state.observe(WatchEvent("DELETED", gone))

    def written(self) -> dict[str, Any]:
        NodePoolStatus(self.cluster, self.clock, self.state).reconcile("default")
        pool = self.cluster.get("NodePool", "default")
        self.state.observe(WatchEvent("MODIFIED", pool))
        return pool


def eks_node(
    name: str, *, cpu: str = "2", pods: str = "29", extra: dict[str, str] | None = None
) -> dict[str, Any]:
    """A registered, initialized node of the pool, with the capacity a kubelet on EKS
    reports (hugepages included, at zero)."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "karpenter.sh/nodepool": "default",
                "karpenter.sh/registered": "true",
                "karpenter.sh/initialized": "true",
            },
        },
        "spec": {"providerID": f"aws:///us-west-2a/i-0{abs(hash(name)) % 10**16:016d}"},
        "status": {
            "capacity": {
                "cpu": cpu,
                "ephemeral-storage": "20959212Ki",
                "hugepages-1Gi": "0",
                "hugepages-2Mi": "0",
                "memory": "7910348Ki",
                "pods": pods,
                **(extra or {}),
            }
        },
    }


def test_the_zero_hugepages_of_eks_nodes_are_counted_as_karpenter_counts_them() -> None:
    rig = Rig(node_pool("default"))
    rig.add(eks_node("node-a"))
    rig.add(eks_node("node-b"))

    assert rig.written()["status"]["resources"] == {
        "cpu": "4",
        "ephemeral-storage": "41918424Ki",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "memory": "15820696Ki",
        "nodes": "2",
        "pods": "58",
    }


def test_a_device_gone_from_the_pool_stays_at_zero_until_the_pool_is_empty() -> None:
    rig = Rig(node_pool("default"))
    rig.add(eks_node("cpu-node"))
    rig.add(eks_node("gpu-node", extra={"nvidia.com/gpu": "1"}))
    assert rig.written()["status"]["resources"]["nvidia.com/gpu"] == "1"

    rig.remove("Node", "gpu-node")
    assert rig.written()["status"]["resources"]["nvidia.com/gpu"] == "0"

    rig.remove("Node", "cpu-node")
    assert rig.written()["status"]["resources"] == {
        "cpu": "0",
        "ephemeral-storage": "0",
        "memory": "0",
        "nodes": "0",
        "pods": "0",
    }


def test_thousands_are_written_with_an_si_suffix() -> None:
    """Go's Quantity.String for a decimal quantity: 1000 pods is "1k", 1100 stays "1100";
    a status of 1,000 nodes says "1k" nodes next to `nodes: 1000`."""
    rig = Rig(node_pool("default"))
    rig.add(eks_node("big-a", cpu="96", pods="500"))
    rig.add(eks_node("big-b", cpu="96", pods="500"))
    rig.add(eks_node("small", cpu="8", pods="100"))
    resources = rig.written()["status"]["resources"]
    assert (resources["cpu"], resources["pods"]) == ("200", "1100")

    rig.remove("Node", "small")
    rig.add(eks_node("other", cpu="808", pods="1000"))
    resources = rig.written()["status"]["resources"]
    assert (resources["cpu"], resources["pods"]) == ("1k", "2k")


def test_a_nodepool_requiring_an_unknown_tenancy_fails_validation() -> None:
    """validation/controller.go lines 42-43 (RuntimeValidate → validateWellKnownValues,
    pkg/apis/v1/nodeclaim_validation.go lines 172-189): the AWS provider's
    WellKnownValuesForRequirements names the tenancies dedicated and default (aws
    pkg/apis/v1/labels.go line 65), so a NodePool that allows only another one can never
    launch and is not Ready."""
    rig = Rig(
        node_pool(
            "default",
            requirements=[
                {
                    "key": "karpenter.k8s.aws/instance-tenancy",
                    "operator": "In",
                    "values": ["shared"],
                }
            ],
        )
    )

    written = rig.written()
    validation = objects.condition(written, "ValidationSucceeded")
    assert validation is not None
    assert (validation["status"], validation["reason"]) == ("False", "NodePoolValidationFailed")
    assert (
        "no valid values found in [shared] for karpenter.k8s.aws/instance-tenancy"
        in (validation["message"])
    )
    ready = objects.condition(written, "Ready")
    assert ready is not None and ready["status"] == "False"


def test_a_nodepool_allowing_dedicated_tenancy_validates() -> None:
    rig = Rig(
        node_pool(
            "default",
            requirements=[
                {
                    "key": "karpenter.k8s.aws/instance-tenancy",
                    "operator": "In",
                    "values": ["dedicated"],
                }
            ],
        )
    )

    validation = objects.condition(rig.written(), "ValidationSucceeded")
    assert validation is not None and validation["status"] == "True"
