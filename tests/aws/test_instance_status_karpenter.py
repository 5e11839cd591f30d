"""Karpenter's interruption controller suite (pkg/controllers/interruption/suite_test.go,
v1.14.1), its instance status Its, ported: each test names its It. Karpenter's
instanceStatusController is `InstanceStatusChecks` over the in-memory cluster; what
DescribeInstanceStatus answers (Karpenter's DescribeInstanceStatusOutput) goes through
`health_statuses`, the provider's own reading of EC2's entries, at an hour after the
impairment (Karpenter's Clock.Step(time.Hour)).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from nodewright.cloud.aws.instance_statuses import HealthStatus, health_statuses
from nodewright.cluster import objects
from nodewright.cluster.events import EventRecorder
from nodewright.cluster.memory import InMemoryCluster
from nodewright.controllers.interruption.instance_status import InstanceStatusChecks
from nodewright.runtime.clock import VirtualClock
from nodewright.runtime.reconciler import WatchEvent
from nodewright.state import ClusterState
from tests.controllers.metric_samples import samples
from tests.controllers.test_state import nodeclaim

IMPAIRED_AT = datetime(2026, 11, 28, 6, 0, tzinfo=UTC)
TERMINATION_TIMESTAMP = "karpenter.sh/nodeclaim-termination-timestamp"
FINALIZER = "testing/finalizer"


def failed_check() -> dict[str, Any]:
    return {"Status": "impaired", "Details": [
        {"Status": "failed", "Name": "reachability", "ImpairedSince": IMPAIRED_AT}]}


def system_failure(instance_id: str) -> dict[str, Any]:
    return {"InstanceId": instance_id, "SystemStatus": failed_check(),
            "InstanceStatus": {"Status": "initializing", "Details": [
                {"Status": "initializing", "Name": "reachability"}]}}


def instance_failure(instance_id: str) -> dict[str, Any]:
    return {"InstanceId": instance_id, "InstanceStatus": failed_check()}


def retirement(instance_id: str) -> dict[str, Any]:
    return {"InstanceId": instance_id, "Events": [{"Code": "instance-retirement"}]}


@dataclass
class StatusAnswer:
    """DescribeInstanceStatus's answer, read as the provider reads it."""

    entries: list[Mapping[str, Any]] = field(default_factory=list)
    now: datetime = IMPAIRED_AT + timedelta(hours=1)

    def list(self) -> Sequence[HealthStatus]:
        return health_statuses(self.entries, self.now)


@dataclass
class World:
    cluster: InMemoryCluster
    state: ClusterState
    answer: StatusAnswer
    controller: InstanceStatusChecks

    def claim(self, name: str, finalizer: bool = False) -> str:
        instance_id = f"i-{uuid.uuid4().hex[:17]}"
        body = nodeclaim(name, f"aws:///us-west-2a/{instance_id}")
        if finalizer:
            body["metadata"]["finalizers"] = [FINALIZER]
        created = self.cluster.create(body)
        stored = self.cluster.update({**created, "status": body["status"]},
                                     subresource="status")
        self.state.observe(WatchEvent("ADDED", stored))
        return instance_id

    def stored(self, name: str) -> dict[str, Any] | None:
        return next((c for c in self.cluster.list("NodeClaim")
                     if c["metadata"]["name"] == name), None)


def build(dry_run: bool = False) -> World:
    clock = VirtualClock()
    cluster = InMemoryCluster(clock)
    state = ClusterState(clock)
    answer = StatusAnswer()
    controller = InstanceStatusChecks(cluster, clock, state, EventRecorder(cluster, clock),
                                      answer, dry_run=dry_run)
    return World(cluster, state, answer, controller)


@pytest.fixture
def world() -> World:
    return build()


@pytest.fixture
def dry_run() -> World:
    return build(dry_run=True)


def counted(name: str, **labels: str) -> float:
    return sum(sample.value for sample in samples(name)
               if all(sample.labels.get(k) == v for k, v in labels.items()))


def unhealthy(category: str) -> float:
    return counted("karpenter_interruption_instance_status_unhealthy_total", category=category)


def disrupted(reason: str) -> float:
    return counted("karpenter_nodeclaims_disrupted_total", reason=reason, nodepool="default")


@pytest.mark.parametrize(("entry", "reason", "category"), [
    pytest.param(system_failure, "system_status", "SystemStatus",
                 id="should forcefully terminate the NodeClaim when an instance is unhealthy "
                    "due to EC2 system status checks"),
    pytest.param(instance_failure, "instance_status", "InstanceStatus",
                 id="should forcefully terminate the NodeClaim when an instance has "
                    "InstanceStatus check failure"),
    pytest.param(retirement, "event_status", "EventStatus",
                 id="should delete the NodeClaim when an instance has a scheduled maintenance "
                    "event"),
])
def test_an_unhealthy_instance_loses_its_nodeclaim(world: World, entry: Any, reason: str,
                                                   category: str) -> None:
    """One It per test id: the disruption and the unhealthy instance are counted."""
    before_disrupted, before_unhealthy = disrupted(reason), unhealthy(category)
    world.answer.entries = [entry(world.claim("sick"))]

    world.controller.reconcile("")

    assert world.stored("sick") is None
    assert disrupted(reason) - before_disrupted == 1
    assert unhealthy(category) - before_unhealthy == 1


@pytest.mark.parametrize(("entries", "annotated"), [
    pytest.param([system_failure], True,
                 id="should annotate the NodeClaim with a termination timestamp for forceful "
                    "termination"),
    pytest.param([retirement], False,
                 id="should NOT annotate the NodeClaim with a termination timestamp for "
                    "scheduled maintenance events"),
    pytest.param([system_failure, retirement], True,
                 id="should forcefully terminate when an instance has both system status "
                    "failure and a scheduled event"),
])
def test_forceful_termination_is_marked_by_the_termination_timestamp(
    world: World, entries: list[Any], annotated: bool
) -> None:
    """One It per test id: the NodeClaim (kept by a finalizer) is deleting; the
    termination timestamp says the drain skips PodDisruptionBudgets."""
    instance_id = world.claim("sick", finalizer=True)
    merged: dict[str, Any] = {}
    for entry in entries:
        merged.update(entry(instance_id))
    world.answer.entries = [merged]

    world.controller.reconcile("")

    stored = world.stored("sick")
    assert stored is not None and objects.is_deleting(stored)
    assert (TERMINATION_TIMESTAMP in objects.annotations(stored)) is annotated


def test_the_termination_timestamp_is_written_once(world: World) -> None:
    """It("should not re-annotate the NodeClaim on subsequent reconciles")"""
    world.answer.entries = [system_failure(world.claim("sick", finalizer=True))]
    world.controller.reconcile("")
    first = world.stored("sick")
    assert first is not None and TERMINATION_TIMESTAMP in objects.annotations(first)

    world.controller.reconcile("")

    again = world.stored("sick")
    assert again is not None
    assert objects.annotations(again)[TERMINATION_TIMESTAMP] == objects.annotations(
        first)[TERMINATION_TIMESTAMP]
    assert again["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]


def test_a_dry_run_counts_and_keeps_the_nodeclaim(dry_run: World) -> None:
    """It("should NOT delete the NodeClaim when dry run is enabled but should still emit the
    metric")"""
    before = unhealthy("InstanceStatus")
    dry_run.answer.entries = [instance_failure(dry_run.claim("sick"))]

    dry_run.controller.reconcile("")

    assert unhealthy("InstanceStatus") - before == 1
    assert dry_run.stored("sick") is not None


def test_an_instance_is_counted_once_while_it_stays_unhealthy(dry_run: World) -> None:
    """It("should only emit the metric once across multiple reconciles for the same unhealthy
    instance")"""
    before = unhealthy("InstanceStatus")
    dry_run.answer.entries = [instance_failure(dry_run.claim("sick"))]

    for _ in range(3):
        dry_run.controller.reconcile("")

    assert unhealthy("InstanceStatus") - before == 1


def test_each_unhealthy_instance_is_counted(dry_run: World) -> None:
    """It("should emit the metric for each unique unhealthy instance")"""
    before = unhealthy("InstanceStatus")
    dry_run.answer.entries = [instance_failure(dry_run.claim("sick-1")),
                              instance_failure(dry_run.claim("sick-2"))]

    dry_run.controller.reconcile("")
    assert unhealthy("InstanceStatus") - before == 2
    dry_run.controller.reconcile("")
    assert unhealthy("InstanceStatus") - before == 2


def test_an_instance_unhealthy_again_is_counted_again(dry_run: World) -> None:
    """It("should re-emit the metric when an instance recovers and becomes unhealthy
    again")"""
    before = unhealthy("InstanceStatus")
    sick = [instance_failure(dry_run.claim("sick"))]
    dry_run.answer.entries = sick
    dry_run.controller.reconcile("")
    assert unhealthy("InstanceStatus") - before == 1

    dry_run.answer.entries = []
    dry_run.controller.reconcile("")
    dry_run.answer.entries = sick
    dry_run.controller.reconcile("")

    assert unhealthy("InstanceStatus") - before == 2
