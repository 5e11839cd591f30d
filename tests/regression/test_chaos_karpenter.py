"""Karpenter's end-to-end regression suite, test/suites/regression/chaos_test.go (v1.14.1)
Describe("Chaos") Describe("Runaway Scale-Up"), as stories on the in-memory World.

Karpenter's test starts a controller of its own that puts a `test=true:NoExecute` taint on
every node of the pool once it exists; kube-controller-manager's taint eviction then
deletes the one pod, which goes pending again, and so on. The in-memory world runs no
taint eviction, so `Tainter` plays both: it taints each new node of the pool and deletes
the pods on it that do not tolerate the taint. Over five minutes the pool must never
reach 35 nodes (Karpenter's bound): consolidation, or emptiness, has to take the tainted
empty nodes away while new ones are launched for the evicted pod.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import pytest

from nodewright.cluster import objects
from nodewright.cluster.api import NotFoundError
from nodewright.controllers.driver import VirtualDriver
from nodewright.runtime.reconciler import Result, Watch
from nodewright.scheduling.pods import Taint, Toleration, untolerated
from tests.controllers.expectations import expect_no_controller_errors
from tests.harness import NODE_CLASS, World
from tests.regression.suite import deployment, suite_pool

CHAOS_TAINT = {"key": "test", "value": "true", "effect": "NoExecute"}
TAINT = Taint("test", "true", "NoExecute")
RUNAWAY = 35


class Tainter:
    """Karpenter's taintAdder with the taint eviction it relies on."""

    name = "chaos.tainter"

    def __init__(self, world: World) -> None:
        self.cluster = world.cluster

    @property
    def watches(self) -> Sequence[Watch]:
        return (Watch("Node"),)

    def reconcile(self, key: str) -> Result:
        try:
            node = self.cluster.get("Node", key)
        except NotFoundError:
            return Result()
        if "karpenter.sh/nodepool" not in objects.labels(node):
            return Result()
        taints = list((node.get("spec") or {}).get("taints") or [])
        if CHAOS_TAINT not in taints:
            self.cluster.patch("Node", key, {"spec": {"taints": [*taints, CHAOS_TAINT]}})
        for pod in self.cluster.list("Pod", None):
            if (pod.get("spec") or {}).get("nodeName") != key or objects.is_deleting(pod):
                continue
            tolerations = [_toleration(t) for t in (pod["spec"].get("tolerations") or [])]
            if untolerated([TAINT], tolerations) is not None:
                self.cluster.delete("Pod", objects.name(pod), objects.namespace(pod))
        return Result()


def _toleration(raw: dict[str, Any]) -> Toleration:
    return Toleration(str(raw.get("key") or ""), str(raw.get("operator") or "Equal"),
                      str(raw.get("value") or ""), str(raw.get("effect") or ""))


def run_chaos(pool: dict[str, Any]) -> set[str]:
    """Five minutes of chaos, never 35 nodes; the names of every NodeClaim seen."""
    world = World()
    chaos = VirtualDriver(world.clock, world.cluster)
    chaos.add(Tainter(world))
    chaos.start()
    world.apply(NODE_CLASS, pool, deployment("my-app", grace=0))
    seen: set[str] = set()
    end = world.clock.now() + timedelta(minutes=5)
    while world.clock.now() < end:
        world.advance(5)
        count = len(world.nodes())
        assert count < RUNAWAY, f"{count} nodes at {world.clock.now()}"
        seen |= {objects.name(c) for c in world.nodeclaims()}
    expect_no_controller_errors(world)
    return seen


@pytest.mark.parametrize("disruption", [
    pytest.param({"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "0s"},
                 id="should not produce a runaway scale-up when consolidation is enabled"),
    pytest.param({"consolidationPolicy": "WhenEmpty", "consolidateAfter": "30s"},
                 id="should not produce a runaway scale-up when emptiness is enabled"),
])
def test_no_runaway_scale_up(disruption: dict[str, Any]) -> None:
    """chaos_test.go Describe("Runaway Scale-Up"): each It (the id) under the taint
    chaos; with consolidation the pool is spot only, as there."""
    spot = disruption["consolidationPolicy"] == "WhenEmptyOrUnderutilized"
    pool = suite_pool(disruption=disruption,
                      capacity_types=("spot",) if spot else ("on-demand",))
    launched = run_chaos(pool)
    # The chaos does bite: node after node is launched for the pod and tainted.
    assert len(launched) >= 3, launched
