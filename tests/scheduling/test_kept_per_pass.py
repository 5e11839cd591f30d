"""What the solver keeps for the plans of one problem, the problems of one disruption pass
and the pass after gives the answers worked out afresh: one `Shape` per pod signature
(its requirements and request vector), the balanced order sorted once, and the packer's
plans by their input (`PackMemo`)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nodewright.scheduling.pods import ExistingNode
from nodewright.scheduling.solver import PreparedNodes, SchedulingProblem, solve
from nodewright.scheduling.solver import free_pods as free_pods_module
from nodewright.scheduling.solver.context import Signatures
from nodewright.scheduling.solver.order import balanced_order, pod_order
from nodewright.scheduling.targets import ResourceIndex
from tests.scheduling.test_solver import GIB, HOSTNAME, ZONE, nodepool, pod


def test_pods_of_one_signature_share_one_shape_from_pass_to_pass() -> None:
    first = Signatures()
    web_1, web_2, api = pod("web-1"), pod("web-2"), pod("api-1", cpu="1")
    shape = first.shape(web_1)
    assert first.shape(web_2) is shape
    assert first.shape(api) is not shape
    assert shape.requirements == web_1.node_requirements()
    index = ResourceIndex(["cpu", "memory", "pods"])
    assert shape.vector(index) == index.vector(web_1.requests)

    # The next pass takes web-1's shape over, and a new pod alike shares it there.
    second = Signatures(first)
    web_3 = pod("web-3")
    assert second.shape(web_3) is not shape
    assert second.shape(web_1) is second.shape(web_3)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([100, 250, 500, 1000]),
                          st.sampled_from([128, 512, 1024, 4096]),
                          st.integers(0, 5)), max_size=30))
def test_the_balanced_order_of_pods_in_pod_order_is_the_balanced_order(
        sizes: list[tuple[int, int, int]]) -> None:
    pods = [pod(f"app{name}-{n}", cpu=f"{cpu}m", memory=f"{memory}Mi")
            for n, (cpu, memory, name) in enumerate(sizes)]
    ordered = sorted(pods, key=pod_order)
    assert balanced_order(ordered, presorted=True) == balanced_order(pods)


def _node(index: int) -> ExistingNode:
    name = f"node-{index}"
    return ExistingNode(name, {ZONE: "zone-a", HOSTNAME: name}, (),
                        {"cpu": 2000, "memory": 8 * GIB, "pods": 110_000})


@settings(max_examples=25, deadline=None)
@given(moving=st.lists(st.tuples(st.sampled_from([250, 500, 1500]), st.integers(0, 3)),
                       min_size=1, max_size=20))
def test_a_kept_packing_plans_as_packing_afresh(moving: list[tuple[int, int]],
                                                 ) -> None:
    nodes = [_node(i) for i in range(3)]
    # The nodes are full: every moving pod is left to the packer.
    bound = [pod(f"bound-{i}", cpu="1900m", memory="1Gi", nodeName=node.name)
             for i, node in enumerate(nodes)]
    base = SchedulingProblem(pods=[], nodepools=[nodepool()], nodes=nodes, bound_pods=bound)
    pods = [pod(f"app{name}-{n}", cpu=f"{cpu}m", memory="1Gi")
            for n, (cpu, name) in enumerate(moving)]
    cut = replace(base, pods=pods)

    first_pass = PreparedNodes(base)
    afresh = solve(cut)
    assert solve(cut, first_pass) == afresh
    # The same problem in the same pass, and in the next one, reads the kept plans.
    with pytest.MonkeyPatch.context() as patch:
        packed: list[object] = []
        original = free_pods_module.pack

        def counted(*args: object, **kwargs: object) -> object:
            packed.append(args)
            return original(*args, **kwargs)  # type: ignore[arg-type]

        patch.setattr(free_pods_module, "pack", counted)
        assert solve(cut, first_pass) == afresh
        assert solve(cut, PreparedNodes(base, earlier=first_pass)) == afresh
    assert packed == []
