"""Karpenter's scheduling suite, ported: kubernetes-sigs/karpenter v1.14.1
pkg/controllers/provisioning/scheduling/suite_test.go, Describe("Deleting Nodes"). Each
story names its It/Entry.

Karpenter's `cluster.MarkForDeletion` is what its disruption controller does to a
candidate: here, as ours does it, the Node gets the `karpenter.sh/disrupted` taint (which
wakes the provisioner) and the cluster state marks it. The provisioner then plans for
the pods of that node that will need a place (Karpenter's IsCurrentlyReschedulable): an
active pod, or a terminating one of a StatefulSet (its replacement keeps the name), but
not a DaemonSet's, nor a pod a PodDisruptionBudget fully blocks."""

from __future__ import annotations

from typing import Any

import pytest

from tests.controllers.conftest import WORKSHOP
from tests.controllers.expectations import claim_names
from tests.harness import World

POD_LABELS = {"pdb-test": "value"}


def a_pod(owner: dict[str, Any] | None = None, name: str = "app",
          labels: dict[str, str] | None = None, node_name: str | None = None
          ) -> dict[str, Any]:
    """A pod asking 100M of memory; kept by a finalizer once evicted, as ExpectEvicted
    leaves it existing with a deletion timestamp."""
    metadata: dict[str, Any] = {"name": name, "namespace": "default",
                                "labels": {**POD_LABELS, **(labels or {})},
                                "finalizers": ["test.karpenter.sh/keep"]}
    if owner is not None:
        metadata["ownerReferences"] = [{**owner, "controller": True,
                                        "blockOwnerDeletion": True}]
    spec: dict[str, Any] = {"containers": [{"name": "app", "image": "app",
                                            "resources": {"requests": {"memory": "100M"}}}]}
    if node_name is not None:
        spec["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def launched(*bodies: Any) -> World:
    world = World()
    world.apply(WORKSHOP, *bodies)
    assert world.settle()
    assert len(claim_names(world)) == 1
    return world


def mark_for_deletion(world: World) -> None:
    """As the disruption controller marks a candidate: the disrupted taint, the state mark."""
    (claim,) = world.nodeclaims()
    node = world.cluster.get("Node", claim["status"]["nodeName"])
    world.controllers.state.mark_for_deletion(claim["status"]["providerID"])
    taints = [*(node["spec"].get("taints") or []),
              {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}]
    world.cluster.patch("Node", node["metadata"]["name"], {"spec": {"taints": taints}})


def evict(world: World, name: str = "app") -> None:
    """ExpectEvicted: the pod gets its deletion timestamp and stays (its finalizer)."""
    world.delete("Pod", name, "default")
    assert world.cluster.get("Pod", name, "default")["metadata"].get("deletionTimestamp")


def claims_after_a_loop(world: World) -> list[str]:
    world.advance(60)
    return claim_names(world)


def instance_types(world: World) -> set[str]:
    return {str(c["metadata"]["labels"].get("node.kubernetes.io/instance-type"))
            for c in world.nodeclaims()}


def test_active_pods_of_a_deleting_node_are_planned_for() -> None:
    # It("should re-schedule pods from a deleting node when pods are active"): a second
    # node of the same type.
    world = launched(a_pod())
    mark_for_deletion(world)
    assert len(claims_after_a_loop(world)) == 2
    assert len(instance_types(world)) == 1


def test_terminating_pods_of_a_deleting_node_are_not_planned_for() -> None:
    # It("should not re-schedule pods from a deleting node when pods are not active")
    world = launched(a_pod())
    mark_for_deletion(world)
    evict(world)
    assert len(claims_after_a_loop(world)) == 1


def test_daemonset_pods_of_a_deleting_node_are_not_planned_for() -> None:
    # It("should not re-schedule pods from a deleting node when pods are owned by a
    # DaemonSet"): a DaemonSet that runs nowhere by itself owns a pod bound by hand to the
    # node (ExpectManualBinding); the pod that launched the node is gone.
    ds = {"apiVersion": "apps/v1", "kind": "DaemonSet",
          "metadata": {"name": "ds", "namespace": "default"},
          "spec": {"selector": {"matchLabels": {"ds": "ds"}}, "template": {
              "metadata": {"labels": {"ds": "ds"}},
              "spec": {"nodeSelector": {"no-such-label": "x"},
                       "containers": [{"name": "c", "image": "c"}]}}}}
    world = launched(a_pod(name="first"))
    (claim,) = world.nodeclaims()
    (created,) = world.apply(ds)
    owner = {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "ds",
             "uid": created["metadata"]["uid"]}
    world.apply(a_pod(owner, labels={"ds": "ds"}, node_name=claim["status"]["nodeName"]))
    evict(world, "first")
    world.cluster.patch("Pod", "first", {"metadata": {"finalizers": []}}, "default")
    mark_for_deletion(world)
    evict(world)
    assert set(claims_after_a_loop(world)) <= {claim["metadata"]["name"]}


def _owned_by(kind: str) -> tuple[World, str]:
    """A pod of a one-replica workload (the workload adopts it: no other replica). The
    workload's own replicas select a label no NodePool offers: Karpenter's envtest has no
    workload controllers, so a replacement must not launch anything here either."""
    workload = {"apiVersion": "apps/v1", "kind": kind,
                "metadata": {"name": "owner", "namespace": "default"},
                "spec": {"replicas": 1, "selector": {"matchLabels": {"owner": "owner"}},
                         "template": {"metadata": {"labels": {"owner": "owner"}},
                                      "spec": {"nodeSelector": {"no-such-label": "x"},
                                               "containers": [{"name": "c", "image": "c"}]}}}}
    if kind == "StatefulSet":
        workload["spec"]["serviceName"] = "owner"
    world = World()
    (created,) = world.apply(workload)
    owner = {"apiVersion": "apps/v1", "kind": kind, "name": "owner",
             "uid": created["metadata"]["uid"]}
    name = "owner-0" if kind == "StatefulSet" else "app"
    world.apply(WORKSHOP, a_pod(owner, name=name, labels={"owner": "owner"}))
    assert world.settle()
    assert len(claim_names(world)) == 1
    return world, name


def test_terminating_replicaset_pods_of_a_deleting_node_are_not_planned_for() -> None:
    # It("should not reschedule pods from a deleting node when pods are not active and
    # they are owned by a ReplicaSet")
    world, name = _owned_by("ReplicaSet")
    mark_for_deletion(world)
    evict(world, name)
    assert len(claims_after_a_loop(world)) == 1


def test_terminating_statefulset_pods_of_a_deleting_node_are_planned_for() -> None:
    # It("should reschedule pods from a deleting node when pods are not active and they
    # are owned by a StatefulSet"): its replacement will need the room.
    world, name = _owned_by("StatefulSet")
    mark_for_deletion(world)
    evict(world, name)
    assert len(claims_after_a_loop(world)) == 2
    assert len(instance_types(world)) == 1


def _pdb(name: str, **limit: Any) -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"selector": {"matchLabels": POD_LABELS}, **limit}}


@pytest.mark.parametrize("pdbs", [
    [_pdb("pdb", maxUnavailable=0)],
    [_pdb("pdb", maxUnavailable="0%")],
    [_pdb("pdb", minAvailable="100%")],
    [_pdb("pdb-1", minAvailable="100%"), _pdb("pdb-2", minAvailable="100%")],
], ids=["0 max unavailable", "0% max unavailable", "100% min available",
        "multiple PDBs on the same pod"])
def test_pods_fully_blocked_by_pdbs_are_not_planned_for(pdbs: list[dict[str, Any]]) -> None:
    # DescribeTable("should not reschedule pods from a deleting node when pods are blocked
    # due to fully blocking PDBs")
    world = launched(a_pod())
    world.apply(*pdbs)
    mark_for_deletion(world)
    assert len(claims_after_a_loop(world)) == 1
