"""The interruption queue: EventBridge rules deliver EC2 and Health events to one SQS queue.

The controller long-polls the queue and drains nodes ahead of spot reclaims, scheduled
maintenance and instance stops.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws

from infra.config import StackSettings
from infra.naming import interruption_queue_name
from nodewright.cloud.aws.interruption_events import DETAIL_TYPES, EventKind

MESSAGE_RETENTION_SECONDS = 300


@dataclass(frozen=True)
class InterruptionRule:
    """One EventBridge rule: a short resource name and the event it forwards."""

    name: str
    source: str
    detail_type: str

    def event_pattern(self) -> dict[str, Any]:
        return {"source": [self.source], "detail-type": [self.detail_type]}


# Short resource names for the rules; the events themselves are the ones the controller's
# queue consumer parses, so the two cannot drift apart.
_RULE_NAMES: dict[EventKind, str] = {
    EventKind.SPOT_INTERRUPTION: "spot-interruption",
    EventKind.SCHEDULED_CHANGE: "scheduled-change",
    EventKind.STATE_CHANGE: "instance-state-change",
    EventKind.REBALANCE_RECOMMENDATION: "rebalance",
    EventKind.CAPACITY_RESERVATION_INTERRUPTION: "capacity-reservation",
}
INTERRUPTION_RULES: tuple[InterruptionRule, ...] = tuple(
    InterruptionRule(_RULE_NAMES[kind], source, detail_type)
    for (source, detail_type), kind in DETAIL_TYPES.items()
)


@dataclass(frozen=True)
class InterruptionQueue:
    name: str
    arn: pulumi.Output[str]
    url: pulumi.Output[str]


def queue_policy(queue_arn: str) -> str:
    """EventBridge (and SQS itself) may send; any request without TLS is refused."""
    return json.dumps({
        "Version": "2012-10-17",
        "Id": "NodewrightInterruptionQueue",
        "Statement": [
            {
                "Sid": "AllowEventDelivery",
                "Effect": "Allow",
                "Principal": {"Service": ["events.amazonaws.com", "sqs.amazonaws.com"]},
                "Action": "sqs:SendMessage",
                "Resource": queue_arn,
            },
            {
                "Sid": "DenyInsecureTransport",
                "Effect": "Deny",
                "Principal": "*",
                "Action": "sqs:*",
                "Resource": queue_arn,
                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
            },
        ],
    })


def build_interruption_queue(settings: StackSettings) -> InterruptionQueue | None:
    if not settings.interruption:
        return None
    name = interruption_queue_name(settings.cluster_name)
    queue = aws.sqs.Queue(
        "interruption-queue",
        name=name,
        message_retention_seconds=MESSAGE_RETENTION_SECONDS,
        sqs_managed_sse_enabled=True,
        tags=settings.tags,
    )
    aws.sqs.QueuePolicy("interruption-queue", queue_url=queue.url,
                        policy=queue.arn.apply(queue_policy))
    for rule in INTERRUPTION_RULES:
        event_rule = aws.cloudwatch.EventRule(
            rule.name,
            name=f"{settings.cluster_name}-{rule.name}",
            description=f"Forward '{rule.detail_type}' events to the Nodewright queue",
            event_pattern=json.dumps(rule.event_pattern()),
            tags=settings.tags,
        )
        aws.cloudwatch.EventTarget(
            rule.name,
            rule=event_rule.name,
            target_id="nodewright-interruption-queue",
            arn=queue.arn,
        )
    return InterruptionQueue(name=name, arn=queue.arn, url=queue.url)
