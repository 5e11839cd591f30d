"""Facts taken from Karpenter's generated tables (v1.14.1), not from DescribeInstanceTypes:
the network bandwidth label, the hypervisor label of metal types and the private IPv4
addresses a Windows node offers. The data is written by tools/generate_karpenter_tables.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from nodewright.scheduling import labels
from nodewright.scheduling.allocatable import AWS_PRIVATE_IPV4
from nodewright.scheduling.catalog import InstanceType, offline_catalog
from nodewright.scheduling.offline_data import instance_types
from tests.aws.world import node_class

ROOT = Path(__file__).resolve().parents[2]
KARPENTER = Path("/work/.mirror/aws+karpenter-provider-aws/repo")


def catalog(**spec: object) -> dict[str, InstanceType]:
    nc = node_class(**spec) if spec else None
    return {it.name: it for it in offline_catalog("us-east-1", node_class=nc)}


def test_a_metal_type_without_a_hypervisor_is_labelled_with_an_empty_one() -> None:
    """Karpenter always sets instance-hypervisor, to "" when EC2 names none (metal types),
    so `instance-hypervisor: ""` selects metal and `DoesNotExist` selects nothing."""
    types = catalog()
    assert types["m5.metal"].labels[labels.INSTANCE_HYPERVISOR] == ""
    assert types["m5.large"].labels[labels.INSTANCE_HYPERVISOR] == "nitro"
    assert all(labels.INSTANCE_HYPERVISOR in it.labels for it in types.values())


def test_network_bandwidth_is_karpenters_table_not_the_sum_of_the_network_cards() -> None:
    """c6in.32xlarge has two 200 Gbps cards; Karpenter's table (and so its label) says
    200000 Mbps, the instance's bandwidth, not 400000."""
    info = next(i for i in instance_types() if i["InstanceType"] == "c6in.32xlarge")
    cards = info["NetworkInfo"]["NetworkCards"]
    assert sum(float(card["BaselineBandwidthInGbps"]) for card in cards) == 400
    assert catalog()["c6in.32xlarge"].labels[labels.INSTANCE_NETWORK_BANDWIDTH] == "200000"


def test_a_type_the_bandwidth_table_lacks_has_no_bandwidth_label() -> None:
    """AWS publishes c4.large's bandwidth only as "Moderate": Karpenter's table leaves it
    out and so does the label (EC2 still gives a baseline figure for its card)."""
    info = next(i for i in instance_types() if i["InstanceType"] == "c4.large")
    assert "BaselineBandwidthInGbps" in info["NetworkInfo"]["NetworkCards"][0]
    assert labels.INSTANCE_NETWORK_BANDWIDTH not in catalog()["c4.large"].labels


def test_windows_private_ipv4_addresses_come_from_the_vpc_limits_table() -> None:
    """The VPC resource controller advertises IPv4 addresses per interface less one from its
    limits table; a type the table lacks (t8i, newer than it) advertises none even though
    EC2 gives it addresses."""
    windows = catalog(amiSelectorTerms=[{"alias": "windows2022@latest"}])
    assert windows["m5.large"].capacity[AWS_PRIVATE_IPV4] == 9_000
    info = next(i for i in instance_types() if i["InstanceType"] == "t8i.small")
    assert info["NetworkInfo"]["Ipv4AddressesPerInterface"] > 0
    assert AWS_PRIVATE_IPV4 not in windows["t8i.small"].capacity


@pytest.mark.skipif(not KARPENTER.exists(), reason="no clone of aws/karpenter-provider-aws")
def test_the_shipped_tables_are_what_the_generator_writes_from_karpenter() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "generate_karpenter_tables.py"),
                           "--check", "--repo", str(KARPENTER)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
