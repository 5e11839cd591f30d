"""Typed interruption events parsed from the EventBridge messages delivered to the queue.

Five message kinds reach the interruption queue (one EventBridge rule each). Each parses into
an `InterruptionEvent` per affected instance; an event of another kind is an `IgnoredMessage`,
and what is not a JSON object or lacks the fields its kind needs a `MalformedMessage`. A health
event's unusable `affectedEntities` entries are logged and skipped; the message is malformed
only when no entry names an instance. Three more kinds (instance, system and event status)
are not messages: the instance status health checks make them from DescribeInstanceStatus."""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

log = logging.getLogger(__name__)


class EventKind(StrEnum):
    SPOT_INTERRUPTION = "SpotInterruption"
    SCHEDULED_CHANGE = "ScheduledChange"
    STATE_CHANGE = "StateChange"
    REBALANCE_RECOMMENDATION = "RebalanceRecommendation"
    CAPACITY_RESERVATION_INTERRUPTION = "CapacityReservationInterruption"
    # Not queue messages: the instance status health checks (DescribeInstanceStatus), one
    # per failed category of an instance (cloud.aws.instance_statuses).
    INSTANCE_STATUS = "InstanceStatus"
    SYSTEM_STATUS = "SystemStatus"
    EVENT_STATUS = "EventStatus"


# (source, detail-type) -> kind
DETAIL_TYPES: Final[Mapping[tuple[str, str], EventKind]] = {
    ("aws.ec2", "EC2 Spot Instance Interruption Warning"): EventKind.SPOT_INTERRUPTION,
    ("aws.health", "AWS Health Event"): EventKind.SCHEDULED_CHANGE,
    ("aws.ec2", "EC2 Instance State-change Notification"): EventKind.STATE_CHANGE,
    ("aws.ec2", "EC2 Instance Rebalance Recommendation"): EventKind.REBALANCE_RECOMMENDATION,
    (
        "aws.ec2",
        "EC2 Capacity Reservation Instance Interruption Warning",
    ): EventKind.CAPACITY_RESERVATION_INTERRUPTION,
}

# The EventBridge envelope version every parsed event carries (Karpenter's parsers key on
# it with the source and the detail-type).
EVENT_VERSION: Final = "0"

# Only these instance states mean the node is going away.
INTERRUPTING_STATES: Final[frozenset[str]] = frozenset(
    {"stopping", "stopped", "shutting-down", "terminated"}
)


@dataclass(frozen=True)
class InterruptionEvent:
    kind: EventKind
    instance_id: str
    message_id: str  # the EventBridge event id
    detail: str = ""  # state for state changes, action for warnings, event type for health
    time: str = ""  # the EventBridge event's time (RFC 3339), for the queue-duration metric


@dataclass(frozen=True)
class MalformedMessage:
    reason: str
    body: str


@dataclass(frozen=True)
class IgnoredMessage:
    """Nothing to act on (a running state change, a non-EC2 health event, an event of
    another kind or version, an empty body): Karpenter's no_op message."""

    reason: str


ParsedMessage = list[InterruptionEvent] | MalformedMessage | IgnoredMessage


def _text(value: Any, field_path: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{field_path}: expected a non-empty string, got {value!r}")
    return value


def parse_message(body: str) -> ParsedMessage:
    """Parse one SQS message body (an EventBridge event in JSON).

    As Karpenter's parser: an empty body, and an event of a (version, source, detail-type)
    none of the five rules sends, are well-formed no-ops (`IgnoredMessage`, counted as
    received `no_op` and deleted), not errors."""
    if not body:
        return IgnoredMessage("empty message")
    try:
        envelope = json.loads(body)
    except json.JSONDecodeError as error:
        return MalformedMessage(f"not JSON: {error.msg} at position {error.pos}", body)
    if not isinstance(envelope, dict):
        return MalformedMessage("not a JSON object", body)
    source, detail_type = envelope.get("source"), envelope.get("detail-type")
    version = envelope.get("version")
    kind = DETAIL_TYPES.get((str(source), str(detail_type)))
    if kind is None or version != EVENT_VERSION:
        return IgnoredMessage(
            f"unknown event: version={version!r} source={source!r} "
            f"detail-type={detail_type!r}"
        )
    detail = envelope.get("detail")
    if not isinstance(detail, dict):
        return MalformedMessage("detail: expected an object", body)
    message_id = str(envelope.get("id", ""))
    try:
        parsed = _events_of(kind, detail, message_id)
    except ValueError as error:
        return MalformedMessage(str(error), body)
    sent = envelope.get("time")
    if isinstance(parsed, list) and isinstance(sent, str):
        return [dataclasses.replace(event, time=sent) for event in parsed]
    return parsed


def _events_of(kind: EventKind, detail: dict[str, Any], message_id: str) -> ParsedMessage:
    if kind is EventKind.SCHEDULED_CHANGE:
        if detail.get("service") != "EC2" or detail.get("eventTypeCategory") != "scheduledChange":
            return IgnoredMessage(
                f"health event for service={detail.get('service')!r} "
                f"category={detail.get('eventTypeCategory')!r}"
            )
        entities = detail.get("affectedEntities")
        if not isinstance(entities, list) or not entities:
            raise ValueError("detail.affectedEntities: expected a non-empty list")
        event_type = str(detail.get("eventTypeCode", ""))
        events: list[InterruptionEvent] = []
        problems: list[str] = []
        for index, entity in enumerate(entities):
            try:
                instance_id = _text(
                    entity.get("entityValue") if isinstance(entity, dict) else None,
                    f"detail.affectedEntities[{index}].entityValue",
                )
            except ValueError as error:
                problems.append(str(error))
                continue
            events.append(InterruptionEvent(kind, instance_id, message_id, event_type))
        if not events:
            raise ValueError("; ".join(problems))
        # One bad entry must not cost the valid instances their warning.
        for problem in problems:
            log.warning("health event %s: skipping an affected entity: %s", message_id, problem)
        return events
    instance_id = _text(detail.get("instance-id"), "detail.instance-id")
    if kind is EventKind.STATE_CHANGE:
        state = _text(detail.get("state"), "detail.state")
        if state not in INTERRUPTING_STATES:
            return IgnoredMessage(f"instance {instance_id} is {state}")
        return [InterruptionEvent(kind, instance_id, message_id, state)]
    action = str(detail.get("instance-action", ""))
    return [InterruptionEvent(kind, instance_id, message_id, action)]
