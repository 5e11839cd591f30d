"""Karpenter's end-to-end regression suite, test/suites/regression/termination_test.go
(v1.14.1) Describe("Termination"), as stories on the in-memory World.

The in-memory kubelet runs a deleted pod's containers for the whole of its grace period
(as a pod whose preStop hook sleeps at least that long does), then removes the pod; a
pod with a grace period of 0 goes at once.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from nodewright.cluster import objects
from nodewright.state.wellknown import DISRUPTED_TAINT
from tests.controllers.expectations import condition, expect_no_controller_errors
from tests.harness import NODE_CLASS, World
from tests.regression.suite import (
    DO_NOT_DISRUPT,
    daemonset,
    deployment,
    exists,
    healthy,
    pod,
    suite_pool,
)

LARGE_APP = {"app": "large-app"}
WHEN_EMPTY = {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "0s"}


def disrupted(node: dict[str, Any]) -> bool:
    return any(t.get("key") == DISRUPTED_TAINT.key and t.get("effect") == DISRUPTED_TAINT.effect
               for t in (node.get("spec") or {}).get("taints") or [])


def one_node_with(world: World, labels: dict[str, str], count: int = 1) -> dict[str, Any]:
    """EventuallyExpectCreatedNodeClaimCount("==", 1), EventuallyExpectCreatedNodeCount("==",
    1) and EventuallyExpectHealthyPodCount(labels, count); the NodeClaim."""
    assert world.run_until(lambda: len(healthy(world, labels)) == count, timeout=600)
    (claim,) = world.nodeclaims()
    assert len(world.nodes()) == 1
    return claim


def expect_consolidatable(world: World, name: str) -> None:
    assert world.run_until(
        lambda: condition(world.cluster.get("NodeClaim", name), "Consolidatable") == "True",
        timeout=300)


def expect_no_disruptions(world: World, nodes: int, seconds: float) -> None:
    """ConsistentlyExpectNoDisruptions: `nodes` nodes, none tainted for disruption."""
    end = world.clock.now() + timedelta(seconds=seconds)
    while world.clock.now() < end:
        world.advance(5)
        assert len(world.nodes()) == nodes
        assert not any(disrupted(n) for n in world.nodes())
        assert not any(objects.is_deleting(c) for c in world.nodeclaims())


# -- Emptiness ------------------------------------------------------------------------------


def test_a_blocking_budget_holds_emptiness() -> None:
    """termination_test.go Context("Emptiness") Context("Budgets") It("should not allow
    emptiness if the budget is fully blocking")."""
    world = World()
    world.apply(NODE_CLASS, suite_pool(disruption={**WHEN_EMPTY, "budgets": [{"nodes": "0"}]}),
                deployment("large-app"))
    claim = one_node_with(world, LARGE_APP)
    world.delete("Deployment", "large-app")
    expect_consolidatable(world, objects.name(claim))
    expect_no_disruptions(world, 1, 60)
    expect_no_controller_errors(world)


def test_a_blocking_budget_holds_emptiness_during_its_schedule() -> None:
    """termination_test.go Context("Emptiness") Context("Budgets") It("should not allow
    emptiness if the budget is fully blocking during a scheduled time"): a 30-minute window
    that opened 15 minutes ago."""
    world = World()
    opened = world.clock.now() - timedelta(minutes=15)
    budget = {"nodes": "0", "schedule": f"{opened.minute} {opened.hour} * * *",
              "duration": "30m"}
    world.apply(NODE_CLASS, suite_pool(disruption={**WHEN_EMPTY, "budgets": [budget]}),
                deployment("large-app"))
    claim = one_node_with(world, LARGE_APP)
    world.delete("Deployment", "large-app")
    expect_consolidatable(world, objects.name(claim))
    expect_no_disruptions(world, 1, 60)
    # Once the window closes, the empty node goes (ours: the budget was what held it).
    assert world.run_until(lambda: not world.nodes(), timeout=30 * 60)
    assert world.clock.now() >= opened + timedelta(minutes=30)
    expect_no_controller_errors(world)


def test_an_empty_node_is_terminated() -> None:
    """termination_test.go Context("Emptiness") It("should terminate an empty node")."""
    world = World()
    pool = suite_pool(disruption={**WHEN_EMPTY, "consolidateAfter": "10s"})
    world.apply(NODE_CLASS, pool, deployment("inflate"))
    claim = one_node_with(world, {"app": "inflate"})
    (node,) = world.nodes()
    world.scale("inflate", 0)
    expect_consolidatable(world, objects.name(claim))
    world.apply(suite_pool(disruption=WHEN_EMPTY))
    assert world.run_until(lambda: not exists(world, "NodeClaim", objects.name(claim))
                           and not exists(world, "Node", objects.name(node)), timeout=600)
    expect_no_controller_errors(world)


# -- TerminationGracePeriod -----------------------------------------------------------------


def delete_claim_expect_tainted(world: World, claim: dict[str, Any]) -> None:
    """Delete the NodeClaim; within three seconds its node carries the disrupted taint."""
    world.delete("NodeClaim", objects.name(claim))
    world.advance(3)
    (node,) = world.nodes()
    assert disrupted(node)


def healthy_for(world: World, name: str, seconds: float) -> None:
    """ConsistentlyExpectHealthyPods: the pod stays Ready for `seconds` (terminating or
    not)."""
    end = world.clock.now() + timedelta(seconds=seconds)
    while world.clock.now() < end:
        world.advance(1)
        found = world.cluster.get("Pod", name, "default")
        assert condition(found, "Ready") == "True", world.clock.now()


def gone(world: World, claim: dict[str, Any], node: str, pod_name: str) -> bool:
    return not (exists(world, "NodeClaim", objects.name(claim)) or exists(world, "Node", node)
                or exists(world, "Pod", pod_name, "default"))


def test_a_do_not_disrupt_pod_is_deleted_at_the_termination_grace_period() -> None:
    """termination_test.go Describe("TerminationGracePeriod") It("should delete pod with
    do-not-disrupt when it reaches its terminationGracePeriodSeconds"): the NodePool's
    terminationGracePeriod is 60 s, the pod's own 30 s."""
    world = World()
    world.apply(NODE_CLASS, suite_pool(terminationGracePeriod="60s"),
                pod("protected", annotations={DO_NOT_DISRUPT: "true"}, grace=30))
    claim = one_node_with(world, {"app": "protected"})
    node = objects.name(world.nodes()[0])
    deleted = world.clock.now()
    delete_claim_expect_tainted(world, claim)
    healthy_for(world, "protected", 25)
    # Deleted in time for its own 30 s to end with the NodeClaim's 60 s.
    assert world.run_until(lambda: not exists(world, "Pod", "protected", "default"),
                           timeout=120, step=1)
    assert world.clock.now() - deleted <= timedelta(seconds=61)
    assert world.run_until(lambda: gone(world, claim, node, "protected"), timeout=300)
    expect_no_controller_errors(world)


def test_a_pod_with_a_long_pre_stop_hook_goes_after_its_grace_period() -> None:
    """termination_test.go Describe("TerminationGracePeriod") It("should delete pod that has
    a pre-stop hook after termination grace period seconds"): a preStop sleep of 300 s, a
    grace period of 30 s; the kubelet stops it at 30 s."""
    world = World()
    pre_stop = [{"name": "app", "image": "alpine:3.20.2", "command": ["/bin/sh", "-c",
                                                                        "sleep 30"],
                 "lifecycle": {"preStop": {"sleep": {"seconds": 300}}}}]
    world.apply(NODE_CLASS, suite_pool(terminationGracePeriod="60s"),
                pod("pre-stop", grace=30, containers=pre_stop))
    claim = one_node_with(world, {"app": "pre-stop"})
    node = objects.name(world.nodes()[0])
    delete_claim_expect_tainted(world, claim)
    assert world.run_until(
        lambda: objects.is_deleting(world.cluster.get("Pod", "pre-stop", "default")), timeout=30)
    healthy_for(world, "pre-stop", 25)
    assert world.run_until(lambda: gone(world, claim, node, "pre-stop"), timeout=300)
    expect_no_controller_errors(world)


# -- deletion -------------------------------------------------------------------------------


def test_deleting_the_node_terminates_it_and_its_instance() -> None:
    """termination_test.go It("should terminate the node and the instance on deletion")."""
    world = World()
    world.apply(NODE_CLASS, suite_pool(), pod("alone"))
    one_node_with(world, {"app": "alone"})
    (node,) = world.nodes()
    (instance,) = world.live_instances()
    world.delete("Pod", "alone", "default")
    world.delete("Node", objects.name(node))
    assert world.run_until(lambda: not exists(world, "Node", objects.name(node)), timeout=600)
    assert world.run_until(lambda: instance.instance_id not in
                           {i.instance_id for i in world.live_instances()}, timeout=300)
    expect_no_controller_errors(world)


def test_pods_drain_in_order() -> None:
    """termination_test.go It("should drain pods on a node in order"): non-critical pods,
    then non-critical DaemonSet pods, then critical pods, then critical DaemonSet pods, each
    group gone before the next is evicted."""
    world = World()
    sleeps = [{"name": "app", "image": "alpine:3.20.2",
               "command": ["/bin/sh", "-c", "sleep 1000"],
               "resources": {"limits": {"memory": "1Gi"}}}]
    drain = {"drain-test": "true"}

    def labelled(app: str) -> dict[str, str]:
        return {**drain, "app": app}

    world.apply(
        NODE_CLASS, suite_pool(),
        daemonset("daemonset", labels=labelled("daemonset"), grace=60, containers=sleeps),
        daemonset("node-critical-daemonset", labels=labelled("node-critical-daemonset"),
                  grace=10, containers=sleeps, priorityClassName="system-node-critical"),
        daemonset("cluster-critical-daemonset", labels=labelled("cluster-critical-daemonset"),
                  grace=10, containers=sleeps, priorityClassName="system-cluster-critical"),
        deployment("deployment", labels=labelled("deployment"), grace=60, containers=sleeps),
        deployment("node-critical-deployment", labels=labelled("node-critical-deployment"),
                   grace=60, containers=sleeps, priorityClassName="system-node-critical"),
        deployment("cluster-critical-deployment",
                   labels=labelled("cluster-critical-deployment"), grace=60,
                   containers=sleeps, priorityClassName="system-cluster-critical"),
    )
    claim = one_node_with(world, drain, 6)
    names = {objects.labels(p)["app"]: objects.name(p) for p in world.pods()}

    def terminating(*apps: str) -> bool:
        return all(objects.is_deleting(world.cluster.get("Pod", names[a], "default"))
                   for a in apps)

    def active_for(seconds: float, *apps: str) -> None:
        end = world.clock.now() + timedelta(seconds=seconds)
        while world.clock.now() < end:
            world.advance(5)
            for app in apps:
                found = [p for p in world.pods() if objects.name(p) == names[app]]
                assert found and not objects.is_deleting(found[0]), (app, world.clock.now())

    def not_found(*apps: str) -> bool:
        return not any(exists(world, "Pod", names[a], "default") for a in apps)

    def next_group(group: Iterable[str], rest: Iterable[str]) -> None:
        group, rest = tuple(group), tuple(rest)
        assert world.run_until(lambda: terminating(*group), timeout=120)
        if rest:
            active_for(30, *rest)
        assert world.run_until(lambda: not_found(*group), timeout=120)

    world.delete("NodeClaim", objects.name(claim))
    order = [("deployment",), ("daemonset",),
             ("node-critical-deployment", "cluster-critical-deployment"),
             ("node-critical-daemonset", "cluster-critical-daemonset")]
    for index, group in enumerate(order):
        next_group(group, [app for later in order[index + 1:] for app in later])
    assert world.run_until(lambda: not exists(world, "NodeClaim", objects.name(claim)),
                           timeout=300)
    expect_no_controller_errors(world)
