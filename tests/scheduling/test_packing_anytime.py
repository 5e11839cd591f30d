"""The packer as an anytime planner: its plan is never more expensive than first fit
decreasing, a deadline (wall time, set only by an operator) still gives every placeable
pod a node, and without one the same pods always get the same plan."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nodewright.scheduling.catalog import offline_catalog
from nodewright.scheduling.nodepools import NodePoolTemplate
from nodewright.scheduling.packing import BinType, Budget, Packed, _Bins, first_fit, pack
from nodewright.scheduling.pods import parse_pod_spec
from nodewright.scheduling.requirements import Requirement, Requirements
from nodewright.scheduling.solver import SchedulingProblem, solve

Vector = tuple[int, ...]

_shapes = st.lists(
    st.tuples(st.sampled_from([100, 250, 500, 1000, 1500, 3000]),
              st.sampled_from([128, 256, 512, 1024, 2048, 4096, 9000]), st.just(1)),
    min_size=1, max_size=8, unique=True,
)
_bins = st.lists(
    st.tuples(st.sampled_from([1000, 2000, 4000, 8000]),
              st.sampled_from([2048, 4096, 8192, 16384]),
              st.integers(min_value=1, max_value=30),
              st.integers(min_value=5, max_value=200)),
    min_size=1, max_size=8,
)


def _catalog(raw: list[tuple[int, int, int, int]]) -> list[BinType]:
    return [BinType(key, cents / 1000, (cpu, mem, slots))
            for key, (cpu, mem, slots, cents) in enumerate(raw)]


def _check_valid(plan: list[Packed], shapes: list[Vector]) -> list[int]:
    placed = [0] * len(shapes)
    for node in plan:
        load = [sum(k * shapes[s][r] for s, k in enumerate(node.counts)) for r in range(3)]
        assert all(x <= room for x, room in zip(load, node.bin.room, strict=True))
        for s, k in enumerate(node.counts):
            placed[s] += k
    return placed


def _cost(plan: list[Packed]) -> float:
    return sum(node.bin.price for node in plan)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shapes=_shapes, raw_bins=_bins, data=st.data())
def test_a_plan_never_costs_more_than_first_fit_and_places_every_placeable_pod(
    shapes: list[Vector], raw_bins: list[tuple[int, int, int, int]], data: st.DataObject
) -> None:
    demand = data.draw(st.lists(st.integers(min_value=0, max_value=25),
                                min_size=len(shapes), max_size=len(shapes)))
    bins = _catalog(raw_bins)
    effort = data.draw(st.sampled_from([0, 20_000]))
    plan, left = pack(shapes, demand, bins, Budget(effort=effort))
    placed = _check_valid(plan, shapes)
    for s, shape in enumerate(shapes):
        holdable = any(all(x <= r for x, r in zip(shape, b.room, strict=True)) for b in bins)
        assert placed[s] + left[s] == demand[s]
        assert left[s] == (0 if holdable else demand[s])
    # first fit over the same types (their order and the tie charges do not matter to it)
    reference_bins = sorted(bins, key=lambda b: (b.price, tuple(-x for x in b.room), b.key))
    charges = dict.fromkeys((b.key for b in bins), 0.0)
    reference = first_fit(shapes, [d - x for d, x in zip(demand, left, strict=True)],
                          _Bins(reference_bins, shapes, charges))
    assert _check_valid(reference, shapes) == placed
    assert _cost(plan) <= _cost(reference) + 1e-9


def _pods_and_bins() -> tuple[list[Vector], list[int], list[BinType]]:
    shapes = [(cpu, mem, 1) for cpu in (100, 250, 500, 1000, 1500)
              for mem in (128, 512, 2048, 4096)]
    demand = [(7 * s) % 11 + 1 for s in range(len(shapes))]
    bins = _catalog([(cpu, mem, 58, int(cpu * 0.03 + mem * 0.006) + extra)
                     for cpu in (2000, 4000, 8000, 16000) for mem in (4096, 8192, 32768)
                     for extra in (0, 7)])
    return shapes, demand, bins


def test_a_deadline_already_passed_still_places_every_pod() -> None:
    shapes, demand, bins = _pods_and_bins()
    plan, left = pack(shapes, demand, bins, Budget(deadline=0.0))
    assert not any(left)
    assert _check_valid(plan, shapes) == demand
    # and it is no worse than first fit either
    ordered = sorted(bins, key=lambda b: (b.price, tuple(-x for x in b.room), b.key))
    reference = first_fit(shapes, demand, _Bins(ordered, shapes, dict.fromkeys(
        (b.key for b in bins), 0.0)))
    assert _cost(plan) <= _cost(reference) + 1e-9


def test_a_deadline_stops_the_work_that_effort_alone_would_do() -> None:
    shapes, demand, bins = _pods_and_bins()
    unlimited, hurried = Budget(), Budget(deadline=0.0)
    pack(shapes, demand, bins, unlimited)
    pack(shapes, demand, bins, hurried)
    assert hurried.spent < unlimited.spent


def _generic_pods(count: int) -> list:  # type: ignore[type-arg]
    cpus, mems = ("100m", "250m", "500m", "1000m", "1500m"), ("100Mi", "512Mi", "2048Mi")
    return [
        parse_pod_spec("default", f"app-{n}", {"app": "generic"}, {"containers": [
            {"name": "app", "resources": {"requests": {
                "cpu": cpus[n % 5], "memory": mems[(n * 7) % 3]}}}]}, "spec")
        for n in range(count)
    ]


def _realistic_pool() -> NodePoolTemplate:
    requirements = Requirements([
        Requirement.build("kubernetes.io/os", "In", ["linux"]),
        Requirement.build("karpenter.k8s.aws/instance-category", "In", ["c", "m", "r"]),
        Requirement.build("karpenter.k8s.aws/instance-cpu", "Lt", ["17"]),
        Requirement.single("karpenter.sh/nodepool", "default"),
    ])
    return NodePoolTemplate("default", requirements, offline_catalog("us-east-1"))


def test_a_solve_past_its_deadline_places_every_placeable_pod() -> None:
    huge = parse_pod_spec("default", "huge", {"app": "huge"}, {"containers": [
        {"name": "app", "resources": {"requests": {"cpu": "40", "memory": "1Gi"}}}]}, "spec")
    pods = [*_generic_pods(80), huge]
    result = solve(SchedulingProblem(pods=pods, nodepools=[_realistic_pool()]), deadline=0.0)
    assert [key for key, _ in result.unschedulable] == [huge.key]
    planned = sorted(key for claim in result.nodeclaims for key in claim.pods)
    assert planned == sorted(pod.key for pod in pods[:-1])


def test_without_a_deadline_a_solve_on_the_real_catalog_repeats_exactly() -> None:
    template = _realistic_pool()
    pods = _generic_pods(60)
    first = solve(SchedulingProblem(pods=pods, nodepools=[template])).to_dict()
    second = solve(SchedulingProblem(pods=pods, nodepools=[template])).to_dict()
    assert first == second
    assert not first["unschedulable"]
