"""Initialization of a registered NodeClaim whose provider ID two Nodes carry.

Karpenter v1.14.1 pkg/controllers/nodeclaim/lifecycle/initialization.go lines 65-69: the
Node comes from `NodeForNodeClaim`, and any error it returns, the DuplicateNodeError of a
second Node with the same provider ID included, leaves Initialized Unknown with reason
NodeNotFound. Neither Node is labelled karpenter.sh/initialized: which of the two is the
NodeClaim's is not known.
"""

from __future__ import annotations

from tests.controllers.nodeclaim_bench import bench, condition_of, get, nodeclaim
from tests.controllers.test_nodeclaim_initialization_karpenter import (
    ALLOCATABLE,
    REQUESTS,
    joined,
    launched,
    linked_node_body,
    states,
)


def test_a_second_node_with_the_same_provider_id_holds_initialization() -> None:
    world = bench()
    name = launched(world, nodeclaim(requests=REQUESTS))
    # Its Node registers but is not Ready yet.
    first = joined(world, name, allocatable=ALLOCATABLE, ready=False)
    assert states(world, name) == ("True", "Unknown")

    # A second Node with the same provider ID appears.
    claim = get(world, name)
    assert claim is not None
    world.cluster.create({**linked_node_body(world, claim), "metadata": {"name": "impostor"}})
    # Then the first turns Ready too: each of them would pass every check on its own.
    current = world.cluster.get("Node", first)
    ready = [{**c, "status": "True", "reason": "KubeletReady"} if c["type"] == "Ready" else c
             for c in current["status"]["conditions"]]
    world.cluster.patch("Node", first, {"status": {"conditions": ready}},
                        subresource="status")
    world.advance(5)

    assert states(world, name) == ("True", "Unknown")
    assert condition_of(get(world, name), "Initialized") == ("Unknown", "NodeNotFound")
    for node in (first, "impostor"):
        labels = world.cluster.get("Node", node)["metadata"].get("labels") or {}
        assert "karpenter.sh/initialized" not in labels
