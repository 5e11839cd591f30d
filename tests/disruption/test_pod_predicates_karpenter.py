"""Karpenter's pod predicates, ported: kubernetes-sigs/karpenter v1.14.1
pkg/utils/pod/suite_test.go. Each test names its Describe and It.

Karpenter asks `IsDoNotDisruptActive` and `IsDisruptable` with an event recorder where
disruption validates a candidate's pods; ours is the disruption controller's candidate
check (`candidates.pod_blocker`), which publishes the same events through the recorder
to the API server. Here it looks at a node running one pod, at a fixed time, and the
test reads what it decided and which events it wrote. The drain's own predicate
(`podutil.do_not_disrupt_active`, behind IsEvictable) must agree on every pod.
`HasDRARequirements` is what the pod model records (`Pod.dra`, `has_dra_requirements`).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from nodewright.cluster.events import EventRecorder
from nodewright.cluster.memory import InMemoryCluster
from nodewright.controllers.common.decision_log import CAUSE_DO_NOT_DISRUPT
from nodewright.controllers.common.podrules import PdbLimits
from nodewright.controllers.disruption.candidates import CandidateContext, pod_blocker
from nodewright.runtime import VirtualClock
from nodewright.runtime.clock import format_time
from nodewright.scheduling.pods import has_dra_requirements, parse_pod_spec
from nodewright.state import podutil

NOW = datetime(2026, 1, 5, 12, tzinfo=UTC)
TEN_MINUTES_AGO = NOW - timedelta(minutes=10)
DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"


def a_pod(annotation: str | None = None, *, started: datetime | None = TEN_MINUTES_AGO,
          phase: str = "Running") -> dict[str, Any]:
    """A pod created an hour ago (as every real pod has a creation time) that started at
    `started` (None: the kubelet has not said yet)."""
    status: dict[str, Any] = {"phase": phase}
    if started is not None:
        status["startTime"] = format_time(started)
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "test-pod", "namespace": "default", "uid": "test-pod-uid",
                         "creationTimestamp": format_time(NOW - timedelta(hours=1)),
                         "annotations": {DO_NOT_DISRUPT: annotation}
                         if annotation is not None else {}},
            "spec": {"nodeName": "node-a", "containers": [{"name": "app", "image": "app"}]},
            "status": status}


class Checked:
    """What the disruption controller's check of a node running one pod decided."""

    def __init__(self, pod: dict[str, Any]) -> None:
        clock = VirtualClock(NOW)
        cluster = InMemoryCluster(clock)
        context = CandidateContext(now=NOW, nodepools={}, instance_types={},
                                   pdbs=PdbLimits(()), pods_on=lambda _: [pod],
                                   recorder=EventRecorder(cluster, clock))
        blocker = pod_blocker([pod], context)
        self.protected = blocker is not None and blocker[0] == CAUSE_DO_NOT_DISRUPT
        self.events = [(str(e["reason"]), str(e["note"])) for e in cluster.list("Event")]
        # The drain's predicate agrees on active pods (it only asks of those).
        if podutil.is_active(pod):
            assert podutil.do_not_disrupt_active(pod, NOW) is self.protected

    def told(self, text: str) -> bool:
        return any(text in note for _, note in self.events)


# -- Describe("IsDoNotDisruptActive") ---------------------------------------------------------


def test_a_pod_without_the_annotation_is_not_protected() -> None:
    """IsDoNotDisruptActive It("should return false when no annotation exists")."""
    checked = Checked(a_pod())
    assert not checked.protected
    assert checked.events == []


def test_true_protects_the_pod() -> None:
    """IsDoNotDisruptActive It("should return true for 'true' annotation")."""
    assert Checked(a_pod("true")).protected


def test_an_unreadable_duration_is_ignored_with_an_event() -> None:
    """IsDoNotDisruptActive It("should return false and emit event for invalid duration
    format")."""
    checked = Checked(a_pod("invalid-format"))
    assert not checked.protected
    assert checked.told(
        'Invalid karpenter.sh/do-not-disrupt annotation: failed to parse "invalid-format" as '
        'a duration: time: invalid duration "invalid-format", ignoring annotation')


def test_a_zero_duration_is_ignored_with_an_event() -> None:
    """IsDoNotDisruptActive It("should return false and emit event for zero duration")."""
    checked = Checked(a_pod("0s"))
    assert not checked.protected
    assert checked.told('Invalid karpenter.sh/do-not-disrupt annotation: duration "0s" must '
                        'be positive, ignoring annotation')


def test_a_negative_duration_is_ignored_with_an_event() -> None:
    """IsDoNotDisruptActive It("should return false and emit event for negative
    duration")."""
    checked = Checked(a_pod("-5m"))
    assert not checked.protected
    assert checked.told('Invalid karpenter.sh/do-not-disrupt annotation: duration "-5m" must '
                        'be positive, ignoring annotation')


def test_a_duration_still_running_protects_and_says_until_when() -> None:
    """IsDoNotDisruptActive It("should return true and emit disruptable-at event when
    duration has not expired")."""
    checked = Checked(a_pod("15m"))
    assert checked.protected
    until = format_time(TEN_MINUTES_AGO + timedelta(minutes=15))
    assert checked.told(f"The karpenter.sh/do-not-disrupt grace period will elapse at {until}")


def test_an_elapsed_duration_no_longer_protects_and_says_so() -> None:
    """IsDoNotDisruptActive It("should return false and emit grace period elapsed event when
    duration has expired")."""
    checked = Checked(a_pod("5m"))
    assert not checked.protected
    assert not checked.told("The karpenter.sh/do-not-disrupt grace period will elapse at")
    assert checked.told(
        "The karpenter.sh/do-not-disrupt grace period has elapsed, pod is now disruptable")


def test_a_duration_on_a_pod_not_started_yet_protects_it() -> None:
    """IsDoNotDisruptActive It("should fail safe when start time is nil"): without a start
    time the pod is protected, however long ago it was created."""
    checked = Checked(a_pod("5m", started=None))
    assert checked.protected
    assert checked.events == []


def test_true_protects_for_good_without_saying_until_when() -> None:
    """IsDoNotDisruptActive It("should not emit disruptable-at event for indefinite
    protection")."""
    checked = Checked(a_pod("true"))
    assert checked.protected
    assert not checked.told("The karpenter.sh/do-not-disrupt grace period will elapse at")


# -- Describe("IsDisruptable") ----------------------------------------------------------------


def test_an_active_pod_without_the_annotation_is_disruptable() -> None:
    """IsDisruptable It("should be disruptable for active pod without annotation")."""
    assert not Checked(a_pod()).protected


def test_an_active_pod_with_true_is_not_disruptable_and_nothing_is_invalid() -> None:
    """IsDisruptable It("should not be disruptable for active pod with 'true' annotation and
    not emit invalid annotation event")."""
    checked = Checked(a_pod("true"))
    assert checked.protected
    assert not checked.told("Invalid karpenter.sh/do-not-disrupt annotation")


def test_an_active_pod_whose_duration_elapsed_is_disruptable_and_nothing_is_invalid() -> None:
    """IsDisruptable It("should be disruptable for active pod with expired duration and not
    emit invalid annotation event")."""
    checked = Checked(a_pod("5m"))
    assert not checked.protected
    assert not checked.told("Invalid karpenter.sh/do-not-disrupt annotation")


def test_an_active_pod_whose_duration_runs_is_not_disruptable() -> None:
    """IsDisruptable It("should not be disruptable for active pod with non-expired
    duration")."""
    assert Checked(a_pod("15m")).protected


def test_a_terminal_pod_is_disruptable_even_with_the_annotation() -> None:
    """IsDisruptable It("should be disruptable for terminal pod even with annotation")."""
    checked = Checked(a_pod("true", phase="Succeeded"))
    assert not checked.protected
    assert checked.events == []


# -- Describe("HasDRARequirements") -----------------------------------------------------------


def dra(spec: dict[str, Any]) -> bool:
    model = parse_pod_spec("default", "p", {}, spec, "spec")
    assert model.dra is has_dra_requirements(spec)
    return model.dra


def test_a_pod_without_resource_claims_has_no_dra_requirements() -> None:
    """HasDRARequirements It("should return false when the pod references no
    ResourceClaims")."""
    assert not dra({"containers": [{"name": "app"}]})


def test_a_pod_level_resource_claim_is_a_dra_requirement() -> None:
    """HasDRARequirements It("should return true when a pod-level ResourceClaim is
    referenced")."""
    assert dra({"resourceClaims": [{"name": "gpu-claim"}], "containers": [{"name": "app"}]})


def test_a_container_consuming_a_claim_is_a_dra_requirement() -> None:
    """HasDRARequirements It("should return true when a container consumes a
    ResourceClaim")."""
    assert dra({"containers": [{"name": "app",
                                "resources": {"claims": [{"name": "gpu-claim"}]}}]})


def test_an_init_container_consuming_a_claim_is_a_dra_requirement() -> None:
    """HasDRARequirements It("should return true when an init container consumes a
    ResourceClaim")."""
    assert dra({"initContainers": [{"name": "init",
                                    "resources": {"claims": [{"name": "gpu-claim"}]}}],
                "containers": [{"name": "app"}]})
