"""Karpenter v1.14.1 pkg/controllers/disruption/singlenodeconsolidation_test.go: in which
order single-node consolidation looks at its candidates (savings ratio, NodePools
interleaved, those a timed-out pass did not reach first) and what a pass that times out
remembers. Three NodePools of three m5.large, one pod each (Karpenter's createCandidates);
no consolidation is made (the simulation is replaced by one that records what it is asked),
so each pass's order is what it looked at."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest

from nodewright.controllers.common import decision_log as ex
from nodewright.controllers.disruption.candidates import Candidate, consolidation_order
from nodewright.controllers.disruption.commands import Rejection
from nodewright.controllers.disruption.controller import DisruptionController
from nodewright.controllers.disruption.methods import single_node_consolidation
from nodewright.controllers.disruption.methods.disruption_pass import MethodOptions, Pass
from nodewright.controllers.disruption.methods.single_node_consolidation import (
    interleaved,
    single_node,
)
from nodewright.controllers.disruption.simulation import SimulationBase
from tests.disruption.balanced_fixtures import candidate, nodepool, pods, priced
from tests.harness import NODE_CLASS, World, node_pool
from tests.static.helpers import workload

POOLS = ("nodepool-1", "nodepool-2", "nodepool-3")


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    world = World()
    world.apply(NODE_CLASS)
    for pool in POOLS:
        world.apply(node_pool(pool, types=["m5.large"], disruption={
            "consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "0s"}))
        world.apply(workload(f"app-{pool}", 3, "1", anti_affinity=True,
                             node_selector={"karpenter.sh/nodepool": pool}))
    assert world.settle()
    assert len(world.nodes()) == 9
    yield world


@pytest.fixture
def looked_at(world: World, monkeypatch: pytest.MonkeyPatch) -> list[Candidate]:
    """What single-node consolidation simulates, after a whole pass that leaves nothing
    unreached from an earlier test."""
    seen: list[Candidate] = []

    def never(base: SimulationBase, candidates: Sequence[Candidate], **_: object) -> Rejection:
        base.simulations += 1
        seen.extend(candidates)
        return Rejection(ex.CAUSE_PODS_DO_NOT_FIT, "the test keeps every node")

    monkeypatch.setattr(single_node_consolidation, "decide_consolidation", never)
    _pass(world, mark=object())
    seen.clear()
    return seen


def _controller(world: World) -> DisruptionController:
    assert world.controllers.disruption is not None
    return world.controllers.disruption.disruption


def _pass(world: World, mark: object, **options: object) -> Pass:
    current = _controller(world).new_pass(world.clock.now())
    current.state_mark = mark
    if options:
        current.options = MethodOptions(**options)  # type: ignore[arg-type]
    assert single_node(current) is None
    return current


def _unseen_pools(current: Pass) -> set[str]:
    """The NodePools of the candidates the pass did not reach (kept for the next pass)."""
    by_id = {c.provider_id: c.nodepool_name for c in current.candidates()}
    return {by_id[provider_id] for provider_id in current.resume.unseen}


def test_candidates_are_looked_at_by_savings_ratio_pools_interleaved(
    world: World, looked_at: list[Candidate],
) -> None:
    """singlenodeconsolidation_test.go Candidate Shuffling: It("should sort candidates by
    savings ratio descending")."""
    _pass(world, mark="sort")
    assert len(looked_at) == 9
    ratios = [c.savings_ratio for c in looked_at]
    assert ratios == sorted(ratios, reverse=True)
    assert [c.nodepool_name for c in looked_at[:3]] == list(POOLS)


def test_the_pools_a_timed_out_pass_did_not_reach_go_first(
    world: World, looked_at: list[Candidate],
) -> None:
    """singlenodeconsolidation_test.go Candidate Shuffling: It("should prioritize nodepools
    that timed out in previous runs"): a pass that stops after nodepool-1's first candidate
    leaves nodepool-2 first for the next."""
    _pass(world, mark="before", single_node_max_simulations=1)
    assert [c.nodepool_name for c in looked_at] == ["nodepool-1"]
    looked_at.clear()
    _pass(world, mark="after")
    assert looked_at[0].nodepool_name == "nodepool-2"


def test_ranking_by_savings_ratio_across_pools() -> None:
    """singlenodeconsolidation_test.go Candidate Shuffling: It("should sort candidates by
    savings ratio with different disruption costs"): each pool has a node of reschedule
    disruption cost 1, 5 and 20 (0, 4 and 19 pods); the three of cost 1 come first, then
    the three of cost 5."""
    large = priced("m5.large", 0.096)
    made = [candidate(f"{pool}-{cost}", nodepool(pool, "WhenEmptyOrUnderutilized"), large,
                      pods(f"{pool}-{cost}", cost - 1))
            for cost in (20, 5, 1) for pool in POOLS]
    ordered = interleaved(consolidation_order(made))
    assert [c.reschedule_disruption_cost for c in ordered] == [1.0] * 3 + [5.0] * 3 + [20.0] * 3


def test_a_pass_that_sees_every_pool_forgets_the_timed_out_ones(
    world: World, looked_at: list[Candidate],
) -> None:
    """singlenodeconsolidation_test.go Candidate Shuffling: It("should reset timed out
    nodepools when all nodepools are evaluated")."""
    partial = _pass(world, mark="partial", single_node_max_simulations=1)
    assert "nodepool-2" in _unseen_pools(partial)
    whole = _pass(world, mark="whole")
    assert _unseen_pools(whole) == set()


def test_a_pass_that_times_out_at_once_marks_every_pool(
    world: World, looked_at: list[Candidate],
) -> None:
    """singlenodeconsolidation_test.go Candidate Shuffling: It("should mark nodepools as
    timed out when timeout occurs") (SingleNodeConsolidationTimeoutDuration -5s)."""
    current = _pass(world, mark="timeout", single_node_timeout=-5.0)
    assert looked_at == []
    assert current.stopped_early == {ex.SINGLE_NODE}
    assert _unseen_pools(current) == set(POOLS)
