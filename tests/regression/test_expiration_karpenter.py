"""Karpenter's end-to-end regression suite, test/suites/regression/expiration_test.go
(v1.14.1) Describe("Expiration"), as stories on the in-memory World.

Both Its give the suite's NodePool a disruption block of one budget (no Drifted disruption
at all; the other fields take the CRD's defaults) and an expireAfter of 3 minutes (what
the It uses off kwok: kwok's 30 s would expire our NodeClaim before its simulated node
registers), then set expireAfter to Never once the NodeClaim exists, so the replacement
never expires; the node this drifts stays, held by the budget, until it expires. Once a
replacement node exists the NodePool's CPU limit goes to 0, so nothing more launches.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from nodewright.cluster import objects
from nodewright.runtime.clock import parse_time
from tests.controllers.expectations import expect_no_controller_errors
from tests.harness import NODE_CLASS, World
from tests.regression.suite import deployment, exists, healthy, suite_pool

MY_APP = {"app": "my-app"}


def expiring_pool(expire_after: str = "3m", limits: dict[str, str] | None = None
                  ) -> dict[str, Any]:
    body = suite_pool(expireAfter=expire_after)
    body["spec"]["disruption"] = {"budgets": [{"nodes": "0", "reasons": ["Drifted"]}]}
    if limits is not None:
        body["spec"]["limits"] = limits
    return body


def expect_expired_and_replaced(world: World, replicas: int) -> None:
    assert world.run_until(lambda: len(world.nodeclaims()) == 1, timeout=60)
    (claim,) = world.nodeclaims()
    world.apply(expiring_pool("Never"))
    assert world.run_until(lambda: len(healthy(world, MY_APP)) == replicas, timeout=600)
    (node,) = world.nodes()
    at_reset = {objects.name(node)}

    # The Monitor's reset: a node created since is the replacement.
    def created() -> list[str]:
        return [objects.name(n) for n in world.nodes() if objects.name(n) not in at_reset]

    assert world.run_until(lambda: len(created()) == 1, timeout=600)
    # Replaced because it expired: not before its three minutes.
    born = parse_time(objects.meta(claim)["creationTimestamp"])
    assert world.clock.now() - born >= timedelta(minutes=3)
    world.apply(expiring_pool("Never", limits={"cpu": "0"}))
    assert world.run_until(lambda: not exists(world, "NodeClaim", objects.name(claim))
                           and not exists(world, "Node", objects.name(node)), timeout=600)
    assert world.run_until(lambda: len(healthy(world, MY_APP)) == replicas, timeout=600)
    assert len(world.nodeclaims()) == 1
    assert len(created()) == 1 and len(world.nodes()) == 1
    assert all(p["spec"]["nodeName"] == created()[0] for p in healthy(world, MY_APP))
    expect_no_controller_errors(world)


def test_a_node_expires() -> None:
    """expiration_test.go It("should expire the node after the expiration is reached")."""
    world = World()
    world.apply(NODE_CLASS, expiring_pool(), deployment("my-app", labels=MY_APP, grace=0))
    expect_expired_and_replaced(world, 1)


def test_an_expired_node_is_replaced_by_a_single_node() -> None:
    """expiration_test.go It("should replace expired node with a single node and schedule
    all pods"): five pods behind a PodDisruptionBudget of minAvailable 4."""
    world = World()
    pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
           "metadata": {"name": "my-app", "namespace": "default"},
           "spec": {"minAvailable": 4, "selector": {"matchLabels": MY_APP}}}
    world.apply(NODE_CLASS, expiring_pool(), pdb,
                deployment("my-app", 5, labels=MY_APP, grace=0))
    expect_expired_and_replaced(world, 5)
