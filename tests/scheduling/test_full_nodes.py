"""Existing nodes too full for a pod: passed over by their room before any pod landed
(`Fleet.room`, per node and per block of nodes), never checked. Pods of many shapes (one
per Deployment: their labels differ) with the same requests, as a disruption pass moves
them, land where first fit puts them."""

from __future__ import annotations

import pytest

from nodewright.scheduling.pods import ExistingNode
from nodewright.scheduling.solver import SchedulingProblem, solve
from nodewright.scheduling.solver.fit import FitCheck
from nodewright.scheduling.targets import ExistingTarget
from tests.scheduling.test_solver import GIB, HOSTNAME, ZONE, nodepool, pod


def _node(name: str) -> ExistingNode:
    return ExistingNode(name, {ZONE: "zone-a", HOSTNAME: name}, (),
                        {"cpu": 2000, "memory": 8 * GIB, "pods": 110_000})


def test_pod_shapes_with_the_same_requests_pass_over_the_full_nodes_unchecked(
        monkeypatch: pytest.MonkeyPatch) -> None:
    nodes = [_node(f"node-{i:02d}") for i in range(30)]
    # Every node but the last two is full for a 500m pod.
    bound = [pod(f"filler-{i}", cpu="1800m", memory="1Gi", nodeName=node.name)
             for i, node in enumerate(nodes[:-2])]
    moving = [pod(f"app{i}-0", cpu="500m", labels={"app": f"app{i}"}) for i in range(6)]
    problem = SchedulingProblem(pods=moving, nodepools=[nodepool()], nodes=nodes,
                                bound_pods=bound)
    checked: list[str] = []
    real = FitCheck.check

    def counting(self: FitCheck, target: object, *args: object, **kwargs: object) -> object:
        if isinstance(target, ExistingTarget):
            checked.append(target.hostname)
        return real(self, target, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(FitCheck, "check", counting)
    result = solve(problem)

    assert result.nodeclaims == ()
    assert result.existing == (("node-28", ("default/app0-0", "default/app1-0",
                                            "default/app2-0", "default/app3-0")),
                               ("node-29", ("default/app4-0", "default/app5-0")))
    # The plan (it needs no new NodeClaim, so no greedy order cross-checks it) checks none
    # of the 28 full nodes: their room says so.
    assert set(checked) == {"node-28", "node-29"}
