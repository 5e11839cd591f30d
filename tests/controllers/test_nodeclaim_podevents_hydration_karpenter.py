"""A NodeClaim's lastPodEventTime (a pod bound to its node, at most once per 10 s) and the
hydration of its node class label.

Ported from Karpenter v1.14.1 pkg/controllers/nodeclaim/podevents/suite_test.go (Describe
"PodEvents") and pkg/controllers/nodeclaim/hydration/suite_test.go (Describe
"Hydration")."""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.controllers.nodeclaim.podevents import PodEvents
from nodewright.runtime.clock import format_time
from tests.controllers.nodeclaim_bench import (
    bench,
    create,
    get,
    linked_node,
    nodeclaim,
    set_status,
)
from tests.harness import World

NODECLASS_LABEL = "karpenter.k8s.aws/ec2nodeclass"


def pod(node_name: str, name: str = "pod") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"nodeName": node_name, "containers": [{"name": "c", "image": "pause"}]}}


def registered(world: World) -> tuple[str, str]:
    (claim,) = create(world, nodeclaim())
    name = str(claim["metadata"]["name"])
    world.advance(5)
    node = linked_node(world, get(world, name) or {})
    world.advance(5)
    return name, str(node["metadata"]["name"])


def last_pod_event(world: World, name: str) -> str | None:
    found = (get(world, name) or {}).get("status", {}).get("lastPodEventTime")
    return None if found is None else str(found)


def bind(world: World, node: str, name: str = "pod") -> str:
    """A pod bound to the node now; the time the NodeClaim should record."""
    world.cluster.create(pod(node, name))
    world.deliver()
    world.advance(0.5)
    return format_time(world.clock.now().replace(microsecond=0))


def test_a_pod_bound_to_the_node_sets_last_pod_event() -> None:
    """It "should set the nodeclaim lastPodEvent"."""
    world = bench()
    name, node = registered(world)
    assert last_pod_event(world, name) is None
    when = bind(world, node)
    assert last_pod_event(world, name) == when


def test_a_pod_on_a_node_that_does_not_exist_sets_nothing() -> None:
    """It "should not set the nodeclaim lastPodEvent when the node does not exist"."""
    world = bench()
    (claim,) = create(world, nodeclaim())
    name = claim["metadata"]["name"]
    world.advance(5)
    bind(world, "node-that-does-not-exist")
    assert last_pod_event(world, name) is None


def test_a_pod_on_a_node_without_a_nodeclaim_is_no_error() -> None:
    """It "should succeed when the nodeclaim lastPodEvent when the nodeclaim does not
    exist"."""
    world = bench()
    world.cluster.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "plain"},
                          "spec": {"providerID": "aws:///us-east-1a/i-plain"}})
    bind(world, "plain")
    podevents = world.controllers.get("nodeclaim.podevents", PodEvents)
    assert podevents is not None
    podevents.reconcile("no-such-nodeclaim")
    assert not [e for e in world.errors if e[0] == "nodeclaim.podevents"]


def test_a_pod_event_replaces_an_older_one() -> None:
    """It "should set the nodeclaim lastPodEvent when it's been set before"."""
    world = bench()
    name, node = registered(world)
    earlier = format_time(world.clock.now().replace(microsecond=0))
    set_status(world, "NodeClaim", name, {"lastPodEventTime": earlier})
    world.advance(5 * 60)
    when = bind(world, node)
    assert last_pod_event(world, name) == when != earlier


def test_pod_events_within_ten_seconds_are_recorded_once() -> None:
    """It "should only set the nodeclaim lastPodEvent once within the dedupe timeframe"."""
    world = bench()
    name, node = registered(world)
    first = bind(world, node, "pod-1")
    assert last_pod_event(world, name) == first
    world.advance(4.5)
    bind(world, node, "pod-2")
    assert last_pod_event(world, name) == first
    world.advance(5)
    bind(world, node, "pod-3")
    assert last_pod_event(world, name) not in (None, first)


@pytest.mark.parametrize("managed", [True, False], ids=["managed", "unmanaged"])
def test_a_nodeclaim_without_its_node_class_label_gets_it(managed: bool) -> None:
    """Entries "should hydrate missing metadata onto the NodeClaim" and "should ignore
    NodeClaims which aren't managed by this Karpenter instance"."""
    world = bench()
    claim = nodeclaim(managed=managed)
    del claim["metadata"]["labels"][NODECLASS_LABEL]
    (created,) = create(world, claim)
    world.advance(1)
    labels = (get(world, created["metadata"]["name"]) or {})["metadata"]["labels"]
    assert labels.get(NODECLASS_LABEL) == ("default" if managed else None)
