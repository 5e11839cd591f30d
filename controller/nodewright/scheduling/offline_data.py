"""The offline EC2 data set: the DescribeInstanceTypes and per-zone offerings shipped in the
package (`instance_data`, generated from moto's data set by tools/generate_instance_data.py).

Only the data: `catalog.offline_catalog` builds (and caches) instance types from it. This
module imports nothing else of the scheduling package, so the two do not import each other.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nodewright.scheduling import instance_data

DEFAULT_ZONE_COUNT = 3


def regions() -> list[str]:
    """Regions the bundled data has offerings for."""
    return instance_data.regions()


def region_zones(region: str) -> list[str]:
    """Zone names of a region that have at least one offering, sorted."""
    return sorted({str(entry["Location"]) for entry in offerings(region)})


def resolve_zones(region: str, zones: Sequence[str] | None) -> tuple[str, ...]:
    """Full zone names: "a" -> "us-east-1a"; default the region's first three zones.

    ValueError names the zone and the region's zones when a zone is not in the region.
    """
    known = region_zones(region)
    if zones is None:
        return tuple(known[:DEFAULT_ZONE_COUNT])
    resolved: list[str] = []
    for zone in zones:
        name = zone.strip()
        full = name if name.startswith(region) else f"{region}{name}"
        if full not in known:
            raise ValueError(
                f"zone {name!r} is not a zone of {region} (known: {', '.join(known)})"
            )
        if full not in resolved:
            resolved.append(full)
    return tuple(resolved)


def zone_ids(region: str) -> dict[str, str]:
    """Zone name -> zone id, as moto assigns them (use1-az6 for us-east-1a, ...)."""
    return instance_data.zone_ids(region)


def instance_types() -> list[dict[str, Any]]:
    """Every DescribeInstanceTypes entry in the data set."""
    return instance_data.instance_types()


def offerings(region: str) -> list[dict[str, Any]]:
    """DescribeInstanceTypeOfferings entries (LocationType availability-zone) of a region."""
    return instance_data.offerings(region)
