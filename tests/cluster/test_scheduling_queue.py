"""kube-scheduler's queue: a pending pod is tried again when a change may help it
(queueing hints), when its backoff runs out, or after five minutes; an unchanged
verdict writes nothing; repeated FailedScheduling events become one Event's series."""

from __future__ import annotations

from typing import Any

from nodewright.cluster.memory.kube_scheduler.queue import (
    NODE_RESOURCES_FIT,
    TAINT_TOLERATION,
    node_change_may_help,
)
from nodewright.cluster.memory.kube_scheduler.snapshot import node_info
from nodewright.scheduling.pods import parse_pod_spec
from tests.cluster.world import World, node, pod

UNREGISTERED = [{"key": "karpenter.sh/unregistered", "effect": "NoExecute"}]
ONE_TAINTED = ("0/1 nodes are available: 1 node(s) had untolerated taint "
               "{karpenter.sh/unregistered: }.")
TWO_TAINTED = ("0/2 nodes are available: 2 node(s) had untolerated taint "
               "{karpenter.sh/unregistered: }.")


def failed_scheduling(world: World, name: str) -> list[dict[str, Any]]:
    return [e for e in world.cluster.list("Event")
            if e["reason"] == "FailedScheduling" and e["regarding"]["name"] == name]


def untaint(world: World, name: str) -> None:
    world.cluster.patch("Node", name, {"spec": {"taints": []}})


def test_a_new_node_with_a_taint_the_pod_does_not_tolerate_does_not_retry_it() -> None:
    world = World()
    world.apply(node("joining-1", taints=UNREGISTERED))
    world.apply(pod("web"))
    assert world.pending_message("web") == ONE_TAINTED
    written = world.pod("web")["metadata"]["resourceVersion"]

    world.apply(node("joining-2", taints=UNREGISTERED))
    world.run(60)

    assert world.pending_message("web") == ONE_TAINTED, "the pod was tried again"
    assert world.pod("web")["metadata"]["resourceVersion"] == written
    assert len(failed_scheduling(world, "web")) == 1


def test_the_pod_is_retried_when_the_taint_comes_off() -> None:
    world = World()
    world.apply(node("joining", taints=UNREGISTERED))
    world.apply(pod("web"))
    world.run(30)
    untaint(world, "joining")
    world.run()
    assert world.placements() == {"web": "joining"}


def test_an_unschedulable_pod_is_flushed_after_five_minutes() -> None:
    world = World()
    world.apply(node("joining-1", taints=UNREGISTERED))
    world.apply(pod("web"))
    world.apply(node("joining-2", taints=UNREGISTERED))
    world.run(299)
    assert world.pending_message("web") == ONE_TAINTED
    world.run(1)
    assert world.pending_message("web") == TWO_TAINTED


def test_a_retry_with_the_same_verdict_writes_nothing() -> None:
    world = World()
    world.apply(node("joining", taints=UNREGISTERED))
    world.apply(pod("web"))
    written = world.pod("web")["metadata"]["resourceVersion"]
    world.run(301)  # flushed and tried again: same message
    assert world.pod("web")["metadata"]["resourceVersion"] == written
    assert len(failed_scheduling(world, "web")) == 1
    assert "series" not in failed_scheduling(world, "web")[0]


def test_repeated_failed_scheduling_is_one_event_with_a_series() -> None:
    world = World()
    world.apply(node("joining-1", taints=UNREGISTERED))
    world.apply(pod("web"))
    world.apply(node("joining-2", taints=UNREGISTERED))
    world.run(300)  # flushed: a new message, the same event key
    [event] = failed_scheduling(world, "web")
    assert event["series"]["count"] == 2
    assert event["note"] == ONE_TAINTED, "client-go keeps the first occurrence's note"

    world.apply(node("joining-3", taints=UNREGISTERED))
    world.run(300)  # a third occurrence only counts in the recorder's cache
    [event] = failed_scheduling(world, "web")
    assert event["series"]["count"] == 2
    assert world.pending_message("web") == (
        "0/3 nodes are available: 3 node(s) had untolerated taint "
        "{karpenter.sh/unregistered: }.")

    world.run(13 * 60)  # the series ends: its final count is written
    [event] = failed_scheduling(world, "web") or [None]
    assert event is not None
    assert event["series"]["count"] >= 3


def test_hints_judge_the_change_not_the_node() -> None:
    web = parse_pod_spec("default", "web", {}, {"containers": [
        {"name": "app", "resources": {"requests": {"cpu": "3"}}}]}, "web.spec")
    tainted = node_info(node("n", cpu="4", taints=UNREGISTERED))
    clean = node_info(node("n", cpu="4"))
    small = node_info(node("n", cpu="2"))
    assert tainted is not None and clean is not None and small is not None
    assert not node_change_may_help(web, TAINT_TOLERATION, None, tainted)
    assert node_change_may_help(web, TAINT_TOLERATION, tainted, clean)
    assert not node_change_may_help(web, TAINT_TOLERATION, clean, clean)
    assert node_change_may_help(web, NODE_RESOURCES_FIT, None, clean)
    assert not node_change_may_help(web, NODE_RESOURCES_FIT, None, small)
    assert node_change_may_help(web, NODE_RESOURCES_FIT, small, clean)
    assert not node_change_may_help(web, NODE_RESOURCES_FIT, clean, clean)
