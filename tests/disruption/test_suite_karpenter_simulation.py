"""Karpenter v1.14.1 pkg/controllers/disruption/suite_test.go, Describe("Simulate Scheduling")
and Describe("Disruption Taints"), told as stories on the workshop: what a disruption
simulation may count on (machines being deleted, a local volume's host), that commands go
on one after another within a budget, that a replacement is created before its candidates
are marked (so the provisioner launches nothing twice), and that the disrupted taint and
the DisruptionReason condition are removed when a command fails or its process died."""

from __future__ import annotations

from typing import Any

from nodewright.cluster import objects
from nodewright.cluster.api import Object
from nodewright.controllers.common import decision_log as ex
from nodewright.controllers.disruption.candidates import Candidate, evaluate
from nodewright.controllers.disruption.verdict_publishing import DISRUPTION_REASON
from nodewright.state.wellknown import DISRUPTED_TAINT, has_taint, taint_dict
from tests.controllers.conftest import WORKSHOP
from tests.controllers.test_volumes_story import claim, storage_class, volume
from tests.disruption.helpers import nodepool_with, started, statefulset
from tests.disruption.test_drift_karpenter import drift, drifted, fleet
from tests.harness import World


def tainted(world: World) -> list[str]:
    return sorted(objects.name(n) for n in world.nodes()
                  if has_taint(n["spec"].get("taints") or [], DISRUPTED_TAINT))


def reason_condition(world: World, nodeclaim: str) -> dict[str, Any] | None:
    return objects.condition(world.cluster.get("NodeClaim", nodeclaim), DISRUPTION_REASON)


# -- Simulate Scheduling ---------------------------------------------------------------------

def test_pods_of_a_candidate_may_count_on_new_capacity_while_other_nodes_are_deleted(
        world: World) -> None:
    """suite_test.go Simulate Scheduling: It("should allow pods on deleting nodes to
    reschedule to uninitialized nodes"): every other node of the NodePool is marked for
    deletion; simulating the candidate's removal still finds its pod a place (a new
    NodeClaim), with no pod error."""
    fleet(world, 4, {"consolidateAfter": "Never"})
    state = world.controllers.state
    names = sorted(objects.name(n) for n in world.nodes())
    machines = [state.node_by_name(name) for name in names]
    assert all(m is not None for m in machines)
    state.mark_for_deletion(*(m.provider_id for m in machines[1:] if m is not None))
    disruption = world.controllers.disruption.disruption
    with state.lock:
        current = disruption.new_pass(world.clock.now())
        assert machines[0] is not None
        candidate = evaluate(machines[0], current.context)
        assert isinstance(candidate, Candidate)
        simulation = current.base.simulate([candidate], consolidation=False)
    assert simulation.failures == {}
    assert [pod for planned in simulation.new_claims for pod in planned.pods] != []


def disrupting(world: World, originals: set[str]) -> int:
    """Original NodeClaims a command holds whose instance is not yet terminating (what the
    budget counts: Karpenter stops counting a node once it is drained and its instance
    is being terminated)."""
    held = set(tainted(world))
    return sum(1 for c in world.nodeclaims() if objects.name(c) in originals
               and c["status"].get("nodeName") in held
               and not objects.condition_is_true(c, "InstanceTerminating"))


def test_replacements_go_on_one_after_another_up_to_the_budget(world: World) -> None:
    """suite_test.go Simulate Scheduling: It("should allow multiple replace operations to
    happen successively"): ten drifted nodes whose pods each need a node of their own, a
    budget of 3: three commands start one after another, each with its own replacement
    (13 NodeClaims), and no fourth while they are in flight."""
    originals = fleet(world, 10, {"consolidateAfter": "Never", "budgets": [{"nodes": "3"}]})
    drift(world, {"consolidateAfter": "Never", "budgets": [{"nodes": "3"}]})
    assert world.run_until(lambda: len(drifted(world)) >= 3, timeout=600, step=1)
    assert len(world.nodeclaims()) == 13
    assert len({d.time for d in drifted(world)}) == 3
    assert {d.decision for d in drifted(world)} == {"replace"}
    most = 0
    while originals & {objects.name(c) for c in world.nodeclaims()}:
        most = max(most, disrupting(world, originals))
        world.advance(1)
    assert most == 3
    assert len(drifted(world)) == 10




def test_a_node_with_a_local_volume_is_replaced(world: World) -> None:
    """suite_test.go Simulate Scheduling: It("can replace node with a local PV (ignoring
    hostname affinity)"): a StatefulSet pod whose local volume is pinned to its node's
    hostname; consolidation replaces the node all the same (the volume's hostname cannot
    follow the pod), and the node and its NodeClaim go."""
    world.apply(WORKSHOP, nodepool_with(disruption={"consolidateAfter": "0s"}))
    world.scale("inflate", 5)
    assert world.settle()
    [node] = world.nodes()
    [original] = world.nodeclaims()
    host = objects.labels(node)["kubernetes.io/hostname"]
    world.apply(storage_class("local", provisioner="kubernetes.io/no-provisioner"),
                volume("pv-local", local_host=host, storage="local"),
                claim("data", storage="local", volume="pv-local"),
                statefulset(grace_seconds=0, requests={"cpu": "100m"}, claim="data"))
    assert world.run_until(lambda: any(p["spec"].get("nodeName") == objects.name(node)
                                       for p in world.pods(labels={"app": "db"})), timeout=120)
    world.scale("inflate", 0)
    world.advance(5)
    world.scale("inflate", 1)
    assert world.run_until(lambda: objects.name(original) not in {
        objects.name(c) for c in world.nodeclaims()}, timeout=1800)
    [replacement] = world.nodeclaims()
    [now] = world.nodes()
    assert objects.name(replacement) != objects.name(original)
    assert objects.name(now) != objects.name(node)
    assert {d.decision for d in started(world)} == {"replace"}


def test_a_candidate_is_marked_only_after_its_replacement_exists(world: World) -> None:
    """suite_test.go Simulate Scheduling: It("should ensure that we do not duplicate capacity
    for disrupted nodes with provisioning"): Karpenter hangs the replacement's creation and
    runs the provisioner meanwhile; here the provisioner is asked, at the moment the
    replacement NodeClaim is being created, what it would launch: nothing, since the
    drifted node is not yet marked for deletion and its pod still counts as placed."""
    fleet(world, 1)
    state = world.controllers.state
    launched_meanwhile: list[int] = []
    create = world.cluster.create

    def watching(obj: Object) -> Object:
        if obj.get("kind") == "NodeClaim" and not launched_meanwhile:
            assert not any(m.is_marked_for_deletion for m in state.nodes())
            assert state.provisionable_pods() == []
            launched_meanwhile.append(len(world.nodeclaims()))
        return create(obj)

    world.cluster.create = watching  # type: ignore[method-assign]
    drift(world)
    assert world.run_until(lambda: bool(drifted(world)), timeout=900, step=1)
    assert launched_meanwhile == [1]
    assert world.settle()
    assert len(world.nodeclaims()) == 1


# -- Disruption Taints -----------------------------------------------------------------------

def test_a_node_left_tainted_by_an_earlier_process_is_untainted(world: World) -> None:
    """suite_test.go Disruption Taints: It("should remove taints from NodeClaims that were
    left tainted from a previous disruption action"): a node carrying the disrupted taint
    and a DisruptionReason condition that no command holds (consolidateAfter Never, so
    nothing new starts) gets both removed."""
    world.apply(WORKSHOP, nodepool_with(disruption={"consolidateAfter": "Never"}))
    world.scale("inflate", 1)
    assert world.settle()
    [node] = world.nodes()
    [nodeclaim] = world.nodeclaims()
    world.cluster.patch("Node", objects.name(node), {"spec": {"taints": [
        *(node["spec"].get("taints") or []), taint_dict(DISRUPTED_TAINT)]}})
    conditions = [*objects.conditions(nodeclaim), {
        "type": DISRUPTION_REASON, "status": "True", "reason": "Underutilized",
        "message": "Underutilized", "lastTransitionTime": nodeclaim["metadata"][
            "creationTimestamp"]}]
    world.cluster.patch("NodeClaim", objects.name(nodeclaim),
                        {"status": {"conditions": conditions}}, subresource="status")
    assert tainted(world) == [objects.name(node)]
    world.advance(15)
    assert tainted(world) == []
    assert reason_condition(world, objects.name(nodeclaim)) is None


def test_a_failed_command_untaints_its_node(world: World) -> None:
    """suite_test.go Disruption Taints: It("should add and remove taints from NodeClaims that
    fail to disrupt"): the command (a drift replacement here) taints the candidate and sets
    DisruptionReason; its replacement NodeClaim is deleted before it initializes; the
    command fails, and as it says so the taint and the condition are gone."""
    originals = fleet(world, 1)
    [candidate] = originals
    node = str(world.cluster.get("NodeClaim", candidate)["status"]["nodeName"])
    at_failure: list[tuple[list[str], dict[str, Any] | None]] = []

    def on_decision(decision: ex.Decision) -> None:
        if decision.outcome == ex.REJECTED and decision.nodeclaim == candidate:
            at_failure.append((tainted(world), reason_condition(world, candidate)))

    world.controllers.disruption.decisions.subscribe(on_decision)
    drift(world)

    def replacement() -> str | None:
        extra = [objects.name(c) for c in world.nodeclaims()
                 if objects.name(c) not in originals]
        return extra[0] if extra else None

    assert world.run_until(lambda: replacement() is not None, timeout=900, step=1)
    assert tainted(world) == [node]
    condition = reason_condition(world, candidate)
    assert condition is not None and condition["status"] == "True"
    name = replacement()
    assert name is not None
    world.delete("NodeClaim", name)
    assert world.run_until(lambda: bool(at_failure), timeout=120, step=1)
    assert at_failure[0] == ([], None)
