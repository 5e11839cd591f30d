"""The initialized-first retry (a plan that puts a candidate's pod on a machine that has not
initialized is solved again with those machines tainted, as Karpenter's scheduler tries
initialized nodes first) is cut from a view of the pass prepared once, not solved from
scratch. On a fleet whose consolidation launches a replacement, every retry is compared
with the retry solved the old way: the same machines tainted afresh and every machine's
usage worked out again from its bound pods."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from nodewright.controllers.disruption import simulation
from nodewright.controllers.disruption.controller import DisruptionController
from nodewright.controllers.disruption.simulation import (
    _NOT_READY,
    _NOT_READY_OK,
    SimulationBase,
)
from nodewright.scheduling.solver import SchedulingProblem, SchedulingResult, Setup, solve
from nodewright.sim.loading import load_scenario
from nodewright.sim.runner import run_scenario

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import snapshot_scale


def without_nominations(monkeypatch: pytest.MonkeyPatch) -> None:
    """These fleets reach the retry only when a started command does not nominate the
    machines its pods move onto (Karpenter's Results.Record, which keeps them out of the
    next passes' candidates): the retry itself is what is compared here."""
    monkeypatch.setattr(DisruptionController, "_nominate_destinations",
                        lambda self, command: None)


def retried_from_scratch(base: SimulationBase, problem: SchedulingProblem,
                         own: set[str]) -> SchedulingResult:
    """The retry's plan as it was solved before the prepared view: the machines tainted
    afresh, every machine's usage worked out again from its bound pods."""
    problem = replace(
        problem,
        nodes=[replace(node, taints=(*node.taints, _NOT_READY))
               if node.name in base.uninitialized else node for node in problem.nodes],
        pods=[pod if pod.key in own
              else replace(pod, tolerations=(*pod.tolerations, _NOT_READY_OK))
              for pod in problem.pods])
    return solve(problem)


def test_each_retry_of_a_fleet_launching_a_replacement_is_the_retry_from_scratch(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = tmp_path / "fleet.yaml"
    source.write_text(yaml.safe_dump(snapshot_scale.fleet_scenario(40, 600), sort_keys=False))
    scenario, problems = load_scenario(source)
    assert scenario is not None, problems
    without_nominations(monkeypatch)

    compared: list[tuple[SchedulingResult, SchedulingResult]] = []
    prepared_used: list[bool] = []
    original = SimulationBase._initialized_first

    def comparing(self: SimulationBase, problem: SchedulingProblem, own: set[str],
                  view: Any) -> SchedulingResult | None:
        def solving(cut: SchedulingProblem, prepared: Any = None) -> SchedulingResult:
            prepared_used.append(Setup(cut, prepared).prepared is not None)
            ours = solve(cut, prepared)
            compared.append((ours, retried_from_scratch(self, problem, own)))
            return ours

        monkeypatch.setattr(simulation, "solve", solving)
        try:
            return original(self, problem, own, view)
        finally:
            monkeypatch.setattr(simulation, "solve", solve)

    monkeypatch.setattr(SimulationBase, "_initialized_first", comparing)
    result = run_scenario(scenario)

    assert result.summary.launched >= 1  # a replacement was launched and waited for
    assert compared, "no simulation put a candidate's pod on an uninitialized machine"
    for ours, theirs in compared:
        assert ours == theirs
    # The retries reused the view's prepared machines rather than falling back.
    assert all(prepared_used)




def test_a_retry_skipped_as_hopeless_is_one_whose_solve_would_have_been_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """When the candidates' own pods cannot all fit on the initialized machines left (by
    their requests alone), the retry is not solved. On a fleet whose consolidations wait
    for replacements, each retry skipped that way is solved anyway and found refused; and
    the run decides exactly as one that solves every retry (a skipped retry still counts
    toward the compute budget)."""
    source = tmp_path / "fleet.yaml"
    source.write_text(yaml.safe_dump(snapshot_scale.fleet_scenario(40, 900), sort_keys=False))
    scenario, problems = load_scenario(source)
    assert scenario is not None, problems
    without_nominations(monkeypatch)

    skipped: list[SchedulingResult | None] = []
    solved_anyway = 0
    original = SimulationBase._could_stay

    def checking(self: SimulationBase, problem: SchedulingProblem, own: set[str],
                 prepared: Any) -> bool:
        could = original(self, problem, own, prepared)
        if not could:
            base = ((self.problem, self._view.prepared) if prepared is self._view.prepared
                    else self._consolidation_view[:2])
            before = self.simulations
            skipped.append(self._initialized_first(problem, own, self._not_ready_view(*base)))
            self.simulations = before
        return could

    counts: list[int] = []  # the pass's count of simulations after each one
    simulate = SimulationBase.simulate

    def counting(self: SimulationBase, *args: Any, **kwargs: Any) -> Any:
        outcome = simulate(self, *args, **kwargs)
        counts.append(self.simulations)
        return outcome

    monkeypatch.setattr(SimulationBase, "simulate", counting)
    monkeypatch.setattr(SimulationBase, "_could_stay", checking)
    checked = run_scenario(scenario)
    counted, counts = counts, []

    def always(self: SimulationBase, *args: Any) -> bool:
        nonlocal solved_anyway
        solved_anyway += 1
        return True

    monkeypatch.setattr(SimulationBase, "_could_stay", always)
    every_retry_solved = run_scenario(scenario)

    assert skipped, "no retry was shown hopeless"
    assert skipped == [None] * len(skipped)
    assert solved_anyway > len(skipped)
    assert checked.decisions == every_retry_solved.decisions
    assert checked.summary == every_retry_solved.summary
    assert counted == counts
