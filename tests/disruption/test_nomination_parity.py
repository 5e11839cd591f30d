"""Where a disruption command's pods are to go is kept for them, as Karpenter v1.14.1 does.

Karpenter's Queue.StartCommand records the command's scheduling results once the
candidates are marked for deletion (pkg/controllers/disruption/queue.go lines 317-327,
`cmd.Results.Record`); Results.Record nominates every existing node the simulation put
pods on (pkg/controllers/provisioning/scheduling/scheduler.go lines 291-318), and a
nominated node is no disruption candidate for the nomination window
(pkg/controllers/state/statenode.go lines 225-228: "node is nominated for a pending pod").
So the disruption pass that follows at once (StartCommand's `RequeueImmediately`) does not
take away the room the command counts on.
"""

from __future__ import annotations

from datetime import timedelta

from nodewright.cluster import objects
from nodewright.controllers.common import decision_log as ex
from tests.controllers.conftest import WORKSHOP
from tests.controllers.expectations import expect_instance_types
from tests.disruption.helpers import decisions, nodepool_with, started
from tests.harness import World


def test_the_node_a_delete_command_moves_pods_onto_is_nominated_when_it_starts(
    world: World,
) -> None:
    """Two m5.large hold twelve replicas; down to five, one node's pods fit on the other
    and multi-node or single-node consolidation deletes it. The moment the command starts,
    the node that is to take its pods is nominated: the pass that follows at once judges it
    "nominated for a pending pod", not a candidate."""
    world.apply(WORKSHOP, nodepool_with(disruption={"consolidateAfter": "0s"}))
    world.scale("inflate", 12)
    assert world.settle()
    expect_instance_types(world, "m5.large", "m5.large")
    world.scale("inflate", 5)

    assert world.run_until(lambda: bool(started(world)), timeout=600, step=1)
    [command] = started(world)
    [kept] = [objects.name(n) for n in world.nodes() if objects.name(n) != command.node]

    machine = world.controllers.state.node_by_name(kept)
    assert machine is not None and machine.nominated_until is not None
    window = timedelta(seconds=world.controllers.state.nomination_seconds)
    assert machine.nominated_until == command.time + window
    assert any(
        d.cause == ex.CAUSE_NOMINATED and d.time == command.time for d in decisions(world, kept)
    ), [(d.time, d.cause) for d in decisions(world, kept)]
