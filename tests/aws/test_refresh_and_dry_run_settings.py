"""DISABLE_DRY_RUN, AMI_REFRESH_INTERVAL and SUBNET_REFRESH_INTERVAL, from the operator's
flags and environment to the running provider; and the SSM invalidation controller.

The option Its ported from aws/karpenter-provider-aws v1.14.1
pkg/operator/options/suite_test.go are named in each test (only their assertions on these
three settings: the others belong to the settings already covered elsewhere).
"""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.cluster.memory import InMemoryCluster
from nodewright.controllers.nodeclass.ssm_invalidation import SsmInvalidation
from nodewright.controllers.registry import build_controllers
from nodewright.operator.config import ConfigError, OperatorConfig, add_arguments, load
from nodewright.operator.main import build_cloud
from nodewright.runtime import VirtualClock
from nodewright.runtime.clock import SystemClock
from nodewright.scheduling.pricing import OfflinePriceSource

from .conftest import REGION
from .failing_calls import failing
from .world import CLUSTER, FakeClock, World, node_class


def config(args: list[str], env: dict[str, str]) -> OperatorConfig:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return load(parser.parse_args(args), {"CLUSTER_NAME": CLUSTER, "AWS_REGION": REGION, **env})


def test_flags_override_the_environment() -> None:
    """It("should correctly override default vars when CLI flags are set")."""
    loaded = config(["--disable-dry-run", "true", "--ami-refresh-interval", "15m",
                     "--subnet-refresh-interval", "15m"],
                    {"DISABLE_DRY_RUN": "false", "AMI_REFRESH_INTERVAL": "30m"})
    assert (loaded.disable_dry_run, loaded.ami_refresh_interval,
            loaded.subnet_refresh_interval) == (True, 900.0, 900.0)


def test_the_environment_is_read_without_flags() -> None:
    """It("should correctly fallback to env vars when CLI flags aren't set")."""
    loaded = config([], {"DISABLE_DRY_RUN": "false", "AMI_REFRESH_INTERVAL": "30m",
                         "SUBNET_REFRESH_INTERVAL": "15m"})
    assert (loaded.disable_dry_run, loaded.ami_refresh_interval,
            loaded.subnet_refresh_interval) == (False, 1800.0, 900.0)


def test_refresh_intervals_default_to_a_minute() -> None:
    """It("should correctly use default ami-refresh-interval when not specified") and
    It("should correctly use default subnet-refresh-interval when not specified")."""
    loaded = config([], {})
    assert (loaded.ami_refresh_interval, loaded.subnet_refresh_interval) == (60.0, 60.0)
    assert loaded.disable_dry_run is False


@pytest.mark.parametrize("name", ["AMI_REFRESH_INTERVAL", "SUBNET_REFRESH_INTERVAL"])
def test_a_refresh_interval_under_a_minute_is_refused(name: str) -> None:
    """It("should fail when ami-refresh-interval is less than 1m") and
    It("should fail when subnet-refresh-interval is less than 1m")."""
    with pytest.raises(ConfigError) as bad:
        config([], {name: "30s"})
    assert str(bad.value).startswith(f"{name}='30s': must be at least 1m")


def test_the_operator_runs_the_provider_with_the_settings(world: Any) -> None:
    cloud, kubelet = build_cloud(
        config([], {"DISABLE_DRY_RUN": "true", "AMI_REFRESH_INTERVAL": "5m"}),
        InMemoryCluster(VirtualClock()), SystemClock())  # type: ignore[arg-type]
    assert isinstance(cloud, AwsCloudProvider)
    assert (cloud.dry_run, cloud.ami_refresh_seconds, cloud.subnet_refresh_seconds) == (
        False, 300.0, 60.0)
    assert kubelet == []  # real instances have real kubelets
    clock = VirtualClock()
    controllers = build_controllers(InMemoryCluster(clock), cloud, clock)
    assert any(isinstance(r, SsmInvalidation) for r in controllers.reconcilers)
    default, _ = build_cloud(config([], {}), InMemoryCluster(VirtualClock()),
                             SystemClock())  # type: ignore[arg-type]
    assert isinstance(default, AwsCloudProvider) and default.dry_run  # Karpenter's default


def test_subnets_and_images_are_kept_for_their_refresh_intervals(
    clients: AwsClients, world: World, clock: FakeClock,
) -> None:
    """operator.go: the subnet and AMI caches live SUBNET_REFRESH_INTERVAL and
    AMI_REFRESH_INTERVAL."""
    provider = AwsCloudProvider(clients, CLUSTER, clock=clock, prices=OfflinePriceSource(),
                                subnet_refresh_seconds=600.0, ami_refresh_seconds=300.0)
    with failing(clients.ec2) as calls:
        provider.resolve(node_class())
        clock.advance(120)  # past the one-minute resolution cache
        provider.resolve(node_class())
        assert len(calls.params["DescribeSubnets"]) == 1
        assert len(calls.params["DescribeImages"]) == 1
        clock.advance(200)
        provider.resolve(node_class())
        assert len(calls.params["DescribeSubnets"]) == 1
        assert len(calls.params["DescribeImages"]) == 2
        clock.advance(300)
        provider.resolve(node_class())
        assert len(calls.params["DescribeSubnets"]) == 2


def test_the_invalidation_controller_runs_every_half_hour(provider: AwsCloudProvider,
                                                          world: World) -> None:
    """controller.go: RequeueAfter 30 minutes."""
    provider.resolve(node_class())
    result = SsmInvalidation(provider).reconcile("")
    assert result.requeue_after == 30 * 60
