"""Karpenter's pod metrics suite, the Its about how long a pod waits, told on the pod metrics
controller and the cluster state alone: a pod that finishes without starting leaves the
unstarted gauges and never reaches the startup Summary; a pod waits "undecided" from its
first sight by the provisioner to the first scheduling decision; a failed solve takes back
the time the pod was thought schedulable.

Ported from Karpenter v1.14.1 pkg/controllers/metrics/pod/suite_test.go; each test names the
It it comes from. Karpenter's provisioner acks a pod when it lists it as pending; here the
cluster state acks a pod when it first sees it provisionable (kube-scheduler found no
node), so "ack" below is the pod's arrival.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

from nodewright import metrics
from nodewright.controllers.metrics.pods import PodMetrics
from nodewright.runtime.clock import VirtualClock, format_time
from nodewright.runtime.reconciler import WatchEvent
from nodewright.state import ClusterState
from tests.controllers.metric_samples import sample_value

KEY = "default/waiting"
UNSTARTED = ("karpenter_pods_unstarted_time_seconds",
             "karpenter_pods_provisioning_unstarted_time_seconds")
UNBOUND = ("karpenter_pods_unbound_time_seconds",
           "karpenter_pods_provisioning_unbound_time_seconds")
UNDECIDED = "karpenter_pods_provisioning_scheduling_undecided_time_seconds"


@pytest.fixture(autouse=True)
def fresh_gauges() -> Iterator[None]:
    """The registry is process-wide: clear the gauges these stories read."""
    for gauge in (metrics.PODS_STATE, metrics.PODS_UNBOUND_TIME, metrics.PODS_UNSTARTED_TIME,
                  metrics.PODS_PROVISIONING_UNBOUND_TIME,
                  metrics.PODS_PROVISIONING_UNSTARTED_TIME,
                  metrics.PODS_SCHEDULING_UNDECIDED_TIME):
        gauge.clear()
    yield


class Story:
    """One pod, the cluster state that watches it and the pod metrics controller."""

    def __init__(self) -> None:
        self.clock = VirtualClock()
        self.state = ClusterState(self.clock)
        self.controller = PodMetrics(self.clock, self.state)
        self.pod: dict[str, Any] = {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "waiting", "namespace": "default", "uid": "waiting-uid",
                         "creationTimestamp": format_time(self.clock.now())},
            "spec": {"containers": [{"name": "app",
                                     "resources": {"requests": {"cpu": "100m"}}}]},
            # kube-scheduler's verdict: what makes the pod provisionable
            "status": {"phase": "Pending", "conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                 "lastTransitionTime": format_time(self.clock.now())}]},
        }

    def apply(self, **status: Any) -> None:
        self.pod["status"] = {**self.pod["status"], **status}
        self.state.observe(WatchEvent("MODIFIED", copy.deepcopy(self.pod)))
        self.controller.reconcile(KEY)

    def delete(self) -> None:
        self.state.observe(WatchEvent("DELETED", copy.deepcopy(self.pod)))
        self.controller.reconcile(KEY)

    def conditions(self, **statuses: str) -> list[dict[str, str]]:
        now = format_time(self.clock.now())
        return [{"type": kind, "status": status, "lastTransitionTime": now}
                for kind, status in statuses.items()]

    def advance(self, seconds: float) -> None:
        self.clock.advance(seconds)


def present(metric: str) -> bool:
    for family in metrics.REGISTRY.restricted_registry([metric]).collect():
        for sample in family.samples:
            if (sample.name == metric and sample.labels.get("name") == "waiting"
                    and sample.labels.get("namespace") == "default"):
                return True
    return False


def startup_observations() -> list[float]:
    return [sample_value(f"{name}_count") or 0.0
            for name in ("karpenter_pods_startup_duration_seconds",
                         "karpenter_pods_provisioning_startup_duration_seconds")]


def a_pending_pod_thought_schedulable() -> Story:
    story = Story()
    story.advance(3600)
    story.state.record_scheduling_decisions([KEY], {KEY: "nodeclaim/nc1"})
    story.apply()
    assert all(present(metric) for metric in UNSTARTED)
    return story


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_a_pod_that_finishes_without_starting_leaves_the_unstarted_gauges(phase: str) -> None:
    """It "should update the pod unstarted time metrics when the pod has succeeded" and It
    "should update the pod unstarted time metrics when the pod has failed"."""
    story = a_pending_pod_thought_schedulable()
    before = startup_observations()
    story.apply(phase=phase, conditions=story.conditions(Ready="False", PodScheduled="True"))
    assert not any(present(metric) for metric in UNSTARTED)
    assert startup_observations() == before


def test_a_pod_waits_undecided_from_its_ack_to_the_first_decision() -> None:
    """It "should create and delete provisioning undecided metrics based on scheduling
    simulatinos" (sic). The pod is acked as it arrives provisionable."""
    story = Story()
    story.apply()
    story.advance(3600)
    story.controller.reconcile(KEY)
    assert present(UNDECIDED)
    story.state.record_scheduling_decisions([KEY], {KEY: "nodeclaim/nc1"})
    story.controller.reconcile(KEY)
    assert not present(UNDECIDED)


def test_a_deleted_pod_is_no_longer_undecided() -> None:
    """It "should delete provisioning undecided metrics based on pod deletes"."""
    story = Story()
    story.apply()
    story.advance(3600)
    story.controller.reconcile(KEY)
    assert present(UNDECIDED)
    story.delete()
    assert not present(UNDECIDED)


def test_a_bound_pod_is_no_longer_undecided() -> None:
    """It "should delete provisioning undecided metrics when the pod is already bound"."""
    story = Story()
    story.apply()
    story.advance(3600)
    story.controller.reconcile(KEY)
    assert present(UNDECIDED)
    story.apply(conditions=story.conditions(PodScheduled="True"))
    assert not present(UNDECIDED)


def test_a_failed_solve_takes_back_the_provisioning_wait() -> None:
    """It "should delete pod unbound and unstarted time metrics when pod schedulable time is
    zero": once a later solve cannot place the pod, the provisioning gauges (counted from
    when it was thought schedulable) go; the gauges counted from creation stay."""
    story = a_pending_pod_thought_schedulable()
    assert present("karpenter_pods_provisioning_unbound_time_seconds")
    story.state.record_scheduling_decisions([KEY], {})
    story.controller.reconcile(KEY)
    assert not present("karpenter_pods_provisioning_unbound_time_seconds")
    assert not present("karpenter_pods_provisioning_unstarted_time_seconds")
    assert all(present(metric) for metric in (UNSTARTED[0], UNBOUND[0]))
