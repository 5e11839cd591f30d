"""A disruption pass prepares the machines once for all its simulations (their usage, their
targets before any pod lands, each pod's signature) and keeps each machine's preparation
for the next pass while its model, its bound pods and the DaemonSets stay the same objects;
a simulation only takes the candidates' machines out. Every simulation of a fleet's run
is compared with the same simulation worked out from scratch: a new view of the same
cluster, nothing shared with any other simulation or pass. The fleet's consolidations
delete machines and launch a replacement, and the comparison catches a view gone wrong
(pods placed by one simulation left on a machine another simulation sees)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
import yaml

from nodewright.controllers.disruption.candidates import Candidate
from nodewright.controllers.disruption.simulation import Simulation, SimulationBase
from nodewright.scheduling.targets import ExistingTarget
from nodewright.sim.loading import load_scenario
from nodewright.sim.result import RunResult
from nodewright.sim.runner import run_scenario

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import snapshot_scale

Compared = list[tuple[Simulation, Simulation]]
SIMULATE = SimulationBase.simulate


def from_scratch(base: SimulationBase, candidates: Sequence[Candidate],
                 consolidation: bool) -> Simulation:
    """The simulation with nothing prepared: a view of the same cluster made for it alone."""
    fresh = SimulationBase(base.state, base.cloud, base.pdbs, base.now,
                           relax_min_values=base.relax_min_values,
                           ignore_preferences=base.ignore_preferences)
    return SIMULATE(fresh, candidates, consolidation=consolidation)


def run_comparing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, nodes: int,
                  compared: Compared) -> RunResult:
    source = tmp_path / "fleet.yaml"
    source.write_text(yaml.safe_dump(snapshot_scale.fleet_scenario(nodes, 15 * nodes),
                                     sort_keys=False))
    scenario, problems = load_scenario(source)
    assert scenario is not None, problems
    def comparing(self: SimulationBase, candidates: Sequence[Candidate], *,
                  consolidation: bool = True) -> Simulation:
        ours = SIMULATE(self, candidates, consolidation=consolidation)
        compared.append((ours, from_scratch(self, candidates, consolidation)))
        return ours

    monkeypatch.setattr(SimulationBase, "simulate", comparing)
    return run_scenario(scenario)


def test_every_simulation_of_a_fleet_plans_as_one_worked_out_from_scratch(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    compared: Compared = []
    result = run_comparing(tmp_path, monkeypatch, 12, compared)

    # The run consolidated by deleting machines and by replacing one with a new machine.
    assert result.summary.disruptions.get("Underutilized", 0) >= 5
    assert result.summary.launched >= 1
    assert any(ours.all_scheduled and not ours.new_claims for ours, _ in compared)
    assert any(ours.all_scheduled and ours.new_claims for ours, _ in compared)
    for ours, theirs in compared:
        assert ours == theirs


def test_pods_one_simulation_leaves_on_a_shared_machine_are_caught(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison fails when the shared view is wrong: here a pod landing on a machine
    changes the machine's shared target instead of the plan's copy of it, so the pods of
    one simulation stay on the machines every later simulation sees."""
    monkeypatch.setattr(ExistingTarget, "copy", lambda target: target)
    compared: Compared = []
    run_comparing(tmp_path, monkeypatch, 12, compared)

    assert len(compared) >= 2
    assert any(ours != theirs for ours, theirs in compared)
