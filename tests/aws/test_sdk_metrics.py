"""Karpenter's AWS SDK request metrics (prometheusv2.WithPrometheusMetrics in its
pkg/operator/operator.go; names from github.com/jonathan-innis/aws-sdk-go-prometheus v0.1.1,
the version v1.14.1 pins): every
call of the provider's clients is counted by service, action and status code, each attempt
too, with latencies and retries. moto answers; a throttled attempt is put in front of it at
the HTTP level, so botocore's own retry runs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from botocore.awsrequest import AWSResponse, HTTPHeaders
from botocore.exceptions import ClientError

from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.sdk_metrics import instrument
from tests.controllers.metric_samples import sample_value

from .world import World

THROTTLED = (b"<Response><Errors><Error><Code>RequestLimitExceeded</Code>"
             b"<Message>Request limit exceeded.</Message></Error></Errors>"
             b"<RequestID>r-1</RequestID></Response>")


def value(name: str, action: str, status: str, service: str = "EC2") -> float:
    return sample_value(
        name, {"service": service, "action": action, "code": status}) or 0.0


class Body:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self.data


class ThrottleOnce:
    """The next attempt of the operation gets EC2's 503 RequestLimitExceeded (before moto)."""

    def __init__(self) -> None:
        self.left = 1

    def __call__(self, request: Any, **_: Any) -> AWSResponse | None:
        if not self.left:
            return None
        self.left -= 1
        return AWSResponse(request.url, 503, HTTPHeaders(), Body(THROTTLED))


def test_a_call_is_counted_once_with_its_status_latency_and_no_retry(
        clients: AwsClients, world: World) -> None:
    before = {name: value(name, "DescribeSubnets", "200") for name in (
        "aws_sdk_go_request_total", "aws_sdk_go_request_attempt_total",
        "aws_sdk_go_request_duration_seconds_count",
        "aws_sdk_go_request_attempt_duration_seconds_count",
        "aws_sdk_go_request_retry_count_count", "aws_sdk_go_request_retry_count_sum")}

    clients.ec2.describe_subnets()

    after = {name: value(name, "DescribeSubnets", "200") - was for name, was in before.items()}
    assert after == {
        "aws_sdk_go_request_total": 1, "aws_sdk_go_request_attempt_total": 1,
        "aws_sdk_go_request_duration_seconds_count": 1,
        "aws_sdk_go_request_attempt_duration_seconds_count": 1,
        "aws_sdk_go_request_retry_count_count": 1, "aws_sdk_go_request_retry_count_sum": 0}


def test_a_throttled_attempt_is_counted_as_an_attempt_and_a_retry_of_one_call(
        clients: AwsClients, world: World) -> None:
    action = "DescribeSecurityGroups"
    calls = value("aws_sdk_go_request_total", action, "200")
    throttled = value("aws_sdk_go_request_attempt_total", action, "503")
    answered = value("aws_sdk_go_request_attempt_total", action, "200")
    retries = value("aws_sdk_go_request_retry_count_sum", action, "200")
    throttle: Any = ThrottleOnce()  # a before-send hook answers instead of the endpoint
    clients.ec2.meta.events.register_first(f"before-send.ec2.{action}", throttle)

    clients.ec2.describe_security_groups()

    assert value("aws_sdk_go_request_total", action, "200") - calls == 1
    assert value("aws_sdk_go_request_attempt_total", action, "503") - throttled == 1
    assert value("aws_sdk_go_request_attempt_total", action, "200") - answered == 1
    assert value("aws_sdk_go_request_retry_count_sum", action, "200") - retries == 1


def test_a_refused_call_is_counted_with_its_error_status(
        clients: AwsClients, world: World) -> None:
    before = value("aws_sdk_go_request_total", "DescribeInstances", "400")

    with pytest.raises(ClientError):
        clients.ec2.describe_instances(InstanceIds=["i-0123456789abcdef0"])

    assert value("aws_sdk_go_request_total", "DescribeInstances", "400") - before == 1


def test_a_client_is_instrumented_once(clients: AwsClients, world: World) -> None:
    instrument(clients.ec2)  # already done by AwsClients.create
    before = value("aws_sdk_go_request_total", "DescribeVpcs", "200")

    clients.ec2.describe_vpcs()

    assert value("aws_sdk_go_request_total", "DescribeVpcs", "200") - before == 1


def test_the_families_have_the_go_librarys_names_labels_and_buckets() -> None:
    """aws-sdk-go-prometheus v0.1.1's common/metrics.go: `code`, not `status_code`; seconds,
    in ExponentialBuckets(0.01, 1.5, 20)."""
    from nodewright import metrics
    from tests.controllers.test_metric_families_karpenter import exponential, families

    found = families()
    labels = ["action", "code", "service"]
    for name in ("aws_sdk_go_request_total", "aws_sdk_go_request_attempt_total"):
        assert sorted(found[name]._labelnames) == labels
    for name in ("aws_sdk_go_request_duration_seconds",
                 "aws_sdk_go_request_attempt_duration_seconds"):
        assert sorted(found[name]._labelnames) == labels
        assert list(found[name]._upper_bounds) == [*exponential(0.01, 1.5, 20), float("inf")]
    retries = found["aws_sdk_go_request_retry_count"]
    assert list(retries._upper_bounds) == [*map(float, range(11)), float("inf")]
    assert metrics.AWS_SDK_REQUESTS is found["aws_sdk_go_request_total"]


def test_a_throttled_calls_attempts_are_timed_under_its_final_status(
        clients: AwsClients, world: World) -> None:
    """The Go library labels each attempt's duration with the call's final status."""
    action = "DescribeImages"
    attempts = value("aws_sdk_go_request_attempt_duration_seconds_count", action, "200")
    throttled = value("aws_sdk_go_request_attempt_duration_seconds_count", action, "503")
    throttle: Any = ThrottleOnce()
    clients.ec2.meta.events.register_first(f"before-send.ec2.{action}", throttle)

    clients.ec2.describe_images(Owners=["self"])

    assert value("aws_sdk_go_request_attempt_duration_seconds_count", action, "200") \
        - attempts == 2
    assert value("aws_sdk_go_request_attempt_duration_seconds_count", action, "503") \
        == throttled
