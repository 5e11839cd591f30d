"""`solve` keeps the cheapest of three plans (the packer's, the greedy balanced and the
greedy plain order). The greedy plans skip their NodeClaims' re-plans when a lower bound
shows they cannot beat the packer's plan: the choice must be the one made with them."""

from __future__ import annotations

import pytest

from nodewright.scheduling.allocatable import Overhead
from nodewright.scheduling.catalog import InstanceType, Offering, offline_catalog
from nodewright.scheduling.nodepools import NodePoolTemplate
from nodewright.scheduling.pods import Pod, parse_pod_spec
from nodewright.scheduling.requirements import Requirement, Requirements
from nodewright.scheduling.solver import SchedulingProblem, _Setup, _Solver, solve

GIB_MILLIS = 2**30 * 1000


def _uniform_catalog() -> list[InstanceType]:
    """Every type the same price per vCPU and GiB: the packer's LP is degenerate and a
    greedy plan can win."""
    types = []
    for i in range(40):
        vcpu, gib = i + 1, 2 * (i + 1)
        price = round(0.1 * vcpu + 0.1 * gib, 6)
        name = f"uniform.{vcpu}x"
        types.append(InstanceType(
            name=name,
            labels={"node.kubernetes.io/instance-type": name, "kubernetes.io/arch": "amd64",
                    "kubernetes.io/os": "linux"},
            capacity={"cpu": vcpu * 1000, "memory": gib * GIB_MILLIS, "pods": 110_000},
            overhead=Overhead({}, {}, {}),
            offerings=tuple(Offering(z, None, "on-demand", price) for z in ("a", "b")),
        ))
    return types


def _pool(catalog: list[InstanceType], realistic: bool) -> NodePoolTemplate:
    requirements = Requirements([
        Requirement.build("kubernetes.io/os", "In", ["linux"]),
        Requirement.single("karpenter.sh/nodepool", "default"),
    ])
    if realistic:
        requirements.add(Requirement.build("karpenter.k8s.aws/instance-category", "In",
                                           ["c", "m", "r"]))
        requirements.add(Requirement.build("karpenter.k8s.aws/instance-cpu", "Lt", ["17"]))
    return NodePoolTemplate("default", requirements, catalog)


def _pods(count: int, seed: int) -> list[Pod]:
    cpus, mems = ("100m", "250m", "500m", "1000m", "1500m"), ("100Mi", "512Mi", "2048Mi")
    return [
        parse_pod_spec("default", f"app-{n}", {"app": "generic"}, {"containers": [
            {"name": "app", "resources": {"requests": {
                "cpu": cpus[(n * seed) % 5], "memory": mems[(n * 7 + seed) % 3]}}}]}, "spec")
        for n in range(count)
    ]


@pytest.mark.parametrize(("uniform", "count", "seed"), [
    # a greedy plan wins the last three (by 8 %, 4 % and 4.5 %)
    (True, 23, 1), (False, 37, 2), (False, 90, 5), (False, 17, 1), (False, 29, 1),
    (False, 29, 4),
])
def test_the_cheapest_of_the_three_full_plans_is_kept(uniform: bool, count: int,
                                                      seed: int) -> None:
    catalog = _uniform_catalog() if uniform else offline_catalog("us-east-1")
    problem = SchedulingProblem(pods=_pods(count, seed),
                                nodepools=[_pool(catalog, realistic=not uniform)])
    plans = [_Solver(problem, setup=_Setup(problem)).run(True)]
    plans += [_Solver(problem, pack_free=False, setup=_Setup(problem)).run(balanced)
              for balanced in (True, False)]
    chosen = solve(problem)
    assert chosen.hourly_cost == pytest.approx(min(p.hourly_cost for p in plans), abs=1e-9)
    assert chosen.hourly_cost <= plans[0].hourly_cost + 1e-9
    assert not chosen.unschedulable
