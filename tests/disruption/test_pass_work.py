"""How much work one disruption pass does: the prefilter's bound on what a consolidation's
new node must hold, single-node consolidation's count of simulations per pass (the
simulator's stand-in for Karpenter's 3-minute timeout) resuming with the candidates the
last pass did not reach, and drift looking at no machine while nothing is drifted."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nodewright.api.quantity import CPU, MEMORY, PODS
from nodewright.controllers.common import decision_log as ex
from nodewright.controllers.disruption.candidates import Candidate
from nodewright.controllers.disruption.commands import Rejection
from nodewright.controllers.disruption.controller import DisruptionController, DisruptionOptions
from nodewright.controllers.disruption.methods import (
    disruption_pass,
    multi_node_consolidation,
    single_node_consolidation,
)
from nodewright.controllers.disruption.methods.disruption_pass import (
    SINGLE_NODE_SIMULATIONS,
    MethodOptions,
    Pass,
)
from nodewright.controllers.disruption.methods.drift import drift
from nodewright.controllers.disruption.methods.single_node_consolidation import single_node
from nodewright.controllers.disruption.prefilter import (
    FreeRoom,
    Room,
    homeless,
    identical_spill,
    new_node_need,
    pareto_front,
)
from nodewright.controllers.disruption.simulation import SimulationBase
from nodewright.controllers.options import ControllerOptions
from tests.controllers.conftest import WORKSHOP
from tests.disruption.helpers import nodepool_with
from tests.harness import World

rooms = st.tuples(st.integers(0, 6), st.integers(0, 6), st.integers(0, 2))


def _fits(load: Room, room: Room) -> bool:
    return all(a <= b for a, b in zip(load, room, strict=True))


def _add(a: Room, b: Room) -> Room:
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


@given(pods=st.lists(rooms, max_size=5), machines=st.lists(rooms, max_size=3))
def test_every_placement_puts_at_least_the_bound_on_the_new_node(
    pods: list[Room], machines: list[Room],
) -> None:
    """Brute force over every placement of the pods on the machines or the new node: in
    each that respects the machines' room, the new node holds at least the bound."""
    stranded = (0, 0, 0)
    for pod in pods:
        if not any(_fits(pod, room) for room in machines):
            stranded = _add(stranded, pod)
    spare = (0, 0, 0)
    for room in machines:
        spare = _add(spare, room)
    need = new_node_need(pods, stranded, spare)
    new_node = len(machines)
    for placement in itertools.product(range(len(machines) + 1), repeat=len(pods)):
        loads = [(0, 0, 0)] * (len(machines) + 1)
        for pod, where in zip(pods, placement, strict=True):
            loads[where] = _add(loads[where], pod)
        if all(_fits(loads[i], room) for i, room in enumerate(machines)):
            assert _fits(need, loads[new_node])


@given(shape=rooms, count=st.integers(0, 5), machines=st.lists(rooms, max_size=3))
def test_identical_pods_put_at_least_the_whole_pods_bound_on_the_new_node(
    shape: Room, count: int, machines: list[Room],
) -> None:
    pods = [shape] * count
    need = identical_spill(pods, free_of(machines), set())
    new_node = len(machines)
    for placement in itertools.product(range(len(machines) + 1), repeat=count):
        loads = [(0, 0, 0)] * (len(machines) + 1)
        for pod, where in zip(pods, placement, strict=True):
            loads[where] = _add(loads[where], pod)
        if all(_fits(loads[i], room) for i, room in enumerate(machines)):
            assert _fits(need, loads[new_node])


def test_holes_too_small_for_a_whole_pod_take_none() -> None:
    # Four holes of 1.5 pods each take four pods, not six: two go to the new node.
    pod = (2, 1, 1)
    assert identical_spill([pod] * 6, free_of([(3, 10, 10)] * 4), set()) == (4, 2, 2)
    assert identical_spill([pod, (1, 1, 1)], free_of([(3, 10, 10)]), set()) == (0, 0, 0)


def test_pods_that_fit_each_hole_but_not_all_holes_together_need_a_new_node() -> None:
    # Two pods of 2 cpu, two machines with 3 cpu free each: each pod fits some machine,
    # and the holes add up to 6 cpu: no new node needed. A third pod: 6 cpu of pods, 6 of
    # holes: still none. A fourth: 8 cpu, 2 must go to the new node.
    pod = (2, 1, 1)
    holes = (6, 10, 10)
    assert new_node_need([pod] * 3, (0, 0, 0), holes) == (0, 0, 0)
    assert new_node_need([pod] * 4, (0, 0, 0), holes) == (2, 0, 0)


# ---------------------------------------------------------------------------------------
# Single-node consolidation's simulations per pass


def _world(limit: int | None) -> World:
    options = ControllerOptions(disruption=DisruptionOptions(
        methods=MethodOptions(single_node_max_simulations=limit)))
    world = World(options=options)
    world.apply(WORKSHOP, nodepool_with(
        requirements={"node.kubernetes.io/instance-type": ["m5.large"]}))
    world.scale("inflate", 12)
    assert world.settle()
    return world


def _controller(world: World) -> DisruptionController:
    assert world.controllers.disruption is not None
    return world.controllers.disruption.disruption


@pytest.fixture
def looked_at(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every candidate single-node consolidation simulates; none can be consolidated."""
    seen: list[str] = []

    def never(base: SimulationBase, candidates: Sequence[Candidate], **_: object) -> Rejection:
        base.simulations += 1
        seen.extend(c.name for c in candidates)
        return Rejection(ex.CAUSE_PODS_DO_NOT_FIT, "the test keeps every node")

    monkeypatch.setattr(multi_node_consolidation, "decide_consolidation", never)
    monkeypatch.setattr(single_node_consolidation, "decide_consolidation", never)
    return seen


def _single_node_pass(world: World, mark: object = None) -> Pass:
    current = _controller(world).new_pass(world.clock.now())
    current.state_mark = mark
    assert single_node(current) is None
    return current


def _candidate_names(world: World) -> list[str]:
    return sorted(c.name for c in _controller(world).new_pass(world.clock.now()).candidates())


def test_a_pass_stops_at_its_simulations_and_the_next_starts_with_the_rest(
    looked_at: list[str],
) -> None:
    world = _world(limit=1)
    looked_at.clear()
    nodes = _candidate_names(world)
    assert len(nodes) >= 2, "the story needs several candidates"

    first = _single_node_pass(world, mark=0)
    assert len(looked_at) == 1
    assert first.stopped_early == {ex.SINGLE_NODE}

    # The cluster changes before every pass: the ones not reached go first.
    for mark in range(1, len(nodes)):
        _single_node_pass(world, mark=mark)
    assert sorted(looked_at) == nodes


def test_on_an_unchanged_cluster_the_passes_go_on_where_the_last_one_stopped(
    looked_at: list[str],
) -> None:
    world = _world(limit=1)
    looked_at.clear()
    nodes = _candidate_names(world)
    passes = [_single_node_pass(world, mark="same") for _ in nodes]
    # Every candidate judged once; the pass that judged the last one saw them all.
    assert sorted(looked_at) == nodes
    assert all(p.stopped_early == {ex.SINGLE_NODE} for p in passes[:-1])
    assert passes[-1].stopped_early == set()


def test_without_a_limit_one_pass_looks_at_every_candidate(looked_at: list[str]) -> None:
    world = _world(limit=None)
    looked_at.clear()
    current = _single_node_pass(world)
    assert sorted(looked_at) == sorted(c.name for c in current.candidates())
    assert len(looked_at) >= 2
    assert current.stopped_early == set()


def test_the_simulator_limit_is_karpenters_three_minutes_at_multi_nodes_rate() -> None:
    # 1 minute for a binary search over at most 100 candidates (7 simulations).
    assert SINGLE_NODE_SIMULATIONS == 21


def test_on_an_unchanged_cluster_the_loop_comes_to_rest(looked_at: list[str]) -> None:
    world = _world(limit=1)
    controller = _controller(world)
    looked_at.clear()
    nodes = _candidate_names(world)
    for _ in range(2 * len(nodes) + 2):
        controller.reconcile("")
    # However far the settled rotation had got, no candidate is judged twice.
    assert len(looked_at) == len(set(looked_at)) <= len(nodes)


# ---------------------------------------------------------------------------------------
# Drift


def test_drift_evaluates_no_machine_while_nothing_is_drifted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world = _world(limit=None)
    current = _controller(world).new_pass(world.clock.now())

    def forbidden(*_: object, **__: object) -> object:
        raise AssertionError("drift evaluated a machine")

    monkeypatch.setattr(disruption_pass, "evaluate", forbidden)
    assert drift(current) is None


def pod_of(room: Room) -> SimpleNamespace:
    """A moving pod as the prefilter reads it: its requests."""
    return SimpleNamespace(requests={CPU: room[0], MEMORY: room[1], PODS: room[2]})


def free_of(machines: list[Room]) -> FreeRoom:
    rooms = {f"machine-{i}": room for i, room in enumerate(machines)}
    return FreeRoom(rooms, pareto_front(rooms.items()))


@given(machines=st.lists(rooms, max_size=8), gone=st.sets(st.integers(0, 7), max_size=4),
       shape=rooms, pods=st.lists(rooms, max_size=4))
def test_the_fleet_without_some_machines_is_what_the_other_machines_alone_give(
    machines: list[Room], gone: set[int], shape: Room, pods: list[Room],
) -> None:
    """A pass asks FreeRoom about every candidate "without these machines", answered from
    the whole fleet's figures less the candidates'; the answers are those of the other
    machines taken on their own (the same homeless pods, the same whole copies)."""
    free = free_of(machines)
    names = {f"machine-{i}" for i in gone}
    others = free_of([room for i, room in enumerate(machines) if i not in gone])
    fronts = (free.front_without(names), others.front)
    assert [room for _, room in fronts[0]] == [room for _, room in fronts[1]]
    moving = [pod_of(room) for room in pods]
    assert homeless(moving, fronts[0]) == homeless(moving, fronts[1])
    assert free.copies_without(shape, names) == others.copies_without(shape, set())
