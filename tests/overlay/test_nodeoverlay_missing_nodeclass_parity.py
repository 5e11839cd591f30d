"""A NodePool whose EC2NodeClass is missing or being deleted does not fail the NodeOverlay
controller's pass.

Karpenter v1.14.1's controller (kubernetes-sigs/karpenter pkg/controllers/nodeoverlay/
controller.go lines 91-103) fails a pass only for the NodePools whose GetInstanceTypes
returns an error. The AWS provider's GetInstanceTypes (aws/karpenter-provider-aws
pkg/cloudprovider/cloudprovider.go lines 207-216, resolveNodeClassFromNodePool lines
362-373, newTerminatingNodeClassError lines 506-511) answers a NodePool whose EC2NodeClass
is not found, or terminating, with no instance types and no error (after publishing
'Failed resolving NodeClass'). So the pool counts as evaluated, the statuses and the store
are written, and the pass requeues after 6 hours: no reconcile error is logged, and the
controller's error metric does not move, for as long as the node class is missing.
"""

from __future__ import annotations

from nodewright.cluster import objects
from tests.overlay.karpenter_fixture import (
    INSTANCE_TYPE,
    Env,
    instance_type,
    node_class,
    nodepool,
    offering,
    overlay,
)

SIX_HOURS = 6 * 3600


def world() -> Env:
    env = Env()
    env.cloud.instance_types = [instance_type("m5.large", offering("on-demand", "zone-a", 0.096))]
    env.apply(
        nodepool(),
        overlay("cheaper", (INSTANCE_TYPE, "In", ["m5.large"]), price="0.05"),
    )
    return env


def test_a_nodepool_without_its_node_class_is_evaluated_with_no_instance_types() -> None:
    env = world()
    orphan = nodepool("orphan")
    env.cluster.create(orphan)  # no EC2NodeClass "orphan"

    assert env.reconcile().requeue_after == SIX_HOURS
    assert env.condition("cheaper") == ("True", "ValidationSucceeded")
    assert [o.price for o in env.one().offerings] == [0.05]
    store = env.state.overlay_store
    assert store is not None
    assert store.apply("orphan", []) == []  # evaluated: not Karpenter's "awaiting evaluation"


def test_a_nodepool_whose_node_class_is_being_deleted_is_no_error() -> None:
    env = world()
    terminating = node_class("leaving")
    terminating["metadata"]["finalizers"] = ["karpenter.k8s.aws/termination"]
    env.cluster.create(terminating)
    env.cluster.create(nodepool("leaving"))
    env.cluster.delete("EC2NodeClass", "leaving")
    assert objects.is_deleting(env.cluster.get("EC2NodeClass", "leaving"))

    assert env.reconcile().requeue_after == SIX_HOURS
    # Evaluated with no instance types: the overlay changed none of the pool's.
    leaving = env.applied("leaving")
    assert leaving is not None
    assert [o.price for it in leaving for o in it.offerings] == [0.096]
    assert [o.price for o in env.one().offerings] == [0.05]
