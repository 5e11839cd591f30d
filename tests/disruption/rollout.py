"""A drift roll-out to measure: a fleet of one-pod nodes whose NodePool template changes, and
what Karpenter's loop and orchestration queue would take to replace it (the test of
disruption in parallel and bench/drift_rollout.py share them)."""

from __future__ import annotations

import math
from typing import Any

from nodewright.cloud.sim.settings import SimSettings
from nodewright.cluster import objects
from tests.controllers.conftest import WORKSHOP
from tests.disruption.helpers import BIG, nodepool_with
from tests.harness import World

# Karpenter's disruption loop: the wait after a pass that started nothing.
KARPENTER_POLL_SECONDS = 10.0


def karpenter_roll_out_seconds(nodes: int, share: float, settings: SimSettings) -> float:
    """What Karpenter's loop and queue take to roll out `nodes` drifted nodes with room for
    `share` of them at a time: ceil(nodes / room) waves, each a replacement's launch,
    registration and startup taints, and at most one poll before the freed room is used
    (the drain of one pod with no grace period takes no time here)."""
    room = math.ceil(nodes * share)
    wave = (settings.launch_delay + settings.registration_delay
            + (settings.startup_taint_delay or 0.0) + KARPENTER_POLL_SECONDS)
    return math.ceil(nodes / room) * wave


def unlimited(nodepool: dict[str, Any]) -> dict[str, Any]:
    """The NodePool without limits (the workshop's 1000Gi would stop at about 250 nodes)."""
    nodepool["spec"].pop("limits", None)
    return nodepool


def drifted_fleet(world: World, nodes: int, budget: str) -> set[str]:
    """`nodes` nodes of one pod each, then a NodePool template change that drifts them all;
    the original NodeClaims' names."""
    disruption = {"budgets": [{"nodes": budget, "reasons": ["Drifted"]}]}
    world.apply(WORKSHOP, unlimited(nodepool_with(disruption=disruption)), BIG % nodes)
    assert world.settle(timeout=4 * 3600)
    originals = {objects.name(c) for c in world.nodeclaims()}
    assert len(originals) == nodes, f"{len(originals)} nodes came up for {nodes} pods"
    world.apply(unlimited(nodepool_with(disruption=disruption,
                                        labels={"type": "karpenter", "team": "payments"})))
    return originals


