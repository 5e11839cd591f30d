"""What consolidationPolicy Balanced measures a move against: the NodePool's totals as
Karpenter v1.14.1 computes them (pkg/controllers/disruption/balanced.go
computeNodePoolTotals, helpers.go GetCandidatesWithTotals). The pool's price is the cost
tracker's count of its NodeClaims (pkg/state/cost, fed by the state.cost controllers and
refreshed by the hourly pricing pass), the candidates' prices only while the tracker
counts nothing; its disruption cost adds up every node of the pool, a candidate by the
pods that would move, any other node by all its pods (StateNode.DisruptionCost)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from nodewright.cluster import objects
from nodewright.controllers.common import decision_log as ex
from nodewright.controllers.disruption.balanced import node_disruption_cost, pool_totals
from nodewright.controllers.nodepool.cost import nodepool_instance_types
from nodewright.state.statenode import StateNode
from tests.disruption.balanced_fixtures import candidate, nodepool, pod, priced, totals
from tests.disruption.helpers import decisions
from tests.disruption.test_balanced_karpenter_stories import (
    approvals,
    consolidated,
    oversized_nodes,
)
from tests.harness import World

XLARGE = priced("m7i.xlarge", 4.84)


def test_the_pool_costs_what_the_cost_tracker_counts() -> None:
    """computeNodePoolTotals: "TotalCost is read from ClusterCost ... when available"."""
    pool = nodepool("pool-a")
    members = [candidate(f"node-{i}", pool, XLARGE, [pod("pod")]) for i in range(5)]
    found = totals(members, nodepool_cost=lambda name: 100.0 if name == "pool-a" else 0.0)
    assert found["pool-a"].cost == 100.0
    assert found["pool-a"].disruption_cost == pytest.approx(10.0)


def test_while_the_tracker_counts_nothing_the_candidates_prices_add_up() -> None:
    """computeNodePoolTotals: "... falling back to summing candidate prices" (the
    tracker's 0 for a NodePool it does not count yet)."""
    pool = nodepool("pool-a")
    members = [candidate(f"node-{i}", pool, XLARGE, [pod("pod")]) for i in range(3)]
    assert totals(members, nodepool_cost=lambda name: 0.0)["pool-a"].cost == \
        pytest.approx(3 * 4.84)


def daemon_pod(name: str) -> dict[str, Any]:
    body = pod(name)
    body["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "controller": True}]
    return body


def test_a_node_that_is_no_candidate_counts_every_pod_it_runs() -> None:
    """computeNodePoolTotals, second pass over ALL nodes: a node that is no candidate
    (here one not initialized) adds StateNode.DisruptionCost, 1 plus the positive eviction
    cost of each pod that is neither a DaemonSet's nor finished; a node of a pool that is
    not Balanced adds nothing to the Balanced pool."""
    pool = nodepool("pool-a")
    member = candidate("node-0", pool, XLARGE, [pod("moving")])
    other = StateNode("fake:///test-zone-1/node-1")
    other.node = {"metadata": {"name": "node-1", "labels": {"karpenter.sh/nodepool": "pool-a"}},
                  "spec": {"providerID": "fake:///test-zone-1/node-1"}}
    elsewhere = StateNode("fake:///test-zone-1/node-2")
    elsewhere.node = {"metadata": {"name": "node-2", "labels": {"karpenter.sh/nodepool": "b"}},
                      "spec": {"providerID": "fake:///test-zone-1/node-2"}}
    finished = pod("done")
    finished["status"]["phase"] = "Succeeded"
    pods_on = {"node-0": [pod("moving")],
               "node-1": [pod("app"), pod("dear", "268435456"), daemon_pod("agent"),
                          finished, pod("cheap", "-1073741824")],
               "node-2": [pod("far")]}
    found = pool_totals([member], [member.node, other, elsewhere], None,
                        lambda name: pods_on[name])
    # node-0: 1 + 1; node-1: 1 + 1 (app) + 3 (deletion cost 2^28 / 2^27 + 1) + 0 (cheap).
    assert node_disruption_cost(pods_on["node-1"]) == pytest.approx(5.0)
    assert found["pool-a"].disruption_cost == pytest.approx(2.0 + 5.0)
    assert set(found) == {"pool-a"}


def priced_at(world: World, pool: str, factor: float) -> None:
    """The pricing pass found the NodePool's offerings `factor` times their price."""
    state = world.controllers.state
    types = nodepool_instance_types(state, world.cloud, pool)
    state.cost.update_offerings(pool, [
        replace(it, offerings=tuple(replace(o, price=o.price * factor)
                                    for o in it.offerings)) for it in types])


def test_a_replacement_is_judged_against_the_price_the_tracker_counts(world: World) -> None:
    """An m5.2xlarge left running one small pod is worth replacing against its own price
    (balanced_integration_test.go "should approve replacing an oversized node"). While the
    cost tracker counts the pool at twice that (a pricing pass saw higher prices), the
    same saving is a smaller part of the pool and the move is refused; once the hourly
    pricing pass counts the real prices again, it is approved and made."""
    [original] = oversized_nodes(world, 1)
    counted = world.controllers.state.cost.nodepool_cost("default")
    assert counted > 0
    priced_at(world, "default", 2.0)
    assert world.controllers.state.cost.nodepool_cost("default") == pytest.approx(2 * counted)
    world.advance(600)
    assert [objects.name(n) for n in world.nodes()] == [original]
    assert consolidated(world) == [] and approvals(world) == []
    refused = [d for d in decisions(world, original) if d.cause == ex.CAUSE_BALANCED]
    assert refused and "< threshold 0.50" in refused[-1].message, refused
    assert world.run_until(lambda: bool(consolidated(world)), timeout=3600)
    assert world.settle()
    assert [objects.name(n) for n in world.nodes()] != [original]
    assert any(">= threshold 0.50" in note for note in approvals(world))
