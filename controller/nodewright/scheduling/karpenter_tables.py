"""Instance-type facts from Karpenter's generated tables (data/karpenter-tables.json.gz).

Written by tools/generate_karpenter_tables.py from aws/karpenter-provider-aws v1.14.1:
InstanceTypeBandwidthMegabits (zz_generated.bandwidth.go), the VPC limits
(zz_generated.vpclimits.go) and the static on-demand prices
(zz_generated.pricing_aws*.go). DescribeInstanceTypes does not give these the way Karpenter
uses them, so the same numbers are used here.
"""

from __future__ import annotations

import functools
import gzip
import json
from collections.abc import Mapping
from importlib import resources
from typing import Any

_FILE = "karpenter-tables.json.gz"
# Karpenter's pricing provider falls back to these prices in a region it has no table for.
FALLBACK_PRICE_REGION = "us-east-1"


def network_bandwidth_megabits(instance_type: str) -> int | None:
    """The type's network bandwidth, or None when Karpenter's table does not list it (the
    older types AWS publishes only as "Moderate" / "High"): no label then, as in Karpenter."""
    value = _tables()["networkBandwidthMegabits"].get(instance_type)
    return int(value) if value is not None else None


def ipv4_per_interface(instance_type: str) -> int | None:
    """IPv4 addresses per network interface from the VPC limits table; None when unlisted."""
    value = _tables()["ipv4PerInterface"].get(instance_type)
    return int(value) if value is not None else None


def static_on_demand_prices(region: str) -> Mapping[str, float]:
    """The on-demand prices Karpenter starts from in a region: its table for the region, else
    us-east-1's (Karpenter ships tables for us-east-1, the GovCloud regions and cn-north-1)."""
    regions: Mapping[str, Mapping[str, float]] = _tables()["onDemandPrices"]
    return regions.get(region) or regions[FALLBACK_PRICE_REGION]


def static_price_regions() -> frozenset[str]:
    """The regions Karpenter's static price tables list."""
    return frozenset(_tables()["onDemandPrices"])


@functools.cache
def _tables() -> dict[str, Any]:
    data = resources.files("nodewright.scheduling").joinpath("data", _FILE).read_bytes()
    tables: dict[str, Any] = json.loads(gzip.decompress(data))
    return tables
