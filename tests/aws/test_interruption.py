"""Interruption: EventBridge events reach the queue and come out as typed events."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from nodewright.cloud.aws.actions import AWS_ACTIONS
from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.interruption_events import (
    EventKind,
    IgnoredMessage,
    InterruptionEvent,
    MalformedMessage,
    parse_message,
)
from nodewright.cloud.aws.interruption_queue import InterruptionQueue

from .conftest import CallRecorder

RULES = {
    "spot": ("aws.ec2", "EC2 Spot Instance Interruption Warning"),
    "health": ("aws.health", "AWS Health Event"),
    "state": ("aws.ec2", "EC2 Instance State-change Notification"),
    "rebalance": ("aws.ec2", "EC2 Instance Rebalance Recommendation"),
    "reservation": ("aws.ec2", "EC2 Capacity Reservation Instance Interruption Warning"),
}


def event_body(source: str, detail_type: str, detail: dict[str, object]) -> str:
    return json.dumps(
        {
            "version": "0",
            "id": "evt-1",
            "source": source,
            "detail-type": detail_type,
            "detail": detail,
        }
    )


def interruption_queue_with_rules(clients: AwsClients) -> InterruptionQueue:
    """The queue and the five EventBridge rules infra/ creates."""
    import boto3

    url = clients.sqs.create_queue(QueueName="nodewright-demo")["QueueUrl"]
    arn = clients.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    events = boto3.client("events", region_name=clients.region)
    for name, (source, detail_type) in RULES.items():
        events.put_rule(
            Name=name,
            EventPattern=json.dumps({"source": [source], "detail-type": [detail_type]}),
        )
        events.put_targets(Rule=name, Targets=[{"Id": "queue", "Arn": arn}])
    return InterruptionQueue.by_name(clients.sqs, "nodewright-demo")


def put_event(
    clients: AwsClients, source: str, detail_type: str, detail: dict[str, object]
) -> None:
    import boto3

    events = boto3.client("events", region_name=clients.region)
    result = events.put_events(
        Entries=[{"Source": source, "DetailType": detail_type, "Detail": json.dumps(detail)}]
    )
    assert result["FailedEntryCount"] == 0


def test_each_eventbridge_rule_delivers_a_typed_event_keyed_by_instance(
    clients: AwsClients, recorder: CallRecorder
) -> None:
    queue = interruption_queue_with_rules(clients)
    queue.wait_seconds = 0
    put_event(clients, *RULES["spot"], {"instance-id": "i-spot", "instance-action": "terminate"})
    put_event(
        clients,
        *RULES["health"],
        {
            "service": "EC2",
            "eventTypeCategory": "scheduledChange",
            "eventTypeCode": "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED",
            "affectedEntities": [{"entityValue": "i-health-1"}, {"entityValue": "i-health-2"}],
        },
    )
    put_event(clients, *RULES["state"], {"instance-id": "i-stopping", "state": "stopping"})
    put_event(clients, *RULES["rebalance"], {"instance-id": "i-rebalance"})
    put_event(
        clients, *RULES["reservation"], {"instance-id": "i-odcr", "instance-action": "terminate"}
    )

    received: list[InterruptionEvent] = []

    def handle(events: Sequence[InterruptionEvent]) -> None:
        received.extend(events)

    result = queue.poll_once(handle)

    by_instance = {event.instance_id: event for event in received}
    assert {key: event.kind for key, event in by_instance.items()} == {
        "i-spot": EventKind.SPOT_INTERRUPTION,
        "i-health-1": EventKind.SCHEDULED_CHANGE,
        "i-health-2": EventKind.SCHEDULED_CHANGE,
        "i-stopping": EventKind.STATE_CHANGE,
        "i-rebalance": EventKind.REBALANCE_RECOMMENDATION,
        "i-odcr": EventKind.CAPACITY_RESERVATION_INTERRUPTION,
    }
    assert by_instance["i-stopping"].detail == "stopping"
    assert (result.received, result.deleted, result.failed) == (5, 5, 0)
    assert queue.poll_once(handle).received == 0

    receive = recorder.calls_of("sqs:ReceiveMessage")[0]
    assert receive["MaxNumberOfMessages"] == 10
    allowed = {use.action for use in AWS_ACTIONS}
    assert set(recorder.actions) - {"sqs:CreateQueue", "sqs:GetQueueAttributes"} <= allowed


def test_malformed_and_ignorable_messages_are_deleted_without_reaching_the_handler(
    clients: AwsClients,
) -> None:
    queue = interruption_queue_with_rules(clients)
    queue.wait_seconds = 0
    clients.sqs.send_message(QueueUrl=queue.queue_url, MessageBody="{not json")
    clients.sqs.send_message(
        QueueUrl=queue.queue_url,
        MessageBody=event_body(*RULES["spot"], {"instance-action": "terminate"}),
    )
    put_event(clients, *RULES["state"], {"instance-id": "i-running", "state": "running"})
    calls: list[Sequence[InterruptionEvent]] = []

    result = queue.poll_once(calls.append)

    assert calls == []
    assert (result.received, result.malformed, result.ignored, result.deleted) == (3, 2, 1, 3)


def test_a_message_whose_handler_fails_stays_on_the_queue(clients: AwsClients) -> None:
    queue = interruption_queue_with_rules(clients)
    queue.wait_seconds = 0
    queue.visibility_timeout = 0  # redelivered at once (Karpenter's receive hides it 20 s)
    put_event(clients, *RULES["spot"], {"instance-id": "i-spot", "instance-action": "terminate"})

    def broken(_: Sequence[InterruptionEvent]) -> None:
        raise RuntimeError("cluster API unavailable")

    failed = queue.poll_once(broken)
    assert (failed.failed, failed.deleted) == (1, 0)

    handled: list[InterruptionEvent] = []
    retried = queue.poll_once(handled.extend)
    assert [event.instance_id for event in handled] == ["i-spot"]
    assert retried.deleted == 1


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("[]", "not a JSON object"),
        (event_body(*RULES["state"], {"instance-id": "i-1"}), "detail.state"),
        (
            event_body(
                *RULES["health"],
                {
                    "service": "EC2",
                    "eventTypeCategory": "scheduledChange",
                    "affectedEntities": [{}],
                },
            ),
            "detail.affectedEntities[0].entityValue",
        ),
    ],
)
def test_malformed_messages_say_what_is_wrong(body: str, reason: str) -> None:
    parsed = parse_message(body)
    assert isinstance(parsed, MalformedMessage)
    assert reason in parsed.reason


def test_health_events_for_other_services_are_ignored() -> None:
    parsed = parse_message(
        event_body(
            *RULES["health"],
            {"service": "RDS", "eventTypeCategory": "scheduledChange", "affectedEntities": []},
        )
    )
    assert isinstance(parsed, IgnoredMessage)


def test_a_bad_affected_entity_costs_only_itself(caplog: pytest.LogCaptureFixture) -> None:
    body = event_body(
        *RULES["health"],
        {
            "service": "EC2",
            "eventTypeCategory": "scheduledChange",
            "eventTypeCode": "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED",
            "affectedEntities": [
                {"entityValue": "i-good-1"},
                {},
                "i-not-an-object",
                {"entityValue": ""},
                {"entityValue": "i-good-2"},
            ],
        },
    )
    with caplog.at_level("WARNING", logger="nodewright.cloud.aws.interruption_events"):
        parsed = parse_message(body)

    assert isinstance(parsed, list)
    assert [(e.instance_id, e.kind, e.detail) for e in parsed] == [
        ("i-good-1", EventKind.SCHEDULED_CHANGE, "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED"),
        ("i-good-2", EventKind.SCHEDULED_CHANGE, "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED"),
    ]
    logged = caplog.text
    for index in (1, 2, 3):
        assert f"detail.affectedEntities[{index}].entityValue" in logged


def test_a_health_event_with_no_usable_entity_is_malformed() -> None:
    parsed = parse_message(
        event_body(
            *RULES["health"],
            {
                "service": "EC2",
                "eventTypeCategory": "scheduledChange",
                "affectedEntities": [{}, {"entityValue": 7}],
            },
        )
    )
    assert isinstance(parsed, MalformedMessage)
    assert "affectedEntities[0]" in parsed.reason
    assert "affectedEntities[1]" in parsed.reason


def test_a_failed_delete_does_not_stop_the_batch_and_redelivery_is_handled_again(
    clients: AwsClients, caplog: pytest.LogCaptureFixture
) -> None:
    from botocore.exceptions import ClientError

    queue = interruption_queue_with_rules(clients)
    queue.wait_seconds = 0
    queue.visibility_timeout = 0  # redelivered at once (Karpenter's receive hides it 20 s)
    for instance in ("i-1", "i-2", "i-3"):
        put_event(clients, *RULES["spot"], {"instance-id": instance, "instance-action": "stop"})
    clients.sqs.send_message(QueueUrl=queue.queue_url, MessageBody="{not json")
    deletes: list[int] = []

    def flaky_delete(**_: object) -> None:
        deletes.append(len(deletes) + 1)
        if len(deletes) in (1, 4):  # two of the four: at least one was handled
            raise ClientError(
                {"Error": {"Code": "InternalError", "Message": "try again"}}, "DeleteMessage"
            )

    clients.sqs.meta.events.register("before-call.sqs.DeleteMessage", flaky_delete)
    handled: list[str] = []

    def handle(events: Sequence[InterruptionEvent]) -> None:
        handled.extend(event.instance_id for event in events)

    with caplog.at_level("WARNING", logger="nodewright.cloud.aws.interruption_queue"):
        first = queue.poll_once(handle)

    assert (first.received, first.deleted, first.delete_failed, first.malformed) == (4, 2, 2, 1)
    assert sorted(handled) == ["i-1", "i-2", "i-3"]
    assert "sqs:DeleteMessage" in caplog.text and "InternalError" in caplog.text
    assert "will be redelivered" in caplog.text

    clients.sqs.meta.events.unregister("before-call.sqs.DeleteMessage", flaky_delete)
    handled.clear()
    second = queue.poll_once(handle)
    assert (second.received, second.deleted, second.delete_failed) == (2, 2, 0)
    # The handled message whose delete failed comes back and is handled again, harmlessly.
    assert len(handled) == second.received - second.malformed >= 1
    assert set(handled) <= {"i-1", "i-2", "i-3"}
    assert queue.poll_once(handle).received == 0
