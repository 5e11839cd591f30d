"""How often the disruption loop works out a pass while commands are in flight.

Karpenter v1.14.1 pkg/controllers/disruption/controller.go: Reconcile requeues at once
after a command starts and `RequeueAfter: pollingPeriod` (10 s) when no method proposed
anything; the orchestration queue that moves started commands on is a controller of its
own. Ours folds the queue into the loop and polls commands in flight every second, but a
pass that found nothing is still followed by the next only after the polling period (a
pass at 500 nodes simulates up to 21 candidates; one a second was most of the snapshot
benchmark's work)."""

from __future__ import annotations

from datetime import datetime, timedelta
from itertools import pairwise
from typing import Any

import pytest

from nodewright.cluster import objects
from nodewright.controllers.disruption.commands import Command
from tests.disruption.rollout import drifted_fleet
from tests.harness import World


def test_a_pass_that_finds_nothing_waits_the_polling_period_while_commands_move_on(
        world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    originals = drifted_fleet(world, 10, "50%")
    disruption = world.controllers.disruption.disruption
    assert disruption is not None
    passes: list[tuple[datetime, bool, int]] = []  # (when, found a command, in flight)
    work_out = disruption._work_out

    def counted(now: datetime, *args: Any) -> tuple[Any, Command | None]:
        current, command = work_out(now, *args)
        passes.append((now, command is not None, len(disruption.orchestrator.commands)))
        return current, command

    monkeypatch.setattr(disruption, "_work_out", counted)
    assert world.run_until(lambda: not originals & {objects.name(c)
                                                    for c in world.nodeclaims()})

    idle_in_flight = [(when, after) for (when, found, flying), (after, _, _)
                      in pairwise(passes) if not found and flying]
    assert idle_in_flight, "no pass found nothing while a command was in flight"
    for when, after in idle_in_flight:
        assert after - when >= timedelta(seconds=10), (when, after)
    # Commands in flight still moved on: the roll-out finished, each original replaced.
    assert not originals & {objects.name(c) for c in world.nodeclaims()}
