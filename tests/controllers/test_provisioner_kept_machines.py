"""The provisioner keeps its machines' usage from one solve to the next (a machine whose
model, bound pods and DaemonSets did not change is not worked out again), and every plan
is the one a solve from scratch makes."""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.controllers.provisioning import provisioner
from nodewright.scheduling.pods import ExistingNode
from nodewright.scheduling.solver import (
    PreparedNodes,
    SchedulingProblem,
    SchedulingResult,
    existing_nodes,
)
from nodewright.scheduling.solver.existing_nodes import NodeUsage
from tests.controllers.conftest import WORKSHOP
from tests.controllers.expectations import expect_running
from tests.harness import World


def test_each_solve_keeps_the_unchanged_machines_and_plans_as_from_scratch(
        world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    solve, usage_of = provisioner.solve, existing_nodes.node_usage
    worked_out: list[str] = []
    # Per solve: its machines, and those whose usage was worked out for it.
    solves: list[tuple[list[str], list[str]]] = []

    def node_usage(node: ExistingNode, *args: Any) -> NodeUsage:
        worked_out.append(node.name)
        return usage_of(node, *args)

    def prepared_nodes(problem: SchedulingProblem, *args: Any, **options: Any
                       ) -> PreparedNodes:
        worked_out.clear()
        prepared = PreparedNodes(problem, *args, **options)
        solves.append(([node.name for node in problem.nodes], list(worked_out)))
        return prepared

    def compared(problem: SchedulingProblem, prepared: PreparedNodes | None = None,
                 **options: Any) -> SchedulingResult:
        assert prepared is not None
        result = solve(problem, prepared, **options)
        assert result == solve(problem, **options)
        return result

    monkeypatch.setattr(existing_nodes, "node_usage", node_usage)
    monkeypatch.setattr(provisioner, "PreparedNodes", prepared_nodes)
    monkeypatch.setattr(provisioner, "solve", compared)
    world.apply(WORKSHOP)
    for replicas in (5, 12, 20):
        world.scale("inflate", replicas)
        assert world.settle()
    expect_running(world, 20)

    assert len(solves) >= 3
    kept = [name for machines, worked in solves for name in machines if name not in worked]
    assert kept, "no machine's usage was kept from one solve to the next"
