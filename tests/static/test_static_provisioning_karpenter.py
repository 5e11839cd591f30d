"""Karpenter v1.14.1 pkg/controllers/static/provisioning/suite_test.go, told as stories on
the in-memory cluster: a static NodePool gets NodeClaims until it holds `spec.replicas`,
never more than limits.nodes, and nothing while it is not Ready, being deleted or dynamic.

Karpenter's tests call the controller's Reconcile over hand-made NodeClaims; here the
whole operator runs, so a story reaches the same state by scaling the pool, and where a
test reads Reconcile's requeue the story calls our reconciler directly."""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.cluster import objects
from nodewright.cluster.api import ApiError
from nodewright.controllers.static.provisioning import (
    LIMIT_REQUEUE_SECONDS,
    REQUEUE_SECONDS,
    StaticProvisioning,
)
from tests.controllers.expectations import expect_no_controller_errors
from tests.harness import NODE_CLASS, World
from tests.static.helpers import claims_of, live_claims_of, provisioner, static_pool


def test_a_static_nodepool_whose_nodeclass_is_missing_launches_nothing(world: World) -> None:
    """suite_test.go "should return early if nodepool root condition is not true": without
    its EC2NodeClass the NodePool is not Ready, and nothing is launched for it."""
    world.apply(static_pool(replicas=1))
    assert world.settle()
    assert claims_of(world, "static") == []
    result = provisioner(world).reconcile("static")
    assert result.requeue_after is None and claims_of(world, "static") == []


def test_a_static_nodepool_being_deleted_launches_nothing(world: World) -> None:
    """suite_test.go "should return early if nodepool is being deleted"."""
    body = static_pool(replicas=1)
    body["metadata"]["finalizers"] = ["example.com/hold"]
    world.apply(body)
    world.cluster.delete("NodePool", "static")
    world.apply(NODE_CLASS)
    assert world.settle()
    assert objects.is_deleting(world.cluster.get("NodePool", "static"))
    assert claims_of(world, "static") == []


def test_a_nodepool_without_replicas_launches_nothing_for_itself(world: World) -> None:
    """suite_test.go "should return early if nodepool replicas is nil": a dynamic NodePool
    without pods launches nothing, the static controller leaves it alone."""
    body = static_pool(replicas=1)
    del body["spec"]["replicas"]
    world.apply(NODE_CLASS, body)
    assert world.settle()
    assert claims_of(world, "static") == []
    assert provisioner(world).reconcile("static").requeue_after is None


def test_a_pool_at_its_replicas_creates_nothing_more(world: World) -> None:
    """suite_test.go "should return early if current node count exceeds desired replicas"
    and "should not create additional nodeclaims" (reconciled ten times)."""
    world.apply(NODE_CLASS, static_pool(replicas=3))
    assert world.settle()
    before = sorted(objects.name(c) for c in claims_of(world, "static"))
    for _ in range(10):
        assert provisioner(world).reconcile("static").requeue_after == REQUEUE_SECONDS
    assert sorted(objects.name(c) for c in claims_of(world, "static")) == before
    assert len(before) == 3
    # More than the replicas (before deprovisioning removes the surplus): nothing created.
    world.cluster.patch("NodePool", "static", {"spec": {"replicas": 1}})
    world.deliver()
    assert provisioner(world).reconcile("static").requeue_after == REQUEUE_SECONDS
    assert sorted(objects.name(c) for c in claims_of(world, "static")) == before


def test_nodeclaims_are_created_up_to_the_replicas_with_the_pools_nodeclass(
    world: World,
) -> None:
    """suite_test.go "should create nodeclaims when current node count is less than
    desired replicas"."""
    world.apply(NODE_CLASS, static_pool(replicas=2))
    assert world.settle()
    claims = claims_of(world, "static")
    assert len(claims) == 2
    pool = world.cluster.get("NodePool", "static")
    for claim in claims:
        assert claim["spec"]["nodeClassRef"] == pool["spec"]["template"]["spec"]["nodeClassRef"]
        assert objects.labels(claim)["karpenter.sh/nodepool"] == "static"
    expect_no_controller_errors(world)


def test_more_replicas_add_the_missing_nodeclaims(world: World) -> None:
    """suite_test.go "should create additional nodeclaims to reach desired replicas"."""
    world.apply(NODE_CLASS, static_pool(replicas=1))
    assert world.settle()
    first = objects.name(claims_of(world, "static")[0])
    world.cluster.patch("NodePool", "static", {"spec": {"replicas": 3}})
    assert world.settle()
    names = [objects.name(c) for c in live_claims_of(world, "static")]
    assert len(names) == 3 and first in names


def test_limits_nodes_stops_the_pool_short_of_its_replicas(world: World) -> None:
    """suite_test.go "should not create additional nodeclaims when node limits are
    reached": the controller comes back in 30 seconds."""
    world.apply(NODE_CLASS, static_pool(replicas=3, node_limit=1))
    assert world.settle()
    assert len(claims_of(world, "static")) == 1
    assert provisioner(world).reconcile("static").requeue_after == LIMIT_REQUEUE_SECONDS
    assert len(claims_of(world, "static")) == 1


def test_a_pool_grown_past_its_node_limit_stops_at_the_limit(world: World) -> None:
    """suite_test.go "should reserve nodepool nodecount during provisioning and release
    after": 3 replicas under a limit of 10, then 15 replicas stop at 10."""
    world.apply(NODE_CLASS, static_pool(replicas=3, node_limit=10))
    assert world.settle()
    assert len(claims_of(world, "static")) == 3
    world.cluster.patch("NodePool", "static", {"spec": {"replicas": 15}})
    assert world.settle()
    assert len(claims_of(world, "static")) == 10
    provisioner(world).reconcile("static")
    assert len(claims_of(world, "static")) == 10


def test_zero_replicas_create_nothing(world: World) -> None:
    """suite_test.go "should handle zero replicas"."""
    world.apply(NODE_CLASS, static_pool(replicas=0))
    assert world.settle()
    assert provisioner(world).reconcile("static").requeue_after == REQUEUE_SECONDS
    assert claims_of(world, "static") == []


def test_the_nodeclaims_carry_the_templates_labels_annotations_and_requirements(
    world: World,
) -> None:
    """suite_test.go "should respect nodepool template specifications" (with m5 types our
    catalogue offers, and minValues kept)."""
    body = static_pool(replicas=4, labels={"custom-label": "custom-value"})
    template = body["spec"]["template"]
    template["metadata"]["annotations"] = {"custom-annotation": "custom-value"}
    wanted: list[dict[str, Any]] = [
        {"key": "karpenter.k8s.aws/instance-category", "operator": "In",
         "values": ["m", "c"], "minValues": 2},
        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
    ]
    template["spec"]["requirements"] = wanted
    world.apply(NODE_CLASS, body)
    assert world.settle()
    claims = claims_of(world, "static")
    assert len(claims) == 4
    claim = claims[0]
    assert objects.labels(claim)["custom-label"] == "custom-value"
    assert claim["metadata"]["annotations"]["custom-annotation"] == "custom-value"
    requirements = claim["spec"]["requirements"]
    category = next(r for r in requirements if r["key"] == wanted[0]["key"])
    assert sorted(category["values"]) == ["c", "m"] and category["minValues"] == 2
    assert {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]} in requirements


def test_a_large_replica_count_is_reached(world: World) -> None:
    """suite_test.go "should handle large replica counts" (1000 there; 60 here, the same
    code path at a cost these stories can afford)."""
    world.apply(NODE_CLASS, static_pool(replicas=60))
    assert world.settle()
    assert len(claims_of(world, "static")) == 60


class RefusingCreates:
    """The cluster, except that every create is refused (Karpenter's failingClient)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def create(self, obj: Any) -> Any:
        raise ApiError("simulated create failure")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_refused_create_leaves_no_nodeclaim_and_is_retried(world: World) -> None:
    """suite_test.go "should handle CreateNodeClaims errors gracefully": the reconcile
    fails, as Karpenter's returns the error (controller-runtime backs off)."""
    world.apply(NODE_CLASS, static_pool(replicas=1))
    assert world.settle()
    world.cluster.patch("NodePool", "static", {"spec": {"replicas": 2}})
    world.deliver()
    assert len(claims_of(world, "static")) == 1
    failing = StaticProvisioning(
        RefusingCreates(world.cluster), provisioner(world).state)  # type: ignore[arg-type]
    with pytest.raises(ApiError, match="simulated create failure"):
        failing.reconcile("static")
    assert len(claims_of(world, "static")) == 1


def test_a_nodepool_of_another_providers_nodeclass_launches_nothing(world: World) -> None:
    """suite_test.go "should return early if nodepool is not managed by cloud provider"."""
    body = static_pool(replicas=1)
    body["spec"]["template"]["spec"]["nodeClassRef"] = {
        "group": "test.group", "kind": "UnmanagedNodeClass", "name": "test"}
    world.apply(NODE_CLASS, body)
    assert world.settle()
    assert claims_of(world, "static") == []
    assert provisioner(world).reconcile("static").requeue_after is None


def test_an_unsynced_cache_never_over_provisions(world: World) -> None:
    """suite_test.go "should wait for cluster to be synced and not over provision": fifty
    reconciles before the first NodeClaims launch create no more than the replicas.
    Karpenter's test ends at the limit (10) because its envtest cache never sees the
    created NodeClaims; ours sees them and ends at the replicas (5)."""
    world.apply(NODE_CLASS, static_pool(replicas=0, node_limit=10))
    assert world.settle()  # the NodePool is Ready
    world.cluster.patch("NodePool", "static", {"spec": {"replicas": 5}})
    world.deliver()
    results = []
    for _ in range(50):
        results.append(provisioner(world).reconcile("static").requeue_after)
        assert len(claims_of(world, "static")) <= 10
    assert len(claims_of(world, "static")) == 5
    # After the first created them, the unlaunched NodeClaims count as the pool's: the
    # cache has synced once, so (as Karpenter's !HasSynced() && !Synced()) their missing
    # providerIDs do not hold the reconcile back.
    assert results[1:] == [REQUEUE_SECONDS] * 49
    assert world.settle()
    assert len(claims_of(world, "static")) == 5
