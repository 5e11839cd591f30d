"""Karpenter v1.14.1 pkg/controllers/static/deprovisioning/suite_test.go, told as stories on
the in-memory cluster: a static NodePool with more active NodeClaims than its replicas
deletes the surplus, unlaunched NodeClaims first, then empty nodes, then the cheapest to
disrupt, do-not-disrupt last.

Each story lets the operator launch the pool, then lowers `replicas` and hands the change
to the state cache without running the operator, so that our deprovisioner's reconcile
is the only thing that acts (Karpenter's tests call Reconcile on hand-made NodeClaims)."""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.cluster import objects
from nodewright.cluster.api import ApiError
from nodewright.controllers.static.deprovisioning import StaticDeprovisioning
from nodewright.controllers.static.provisioning import REQUEUE_SECONDS
from tests.harness import NODE_CLASS, World
from tests.static.helpers import (
    claims_of,
    deprovisioner,
    launched_pool,
    live_claims_of,
    static_pool,
)


def lower_replicas(world: World, replicas: int) -> None:
    world.cluster.patch("NodePool", "static", {"spec": {"replicas": replicas}})
    world.deliver()


def live_names(world: World) -> set[str]:
    return {objects.name(c) for c in live_claims_of(world, "static")}


def node_of(world: World, claim: str) -> str:
    return str(world.cluster.get("NodeClaim", claim)["status"]["nodeName"])


def bound_pod(world: World, name: str, node: str, *, namespace: str = "default",
              daemonset: bool = False, annotations: dict[str, str] | None = None) -> None:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if daemonset:
        metadata["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "DaemonSet",
                                        "name": "test-daemonset", "uid": "test-uid",
                                        "controller": True}]
    if annotations:
        metadata["annotations"] = annotations
    world.apply({"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
                 "spec": {"nodeName": node, "containers": [{"name": "app", "image": "app"}]},
                 "status": {"phase": "Running"}})


def test_a_pool_of_another_providers_nodeclass_is_left_alone(world: World) -> None:
    """suite_test.go "should return early if nodepool is not managed by cloud provider": a
    NodeClaim of a foreign NodePool with 0 replicas is not ours to delete."""
    launched_pool(world, 1)
    foreign = static_pool(replicas=0)
    foreign["metadata"]["name"] = "foreign"
    foreign["spec"]["template"]["spec"]["nodeClassRef"] = {
        "group": "test.group", "kind": "UnmanagedNodeClass", "name": "test"}
    world.apply(foreign)
    template = claims_of(world, "static")[0]
    world.cluster.create({
        "apiVersion": template["apiVersion"], "kind": "NodeClaim",
        "metadata": {"name": "foreign-claim", "labels": {"karpenter.sh/nodepool": "foreign"}},
        "spec": template["spec"]})
    world.deliver()
    assert deprovisioner(world).reconcile("foreign").requeue_after is None
    assert not objects.is_deleting(world.cluster.get("NodeClaim", "foreign-claim"))


def test_a_nodepool_without_replicas_is_left_alone(world: World) -> None:
    """suite_test.go "should return early if nodepool replicas is nil"."""
    body = static_pool(replicas=1)
    del body["spec"]["replicas"]
    world.apply(NODE_CLASS, body)
    world.deliver()
    assert deprovisioner(world).reconcile("static").requeue_after is None


def test_a_nodepool_being_deleted_deletes_no_surplus(world: World) -> None:
    """suite_test.go "should return early if nodepool is being deleted"."""
    before = set(launched_pool(world, 2))
    world.cluster.patch("NodePool", "static", {"metadata": {"finalizers": ["example.com/hold"]},
                                                "spec": {"replicas": 1}})
    world.cluster.delete("NodePool", "static")
    world.deliver()
    assert deprovisioner(world).reconcile("static").requeue_after is None
    assert live_names(world) == before


def test_a_pool_at_or_below_its_replicas_deletes_nothing(world: World) -> None:
    """suite_test.go "should return early if current node count is less than or equal to
    desired replicas"."""
    before = set(launched_pool(world, 2))
    lower_replicas(world, 3)
    assert deprovisioner(world).reconcile("static").requeue_after == REQUEUE_SECONDS
    assert live_names(world) == before


def test_nodeclaims_already_deleting_are_not_counted(world: World) -> None:
    """suite_test.go "should only consider running nodeclaims and not deleting
    nodeclaims": 4 NodeClaims, 3 marked for deletion, 1 replica: nothing more goes."""
    names = launched_pool(world, 4)
    state = deprovisioner(world).state
    marked = [world.cluster.get("NodeClaim", n)["status"]["providerID"] for n in names[:3]]
    state.mark_for_deletion(*marked)
    lower_replicas(world, 1)
    assert deprovisioner(world).reconcile("static").requeue_after == REQUEUE_SECONDS
    assert live_names(world) == set(names)


def test_the_surplus_over_the_replicas_is_deleted(world: World) -> None:
    """suite_test.go "should terminate excess nodeclaims when current count exceeds desired
    replicas"."""
    launched_pool(world, 4)
    lower_replicas(world, 2)
    assert deprovisioner(world).reconcile("static").requeue_after == REQUEUE_SECONDS
    assert len(live_names(world)) == 2
    assert len(claims_of(world, "static")) == 4  # the other two are being deleted


def test_zero_replicas_delete_every_nodeclaim(world: World) -> None:
    """suite_test.go "should handle zero replicas by terminating all nodeclaims"."""
    launched_pool(world, 3)
    lower_replicas(world, 0)
    assert deprovisioner(world).reconcile("static").requeue_after == REQUEUE_SECONDS
    assert live_names(world) == set()
    assert world.settle()
    assert claims_of(world, "static") == []


def test_a_pool_with_no_nodeclaims_is_fine(world: World) -> None:
    """suite_test.go "should handle no active nodeclaims gracefully"."""
    world.apply(NODE_CLASS, static_pool(replicas=0))
    assert world.settle()
    assert deprovisioner(world).reconcile("static").requeue_after == REQUEUE_SECONDS
    assert claims_of(world, "static") == []


class RefusingDeletes:
    """The cluster, except that every delete is refused (Karpenter's failingClient)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        raise ApiError("simulated delete failure")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_refused_delete_leaves_the_nodeclaims_active_and_is_retried(world: World) -> None:
    """suite_test.go Failing Scenarios "should return error when nodeclaim deletion fails":
    the reconcile fails, as Karpenter's returns the error (controller-runtime backs off)."""
    names = launched_pool(world, 3)
    lower_replicas(world, 1)
    real = deprovisioner(world)
    failing = StaticDeprovisioning(
        RefusingDeletes(world.cluster), real.clock, real.state)  # type: ignore[arg-type]
    with pytest.raises(ApiError, match="failed to deprovision nodeclaims"):
        failing.reconcile("static")
    assert live_names(world) == set(names)


def test_unlaunched_nodeclaims_go_first(world: World) -> None:
    """suite_test.go Deprovision Candidate Selection "should prioritize nodeclaims that have
    unresolved providerID": two launched, two without a providerID, 2 replicas."""
    launched = set(launched_pool(world, 2))
    template = dict(world.cluster.get("NodeClaim", sorted(launched)[0]))
    for suffix in ("a", "b"):
        world.cluster.create({
            "apiVersion": template["apiVersion"], "kind": "NodeClaim",
            "metadata": {"name": f"unlaunched-{suffix}",
                         "labels": dict(objects.labels(template))},
            "spec": template["spec"]})
    world.deliver()
    assert deprovisioner(world).reconcile("static").requeue_after == REQUEUE_SECONDS
    assert live_names(world) == launched


def test_empty_nodes_and_daemonset_only_nodes_go_first(world: World) -> None:
    """suite_test.go "should prioritize empty nodes (with only daemonset pods) for
    termination": nodes 0 and 2 hold a DaemonSet pod, 1 and 3 an application pod."""
    names = launched_pool(world, 4)
    for index, claim in enumerate(names):
        daemon = index in (0, 2)
        bound_pod(world, f"pod-{index}", node_of(world, claim), daemonset=daemon,
                  namespace="kube-system" if daemon else "default")
    lower_replicas(world, 2)
    assert deprovisioner(world).reconcile("static").requeue_after == REQUEUE_SECONDS
    assert live_names(world) == {names[1], names[3]}


def test_busy_nodes_go_when_empty_ones_are_not_enough(world: World) -> None:
    """suite_test.go "should terminate non-empty nodes when empty nodes are insufficient"."""
    names = launched_pool(world, 4)
    bound_pod(world, "pod-0", node_of(world, names[0]))
    bound_pod(world, "pod-2", node_of(world, names[2]))
    lower_replicas(world, 1)
    assert deprovisioner(world).reconcile("static").requeue_after == REQUEUE_SECONDS
    assert len(live_names(world)) == 1


@pytest.mark.parametrize(("replicas", "kept"), [
    pytest.param(6, {"low", "high", "dnd"}, id="to 6 (drops DS-only first)"),
    pytest.param(4, {"high", "dnd"}, id="to 4 (drops low next)"),
    pytest.param(2, {"dnd"}, id="to 2 (drops high next)"),
    pytest.param(0, set(), id="to 0 (drops do-not-disrupt last)"),
])
def test_scale_down_follows_the_disruption_cost(
    world: World, replicas: int, kept: set[str],
) -> None:
    """suite_test.go disruption cost ordering "scales down in disruption cost order" (its
    four Entries): two nodes each of a DaemonSet pod only, one kube-system pod (low), a
    kube-system and an application pod (high), and a do-not-disrupt pod."""
    names = launched_pool(world, 8)
    kinds = ["low", "high", "dnd", "ds"] * 2
    for index, (claim, kind) in enumerate(zip(names, kinds, strict=True)):
        node = node_of(world, claim)
        if kind == "low":
            bound_pod(world, f"system-pod-low-{index}", node, namespace="kube-system")
        elif kind == "high":
            bound_pod(world, f"system-pod-high-{index}", node, namespace="kube-system")
            bound_pod(world, f"app-pod-high-{index}", node)
        elif kind == "dnd":
            bound_pod(world, f"app-pod-dnd-{index}", node,
                      annotations={"karpenter.sh/do-not-disrupt": "true"})
        else:
            bound_pod(world, f"dmn-pod-{index}", node, namespace="kube-system",
                      daemonset=True)
    lower_replicas(world, replicas)
    assert deprovisioner(world).reconcile("static").requeue_after == REQUEUE_SECONDS
    assert live_names(world) == {
        claim for claim, kind in zip(names, kinds, strict=True) if kind in kept}
