"""Consolidation looks again as soon as the cluster changes, even when the change comes at
the very instant of its last pass (on a virtual clock, many things happen at one instant):
it does not wait for the five-minute refresh of the consolidation mark."""

from __future__ import annotations

from collections.abc import Callable

from nodewright.runtime import VirtualClock
from nodewright.state import ClusterState
from tests.controllers.test_state import START
from tests.disruption.test_consolidation_karpenter_multi import big_nodes_then_small_pods, merged
from tests.harness import World


def test_two_changes_at_one_instant_leave_different_marks() -> None:
    clock = VirtualClock(START)
    state = ClusterState(clock)
    first = state.mark_unconsolidated()
    assert state.mark_unconsolidated() > first
    assert state.consolidation_state() > first


def test_a_fresh_process_merges_nodes_once_the_pods_it_first_saw_are_gone(
        make_world: Callable[..., World]) -> None:
    """The controllers restart just as three nodes' big pods go: the new process's first pass
    still sees them and finds nothing; their deletion, at that same instant, must still make
    the next pass look again (it used to wait five minutes)."""
    world, originals = big_nodes_then_small_pods(make_world, "on-demand", 3)
    world.restart_controllers()
    assert world.run_until(lambda: bool(merged(world)), timeout=120, step=1)
    assert sorted(d.node for d in merged(world)) == originals
