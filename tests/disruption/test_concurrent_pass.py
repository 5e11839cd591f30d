"""Under the operator the disruption loop works out a pass on a snapshot of the state,
outside the state lock, while other controllers go on: before it acts on the command it
found, it checks under the lock that the candidates are still as the pass saw them."""

from __future__ import annotations

from datetime import datetime

import pytest

from nodewright.controllers.disruption.commands import Command
from nodewright.controllers.disruption.controller import DisruptionController
from nodewright.controllers.disruption.methods.disruption_pass import Pass
from nodewright.runtime.reconciler import Result
from nodewright.state import ClusterState
from tests.controllers.conftest import WORKSHOP
from tests.disruption.helpers import started
from tests.harness import World


def test_a_command_whose_candidate_changed_during_the_pass_is_not_started(
        world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    world.apply(WORKSHOP)
    world.scale("inflate", 5)
    assert world.settle()
    world.scale("inflate", 12)
    assert world.settle()
    assert world.controllers.disruption is not None
    controller = world.controllers.disruption.disruption
    state = world.controllers.state
    state.lock.concurrent = True  # as under the operator's workers: passes on snapshots
    passes: list[tuple[bool, Command | None]] = []
    interfered: list[str] = []
    work_out = controller._work_out

    def racing(now: datetime, snapshot: ClusterState,
               mark: tuple[object, ...]) -> tuple[Pass, Command | None]:
        if interfered:  # the other controller is done with the machine
            state.unmark_for_deletion(*interfered)
        current, command = work_out(now, snapshot, mark)
        passes.append((snapshot is not state, command))
        if command is not None and not interfered:
            # Meanwhile another controller (say interruption) takes the candidate.
            interfered.append(command.candidates[0].provider_id)
            state.mark_for_deletion(*interfered)
        return current, command

    monkeypatch.setattr(controller, "_work_out", racing)
    awaiting_validation: list[Command] = []
    reconcile = controller.reconcile

    def noting(key: str) -> Result:
        result = reconcile(key)
        if controller.pending is not None:
            awaiting_validation.append(controller.pending.command)
        return result

    monkeypatch.setattr(controller, "reconcile", noting)
    world.scale("inflate", 5)
    assert world.settle()

    first = next(command for _, command in passes if command is not None)
    assert all(copied for copied, _ in passes)
    assert first not in awaiting_validation and first not in controller.commands
    [deleted] = started(world)
    assert deleted.decision == "delete"
    assert len([command for _, command in passes if command is not None]) >= 2


def test_the_loop_takes_the_state_lock_itself() -> None:
    assert DisruptionController.manages_state_lock
