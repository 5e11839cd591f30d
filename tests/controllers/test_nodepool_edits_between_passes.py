"""The provisioner keeps each NodePool's setup (its compatible types, their room beside the
DaemonSets) from one pass to the next while the instance types and DaemonSets are the
same objects. An edit to what the setup does not depend on (expireAfter, startup taints,
limits) must still reach the very next NodeClaim."""

from __future__ import annotations

from nodewright.cluster import objects
from nodewright.scheduling.solver import PreparedNodes, SchedulingProblem, solve
from tests.controllers.conftest import WORKSHOP
from tests.disruption.helpers import nodepool_with
from tests.harness import World
from tests.scheduling.test_solver import nodepool, replicas


def _claim_specs(world: World) -> dict[str, dict[str, object]]:
    return {objects.name(c): c["spec"] for c in world.nodeclaims()}


def test_an_edit_the_setup_does_not_depend_on_reaches_the_next_nodeclaim() -> None:
    world = World()
    world.apply(WORKSHOP, nodepool_with(disruption={"consolidateAfter": "Never"}))
    world.scale("inflate", 1)
    assert world.settle()
    first = _claim_specs(world)
    assert [spec["expireAfter"] for spec in first.values()] == ["720h"]

    world.apply(nodepool_with(
        disruption={"consolidateAfter": "Never"},
        template={"expireAfter": "2h",
                  "startupTaints": [{"key": "agent", "effect": "NoSchedule"}]}))
    world.scale("inflate", 12)
    world.advance(30)

    new = {name: spec for name, spec in _claim_specs(world).items() if name not in first}
    assert new, "the scale-up launched no NodeClaim"
    for spec in new.values():
        assert spec["expireAfter"] == "2h"
        assert spec.get("startupTaints") == [{"key": "agent", "effect": "NoSchedule"}]


def test_a_limit_lowered_between_passes_holds_at_the_next_pass() -> None:
    world = World()
    world.apply(WORKSHOP, nodepool_with(disruption={"consolidateAfter": "Never"}))
    world.scale("inflate", 1)
    assert world.settle()
    launched = len(world.nodeclaims())

    body = nodepool_with(disruption={"consolidateAfter": "Never"})
    body["spec"]["limits"] = {"cpu": "1"}
    world.apply(body)
    world.scale("inflate", 12)
    world.advance(60)

    assert len(world.nodeclaims()) == launched
    assert world.pending_pods()


def test_a_setup_taken_from_the_pass_before_answers_to_this_passes_template() -> None:
    # The solver level: two passes over the very same instance types and DaemonSets, the
    # second with a limit the first did not have. The setup is taken over, its template
    # and its limits' room are this pass's.
    pods = replicas(8, "web", cpu="1", memory="1Gi")
    first = SchedulingProblem(pods=pods, nodepools=[nodepool()])
    before = PreparedNodes(first)
    assert solve(first, before).nodeclaims

    limited = nodepool(limits={"cpu": 0})
    second = SchedulingProblem(pods=pods, nodepools=[limited])
    result = solve(second, PreparedNodes(second, earlier=before))

    assert not result.nodeclaims
    assert len(result.unschedulable) == len(pods)
