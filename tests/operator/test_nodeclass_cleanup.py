"""The EC2NodeClass finalizer and the cloud garbage collection, on the virtual driver: a
deleted node class waits for its NodeClaims, then its launch templates and instance profile
are removed and it goes (Karpenter's nodeclass finalizer)."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from nodewright.cluster.events import EventRecorder
from nodewright.cluster.memory import InMemoryCluster
from nodewright.controllers.driver import VirtualDriver
from nodewright.controllers.nodeclass.cleanup import (
    FINALIZER,
    CloudGarbageCollection,
    NodeClassTermination,
)
from nodewright.runtime.clock import VirtualClock
from tests.operator.test_nodeclass_and_sim_kubelet import NODE_CLASS


class Cleaner:
    def __init__(self) -> None:
        self.deleted: list[str] = []
        self.collected: list[tuple[set[str], set[str] | None, set[str]]] = []

    def delete_node_class_resources(self, node_class: str) -> object:
        self.deleted.append(node_class)
        return None

    def collect_cloud_garbage(self, node_classes: Collection[str],
                              current_profiles: Collection[str] | None = None,
                              active_profiles: Collection[str] = ()) -> object:
        self.collected.append((set(node_classes),
                               set(current_profiles) if current_profiles is not None else None,
                               set(active_profiles)))
        return None


def claim(name: str, node_class: str = "default") -> dict[str, Any]:
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": name, "labels": {"karpenter.sh/nodepool": "default"}},
            "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                      "name": node_class}, "requirements": []}}


def test_a_deleted_node_class_waits_for_its_nodeclaims_then_cleans_up_and_goes() -> None:
    clock = VirtualClock()
    cluster = InMemoryCluster(clock)
    cluster.create(NODE_CLASS)
    cluster.create(claim("using-it"))
    cluster.create(claim("elsewhere", node_class="other"))
    cleaner = Cleaner()
    driver = VirtualDriver(clock, cluster, raise_errors=True)
    driver.add(NodeClassTermination(cluster, cleaner))
    driver.start()
    clock.advance(1)
    assert cluster.get("EC2NodeClass", "default")["metadata"]["finalizers"] == [FINALIZER]

    cluster.delete("EC2NodeClass", "default")
    driver.deliver()  # the test's own writes: deliver their events now
    clock.advance(5)
    assert cluster.get("EC2NodeClass", "default")["metadata"].get("deletionTimestamp")
    assert cleaner.deleted == []

    cluster.delete("NodeClaim", "using-it")
    driver.deliver()
    clock.advance(1)

    assert cleaner.deleted == ["default"]
    assert [c["metadata"]["name"] for c in cluster.list("EC2NodeClass")] == []


def test_garbage_collection_names_the_node_classes_and_the_profiles_in_use() -> None:
    """Karpenter's instance profile garbage collection (pkg/controllers/nodeclass/
    garbagecollection/controller.go): the profiles the node classes' statuses name are
    current, those the NodeClaims' karpenter.k8s.aws/instance-profile-name names active."""
    clock = VirtualClock()
    cluster = InMemoryCluster(clock)
    cluster.create(NODE_CLASS)
    cluster.patch("EC2NodeClass", "default", {"status": {"instanceProfile": "demo_new"}},
                  subresource="status")
    other = {**NODE_CLASS, "metadata": {"name": "fixed-profile"},
             "spec": {**{k: v for k, v in NODE_CLASS["spec"].items() if k != "role"},
                      "instanceProfile": "ops-profile"}}
    cluster.create(other)
    launched = claim("launched-before-the-role-changed")
    launched["metadata"]["annotations"] = {
        "karpenter.k8s.aws/instance-profile-name": "demo_old"}
    cluster.create(launched)
    cluster.create(claim("not-launched-yet"))
    cleaner = Cleaner()
    driver = VirtualDriver(clock, cluster, raise_errors=True)
    driver.add(CloudGarbageCollection(cluster, cleaner))
    driver.start()
    clock.advance(1)
    assert cleaner.collected == [({"default", "fixed-profile"}, {"demo_new"}, {"demo_old"})]
    clock.advance(60)
    assert len(cleaner.collected) == 2


def test_a_deleted_node_class_says_which_nodeclaims_it_waits_on() -> None:
    """Karpenter's pkg/controllers/nodeclass/controller.go finalize publishes
    WaitingOnNodeClaimTermination (events.go) while NodeClaims still use the node class,
    listing at most five of them."""
    clock = VirtualClock()
    cluster = InMemoryCluster(clock)
    cluster.create(NODE_CLASS)
    for number in range(7):
        cluster.create(claim(f"claim-{number}"))
    driver = VirtualDriver(clock, cluster, raise_errors=True)
    driver.add(NodeClassTermination(cluster, Cleaner(), EventRecorder(cluster, clock)))
    driver.start()
    clock.advance(1)

    cluster.delete("EC2NodeClass", "default")
    driver.deliver()
    clock.advance(5)

    (event,) = [e for e in cluster.list("Event", "default")
                if e["reason"] == "WaitingOnNodeClaimTermination"]
    assert event["type"] == "Normal"
    assert event["regarding"]["kind"] == "EC2NodeClass"
    assert event["note"] == ("Waiting on NodeClaim termination for claim-0, claim-1, claim-2, "
                             "claim-3, claim-4 and 2 other(s)")
