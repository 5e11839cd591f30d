"""Shared fixtures for the AWS provider tests: moto in-process, a fake clock, and a recorder
of every AWS action the code under test calls."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.core.model_instances import reset_model_data

from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.scheduling.pricing import OfflinePriceSource
from tests.aws import moto_fixes, process_cache, provider_calls
from tests.aws.fake_ec2 import FakeEC2
from tests.aws.fleet_injector import FleetInjector
from tests.aws.world import CLUSTER, FakeClock, World, build_world

REGION = "us-west-2"
process_cache.install()
moto_fixes.install()


@pytest.fixture(autouse=True)
def _fake_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_CONFIG_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)


@dataclass
class CallRecorder:
    """Every (service, operation) the clients called, as IAM action names."""

    actions: list[str] = field(default_factory=list)
    params: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def attach(self, clients: AwsClients) -> None:
        for client in (
            clients.ec2,
            clients.ssm,
            clients.iam,
            clients.eks,
            clients.sqs,
            clients.pricing,
        ):
            client.meta.events.register("provide-client-params.*.*", self._capture)
            provider_calls.record(client)  # the session's calls, for test_least_privilege

    def _capture(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        action = f"{model.service_model.signing_name}:{model.name}"
        self.actions.append(action)
        self.params.setdefault(action, []).append(params)

    def calls_of(self, action: str) -> list[dict[str, Any]]:
        return self.params.get(action, [])


@pytest.fixture
def aws() -> Iterator[None]:
    """moto for one test. Its backends are reset as the mock starts, which every test's
    does: resetting them again as it stops (moto's default) would build EC2's backends,
    a thousand images each, a second time for nothing. What the test left is dropped by the
    next test's start; the models moto tracks are dropped now, as moto's own stop does."""
    mock = mock_aws()
    mock.start(reset=True)
    try:
        yield
    finally:
        mock.stop(remove_data=False)
        reset_model_data()


@pytest.fixture
def recorder() -> CallRecorder:
    return CallRecorder()


@pytest.fixture
def clients(aws: None, recorder: CallRecorder) -> AwsClients:
    built = AwsClients.create(REGION, boto3.session.Session())
    recorder.attach(built)
    return built


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def world(clients: AwsClients) -> World:
    """The VPC, subnets, security groups, cluster and node role of `tests.aws.world`."""
    return build_world(clients)


@pytest.fixture
def provider(clients: AwsClients, world: World, clock: FakeClock) -> AwsCloudProvider:
    return AwsCloudProvider(clients, CLUSTER, clock=clock, prices=OfflinePriceSource())


@pytest.fixture
def injector(clients: AwsClients, recorder: CallRecorder) -> Iterator[FleetInjector]:
    """CreateFleet answered with the canned responses the test queues (FleetInjector)."""
    injector = FleetInjector(recorder)
    clients.ec2.meta.events.register("before-call.ec2.CreateFleet", injector)
    yield injector
    clients.ec2.meta.events.unregister("before-call.ec2.CreateFleet", injector)


@pytest.fixture
def ec2(clients: AwsClients) -> Iterator[FakeEC2]:
    """EC2's answers recorded and scripted (FakeEC2) for the test, detached after it."""
    fake = FakeEC2.attach(clients.ec2)
    yield fake
    fake.detach()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The check of every call the AWS suite made runs after the rest of the suite."""
    last = [item for item in items if item.name == "test_every_call_of_the_aws_suite_is_allowed"]
    items[:] = [item for item in items if item not in last] + last
