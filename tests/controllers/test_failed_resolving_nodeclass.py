"""A NodeClaim or a NodePool whose EC2NodeClass does not exist says so, as Karpenter's AWS
cloud provider does (pkg/cloudprovider/events/events.go: Warning 'Failed resolving
NodeClass', deduplicated per object for two minutes). The NodeClaim's comes from Create
(NodeClaimFailedToResolveNodeClass), before the NodeClaim is deleted. The NodePool's
(NodePoolFailedToResolveNodeClass) comes from GetInstanceTypes, IsDrifted and an instance's
type, which Karpenter's disruption loop asks every few seconds: once per dedupe window while
the node class is missing or being deleted. No It at v1.14.1 tests either event."""

from __future__ import annotations

from typing import Any

from nodewright.controllers.common.node_class_events import FAILED_RESOLVING_NODE_CLASS
from tests.controllers.conftest import WORKSHOP
from tests.harness import NODE_CLASS, World, node_pool

GHOST_CLAIM = {
    "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
    "metadata": {"name": "orphan", "labels": {"karpenter.sh/nodepool": "default"}},
    "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                              "name": "ghost"},
             "requirements": [{"key": "kubernetes.io/arch", "operator": "In",
                               "values": ["amd64"]}]},
}
DEDUPE_WINDOW = 120


def pool_on(name: str, group: str = "karpenter.k8s.aws",
            kind: str = "EC2NodeClass") -> dict[str, Any]:
    return node_pool("orphans", nodeClassRef={"group": group, "kind": kind, "name": name})


def pool_warnings(world: World) -> list[tuple[str, str, str]]:
    return [(e["regarding"]["name"], e["type"], e["note"])
            for e in world.events(reason=FAILED_RESOLVING_NODE_CLASS, kind="NodePool")]


def test_a_nodeclaim_without_its_node_class_warns_failed_resolving_nodeclass() -> None:
    world = World()
    world.apply(WORKSHOP)
    world.cluster.create(GHOST_CLAIM)
    world.advance(5)

    (event,) = world.events(reason=FAILED_RESOLVING_NODE_CLASS, kind="NodeClaim")
    assert event["type"] == "Warning"
    assert event["note"] == "Failed resolving NodeClass"
    assert event["regarding"]["name"] == "orphan"
    assert "orphan" not in [c["metadata"]["name"] for c in world.nodeclaims()]


def test_a_nodeclaim_whose_node_class_exists_gets_no_such_event() -> None:
    world = World()
    world.apply(WORKSHOP)
    world.scale("inflate", 1)
    assert world.settle()

    assert world.events(reason=FAILED_RESOLVING_NODE_CLASS) == []


def test_a_nodepool_without_its_node_class_is_warned_once_per_window_until_it_exists() -> None:
    world = World()
    world.apply(pool_on("ghost"))
    world.advance(5)

    assert pool_warnings(world) == [("orphans", "Warning", "Failed resolving NodeClass")]
    world.advance(DEDUPE_WINDOW / 2)
    assert len(pool_warnings(world)) == 1  # deduplicated within the window

    world.advance(DEDUPE_WINDOW / 2 + 5)
    assert len(pool_warnings(world)) == 2  # still missing: said again

    world.apply(NODE_CLASS.replace("name: default", "name: ghost"))
    world.advance(5)
    world.advance(3 * DEDUPE_WINDOW)
    assert len(pool_warnings(world)) == 2  # resolved: nothing more


def test_a_nodepool_whose_node_class_is_being_deleted_is_warned() -> None:
    """Karpenter's resolveNodeClassFromNodePool reads a terminating EC2NodeClass as not
    found."""
    world = World()
    world.apply(NODE_CLASS, pool_on("default"))
    world.advance(5)
    assert pool_warnings(world) == []

    world.cluster.patch("EC2NodeClass", "default", {"metadata": {"finalizers": ["held"]}})
    world.delete("EC2NodeClass", "default")
    world.advance(5)
    assert world.cluster.get("EC2NodeClass", "default")["metadata"]["deletionTimestamp"]

    assert pool_warnings(world) == [("orphans", "Warning", "Failed resolving NodeClass")]


def test_a_nodepool_of_another_provider_is_not_warned() -> None:
    """Karpenter asks its cloud provider only about the NodePools it manages
    (nodepoolutils.ListManaged)."""
    world = World()
    world.apply(pool_on("ghost", group="karpenter.kwok.sh", kind="KWOKNodeClass"))
    world.advance(DEDUPE_WINDOW)

    assert pool_warnings(world) == []
