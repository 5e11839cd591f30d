"""First fit over many existing nodes passes over those whose room before any pod landed
cannot hold the pod (`Fleet.room`, `Placement._next_roomy`): the plan is the one checking
every node in turn gives, for problems cut from prepared nodes (the nodes taken away keep
their place but take no pod) as for whole ones, with uninitialized and cordoned nodes in
the fleet and pods landing on the same nodes again."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nodewright.scheduling.pods import ExistingNode
from nodewright.scheduling.solver import PreparedNodes, SchedulingProblem, solve
from nodewright.scheduling.solver.placement import Placement
from nodewright.scheduling.targets import Vector
from tests.scheduling.test_solver import GIB, HOSTNAME, ZONE, nodepool, pod


def _every_node_in_turn(self: Placement, vector: Vector, position: int) -> int:
    """The reference: no node passed over but the absent ones."""
    while position < self._existing and position in self._absent:
        position += 1
    return position


def _node(index: int, cpu: int, initialized: bool, cordoned: bool) -> ExistingNode:
    name = f"node-{index:03d}"
    zone = ("zone-a", "zone-b", "zone-c")[index % 3]
    return ExistingNode(name, {ZONE: zone, HOSTNAME: name}, (),
                        {"cpu": cpu * 1000, "memory": 4 * cpu * GIB, "pods": 110_000},
                        unschedulable=cordoned, initialized=initialized)


@settings(max_examples=40, deadline=None)
@given(
    fleet=st.lists(st.tuples(st.sampled_from([2, 4, 8]), st.booleans(),
                             st.integers(0, 9)), min_size=17, max_size=60),
    load=st.lists(st.tuples(st.integers(0, 59), st.sampled_from([250, 500, 1000, 1500])),
                  max_size=80),
    moving=st.lists(st.sampled_from([100, 250, 500, 1000, 2000, 3000]), min_size=1,
                    max_size=25),
    cuts=st.lists(st.integers(0, 59), min_size=1, max_size=4),
)
def test_first_fit_with_the_room_index_is_first_fit_over_every_node(
    fleet: list[tuple[int, bool, int]], load: list[tuple[int, int]], moving: list[int],
    cuts: list[int],
) -> None:
    nodes = [_node(i, cpu, initialized, cordoned=spare == 0)
             for i, (cpu, initialized, spare) in enumerate(fleet)]
    bound = [pod(f"bound-{n}", cpu=f"{cpu}m", memory="512Mi",
                 nodeName=nodes[where % len(nodes)].name)
             for n, (where, cpu) in enumerate(load)]
    # Two shapes per size (their labels differ), as the Deployments of a pass.
    pods = [pod(f"moving-{n}", cpu=f"{cpu}m", memory="1Gi", labels={"app": f"app{n % 2}"})
            for n, cpu in enumerate(moving)]
    base = SchedulingProblem(pods=[], nodepools=[nodepool()], nodes=nodes, bound_pods=bound)
    prepared = PreparedNodes(base)
    gone = {nodes[cut % len(nodes)].name for cut in cuts}
    cut = replace(base, pods=pods, nodes=[n for n in nodes if n.name not in gone],
                  bound_pods=[p for p in bound if p.node_name not in gone])

    indexed = solve(cut, prepared)
    whole = solve(cut)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Placement, "_next_roomy", _every_node_in_turn)
        reference = solve(cut, PreparedNodes(base))
        reference_whole = solve(cut)

    assert indexed == reference == whole == reference_whole
    assert not any(name in gone for name, _ in indexed.existing)
