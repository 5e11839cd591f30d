"""Karpenter v1.14.1 pkg/controllers/disruption/suite_test.go, Describe("Candidate Filtering"):
the Its test_suite_karpenter.py does not tell. Karpenter calls `NewCandidate` on one
machine with a disruption class; here the workshop's m5.large with one inflate pod is
judged by `candidates.evaluate` on a pass of the running disruption loop, graceful
(consolidation's class) or eventual (drift's), and what blocks it is named by the cause
and message the loop publishes (its DisruptionBlocked event on the Node)."""

from __future__ import annotations

from typing import Any

from nodewright.cluster import objects
from nodewright.controllers.common import decision_log as ex
from nodewright.controllers.disruption.candidates import Blocked, Candidate, evaluate
from nodewright.controllers.disruption.commands import Command
from tests.disruption.test_drift_karpenter import GUARD
from tests.disruption.test_suite_karpenter import m5_large_with_one_pod
from tests.harness import World


def judge(world: World, node: str, *, eventual: bool = False) -> Candidate | Blocked:
    """Karpenter's NewCandidate: the machine as a candidate of a fresh pass, or why not."""
    world.deliver()
    disruption = world.controllers.disruption.disruption
    state = world.controllers.state
    with state.lock:
        machine = state.node_by_name(node)
        assert machine is not None
        return evaluate(machine, disruption.new_pass(world.clock.now()).context,
                        eventual=eventual)


def expect_blocked(world: World, node: str, cause: str, text: str, *,
                   eventual: bool = False) -> None:
    verdict = judge(world, node, eventual=eventual)
    assert isinstance(verdict, Blocked), verdict
    assert (verdict.cause, text in verdict.message) == (cause, True), verdict


def expect_candidate(world: World, node: str, *, eventual: bool = False) -> Candidate:
    verdict = judge(world, node, eventual=eventual)
    assert isinstance(verdict, Candidate), verdict
    assert verdict.node.node is not None and verdict.node.nodeclaim is not None
    return verdict


def expect_blocked_event(world: World, node: str, text: str) -> None:
    """The loop tells it on the Node, as Karpenter's recorder does: once an earlier
    DisruptionBlocked of the node is out of its two-minute dedupe (the node was nominated
    while its first pods waited for it to initialize, as Karpenter nominates it on each
    provisioning pass)."""
    world.advance(140)
    notes = [str(e.get("note")) for e in world.events(ex.DISRUPTION_BLOCKED, kind="Node")
             if (e.get("regarding") or {}).get("name") == node]
    assert any(text in note for note in notes), notes


# Karpenter's test sets it on the NodeClaim it creates; ours come from the NodePool.
GRACE = {"terminationGracePeriod": "300s"}


def bound(name: str, node: str, *, annotations: dict[str, str] | None = None,
          labels: dict[str, str] | None = None, owner: dict[str, Any] | None = None,
          extra_spec: dict[str, Any] | None = None) -> dict[str, Any]:
    """A pod bound to `node` by hand (Karpenter's ExpectManualBinding)."""
    metadata: dict[str, Any] = {"name": name, "namespace": "default",
                                "labels": labels or {}, "annotations": annotations or {}}
    if owner is not None:
        metadata["ownerReferences"] = [{**owner, "controller": True}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
            "spec": {"nodeName": node, "restartPolicy": "Never", **(extra_spec or {}),
                     "containers": [{"name": "c", "resources": {"requests": {"cpu": "10m"}}}]}}


def node_owner(world: World, node: str) -> dict[str, Any]:
    """What makes a pod a mirror pod: its Node controls it."""
    body = world.cluster.get("Node", node)
    return {"apiVersion": "v1", "kind": "Node", "name": node, "uid": objects.uid(body)}


BLOCKING_PDB = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                "metadata": {"name": "blocking", "namespace": "default"},
                "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"test": "value"}}}}
PDB_TEXT = "PodDisruptionBudget default/blocking allows no disruption"
DND_TEXT = "karpenter.sh/do-not-disrupt"


def guarded_by_pdb(world: World, template: dict[str, Any] | None = None) -> str:
    node = m5_large_with_one_pod(world, template=template)
    world.apply(bound("guarded", node, labels={"test": "value"}), BLOCKING_PDB)
    world.advance(5)
    return node


def guarded_by_annotation(world: World, template: dict[str, Any] | None = None) -> str:
    node = m5_large_with_one_pod(world, GUARD % "true", template=template)
    [guard] = world.pods(labels={"app": "guard"}) or [world.cluster.get("Pod", "guard",
                                                                         "default")]
    assert guard["spec"]["nodeName"] == node
    return node


# -- do-not-disrupt pods and PDBs, by disruption class and terminationGracePeriod ----------

def test_a_do_not_disrupt_mirror_pod_keeps_its_node(world: World) -> None:
    """suite_test.go Candidate Filtering: It("should not consider candidates that have
    do-not-disrupt mirror pods scheduled")."""
    node = m5_large_with_one_pod(world)
    world.apply(bound("static-web", node, annotations={DND_TEXT: "true"},
                      owner=node_owner(world, node)))
    expect_blocked(world, node, ex.CAUSE_DO_NOT_DISRUPT, "pod default/static-web")
    expect_blocked_event(world, node, "default/static-web")


def test_eventual_disruption_passes_a_do_not_disrupt_pod_when_a_grace_period_is_set(
        world: World) -> None:
    """suite_test.go Candidate Filtering: It("should consider candidates that have
    do-not-disrupt pods scheduled with a terminationGracePeriod set for eventual
    disruption")."""
    node = guarded_by_annotation(world, GRACE)
    expect_candidate(world, node, eventual=True)


def test_eventual_disruption_passes_a_pdb_blocked_pod_when_a_grace_period_is_set(
        world: World) -> None:
    """suite_test.go Candidate Filtering: It("should consider candidates that have
    PDB-blocked pods scheduled with a terminationGracePeriod set for eventual
    disruption")."""
    node = guarded_by_pdb(world, GRACE)
    expect_candidate(world, node, eventual=True)


def test_graceful_disruption_stops_at_a_do_not_disrupt_pod_despite_a_grace_period(
        world: World) -> None:
    """suite_test.go Candidate Filtering: It("should not consider candidates that have
    do-not-disrupt pods scheduled with a terminationGracePeriod set for graceful
    disruption")."""
    node = guarded_by_annotation(world, GRACE)
    expect_blocked(world, node, ex.CAUSE_DO_NOT_DISRUPT, "pod default/guard")
    expect_blocked_event(world, node, "default/guard")


def test_graceful_disruption_stops_at_a_pdb_blocked_pod_despite_a_grace_period(
        world: World) -> None:
    """suite_test.go Candidate Filtering: It("should not consider candidates that have
    PDB-blocked pods scheduled with a terminationGracePeriod set for graceful
    disruption")."""
    node = guarded_by_pdb(world, GRACE)
    expect_blocked(world, node, ex.CAUSE_PDB, PDB_TEXT)
    expect_blocked_event(world, node, PDB_TEXT)


def test_eventual_disruption_stops_at_a_do_not_disrupt_pod_without_a_grace_period(
        world: World) -> None:
    """suite_test.go Candidate Filtering: It("should not consider candidates that have
    do-not-disrupt pods scheduled without a terminationGracePeriod set for eventual
    disruption")."""
    node = guarded_by_annotation(world)
    expect_blocked(world, node, ex.CAUSE_DO_NOT_DISRUPT, "pod default/guard", eventual=True)


def test_eventual_disruption_stops_at_a_pdb_blocked_pod_without_a_grace_period(
        world: World) -> None:
    """suite_test.go Candidate Filtering: It("should not consider candidates that have
    PDB-blocked pods scheduled without a terminationGracePeriod set for eventual
    disruption")."""
    node = guarded_by_pdb(world)
    expect_blocked(world, node, ex.CAUSE_PDB, PDB_TEXT, eventual=True)


def test_graceful_disruption_stops_at_a_do_not_disrupt_pod_without_a_grace_period(
        world: World) -> None:
    """suite_test.go Candidate Filtering: It("should not consider candidates that have
    do-not-disrupt pods without a terminationGracePeriod set for graceful disruption")."""
    node = guarded_by_annotation(world)
    expect_blocked(world, node, ex.CAUSE_DO_NOT_DISRUPT, "pod default/guard")


def test_graceful_disruption_stops_at_a_fully_blocking_pdb_without_a_grace_period(
        world: World) -> None:
    """suite_test.go Candidate Filtering: It("should not consider candidates that have fully
    blocking PDBs without a terminationGracePeriod set for graceful disruption")."""
    node = guarded_by_pdb(world)
    expect_blocked(world, node, ex.CAUSE_PDB, PDB_TEXT)


def test_a_fully_blocking_pdb_keeps_its_node(world: World) -> None:
    """suite_test.go Candidate Filtering: It("should not consider candidates that have fully
    blocking PDBs")."""
    node = guarded_by_pdb(world)
    expect_blocked(world, node, ex.CAUSE_PDB, PDB_TEXT)
    expect_blocked_event(world, node, PDB_TEXT)


AGENT = """
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: default}
spec:
  selector: {matchLabels: {test: value}}
  template:
    metadata: {labels: {test: value}}
    spec:
      containers: [{name: agent, resources: {requests: {cpu: 10m}}}]
"""


def test_a_fully_blocking_pdb_on_a_daemonset_pod_keeps_its_node(world: World) -> None:
    """suite_test.go Candidate Filtering: It("should not consider candidates that have fully
    blocking PDBs on daemonset pods")."""
    node = m5_large_with_one_pod(world, AGENT)
    world.apply(BLOCKING_PDB)
    assert world.run_until(lambda: any(
        p["spec"].get("nodeName") == node and p["status"].get("phase") == "Running"
        for p in world.pods(labels={"test": "value"})), timeout=120)
    expect_blocked(world, node, ex.CAUSE_PDB, "PodDisruptionBudget default/blocking")


def test_a_fully_blocking_pdb_on_a_mirror_pod_does_not_keep_its_node(world: World) -> None:
    """suite_test.go Candidate Filtering: It("should consider candidates that have fully
    blocking PDBs on mirror pods") (a mirror pod is never evicted)."""
    node = m5_large_with_one_pod(world)
    world.apply(bound("static-web", node, labels={"test": "value"},
                      owner=node_owner(world, node)), BLOCKING_PDB)
    expect_candidate(world, node)


def finish(world: World, *names: str) -> None:
    for name, phase in zip(names, ("Succeeded", "Failed"), strict=False):
        world.cluster.patch("Pod", name, {"status": {"phase": phase}}, "default",
                            subresource="status")
    world.deliver()


def test_a_fully_blocking_pdb_on_terminal_pods_does_not_keep_their_node(world: World) -> None:
    """suite_test.go Candidate Filtering: It("should consider candidates that have fully
    blocking PDBs on terminal pods") (one Succeeded, one Failed)."""
    node = m5_large_with_one_pod(world)
    world.apply(bound("done", node, labels={"test": "value"}),
                bound("broken", node, labels={"test": "value"}), BLOCKING_PDB)
    finish(world, "done", "broken")
    expect_candidate(world, node)


def test_a_fully_blocking_pdb_on_a_terminating_pod_does_not_keep_its_node(
        world: World) -> None:
    """suite_test.go Candidate Filtering: It("should consider candidates that have fully
    blocking PDBs on terminating pods")."""
    node = m5_large_with_one_pod(world)
    world.apply(bound("leaving", node, labels={"test": "value"},
                      extra_spec={"terminationGracePeriodSeconds": 3600}), BLOCKING_PDB)
    world.advance(5)
    world.delete("Pod", "leaving", "default")
    assert objects.is_deleting(world.cluster.get("Pod", "leaving", "default"))
    expect_candidate(world, node)


def test_a_do_not_disrupt_node_is_not_a_candidate(world: World) -> None:
    """suite_test.go Candidate Filtering: It("should not consider candidates that have
    do-not-disrupt on nodes") (Karpenter annotates the NodeClaim and its Node)."""
    node = m5_large_with_one_pod(world)
    world.cluster.patch("Node", node, {"metadata": {"annotations": {DND_TEXT: "true"}}})
    expect_blocked(world, node, ex.CAUSE_DO_NOT_DISRUPT, "annotation")


# -- what the machine itself is ----------------------------------------------------------

UNMANAGED = """
apiVersion: v1
kind: Node
metadata:
  name: hand-made
  labels: {type: karpenter, kubernetes.io/hostname: hand-made}
spec: {providerID: "aws:///us-west-2a/i-0hand0made0000001"}
"""


def test_a_node_without_a_nodeclaim_is_not_a_candidate(world: World) -> None:
    """suite_test.go Candidate Filtering: It("should not consider candidates that has just a
    Node representation")."""
    m5_large_with_one_pod(world)
    world.apply(UNMANAGED)
    expect_blocked(world, "hand-made", ex.CAUSE_NODEPOOL, "node isn't managed by karpenter")


def test_a_nodeclaim_without_a_node_is_not_a_candidate(world: World) -> None:
    """suite_test.go Candidate Filtering: It("should not consider candidate that has just a
    NodeClaim representation") (a NodeClaim launched whose node has not registered)."""
    node = m5_large_with_one_pod(world)
    world.scale("inflate", 20)
    state = world.controllers.state
    assert world.run_until(lambda: any(m.node is None and m.provider_id
                                       for m in state.nodes()), timeout=120, step=1)
    [launching, *_] = [m for m in state.nodes() if m.node is None and m.provider_id]
    with state.lock:
        verdict = evaluate(launching, world.controllers.disruption.disruption.new_pass(
            world.clock.now()).context)
    assert isinstance(verdict, Blocked)
    assert (verdict.cause, verdict.message) == (ex.CAUSE_NOT_INITIALIZED,
                                                "nodeclaim does not have a node yet")
    assert node


def test_a_deleting_node_is_not_a_candidate(world: World) -> None:
    """suite_test.go Candidate Filtering: It("should not consider candidates that are
    deleting") (its NodeClaim has a deletionTimestamp)."""
    node = m5_large_with_one_pod(world)
    [claim] = world.nodeclaims()
    world.cluster.patch("NodeClaim", objects.name(claim), {"metadata": {"finalizers": [
        *objects.meta(claim).get("finalizers", []), "test/hold"]}})
    world.delete("NodeClaim", objects.name(claim))
    expect_blocked(world, node, ex.CAUSE_DELETING, "node is deleting or marked for deletion")


def test_a_node_marked_for_deletion_is_not_a_candidate(world: World) -> None:
    """suite_test.go Candidate Filtering: It("should not consider candidates that are
    MarkedForDeletion")."""
    node = m5_large_with_one_pod(world)
    [body] = world.nodes()
    world.controllers.state.mark_for_deletion(body["spec"]["providerID"])
    expect_blocked(world, node, ex.CAUSE_DELETING, "node is deleting or marked for deletion")


def test_a_node_not_yet_initialized_is_not_a_candidate(world: World) -> None:
    """suite_test.go Candidate Filtering: It("should not consider candidates that aren't yet
    initialized")."""
    node = m5_large_with_one_pod(world)
    world.cluster.patch("Node", node, {"metadata": {"labels": {
        "karpenter.sh/initialized": None}}})
    expect_blocked(world, node, ex.CAUSE_NOT_INITIALIZED, "node isn't initialized")


def test_a_node_without_a_nodepool_label_is_not_a_candidate(world: World) -> None:
    """suite_test.go Candidate Filtering: It("should not consider candidates that are not
    owned by a NodePool (no karpenter.sh/nodepool label)")."""
    node = m5_large_with_one_pod(world)
    [claim] = world.nodeclaims()
    for kind, name in (("NodeClaim", objects.name(claim)), ("Node", node)):
        world.cluster.patch(kind, name, {"metadata": {"labels": {"karpenter.sh/nodepool": None}}})
    expect_blocked(world, node, ex.CAUSE_NODEPOOL, "karpenter.sh/nodepool")
    expect_blocked_event(world, node, "karpenter.sh/nodepool")


def test_a_node_of_a_nodepool_that_does_not_exist_is_not_a_candidate(world: World) -> None:
    """suite_test.go Candidate Filtering: It("should not consider candidates that are have a
    non-existent NodePool")."""
    node = m5_large_with_one_pod(world)
    [claim] = world.nodeclaims()
    for kind, name in (("NodeClaim", objects.name(claim)), ("Node", node)):
        world.cluster.patch(kind, name, {"metadata": {"labels": {"karpenter.sh/nodepool":
                                                                 "gone"}}})
    expect_blocked(world, node, ex.CAUSE_NODEPOOL, "NodePool gone: not found")
    expect_blocked_event(world, node, "NodePool gone: not found")


def without_label(world: World, key: str) -> str:
    node = m5_large_with_one_pod(world)
    [claim] = world.nodeclaims()
    for kind, name in (("NodeClaim", objects.name(claim)), ("Node", node)):
        world.cluster.patch(kind, name, {"metadata": {"labels": {key: None}}})
    return node


def test_a_node_without_a_capacity_type_label_is_a_candidate(world: World) -> None:
    """suite_test.go Candidate Filtering: It("should consider candidates that do not have the
    karpenter.sh/capacity-type label")."""
    node = without_label(world, "karpenter.sh/capacity-type")
    assert expect_candidate(world, node).capacity_type == ""


def test_a_node_without_a_zone_label_is_a_candidate(world: World) -> None:
    """suite_test.go Candidate Filtering: It("should consider candidates that do not have the
    topology.kubernetes.io/zone label")."""
    node = without_label(world, "topology.kubernetes.io/zone")
    assert expect_candidate(world, node).zone == ""


def test_a_node_without_an_instance_type_label_is_a_candidate(world: World) -> None:
    """suite_test.go Candidate Filtering: It("should consider candidates that do not have the
    node.kubernetes.io/instance-type label")."""
    node = without_label(world, "node.kubernetes.io/instance-type")
    assert expect_candidate(world, node).instance_type is None


def test_a_node_whose_instance_type_cannot_be_resolved_is_a_candidate(world: World) -> None:
    """suite_test.go Candidate Filtering: It("should consider candidates that have an
    instance type that cannot be resolved") (a type the NodePool's instance types lack)."""
    node = m5_large_with_one_pod(world)
    [claim] = world.nodeclaims()
    for kind, name in (("NodeClaim", objects.name(claim)), ("Node", node)):
        world.cluster.patch(kind, name, {"metadata": {"labels": {
            "node.kubernetes.io/instance-type": "m5.notatype"}}})
    candidate = expect_candidate(world, node)
    assert (candidate.instance_type, candidate.price) == (None, 0.0)


def test_a_node_of_a_command_in_the_queue_is_not_a_candidate(world: World) -> None:
    """suite_test.go Candidate Filtering: It("should not consider candidates that are
    actively being processed in the queue") (a drift command with no replacements)."""
    node = m5_large_with_one_pod(world)
    candidate = expect_candidate(world, node)
    disruption = world.controllers.disruption.disruption
    command = Command(method=ex.DRIFT, reason="Drifted", consolidation_type="",
                      candidates=[candidate],
                      replacements=[])
    state = world.controllers.state
    with state.lock:
        disruption.orchestrator.start(command, {}, {}, world.clock.now())
    assert disruption.orchestrator.holds(candidate.provider_id)
    expect_blocked(world, node, ex.CAUSE_DELETING, "node is deleting or marked for deletion")
