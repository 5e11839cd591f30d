"""Interruptions injected into the simulated EC2 reach the controller through the queue, and
the instances really go away when AWS would take them."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from nodewright.cloud.aws.interruption_events import EventKind, InterruptionEvent
from nodewright.cloud.provider import NodeClaimNotFoundError
from nodewright.cloud.sim import SimulatedEC2
from nodewright.cluster.memory import InMemoryCluster
from nodewright.runtime import VirtualClock

from .conftest import node_class, nodeclaim


class Inbox:
    """An interruption handler that keeps what it was given."""

    def __init__(self) -> None:
        self.events: list[InterruptionEvent] = []

    def __call__(self, events: Sequence[InterruptionEvent]) -> None:
        self.events.extend(events)

    def drain(self, ec2: SimulatedEC2) -> list[tuple[EventKind, str]]:
        self.events.clear()
        while ec2.interruption_queue.poll_once(self).received:
            pass
        return [(event.kind, event.detail) for event in self.events]


def running(ec2: SimulatedEC2, clock: VirtualClock, capacity_type: str = "spot") -> str:
    claim = nodeclaim(types=("m5.large",), capacity_types=(capacity_type,))
    instance = ec2.create(claim, node_class())
    clock.advance(60)  # running and registered
    return instance.instance_id


def test_a_spot_warning_then_the_reclaim_two_minutes_later(
    joined_ec2: SimulatedEC2, cluster: InMemoryCluster, clock: VirtualClock
) -> None:
    inbox = Inbox()
    instance_id = running(joined_ec2, clock)

    joined_ec2.interrupt(instance_id, "spot")
    warned = inbox.drain(joined_ec2)
    warned_instances = [event.instance_id for event in inbox.events]
    clock.advance(119)
    during_notice = joined_ec2.list()[0].state
    clock.advance(1)
    reclaimed = inbox.drain(joined_ec2)
    clock.advance(30)

    assert warned == [(EventKind.SPOT_INTERRUPTION, "terminate")]
    assert warned_instances == [instance_id]
    assert during_notice == "running"
    assert reclaimed == [(EventKind.STATE_CHANGE, "shutting-down")]
    assert inbox.drain(joined_ec2) == [(EventKind.STATE_CHANGE, "terminated")]
    assert joined_ec2.list() == [] and cluster.list("Node") == []
    assert joined_ec2.counters.interruptions == {"spot": 1}


def test_an_instance_the_controller_deleted_during_the_notice_is_not_reclaimed_again(
    ec2: SimulatedEC2, clock: VirtualClock
) -> None:
    inbox = Inbox()
    instance_id = running(ec2, clock)
    ec2.interrupt(instance_id, "spot")
    inbox.drain(ec2)

    ec2.delete(f"aws:///ignored/{instance_id}")
    clock.advance(300)

    assert inbox.drain(ec2) == []
    assert ec2.ledger().entries[0].terminated_at is not None


def test_only_spot_instances_get_spot_warnings(ec2: SimulatedEC2, clock: VirtualClock) -> None:
    instance_id = running(ec2, clock, capacity_type="on-demand")

    with pytest.raises(ValueError, match="is on-demand; only spot instances"):
        ec2.interrupt(instance_id, "spot")


def test_scheduled_changes_and_rebalance_recommendations_only_warn(
    ec2: SimulatedEC2, clock: VirtualClock
) -> None:
    inbox = Inbox()
    instance_id = running(ec2, clock)

    ec2.interrupt(instance_id, "scheduled")
    ec2.interrupt(instance_id, "rebalance")
    events = list(inbox.drain(ec2))
    clock.advance(3600)

    assert events == [
        (EventKind.SCHEDULED_CHANGE, "AWS_EC2_PERSISTENT_INSTANCE_RETIREMENT_SCHEDULED"),
        (EventKind.REBALANCE_RECOMMENDATION, ""),
    ]
    assert ec2.list()[0].state == "running"


def test_a_stopped_instance_stops_and_its_node_goes_unknown(
    joined_ec2: SimulatedEC2, cluster: InMemoryCluster, clock: VirtualClock
) -> None:
    inbox = Inbox()
    instance_id = running(joined_ec2, clock)

    joined_ec2.interrupt(instance_id, "stop")
    stopping = inbox.drain(joined_ec2)
    clock.advance(30)
    stopped = inbox.drain(joined_ec2)
    clock.advance(10)

    [node] = cluster.list("Node")
    ready = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
    assert stopping == [(EventKind.STATE_CHANGE, "stopping")]
    assert stopped == [(EventKind.STATE_CHANGE, "stopped")]
    assert [i.state for i in joined_ec2.list()] == ["stopped"]
    assert (ready["status"], ready["reason"]) == ("Unknown", "NodeStatusUnknown")
    assert joined_ec2.ledger().entries[0].billing_ended_at is not None


def test_a_terminated_instance_announces_it_and_its_node_goes(
    joined_ec2: SimulatedEC2, cluster: InMemoryCluster, clock: VirtualClock
) -> None:
    inbox = Inbox()
    instance_id = running(joined_ec2, clock, capacity_type="on-demand")

    joined_ec2.interrupt(instance_id, "terminate")
    clock.advance(30)

    assert inbox.drain(joined_ec2) == [
        (EventKind.STATE_CHANGE, "shutting-down"),
        (EventKind.STATE_CHANGE, "terminated"),
    ]
    assert cluster.list("Node") == []


def test_interrupting_what_is_not_there(ec2: SimulatedEC2) -> None:
    with pytest.raises(NodeClaimNotFoundError, match="i-0123456789abcdef0"):
        ec2.interrupt("i-0123456789abcdef0", "terminate")
    with pytest.raises(ValueError, match="expected one of spot, scheduled, stop"):
        ec2.interrupt("i-0123456789abcdef0", "meteor")


def test_a_failed_handler_gets_the_message_again_after_the_visibility_timeout(
    ec2: SimulatedEC2, clock: VirtualClock
) -> None:
    instance_id = running(ec2, clock)
    ec2.interrupt(instance_id, "rebalance")

    def broken(events: Sequence[InterruptionEvent]) -> None:
        raise RuntimeError("cluster unreachable")

    failed = ec2.interruption_queue.poll_once(broken)
    hidden = ec2.interruption_queue.poll_once(broken)
    clock.advance(30)
    inbox = Inbox()
    retried = ec2.interruption_queue.poll_once(inbox)

    assert (failed.received, failed.failed, failed.deleted) == (1, 1, 0)
    assert hidden.received == 0
    assert (retried.handled_events, retried.deleted) == (1, 1)
    assert ec2.interruption_queue.depth() == 0


def test_malformed_messages_are_deleted_and_old_ones_expire(
    ec2: SimulatedEC2, clock: VirtualClock
) -> None:
    queue = ec2.interruption_queue
    queue.send("{not json")
    result = queue.poll_once(Inbox())
    instance_id = running(ec2, clock)
    ec2.interrupt(instance_id, "rebalance")
    clock.advance(300)

    assert (result.malformed, result.deleted) == (1, 1)
    assert queue.depth() == 0


def test_a_poll_takes_at_most_ten_messages(ec2: SimulatedEC2, clock: VirtualClock) -> None:
    instance_id = running(ec2, clock)
    for _ in range(12):
        ec2.interrupt(instance_id, "rebalance")

    first = ec2.interruption_queue.poll_once(Inbox())
    second = ec2.interruption_queue.poll_once(Inbox())

    assert (first.received, second.received) == (10, 2)
