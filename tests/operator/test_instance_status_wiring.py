"""Which processes run the instance status health checks: the controller process with
`--cloud aws` (polling DescribeInstanceStatus, as Karpenter does with or without an
interruption queue) and with `--cloud sim` (the simulated EC2's statuses); a cloud that
reports no instance statuses gets no such controller."""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.instance_statuses import InstanceStatusProvider
from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.cluster.memory import InMemoryCluster
from nodewright.controllers.interruption.instance_status import InstanceStatusChecks
from nodewright.controllers.registry import build_controllers
from nodewright.operator.config import OperatorConfig
from nodewright.operator.main import build_cloud
from nodewright.runtime.clock import SystemClock, VirtualClock


@pytest.fixture(autouse=True)
def credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")


def checks_of(cloud: Any) -> InstanceStatusChecks | None:
    clock = VirtualClock()
    controllers = build_controllers(InMemoryCluster(clock), cloud, clock)
    checks = controllers.get("interruption.instancestatus", InstanceStatusChecks)
    if checks is not None:
        assert checks in controllers.singletons
        assert checks in controllers.reconcilers
    return checks


def test_the_aws_controller_process_polls_ec2_instance_statuses_without_a_queue() -> None:
    config = OperatorConfig(cluster_name="prod", region="us-west-2")
    cloud: Any
    cloud, _ = build_cloud(config, cluster=InMemoryCluster(VirtualClock()),  # type: ignore[arg-type]
                           clock=SystemClock())

    checks = checks_of(cloud)

    assert checks is not None and checks.name == "interruption.instancestatus"
    assert isinstance(checks.source, InstanceStatusProvider)
    assert checks.source.ec2 is cloud.clients.ec2
    assert not checks.dry_run
    assert cloud.interruption_queue is None


def test_the_sim_controller_process_checks_the_simulated_instances() -> None:
    config = OperatorConfig(cluster_name="prod", cloud="sim")
    clock = SystemClock()
    cloud: Any
    cloud, _ = build_cloud(config, InMemoryCluster(VirtualClock()), clock)  # type: ignore[arg-type]

    checks = checks_of(cloud)

    assert checks is not None and checks.source is cloud.instance_statuses


def test_a_cloud_reporting_no_instance_statuses_gets_no_checks() -> None:
    clients = AwsClients.create("us-west-2", boto3.session.Session())
    assert checks_of(AwsCloudProvider(clients=clients, cluster_name="prod")) is None
