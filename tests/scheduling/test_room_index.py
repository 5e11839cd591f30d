"""First fit over many existing nodes visits only those still open to the pod's request
vector and tolerations (`Fleet.open_to`, `OpenNodes`): the nodes whose room before any pod
landed cannot hold the pod, whose taints the pod does not tolerate, that the problem took
away or that pods of the same vector filled are passed over. The plan is the one checking
every node in turn gives, for problems cut from prepared nodes (the nodes taken away keep
their place but take no pod) as for whole ones, with uninitialized, cordoned and tainted
nodes in the fleet, pods of several tolerations, and pods landing on the same nodes
again."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nodewright.scheduling.pods import ExistingNode, Taint, Toleration
from nodewright.scheduling.solver import PreparedNodes, SchedulingProblem, solve
from nodewright.scheduling.solver.existing_nodes import Fleet
from nodewright.scheduling.solver.open_nodes import OpenNodes
from nodewright.scheduling.targets import Vector
from tests.scheduling.test_solver import GIB, HOSTNAME, ZONE, nodepool, pod

DEDICATED = Taint("dedicated", "batch", "NoSchedule")


def _every_node(self: Fleet, vector: Vector, tolerations: tuple[Toleration, ...]) -> list[int]:
    """The reference: every node open to every pod (the absent ones are still left out)."""
    return list(range(len(self.targets)))


def _never_closed(self: OpenNodes, index: int) -> None:
    """The reference: a node found full is checked again by the next pod."""


def _node(index: int, cpu: int, initialized: bool, cordoned: bool, tainted: bool
          ) -> ExistingNode:
    name = f"node-{index:03d}"
    zone = ("zone-a", "zone-b", "zone-c")[index % 3]
    return ExistingNode(name, {ZONE: zone, HOSTNAME: name}, (DEDICATED,) if tainted else (),
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
def test_first_fit_over_the_open_nodes_is_first_fit_over_every_node(
    fleet: list[tuple[int, bool, int]], load: list[tuple[int, int]], moving: list[int],
    cuts: list[int],
) -> None:
    nodes = [_node(i, cpu, initialized, cordoned=spare == 0, tainted=spare in (3, 7))
             for i, (cpu, initialized, spare) in enumerate(fleet)]
    bound = [pod(f"bound-{n}", cpu=f"{cpu}m", memory="512Mi",
                 nodeName=nodes[where % len(nodes)].name)
             for n, (where, cpu) in enumerate(load)]
    # Three shapes per size (their labels differ), as the Deployments of a pass; one of
    # them tolerates the tainted nodes.
    tolerating = [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]
    pods = [pod(f"moving-{n}", cpu=f"{cpu}m", memory="1Gi", labels={"app": f"app{n % 3}"},
                **({"tolerations": tolerating} if n % 3 == 2 else {}))
            for n, cpu in enumerate(moving)]
    base = SchedulingProblem(pods=[], nodepools=[nodepool()], nodes=nodes, bound_pods=bound)
    prepared = PreparedNodes(base)
    gone = {nodes[cut % len(nodes)].name for cut in cuts}
    cut = replace(base, pods=pods, nodes=[n for n in nodes if n.name not in gone],
                  bound_pods=[p for p in bound if p.node_name not in gone])

    indexed = solve(cut, prepared)
    whole = solve(cut)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Fleet, "open_to", _every_node)
        patch.setattr(OpenNodes, "close", _never_closed)
        reference = solve(cut, PreparedNodes(base))
        reference_whole = solve(cut)

    assert indexed == reference == whole == reference_whole
    assert not any(name in gone for name, _ in indexed.existing)
