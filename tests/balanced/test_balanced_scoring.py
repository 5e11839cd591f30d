"""consolidationPolicy Balanced's score, ported from Karpenter's balanced_scoring_test.go
and the worked examples of its design (designs/balanced-consolidation.md)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from nodewright.controllers.disruption.balanced import (
    PoolTotals,
    Score,
    disruption_cost,
    score_move,
)


@pytest.mark.parametrize(
    ("savings", "cost", "score", "approved"),
    [
        pytest.param(20.0, 5.0, 4.0, True, id="high savings low disruption"),
        pytest.param(10.0, 10.0, 1.0, True, id="equal fractions"),
        pytest.param(5.0, 50.0, 0.10, False, id="low savings high disruption"),
        pytest.param(0.0, 10.0, 0.0, False, id="zero savings"),
        pytest.param(-5.0, 10.0, 0.0, False, id="negative savings"),
    ],
)
def test_score_move(savings: float, cost: float, score: float, approved: bool) -> None:
    result = score_move(savings, cost, PoolTotals(100.0, 100.0))
    assert result is not None
    assert result.value == pytest.approx(score)
    assert result.approved is approved


def test_zero_disruption_scores_infinite_and_passes() -> None:
    result = Score(0.1, 0.0)
    assert math.isinf(result.value) and result.approved


def test_a_pool_with_no_cost_or_disruption_cannot_be_scored() -> None:
    assert score_move(1.0, 1.0, PoolTotals(0.0, 10.0)) is None
    assert score_move(1.0, 1.0, None) is None


# The design's NodePool: eight m7i.xlarge ($4.84/day) and two m7i.2xlarge ($9.68/day),
# 80 default-cost pods. Node disruption costs there leave out the per-node 1.0.
DESIGN_POOL = PoolTotals(58.08, 80.0)


@pytest.mark.parametrize(
    ("savings", "cost", "approved"),
    [
        pytest.param(7.26, 3, True, id="oversized node (3.33)"),
        pytest.param(4.84, 4, True, id="spare capacity delete (1.67)"),
        pytest.param(2.42, 8, False, id="marginal move (0.42)"),
        pytest.param(0.0, 10, False, id="well-packed node"),
    ],
)
def test_the_design_examples(savings: float, cost: float, approved: bool) -> None:
    result = score_move(savings, cost, DESIGN_POOL)
    assert result is not None and result.approved is approved


def test_the_uniform_pool_replace_sits_exactly_on_the_threshold() -> None:
    result = score_move(2.42, 8, PoolTotals(48.40, 80.0))
    assert result is not None
    assert result.value == pytest.approx(0.5) and result.approved
    assert result.describe() == (
        "score 0.50 >= threshold 0.50 (k: 2, savings 5.0%, disruption 10.0%)")


def test_a_node_costs_one_plus_its_pods_eviction_costs_clamped_at_zero() -> None:
    plain = {"metadata": {"name": "a"}, "spec": {}}
    cheap = {"metadata": {"name": "b", "annotations": {
        "controller.kubernetes.io/pod-deletion-cost": "-2147483648"}}, "spec": {}}
    important = {"metadata": {"name": "c"}, "spec": {"priority": 2**25}}
    assert disruption_cost([]) == 1.0
    assert disruption_cost([plain, plain]) == 3.0
    assert disruption_cost([cheap]) == 1.0  # clamped, not negative
    assert disruption_cost([important]) == pytest.approx(3.0)


def _pool(name: str, policy: str) -> Any:
    from nodewright.api.nodepool import NodePool

    return NodePool.model_validate({
        "apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name},
        "spec": {"template": {"spec": {"nodeClassRef": {
            "group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}}},
            "disruption": {"consolidationPolicy": policy}}})


def _candidate(name: str, pool: Any, price: float, pods: int) -> Any:
    from nodewright.controllers.disruption.candidates import Candidate
    from nodewright.state.statenode import StateNode

    node = StateNode(f"aws:///us-east-1a/i-{name}")
    return Candidate(node=node, nodepool=pool, instance_type=None, zone="us-east-1a",
                     capacity_type="on-demand", price=price,
                     pods=[{"metadata": {"name": f"{name}-{i}"}, "spec": {}}
                           for i in range(pods)],
                     disruption_cost=float(pods))


def test_only_balanced_pools_are_scored() -> None:
    from nodewright.controllers.disruption.balanced import evaluate

    greedy = _candidate("a", _pool("greedy", "WhenEmptyOrUnderutilized"), 1.0, 9)
    assert evaluate([greedy], 0.01, {}) == {}


def test_a_pool_missing_from_the_totals_rejects() -> None:
    from nodewright.controllers.disruption.balanced import evaluate

    scores = evaluate([_candidate("a", _pool("b", "Balanced"), 1.0, 0)], 1.0, {})
    assert not scores["b"].approved


def test_cross_pool_savings_are_split_by_each_pools_share_of_the_price() -> None:
    from nodewright.controllers.disruption.balanced import evaluate

    one, two = _pool("one", "Balanced"), _pool("two", "Balanced")
    candidates = [_candidate("a", one, 3.0, 1), _candidate("b", two, 1.0, 1)]
    totals = {"one": PoolTotals(10.0, 10.0), "two": PoolTotals(10.0, 10.0)}
    scores = evaluate(candidates, 2.0, totals)
    # Pool one gets 3/4 of the $2 saved, pool two 1/4; each disrupts 2 of its 10.
    assert scores["one"].savings_fraction == pytest.approx(0.15)
    assert scores["two"].savings_fraction == pytest.approx(0.05)
    assert scores["one"].disruption_fraction == pytest.approx(0.2)
    assert scores["one"].approved and not scores["two"].approved
