"""Karpenter v1.14.1 pkg/controllers/disruption/balanced_test.go,
balanced_scoring_test.go and balanced_adversarial_test.go: consolidationPolicy Balanced's
score (savings fraction over disruption fraction, approved at 1/k), the NodePool totals it
is measured against, the savings ratio consolidation sorts by, and the events it tells.
Karpenter's ScoreMove is `score_move` (None where Karpenter returns its zero result),
computeNodePoolTotals `pool_totals`, EvaluateBalancedMove `approve`, sortCandidates
`consolidation_order`, EmitMultiNodeEvents `approved_events`."""

from __future__ import annotations

import math

import pytest

from nodewright.controllers.common import decision_log as ex
from nodewright.controllers.disruption.balanced import (
    BALANCED_K,
    PoolTotals,
    Score,
    approve,
    approved_events,
    is_balanced,
    score_move,
)
from nodewright.controllers.disruption.candidates import consolidation_order, offering_price
from nodewright.controllers.disruption.commands import Command, narrow
from nodewright.scheduling.requirements import Requirement, Requirements
from nodewright.scheduling.targets import PlannedNodeClaim
from tests.disruption.balanced_fixtures import (
    ON_DEMAND,
    ZONE,
    candidate,
    instance_type,
    nodepool,
    pod,
    pods,
    priced,
    totals,
)

# The RFC's pool: eight m7i.xlarge ($4.84/day) and two m7i.2xlarge ($9.68/day), 80 pods:
# disruption 10 nodes x 1.0 + 80 pods x 1.0.
DEFAULT = PoolTotals(58.08, 90.0)


def expected(savings: float, cost: float, pool: PoolTotals) -> float:
    return (savings / pool.cost) / (cost / pool.disruption_cost)


def scored(savings: float, cost: float, pool: PoolTotals = DEFAULT, k: int = BALANCED_K
           ) -> Score:
    result = score_move(savings, cost, pool, k)
    assert result is not None
    return result


# -- balanced_test.go: Describe("ScoreMove") ---------------------------------------------

def test_an_oversized_node_is_approved() -> None:
    """balanced_test.go ScoreMove: It("should approve an oversized node consolidation")."""
    result = scored(7.26, 4.0)
    assert result.approved
    assert result.value == pytest.approx(expected(7.26, 4.0, DEFAULT), abs=0.02)
    assert result.savings_fraction == pytest.approx(7.26 / 58.08, abs=0.001)
    assert result.disruption_fraction == pytest.approx(4.0 / 90, abs=0.001)


def test_a_spare_capacity_delete_is_approved() -> None:
    """balanced_test.go ScoreMove: It("should approve a spare capacity delete")."""
    result = scored(4.84, 5.0)
    assert result.approved
    assert result.value == pytest.approx(expected(4.84, 5.0, DEFAULT), abs=0.02)


def test_a_marginal_move_is_rejected() -> None:
    """balanced_test.go ScoreMove: It("should reject a marginal move")."""
    result = scored(2.42, 9.0)
    assert not result.approved
    assert result.value == pytest.approx(expected(2.42, 9.0, DEFAULT), abs=0.01)


def test_a_well_packed_node_saving_nothing_is_rejected() -> None:
    """balanced_test.go ScoreMove: It("should reject a well-packed node with zero
    savings")."""
    result = scored(0.0, 11.0)
    assert not result.approved and result.value == 0


def test_a_replace_in_a_uniform_pool_is_approved() -> None:
    """balanced_test.go ScoreMove: It("should approve a replace in a uniform pool")."""
    uniform = PoolTotals(48.40, 90.0)
    result = scored(2.42, 9.0, uniform)
    assert result.approved
    assert result.value == pytest.approx(expected(2.42, 9.0, uniform), abs=0.01)


def test_low_disruption_nodes_pass_where_high_disruption_nodes_do_not() -> None:
    """balanced_test.go ScoreMove: It("should approve low-disruption nodes and reject
    high-disruption nodes")."""
    varied = PoolTotals(58.08, 117.0)
    light, heavy = scored(4.84, 5.0, varied), scored(4.84, 32.0, varied)
    assert light.approved and not heavy.approved
    assert light.value == pytest.approx(expected(4.84, 5.0, varied), abs=0.02)
    assert heavy.value == pytest.approx(expected(4.84, 32.0, varied), abs=0.01)


def test_the_score_does_not_depend_on_the_pool_size() -> None:
    """balanced_test.go ScoreMove: It("should produce the same score regardless of pool
    size")."""
    ten, hundred = scored(7.26, 4.0), scored(7.26, 4.0, PoolTotals(580.80, 900.0))
    assert ten.value == pytest.approx(hundred.value, abs=0.01)
    assert ten.value == pytest.approx(expected(7.26, 4.0, DEFAULT), abs=0.02)


def test_a_move_disrupting_nothing_scores_infinity() -> None:
    """balanced_test.go ScoreMove: It("should approve with +Inf score when move disruption
    is zero and savings positive") and It("should approve when move disruption is zero
    (division by zero guard)")."""
    result = scored(4.84, 0.0)
    assert result.approved and math.isinf(result.value) and result.value > 0


def test_a_move_saving_and_disrupting_nothing_is_rejected() -> None:
    """balanced_test.go ScoreMove: It("should reject when both savings and disruption are
    zero")."""
    assert not scored(0.0, 0.0).approved


def test_a_pool_that_costs_nothing_rejects() -> None:
    """balanced_test.go ScoreMove: It("should reject when nodepool cost is zero"): nothing
    to measure by; a move of such a pool scores zero."""
    assert score_move(4.84, 5.0, PoolTotals(0.0, 90.0)) is None
    pool = nodepool("free")
    approved, scores = approve([candidate("a", pool, None, [pod("p")])], 4.84,
                               {"free": PoolTotals(0.0, 90.0)})
    assert not approved and scores["free"].value == 0


@pytest.mark.parametrize(("k", "approved"), [
    pytest.param(2, False, id='It("should reject at k=2 for a marginal move")'),
    pytest.param(3, True, id='It("should approve at k=3 for the same move")'),
    pytest.param(1, False, id='It("should reject at k=1 for the same move")'),
])
def test_the_threshold_is_one_over_k(k: int, approved: bool) -> None:
    """balanced_test.go ScoreMove, Context("consolidation threshold tuning"): the three
    Its. Balanced's k is 2; the score takes any."""
    result = scored(2.42, 9.0, k=k)
    assert result.approved is approved
    assert result.threshold == pytest.approx(1 / k)


def test_proportional_moves_of_two_pools_score_alike() -> None:
    """balanced_test.go ScoreMove: It("should produce identical scores for proportionally
    equivalent moves")."""
    on_demand = scored(4.84, 4.0, PoolTotals(48.40, 90.0))
    spot = scored(1.45, 4.0, PoolTotals(14.50, 90.0))
    assert on_demand.value == pytest.approx(spot.value, abs=0.01)
    assert on_demand.approved and spot.approved


@pytest.mark.parametrize(("policy", "balanced"), [
    pytest.param("Balanced", True, id='It("should be true for Balanced policy")'),
    pytest.param("WhenEmptyOrUnderutilized", False,
                 id='It("should be false for WhenEmptyOrUnderutilized policy")'),
    pytest.param("WhenEmpty", False, id='It("should be false for WhenEmpty policy")'),
])
def test_which_policy_is_balanced(policy: str, balanced: bool) -> None:
    """balanced_test.go Describe("ConsolidationPolicy.IsBalanced"): its three Its."""
    assert is_balanced(nodepool("p", policy)) is balanced


# -- balanced_scoring_test.go ------------------------------------------------------------

XLARGE = priced("m7i.xlarge", 4.84)


def test_totals_count_every_node_of_the_pool() -> None:
    """balanced_scoring_test.go computeNodePoolTotals: It("should produce totals from ALL
    candidates, not just a filtered subset")."""
    pool = nodepool("pool-a")
    found = totals(candidate(f"node-{i}", pool, XLARGE, [pod("pod")]) for i in range(5))
    assert found["pool-a"].cost == pytest.approx(5 * 4.84, abs=0.01)
    assert found["pool-a"].disruption_cost == pytest.approx(10.0)


def test_a_node_without_a_price_still_counts_its_disruption() -> None:
    """balanced_scoring_test.go computeNodePoolTotals: It("should accumulate disruption
    from zero-priced candidates")."""
    pool = nodepool("pool-b")
    found = totals([candidate("good-1", pool, XLARGE, [pod("pod")]),
                    candidate("nil", pool, None, [pod("pod")]),
                    candidate("good-2", pool, XLARGE, [pod("pod")])])
    assert found["pool-b"].cost == pytest.approx(2 * 4.84, abs=0.01)
    assert found["pool-b"].disruption_cost == pytest.approx(6.0)


def test_a_move_of_nothing_is_rejected() -> None:
    """balanced_scoring_test.go EvaluateBalancedMove: It("should reject when command has
    zero candidates")."""
    assert approve([], 1.0, {"pool-a": PoolTotals(100.0, 50.0)}) == (False, {})


def test_other_policies_are_not_scored() -> None:
    """balanced_scoring_test.go EvaluateBalancedMove: It("should skip non-Balanced pools
    and approve unconditionally")."""
    pool = nodepool("pool-nobalanced", "WhenEmptyOrUnderutilized")
    members = [candidate(f"node-{i}", pool, XLARGE, [pod("pod")]) for i in range(5)]
    approved, scores = approve(members[:2], 0.01, totals(members))
    assert approved and "pool-nobalanced" not in scores


def test_a_pool_missing_from_the_totals_rejects() -> None:
    """balanced_scoring_test.go EvaluateBalancedMove: It("should reject when candidate
    NodePool is missing from totals map")."""
    pool = nodepool("pool-missing")
    approved, scores = approve([candidate("node-0", pool, XLARGE, [pod("pod")])], 4.84, {})
    assert not approved
    assert scores["pool-missing"].value == 0 and not scores["pool-missing"].approved


def test_deleting_one_of_ten_like_nodes_scores_one() -> None:
    """balanced_scoring_test.go EvaluateBalancedMove: It("should approve a delete command
    for a single Balanced NodePool")."""
    pool = nodepool("pool-single")
    members = [candidate(f"node-{i}", pool, XLARGE, [pod("pod")]) for i in range(10)]
    approved, scores = approve(members[:1], members[0].price, totals(members))
    assert approved and scores["pool-single"].value == pytest.approx(1.0, abs=0.05)


def test_a_move_across_pools_scores_the_balanced_pool_on_its_share() -> None:
    """balanced_scoring_test.go EvaluateBalancedMove: It("should attribute savings
    proportionally in cross-NodePool scenarios")."""
    balanced_pool, other = nodepool("pool-balanced"), nodepool("pool-empty",
                                                               "WhenEmptyOrUnderutilized")
    ours = [candidate(f"b-{i}", balanced_pool, XLARGE, [pod("pod")]) for i in range(5)]
    theirs = [candidate(f"e-{i}", other, XLARGE, [pod("pod")]) for i in range(5)]
    move = [ours[0], theirs[0]]
    approved, scores = approve(move, sum(c.price for c in move), totals(ours + theirs))
    assert approved and set(scores) == {"pool-balanced"}
    assert scores["pool-balanced"].value == pytest.approx(1.0, abs=0.05)


def test_every_balanced_pool_must_approve() -> None:
    """balanced_scoring_test.go EvaluateBalancedMove, Context("AllPoolsMustApprove"):
    It("should reject when any Balanced pool rejects"). Karpenter's It computes both pools'
    scores and asserts nothing of them (with its numbers pool B sits just over the
    threshold); here pool B's heavy node is a quarter of its pool's price, so pool B
    rejects, and the move is refused although pool A approves."""
    pool_a, pool_b = nodepool("pool-a"), nodepool("pool-b")
    a = [candidate(f"a-{i}", pool_a, XLARGE, [pod(f"a-pod-{i}")]) for i in range(10)]
    b = [candidate("b-0", pool_b, priced("tiny", 1.0), pods("heavy", 20)),
         candidate("b-1", pool_b, priced("big", 3.0), [pod("light")])]
    move = [a[0], b[0]]
    approved, scores = approve(move, sum(c.price for c in move), totals(a + b))
    assert scores["pool-a"].approved and not scores["pool-b"].approved
    assert not approved


def test_a_node_of_no_known_type_costs_nothing() -> None:
    """balanced_scoring_test.go sumCandidatePrices: It("should return 0 for nil
    instanceType") and It("should return the offering price for a valid instanceType")."""
    pool = nodepool("pool")
    assert candidate("node", pool, None).price == 0.0
    assert candidate("node2", pool, XLARGE).price == pytest.approx(4.84, abs=0.001)


def test_the_savings_ratio_is_price_over_one_plus_the_moving_pods() -> None:
    """balanced_scoring_test.go Candidate.SavingsRatio: It("should compute expected ratios
    for different configurations")."""
    pool = nodepool("pool")
    assert candidate("node", pool, XLARGE).savings_ratio == pytest.approx(4.84, abs=0.01)
    three = pods("p", 3)
    assert candidate("node2", pool, XLARGE, three).savings_ratio == pytest.approx(1.21, abs=0.01)
    assert candidate("node3", pool, None, three).savings_ratio == 0.0


@pytest.mark.parametrize(("savings", "cost", "score", "approved"), [
    pytest.param(20.0, 5.0, 4.0, True, id="high savings low disruption"),
    pytest.param(10.0, 10.0, 1.0, True, id="equal fractions"),
    pytest.param(5.0, 50.0, 0.10, False, id="low savings high disruption"),
    pytest.param(10.0, 0.0, math.inf, True, id="zero disruption cost"),
    pytest.param(0.0, 10.0, 0.0, False, id="zero savings"),
    pytest.param(-5.0, 10.0, 0.0, False, id="negative savings"),
])
def test_scores_against_a_hundred_and_a_hundred(savings: float, cost: float, score: float,
                                                approved: bool) -> None:
    """balanced_scoring_test.go ScoreMove (SavingsRatio): DescribeTable("should compute
    correct scores"), its six Entries."""
    result = scored(savings, cost, PoolTotals(100.0, 100.0))
    assert result.value == pytest.approx(score, abs=0.01)
    assert result.approved is approved


def test_an_on_demand_pool_saves_only_what_an_on_demand_replacement_saves() -> None:
    """balanced_scoring_test.go ScoreMove (SavingsRatio): It("should REJECT a move when
    EstimatedSavings excludes spot offerings for an on-demand-only NodePool"): the
    replacement's $0.10 spot offering would flip the gate; its $0.40 on-demand one counts."""
    pool = nodepool("pool-onDemand-only")
    source = candidate("source-node", pool, priced("source-type", 0.50), pods("p", 3))
    dest = instance_type("dest-type", (0.10, ZONE, "spot", True), (0.40, ZONE, ON_DEMAND, True))
    claim = PlannedNodeClaim(
        name="replacement", nodepool=pool.name, instance_types=(("dest-type", 0.10),),
        capacity_type="spot", zone=None, price=0.10, pods=(),
        requirements=Requirements([Requirement.single("karpenter.sh/capacity-type",
                                                      ON_DEMAND)]))
    narrowed = narrow(claim, {"dest-type": dest}, max_price=source.price, capacity_type=None)
    assert not isinstance(narrowed, str)
    command = Command(ex.SINGLE_NODE, "Underutilized", "single", [source], [narrowed])
    assert command.savings == pytest.approx(0.10, abs=0.001)
    result = score_move(command.savings, source.reschedule_disruption_cost,
                        PoolTotals(1.0, 10.0))
    assert result is not None and not result.approved


def test_balanced_nodes_are_ranked_by_savings_ratio_not_eviction_cost() -> None:
    """balanced_scoring_test.go sortCandidates: It("should sort Balanced candidates by
    savings ratio (highest first)"): the eviction-cost-and-lifetime disruption cost plays
    no part."""
    pool = nodepool("balanced")
    a = candidate("node-a", pool, priced("expensive", 10.0), [pod("pod-a")])
    a.disruption_cost = 100.0
    b = candidate("node-b", pool, priced("cheap", 1.0), pods("pod-b", 8))
    b.disruption_cost = 1.0
    c = candidate("node-c", pool, priced("medium", 5.0), pods("pod-c", 3))
    c.disruption_cost = 50.0
    assert [x.name for x in consolidation_order([b, c, a])] == ["node-a", "node-c", "node-b"]


def test_other_nodes_are_ranked_by_savings_ratio_too() -> None:
    """balanced_scoring_test.go sortCandidates: It("should sort non-Balanced candidates by
    savings ratio descending")."""
    pool = nodepool("default", "WhenEmptyOrUnderutilized")
    a = candidate("node-a", pool, priced("type-a", 4.84), pods("pa", 9))  # 4.84 / 10
    b = candidate("node-b", pool, priced("type-b", 4.84))  # 4.84 / 1
    c = candidate("node-c", pool, priced("type-c", 4.84), pods("pc", 4))  # 4.84 / 5
    assert [x.name for x in consolidation_order([a, b, c])] == ["node-b", "node-c", "node-a"]


def test_pools_of_both_policies_share_one_ranking() -> None:
    """balanced_scoring_test.go sortCandidates: It("should sort all candidates by savings
    ratio when any uses Balanced")."""
    rich = candidate("node-balanced", nodepool("balanced"), priced("expensive", 10.0),
                     [pod("p1")])
    poor = candidate("node-default", nodepool("default", "WhenEmptyOrUnderutilized"),
                     priced("cheap", 1.0), [pod("p2")])
    assert consolidation_order([poor, rich])[0] is rich


def _nodepool_object(name: str) -> dict[str, object]:
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
            "metadata": {"name": name, "uid": f"uid-{name}"}}


def test_an_approved_multi_node_move_is_told_on_its_nodepool() -> None:
    """balanced_scoring_test.go EmitBalancedMultiNodeEvents: It("should emit approved event
    for approved pool results")."""
    pool = nodepool("pool-emit-a")
    move = [candidate(f"emit-node-{i}", pool, XLARGE, [pod("pod")]) for i in range(2)]
    events = approved_events(move, {"pool-emit-a": Score(0.15, 0.10)}, _nodepool_object)
    assert [(e.reason, e.regarding["metadata"]["name"]) for e in events] == [
        (ex.CONSOLIDATION_APPROVED, "pool-emit-a")]


def test_a_rejected_score_is_not_told() -> None:
    """balanced_scoring_test.go EmitBalancedMultiNodeEvents: It("should not emit events for
    rejected pool results")."""
    move = [candidate("emit-node-0", nodepool("pool-emit-b"), XLARGE, [pod("pod", "1000")])]
    assert approved_events(move, {"pool-emit-b": Score(0.03, 0.10, 1)}, _nodepool_object) == []


def test_a_pool_without_a_score_is_not_told() -> None:
    """balanced_scoring_test.go EmitBalancedMultiNodeEvents: It("should skip pools missing
    from perPoolResults")."""
    move = [candidate("emit-node-0", nodepool("pool-a-emit"), XLARGE),
            candidate("emit-node-1", nodepool("pool-b-emit"), XLARGE)]
    events = approved_events(move, {"pool-a-emit": Score(0.10, 0.05)}, _nodepool_object)
    assert len(events) == 1


# -- balanced_adversarial_test.go --------------------------------------------------------

def test_a_nan_price_does_not_poison_the_totals() -> None:
    """balanced_adversarial_test.go: It("should not allow NaN price to poison NodePool
    totals")."""
    pool = nodepool("pool-nan")
    found = totals([candidate("good-1", pool, XLARGE, [pod("pod")]),
                    candidate("nan", pool, priced("nan-instance", math.nan), [pod("pod")]),
                    candidate("good-2", pool, XLARGE, [pod("pod")])])
    assert not math.isnan(found["pool-nan"].cost)
    assert not math.isnan(scored(4.84, 2.0, found["pool-nan"]).value)


def test_every_balanced_pool_of_a_move_gets_its_score() -> None:
    """balanced_adversarial_test.go: It("should populate perPool entries for all pools even
    on early return"): pool A rejects, and pool B is scored all the same, with k set."""
    pool_a, pool_b = nodepool("pool-a"), nodepool("pool-b")
    a = [candidate("a-0", pool_a, priced("a-type", 1.0), pods("heavy", 20, "1000")),
         candidate("a-1", pool_a, priced("a-type", 1.0), [pod("light")])]
    b = [candidate(f"b-{i}", pool_b, priced("b-type", 1.0), [pod("p")]) for i in range(10)]
    move = [a[0], b[0]]
    _, scores = approve(move, sum(c.price for c in move), totals(a + b))
    assert set(scores) == {"pool-a", "pool-b"}
    assert all(score.k == BALANCED_K for score in scores.values())


def test_a_nodeless_type_adds_nothing_to_the_source_price() -> None:
    """balanced_adversarial_test.go: It("should sum candidate costs correctly with nil
    instanceType")."""
    pool = nodepool("pool-mixed")
    move = [candidate("good-1", pool, XLARGE, [pod("pod")]),
            candidate("nil", pool, None, [pod("pod")]),
            candidate("good-2", pool, XLARGE, [pod("pod")])]
    assert Command(ex.MULTI_NODE, "Underutilized", "multi", move).source_price == \
        pytest.approx(9.68, abs=0.01)


def test_a_running_node_is_priced_at_its_offering_even_when_unavailable() -> None:
    """balanced_adversarial_test.go: It("should use source pricing that ignores
    availability")."""
    source = instance_type("source-type", (1.00, ZONE, ON_DEMAND, False),
                           (5.00, "test-zone-2", ON_DEMAND, True))
    assert offering_price(source, ZONE, ON_DEMAND) == 1.00
    assert candidate("node-src", nodepool("pool-avail"), source, [pod("pod")]).price == 1.00


def test_deleting_the_only_node_of_a_pool_is_approved() -> None:
    """balanced_adversarial_test.go: It("should approve single-node pool DELETE with
    expected scoring")."""
    only = candidate("only-node", nodepool("pool-single"), XLARGE, [pod("pod")])
    approved, scores = approve([only], only.price, totals([only]))
    assert approved and scores["pool-single"].savings_fraction >= 1.0
