"""consolidationPolicy Balanced on a cluster: a replacement that saves a quarter of the
NodePool's price but disrupts most of its pods is not made (WhenEmptyOrUnderutilized
makes it); one that saves as much and disrupts little is."""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.controllers.common import decision_log as ex
from tests.harness import NODE_CLASS, World, node_pool
from tests.static.helpers import workload


def _away_from(app: str, name: str, replicas: int, cpu: str) -> dict[str, Any]:
    body = workload(name, replicas, cpu)
    body["spec"]["template"]["spec"]["affinity"] = {"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [{
            "labelSelector": {"matchLabels": {"app": app}},
            "topologyKey": "kubernetes.io/hostname"}]}}
    return body


def _two_xlarge_nodes(world: World, policy: str) -> None:
    """One m5.xlarge for a 3-cpu pod, another for eight 400m pods kept off it."""
    world.apply(NODE_CLASS, node_pool(types=["m5.large", "m5.xlarge"], disruption={
        "consolidationPolicy": policy, "consolidateAfter": "0s"}))
    world.apply(workload("big", 1, "3"))
    assert world.settle()
    world.apply(_away_from("big", "small", 8, "400m"))
    assert world.settle()
    assert world.instance_types() == ["m5.xlarge", "m5.xlarge"]


@pytest.mark.parametrize(("policy", "replaced"),
                         [("Balanced", False), ("WhenEmptyOrUnderutilized", True)])
def test_a_replacement_disrupting_most_pods_for_a_quarter_of_the_price(
    policy: str, replaced: bool,
) -> None:
    world = World()
    _two_xlarge_nodes(world, policy)
    # Four pods left: an m5.large would do. Savings 25 % of the pool's price, disruption
    # (1 + 4) / (5 + 2) = 71 %: score 0.35, under Balanced's 0.5.
    world.scale("small", 4)
    assert world.settle()
    types = world.instance_types()
    assert types == (["m5.large", "m5.xlarge"] if replaced else ["m5.xlarge", "m5.xlarge"])
    if not replaced:
        controller = world.controllers.disruption
        assert controller is not None
        verdicts = [d for d in controller.decisions
                    if d.cause == ex.CAUSE_BALANCED]
        assert verdicts and "score 0.35 < threshold 0.50" in verdicts[-1].message


def test_a_replacement_disrupting_one_pod_for_a_quarter_of_the_price_is_made() -> None:
    world = World()
    _two_xlarge_nodes(world, "Balanced")
    # One pod left: disruption (1 + 1) / (2 + 2) = 50 %, savings 25 %: score 0.5, approved.
    world.scale("small", 1)
    assert world.settle()
    assert world.instance_types() == ["m5.large", "m5.xlarge"]
    approved = world.events(reason="ConsolidationApproved")
    assert approved and approved[0]["note"].startswith("score 0.50 >= threshold 0.50")
