"""The interruption queue of the simulated region: EventBridge messages about instances,
consumed with the same `poll_once(handle) -> PollResult` as the SQS consumer.

Messages carry the JSON EventBridge would deliver and are parsed by the same parser as
real ones (`nodewright.cloud.aws.interruption_events.parse_message`). As in SQS, a message
is deleted only when its handler returned; after a handler failure it becomes visible again
after the visibility timeout (20 s, what the SQS consumer and Karpenter receive with), and
any message older than the retention period (300 s, as the queue infra/ creates) is
dropped unread.
"""

from __future__ import annotations

import json
import logging
import random
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, Final

from nodewright.cloud.aws.interruption_events import (
    IgnoredMessage,
    MalformedMessage,
    parse_message,
)
from nodewright.cloud.aws.interruption_queue import (
    BATCH_SIZE,
    VISIBILITY_TIMEOUT_SECONDS,
    EventHandler,
    PollResult,
)
from nodewright.runtime.clock import Clock, format_time

log = logging.getLogger(__name__)

RETENTION_SECONDS: Final = 300.0
ACCOUNT: Final = "123456789012"
RETIREMENT_EVENT: Final = "AWS_EC2_PERSISTENT_INSTANCE_RETIREMENT_SCHEDULED"


class InterruptionKind(StrEnum):
    """What `SimulatedEC2.interrupt` can do to an instance (scenarios.md names)."""

    SPOT = "spot"
    SCHEDULED = "scheduled"
    STOP = "stop"
    TERMINATE = "terminate"
    REBALANCE = "rebalance"
    # An interruptible capacity reservation's owner takes capacity back.
    RESERVATION = "reservation"

    @classmethod
    def parse(cls, value: str) -> InterruptionKind:
        try:
            return cls(value)
        except ValueError:
            raise ValueError(
                f"interruption kind {value!r}: expected one of {', '.join(k.value for k in cls)}"
            ) from None


@dataclass
class _Message:
    message_id: str
    body: str
    sent_at: datetime
    visible_at: datetime


class SimulatedInterruptionQueue:
    # A receive returns at once (a short poll).
    wait_seconds: float = 0.0

    def __init__(self, clock: Clock, region: str, seed: int = 0) -> None:
        self.clock = clock
        self.region = region
        self._rng = random.Random(f"{seed}/messages")
        self._messages: list[_Message] = []
        self.sent = 0

    # --- producing ----------------------------------------------------------------------

    def send(self, body: str) -> str:
        """Put one raw message body on the queue (tests use it for malformed messages)."""
        message_id = str(uuid.UUID(int=self._rng.getrandbits(128), version=4))
        now = self.clock.now()
        self._messages.append(_Message(message_id, body, now, now))
        self.sent += 1
        return message_id

    def spot_interruption(self, instance_id: str) -> str:
        return self._event(
            "aws.ec2",
            "EC2 Spot Instance Interruption Warning",
            instance_id,
            {"instance-id": instance_id, "instance-action": "terminate"},
        )

    def reservation_interruption(self, instance_id: str) -> str:
        return self._event(
            "aws.ec2", "EC2 Capacity Reservation Instance Interruption Warning", instance_id,
            {"instance-id": instance_id, "instance-action": "terminate"},
        )

    def rebalance_recommendation(self, instance_id: str) -> str:
        return self._event(
            "aws.ec2", "EC2 Instance Rebalance Recommendation", instance_id,
            {"instance-id": instance_id},
        )

    def state_change(self, instance_id: str, state: str) -> str:
        return self._event(
            "aws.ec2", "EC2 Instance State-change Notification", instance_id,
            {"instance-id": instance_id, "state": state},
        )

    def scheduled_change(self, instance_id: str, start: datetime) -> str:
        return self._event(
            "aws.health",
            "AWS Health Event",
            instance_id,
            {
                "eventArn": f"arn:aws:health:{self.region}::event/EC2/{RETIREMENT_EVENT}/"
                f"{RETIREMENT_EVENT}_{instance_id}",
                "service": "EC2",
                "eventTypeCode": RETIREMENT_EVENT,
                "eventTypeCategory": "scheduledChange",
                "startTime": format_time(start),
                "affectedEntities": [{"entityValue": instance_id}],
            },
        )

    def _event(
        self, source: str, detail_type: str, instance_id: str, detail: Mapping[str, Any]
    ) -> str:
        envelope = {
            "version": "0",
            "id": str(uuid.UUID(int=self._rng.getrandbits(128), version=4)),
            "detail-type": detail_type,
            "source": source,
            "account": ACCOUNT,
            "time": format_time(self.clock.now()),
            "region": self.region,
            "resources": [f"arn:aws:ec2:{self.region}:{ACCOUNT}:instance/{instance_id}"],
            "detail": dict(detail),
        }
        return self.send(json.dumps(envelope, sort_keys=True))

    # --- consuming ----------------------------------------------------------------------

    def depth(self) -> int:
        """Messages on the queue, visible or not (after expiring old ones)."""
        self._expire()
        return len(self._messages)

    def poll_once(self, handle: EventHandler) -> PollResult:
        """Receive up to one batch of visible messages, hand each message's events to
        `handle`, delete what is done. Never waits: an empty queue answers at once."""
        self._expire()
        now = self.clock.now()
        batch = [m for m in self._messages if m.visible_at <= now][:BATCH_SIZE]
        handled = malformed = ignored = deleted = failed = 0
        for message in batch:
            parsed = parse_message(message.body)
            if isinstance(parsed, MalformedMessage):
                malformed += 1
                log.warning(
                    "deleting malformed interruption message %s: %s",
                    message.message_id,
                    parsed.reason,
                )
            elif isinstance(parsed, IgnoredMessage):
                ignored += 1
            else:
                try:
                    handle(parsed)
                except Exception:
                    failed += 1
                    log.exception(
                        "interruption handler failed for message %s; it will be redelivered",
                        message.message_id,
                    )
                    message.visible_at = now + timedelta(seconds=VISIBILITY_TIMEOUT_SECONDS)
                    continue
                handled += len(parsed)
            self._messages.remove(message)
            deleted += 1
        return PollResult(len(batch), handled, malformed, ignored, deleted, failed)

    def _expire(self) -> None:
        cutoff = self.clock.now() - timedelta(seconds=RETENTION_SECONDS)
        expired = [m for m in self._messages if m.sent_at <= cutoff]
        for message in expired:
            log.warning(
                "interruption message %s expired unread after %.0f s",
                message.message_id,
                RETENTION_SECONDS,
            )
            self._messages.remove(message)
