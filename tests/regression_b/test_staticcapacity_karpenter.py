"""Static NodePools end to end, ported from Karpenter's regression suite
(test/suites/regression/staticcapacity_test.go), with the StaticCapacity gate on: the
suite's NodePool with `replicas`, on 16-CPU instance types (kwok's c-16x amd64 and arm64,
here c5.4xlarge and c6g.4xlarge); it launches and keeps its replicas, scales down
sparing busy and do-not-disrupt nodes, rolls drift within its budget and limit, and
leaves pods it cannot take to a dynamic NodePool."""

from __future__ import annotations

from typing import Any

from nodewright.cluster import objects
from nodewright.controllers.options import ControllerOptions
from tests.harness import NODE_CLASS, World
from tests.regression_b.helpers import (
    DO_NOT_DISRUPT,
    NODEPOOL,
    claim_names,
    consistently,
    deployment,
    drifted,
    eventually,
    expect_disruptions_until_none_left,
    expect_nodeclaims_not_exceed,
    healthy_pods,
    initialized_nodes,
    ready_claims,
    suite_pool,
)

SIXTEEN_CPU = ("c5.4xlarge", "c6g.4xlarge")


def static(replicas: int, **changes: Any) -> dict[str, Any]:
    changes.setdefault("types", SIXTEEN_CPU)
    return suite_pool(replicas=replicas, **changes)


def new_world(*manifests: Any) -> World:
    world = World(options=ControllerOptions(static_capacity=True))
    world.apply(NODE_CLASS, *manifests)
    return world


def set_replicas(world: World, replicas: int) -> None:
    world.cluster.patch("NodePool", "default", {"spec": {"replicas": replicas}})
    world.deliver()


def expect_ready_fleet(world: World, count: int) -> list[dict[str, Any]]:
    """EventuallyExpectInitializedNodeCount, EventuallyExpectCreatedNodeClaimCount and
    EventuallyExpectNodeClaimsReady, all at `count`."""
    eventually(world, lambda: len(initialized_nodes(world)) == count
               and len(world.nodeclaims()) == count and len(ready_claims(world)) == count)
    return initialized_nodes(world)


# -- Provisioning -----------------------------------------------------------------------


def test_a_static_nodepool_launches_its_replicas_and_more_when_raised() -> None:
    """Karpenter test/suites/regression/staticcapacity_test.go It("should create static
    NodeClaims to meet desired replicas")."""
    world = new_world(static(10))
    expect_ready_fleet(world, 10)
    set_replicas(world, 15)
    nodes = expect_ready_fleet(world, 15)
    assert all(objects.labels(n)[NODEPOOL] == "default" for n in nodes)


def test_a_static_nodeclaim_carries_the_nodepools_template() -> None:
    """Karpenter test/suites/regression/staticcapacity_test.go It("should create static
    NodeClaim propagating all the NodePool spec details")."""
    taints = [{"key": "custom-taint", "effect": "NoSchedule", "value": "custom-value"},
              {"key": "other-custom-taint", "effect": "NoExecute",
               "value": "other-custom-value"}]
    world = new_world(static(1, template_annotations={"custom-annotation": "custom-value"},
                             template_labels={"custom-label": "custom-value"},
                             taints=taints))
    (node,) = expect_ready_fleet(world, 1)
    assert objects.annotations(node)["custom-annotation"] == "custom-value"
    assert objects.labels(node)["custom-label"] == "custom-value"
    for taint in taints:
        assert taint in node["spec"]["taints"]


def test_a_static_nodepool_stops_at_its_node_limit() -> None:
    """Karpenter test/suites/regression/staticcapacity_test.go It("should respect node
    limits when provisioning")."""
    world = new_world(static(10, limits={"nodes": "5"}))
    expect_nodeclaims_not_exceed(world, 5, 300)
    expect_ready_fleet(world, 5)


# -- Deprovisioning ---------------------------------------------------------------------


def test_a_static_nodepool_scales_down_to_zero() -> None:
    """Karpenter test/suites/regression/staticcapacity_test.go It("should scale down to
    zero")."""
    world = new_world(static(3))
    expect_ready_fleet(world, 3)
    set_replicas(world, 0)
    eventually(world, lambda: world.nodes() == [] and world.nodeclaims() == [])


def bare_pod(name: str, node: str, annotations: dict[str, str] | None = None
             ) -> dict[str, Any]:
    """test.Pod bound to `node` by its spec, as the suite creates it."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default",
                         "annotations": annotations or {}},
            "spec": {"nodeName": node, "containers": [{"name": "app", "image": "pause"}]}}


def test_scaling_down_removes_empty_nodes_then_cheap_ones_and_spares_do_not_disrupt() -> None:
    """Karpenter test/suites/regression/staticcapacity_test.go It("should terminate empty
    nodes first, then nodes with least cost, then respect do-not-disrupt")."""
    world = new_world(static(3))
    expect_ready_fleet(world, 3)
    set_replicas(world, 5)
    nodes = sorted(objects.name(n) for n in expect_ready_fleet(world, 5))
    world.apply(bare_pod("first", nodes[0]), bare_pod("second", nodes[1]),
                bare_pod("pinned", nodes[2], {DO_NOT_DISRUPT: "true"}))
    eventually(world, lambda: len(world.running_pods()) == 3, timeout=60)

    set_replicas(world, 3)
    eventually(world, lambda: len(initialized_nodes(world)) == 3
               and len(world.nodeclaims()) == 3)
    assert {objects.name(n) for n in initialized_nodes(world)} == set(nodes[:3])

    set_replicas(world, 1)
    eventually(world, lambda: len(initialized_nodes(world)) == 1
               and len(world.nodeclaims()) == 1)
    assert [objects.name(n) for n in initialized_nodes(world)] == [nodes[2]]


def test_pods_of_removed_static_nodes_are_evicted_and_rescheduled() -> None:
    """Karpenter test/suites/regression/staticcapacity_test.go It("should handle graceful
    pod eviction during scale down")."""
    world = new_world(static(3))
    expect_ready_fleet(world, 3)
    world.apply(deployment("test-deployment", 2, labels={"app": "test"}))
    eventually(world, lambda: len(healthy_pods(world, {"app": "test"})) == 2, timeout=60)
    set_replicas(world, 1)
    eventually(world, lambda: len(initialized_nodes(world)) == 1
               and len(world.nodeclaims()) == 1)
    eventually(world, lambda: len(healthy_pods(world, {"app": "test"})) == 2)
    (node,) = initialized_nodes(world)
    assert {p["spec"]["nodeName"] for p in healthy_pods(world, {"app": "test"})} == {
        objects.name(node)}


# -- Drift ------------------------------------------------------------------------------


def drift_ten(**changes: Any) -> tuple[World, set[str]]:
    world = new_world(static(10))
    expect_ready_fleet(world, 10)
    originals = claim_names(world)
    world.apply(static(10, template_annotations={"test": "annotation"}, **changes))
    eventually(world, lambda: drifted(world, originals))
    return world, originals


def test_drifted_static_nodes_are_replaced() -> None:
    """Karpenter test/suites/regression/staticcapacity_test.go It("should replace drifted
    nodes")."""
    world, originals = drift_ten()
    expect_disruptions_until_none_left(world, 10, 10, 300,
                                       until=lambda: not originals & claim_names(world))
    expect_ready_fleet(world, 10)


def test_static_drift_is_held_to_the_node_limit_when_the_budget_allows_more() -> None:
    """Karpenter test/suites/regression/staticcapacity_test.go It("should handle drift
    with node limits when budget allows")."""
    world, originals = drift_ten(budgets=[{"nodes": "4"}], limits={"nodes": "12"})
    most = expect_disruptions_until_none_left(
        world, 10, 2, 600, until=lambda: not originals & claim_names(world))
    assert most == 2  # two replacements fit under the limit of 12
    expect_ready_fleet(world, 10)


def test_static_drift_is_held_to_the_budget_when_the_limit_allows_more() -> None:
    """Karpenter test/suites/regression/staticcapacity_test.go It("should handle drift
    with node limits when budget restricts")."""
    world, originals = drift_ten(budgets=[{"nodes": "2"}], limits={"nodes": "15"})
    most = expect_disruptions_until_none_left(
        world, 10, 2, 600, until=lambda: not originals & claim_names(world))
    assert most == 2
    expect_ready_fleet(world, 10)


# -- Dynamic NodeClaim Interaction ------------------------------------------------------


def test_pods_a_static_nodepool_cannot_take_get_dynamic_nodes() -> None:
    """Karpenter test/suites/regression/staticcapacity_test.go It("should provision
    dynamic nodeclaims when static nodeclaims cant satisfy pod constraints")."""
    world = new_world(static(2, taints=[{"key": "static", "effect": "NoExecute"}]),
                      suite_pool("dynamic-nodepool", types=SIXTEEN_CPU))
    eventually(world, lambda: len(initialized_nodes(world)) == 2
               and len(ready_claims(world)) == 2)
    assert all(objects.labels(c)[NODEPOOL] == "default" for c in world.nodeclaims())
    label = {"app": "large-app"}
    spread = {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
              "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": label}}
    apart = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": label}}]}}
    for i in range(3):
        world.apply({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": f"large-{i}", "namespace": "default",
                                  "labels": label,
                                  "annotations": {DO_NOT_DISRUPT: "true"}},
                     "spec": {"containers": [{"name": "app", "image": "pause"}],
                              "topologySpreadConstraints": [spread], "affinity": apart}})
    eventually(world, lambda: len(healthy_pods(world, label)) == 3)
    eventually(world, lambda: len(initialized_nodes(world)) == 5
               and len(world.nodeclaims()) == 5)
    pools = [objects.labels(c)[NODEPOOL] for c in world.nodeclaims()]
    assert pools.count("dynamic-nodepool") == 3 and pools.count("default") == 2


# -- Edge Cases -------------------------------------------------------------------------


def test_drift_and_a_scale_up_at_once_stay_within_the_node_limit() -> None:
    """Karpenter test/suites/regression/staticcapacity_test.go It("should not go over
    limit during concurrent changes/executions")."""
    world = new_world(static(3, limits={"nodes": "5"}))
    expect_ready_fleet(world, 3)
    originals = claim_names(world)
    world.apply(static(4, limits={"nodes": "5"},
                       template_annotations={"drift-trigger": "test-value"}))
    eventually(world, lambda: drifted(world, originals))
    expect_nodeclaims_not_exceed(world, 5, 180)
    eventually(world, lambda: not originals & claim_names(world), timeout=600)
    nodes = expect_ready_fleet(world, 4)
    assert all(objects.annotations(n).get("drift-trigger") == "test-value" for n in nodes)


def test_deleting_a_static_nodepool_removes_its_nodes_without_launching_more() -> None:
    """Karpenter test/suites/regression/staticcapacity_test.go It("should handle NodePool
    deletion gracefully")."""
    world = new_world(static(3))
    expect_ready_fleet(world, 3)
    world.delete("NodePool", "default")
    expect_nodeclaims_not_exceed(world, 3, 30)
    eventually(world, lambda: initialized_nodes(world) == [] and world.nodeclaims() == [])

    def none() -> None:
        assert world.nodeclaims() == []
    consistently(world, none, 60)
