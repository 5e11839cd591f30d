"""Initialization: a registered NodeClaim is initialized once its Node is Ready, its
startup and known ephemeral taints are gone and every requested resource is allocatable;
the Node is then labelled karpenter.sh/initialized=true.

Ported from Karpenter v1.14.1 pkg/controllers/nodeclaim/lifecycle/initialization_test.go
(Describe "Initialization")."""

from __future__ import annotations

from typing import Any

import pytest

from tests.controllers.nodeclaim_bench import (
    bench,
    condition_of,
    create,
    get,
    linked_node,
    nodeclaim,
    set_condition,
    status_of,
)
from tests.harness import World

UNREGISTERED = {"key": "karpenter.sh/unregistered", "effect": "NoExecute"}
REQUESTS = {"cpu": "2", "memory": "50Mi", "pods": "5"}
ALLOCATABLE = {"cpu": "8", "memory": "80Mi", "pods": "110"}
GPU = "nvidia.com/gpu"
STARTUP_TAINTS = [{"key": "custom-startup-taint", "effect": "NoSchedule",
                   "value": "custom-startup-value"},
                  {"key": "other-custom-startup-taint", "effect": "NoExecute",
                   "value": "other-custom-startup-value"}]
EPHEMERAL_TAINTS = [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"},
                    {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"},
                    {"key": "node.cloudprovider.kubernetes.io/uninitialized",
                     "effect": "NoSchedule", "value": "true"}]


def launched(world: World, claim: dict[str, Any]) -> str:
    (created,) = create(world, claim)
    world.advance(5)
    return str(created["metadata"]["name"])


def joined(world: World, name: str, **node: Any) -> str:
    claim = get(world, name)
    assert claim is not None
    node.setdefault("taints", [UNREGISTERED])
    created = linked_node(world, claim, **node)
    world.advance(5)
    return str(created["metadata"]["name"])


def set_node(world: World, node: str, *, allocatable: dict[str, str] | None = None,
             taints: list[dict[str, Any]] | None = None) -> None:
    if allocatable is not None:
        current = world.cluster.get("Node", node)
        status = {**current["status"], "capacity": dict(allocatable),
                  "allocatable": dict(allocatable)}
        world.cluster.update({**current, "status": status}, subresource="status")
    if taints is not None:
        world.cluster.patch("Node", node, {"spec": {"taints": taints}})
    world.advance(5)


def linked_node_body(world: World, claim: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node",
            "spec": {"providerID": claim["status"]["providerID"], "taints": [UNREGISTERED]},
            "status": {"allocatable": ALLOCATABLE, "capacity": ALLOCATABLE,
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def states(world: World, name: str) -> tuple[str | None, str | None]:
    claim = get(world, name)
    return status_of(claim, "Registered"), status_of(claim, "Initialized")


@pytest.mark.parametrize("managed", [True, False], ids=["managed", "unmanaged"])
def test_a_nodeclaim_is_initialized_when_every_condition_is_met(managed: bool) -> None:
    """Entries "should consider the NodeClaim initialized when all initialization
    conditions are met" and "should ignore NodeClaims which aren't managed by this
    Karpenter instance"."""
    world = bench()
    name = launched(world, nodeclaim(requests=REQUESTS, managed=managed))
    if not managed:
        # Nothing launched it; registered by hand, as Karpenter's test does.
        set_condition(world, "NodeClaim", name, "Registered", "True")
        world.advance(5)
        assert status_of(get(world, name), "Initialized") is None
        return
    node = joined(world, name, allocatable={"cpu": "0", "memory": "0", "pods": "0"})
    assert states(world, name) == ("True", "Unknown")
    set_node(world, node, allocatable=ALLOCATABLE)
    assert states(world, name) == ("True", "True")


def test_a_nodeclaim_matching_two_nodes_is_not_registered_nor_initialized() -> None:
    """It "shouldn't consider the nodeClaim initialized when it has not registered" (two
    Nodes carry its provider ID)."""
    world = bench()
    name = launched(world, nodeclaim(requests=REQUESTS))
    claim = get(world, name)
    assert claim is not None
    for node in ("node-1", "node-2"):
        world.cluster.create({**linked_node_body(world, claim), "metadata": {"name": node}})
    world.advance(5)
    assert states(world, name) == ("False", "Unknown")
    assert condition_of(get(world, name), "Registered") == ("False", "MultipleNodesFound")


def test_an_initialized_nodeclaims_node_is_labelled_initialized() -> None:
    """It "should add the initialization label to the node when the nodeClaim is
    initialized"."""
    world = bench()
    name = launched(world, nodeclaim(requests=REQUESTS))
    node = joined(world, name, allocatable=ALLOCATABLE)
    labels = world.cluster.get("Node", node)["metadata"]["labels"]
    assert labels["karpenter.sh/initialized"] == "true"


def test_a_node_that_is_not_ready_is_not_initialized() -> None:
    """It "should not consider the Node to be initialized when the status of the Node is
    NotReady"."""
    world = bench()
    name = launched(world, nodeclaim(requests=REQUESTS))
    joined(world, name, allocatable=ALLOCATABLE, ready=False)
    assert states(world, name) == ("True", "Unknown")


def test_a_requested_resource_not_yet_registered_holds_initialization() -> None:
    """Its "should not consider the Node to be initialized when all requested resources
    aren't registered" and "should consider the node to be initialized once all the
    resources are registered"."""
    world = bench()
    name = launched(world, nodeclaim(requests={**REQUESTS, GPU: "1"}))
    node = joined(world, name, allocatable=ALLOCATABLE)
    assert states(world, name) == ("True", "Unknown")
    assert condition_of(get(world, name), "Initialized") == ("Unknown",
                                                             "ResourceNotRegistered")
    set_node(world, node, allocatable={**ALLOCATABLE, GPU: "2"})
    assert states(world, name) == ("True", "True")


def test_startup_taints_hold_initialization_until_removed() -> None:
    """Its "should not consider the Node to be initialized when all startupTaints aren't
    removed" and "should consider the Node to be initialized once the startupTaints are
    removed"."""
    world = bench()
    name = launched(world, nodeclaim(requests=REQUESTS, startupTaints=STARTUP_TAINTS))
    node = joined(world, name, allocatable=ALLOCATABLE)
    taints = world.cluster.get("Node", node)["spec"]["taints"]
    assert {t["key"] for t in STARTUP_TAINTS} <= {t["key"] for t in taints}
    assert states(world, name) == ("True", "Unknown")
    set_node(world, node, taints=[])
    assert states(world, name) == ("True", "True")


def test_known_ephemeral_taints_hold_initialization_until_removed() -> None:
    """Its "should not consider the Node to be initialized when all ephemeralTaints aren't
    removed" and "should consider the Node to be initialized once the ephemeralTaints are
    removed" (the startup taints are gone first)."""
    world = bench()
    name = launched(world, nodeclaim(requests=REQUESTS, startupTaints=STARTUP_TAINTS))
    node = joined(world, name, allocatable=ALLOCATABLE, taints=[UNREGISTERED,
                                                                *EPHEMERAL_TAINTS])
    set_node(world, node, taints=EPHEMERAL_TAINTS)
    assert states(world, name) == ("True", "Unknown")
    assert condition_of(get(world, name), "Initialized") == ("Unknown",
                                                             "KnownEphemeralTaintsExist")
    set_node(world, node, taints=[])
    assert states(world, name) == ("True", "True")


def test_a_readiness_taint_holds_initialization_until_removed() -> None:
    """It "should not consider the Node to be initialized while a readiness.k8s.io/ taint
    is present, and initialize once it is removed"."""
    world = bench()
    name = launched(world, nodeclaim(requests=REQUESTS))
    readiness = {"key": "readiness.k8s.io/some-rule", "effect": "NoSchedule"}
    node = joined(world, name, allocatable=ALLOCATABLE, taints=[UNREGISTERED, readiness])
    assert states(world, name) == ("True", "Unknown")
    set_node(world, node, taints=[])
    assert states(world, name) == ("True", "True")
