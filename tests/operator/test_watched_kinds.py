"""The operator caches what its controllers read: a cluster's Deployments, StatefulSets
and ReplicaSets (and CapacityBuffers) only with the CapacityBuffer gate on, as Karpenter
registers the buffer controller, and so its informers, only then."""

from __future__ import annotations

import dataclasses

import pytest

from nodewright.cluster.api import kind_of
from nodewright.cluster.kube.access import CAPACITY_BUFFER_KINDS, WATCHED_KINDS, watched_kinds
from tests.operator.world import FAST_CONTROLLERS, RealTimeWorld


def watched_by(world: RealTimeWorld) -> set[str]:
    """The kinds whose list and watch the operator asked of the API server."""
    return {request.resource for request in world.controller_requests
            if request.verb == "watch"}


@pytest.mark.parametrize("gate", [False, True], ids=["gate-off", "gate-on"])
def test_workloads_are_watched_only_with_the_capacity_buffer_gate(gate: bool) -> None:
    world = RealTimeWorld()
    try:
        world.operator("replica-a", leader_elect=False,
                       options=dataclasses.replace(FAST_CONTROLLERS, capacity_buffer=gate))
        watched = watched_by(world)
    finally:
        world.close()

    buffer_resources = {kind_of(kind).plural for kind in CAPACITY_BUFFER_KINDS}
    assert {"pods", "nodes", "nodeclaims", "nodepools"} <= watched
    if gate:
        assert buffer_resources <= watched
    else:
        assert not buffer_resources & watched


def test_the_gate_adds_exactly_the_buffer_kinds() -> None:
    assert watched_kinds(capacity_buffer=True) == WATCHED_KINDS
    off = watched_kinds(capacity_buffer=False)
    assert set(WATCHED_KINDS) - set(off) == set(CAPACITY_BUFFER_KINDS)
