"""Karpenter's AWS settings (VM_MEMORY_OVERHEAD_PERCENT, RESERVED_ENIS, ISOLATED_VPC) from the
operator's environment to the instance types the running provider offers."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from nodewright.api.quantity import MEMORY, PODS
from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.cluster.memory import InMemoryCluster
from nodewright.operator.config import add_arguments, load
from nodewright.operator.main import build_cloud
from nodewright.runtime import VirtualClock
from nodewright.runtime.clock import SystemClock
from nodewright.scheduling.catalog import InstanceType

from .conftest import REGION, CallRecorder
from .world import CLUSTER, node_class

MIB = 1024 * 1024


def provider_from(env: dict[str, str]) -> AwsCloudProvider:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    config = load(parser.parse_args([]), {"CLUSTER_NAME": CLUSTER, "AWS_REGION": REGION, **env})
    cloud, _ = build_cloud(config, InMemoryCluster(VirtualClock()), SystemClock())  # type: ignore[arg-type]
    assert isinstance(cloud, AwsCloudProvider)
    return cloud


def m5_large(provider: AwsCloudProvider) -> InstanceType:
    return next(t for t in provider.get_instance_types(node_class()) if t.name == "m5.large")


def test_defaults_are_karpenters_overhead_and_eni_limited_pods(world: Any) -> None:
    m5 = m5_large(provider_from({}))
    # 8 GiB less ceil(7.5 %) = 615 MiB; 3 ENIs x (10 addresses - 1) + 2 pods.
    assert m5.capacity[MEMORY] == (8192 - 615) * MIB * 1000
    assert m5.capacity[PODS] == 29 * 1000


def test_memory_overhead_and_reserved_enis_change_capacity(world: Any) -> None:
    m5 = m5_large(provider_from({"VM_MEMORY_OVERHEAD_PERCENT": "0.1", "RESERVED_ENIS": "1"}))
    assert m5.capacity[MEMORY] == (8192 - 820) * MIB * 1000
    assert m5.capacity[PODS] == 20 * 1000  # 2 ENIs left for pods
    default = m5_large(provider_from({}))
    # kube-reserved memory still counts every ENI, as Karpenter's does.
    assert m5.overhead.kube_reserved[MEMORY] == default.overhead.kube_reserved[MEMORY]


def test_reserving_every_eni_leaves_no_pods(world: Any) -> None:
    assert m5_large(provider_from({"RESERVED_ENIS": "3"})).capacity[PODS] == 0


@pytest.mark.parametrize("isolated", [False, True])
def test_an_isolated_vpc_never_calls_the_pricing_api(world: Any, recorder: CallRecorder,
                                                     isolated: bool) -> None:
    provider = provider_from({"ISOLATED_VPC": str(isolated).lower()})
    recorder.attach(provider.clients)
    m5 = m5_large(provider)
    assert m5.cheapest_offering() is not None
    called = "pricing:GetProducts" in recorder.actions
    assert called is not isolated
    assert "ec2:DescribeSpotPriceHistory" in recorder.actions  # EC2 has a VPC endpoint


def test_the_reserved_capacity_gate_reaches_the_aws_provider(world: Any) -> None:
    """FEATURE_GATES=ReservedCapacity=false: the provider the operator builds resolves no
    reservations and launches in the open mode (tests/aws/test_reserved_capacity_gate.py)."""
    assert provider_from({}).reserved_capacity is True
    assert provider_from({"FEATURE_GATES": "ReservedCapacity=false"}).reserved_capacity is False
