"""Karpenter's terminator suite, ported: kubernetes-sigs/karpenter v1.14.1
pkg/controllers/node/termination/terminator/suite_test.go. Each test names its It.

Karpenter's eviction queue is our `Evictor` (one attempt per call, per-pod backoff), its
`DeleteExpiringPods` our force-delete path of the same `Evictor`: both run here against
the in-memory API server, whose eviction subresource applies PodDisruptionBudgets as the
real one does (429 when a budget blocks, 500 "more than one PodDisruptionBudget")."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from nodewright import metrics
from nodewright.cluster.api import NotFoundError
from nodewright.cluster.events import EventRecorder
from nodewright.cluster.memory import InMemoryCluster
from nodewright.controllers.node.termination import Evictor
from nodewright.runtime.clock import VirtualClock

LABELS = {"app": "guarded"}
NODE: dict[str, Any] = {"apiVersion": "v1", "kind": "Node",
                        "metadata": {"name": "node-a"}, "spec": {}}


class Bench:
    """An API server, a clock, a recorder and the evictor under test."""

    def __init__(self) -> None:
        self.clock = VirtualClock()
        self.cluster = InMemoryCluster(self.clock)
        self.recorder = EventRecorder(self.cluster, self.clock)
        self.evictor = Evictor(self.cluster, self.clock, self.recorder)
        self.node = self.cluster.create(NODE)

    def pod(self, name: str = "app", **spec: Any) -> dict[str, Any]:
        """A running, ready pod on the node (a budget counts it healthy), kept by a
        finalizer once deleted so a test can see it terminating."""
        self.cluster.create({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": dict(LABELS),
                         "finalizers": ["test.karpenter.sh/keep"]},
            "spec": {"nodeName": "node-a", "containers": [{"name": "a", "image": "a"}],
                     **spec}})
        return self.cluster.patch("Pod", name, {"status": {
            "phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}},
            "default", subresource="status")

    def pdb(self, name: str, **spec: Any) -> None:
        self.cluster.create({
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"selector": {"matchLabels": dict(LABELS)}, **spec}})

    def events(self, reason: str | None = None) -> list[dict[str, Any]]:
        return [e for e in self.cluster.list("Event")
                if reason is None or e.get("reason") == reason]

    def terminating(self, name: str = "app") -> bool:
        pod = self.cluster.get("Pod", name, "default")
        return bool(pod["metadata"].get("deletionTimestamp"))


def counter(metric: str, **labels: str) -> float:
    for family in metrics.REGISTRY.restricted_registry([metric]).collect():
        for sample in family.samples:
            if sample.name == metric and all(sample.labels.get(k) == v
                                             for k, v in labels.items()):
                return float(sample.value)
    return 0.0


@pytest.fixture(autouse=True)
def fresh_counters() -> Iterator[None]:
    for metric in (metrics.PODS_DRAINED, metrics.PODS_EVICTION_REQUESTS):
        metric.clear()
    yield


@pytest.fixture
def bench() -> Bench:
    return Bench()


def test_a_pod_that_is_gone_is_no_error_and_no_event(bench: Bench) -> None:
    """It("should succeed with no event when the pod is not found")."""
    ghost = {"metadata": {"name": "ghost", "namespace": "default", "uid": "1"}, "spec": {}}
    bench.evictor.remove(ghost, None, bench.node, "Forceful Termination")
    assert bench.events() == []
    assert bench.evictor.next_attempt() is None


def test_a_replaced_pod_is_not_the_one_waiting(bench: Bench) -> None:
    """It("should succeed with no event when the pod UID conflicts"): the backoff of a pod
    is kept under its UID, so a pod of the same name but another UID starts afresh."""
    bench.pdb("blocking", maxUnavailable=0)
    old = bench.pod()
    bench.evictor.remove(old, None, bench.node, "Forceful Termination")
    assert bench.evictor.next_attempt() is not None
    bench.evictor.forget("node-a", {("default/app", "another-uid")})
    assert bench.evictor.next_attempt() is None


def test_a_pod_recreated_under_the_name_is_not_evicted_for_the_old_one(bench: Bench) -> None:
    """Karpenter's Queue.Reconcile (terminator/eviction.go) sends the queued pod's UID as the
    Eviction's precondition, and its It("should succeed with no event when the pod UID
    conflicts"): the pod is deleted and created again between the drain reading it and the
    eviction; the new pod is not evicted, no event is told and nothing waits to retry."""
    old = bench.pod()
    bench.cluster.patch("Pod", "app", {"metadata": {"finalizers": None}}, "default")
    bench.cluster.delete("Pod", "app", "default", grace_period_seconds=0)
    bench.pod()
    bench.evictor.remove(old, None, bench.node, "Forceful Termination")
    assert not bench.terminating()
    assert bench.events() == []
    assert bench.evictor.next_attempt() is None
    assert counter("karpenter_pods_eviction_requests_total", code="409") == 1


def test_a_pod_without_budgets_is_evicted_with_an_event(bench: Bench) -> None:
    """It("should succeed with an evicted event when there are no PDBs")."""
    bench.evictor.remove(bench.pod(), None, bench.node, "Forceful Termination")
    assert bench.terminating()
    assert counter("karpenter_pods_eviction_requests_total", code="200") == 1
    assert len(bench.events("Evicted")) == 1


def test_a_budget_that_allows_the_eviction_lets_the_pod_go(bench: Bench) -> None:
    """It("should succeed with no event when there are PDBs that allow an eviction") (a
    budget of minAvailable 0: maxUnavailable needs the pods' owner to know their scale)."""
    bench.pdb("allowing", minAvailable=0)
    bench.evictor.remove(bench.pod(), None, bench.node, "Forceful Termination")
    assert bench.terminating()
    assert len(bench.events("Evicted")) == 1


def test_a_blocking_budget_is_a_failed_draining_event_and_a_retry(bench: Bench) -> None:
    """It("should return a NodeDrainError event when a PDB is blocking")."""
    bench.pdb("blocking", maxUnavailable=0)
    bench.evictor.remove(bench.pod(), None, bench.node, "Forceful Termination")
    assert not bench.terminating()
    assert bench.evictor.next_attempt() is not None, "the pod is not retried"
    assert counter("karpenter_pods_eviction_requests_total", code="429") == 1
    (event,) = bench.events()
    assert event["reason"] == "FailedDraining"
    assert "violates a PDB" in event["note"]


def test_two_budgets_on_one_pod_are_a_failed_draining_event(bench: Bench) -> None:
    """It("should return a NodeDrainError event when two PDBs refer to the same pod"):
    the eviction subresource answers 500 and Karpenter tells the node why."""
    bench.pdb("first", maxUnavailable=1)
    bench.pdb("second", maxUnavailable=0)
    bench.evictor.remove(bench.pod(), None, bench.node, "Forceful Termination")
    assert not bench.terminating()
    assert bench.evictor.next_attempt() is not None, "the pod is not retried"
    assert counter("karpenter_pods_eviction_requests_total", code="500") == 1
    (event,) = bench.events()
    assert event["reason"] == "FailedDraining"
    assert "eviction does not support multiple PDBs" in event["note"]


def test_many_pods_are_evicted_one_call_each(bench: Bench) -> None:
    """It("should ensure that calling Evict() is valid while making Add() calls"): Karpenter
    races Add against Reconcile for Go's race detector; here every pod of a node with many
    is evicted exactly once."""
    pods = [bench.pod(f"app-{i}") for i in range(50)]
    for pod in pods:
        bench.evictor.remove(pod, None, bench.node, "Forceful Termination")
    assert all(bench.terminating(f"app-{i}") for i in range(50))
    assert counter("karpenter_pods_eviction_requests_total", code="200") == 50


def test_an_eviction_counts_a_drained_pod(bench: Bench) -> None:
    """It("should increment PodsDrainedTotal metric when a pod is evicted") (the reason of
    a node without a disruption reason: Karpenter's "" when it has no NodeClaim, the
    termination controller's "Forceful Termination" otherwise)."""
    bench.evictor.remove(bench.pod(), None, bench.node, "Forceful Termination")
    assert counter("karpenter_pods_drained_total", reason="Forceful Termination") == 1
    assert counter("karpenter_pods_eviction_requests_total", code="200") == 1
    assert len(bench.events("Evicted")) == 1


def test_an_eviction_counts_under_the_nodeclaims_disruption_reason() -> None:
    """It("should increment PodsDrainedTotal metric with specific reason when a pod is
    evicted"): the NodeClaim's DisruptionReason condition names the reason."""
    from nodewright.controllers.node.termination.controller import NodeTermination

    claim = {"status": {"conditions": [{"type": "DisruptionReason", "status": "True",
                                        "reason": "SpotInterruption"}]}}
    reason = NodeTermination._eviction_reason(claim)
    assert reason == "SpotInterruption"
    bench = Bench()
    bench.evictor.remove(bench.pod(), None, bench.node, reason)
    assert counter("karpenter_pods_drained_total", reason="SpotInterruption") == 1
    assert counter("karpenter_pods_eviction_requests_total", code="200") == 1
    assert len(bench.events("Evicted")) == 1


def test_without_a_termination_time_a_pod_is_not_deleted(bench: Bench) -> None:
    """It("should not delete a pod with no nodeTerminationTime"): a do-not-disrupt pod is
    left alone (no eviction, no deletion) while the node has no deadline."""
    pod = bench.pod(terminationGracePeriodSeconds=30)
    bench.cluster.patch("Pod", "app", {"metadata": {"annotations": {
        "karpenter.sh/do-not-disrupt": "true"}}}, "default")
    pod = bench.cluster.get("Pod", "app", "default")
    bench.evictor.remove(pod, None, bench.node, "Forceful Termination")
    assert not bench.terminating()
    assert bench.events("Disrupted") == []


def test_a_pod_whose_grace_fits_before_the_deadline_is_not_deleted(bench: Bench) -> None:
    """It("should not delete a pod with terminationGracePeriodSeconds still remaining
    before nodeTerminationTime")."""
    bench.cluster.create({"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "app", "namespace": "default",
        "annotations": {"karpenter.sh/do-not-disrupt": "true"}},
        "spec": {"nodeName": "node-a", "terminationGracePeriodSeconds": 60,
                 "containers": [{"name": "a", "image": "a"}]}})
    pod = bench.cluster.get("Pod", "app", "default")
    deadline = bench.clock.now() + timedelta(minutes=5)
    bench.evictor.remove(pod, deadline, bench.node, "Forceful Termination")
    assert not bench.terminating()
    assert bench.events("Disrupted") == []


def test_a_pod_whose_grace_runs_past_the_deadline_is_deleted(bench: Bench) -> None:
    """It("should delete a pod with less than terminationGracePeriodSeconds remaining
    before nodeTerminationTime") (an unbound pod, as Karpenter's: the API server deletes
    it at once)."""
    bench.cluster.create({"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "app", "namespace": "default"},
        "spec": {"terminationGracePeriodSeconds": 120,
                 "containers": [{"name": "a", "image": "a"}]}})
    pod = bench.cluster.get("Pod", "app", "default")
    deadline = bench.clock.now() + timedelta(minutes=1)
    bench.evictor.remove(pod, deadline, bench.node, "Forceful Termination")
    with pytest.raises(NotFoundError):
        bench.cluster.get("Pod", "app", "default")
    assert len(bench.events("Disrupted")) == 1


def test_a_deadline_in_the_past_still_grants_one_second(bench: Bench) -> None:
    """It("should clamp gracePeriodSeconds to >= 1 when nodeTerminationTime is in the
    past")."""
    pod = bench.pod(terminationGracePeriodSeconds=120)
    deadline = bench.clock.now() - timedelta(hours=1)
    bench.evictor.remove(pod, deadline, bench.node, "Forceful Termination")
    assert bench.terminating()
    (event,) = bench.events("Disrupted")
    assert "granted 1 seconds of grace-period" in event["note"]
