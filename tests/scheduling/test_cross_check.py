"""`solve` cross-checks the packer's plan of free pods with two greedy plans and keeps the
cheapest; a first plan that needs no new NodeClaim (every pod onto existing nodes, as in
a consolidation that deletes) cannot be beaten, prices never being negative, and is kept
without the cross-check."""

from __future__ import annotations

import pytest

from nodewright.scheduling.solver import SchedulingProblem, Solver, solve
from nodewright.scheduling.solver.results import SchedulingResult
from tests.scheduling.test_prepared_nodes import _node, _pod
from tests.scheduling.test_solver import nodepool


def _plans(monkeypatch: pytest.MonkeyPatch, problem: SchedulingProblem
           ) -> list[SchedulingResult]:
    """The plans of `problem` (not the re-plans of a NodeClaim's pods alone)."""
    plans: list[SchedulingResult] = []
    original = Solver.run

    def counting(self: Solver, balanced: bool = True) -> SchedulingResult:
        result = original(self, balanced)
        if self.problem is problem:
            plans.append(result)
        return result

    monkeypatch.setattr(Solver, "run", counting)
    return plans


def test_pods_that_all_fit_on_existing_nodes_are_planned_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    problem = SchedulingProblem(pods=[_pod(f"web-{i}", 500, False) for i in range(4)],
                                nodepools=[nodepool()], nodes=[_node(0, 4), _node(1, 4)])
    plans = _plans(monkeypatch, problem)

    result = solve(problem)

    assert not result.nodeclaims
    assert sorted(key for _, keys in result.existing for key in keys) == [
        f"default/web-{i}" for i in range(4)]
    assert len(plans) == 1


def test_pods_that_need_a_new_node_are_cross_checked_by_the_greedy_plans(
        monkeypatch: pytest.MonkeyPatch) -> None:
    problem = SchedulingProblem(pods=[_pod(f"web-{i}", 1500, False) for i in range(4)],
                                nodepools=[nodepool()], nodes=[_node(0, 2)])
    plans = _plans(monkeypatch, problem)

    result = solve(problem)

    assert result.nodeclaims
    assert len(plans) == 3
    assert result.hourly_cost == min(plan.hourly_cost for plan in plans)
