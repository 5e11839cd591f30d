"""The interruption action table: which EC2 events delete the NodeClaim, with which event."""

from __future__ import annotations

import pytest

from nodewright.cloud.aws.interruption_events import EventKind, InterruptionEvent
from nodewright.controllers.interruption.controller import action_for, instance_id_of, message_kind


@pytest.mark.parametrize(
    ("kind", "detail", "reason", "deletes"),
    [
        (EventKind.SPOT_INTERRUPTION, "terminate", "SpotInterrupted", True),
        (EventKind.SCHEDULED_CHANGE, "AWS_EC2_PERSISTENT_INSTANCE_RETIREMENT_SCHEDULED",
         "InstanceUnhealthy", True),
        (EventKind.STATE_CHANGE, "stopping", "InstanceStopping", True),
        (EventKind.STATE_CHANGE, "stopped", "InstanceStopping", True),
        (EventKind.STATE_CHANGE, "shutting-down", "InstanceTerminating", True),
        (EventKind.STATE_CHANGE, "terminated", "InstanceTerminating", True),
        (EventKind.CAPACITY_RESERVATION_INTERRUPTION, "", "CapacityReservationInstanceInterrupted",
         True),
        (EventKind.REBALANCE_RECOMMENDATION, "", "SpotRebalanceRecommendation", False),
        (EventKind.EVENT_STATUS, "EventStatus", "InstanceUnhealthy", True),
        (EventKind.INSTANCE_STATUS, "InstanceStatus", "InstanceUnhealthy", True),
        (EventKind.SYSTEM_STATUS, "SystemStatus", "InstanceUnhealthy", True),
    ],
)
def test_each_event_kind_has_its_action(kind: EventKind, detail: str, reason: str,
                                        deletes: bool) -> None:
    action = action_for(InterruptionEvent(kind, "i-0123", "m-1", detail))
    assert (action.reason, action.deletes) == (reason, deletes)
    assert action.event_type == ("Normal" if kind is EventKind.REBALANCE_RECOMMENDATION
                                 else "Warning")
    # Only a failed status check skips the graceful drain (Karpenter's ForcefulTermination).
    assert action.forceful == (kind in (EventKind.INSTANCE_STATUS, EventKind.SYSTEM_STATUS))


def test_the_instance_id_is_the_last_part_of_the_provider_id() -> None:
    assert instance_id_of("aws:///us-east-1a/i-0123456789abcdef0") == "i-0123456789abcdef0"


@pytest.mark.parametrize(("kind", "message_type"), [
    (EventKind.INSTANCE_STATUS, "instance_status"),
    (EventKind.SYSTEM_STATUS, "system_status"),
    (EventKind.EVENT_STATUS, "event_status"),
])
def test_instance_status_kinds_have_karpenters_names(kind: EventKind, message_type: str) -> None:
    assert message_kind(InterruptionEvent(kind, "i-0123", "")) == message_type
