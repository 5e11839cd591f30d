"""`solve(problem, prepared)`: the existing nodes of a larger problem, worked out once and
shared by problems cut from it (a disruption pass takes each candidate away in turn),
give the same plan as solving the cut problem from scratch."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from nodewright.scheduling.pods import ExistingNode, Pod, Taint
from nodewright.scheduling.solver import PreparedNodes, SchedulingProblem, solve
from tests.scheduling.test_solver import GIB, HOSTNAME, ZONE, nodepool, pod

SPREAD = [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
           "labelSelector": {"matchLabels": {"app": "web"}}}]


def _node(index: int, cpu: int) -> ExistingNode:
    name = f"node-{index}"
    zone = ("zone-a", "zone-b", "zone-c")[index % 3]
    return ExistingNode(name, {ZONE: zone, HOSTNAME: name}, (),
                        {"cpu": cpu * 1000, "memory": 4 * cpu * GIB, "pods": 110_000})


def _pod(name: str, cpu_m: int, spread: bool, node: str | None = None) -> Pod:
    spec: dict[str, object] = {"labels": {"app": "web"}}
    if spread:
        spec["topologySpreadConstraints"] = SPREAD
    if node is not None:
        spec["nodeName"] = node
    return pod(name, cpu=f"{cpu_m}m", memory="512Mi", **spec)


@settings(max_examples=30, deadline=None)
@given(
    sizes=st.lists(st.sampled_from([2, 4, 8]), min_size=2, max_size=5),
    load=st.lists(st.tuples(st.integers(0, 4), st.sampled_from([250, 500, 1000]),
                            st.booleans()), max_size=14),
    removed=st.integers(0, 4),
)
def test_a_cut_problem_plans_the_same_with_the_prepared_nodes(
    sizes: list[int], load: list[tuple[int, int, bool]], removed: int,
) -> None:
    nodes = [_node(i, cpu) for i, cpu in enumerate(sizes)]
    bound = [_pod(f"bound-{n}", cpu, spread, nodes[where % len(nodes)].name)
             for n, (where, cpu, spread) in enumerate(load)]
    base = SchedulingProblem(pods=[], nodepools=[nodepool()], nodes=nodes, bound_pods=bound)
    prepared = PreparedNodes(base)

    # As a disruption pass does: each node taken away in turn (from `removed` on), every
    # cut solved with the same prepared nodes (whose resource vectors it keeps).
    for offset in range(len(nodes)):
        gone = nodes[(removed + offset) % len(nodes)].name
        moving = [replace(p, node_name=None) for p in bound if p.node_name == gone]
        cut = replace(base, pods=moving,
                      nodes=[n for n in nodes if n.name != gone],
                      bound_pods=[p for p in bound if p.node_name != gone])

        assert prepared.usable_for(cut)
        assert solve(cut, prepared) == solve(cut)


def test_a_problem_not_cut_from_the_prepared_one_is_solved_from_scratch() -> None:
    nodes = [_node(0, 4), _node(1, 4)]
    base = SchedulingProblem(pods=[], nodepools=[nodepool()], nodes=nodes,
                             bound_pods=[_pod("a", 1000, False, "node-0")])
    prepared = PreparedNodes(base)
    # Another pod bound to a kept node: the prepared usage no longer holds.
    other = replace(base, pods=[_pod("new", 3500, False)],
                    bound_pods=[*base.bound_pods, _pod("b", 3000, False, "node-0")])

    assert not prepared.usable_for(other)
    assert solve(other, prepared) == solve(other)
    assert solve(other).existing == (("node-1", ("default/new",)),)


@settings(max_examples=30, deadline=None)
@given(
    sizes=st.lists(st.sampled_from([2, 4, 8]), min_size=2, max_size=5),
    load=st.lists(st.tuples(st.integers(0, 4), st.sampled_from([250, 500, 1000]),
                            st.booleans()), max_size=14),
    tainted=st.sets(st.integers(0, 4)),
)
def test_nodes_prepared_like_another_problem_plan_as_nodes_prepared_from_scratch(
    sizes: list[int], load: list[tuple[int, int, bool]], tainted: set[int],
) -> None:
    """A disruption pass taints some machines (not initialized yet, within consolidateAfter)
    and prepares that problem's nodes from the untainted one's: the usage of every node
    left as it was is reused, a tainted node's is worked out again."""
    nodes = [_node(i, cpu) for i, cpu in enumerate(sizes)]
    bound = [_pod(f"bound-{n}", cpu, spread, nodes[where % len(nodes)].name)
             for n, (where, cpu, spread) in enumerate(load)]
    base = SchedulingProblem(pods=[], nodepools=[nodepool()], nodes=nodes, bound_pods=bound)
    marked = replace(base, nodes=[
        replace(n, taints=(Taint("example.com/not-ready", "", "NoSchedule"),))
        if i in tainted else n for i, n in enumerate(nodes)])
    prepared = PreparedNodes(marked, like=PreparedNodes(base))

    fresh = PreparedNodes(marked)
    assert prepared.by_name == fresh.by_name
    assert prepared.any_tied == fresh.any_tied
    gone = nodes[0].name
    moving = [replace(p, node_name=None) for p in bound if p.node_name == gone]
    cut = replace(marked, pods=moving, nodes=[n for n in marked.nodes if n.name != gone],
                  bound_pods=[p for p in bound if p.node_name != gone])
    assert prepared.usable_for(cut)
    assert solve(cut, prepared) == solve(cut)


@settings(max_examples=40, deadline=None)
@given(
    sizes=st.lists(st.sampled_from([2, 4, 8]), min_size=2, max_size=5),
    load=st.lists(st.tuples(st.integers(0, 4), st.sampled_from([250, 500, 1000]),
                            st.booleans()), max_size=14),
    moved=st.lists(st.tuples(st.integers(0, 13), st.integers(0, 4)), max_size=3),
    tainted=st.sets(st.integers(0, 4)),
    gone=st.integers(0, 4),
)
def test_nodes_prepared_from_the_pass_before_plan_as_nodes_prepared_from_scratch(
    sizes: list[int], load: list[tuple[int, int, bool]], moved: list[tuple[int, int]],
    tainted: set[int], gone: int,
) -> None:
    """The next disruption pass prepares its machines from the pass before's: a machine
    whose model is equal and whose bound pods are the same objects keeps its usage; one
    whose pods moved, or that was tainted meanwhile (models made again, equal or not), is
    worked out again."""
    nodes = [_node(i, cpu) for i, cpu in enumerate(sizes)]
    bound = [_pod(f"bound-{n}", cpu, spread, nodes[where % len(nodes)].name)
             for n, (where, cpu, spread) in enumerate(load)]
    before = SchedulingProblem(pods=[], nodepools=[nodepool()], nodes=nodes, bound_pods=bound)
    earlier = PreparedNodes(before)
    solve(before, earlier)  # its resource vectors and targets are worked out

    # Meanwhile some pods moved to other machines, some machines were tainted, and the
    # state made every machine's model again.
    now_bound = list(bound)
    for which, where in moved:
        if which < len(now_bound):
            now_bound[which] = replace(now_bound[which], node_name=nodes[where % len(nodes)].name)
    now_nodes = [replace(node, taints=(Taint("example.com/cordon", "", "NoSchedule"),))
                 if index in tainted else replace(node) for index, node in enumerate(nodes)]
    after = replace(before, nodes=now_nodes, bound_pods=now_bound)
    prepared = PreparedNodes(after, earlier=earlier)

    assert prepared.by_name == PreparedNodes(after).by_name
    name = now_nodes[gone % len(now_nodes)].name
    cut = replace(after, pods=[replace(p, node_name=None) for p in now_bound
                               if p.node_name == name],
                  nodes=[n for n in now_nodes if n.name != name],
                  bound_pods=[p for p in now_bound if p.node_name != name])
    assert prepared.usable_for(cut)
    assert solve(cut, prepared) == solve(cut)
