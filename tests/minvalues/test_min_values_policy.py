"""MIN_VALUES_POLICY (Karpenter's --min-values-policy): Strict, the default, launches no
NodeClaim whose instance types cannot meet a requirement's minValues; BestEffort launches
it with that minValues lowered to what the types offer and says so in the annotation
karpenter.sh/nodeclaim-min-values-relaxed (and the karpenter_nodeclaims_created label)."""

from __future__ import annotations

from typing import Any

from nodewright.controllers.options import ControllerOptions
from tests.controllers.metric_samples import sample_value
from tests.harness import NODE_CLASS, World, node_pool
from tests.static.helpers import workload

POOL = node_pool(requirements=[{"key": "node.kubernetes.io/instance-type", "operator": "In",
                                "values": ["m5.large", "m5.xlarge", "c5.large"], "minValues": 3}])
RELAXED = "karpenter.sh/nodeclaim-min-values-relaxed"


def _types_requirement(claim: dict[str, Any]) -> dict[str, Any]:
    return next(r for r in claim["spec"]["requirements"]
                if r["key"] == "node.kubernetes.io/instance-type")


def _created(relaxed: str) -> float:
    value = sample_value(
        "karpenter_nodeclaims_created_total",
        {"reason": "provisioned", "nodepool": "default", "min_values_relaxed": relaxed})
    return value or 0.0


def test_strict_launches_nothing_when_the_fitting_types_cannot_meet_min_values() -> None:
    world = World()
    world.apply(NODE_CLASS, POOL)
    # Three cpu: only m5.xlarge of the three fits, one value where minValues asks three.
    world.apply(workload("wide", 1, "3"))
    assert world.settle()
    assert world.nodeclaims() == []
    failed = world.events(reason="FailedScheduling")
    assert failed and "minValues" in failed[-1]["note"]


def test_best_effort_relaxes_min_values_to_what_the_types_offer() -> None:
    world = World(options=ControllerOptions(relax_min_values=True))
    before = _created("true")
    world.apply(NODE_CLASS, POOL)
    world.apply(workload("wide", 1, "3"))
    assert world.settle()
    (claim,) = world.nodeclaims()
    assert claim["metadata"]["annotations"][RELAXED] == "true"
    requirement = _types_requirement(claim)
    assert requirement["values"] == ["m5.xlarge"] and requirement["minValues"] == 1
    assert world.running_pods() and not world.pending_pods()
    assert _created("true") == before + 1


def test_best_effort_keeps_min_values_that_can_be_met() -> None:
    world = World(options=ControllerOptions(relax_min_values=True))
    world.apply(NODE_CLASS, POOL)
    world.apply(workload("small", 1, "500m"))  # all three types fit
    assert world.settle()
    (claim,) = world.nodeclaims()
    assert claim["metadata"]["annotations"][RELAXED] == "false"
    requirement = _types_requirement(claim)
    assert sorted(requirement["values"]) == ["c5.large", "m5.large", "m5.xlarge"]
    assert requirement["minValues"] == 3
