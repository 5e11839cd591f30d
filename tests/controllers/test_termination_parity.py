"""Node and NodeClaim termination against Karpenter v1.14.1, decision by decision: what the
ported suites (test_karpenter_termination.py, test_karpenter_terminator.py) did not pin.

Stories run the whole in-memory cluster (tests.harness.World) and the termination
controllers; the evictor's own decisions run on a bench (an in-memory API server, a clock,
a recorder). Pods a story binds carry a finalizer, so a pod evicted or deleted stays
terminating until the story lets it go."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from nodewright import metrics
from nodewright.cluster.api import NotFoundError
from nodewright.cluster.events import EventRecorder
from nodewright.cluster.memory import InMemoryCluster
from nodewright.controllers.node.termination import Evictor
from nodewright.controllers.node.termination.controller import NodeTermination
from nodewright.runtime.clock import VirtualClock, parse_time
from tests.controllers.test_karpenter_termination import (
    bound,
    daemon_owner,
    exists,
    finalized,
    launched,
    release,
    sample,
    terminating,
)
from tests.harness import World

DO_NOT_DISRUPT = {"karpenter.sh/do-not-disrupt": "true"}
DEADLINE_ANNOTATION = "karpenter.sh/nodeclaim-termination-timestamp"


@pytest.fixture
def world() -> Iterator[World]:
    yield World()


def deadline_of(world: World, claim: str) -> Any:
    annotations = world.cluster.get("NodeClaim", claim)["metadata"].get("annotations") or {}
    value = annotations.get(DEADLINE_ANNOTATION)
    return parse_time(value) if value else None


# -- Drain order and the termination grace period -------------------------------------------


def test_daemonset_pods_wait_for_the_pods_deleted_for_the_deadline(world: World) -> None:
    """Karpenter terminator/terminator.go:87-103 (Drain): the pods deleted for the node's
    deadline (DeleteExpiringPods) stay in their priority group, and the groups after it
    wait until the group is gone. A do-not-disrupt pod with the node's whole 300 s of
    grace is deleted at once; the DaemonSet pod beside it is not evicted until that pod
    has gone, then it is."""
    ((claim, node),) = launched(world, terminationGracePeriod="300s")
    world.apply(
        bound(node, "guarded", annotations=DO_NOT_DISRUPT, terminationGracePeriodSeconds=300),
        bound(node, "daemon", owner=daemon_owner("d"), terminationGracePeriodSeconds=30),
    )
    world.advance(5)
    world.delete("Node", node)
    assert world.run_until(lambda: terminating(world, "guarded"), timeout=15, step=1)
    assert deadline_of(world, claim) is not None
    world.advance(20)
    assert not terminating(world, "daemon"), (
        "the DaemonSet pod was evicted while the non-DaemonSet pod was still terminating"
    )
    release(world, "guarded")
    world.cluster.delete("Pod", "guarded", "default", grace_period_seconds=0)  # it has ended
    assert world.run_until(lambda: terminating(world, "daemon"), timeout=30, step=1)
    release(world, "daemon")
    assert finalized(world, node)


def test_a_terminating_pod_is_deleted_again_only_once_its_grace_outlasts_the_node(
    world: World,
) -> None:
    """Karpenter terminator/terminator.go:81-83 and 108-135 (Drain, DeleteExpiringPods):
    a pod already terminating past the node's deadline is deleted again only when its own
    terminationGracePeriodSeconds would run past the deadline (deadline - grace < now),
    like any other pod. A pod with 60 s of grace, deleted by its owner with 6000 s, on a
    node with 300 s: untouched for the first 230 s, then deleted again so that it ends at
    the node's deadline."""
    ((claim, node),) = launched(world, terminationGracePeriod="300s")
    world.apply(bound(node, "slow", terminationGracePeriodSeconds=60))
    world.advance(5)
    world.cluster.delete("Pod", "slow", "default", grace_period_seconds=6000)
    world.delete("Node", node)
    world.advance(10)
    deadline = deadline_of(world, claim)
    assert deadline is not None
    until = (deadline - world.clock.now()).total_seconds() - 70
    world.advance(until)  # 70 s before the deadline: more than the pod's 60 s left
    pod = world.cluster.get("Pod", "slow", "default")
    assert pod["metadata"]["deletionGracePeriodSeconds"] == 6000, (
        "the pod was deleted again long before its own grace period reached the deadline"
    )
    world.advance(20)  # 50 s before the deadline: its 60 s would run past it
    pod = world.cluster.get("Pod", "slow", "default")
    ends = parse_time(pod["metadata"]["deletionTimestamp"])
    assert abs((ends - deadline).total_seconds()) <= 1
    assert pod["metadata"]["deletionGracePeriodSeconds"] <= 60


# -- Events, metrics and logs ---------------------------------------------------------------


class Bench:
    """An API server, a clock, a recorder and an evictor."""

    def __init__(self) -> None:
        self.clock = VirtualClock()
        self.cluster = InMemoryCluster(self.clock)
        self.recorder = EventRecorder(self.cluster, self.clock)
        self.evictor = Evictor(self.cluster, self.clock, self.recorder)
        self.node = self.cluster.create(
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-a"}, "spec": {}}
        )

    def pod(self, grace: int) -> dict[str, Any]:
        return self.cluster.create(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": "app",
                    "namespace": "default",
                    "finalizers": ["test.karpenter.sh/keep"],
                },
                "spec": {
                    "nodeName": "node-a",
                    "terminationGracePeriodSeconds": grace,
                    "containers": [{"name": "a", "image": "a"}],
                },
            }
        )


def test_the_disrupted_event_prints_the_deadline_as_go_prints_a_time() -> None:
    """Karpenter terminator/events/events.go:42-50 (DisruptPodDelete) formats the node's
    terminationTime, a time.Time parsed from the RFC 3339 annotation, with %v: Go's
    '2026-01-05 00:10:00 +0000 UTC', not the annotation's '2026-01-05T00:10:00Z'."""
    bench = Bench()
    deadline = bench.clock.now().replace(microsecond=0) + timedelta(seconds=10)
    bench.evictor.remove(bench.pod(grace=30), deadline, bench.node, "Forceful Termination")
    (event,) = [e for e in bench.cluster.list("Event") if e.get("reason") == "Disrupted"]
    shown = deadline.strftime("%Y-%m-%d %H:%M:%S") + " +0000 UTC"
    assert event["note"] == (
        f"Deleting the pod to accommodate the terminationTime {shown} of the node. The pod "
        "was granted 10 seconds of grace-period of its 30 terminationGracePeriodSeconds. "
        "This bypasses the PDB of the pod and the do-not-disrupt annotation."
    )


def test_a_pod_deleted_for_the_deadline_is_logged_at_debug(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Karpenter terminator/terminator.go:124-131: after deleting a pod for the node's
    deadline it logs "deleting pod" at V(1) (debug) with the pod, its
    terminationGracePeriodSeconds, the grace period sent and the node's terminationTime."""
    bench = Bench()
    deadline = bench.clock.now().replace(microsecond=0) + timedelta(seconds=10)
    with caplog.at_level(logging.DEBUG, logger="nodewright.controllers.node.termination"):
        bench.evictor.remove(bench.pod(grace=30), deadline, bench.node, "Forceful Termination")
    (record,) = [r for r in caplog.records if r.getMessage() == "deleting pod"]
    assert record.levelno == logging.DEBUG
    fields = record.__dict__
    assert fields["Pod"] == "default/app"
    assert fields["pod.terminationGracePeriodSeconds"] == 30
    assert fields["delete.gracePeriodSeconds"] == 10
    assert parse_time(fields["nodeclaim.terminationTime"]) == deadline


@pytest.fixture
def fresh_counters() -> Iterator[None]:
    for metric in (metrics.NODES_DRAINED, metrics.PODS_DRAINED):
        metric.clear()
    yield


def test_a_node_without_a_nodepool_label_counts_as_drained_under_an_empty_nodepool(
    world: World, fresh_counters: None
) -> None:
    """Karpenter node/termination/controller.go:176-183: karpenter_nodes_drained_total is
    labelled with node.Labels[karpenter.sh/nodepool], "" when the Node has none (a
    NodeClaim made without a NodePool), never the text "None"."""
    ((_claim, node),) = launched(world)
    world.cluster.patch("Node", node, {"metadata": {"labels": {"karpenter.sh/nodepool": None}}})
    world.delete("Node", node)
    assert finalized(world, node)
    assert sample("karpenter_nodes_drained_total", nodepool="") == 1
    assert sample("karpenter_nodes_drained_total", nodepool="None") == 0


def test_pods_of_a_node_without_a_nodeclaim_are_evicted_with_no_reason(
    world: World, fresh_counters: None
) -> None:
    """Karpenter terminator/eviction.go:235-250 (evictionReason): with no NodeClaim for the
    node the reason is "" (its terminator suite pins reason "" on
    karpenter_pods_drained_total for a node without a NodeClaim); "Forceful Termination"
    is for a NodeClaim without a DisruptionReason. A Node of ours that no NodeClaim owns is
    deleted with a pod on it: the pod's Evicted event reads "Evicted pod: "."""
    assert NodeTermination._eviction_reason({"status": {}}) == "Forceful Termination"
    launched(world)
    world.apply(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": "stray",
                "finalizers": ["karpenter.sh/termination"],
                "labels": {
                    "karpenter.sh/nodepool": "default",
                    "karpenter.k8s.aws/ec2nodeclass": "default",
                },
            },
        }
    )
    world.apply(bound("stray", "app"))
    world.advance(5)
    world.delete("Node", "stray")
    assert world.run_until(lambda: terminating(world, "app"), timeout=15, step=1)
    (event,) = world.events("Evicted")
    assert event["note"] == "Evicted pod: "
    assert sample("karpenter_pods_drained_total", reason="") == 1
    assert sample("karpenter_pods_drained_total", reason="Forceful Termination") == 0
    release(world, "app")
    assert finalized(world, "stray")


def test_the_termination_deadline_annotation_is_logged(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    """Karpenter nodeclaim/lifecycle/controller.go:290-301
    (annotateTerminationGracePeriodTerminationTime): after writing
    karpenter.sh/nodeclaim-termination-timestamp it logs "annotated nodeclaim" at info
    with the annotation's value."""
    ((claim, node),) = launched(world, terminationGracePeriod="300s")
    with caplog.at_level(logging.INFO, logger="nodewright.controllers.nodeclaim"):
        world.delete("NodeClaim", claim)
        assert world.run_until(lambda: deadline_of(world, claim) is not None, timeout=10, step=1)
    (record,) = [r for r in caplog.records if r.getMessage() == "annotated nodeclaim"]
    assert record.levelno == logging.INFO
    fields = record.__dict__
    assert fields["NodeClaim"] == claim
    assert (
        fields[DEADLINE_ANNOTATION]
        == (world.cluster.get("NodeClaim", claim)["metadata"]["annotations"][DEADLINE_ANNOTATION])
    )
    assert finalized(world, node)


# -- The NodeClaim's finalizer --------------------------------------------------------------


def test_a_finalizing_nodeclaim_leaves_a_node_of_its_name_without_a_provider_id(
    world: World,
) -> None:
    """Karpenter nodeclaim/lifecycle/controller.go:191-207 with
    utils/nodeclaim/nodeclaim.go:259-269 (AllNodesForNodeClaim): a finalizing NodeClaim
    deletes and waits for the Nodes listed by its provider ID, nothing else. A Node that
    has only the NodeClaim's node name (an EC2 node name is its private DNS name, which a
    new instance can get again) and no provider ID yet is not the NodeClaim's: it is not
    deleted, and the NodeClaim goes without waiting for it."""
    ((claim, node),) = launched(world)
    world.cluster.create(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "ip-10-0-0-1.ec2.internal"},
            "spec": {},
        }
    )
    world.cluster.patch(
        "NodeClaim",
        claim,
        {"status": {"nodeName": "ip-10-0-0-1.ec2.internal"}},
        subresource="status",
    )
    world.delete("NodeClaim", claim)
    assert world.run_until(lambda: not exists(world, "NodeClaim", claim), timeout=120, step=1)
    assert not exists(world, "Node", node)
    newcomer = world.cluster.get("Node", "ip-10-0-0-1.ec2.internal")
    assert not newcomer["metadata"].get("deletionTimestamp")


# -- A NodeClaim that goes while its node terminates ----------------------------------------


def vanishing_nodeclaim(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """From now on the API server answers 404 to every write to a NodeClaim: it went
    between the termination controller reading it and writing it."""
    cluster = world.cluster
    delete, patch = cluster.delete, cluster.patch

    def gone(kind: str, name: str) -> NotFoundError:
        return NotFoundError(f'nodeclaims.karpenter.sh "{name}" not found')

    def deleting(kind: str, name: str, *args: Any, **kwargs: Any) -> Any:
        if kind == "NodeClaim":
            raise gone(kind, name)
        return delete(kind, name, *args, **kwargs)

    def patching(kind: str, name: str, *args: Any, **kwargs: Any) -> Any:
        if kind == "NodeClaim":
            raise gone(kind, name)
        return patch(kind, name, *args, **kwargs)

    monkeypatch.setattr(cluster, "delete", deleting)
    monkeypatch.setattr(cluster, "patch", patching)


def test_a_nodeclaim_gone_before_its_deletion_does_not_stop_the_termination(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Karpenter node/termination/controller.go:109-114: deleting the node's NodeClaim
    ignores NotFound and goes on (taint, drain) in the same pass."""
    ((_claim, node),) = launched(world)
    world.delete("Node", node)  # the controllers have seen it, not reconciled it yet
    vanishing_nodeclaim(world, monkeypatch)
    termination = world.controllers.built["node.termination"]
    termination.reconcile(node)
    taints = world.cluster.get("Node", node)["spec"].get("taints") or []
    assert {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"} in taints


def test_a_nodeclaim_gone_while_its_node_drains_does_not_stop_the_drain(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Karpenter node/termination/controller.go:163-175: the NodeClaim's status patch
    ignores NotFound, and the pass still returns its requeue (the drain goes on) or
    removes the finalizer. A node waiting for a do-not-disrupt pod asks to come back
    after its first pass, whose Drained=Unknown finds no NodeClaim to write to."""
    ((_claim, node),) = launched(world)
    world.apply(bound(node, "guarded", annotations=DO_NOT_DISRUPT))
    world.advance(5)
    world.delete("Node", node)  # the controllers have seen it, not reconciled it yet
    vanishing_nodeclaim(world, monkeypatch)
    termination = world.controllers.built["node.termination"]
    result = termination.reconcile(node)
    assert result.requeue_after is not None, "the drain of the node was dropped"
