"""Instance status health checks: which instances EC2 reports unhealthy, read from
DescribeInstanceStatus as Karpenter reads it (its instancestatus provider suite, case by
case, plus the calls themselves).

moto answers DescribeInstanceStatus for running instances, always healthy and without
applying the status filters; the impaired answers come from a botocore Stubber at the
client, which also checks the three filtered requests."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from nodewright.cloud.aws.actions import AWS_ACTIONS
from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.instance_statuses import (
    STATUS_FILTERS,
    Category,
    Details,
    InstanceStatusProvider,
)
from nodewright.cloud.provider import CloudProviderError

from .conftest import REGION, CallRecorder

IMPAIRED_AT = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
INSTANCE = "i-0123456789"


class WallClock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def stubbed() -> Iterator[tuple[Any, Stubber]]:
    ec2 = boto3.client("ec2", region_name=REGION)
    with Stubber(ec2) as stubber:
        yield ec2, stubber
        stubber.assert_no_pending_responses()


def answer(stubber: Stubber, *per_call: list[dict[str, Any]]) -> None:
    """The three filtered calls' answers, in the order the provider makes them."""
    for filters, statuses in zip(STATUS_FILTERS, per_call, strict=True):
        stubber.add_response("describe_instance_status", {"InstanceStatuses": statuses},
                             {"Filters": [dict(f) for f in filters]})


def check(status: str, impaired_since: datetime | None = IMPAIRED_AT) -> dict[str, Any]:
    detail: dict[str, Any] = {"Name": "reachability", "Status": status}
    if impaired_since is not None:
        detail["ImpairedSince"] = impaired_since
    return {"Status": "impaired" if status == "failed" else "initializing",
            "Details": [detail]}


def everything_impaired() -> dict[str, Any]:
    """Karpenter's suite fixture: instance, system and EBS checks failed, a retirement."""
    return {
        "InstanceId": INSTANCE,
        "InstanceStatus": check("failed"),
        "SystemStatus": check("failed"),
        "AttachedEbsStatus": check("failed"),
        "Events": [{"Code": "instance-retirement"}],
    }


def test_every_impairment_an_hour_old_is_returned_with_its_category(
    stubbed: tuple[Any, Stubber],
) -> None:
    ec2, stubber = stubbed
    now = IMPAIRED_AT + timedelta(hours=1)
    answer(stubber, [everything_impaired()], [everything_impaired()], [everything_impaired()])

    [status] = InstanceStatusProvider(ec2, WallClock(now)).list()

    assert status.instance_id == INSTANCE
    assert status.overall == "impaired"
    assert set(status.details) >= {
        Details(Category.INSTANCE_STATUS, "reachability", "failed", IMPAIRED_AT),
        Details(Category.SYSTEM_STATUS, "reachability", "failed", IMPAIRED_AT),
        Details(Category.EVENT_STATUS, "instance-retirement", "failed", now),
    }
    assert status.impaired_since == IMPAIRED_AT


def test_healthy_and_initializing_statuses_are_not_returned(
    stubbed: tuple[Any, Stubber],
) -> None:
    ec2, stubber = stubbed
    healthy = {
        "InstanceId": INSTANCE,
        "SystemStatus": {"Status": "initializing"},
        "InstanceStatus": {"Status": "insufficient-data"},
        "AttachedEbsStatus": {"Status": "initializing"},
    }
    answer(stubber, [healthy], [healthy], [])

    assert InstanceStatusProvider(ec2, WallClock(IMPAIRED_AT)).list() == []


def test_a_scheduled_event_counts_even_when_every_check_is_healthy(
    stubbed: tuple[Any, Stubber],
) -> None:
    ec2, stubber = stubbed
    retiring = {
        "InstanceId": INSTANCE,
        "SystemStatus": {"Status": "initializing"},
        "InstanceStatus": {"Status": "insufficient-data"},
        "Events": [{"Code": "instance-retirement"}],
    }
    answer(stubber, [], [], [retiring])

    [status] = InstanceStatusProvider(ec2, WallClock(IMPAIRED_AT)).list()

    assert [d.category for d in status.details] == [Category.EVENT_STATUS]


def test_a_failed_check_counts_once_it_has_failed_for_two_minutes(
    stubbed: tuple[Any, Stubber],
) -> None:
    ec2, stubber = stubbed
    failing = {"InstanceId": INSTANCE, "SystemStatus": check("failed")}
    answer(stubber, [], [failing], [])
    answer(stubber, [], [failing], [])
    clock = WallClock(IMPAIRED_AT + timedelta(seconds=119))
    provider = InstanceStatusProvider(ec2, clock)

    assert provider.list() == []
    clock.now = IMPAIRED_AT + timedelta(seconds=120)
    [status] = provider.list()
    assert status.categories == (Category.SYSTEM_STATUS,)


def test_a_failed_check_without_an_impairment_time_counts_at_once(
    stubbed: tuple[Any, Stubber],
) -> None:
    ec2, stubber = stubbed
    failing = {"InstanceId": INSTANCE, "InstanceStatus": check("failed", impaired_since=None)}
    answer(stubber, [failing], [], [])

    [status] = InstanceStatusProvider(ec2, WallClock(IMPAIRED_AT)).list()

    assert status.categories == (Category.INSTANCE_STATUS,)
    assert status.impaired_since is None


def test_an_instance_in_several_answers_is_reported_once_with_all_its_failures(
    stubbed: tuple[Any, Stubber],
) -> None:
    ec2, stubber = stubbed
    impaired = everything_impaired()
    other = {"InstanceId": "i-other", "Events": [{"Code": "system-maintenance"}]}
    answer(stubber, [impaired], [impaired], [impaired, other])

    statuses = InstanceStatusProvider(ec2, WallClock(IMPAIRED_AT + timedelta(hours=1))).list()

    assert [s.instance_id for s in statuses] == [INSTANCE, "i-other"]
    assert statuses[0].categories == (Category.INSTANCE_STATUS, Category.SYSTEM_STATUS,
                                      Category.EVENT_STATUS, Category.EBS_STATUS)


def test_a_denied_call_is_an_error_naming_the_action_and_ec2s_code(
    stubbed: tuple[Any, Stubber],
) -> None:
    ec2, stubber = stubbed
    stubber.add_client_error("describe_instance_status", "UnauthorizedOperation",
                             "You are not authorized to perform this operation.")

    with pytest.raises(CloudProviderError) as raised:
        InstanceStatusProvider(ec2, WallClock(IMPAIRED_AT)).list()

    assert raised.value.code == "UnauthorizedOperation"
    assert "ec2:DescribeInstanceStatus" in str(raised.value)


def test_under_moto_healthy_running_instances_are_not_reported_and_each_filter_is_asked(
    clients: AwsClients, recorder: CallRecorder,
) -> None:
    image = clients.ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    clients.ec2.run_instances(ImageId=image, MinCount=2, MaxCount=2, InstanceType="m5.large")

    assert InstanceStatusProvider(clients.ec2).list() == []
    answered = clients.ec2.describe_instance_status(Filters=[dict(STATUS_FILTERS[0][0])])
    assert len(answered["InstanceStatuses"]) == 2  # moto answered: both healthy

    calls = recorder.calls_of("ec2:DescribeInstanceStatus")[:3]
    assert [call["Filters"] for call in calls] == [
        [{"Name": "instance-status.status", "Values": ["impaired"]}],
        [{"Name": "system-status.status", "Values": ["impaired"]}],
        [{"Name": "event.code", "Values": ["instance-reboot", "system-reboot",
                                           "system-maintenance", "instance-retirement",
                                           "instance-stop"]}],
    ]
    allowed = {use.action for use in AWS_ACTIONS}
    assert set(recorder.actions) - {"ec2:DescribeImages", "ec2:RunInstances"} <= allowed
    assert "ec2:DescribeInstanceStatus" in allowed
