"""`nodewright simulate` runs with the garbage collector's young generation enlarged (a
simulation's short-lived objects die before a collection sees them) and puts the
thresholds it found back afterwards, even when the run fails."""

from __future__ import annotations

import gc
import io
from typing import Any

import pytest

from nodewright.sim import session
from nodewright.sim.collector import SIMULATION_THRESHOLDS
from nodewright.sim.session import SimulationRequest

from .conftest import SCENARIOS


def test_a_simulation_runs_with_the_simulation_thresholds_and_restores_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[tuple[int, ...]] = []

    def run(*args: Any, **kwargs: Any) -> Any:
        seen.append(gc.get_threshold())
        raise RuntimeError("the run stops here")

    monkeypatch.setattr(session, "run_scenario", run)
    before = gc.get_threshold()
    assert before != SIMULATION_THRESHOLDS

    with pytest.raises(RuntimeError, match="the run stops here"):
        session.simulate(SimulationRequest(str(SCENARIOS / "budgets.yaml"), quiet=True),
                         io.StringIO(), io.StringIO())

    assert seen == [SIMULATION_THRESHOLDS]
    assert gc.get_threshold() == before
